//! Compaction: a head-anchored span of the surface replaced by a summary, recorded as one
//! batch of events the core accepts (persistence-compaction §5.3–§5.8).
//!
//! The caller owns I/O. A compaction is three steps, none of which writes anything:
//!
//! 1. [`Compactor::plan`] reads the session (O(new events) to catch the meter up, then
//!    O(region)) and returns a [`CompactionPlan`]: which nodes to shadow, and who owns the
//!    attempt (the open turn for automatic triggers, nobody for a manual one);
//! 2. the caller runs the summarizer on [`CompactionPlan::summary_request`] (or lets
//!    [`Compactor::summarize`] do it with the configured time limit), without holding the
//!    session;
//! 3. [`Compactor::finish`] checks that nothing moved meanwhile and returns a
//!    [`CompactionBatch`]: the candidates to append as **one** batch, starting at
//!    [`CompactionBatch::first_seq`].
//!
//! The batch is `compaction/start`, `compaction/summary`, the checkpoint `user/message`
//! (`surfaceOp {op:"replace", startSeq, endSeq}`, `sourceEventSeqs` = start seq, summary
//! seq, then every shadowed node in surface order), `compaction/end`. The trace events are
//! log-only. When the summary failed, timed out, did not shrink the history, or the
//! surface changed under it, the batch is `compaction/start`, `compaction/end {error}`:
//! the attempt is on record and the surface is untouched. Nothing is ever deleted.
//!
//! Invariants:
//! - a plan never shadows node 0 when it is a `system/message`, and never cuts between a
//!   tool call and its result (see [`select_region`]);
//! - a batch built by `finish` is accepted by the core at `first_seq` (property-tested);
//! - no replacement lands unless a non-blank summary that is smaller than the span exists.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{json, Map, Value};
use strata_core::{payload, AcceptError, Candidate, EventType, Seq, Session, SurfaceIntent};

use crate::config::{Budget, CompactionConfig, ConfigError};
use crate::deadline::with_deadline;
use crate::estimate::{message_tokens, TokenEstimator};
use crate::meter::{Ledger, Measurement, TokenMeter};
use crate::select::{select_region, Region};
use crate::summarizer::{
    instruction_text, SummarizeError, Summarizer, Summary, SummaryRequest, CHECKPOINT_PREAMBLE,
};

/// What asked for a compaction; decides the kept tail and the attempt's owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The next request would exceed the threshold (agent pre-step). Keeps the
    /// configured tail; needs an open turn, which owns the attempt.
    Pressure,
    /// The provider rejected a request as too long. Keeps only the newest indivisible
    /// unit; needs an open turn.
    Overflow,
    /// A person asked (`/compact`, `strata compact`). Keeps only the newest indivisible
    /// unit; needs no open turn (the attempt's `turn` is null).
    Manual,
}

/// The ids a compaction writes. Core has no randomness, so callers supply them
/// ([`IdGenerator`] makes UUIDs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionIds {
    /// `compactionId` on every event of the attempt.
    pub compaction_id: String,
    /// The checkpoint message's `id`.
    pub message_id: String,
    /// The command that asked for the attempt (`/compact`), if any.
    pub source_command_id: Option<String>,
}

/// A deterministic source of UUID v4 strings (splitmix64), seeded by the caller.
#[derive(Clone, Debug)]
pub struct IdGenerator {
    state: u64,
}

