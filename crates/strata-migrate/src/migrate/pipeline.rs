//! `strata migrate FILE`: validate an older-generation log, carry it through the edges to V3,
//! write `session.v3.jsonl[.zstd]` beside it, verify what was written, publish it.
//!
//! Order, and what each failure leaves behind:
//! 1. The source is streamed through the edges into an exclusive temporary file next to the
//!    target (raw lines, or zstd frames of about 1 MiB of plaintext each), then fsynced; an
//!    edge's refusal, upstream's reason, comes first. Any failure removes the temporary file;
//!    one a killed migration left is removed by the next migration to the same target (see
//!    `temp`: it is locked while its writer lives).
//! 2. The source is validated under its own generation's rules (a streaming pass). An invalid
//!    source is refused here and the temporary file removed: nothing is published.
//! 3. The temporary file is re-read with the native V3 reader and validated under V3 rules; its
//!    derived messages must say what the source's said (same roles, text, tool calls and
//!    results, in order; the system prompt, now a message, is set aside). A failure removes it.
//! 4. It is published with `link` (which never replaces an existing file) and the directory is
//!    fsynced; the temporary name is removed. The source is never opened for writing.
//!
//! Invariant: every pass streams; memory holds one record, one model attempt, the edges'
//! run-length seq maps and the validators' surface state, independent of the log's length.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use strata_core::json::json_equal;
use strata_core::{Generation, SessionHeader};

use super::artifact::HopVerdict;
use super::chain::migrate_events;
use super::error::MigrateError;
use super::stage::{StageContext, Staged};
use super::verify::{validate_source, verify_target, Checked};
use crate::legacy::{sniff, LegacyReader, ReadError};
use strata_format::codec::{encode_header_line, TornTail};
use strata_format::layout::session_file_name;
use strata_format::ranges::encode_source_seqs;
use strata_format::zstd_frame::{FrameCompressor, DEFAULT_LEVEL};
use strata_store::file_io::TempFile;

/// Plaintext bytes per zstd frame written by a migration (persistence §2.10: ~1 MiB slices).
pub const FRAME_PLAINTEXT_LEN: usize = 1 << 20;

/// What a successful migration did.
#[derive(Clone, Debug)]
pub struct MigrateReport {
    /// The source log (unchanged).
    pub source: PathBuf,
    /// The published V3 log.
    pub target: PathBuf,
    /// The source's generation.
    pub source_generation: Generation,
    /// Events in the source log.
    pub n_source_events: u64,
    /// Events in the V3 log.
    pub n_target_events: u64,
    /// Derived messages of the source (the V3 log has these plus its system prompt).
    pub n_messages: usize,
    /// An unterminated final record of the source, left out of the migration.
    pub torn_tail: Option<TornTail>,
}

/// The path `strata migrate` writes for `source`: `session.v3.jsonl`, plus `.zstd` for a zstd
/// source, in the same directory.
pub fn target_path(source: &Path, zstd: bool) -> PathBuf {
    source.with_file_name(session_file_name(3, zstd))
}

