//! The checkpoint wire format: a [`Checkpoint`] of a log prefix plus the evidence that ties
//! it to one log (issue 9; docs/format.md §8).
//!
//! A checkpoint record is three lines of text:
//!
//! ```text
//! strata-checkpoint 1
//! {"sessionId":…,"evidence":{…},"nEvents":…,"nodes":[[start,len],…],…}
//! <FNV-1a 64 of the JSON line, 16 lowercase hex digits>
//! ```
//!
//! JSONL stores keep it in a sidecar file written by temp file + rename; SQL stores in a table
//! row. Either way it is a cache: a record that is torn (no checksum line, or a checksum that
//! does not match), of another version, or whose evidence does not match the log is ignored,
//! and the log is read whole. Nothing in it is needed to read or validate the log.
//!
//! Invariant: [`decode`] accepts exactly what [`encode`] writes for this version; any other
//! text is a [`CheckpointRecordError`], never a panic.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use strata_core::repair::{OpenCall, TurnState};
use strata_core::{Checkpoint, EventType, Relations, Seq};

/// The first line of every checkpoint record of this version.
pub const CHECKPOINT_MAGIC: &str = "strata-checkpoint 1";

/// What ties a checkpoint to the log it was taken from (all integers little-endian-free: JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Evidence {
    /// How many events the checkpoint covers (seqs `0..n_events`).
    pub n_events: u64,
    /// JSONL: the log's length in bytes when the checkpoint was taken (the covered prefix ends
    /// exactly there, on a record or frame boundary). SQL stores: 0.
    pub log_bytes: u64,
    /// Where the last covered record starts (JSONL: byte offset, or zstd frame offset).
    pub last_frame: u64,
    /// The last covered record's offset inside its zstd frame's plaintext (raw JSONL: 0).
    pub last_offset: u64,
    /// FNV-1a 64 of the last covered record, as 16 hex digits (JSONL: the line without its
    /// `\n`; SQL: the row's type, time and stored data).
    pub last_hash: String,
    /// FNV-1a 64 of the log's header line (JSONL) or stored header text (SQL).
    pub header_hash: String,
    /// The log file's device and inode (JSONL), so a replaced file is noticed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<[u64; 2]>,
}

/// Why a checkpoint record was set aside.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointRecordError {
    /// The first line is not [`CHECKPOINT_MAGIC`].
    #[error("not a version-1 checkpoint record (first line {found:?})")]
    Version {
        /// The first line found (at most 40 bytes).
        found: String,
    },
    /// The record ends before its checksum line, or the checksum does not match.
    #[error("torn checkpoint record: {detail}")]
    Torn {
        /// What is missing or wrong.
        detail: String,
    },
    /// The JSON does not have the expected shape.
    #[error("checkpoint record does not decode: {detail}")]
    Shape {
        /// The decoder's message.
        detail: String,
    },
}

/// The JSON line of a record (the only serde shape of a checkpoint).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Body {
    session_id: String,
    evidence: Evidence,
    /// Surface nodes as runs `[first seq, run length]` of consecutive seqs, in model order.
    nodes: Vec<[u64; 2]>,
    replace_generation: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    request_header_seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    request_context_seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_inherited_marker: Option<u64>,
    /// `[type tag, seq]` of the latest event of each type.
    latest: Vec<(String, u64)>,
    turn: TurnBody,
    /// The relational rules' state ([`strata_core::Relations::to_json`]); absent in records
    /// written before strata enforced them, which resume then sets aside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    relations: Option<Value>,
}

