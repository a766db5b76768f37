//! Closing a compaction bracket a crash left open (persistence-compaction §10 item 30).
//!
//! Upstream leaves an unmatched `compaction/start` in the log when the process dies
//! mid-compaction; crash repair then appends `turn/end` inside the open bracket, and the
//! bracket counts as "busy" until a newer `session/end-seed` makes it stale. strata closes
//! it instead: on resume, before the turn closers, a `compaction/end` with the start's
//! `compactionId`, `sourceCommandId` and `turn`, and `error: "interrupted"`. No
//! replacement is written, so the surface is exactly what the log held.
//!
//! A bracket is *open* when the newest of {`compaction/start`, `compaction/end`,
//! `session/end-seed`} is a `compaction/start`. A start followed by a marker is stale by
//! upstream's rule and is left alone: its turn was already closed by an earlier resume,
//! so a closer would name a turn that is no longer open.
//!
//! The scan walks backward and stops at the first of those three types, so it is
//! O(events since the last compaction or resume).

use std::sync::Arc;

use serde_json::{Map, Value};
use strata_core::{
    payload, AcceptError, Candidate, CloseCause, Event, EventType, Generation, PrecheckedRow,
    RawEvent, SeedOptions, Session, SessionHeader,
};
use strata_store::{restore_stream, EventRows, LogStream, StoreError, TornInfo};

/// The `error` text of a closer written on resume.
pub const INTERRUPTED: &str = "interrupted";

/// The `compaction/end` that closes the bracket left open at the end of `events`, or
/// `None` when no bracket is open.
pub fn compaction_closer(events: &[Arc<Event>]) -> Option<Candidate> {
    for event in events.iter().rev() {
        match event.event_type() {
            EventType::SessionEndSeed => return None,
            EventType::Other(name) if name.as_str() == "compaction/end" => return None,
            EventType::Other(name) if name.as_str() == "compaction/start" => {
                return Some(Candidate::log_only(payload::PluginEvent {
                    event_type: "compaction/end".into(),
                    data: closer_data(event.data()),
                }));
            }
            _ => {}
        }
    }
    None
}

/// [`compaction_closer`] over rows read from storage, as a row at the log's next seq with
/// the last row's time (repair is deterministic: it never reads a clock).
pub fn compaction_closer_row(rows: &[RawEvent]) -> Option<RawEvent> {
    let start = rows.iter().rev().find_map(|row| match row.type_tag() {
        Some("session/end-seed") | Some("compaction/end") => Some(None),
        Some("compaction/start") => Some(Some(row)),
        _ => None,
    })??;
    let time = rows.last().and_then(RawEvent::time_value);
    Some(closer_row(start, time, rows.len() as u64))
}

/// The `compaction/end` row closing the bracket `start` opened, at `seq`, with `time` (the
/// last row's; 0 when it has none).
fn closer_row(start: &RawEvent, time: Option<Value>, seq: u64) -> RawEvent {
    let start_data = start.data();
    let data = closer_data(start_data.as_deref().unwrap_or(&Value::Null));
    let mut envelope = Map::new();
    envelope.insert("type".into(), "compaction/end".into());
    envelope.insert("seq".into(), Value::from(seq));
    envelope.insert("time".into(), time.unwrap_or(Value::from(0)));
    envelope.insert("data".into(), data);
    RawEvent::from_value(Value::Object(envelope))
}

/// Rows on their way to a restore, watched for the compaction bracket they leave open: after
/// the last row, [`BracketWatch::closer_row`] is [`compaction_closer_row`] of them all,
/// without holding them (only the newest open `compaction/start` is kept).
#[derive(Debug, Default)]
struct BracketWatch {
    start: Option<RawEvent>,
    last_time: Option<Value>,
    n_rows: u64,
}

impl BracketWatch {
    /// Notes the next row.
    fn observe(&mut self, row: &PrecheckedRow) {
        self.note(row.type_tag(), || row.time_value(), || row.to_raw());
    }

    /// Notes the next row, read as a wire row.
    fn observe_raw(&mut self, row: &RawEvent) {
        self.note(row.type_tag(), || row.time_value(), || Some(row.clone()));
    }

    fn note(
        &mut self,
        tag: Option<&str>,
        time: impl FnOnce() -> Option<Value>,
        start: impl FnOnce() -> Option<RawEvent>,
    ) {
        self.n_rows += 1;
        match tag {
            Some("session/end-seed") | Some("compaction/end") => self.start = None,
            Some("compaction/start") => self.start = start(),
            _ => {}
        }
        // The closer carries the last row's time, which matters only while a bracket is open:
        // read then, not on every row (a `Value` number is a heap string here).
        if self.start.is_some() {
            self.last_time = time();
        }
    }

    /// Rows observed.
    fn n_rows(&self) -> u64 {
        self.n_rows
    }

    /// The closer of the bracket the rows so far leave open, at the next seq.
    fn closer_row(&self) -> Option<RawEvent> {
        let start = self.start.as_ref()?;
        Some(closer_row(start, self.last_time.clone(), self.n_rows))
    }
}