/// Migrates the log at `source` to V3 beside it (see the module documentation).
pub fn migrate_file(source: &Path) -> Result<MigrateReport, MigrateError> {
    let file = source.display().to_string();
    check_header_version(source)?;
    let (generation, hint) = sniff(source)?;
    if generation == Generation::V3 {
        return Err(MigrateError::AlreadyNative { file });
    }
    if generation == Generation::V4 {
        return Err(MigrateError::AlreadyNewer { file });
    }
    let target = target_path(source, hint.zstd);
    if target.exists() {
        return Err(MigrateError::TargetExists { path: target });
    }
    // Upstream's released v0/v1 codec reads the header with exact keys before any row.
    if generation <= Generation::V1 {
        check_physical_header(source, generation)?;
    }
    // Pass 1: stream through the edges into an exclusive, locked temporary file, after
    // removing the ones migrations killed before they finished left beside the target (see
    // `temp`). Every failure from here on drops `temp`, which removes its name. The edges run
    // first so that a log upstream's released chain refuses is refused with the edge's reason,
    // as upstream's chain reports it (docs/migration.md).
    strata_store::file_io::sweep(&target);
    let mut temp = TempFile::create(&target).map_err(|source_error| MigrateError::Io {
        op: "create a temporary file beside",
        path: target.clone(),
        source: source_error,
    })?;
    let n_target_events = write_temp(source, &mut temp, hint.zstd)?;

    // Pass 2: the source must also be valid under its own generation's rules; nothing is
    // published otherwise.
    let before = validate_source(source)?;

    // Pass 3: re-read and validate as V3; the messages must say the same thing.
    let after = verify_target(temp.path(), hint.zstd)?;
    compare_messages(&before, &after).map_err(|detail| MigrateError::Verify {
        path: temp.path().to_path_buf(),
        detail,
    })?;

    // Publish without ever replacing a file.
    let published = fs::hard_link(temp.path(), &target);
    drop(temp);
    match published {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            return Err(MigrateError::TargetExists { path: target })
        }
        Err(source_error) => {
            return Err(MigrateError::Io {
                op: "publish",
                path: target,
                source: source_error,
            })
        }
    }
    // A bare target name's parent is "", which cannot be opened: its directory is ".".
    let dir = strata_store::file_io::dir_of(&target);
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|source_error| MigrateError::Io {
            op: "fsync directory",
            path: dir.to_path_buf(),
            source: source_error,
        })?;
    Ok(MigrateReport {
        source: source.to_path_buf(),
        target,
        source_generation: generation,
        n_source_events: before.n_events,
        n_target_events,
        n_messages: before.messages.len(),
        torn_tail: before.torn_tail,
    })
}

/// Upstream's chain picks its edges by the header's `version`: a header without one, or with
/// one that is not a count, is refused before any codec reads it (docs/migration.md).
fn check_header_version(source: &Path) -> Result<(), MigrateError> {
    let Ok(Value::Object(header)) = crate::legacy::physical_header(source) else {
        return Ok(());
    };
    let text = match header.get("version") {
        None => "unsupported source version undefined",
        Some(version) if crate::legacy::released_rows::count(Some(version)).is_none() => {
            "Session format version must be a non-negative safe integer"
        }
        Some(_) => return Ok(()),
    };
    Err(MigrateError::Refused {
        at: crate::legacy::At {
            file: source.display().to_string(),
            generation: Generation::V0,
            line: 1,
            seq: None,
        },
        refusal: super::refusal::Refusal::HeaderMember,
        text: text.into(),
    })
}

/// Upstream's released v0/v1 codec's physical header (docs/migration.md, refusal
/// `m0-header-member`), in its order: lossless JSON (no `-0`), exact keys (an unexpected key
/// before a missing one), then each member's type: `id` a string, `createdAt`,
/// `delegationDepth` and `seedLength` counts, `cwd`, `parentSession` and `agentPreset` strings,
/// `origin` only `"subagent"`.
fn check_physical_header(source: &Path, generation: Generation) -> Result<(), MigrateError> {
    use crate::legacy::released_rows::{count, exact_keys};
    const REQUIRED: [&str; 5] = ["type", "version", "id", "createdAt", "delegationDepth"];
    const OPTIONAL: [&str; 5] = [
        "cwd",
        "parentSession",
        "seedLength",
        "origin",
        "agentPreset",
    ];
    let header = crate::legacy::physical_header(source)?;
    let version = generation.format_version();
    let refuse = |text: String| MigrateError::Refused {
        at: crate::legacy::At {
            file: source.display().to_string(),
            generation,
            line: 1,
            seq: None,
        },
        refusal: super::refusal::Refusal::HeaderMember,
        text,
    };
    let label = format!("released v{version} physical header");
    if has_negative_zero(&header) {
        return Err(refuse(format!("{label} is not lossless JSON")));
    }
    let Value::Object(header) = header else {
        return Err(refuse(format!("{label} must be a JSON object")));
    };
    exact_keys(&header, &REQUIRED, &OPTIONAL, &label).map_err(refuse)?;
    let member = |key: &str| format!("released v{version} header {key}");
    if !header.get("id").is_some_and(Value::is_string) {
        return Err(refuse(format!("{} must be a string", member("id"))));
    }
    for key in ["createdAt", "delegationDepth", "seedLength"] {
        let present = header.get(key);
        if (key != "seedLength" || present.is_some()) && count(present).is_none() {
            return Err(refuse(format!(
                "{} must be a non-negative safe integer",
                member(key)
            )));
        }
    }
    for key in ["cwd", "parentSession", "agentPreset"] {
        if header.get(key).is_some_and(|value| !value.is_string()) {
            return Err(refuse(format!("{} must be a string", member(key))));
        }
    }
    if header
        .get("origin")
        .is_some_and(|origin| origin.as_str() != Some("subagent"))
    {
        return Err(refuse(format!("{} must be \"subagent\"", member("origin"))));
    }
    Ok(())
}

