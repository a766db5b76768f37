//! The entry points through which older generations are validated, reproduced step by step
//! from upstream 0.1.0-rc.8 (docs/v0-rules.md, "Path --seed" and "Path --restore").
//!
//! - [`seed_v0`] is `Session.fromRestore(id, events, header)`: the header rules, then every
//!   event through the core's seed path under the generation's rules, then the end-seed marker.
//! - [`restore_v0`] is the persistence coordinator's `prepare(id)`: R1 the version (refused
//!   unwrapped), R2 the whole-log legacy refusals, R3 the legacy upgrades and message shapes per
//!   event, R4 the vocabulary, R5 crash-repair closers for an open last turn, R6 the seed path
//!   over the log plus closers, R7 the closers re-checked as stored events. Failures in R2–R7
//!   are wrapped (`stored session "<id>" failed validation: …`), see [`Rejection`].
//! - [`restore_v2`] is a v2 log's restore: the v2 vocabulary, then the seed path.
//!
//! The restore paths stream: each row is read once, every step keeps only its own state, and
//! the seed path (R6) goes to a [`RestoreSink`] — a [`SessionSink`] builds the session (for
//! commands that show it), a [`VerifierSink`] keeps only the surface (for logs larger than
//! memory). Because every step before R6 outranks it, R6's first failure is reported only when
//! the whole log passed R2–R5, so both sinks give the same verdict. Sessions are in the log's
//! own generation and numbering: surface seqs and derived messages are v0-native.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use serde_json::{Map, Value};
use strata_core::repair::StoredTurnScan;
use strata_core::{
    check_stored_message, AcceptError, CloseCause, EventType, Generation, RawEvent, SeedOptions,
    Session, SessionHeader, Verified, Verifier,
};

use super::js;
use super::normalize::{RefusalScan, Upgrader};
use super::reader::{LogRecord, Record};
use super::rejection::{LegacyRule, Rejection};

/// A log accepted by an entry point.
pub struct Restored<T> {
    /// What the sink produced (a session, or a verified summary).
    pub outcome: T,
    /// The crash-repair closers the restore path appended, as `(type, seq)`.
    pub repair_closers: Vec<(String, u64)>,
}

/// Where the seed path (R6) of a restore sends the log's rows, in order.
pub trait RestoreSink {
    /// What a successful restore produces.
    type Output;

    /// The next row (`line` is its physical line, `None` for a closer). A failure is kept
    /// and reported by [`RestoreSink::finish`], which a restore calls only when every earlier
    /// step passed.
    fn push(&mut self, line: Option<u64>, row: RawEvent);

    /// The seed path's verdict on everything pushed.
    fn finish(self) -> Result<Self::Output, Rejection>;
}

/// Restores into a [`Session`] (holding the log).
///
/// The rows go, as they are pushed, to a thread that restores them (the core's restore pulls
/// its rows), so the sink never holds the log as rows: a v0 log's rows carry their payloads
/// as parsed values, several times the size of their text, and a sink that collected them
/// all first held them beside the session it then built (docs/measurements.md §7).
/// Should no thread start, the rows are collected and restored on [`RestoreSink::finish`].
pub struct SessionSink {
    /// Each pushed row's line, by index, to place a failure the core reports by index.
    lines: Vec<Option<u64>>,
    restore: Restoring,
}

/// Where a [`SessionSink`]'s rows go.
enum Restoring {
    /// To the restoring thread.
    Thread {
        /// Rows not yet sent.
        batch: Vec<RawEvent>,
        /// `None` once the restore has stopped at a failure: later rows are not needed.
        rows: Option<SyncSender<Vec<RawEvent>>>,
        restored: JoinHandle<Result<Session, AcceptError>>,
    },
    /// Collected, for a restore on this thread at the end.
    Collected {
        header: SessionHeader,
        options: SeedOptions,
        rows: Vec<RawEvent>,
    },
}

/// Rows sent to the restoring thread at a time: a send can wake the other thread, and one
/// send per row would wake it once a row.
const BATCH_ROWS: usize = 512;

/// Batches on their way to the restoring thread at most: enough to keep it busy while the
/// reader parses the next, few enough to hold no more than a small part of the log.
const BATCHES_IN_FLIGHT: usize = 4;