impl IdGenerator {
    /// A generator whose sequence is fixed by `seed`.
    pub fn seeded(seed: u64) -> IdGenerator {
        IdGenerator { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A random-looking UUID v4 (version and variant bits set).
    pub fn uuid(&mut self) -> String {
        let high = (self.next_u64() & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000;
        let low = (self.next_u64() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            high >> 32,
            (high >> 16) & 0xFFFF,
            high & 0xFFFF,
            low >> 48,
            low & 0xFFFF_FFFF_FFFF
        )
    }

    /// Fresh ids for one attempt.
    pub fn next_ids(&mut self) -> CompactionIds {
        CompactionIds {
            compaction_id: self.uuid(),
            message_id: self.uuid(),
            source_command_id: None,
        }
    }
}

/// Plans compactions and builds their events. Holds the session's [`TokenMeter`], so
/// keep one `Compactor` per open session (a different session resets the meter).
#[derive(Debug)]
pub struct Compactor {
    config: CompactionConfig,
    meter: Mutex<TokenMeter>,
}

/// The estimated next request against the threshold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pressure {
    /// The measurement.
    pub measurement: Measurement,
    /// The thresholds for the session's context window.
    pub budget: Budget,
}

impl Pressure {
    /// Whether the next request reaches the threshold.
    pub fn is_above_threshold(&self) -> bool {
        self.measurement.total_tokens >= self.budget.threshold_tokens
    }
}

/// A chosen region and everything needed to summarize it and build its events later.
#[derive(Clone, Debug)]
pub struct CompactionPlan {
    trigger: Trigger,
    /// The open turn's `turn` value (automatic), or `None` (manual: `turn: null`).
    owner: Option<Value>,
    region: Region,
    /// Nodes before the region (the system prompt), in surface order.
    prefix: Vec<Seq>,
    /// Invariant: non-empty; the nodes at `region.start_index..=region.end_index`.
    shadowed: Vec<Seq>,
    /// The whole surface at plan time (automatic triggers: it must not change).
    snapshot: Option<Vec<Seq>>,
    before: Measurement,
    max_summary_tokens: u32,
    header: Option<Arc<Value>>,
    context: Option<Arc<Value>>,
}

/// The events of one attempt, ready to append as one batch.
#[derive(Clone, Debug)]
pub struct CompactionBatch {
    /// The candidates, in append order.
    pub candidates: Vec<Candidate>,
    /// The seq the first candidate must get: the checkpoint cites the start and summary
    /// events by seq, so nothing may be appended between `finish` and the append.
    pub first_seq: Seq,
    /// What the batch records.
    pub outcome: CompactionOutcome,
}

/// What an attempt's batch records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompactionOutcome {
    /// The span is replaced by the checkpoint.
    Compacted {
        /// The checkpoint `user/message`'s seq.
        checkpoint_seq: Seq,
        /// How many nodes it shadows.
        n_shadowed: usize,
        /// Their estimated price.
        shadowed_tokens: u64,
        /// The checkpoint's estimated price.
        checkpoint_tokens: u64,
    },
    /// The attempt failed; `compaction/end.error` says why and the surface is unchanged.
    Failed {
        /// The recorded error text.
        error: String,
    },
}

impl CompactionOutcome {
    /// Whether the span was replaced.
    pub fn is_compacted(&self) -> bool {
        matches!(self, CompactionOutcome::Compacted { .. })
    }
}

/// Why no attempt could be planned or finished. Nothing has been written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// The configuration does not work for this session's window.
    #[error("compaction configuration: {0}")]
    Config(#[from] ConfigError),
    /// Pressure needs a context window and neither the config nor `request/context` has one.
    #[error("no context window: configure one or log request/context.contextWindow")]
    NoContextWindow,
    /// An earlier attempt's `compaction/start` is still open (no `compaction/end`, no newer
    /// `session/end-seed`).
    #[error("compaction is busy: compaction/start at seq {start_seq} has no compaction/end")]
    Busy {
        /// The open start's seq.
        start_seq: u64,
    },
    /// An automatic trigger outside a turn.
    #[error("automatic compaction needs an open turn")]
    NoOpenTurn,
    /// A manual compaction while a turn is open.
    #[error("manual compaction needs no open turn, but turn {turn} is open")]
    TurnOpen {
        /// The open turn's `turn` value.
        turn: String,
    },
    /// The owning turn ended or changed while the summarizer ran.
    #[error("turn changed during compaction: planned for {planned}, now {found}")]
    TurnChanged {
        /// The turn the plan was made in.
        planned: String,
        /// The open turn now (`none` if none).
        found: String,
    },
    /// The meter could not follow the log's surface (a replacement it could not locate).
    #[error("token meter out of step with the surface: {meter_nodes} metered nodes, {surface_nodes} on the surface")]
    MeterOutOfStep {
        /// Nodes the meter has.
        meter_nodes: usize,
        /// Nodes the surface has.
        surface_nodes: usize,
    },
    /// The pruning pass that runs first may not be appended (no open turn).
    #[error("pruning: {0}")]
    Prune(#[from] crate::prune::PruneError),
    /// The core refused a batch this crate built (a bug: please report it).
    #[error("core rejected the compaction batch: {0}")]
    Rejected(#[from] AcceptError),
    /// The host failed to append a batch durably; the session is as the host left it.
    #[error("appending the compaction batch failed: {0}")]
    Host(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Compactor {
    /// A compactor with the default byte-based estimator.
    pub fn new(config: CompactionConfig) -> Result<Compactor, ConfigError> {
        Compactor::with_meter(config, TokenMeter::new())
    }

    /// A compactor pricing text with `estimator`.
    pub fn with_estimator(
        config: CompactionConfig,
        estimator: Arc<dyn TokenEstimator>,
    ) -> Result<Compactor, ConfigError> {
        Compactor::with_meter(config, TokenMeter::with_estimator(estimator))
    }

    fn with_meter(config: CompactionConfig, meter: TokenMeter) -> Result<Compactor, ConfigError> {
        config.validate()?;
        Ok(Compactor {
            config,
            meter: Mutex::new(meter),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &CompactionConfig {
        &self.config
    }

    fn meter(&self) -> MutexGuard<'_, TokenMeter> {
        self.meter.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The estimated size of the next request (O(new events)).
    pub fn measure(&self, session: &Session) -> Measurement {
        self.meter().measure(session)
    }

    /// The estimator the meter prices with.
    pub fn estimator(&self) -> Arc<dyn TokenEstimator> {
        Arc::clone(self.meter().estimator())
    }

    /// The thresholds for the session's context window (config override, else the latest
    /// `request/context.contextWindow`).
    pub fn budget(&self, session: &Session) -> Result<Budget, CompactError> {
        let window = self
            .config
            .context_window
            .or_else(|| {
                session
                    .request_context()
                    .and_then(|context| context.get("contextWindow"))
                    .and_then(Value::as_u64)
            })
            .filter(|window| *window > 0)
            .ok_or(CompactError::NoContextWindow)?;
        Ok(self.config.budget(window)?)
    }

    /// The measurement against the threshold.
    pub fn pressure(&self, session: &Session) -> Result<Pressure, CompactError> {
        let budget = self.budget(session)?;
        Ok(Pressure {
            measurement: self.measure(session),
            budget,
        })
    }

    /// Chooses the region a `trigger` compaction would replace, or `None` when there is
    /// nothing to compact. Fails (writing nothing) when an attempt may not start now.
    pub fn plan(
        &self,
        session: &Session,
        trigger: Trigger,
    ) -> Result<Option<CompactionPlan>, CompactError> {
        let retain_tokens = match trigger {
            Trigger::Pressure => self.budget(session)?.retain_tokens,
            Trigger::Overflow | Trigger::Manual => 0,
        };
        let mut meter = self.meter();
        let ledger = meter.sync(session);
        check_in_step(ledger, session)?;
        check_not_busy(ledger)?;
        let owner = owner_for(ledger, trigger)?;
        let nodes = &ledger.nodes;
        let protect_head = nodes
            .first()
            .and_then(|seq| session.event(*seq))
            .is_some_and(|event| *event.event_type() == EventType::SystemMessage);
        let region = select_region(
            nodes,
            |seq| ledger.price_of(seq),
            |seq| ledger.delta_of(seq),
            protect_head,
            retain_tokens,
            |seq| is_checkpoint(session, seq),
        );
        let Some(region) = region else {
            return Ok(None);
        };
        let before = ledger.measurement();
        let snapshot = match trigger {
            Trigger::Pressure | Trigger::Overflow => Some(nodes.clone()),
            Trigger::Manual => None,
        };
        Ok(Some(CompactionPlan {
            trigger,
            owner,
            prefix: nodes[..region.start_index].to_vec(),
            shadowed: nodes[region.start_index..=region.end_index].to_vec(),
            region,
            snapshot,
            before,
            max_summary_tokens: self.config.max_summary_tokens,
            header: session.request_header().cloned(),
            context: session.request_context().cloned(),
        }))
    }

    /// Runs `summarizer` on the plan's request under the configured time limit. A timeout
    /// becomes [`SummarizeError::TimedOut`].
    pub async fn summarize<S: Summarizer + ?Sized>(
        &self,
        request: &SummaryRequest,
        summarizer: &S,
    ) -> Result<Summary, SummarizeError> {
        match self.config.summary_timeout {
            Some(limit) => match with_deadline(summarizer.summarize(request), limit).await {
                Some(result) => result,
                None => Err(SummarizeError::TimedOut {
                    after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                }),
            },
            None => summarizer.summarize(request).await,
        }
    }

    /// Builds the attempt's batch from the summarizer's result (see the module docs).
    /// Fails, writing nothing, only when the attempt's owner is no longer valid or another
    /// attempt opened meanwhile.
    pub fn finish(
        &self,
        plan: &CompactionPlan,
        session: &Session,
        result: Result<Summary, SummarizeError>,
        ids: &CompactionIds,
    ) -> Result<CompactionBatch, CompactError> {
        let mut meter = self.meter();
        let estimator = Arc::clone(meter.estimator());
        let ledger = meter.sync(session);
        check_in_step(ledger, session)?;
        check_not_busy(ledger)?;
        let owner_now = owner_for(ledger, plan.trigger)?;
        if owner_now != plan.owner {
            return Err(CompactError::TurnChanged {
                planned: turn_text(plan.owner.as_ref()),
                found: turn_text(owner_now.as_ref()),
            });
        }
        let stable = match &plan.snapshot {
            Some(snapshot) => *snapshot == ledger.nodes,
            None => span_present(&ledger.nodes, &plan.shadowed),
        };
        let first_seq = session.next_seq();
        let start = Candidate::log_only(payload::PluginEvent {
            event_type: "compaction/start".into(),
            data: bracket_data(ids, Some(("turn", turn_value(&plan.owner))), None),
        });
        let checkpoint = match result {
            Err(error) => Err(error.to_string()),
            Ok(_) if !stable => Err("surface changed during summarization".to_owned()),
            Ok(summary) => plan.checkpoint(summary, ids, estimator.as_ref()),
        };
        let end_error = checkpoint.as_ref().err().cloned();
        let end = Candidate::log_only(payload::PluginEvent {
            event_type: "compaction/end".into(),
            data: bracket_data(
                ids,
                Some(("turn", turn_value(&plan.owner))),
                end_error.as_deref(),
            ),
        });
        let (candidates, outcome) = match checkpoint {
            Err(error) => (vec![start, end], CompactionOutcome::Failed { error }),
            Ok(checkpoint) => {
                let start_seq = first_seq;
                let summary_seq = first_seq.next();
                let checkpoint_seq = summary_seq.next();
                let mut sources = Vec::with_capacity(plan.shadowed.len() + 2);
                sources.push(start_seq);
                sources.push(summary_seq);
                sources.extend_from_slice(&plan.shadowed);
                let intent = SurfaceIntent::replace(plan.start(), plan.end(), sources);
                let message = Candidate::surface(
                    payload::UserMessage {
                        message: checkpoint.message,
                    },
                    intent,
                );
                let summary = Candidate::log_only(payload::PluginEvent {
                    event_type: "compaction/summary".into(),
                    data: checkpoint.summary_data,
                });
                (
                    vec![start, summary, message, end],
                    CompactionOutcome::Compacted {
                        checkpoint_seq,
                        n_shadowed: plan.shadowed.len(),
                        shadowed_tokens: plan.region.shadowed_tokens,
                        checkpoint_tokens: checkpoint.tokens,
                    },
                )
            }
        };
        Ok(CompactionBatch {
            candidates,
            first_seq,
            outcome,
        })
    }

    /// Plans, summarizes and builds the batch for a session the caller holds for the whole
    /// attempt (tests, tools). `Ok(None)`: nothing to compact. Appending the batch is the
    /// caller's (for a durable session: the store's writer).
    pub async fn compact<S: Summarizer + ?Sized>(
        &self,
        session: &Session,
        trigger: Trigger,
        summarizer: &S,
        ids: &CompactionIds,
    ) -> Result<Option<CompactionBatch>, CompactError> {
        let Some(plan) = self.plan(session, trigger)? else {
            return Ok(None);
        };
        let request = plan.summary_request(session);
        let result = self.summarize(&request, summarizer).await;
        self.finish(&plan, session, result, ids).map(Some)
    }
}

/// The framed checkpoint and its trace payload.
struct Checkpoint {
    message: Value,
    summary_data: Value,
    tokens: u64,
}

impl CompactionPlan {
    /// The trigger.
    pub fn trigger(&self) -> Trigger {
        self.trigger
    }

    /// The first shadowed node.
    pub fn start(&self) -> Seq {
        self.shadowed[0]
    }

    /// The last shadowed node.
    pub fn end(&self) -> Seq {
        self.shadowed[self.shadowed.len() - 1]
    }

    /// Every shadowed node, in surface order.
    pub fn shadowed(&self) -> &[Seq] {
        &self.shadowed
    }

    /// The region's surface positions and prices.
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// The measurement the plan was made from.
    pub fn before(&self) -> &Measurement {
        &self.before
    }

    /// The summary request: the exact head of the derived messages up to the region's
    /// end, the same header, the directive last (§5.9). O(region).
    pub fn summary_request(&self, session: &Session) -> SummaryRequest {
        let prefix: Vec<_> = self
            .prefix
            .iter()
            .filter_map(|seq| session.project(*seq))
            .collect();
        let shadowed_from = prefix.len();
        let mut messages = prefix;
        messages.extend(self.shadowed.iter().filter_map(|seq| session.project(*seq)));
        SummaryRequest {
            header: self.header.clone(),
            context: self.context.clone(),
            messages,
            shadowed_from,
            shadowed: self.shadowed.clone(),
            instruction: instruction_text(),
            max_tokens: self.max_summary_tokens,
        }
    }

    /// Frames a summary and checks the output rules (§5.5): text only, not blank, and
    /// smaller than the span it replaces.
    fn checkpoint(
        &self,
        summary: Summary,
        ids: &CompactionIds,
        estimator: &dyn TokenEstimator,
    ) -> Result<Checkpoint, String> {
        if summary.text.iter().all(|text| text.trim().is_empty()) {
            return Err("summary is empty".to_owned());
        }
        let mut content = Vec::with_capacity(summary.text.len() + 2);
        content.push(payload::text_block(&format!(
            "{CHECKPOINT_PREAMBLE}\n\n<compacted-summary>"
        )));
        content.extend(summary.text.iter().map(|text| payload::text_block(text)));
        content.push(payload::text_block("</compacted-summary>"));
        let mut source = Map::new();
        source.insert("kind".into(), "plugin".into());
        source.insert("plugin".into(), CHECKPOINT_PLUGIN.into());
        source.insert("compactionId".into(), ids.compaction_id.as_str().into());
        if let Some(command) = &ids.source_command_id {
            source.insert("sourceCommandId".into(), command.as_str().into());
        }
        let message = payload::user_message(&ids.message_id, content, Value::Object(source));
        let tokens = message_tokens(&message, estimator);
        if tokens >= self.region.shadowed_tokens {
            return Err(format!(
                "summary is not smaller than the shadowed content ({tokens} >= {} estimated tokens)",
                self.region.shadowed_tokens
            ));
        }
        let mut data = Map::new();
        data.insert("compactionId".into(), ids.compaction_id.as_str().into());
        if let Some(command) = &ids.source_command_id {
            data.insert("sourceCommandId".into(), command.as_str().into());
        }
        data.insert(
            "summary".into(),
            Value::Array(
                summary
                    .text
                    .iter()
                    .map(|t| payload::text_block(t))
                    .collect(),
            ),
        );
        if let Some(raw) = summary.raw_output {
            data.insert("rawOutput".into(), Value::Array(raw));
        }
        data.insert(
            "shadowedRange".into(),
            json!({"start": self.start().get(), "end": self.end().get()}),
        );
        data.insert(
            "shadowedSeqs".into(),
            Value::Array(self.shadowed.iter().map(|seq| seq.get().into()).collect()),
        );
        data.insert(
            "shadowedTokenCount".into(),
            self.region.shadowed_tokens.into(),
        );
        data.insert("provider".into(), summary.provider.into());
        data.insert("model".into(), summary.model.into());
        data.insert("maxTokens".into(), self.max_summary_tokens.into());
        if let Some(usage) = summary.usage {
            data.insert("usage".into(), usage);
        }
        Ok(Checkpoint {
            message,
            summary_data: Value::Object(data),
            tokens,
        })
    }
}

/// `source.plugin` of a checkpoint message (upstream's spelling, so dsh tools recognise it).
pub const CHECKPOINT_PLUGIN: &str = "compact";

/// Whether the node at `seq` is an earlier compaction checkpoint.
pub(crate) fn is_checkpoint(session: &Session, seq: Seq) -> bool {
    session.event(seq).is_some_and(|event| {
        *event.event_type() == EventType::UserMessage
            && event
                .data_uncached()
                .get("source")
                .and_then(|source| source.get("plugin"))
                .and_then(Value::as_str)
                == Some(CHECKPOINT_PLUGIN)
    })
}

fn check_in_step(ledger: &Ledger, session: &Session) -> Result<(), CompactError> {
    if ledger.consistent {
        Ok(())
    } else {
        Err(CompactError::MeterOutOfStep {
            meter_nodes: ledger.nodes.len(),
            surface_nodes: session.surface().len(),
        })
    }
}

fn check_not_busy(ledger: &Ledger) -> Result<(), CompactError> {
    match &ledger.bracket {
        Some(open) => Err(CompactError::Busy {
            start_seq: open.seq.get(),
        }),
        None => Ok(()),
    }
}

fn owner_for(ledger: &Ledger, trigger: Trigger) -> Result<Option<Value>, CompactError> {
    match (trigger, &ledger.open_turn) {
        (Trigger::Manual, None) => Ok(None),
        (Trigger::Manual, Some(turn)) => Err(CompactError::TurnOpen {
            turn: turn.to_string(),
        }),
        (Trigger::Pressure | Trigger::Overflow, Some(turn)) => Ok(Some(turn.clone())),
        (Trigger::Pressure | Trigger::Overflow, None) => Err(CompactError::NoOpenTurn),
    }
}

fn turn_value(owner: &Option<Value>) -> Value {
    owner.clone().unwrap_or(Value::Null)
}

fn turn_text(owner: Option<&Value>) -> String {
    owner.map_or_else(|| "none".to_owned(), Value::to_string)
}

/// `{compactionId, sourceCommandId?, turn, error?}` in upstream's key order.
fn bracket_data(ids: &CompactionIds, turn: Option<(&str, Value)>, error: Option<&str>) -> Value {
    let mut data = Map::new();
    data.insert("compactionId".into(), ids.compaction_id.as_str().into());
    if let Some(command) = &ids.source_command_id {
        data.insert("sourceCommandId".into(), command.as_str().into());
    }
    if let Some((key, value)) = turn {
        data.insert(key.into(), value);
    }
    if let Some(error) = error {
        data.insert("error".into(), error.into());
    }
    Value::Object(data)
}

/// Whether `span` is still present, contiguous and in order on `nodes`.
fn span_present(nodes: &[Seq], span: &[Seq]) -> bool {
    let Some(first) = span.first() else {
        return false;
    };
    nodes
        .iter()
        .position(|seq| seq == first)
        .and_then(|start| nodes.get(start..start + span.len()))
        .is_some_and(|found| found == span)
}

#[cfg(test)]
mod tests;