/// Whether a JSON value holds a `-0`, which `JSON.stringify` does not give back.
fn has_negative_zero(value: &Value) -> bool {
    match value {
        Value::Number(number) => number
            .as_f64()
            .is_some_and(|x| x == 0.0 && x.is_sign_negative()),
        Value::Array(items) => items.iter().any(has_negative_zero),
        Value::Object(map) => map.values().any(has_negative_zero),
        _ => false,
    }
}

/// Streams the source through the edges into `temp`; returns the number of V3 events.
fn write_temp(source: &Path, temp: &mut TempFile, zstd: bool) -> Result<u64, MigrateError> {
    let temp_path = temp.path().to_path_buf();
    let io_error = |op: &'static str| {
        let path = temp_path.clone();
        move |source_error: io::Error| MigrateError::Io {
            op,
            path,
            source: source_error,
        }
    };
    let reader = LegacyReader::open(source)?.with_released_rows();
    let context = StageContext {
        file: Arc::from(reader.file()),
        source_generation: reader.generation(),
        session_id: Arc::from(
            reader
                .header()
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        ),
    };
    let header = reader.header().clone();
    let events = reader.map(|item| {
        item.map(|record| Staged::from_source(record.line, record.event))
            .map_err(|error| match error {
                ReadError::ReleasedRow { at, text } => MigrateError::Refused {
                    at,
                    refusal: super::refusal::Refusal::CodecRow,
                    text,
                },
                other => MigrateError::from(other),
            })
    });
    let migrated = migrate_events(&header, events, context.clone())?;
    let v3_header = SessionHeader::from_value(Value::Object(migrated.header), Generation::V3)
        .map_err(|source_error| MigrateError::Unsupported {
            at: crate::legacy::At {
                file: context.file.to_string(),
                generation: context.source_generation,
                line: 1,
                seq: None,
            },
            edge: "v2→v3",
            detail: format!("the migrated header is not a valid v3 header: {source_error}"),
        })?;
    let mut out = BufWriter::with_capacity(4 << 20, temp.file());
    let mut compressor = if zstd {
        Some(FrameCompressor::new(DEFAULT_LEVEL).map_err(io_error("start zstd for"))?)
    } else {
        None
    };
    let mut batch = Vec::with_capacity(FRAME_PLAINTEXT_LEN + 64 * 1024);
    encode_header_line(&v3_header, &mut batch).map_err(|codec| MigrateError::Io {
        op: "encode header for",
        path: temp_path.clone(),
        source: io::Error::other(codec.to_string()),
    })?;
    // The header is a frame of its own (persistence §2.5).
    flush_batch(&mut out, compressor.as_mut(), &mut batch).map_err(io_error("write"))?;
    let mut n_events = 0u64;
    let mut edge_refusal = None;
    for item in migrated.events {
        let staged = match item {
            Ok(staged) => staged,
            // The first hop's edges refused: nothing outranks them.
            Err(error) if migrated.hop.as_ref().is_some_and(HopVerdict::edges_refused) => {
                return Err(error)
            }
            // An error while the stream is drained after the v2→v3 edge refused is its
            // input's: the codec's or the first hop's edges', which outrank the edge.
            Err(error) if edge_refusal.is_some() => return Err(error),
            // The v2→v3 edge refused: pull the stream to its end, since the codec's rows (all
            // read before upstream's v2→v3 hop runs) and the first hop's refusals anywhere
            // outrank this one (see `artifact`).
            Err(error) => {
                edge_refusal = Some(error);
                continue;
            }
        };
        if edge_refusal.is_some() {
            continue;
        }
        encode_v3_line(&staged.event, &mut batch);
        n_events += 1;
        if batch.len() >= FRAME_PLAINTEXT_LEN {
            flush_batch(&mut out, compressor.as_mut(), &mut batch).map_err(io_error("write"))?;
        }
    }
    if let Some(error) = migrated.hop.as_ref().and_then(HopVerdict::take) {
        return Err(error);
    }
    if let Some(error) = edge_refusal {
        return Err(error);
    }
    flush_batch(&mut out, compressor.as_mut(), &mut batch).map_err(io_error("write"))?;
    let handle = out.into_inner().map_err(|error| MigrateError::Io {
        op: "write",
        path: temp_path.clone(),
        source: error.into_error(),
    })?;
    handle.sync_all().map_err(io_error("fsync"))?;
    Ok(n_events)
}