impl SessionSink {
    /// A sink for a log with `header`.
    pub fn new(header: SessionHeader, options: SeedOptions) -> SessionSink {
        let (sender, receiver) = sync_channel::<Vec<RawEvent>>(BATCHES_IN_FLIGHT);
        let thread_header = header.clone();
        let started = std::thread::Builder::new()
            .name("strata-restore".into())
            .spawn(move || {
                Session::restore(thread_header, receiver.into_iter().flatten(), options)
            });
        let restore = match started {
            Ok(restored) => Restoring::Thread {
                batch: Vec::with_capacity(BATCH_ROWS),
                rows: Some(sender),
                restored,
            },
            Err(_) => Restoring::Collected {
                header,
                options,
                rows: Vec::new(),
            },
        };
        SessionSink {
            lines: Vec::new(),
            restore,
        }
    }
}

impl RestoreSink for SessionSink {
    type Output = Session;

    fn push(&mut self, line: Option<u64>, mut row: RawEvent) {
        self.lines.push(line);
        // As text the row is a fraction of its value's size, and the value is freed here,
        // on the thread that built it: freed on the restoring thread, each value's chunks
        // went back through the lock of this thread's heap, which this thread takes for
        // every value it parses, and the two threads waited on each other (a 1 M-event v0
        // log took 2.5 times as long to validate).
        row.serialize_payload();
        match &mut self.restore {
            Restoring::Thread { batch, rows, .. } => {
                batch.push(row);
                if batch.len() >= BATCH_ROWS {
                    send(rows, batch);
                }
            }
            Restoring::Collected { rows, .. } => rows.push(row),
        }
    }

    fn finish(self) -> Result<Session, Rejection> {
        let lines = self.lines;
        let restored = match self.restore {
            Restoring::Thread {
                mut batch,
                mut rows,
                restored,
            } => {
                send(&mut rows, &mut batch);
                drop(rows);
                restored
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }
            Restoring::Collected {
                header,
                options,
                rows,
            } => Session::restore(header, rows, options),
        };
        restored.map_err(|error| {
            let line = error
                .index
                .and_then(|index| lines.get(usize::try_from(index).ok()?).copied().flatten());
            Rejection::from_accept(&error).at_line(line)
        })
    }
}

/// Sends `batch` to the restoring thread, leaving it empty. A send fails only once the
/// restore has stopped at a failure, which `finish` reports; the rows after it are dropped.
fn send(rows: &mut Option<SyncSender<Vec<RawEvent>>>, batch: &mut Vec<RawEvent>) {
    if batch.is_empty() {
        return;
    }
    RawEvent::share_own_payloads(batch);
    let full = std::mem::replace(batch, Vec::with_capacity(BATCH_ROWS));
    if rows.as_ref().is_some_and(|rows| rows.send(full).is_err()) {
        *rows = None;
    }
}

/// Verifies row by row with the core's [`Verifier`], holding only the surface.
pub struct VerifierSink {
    verifier: Verifier,
    failure: Option<Rejection>,
}

impl VerifierSink {
    /// A sink for a log with `header`.
    pub fn new(header: SessionHeader) -> VerifierSink {
        VerifierSink {
            verifier: Verifier::new(header),
            failure: None,
        }
    }
}

impl RestoreSink for VerifierSink {
    type Output = Verified;

    fn push(&mut self, line: Option<u64>, row: RawEvent) {
        if self.failure.is_none() {
            if let Err(error) = self.verifier.push(row) {
                self.failure = Some(Rejection::from_accept(&error).at_line(line));
            }
        }
    }

    fn finish(self) -> Result<Verified, Rejection> {
        if let Some(failure) = self.failure {
            return Err(failure);
        }
        self.verifier
            .finish()
            .map_err(|error| Rejection::from_accept(&error))
    }
}

/// `Session.fromRestore` under `generation`'s rules (v0 or v1): the oracle's `--seed`.
pub fn seed_v0(
    generation: Generation,
    header: &Map<String, Value>,
    events: Vec<Value>,
    options: SeedOptions,
) -> Result<Restored<Session>, Rejection> {
    let header = SessionHeader::from_value(Value::Object(header.clone()), generation)
        .map_err(|error| Rejection::from_accept(&error))?;
    let rows = events.into_iter().map(RawEvent::from_value);
    let session =
        Session::restore(header, rows, options).map_err(|error| Rejection::from_accept(&error))?;
    Ok(Restored {
        outcome: session,
        repair_closers: Vec::new(),
    })
}

