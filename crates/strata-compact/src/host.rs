//! Drivers: the trigger policy of persistence-compaction §5.3 run against a session the
//! caller owns, through a [`CompactionHost`].
//!
//! The host is the caller's I/O seam: it lends the session for reading and appends a
//! batch durably, all-or-nothing (core plan → store write → commit). strata-compact never
//! writes bytes itself. Two hosts ship here: [`MemoryHost`] (an owned in-memory session:
//! tests, dry runs) and [`WriterHost`] (a store's [`SessionWriter`]: the agent loop, the
//! CLI).
//!
//! - [`Compactor::compact_if_needed`] — the pressure path, for the agent's pre-step point:
//!   measure; below the threshold do nothing; prune and remeasure; then up to
//!   `1 + compaction_retries` compactions, remeasuring after each.
//! - [`Compactor::recover_overflow`] — the provider rejected the request as too long:
//!   prune, compact once keeping only the newest unit, and say whether to retry (only if
//!   the surface really changed, persistence §10 item 24; the per-agent retry cap is the
//!   agent loop's).
//! - [`Compactor::compact_now`] — a manual compaction outside a turn.
//!
//! A failed attempt is recorded (its `compaction/end` carries the error) and ends the
//! driver: nothing is retried in the same pre-step, so a failing summarizer cannot loop.

use std::future::{ready, Future};

use strata_core::{AcceptError, Candidate, Seq, Session};
use strata_store::{AppendError, SessionWriter};

use crate::compaction::{
    CompactError, CompactionIds, CompactionOutcome, Compactor, IdGenerator, Trigger,
};
use crate::config::Budget;
use crate::meter::Measurement;
use crate::prune::{PrunedResult, Pruner};
use crate::summarizer::Summarizer;

/// Where the drivers read the session and append batches.
pub trait CompactionHost {
    /// The host's append failure.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Runs `f` on the current session.
    fn with_session<R>(&self, f: impl FnOnce(&Session) -> R) -> R;

    /// Appends `batch` as one unit whose first event must get `first_seq`; durable when
    /// it resolves to `Ok`, absent when it resolves to `Err`. Async so an agent can run a
    /// blocking store write off its executor.
    fn append(
        &mut self,
        batch: Vec<Candidate>,
        first_seq: Seq,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// An in-memory session as a host. Events get the last event's time (deterministic).
pub struct MemoryHost {
    session: Session,
}

/// Why a [`MemoryHost`] refused a batch.
#[derive(Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryHostError {
    /// The core rejected the batch; the session is unchanged.
    #[error("batch rejected: {0}")]
    Rejected(#[from] AcceptError),
    /// The session moved on since the batch was built.
    #[error("batch built for seq {expected} but the log's next seq is {found}")]
    SeqMoved {
        /// The seq the batch was built for.
        expected: u64,
        /// The log's next seq.
        found: u64,
    },
}

impl std::fmt::Debug for MemoryHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryHost")
            .field("session", &self.session.id())
            .field("n_events", &self.session.len())
            .finish()
    }
}

impl MemoryHost {
    /// Hosts `session`.
    pub fn new(session: Session) -> MemoryHost {
        MemoryHost { session }
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Gives the session back.
    pub fn into_session(self) -> Session {
        self.session
    }
}

impl CompactionHost for MemoryHost {
    type Error = MemoryHostError;

    fn with_session<R>(&self, f: impl FnOnce(&Session) -> R) -> R {
        f(&self.session)
    }

    fn append(
        &mut self,
        batch: Vec<Candidate>,
        first_seq: Seq,
    ) -> impl Future<Output = Result<(), MemoryHostError>> + Send {
        let next = self.session.next_seq();
        let result = if next == first_seq {
            let time = self.session.last_event().map_or(0, |event| event.time());
            self.session
                .append_batch(batch, time)
                .map(drop)
                .map_err(MemoryHostError::from)
        } else {
            Err(MemoryHostError::SeqMoved {
                expected: first_seq.get(),
                found: next.get(),
            })
        };
        ready(result)
    }
}

/// A store's session writer as a host; event times come from `clock` (epoch ms).
pub struct WriterHost<'a> {
    writer: &'a SessionWriter,
    clock: Box<dyn Fn() -> i64 + Send + Sync + 'a>,
}