fn flush_batch(
    out: &mut impl Write,
    compressor: Option<&mut FrameCompressor>,
    batch: &mut Vec<u8>,
) -> io::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    match compressor {
        Some(compressor) => out.write_all(&compressor.frame(batch)?)?,
        None => out.write_all(batch)?,
    }
    batch.clear();
    Ok(())
}

/// Appends one V3 event line: compact JSON in the event's key order, `sourceEventSeqs` in the
/// JSONL range encoding (session-core §10.1). Strings are held ([`strata_core::json`], as the
/// legacy reader reads them) and written as `JSON.stringify` writes them.
pub fn encode_v3_line(event: &Map<String, Value>, out: &mut Vec<u8>) {
    let sources: Option<Vec<u64>> = match event.get("sourceEventSeqs") {
        Some(Value::Array(items)) => items.iter().map(Value::as_u64).collect(),
        _ => None,
    };
    out.push(b'{');
    for (position, (key, value)) in event.iter().enumerate() {
        if position > 0 {
            out.push(b',');
        }
        write_json(out, &Value::String(key.clone()));
        out.push(b':');
        match (key.as_str(), &sources) {
            ("sourceEventSeqs", Some(seqs)) => write_json(out, &encode_source_seqs(seqs)),
            _ => write_json(out, value),
        }
    }
    out.extend_from_slice(b"}\n");
}

fn write_json(out: &mut Vec<u8>, value: &Value) {
    out.extend_from_slice(strata_core::json::to_js_string(value).as_bytes());
}

/// Checks that the V3 messages say what the source's did: the same messages in the same
/// order once the system prompt messages are set aside. The one normalization allowed is the
/// one the v2→v3 edge makes: a tool result recorded with `error` is marked `isError: true`.
pub fn compare_messages(before: &Checked, after: &Checked) -> Result<(), String> {
    let after_messages: Vec<&Value> = after
        .messages
        .iter()
        .filter(|message| message.get("role").and_then(Value::as_str) != Some("system"))
        .collect();
    if before.messages.len() != after_messages.len() {
        return Err(format!(
            "the source derives {} messages but the v3 log derives {} (besides its system prompt)",
            before.messages.len(),
            after_messages.len()
        ));
    }
    for (index, (old, new)) in before.messages.iter().zip(after_messages).enumerate() {
        if !json_equal(old, new) && !equal_but_marked_error(old, new) {
            return Err(format!(
                "derived message {index} differs: before {old}, after {new}"
            ));
        }
    }
    Ok(())
}

/// `old` and `new` are equal except that `new` marks its tool-result block `isError: true`.
fn equal_but_marked_error(old: &Value, new: &Value) -> bool {
    let mut old = old.clone();
    if let Some(Value::Object(block)) = old
        .get_mut("content")
        .and_then(|content| content.get_mut(0))
    {
        if block.get("type").and_then(Value::as_str) == Some("tool-result") {
            block.insert("isError".into(), Value::Bool(true));
        }
    }
    json_equal(&old, new)
}

/// Opens a migrated V3 file for reading (raw, or zstd frames).
pub(crate) fn open_v3(path: &Path, zstd: bool) -> Result<Box<dyn io::Read + Send>, ReadError> {
    let file = path.display().to_string();
    let handle = File::open(path).map_err(|source| ReadError::Io { file, source })?;
    let buffered = BufReader::with_capacity(256 * 1024, handle);
    if zstd {
        let source = crate::legacy::ZstdSource::new(buffered).map_err(|source| ReadError::Io {
            file: path.display().to_string(),
            source,
        })?;
        Ok(Box::new(source))
    } else {
        Ok(Box::new(buffered))
    }
}
