//! Event-local acceptance of stored rows ahead of a restore, on any thread.
//!
//! Most of what accepting a stored row costs reads the row alone: its envelope, its payload's
//! data and message shape rules, surface rules 2–4 (session-core §5.2). Only contiguity and the
//! rules relating the row to the surface need the rows before it. A store that decodes rows on
//! several threads runs [`PrecheckedRow::check`] there and hands the results, in log order, to
//! [`Session::restore`](crate::Session::restore), which runs only what is
//! left on the restoring thread.
//!
//! Invariants:
//! - A restore from prechecked rows accepts exactly the logs [`Session::restore`] accepts and
//!   rejects the others with the same error: a row's event-local rules run before its relational
//!   ones in both, and the first failing row in log order is the one reported, however far
//!   ahead of it a helper thread has checked.
//! - A row is checked as the row at `index` of a log read from seq 0, the only place a full
//!   restore meets it (so its contiguity check expects seq `index`).
//! - v0/v1 logs interleave relational and local rules (docs/v0-rules.md), so their rows are not
//!   checked ahead: [`PrecheckedRow::check`] defers them, and the restore runs every rule in
//!   upstream's order.
//!
//! [`Session::restore`]: crate::Session::restore

use crate::accept::{accept_row_local, Context, Path, Window};
use crate::event::Event;
use crate::generation::Generation;
use crate::relations::{has_facts, Facts};
use crate::rule::AcceptError;
use crate::scan::{PreparedView, ScannedRow};
use crate::seq::Seq;
use crate::surface::SurfaceState;
use crate::wire::RawEvent;

/// A stored row after its event-local rules ran (or were deferred), ready for
/// [`Session::restore`](crate::Session::restore).
#[derive(Debug)]
pub struct PrecheckedRow(pub(crate) Checked);

#[derive(Debug)]
pub(crate) enum Checked {
    /// Passed every event-local rule under the log's generation. Held by value: the restoring
    /// thread makes its shared allocation, so the log's events sit together in that thread's
    /// heap instead of among a decoding thread's temporaries. A V3 message's payload facts
    /// come along, read from the view its scan built: the relational rules then read no
    /// payload text on the restoring thread (a message carries the long texts). The facts
    /// are small and held inline: no allocation made here is freed there.
    Accepted(Event, Option<Facts>),
    /// Failed one; the restore reports it if it gets this far. (Boxed, like `Deferred`: the
    /// common row is one pointer.)
    Rejected(Box<AcceptError>),
    /// Not checked ahead (an older generation); the restore checks it in full.
    Deferred(Box<RawEvent>),
}

impl PrecheckedRow {
    /// Runs the event-local rules of `raw`, the row at `index` of a log of `generation` read
    /// from seq 0.
    pub fn check(generation: Generation, index: u64, raw: RawEvent) -> PrecheckedRow {
        PrecheckedRow::check_with(generation, index, raw, None)
    }

    /// [`PrecheckedRow::check`] for a row decoded in one pass: the payload's rules read the
    /// view the scan built instead of parsing the payload again.
    pub fn check_scanned(generation: Generation, index: u64, row: ScannedRow<'_>) -> PrecheckedRow {
        let (raw, view) = row.into_parts();
        PrecheckedRow::check_with(generation, index, raw, view.as_ref())
    }

    fn check_with(
        generation: Generation,
        index: u64,
        raw: RawEvent,
        prepared: Option<&PreparedView<'_>>,
    ) -> PrecheckedRow {
        if generation.legacy_check_order() {
            return PrecheckedRow(Checked::Deferred(Box::new(raw)));
        }
        let Ok(expected_seq) = Seq::new(index) else {
            return PrecheckedRow(Checked::Deferred(Box::new(raw)));
        };
        let surface = SurfaceState::new();
        let empty = Window {
            base: Seq::ZERO,
            events: &[],
        };
        let context = Context {
            generation,
            path: Path::Restore,
            surface: &surface,
            lookup: &empty,
            expected_seq,
            index,
            head: None,
        };
        match accept_row_local(&context, raw, prepared) {
            Ok(event) => {
                let facts = prepared
                    .filter(|_| generation.checks_relations() && has_facts(&event.event_type))
                    .and_then(|prepared| Facts::from_view(&event.event_type, &prepared.view));
                PrecheckedRow(Checked::Accepted(event, facts))
            }
            Err(error) => PrecheckedRow(Checked::Rejected(Box::new(error))),
        }
    }

    /// A row left for the restore to check in full.
    pub fn deferred(raw: RawEvent) -> PrecheckedRow {
        PrecheckedRow(Checked::Deferred(Box::new(raw)))
    }

    /// The row's type tag, for code watching rows go by on their way to a restore (a writer's
    /// repair tracks the last `compaction/start`); `None` for a row that failed its rules,
    /// where the restore stops.
    pub fn type_tag(&self) -> Option<&str> {
        match &self.0 {
            Checked::Accepted(event, _) => Some(event.event_type().as_str()),
            Checked::Rejected(_) => None,
            Checked::Deferred(raw) => raw.type_tag(),
        }
    }

    /// The row's `time` as its wire row holds it (see [`RawEvent::time_value`]); `None` for a
    /// row that failed its rules.
    pub fn time_value(&self) -> Option<serde_json::Value> {
        match &self.0 {
            Checked::Accepted(event, _) => Some(serde_json::Value::from(event.time())),
            Checked::Rejected(_) => None,
            Checked::Deferred(raw) => raw.time_value(),
        }
    }

    /// A copy of the row as a wire row, leaving the row to the restore (see
    /// [`PrecheckedRow::into_raw`]); `None` for a row that failed its rules.
    pub fn to_raw(&self) -> Option<RawEvent> {
        match &self.0 {
            Checked::Accepted(event, _) => {
                let generation = event.checked_under.unwrap_or(Generation::NATIVE);
                Some(RawEvent::from_event_in(event, generation))
            }
            Checked::Rejected(_) => None,
            Checked::Deferred(raw) => Some(RawEvent::clone(raw)),
        }
    }

    /// The row as a wire row again, for a reader that wanted rows rather than a restore (an
    /// accepted event is re-encoded; a rejected row has no wire form left and gives its error).
    pub fn into_raw(self) -> Result<RawEvent, AcceptError> {
        match self.0 {
            Checked::Accepted(event, _) => {
                let generation = event.checked_under.unwrap_or(Generation::NATIVE);
                Ok(RawEvent::from_event_in(&event, generation))
            }
            Checked::Rejected(error) => Err(*error),
            Checked::Deferred(raw) => Ok(*raw),
        }
    }
}