/// [`restore_resumed`] from a stream, holding no more of the log than a load does: rows go
/// from the stream to the session as the backend hands them out (checked ahead on its
/// decoding threads), the open bracket's closer follows the last, then the turn closers and
/// the end-seed marker. Same session, same errors (located as a load locates them). The
/// stream must start at seq 0, as `Backend::scan` and `open_append` give it; one resuming after
/// a checkpoint fails its first row's contiguity rule.
pub fn resume_stream(
    stream: &mut LogStream<'_>,
    options: SeedOptions,
) -> Result<Resumed, StoreError> {
    let header = stream.header().clone();
    let location = stream.location().to_owned();
    let first_line = stream.first_line();
    let mut watch = BracketWatch::default();
    let session = {
        let mut rows = LogStream::new(
            header,
            location,
            first_line,
            Bracketed {
                inner: stream,
                watch: &mut watch,
                closed: false,
            },
        );
        restore_stream(&mut rows, Some(CloseCause::Interrupted), options)?
    };
    Ok(Resumed {
        session,
        n_stored: usize::try_from(watch.n_rows()).unwrap_or(usize::MAX),
    })
}

/// A stream's rows, then the closer of the compaction bracket they leave open.
struct Bracketed<'s, 'a> {
    inner: &'s mut LogStream<'a>,
    watch: &'s mut BracketWatch,
    closed: bool,
}

impl Bracketed<'_, '_> {
    /// The closer, once, after the last row.
    fn close(&mut self) -> Option<RawEvent> {
        if std::mem::replace(&mut self.closed, true) {
            return None;
        }
        self.watch.closer_row()
    }
}

impl Iterator for Bracketed<'_, '_> {
    type Item = Result<RawEvent, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.closed {
            match self.inner.next() {
                Some(Ok(raw)) => {
                    self.watch.observe_raw(&raw);
                    return Some(Ok(raw));
                }
                Some(Err(error)) => return Some(Err(error)),
                None => {}
            }
        }
        self.close().map(Ok)
    }
}

impl EventRows for Bracketed<'_, '_> {
    fn torn(&self) -> Option<TornInfo> {
        self.inner.torn()
    }

    fn progress(&self) -> Option<(u64, u64)> {
        self.inner.progress()
    }

    fn next_prechecked(
        &mut self,
        generation: Generation,
    ) -> Option<Result<PrecheckedRow, StoreError>> {
        if !self.closed {
            match EventRows::next_prechecked(&mut *self.inner, generation) {
                Some(Ok(row)) => {
                    self.watch.observe(&row);
                    return Some(Ok(row));
                }
                Some(Err(error)) => return Some(Err(error)),
                None => {}
            }
        }
        self.close()
            .map(|closer| Ok(PrecheckedRow::deferred(closer)))
    }
}

/// A session restored for writing, and how much of it is not yet stored.
pub struct Resumed {
    /// The restored session: stored events, then the closers and marker resume added.
    pub session: Session,
    /// How many events the store held; `session.events()[n_stored..]` must be persisted.
    pub n_stored: usize,
}

impl std::fmt::Debug for Resumed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumed")
            .field("session", &self.session.id())
            .field("n_events", &self.session.len())
            .field("n_stored", &self.n_stored)
            .finish()
    }
}

/// Restores a stored log for a writer after a crash: the open compaction bracket is
/// closed first, then the open turn (session-core §8), then the end-seed marker is added
/// (§9.1). Reopening the result adds nothing.
///
/// This is `Session::restore_repaired` plus the compaction closer. It belongs in core
/// repair so that every store's open path gets it; until then, writers that resume through
/// this function get the closer, and `Store::open_write` leaves the bracket stale (closed
/// by its `session/end-seed` marker, as upstream does).
pub fn restore_resumed(
    header: SessionHeader,
    mut rows: Vec<RawEvent>,
    options: SeedOptions,
) -> Result<Resumed, AcceptError> {
    let n_stored = rows.len();
    if let Some(closer) = compaction_closer_row(&rows) {
        rows.push(closer);
    }
    let session = Session::restore_repaired(header, rows, CloseCause::Interrupted, options)?;
    Ok(Resumed { session, n_stored })
}

/// Closes a compaction bracket a crash left open in a session a writer has reopened, and
/// returns the `compaction/end {error: "interrupted"}` it appended (`None` when no bracket is
/// open). O(1): it reads the latest `compaction/start` and `compaction/end`, which lazy and
/// full sessions both hold.
///
/// `Store::open_write` (the store layer cannot know compaction) closes a crashed turn and adds
/// the end-seed marker, which leaves the bracket stale but unrecorded; this records its end, so
/// the log says the attempt was interrupted instead of leaving it open forever. The closer
/// follows the marker here (a full-log repair through [`restore_resumed`] puts it first).
pub fn close_open_bracket(
    writer: &strata_store::SessionWriter,
    time: i64,
) -> Result<Option<Arc<Event>>, strata_store::AppendError> {
    let start_type = EventType::parse("compaction/start");
    let end_type = EventType::parse("compaction/end");
    let candidate = writer.with_session(|session| {
        let start = session.latest(&start_type)?;
        let ended = session
            .latest(&end_type)
            .is_some_and(|end| end.seq() > start.seq());
        (!ended).then(|| {
            Candidate::log_only(payload::PluginEvent {
                event_type: "compaction/end".into(),
                data: closer_data(start.data()),
            })
        })
    });
    let Some(candidate) = candidate else {
        return Ok(None);
    };
    Ok(writer.append(vec![candidate], time)?.pop())
}

/// `{compactionId, sourceCommandId?, turn, error: "interrupted"}` copied from a start.
fn closer_data(start: &Value) -> Value {
    let mut data = Map::new();
    for key in ["compactionId", "sourceCommandId", "turn"] {
        if let Some(value) = start.get(key) {
            data.insert(key.into(), value.clone());
        }
    }
    data.insert("error".into(), INTERRUPTED.into());
    Value::Object(data)
}

#[cfg(test)]
mod tests;
