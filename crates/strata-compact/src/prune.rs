//! The tool-result pruner: oversized tool output elided in the middle, one result at a time
//! (persistence-compaction §6).
//!
//! A `tool/result` whose text exceeds `threshold_chars` code points is rewritten: the
//! text blocks of the tool-result block's inner content are treated as one coordinate
//! space, the span `[head_chars, total − tail_chars)` is removed, the marker
//! [`MARKER`] is inserted once (in the first text block the span touches), blocks left
//! empty are dropped, and non-text blocks keep their place. Slicing is by code point.
//!
//! Each pruned result is two events, adjacent in one batch: a log-only
//! `compaction/prune {shadowedRange, shadowedSeqs, shadowedTokenCount}` (so the pruning is
//! auditable, never silent: peers (c) item 12), then a `tool/result` equal to the original
//! in every field but `message.content[0].content` — same message id, call id, error and
//! meta — with `surfaceOp {op:"replace"}` over exactly that one node and
//! `sourceEventSeqs: [seq]`. That is the only rewrite core rule 9 allows a tool result.
//!
//! A rewrite is valid only inside an open turn: dsh's format layer refuses a `tool/result`
//! replacement outside one (`tool/result replacement is outside an open turn`), and upstream
//! prunes only in the agent's pre-step, between two steps of an open turn, writing no turn of
//! its own for it. [`Pruner::plan_in_turn`] is the plan to append; [`Pruner::plan`] the same
//! rewrites for a dry run, whatever the turn.
//!
//! The scan is O(new events): a [`Pruner`] remembers how far it has read and which
//! appended oversized results are still on the surface. A result enters the surface only
//! as a new event (a pruned rewrite is within the limits by construction), and leaves it
//! only through a later replacement, which must cite it; so no surface lookup is needed.
//! On a lazily resumed session (issue 9) the history below the resident tail is not read:
//! the oversized appended results among the surface nodes there are exactly the ones a full
//! scan would still hold, in the same order.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};
use strata_core::{
    payload, Candidate, Event, EventType, Seq, Session, SurfaceIntent, SurfaceOp, SurfacePayload,
};

use crate::config::{ConfigError, PrunerConfig};
use crate::estimate::{message_tokens, ByteEstimator, TokenEstimator};

pub use crate::config::{MARKER, MARKER_CHARS};

/// Finds and rewrites oversized tool results of one session (see the module docs).
#[derive(Debug)]
pub struct Pruner {
    config: PrunerConfig,
    estimator: Arc<dyn TokenEstimator>,
    cursor: Mutex<Cursor>,
}

/// How far the pruner has read one session's log.
#[derive(Debug, Default)]
struct Cursor {
    session_id: String,
    /// Invariant: the number of events scanned.
    scanned: usize,
    /// The last event scanned, kept alive so pointer identity detects a rolled-back log.
    last_event: Option<Arc<Event>>,
    /// Appended oversized results not cited by any later replacement, in log order
    /// (which is their surface order). Invariant: each is on the surface.
    oversized: Vec<Seq>,
}

/// Why a pruning pass may not be appended now. Nothing has been written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PruneError {
    /// Results are over the threshold but no turn is open: dsh accepts a `tool/result`
    /// rewrite only inside an open turn, and writes no turn of its own for a manual action.
    #[error(
        "{n_results} tool results are over the threshold, but no turn is open and dsh accepts \
         a tool/result rewrite only inside one (it refuses \"tool/result replacement is outside \
         an open turn\")"
    )]
    NoOpenTurn {
        /// How many results the pass would rewrite.
        n_results: usize,
    },
}

/// One result the pruner would rewrite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrunedResult {
    /// The `tool/result` node.
    pub seq: Seq,
    /// Text code points before.
    pub chars_before: usize,
    /// Text code points after.
    pub chars_after: usize,
    /// Estimated message tokens before.
    pub tokens_before: u64,
    /// Estimated message tokens after.
    pub tokens_after: u64,
}

/// The events of one pruning pass, to append as one batch (all-or-nothing).
#[derive(Clone, Debug, Default)]
pub struct PrunePlan {
    /// What is rewritten, in surface order.
    pub results: Vec<PrunedResult>,
    /// Two candidates per result: `compaction/prune`, then the rewritten `tool/result`.
    pub candidates: Vec<Candidate>,
}

impl PrunePlan {
    /// Whether there is nothing to prune.
    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }

    /// Estimated tokens the pass saves.
    pub fn tokens_saved(&self) -> u64 {
        self.results
            .iter()
            .map(|result| result.tokens_before.saturating_sub(result.tokens_after))
            .sum()
    }
}