/// [`TurnState`] on the wire: a bracket is absent when closed, `{}` when open without a
/// number, `{"value": v}` when open at `v`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TurnBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turn: Option<Bracket>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step: Option<Bracket>,
    pending: Vec<CallBody>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Bracket {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<Value>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CallBody {
    call_id: Value,
    /// `[step]` when the announcing message had one (a one-element array keeps `null` apart
    /// from "missing").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step: Option<[Value; 1]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call_seq: Option<u64>,
}

/// FNV-1a, 64 bits: a cheap fingerprint to notice a changed record (not a defence against
/// an adversary, which the store's threat model does not include).
pub fn fnv64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// [`fnv64`] as the 16 lowercase hex digits records carry.
pub fn fnv64_hex(bytes: &[u8]) -> String {
    format!("{:016x}", fnv64(bytes))
}

/// Encodes a record of `checkpoint` for session `id` with its `evidence`.
pub fn encode(id: &str, checkpoint: &Checkpoint, evidence: &Evidence) -> Vec<u8> {
    let body = Body {
        session_id: id.to_owned(),
        evidence: evidence.clone(),
        nodes: runs(&checkpoint.nodes),
        replace_generation: checkpoint.replace_generation,
        request_header_seq: checkpoint.request_header_seq.map(Seq::get),
        request_context_seq: checkpoint.request_context_seq.map(Seq::get),
        last_inherited_marker: checkpoint.last_inherited_marker,
        latest: checkpoint
            .latest
            .iter()
            .map(|(event_type, seq)| (event_type.as_str().to_owned(), seq.get()))
            .collect(),
        turn: TurnBody {
            turn: bracket(&checkpoint.turn.turn),
            step: bracket(&checkpoint.turn.step),
            pending: checkpoint
                .turn
                .pending
                .iter()
                .map(|call| CallBody {
                    call_id: call.call_id.clone(),
                    step: call.step.clone().map(|step| [step]),
                    call_seq: call.call_seq.map(Seq::get),
                })
                .collect(),
        },
        relations: checkpoint.relations.as_ref().map(Relations::to_json),
    };
    // Serializing plain data into a Vec cannot fail.
    let json = serde_json::to_vec(&body).unwrap_or_default();
    let mut out = Vec::with_capacity(json.len() + 64);
    out.extend_from_slice(CHECKPOINT_MAGIC.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(&json);
    out.push(b'\n');
    out.extend_from_slice(fnv64_hex(&json).as_bytes());
    out.push(b'\n');
    out
}

/// Decodes a record: the session id it names, its evidence and the checkpoint.
///
/// `max_events` is how many events the log can hold at most (its offset index's slots, its
/// `next_seq`): a record covering more is refused before its node runs are expanded, since a
/// run of a few bytes names up to `n_events` seqs and the record's checksum is no proof that
/// the count is real (a damaged or foreign record made the decoder allocate without bound).
pub fn decode(
    bytes: &[u8],
    max_events: u64,
) -> Result<(String, Evidence, Checkpoint), CheckpointRecordError> {
    let mut lines = bytes.splitn(4, |byte| *byte == b'\n');
    let magic = lines.next().unwrap_or_default();
    if magic != CHECKPOINT_MAGIC.as_bytes() {
        let shown = &magic[..magic.len().min(40)];
        return Err(CheckpointRecordError::Version {
            found: String::from_utf8_lossy(shown).into_owned(),
        });
    }
    let torn = |detail: &str| CheckpointRecordError::Torn {
        detail: detail.to_owned(),
    };
    let json = lines.next().ok_or_else(|| torn("no body line"))?;
    let sum = lines.next().ok_or_else(|| torn("no checksum line"))?;
    if lines.next() != Some(&[][..]) {
        return Err(torn("the checksum line is not the last, complete line"));
    }
    if sum != fnv64_hex(json).as_bytes() {
        return Err(torn("the checksum does not match the body"));
    }
    let body: Body =
        serde_json::from_slice(json).map_err(|error| CheckpointRecordError::Shape {
            detail: error.to_string(),
        })?;
    let shape = |detail: String| CheckpointRecordError::Shape { detail };
    let seq = |value: u64| Seq::new(value).map_err(|error| shape(error.to_string()));
    let n_events = body.evidence.n_events;
    if n_events > max_events {
        return Err(shape(format!(
            "it covers {n_events} events, more than the {max_events} the log can hold"
        )));
    }
    let mut nodes = Vec::new();
    for [first, len] in body.nodes {
        // Nodes are distinct seqs below `n_events`: a longer list is not a checkpoint.
        let end = first
            .checked_add(len)
            .filter(|end| *end <= n_events && nodes.len() as u64 + len <= n_events)
            .ok_or_else(|| shape(format!("node run [{first}, {len}] exceeds the log")))?;
        for value in first..end {
            nodes.push(seq(value)?);
        }
    }
    let latest = body
        .latest
        .into_iter()
        .map(|(tag, value)| Ok((EventType::parse(&tag), seq(value)?)))
        .collect::<Result<Vec<_>, CheckpointRecordError>>()?;
    let pending = body
        .turn
        .pending
        .into_iter()
        .map(|call| {
            Ok(OpenCall {
                call_id: call.call_id,
                step: call.step.map(|[step]| step),
                call_seq: call.call_seq.map(seq).transpose()?,
            })
        })
        .collect::<Result<Vec<_>, CheckpointRecordError>>()?;
    let checkpoint = Checkpoint {
        n_events: body.evidence.n_events,
        nodes,
        replace_generation: body.replace_generation,
        request_header_seq: body.request_header_seq.map(seq).transpose()?,
        request_context_seq: body.request_context_seq.map(seq).transpose()?,
        last_inherited_marker: body.last_inherited_marker,
        latest,
        turn: TurnState {
            turn: body.turn.turn.map(|bracket| bracket.value),
            step: body.turn.step.map(|bracket| bracket.value),
            pending,
        },
        relations: match body.relations {
            None => None,
            Some(value) => Some(
                Relations::from_json(&value)
                    .ok_or_else(|| shape("the relational state does not decode".to_owned()))?,
            ),
        },
    };
    Ok((body.session_id, body.evidence, checkpoint))
}

fn bracket(position: &Option<Option<Value>>) -> Option<Bracket> {
    position.as_ref().map(|value| Bracket {
        value: value.clone(),
    })
}

/// Surface nodes as runs of consecutive seqs (most of a surface is appended in order).
fn runs(nodes: &[Seq]) -> Vec<[u64; 2]> {
    let mut runs: Vec<[u64; 2]> = Vec::new();
    for node in nodes {
        match runs.last_mut() {
            Some([first, len]) if *first + *len == node.get() => *len += 1,
            _ => runs.push([node.get(), 1]),
        }
    }
    runs
}

#[cfg(test)]
mod tests;