/// The persistence coordinator's restore under `generation`'s rules (v0 or v1): the oracle's
/// `--restore`. `sink` receives the validated header and then the seed path's rows.
pub fn restore_v0<S: RestoreSink>(
    generation: Generation,
    header: &Map<String, Value>,
    records: impl IntoIterator<Item = LogRecord>,
    sink: impl FnOnce(SessionHeader) -> S,
) -> Result<Restored<S::Output>, Rejection> {
    restore_v0_records(
        generation,
        header,
        records.into_iter().map(Record::Tree),
        sink,
    )
}

/// [`restore_v0`] over a reader's records, some of them rows kept as text: R2–R4 leave such a
/// row as it is (the reader keeps only rows they are blind to, `untouched`), so it goes to the
/// bracket scan and the sink without a tree.
pub(crate) fn restore_v0_records<S: RestoreSink>(
    generation: Generation,
    header: &Map<String, Value>,
    records: impl IntoIterator<Item = Record>,
    sink: impl FnOnce(SessionHeader) -> S,
) -> Result<Restored<S::Output>, Rejection> {
    let id = js::display(header.get("id"));
    check_version(generation, header, &id)?;
    // R6 starts with the header rules; their verdict waits for R2–R5.
    let mut sink = SessionHeader::from_value(Value::Object(header.clone()), generation)
        .map(sink)
        .map_err(|error| Rejection::from_accept(&error));
    let mut refusals = RefusalScan::default();
    let mut upgrader = Upgrader::new(&id);
    let mut turns = StoredTurnScan::new();
    // Each step's first failure; a step runs over the whole log before the next one starts,
    // so an earlier step's failure anywhere outranks a later step's.
    let (mut upgrades, mut vocabulary, mut repair) = (None, None, None);
    for record in records {
        let (line, row) = match record {
            Record::Tree(LogRecord { line, mut event }) => {
                refusals.observe(&id, &event);
                if upgrades.is_some() {
                    continue;
                }
                if let Err(rejection) = upgrader.upgrade(&mut event) {
                    upgrades = Some(rejection.at_line(Some(line)));
                    continue;
                }
                // R4 reads the tree (its message names the type and seq as written); R3's
                // message shapes, R5 and the sink read the row it becomes.
                let unknown = match vocabulary {
                    None => check_vocabulary(generation, &id, &event).err(),
                    Some(_) => None,
                };
                let row = RawEvent::from_value(event);
                if let Err(rejection) = check_message(generation, &row) {
                    upgrades = Some(rejection.at_line(Some(line)));
                    continue;
                }
                if let Some(rejection) = unknown {
                    vocabulary = Some(rejection.at_line(Some(line)));
                }
                if vocabulary.is_some() {
                    continue;
                }
                if repair.is_none() {
                    if let Err(error) = turns.observe_raw(&row) {
                        repair = Some(Rejection::type_error(&error.message).at_line(Some(line)));
                    }
                }
                (line, row)
            }
            Record::Row { line, row } => {
                if upgrades.is_some() || vocabulary.is_some() {
                    continue;
                }
                if repair.is_none() {
                    if let Err(error) = turns.observe_raw(&row) {
                        repair = Some(Rejection::type_error(&error.message).at_line(Some(line)));
                    }
                }
                (line, row)
            }
        };
        if repair.is_some() {
            continue;
        }
        if let Ok(sink) = &mut sink {
            sink.push(Some(line), row);
        }
    }
    if let Some(refusal) = refusals.verdict() {
        return Err(refusal.clone());
    }
    if let Some(failure) = upgrades.or(vocabulary).or(repair) {
        return Err(failure);
    }
    let mut closers = turns.closer_rows(CloseCause::Interrupted);
    for closer in &closers {
        check_message(generation, &RawEvent::from_value(closer.clone()))?;
    }
    let mut sink = sink?;
    let repair_closers = closers
        .iter()
        .map(|closer| {
            (
                closer["type"].as_str().unwrap_or_default().to_owned(),
                closer["seq"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    for closer in &closers {
        sink.push(None, RawEvent::from_value(closer.clone()));
    }
    let outcome = sink.finish()?;
    // R7: the committed closers are re-read as stored events; only their own upgrade checks
    // can fail now (a `turn/end` closing a turn numbered 0 or missing).
    for closer in &mut closers {
        upgrader.upgrade(closer)?;
    }
    Ok(Restored {
        outcome,
        repair_closers,
    })
}

/// A v2 log's restore: the v2 vocabulary (an unknown type must be `ignorable`), then the seed
/// path under v2 rules.
pub fn restore_v2<S: RestoreSink>(
    header: &Map<String, Value>,
    records: impl IntoIterator<Item = LogRecord>,
    sink: impl FnOnce(SessionHeader) -> S,
) -> Result<Restored<S::Output>, Rejection> {
    let id = js::display(header.get("id"));
    let header = SessionHeader::from_value(Value::Object(header.clone()), Generation::V2)
        .map_err(|error| Rejection::from_accept(&error))?;
    let mut sink = sink(header);
    for LogRecord { line, event } in records {
        check_vocabulary(Generation::V2, &id, &event).map_err(|r| r.at_line(Some(line)))?;
        sink.push(Some(line), RawEvent::from_value(event));
    }
    Ok(Restored {
        outcome: sink.finish()?,
        repair_closers: Vec::new(),
    })
}

/// R3's message shapes (core §4.5 rules with the stored seq as subject).
fn check_message(generation: Generation, row: &RawEvent) -> Result<(), Rejection> {
    let is_message = row
        .type_tag()
        .is_some_and(|tag| EventType::parse(tag).is_surface_in(generation));
    if !is_message {
        return Ok(());
    }
    check_stored_message(generation, row).map_err(|error| Rejection::from_accept(&error))
}

/// R1: `version` must name the generation exactly; refused unwrapped, direction-aware.
fn check_version(
    generation: Generation,
    header: &Map<String, Value>,
    id: &str,
) -> Result<(), Rejection> {
    let expected = generation.format_version();
    let version = header.get("version");
    let exact = version
        .and_then(js::number)
        .is_some_and(|x| x == expected as f64);
    if exact {
        return Ok(());
    }
    let shown = js::display(version);
    let message = if js_greater(version, expected as f64) {
        format!(
            "session \"{id}\" uses log format v{shown}, but this harness reads only v{expected}: the log was written by a newer harness — upgrade the harness to open it"
        )
    } else {
        format!(
            "session \"{id}\" uses log format v{shown}, older than the supported v{expected}, and this build ships no upgrade path for it"
        )
    };
    Err(Rejection::unsupported(
        LegacyRule::HeaderBadVersion,
        message,
    ))
}

/// JavaScript's `value > bound` for the values a header can hold.
fn js_greater(value: Option<&Value>, bound: f64) -> bool {
    match value {
        Some(Value::Number(_)) => value.and_then(js::number).is_some_and(|x| x > bound),
        Some(Value::String(text)) => {
            let trimmed = text.trim();
            let parsed = if trimmed.is_empty() {
                Some(0.0)
            } else {
                trimmed.parse::<f64>().ok()
            };
            parsed.is_some_and(|x| x > bound)
        }
        Some(Value::Bool(flag)) => f64::from(u8::from(*flag)) > bound,
        _ => false,
    }
}

/// R4: a type the generation does not know must be marked `ignorable: true`.
fn check_vocabulary(generation: Generation, id: &str, event: &Value) -> Result<(), Rejection> {
    let tag = event.get("type");
    let known = tag
        .and_then(Value::as_str)
        .is_some_and(|tag| EventType::parse(tag).is_known_in(generation));
    if known || event.get("ignorable") == Some(&Value::Bool(true)) {
        return Ok(());
    }
    let seq = event.get("seq");
    Err(Rejection::unsupported(
        LegacyRule::UnknownType,
        format!(
            "session \"{id}\" contains event type \"{}\" (seq {}) unknown to this harness and not marked ignorable; refusing to interpret the log — it was likely written by a newer harness",
            js::display(tag),
            js::display(seq)
        ),
    )
    .with_seq_value(seq))
}