impl Pruner {
    /// A pruner with `config` and the default estimator.
    pub fn new(config: PrunerConfig) -> Result<Pruner, ConfigError> {
        Pruner::with_estimator(config, Arc::new(ByteEstimator))
    }

    /// A pruner pricing with `estimator` (for the token counts it reports).
    pub fn with_estimator(
        config: PrunerConfig,
        estimator: Arc<dyn TokenEstimator>,
    ) -> Result<Pruner, ConfigError> {
        config.validate()?;
        Ok(Pruner {
            config,
            estimator,
            cursor: Mutex::new(Cursor::default()),
        })
    }

    /// The limits.
    pub fn config(&self) -> &PrunerConfig {
        &self.config
    }

    /// Reads the events appended since the last call and returns the rewrites of every
    /// oversized result still on the surface. Writes nothing; append
    /// [`PrunePlan::candidates`] as one batch.
    pub fn plan(&self, session: &Session) -> PrunePlan {
        let mut cursor = self.cursor.lock().unwrap_or_else(PoisonError::into_inner);
        let base = usize::try_from(session.resident_base()).unwrap_or(usize::MAX);
        let events = session.resident_events();
        let last_matches = match (&cursor.last_event, cursor.scanned.checked_sub(1)) {
            (Some(last), Some(index)) => Seq::new(index as u64)
                .ok()
                .and_then(|seq| session.event(seq))
                .is_some_and(|event| Arc::ptr_eq(event, last)),
            (None, None) => true,
            _ => false,
        };
        let diverged =
            cursor.session_id != session.id() || session.len() < cursor.scanned || !last_matches;
        let threshold = self.config.threshold_chars;
        if diverged {
            *cursor = Cursor {
                session_id: session.id().to_owned(),
                ..Cursor::default()
            };
            // Below a lazy session's resident tail, the surface holds exactly the appended
            // oversized results a scan would keep, in the same order.
            for seq in session.surface().nodes() {
                if usize::try_from(seq.get()).map_or(true, |index| index >= base) {
                    continue;
                }
                let Some(event) = session.event(*seq) else {
                    continue;
                };
                if *event.event_type() == EventType::ToolResult
                    && event.surface_op() == Some(SurfaceOp::Append)
                    && inner_content(&event.data_uncached())
                        .is_some_and(|blocks| text_chars(blocks) > threshold)
                {
                    cursor.oversized.push(*seq);
                }
            }
            cursor.scanned = base;
        }
        let start = cursor.scanned.max(base) - base;
        for event in events.get(start..).unwrap_or(&[]) {
            if *event.event_type() != EventType::ToolResult && event.sources().is_none() {
                continue;
            }
            // A replacement cites every node it shadows (core rule 8): a cited candidate
            // may be gone from the surface, so it is dropped (never pruned in error).
            if let Some(SurfaceOp::Replace(_)) = event.surface_op() {
                if let Some(sources) = event.sources() {
                    cursor.oversized.retain(|seq| !sources.contains(seq));
                }
            }
            if *event.event_type() == EventType::ToolResult
                && event.surface_op() == Some(SurfaceOp::Append)
                // Read without keeping the tree in the event: this passes over every result
                // of the log, and kept trees held gigabytes over a large one.
                && inner_content(&event.data_uncached())
                    .is_some_and(|blocks| text_chars(blocks) > threshold)
            {
                cursor.oversized.push(event.seq());
            }
        }
        cursor.scanned = session.len();
        cursor.last_event = session.last_event().cloned();
        // Appended results keep their log order on the surface, so `oversized` is in
        // surface order, and every entry is still on the surface.
        let ordered = cursor.oversized.clone();
        drop(cursor);
        let mut plan = PrunePlan::default();
        for seq in ordered {
            if let Some(event) = session.event(seq) {
                if let Some((result, candidates)) = self.rewrite(event) {
                    plan.results.push(result);
                    plan.candidates.extend(candidates);
                }
            }
        }
        plan
    }

    /// [`Pruner::plan`] for appending now: refused, writing nothing, when there is something
    /// to prune and no turn is open (see the module docs). An empty plan is always `Ok`.
    pub fn plan_in_turn(&self, session: &Session) -> Result<PrunePlan, PruneError> {
        let plan = self.plan(session);
        if plan.is_empty() || turn_is_open(session) {
            Ok(plan)
        } else {
            Err(PruneError::NoOpenTurn {
                n_results: plan.results.len(),
            })
        }
    }