/// Why a [`WriterHost`] append failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriterHostError {
    /// The writer refused or failed the append (see [`AppendError`]).
    #[error(transparent)]
    Append(#[from] AppendError),
    /// Someone else appended between building and appending the batch: the checkpoint's
    /// citations of its start and summary events point elsewhere. The batch is durable.
    #[error("batch built for seq {expected} landed at seq {found}")]
    SeqMoved {
        /// The seq the batch was built for.
        expected: u64,
        /// Where it landed.
        found: u64,
    },
}

impl<'a> WriterHost<'a> {
    /// Hosts `writer`, timing events with the system clock.
    pub fn new(writer: &'a SessionWriter) -> WriterHost<'a> {
        WriterHost::with_clock(writer, system_clock_ms)
    }

    /// Hosts `writer`, timing events with `clock`.
    pub fn with_clock(
        writer: &'a SessionWriter,
        clock: impl Fn() -> i64 + Send + Sync + 'a,
    ) -> WriterHost<'a> {
        WriterHost {
            writer,
            clock: Box::new(clock),
        }
    }
}

impl std::fmt::Debug for WriterHost<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterHost")
            .field("writer", &self.writer)
            .finish_non_exhaustive()
    }
}

impl CompactionHost for WriterHost<'_> {
    type Error = WriterHostError;

    fn with_session<R>(&self, f: impl FnOnce(&Session) -> R) -> R {
        self.writer.with_session(f)
    }

    /// Blocks the calling thread until the batch is durable (the CLI's case; an agent on
    /// an async runtime implements [`CompactionHost`] over its own off-executor append).
    fn append(
        &mut self,
        batch: Vec<Candidate>,
        first_seq: Seq,
    ) -> impl Future<Output = Result<(), WriterHostError>> + Send {
        let result = self
            .writer
            .append(batch, (self.clock)())
            .map_err(WriterHostError::from)
            .and_then(|events| match events.first() {
                Some(first) if first.seq() != first_seq => Err(WriterHostError::SeqMoved {
                    expected: first_seq.get(),
                    found: first.seq().get(),
                }),
                _ => Ok(()),
            });
        ready(result)
    }
}

/// Epoch milliseconds from the system clock (compaction sits above the store, which may
/// read clocks; core never does).
pub fn system_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

/// What [`Compactor::compact_if_needed`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoReport {
    /// How it ended.
    pub status: AutoStatus,
    /// The thresholds used.
    pub budget: Budget,
    /// The measurement before anything was done.
    pub before: Measurement,
    /// The measurement at the end.
    pub after: Measurement,
    /// Results the pruner rewrote.
    pub pruned: Vec<PrunedResult>,
    /// Every compaction attempt, in order.
    pub attempts: Vec<CompactionOutcome>,
}

/// How the pressure path ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoStatus {
    /// Below the threshold: nothing done.
    BelowThreshold,
    /// Pruning alone brought the request below the threshold (no model call).
    Pruned,
    /// Compaction brought the request below the threshold.
    Compacted,
    /// Above the threshold with nothing left to compact.
    NothingToCompact,
    /// An attempt failed and was recorded; the turn continues on the full history.
    Failed,
    /// Every attempt landed but the request is still above the threshold (a warning
    /// upstream: "compaction still above threshold after N compaction attempts").
    StillAboveThreshold,
}

/// What [`Compactor::recover_overflow`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverflowReport {
    /// Retry the request: the surface really changed (replace generation advanced).
    pub retry: bool,
    /// Results the pruner rewrote.
    pub pruned: Vec<PrunedResult>,
    /// The compaction attempt, if one was made.
    pub attempt: Option<CompactionOutcome>,
    /// Why compaction could not run after pruning had already landed (reported, not
    /// returned as an error, because the retry is still worth making).
    pub compaction_error: Option<String>,
}

impl Compactor {
    /// One attempt through `host`: plan, summarize (without holding the session), finish,
    /// append. `Ok(None)`: nothing to compact.
    pub async fn attempt<H: CompactionHost, S: Summarizer + ?Sized>(
        &self,
        host: &mut H,
        trigger: Trigger,
        summarizer: &S,
        ids: &CompactionIds,
    ) -> Result<Option<CompactionOutcome>, CompactError> {
        let Some(plan) = host.with_session(|session| self.plan(session, trigger))? else {
            return Ok(None);
        };
        let request = host.with_session(|session| plan.summary_request(session));
        let result = self.summarize(&request, summarizer).await;
        let batch = host.with_session(|session| self.finish(&plan, session, result, ids))?;
        host.append(batch.candidates, batch.first_seq)
            .await
            .map_err(|error| CompactError::Host(Box::new(error)))?;
        Ok(Some(batch.outcome))
    }