    /// The two events that prune one `tool/result`, or `None` if it is within limits.
    pub fn rewrite(&self, event: &Event) -> Option<(PrunedResult, [Candidate; 2])> {
        if *event.event_type() != EventType::ToolResult {
            return None;
        }
        let data = event.data();
        let blocks = inner_content(data)?;
        let chars_before = text_chars(blocks);
        let pruned = prune_blocks(blocks, &self.config)?;
        let chars_after = text_chars(&pruned);
        let mut rewritten = data.clone();
        let slot = rewritten
            .get_mut("message")
            .and_then(|message| message.get_mut("content"))
            .and_then(|content| content.get_mut(0))
            .and_then(|block| block.get_mut("content"))?;
        *slot = Value::Array(pruned);
        let message_price = |data: &Value| {
            data.get("message")
                .map_or(0, |m| message_tokens(m, self.estimator.as_ref()))
        };
        let tokens_before = message_price(data);
        let tokens_after = message_price(&rewritten);
        let seq = event.seq();
        let trace = Candidate::log_only(payload::PluginEvent {
            event_type: "compaction/prune".into(),
            data: json!({
                "shadowedRange": {"start": seq.get(), "end": seq.get()},
                "shadowedSeqs": [seq.get()],
                "shadowedTokenCount": tokens_before,
            }),
        });
        let replacement = Candidate::surface(
            RewrittenToolResult(rewritten),
            SurfaceIntent::replace(seq, seq, vec![seq]),
        );
        Some((
            PrunedResult {
                seq,
                chars_before,
                chars_after,
                tokens_before,
                tokens_after,
            },
            [trace, replacement],
        ))
    }
}

/// Whether a turn is open at the end of the log: the newest `turn/start` has no `turn/end`
/// after it. O(1), from the latest-by-type fold.
fn turn_is_open(session: &Session) -> bool {
    let start = session
        .latest(&EventType::TurnStart)
        .map(|event| event.seq());
    let end = session.latest(&EventType::TurnEnd).map(|event| event.seq());
    match (start, end) {
        (Some(start), Some(end)) => start > end,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// A `tool/result` payload kept verbatim (key order and unknown fields included), so the
/// rewrite differs from the original only where the pruner changed it.
struct RewrittenToolResult(Value);

impl SurfacePayload for RewrittenToolResult {
    type Intent = SurfaceIntent;
    fn event_type(&self) -> EventType {
        EventType::ToolResult
    }
    fn into_data(self) -> Value {
        self.0
    }
}

/// The tool-result block's inner content (`message.content[0].content`, V3).
fn inner_content(data: &Value) -> Option<&[Value]> {
    data.get("message")?
        .get("content")?
        .get(0)?
        .get("content")?
        .as_array()
        .map(Vec::as_slice)
}

fn block_text(block: &Value) -> Option<&str> {
    if block.get("type").and_then(Value::as_str) == Some("text") {
        block.get("text").and_then(Value::as_str)
    } else {
        None
    }
}

/// Code points of every text block.
pub fn text_chars(blocks: &[Value]) -> usize {
    blocks
        .iter()
        .filter_map(block_text)
        .map(|text| text.chars().count())
        .sum()
}

/// Middle-elides `blocks` per `config`; `None` when they are within the threshold.
pub fn prune_blocks(blocks: &[Value], config: &PrunerConfig) -> Option<Vec<Value>> {
    let total = text_chars(blocks);
    if total <= config.threshold_chars {
        return None;
    }
    // The removed span, in code points of the concatenated text: [cut_from, cut_to).
    let cut_from = config.head_chars;
    let cut_to = total - config.tail_chars;
    let mut out = Vec::with_capacity(blocks.len());
    let mut offset = 0_usize;
    let mut marked = false;
    for block in blocks {
        let Some(text) = block_text(block) else {
            out.push(block.clone());
            continue;
        };
        let len = text.chars().count();
        let (start, end) = (offset, offset + len);
        offset = end;
        if end <= cut_from || start >= cut_to {
            out.push(block.clone());
            continue;
        }
        // Keep [start, cut_from) and [cut_to, end), local to this block.
        let keep_head = cut_from.saturating_sub(start).min(len);
        let keep_tail_from = cut_to.saturating_sub(start).min(len);
        let mut kept = String::with_capacity(
            text.len()
                .min(4 * (keep_head + len - keep_tail_from) + MARKER.len()),
        );
        kept.extend(text.chars().take(keep_head));
        if !marked {
            kept.push_str(MARKER);
            marked = true;
        }
        kept.extend(text.chars().skip(keep_tail_from));
        if kept.is_empty() {
            continue;
        }
        let mut rewritten = block.clone();
        if let Some(slot) = rewritten.get_mut("text") {
            *slot = Value::String(kept);
        }
        out.push(rewritten);
    }
    Some(out)
}

#[cfg(test)]
mod tests;