    /// A manual compaction (no open turn; keeps only the newest unit). `Ok(None)`:
    /// "No compactable history yet."
    pub async fn compact_now<H: CompactionHost, S: Summarizer + ?Sized>(
        &self,
        host: &mut H,
        summarizer: &S,
        ids: &CompactionIds,
    ) -> Result<Option<CompactionOutcome>, CompactError> {
        self.attempt(host, Trigger::Manual, summarizer, ids).await
    }

    /// The pressure path (see the module docs); call it at the agent's pre-step point.
    pub async fn compact_if_needed<H: CompactionHost, S: Summarizer + ?Sized>(
        &self,
        host: &mut H,
        summarizer: &S,
        pruner: Option<&Pruner>,
        ids: &mut IdGenerator,
    ) -> Result<AutoReport, CompactError> {
        let pressure = host.with_session(|session| self.pressure(session))?;
        let budget = pressure.budget;
        let mut report = AutoReport {
            status: AutoStatus::BelowThreshold,
            budget,
            before: pressure.measurement.clone(),
            after: pressure.measurement,
            pruned: Vec::new(),
            attempts: Vec::new(),
        };
        if report.after.total_tokens < budget.threshold_tokens {
            return Ok(report);
        }
        if let Some(pruner) = pruner {
            report.pruned = prune_through(host, pruner).await?;
            if !report.pruned.is_empty() {
                report.after = host.with_session(|session| self.measure(session));
                if report.after.total_tokens < budget.threshold_tokens {
                    report.status = AutoStatus::Pruned;
                    return Ok(report);
                }
            }
        }
        for _ in 0..=self.config().compaction_retries {
            let ids = ids.next_ids();
            let outcome = self
                .attempt(host, Trigger::Pressure, summarizer, &ids)
                .await?;
            let Some(outcome) = outcome else {
                report.status = AutoStatus::NothingToCompact;
                return Ok(report);
            };
            let failed = !outcome.is_compacted();
            report.attempts.push(outcome);
            report.after = host.with_session(|session| self.measure(session));
            if failed {
                report.status = AutoStatus::Failed;
                return Ok(report);
            }
            if report.after.total_tokens < budget.threshold_tokens {
                report.status = AutoStatus::Compacted;
                return Ok(report);
            }
        }
        report.status = AutoStatus::StillAboveThreshold;
        Ok(report)
    }

    /// The overflow path (see the module docs).
    pub async fn recover_overflow<H: CompactionHost, S: Summarizer + ?Sized>(
        &self,
        host: &mut H,
        summarizer: &S,
        pruner: Option<&Pruner>,
        ids: &CompactionIds,
    ) -> Result<OverflowReport, CompactError> {
        let generation = |host: &H| host.with_session(|s| s.surface().replace_generation());
        let before = generation(host);
        let pruned = match pruner {
            Some(pruner) => prune_through(host, pruner).await?,
            None => Vec::new(),
        };
        let mut report = OverflowReport {
            retry: false,
            pruned,
            attempt: None,
            compaction_error: None,
        };
        match self.attempt(host, Trigger::Overflow, summarizer, ids).await {
            Ok(attempt) => report.attempt = attempt,
            Err(error) if generation(host) > before => {
                report.compaction_error = Some(error.to_string());
            }
            Err(error) => return Err(error),
        }
        report.retry = generation(host) > before;
        Ok(report)
    }
}

/// Plans a pruning pass and appends it as one batch.
async fn prune_through<H: CompactionHost>(
    host: &mut H,
    pruner: &Pruner,
) -> Result<Vec<PrunedResult>, CompactError> {
    let (plan, first_seq) =
        host.with_session(|session| (pruner.plan_in_turn(session), session.next_seq()));
    let plan = plan?;
    if plan.is_empty() {
        return Ok(Vec::new());
    }
    host.append(plan.candidates, first_seq)
        .await
        .map_err(|error| CompactError::Host(Box::new(error)))?;
    Ok(plan.results)
}

#[cfg(test)]
mod tests;
