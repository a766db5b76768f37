//! The session: a log, its surface, and the folds built on them (session-core §9.1).
//!
//! A [`Session`] owns the accepted events of one log and keeps every fold
//! (surface, derived messages, request header and context) in step with it.
//! All writes go through one path: a candidate is *planned* against the
//! current state (nothing changes if it is rejected), and the plan is
//! *committed*. Stores put their I/O between the two: plan, write durably,
//! commit; or commit a batch and roll it back if the write fails.
//!
//! A session holds its whole log (*full mode*: restore, create, seed) or, when resumed from
//! a [`Checkpoint`] (*lazy mode*), only a resident tail plus the events the surface and the
//! folds name (`log` module); acceptance reads nothing else, so both modes accept and reject
//! exactly the same candidates with the same errors.
//!
//! Invariants:
//! - the event at seq `i` has seq `i` (resident or pinned);
//! - the surface, request folds, latest-by-type fold and derived-message cache equal a
//!   replay of the whole log from scratch, in either mode;
//! - a rejected candidate, seed or batch leaves every one of them unchanged.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::accept::{
    accept_envelope, accept_existing, accept_raw, accept_row_local, relate, relate_head, Context,
    Envelope, EventLookup, Path,
};
use crate::candidate::Candidate;
use crate::checkpoint::{Checkpoint, ResumeError};
use crate::derive::{DerivedCache, DerivedMessages};
use crate::event::{Event, EventType, KeyOrder, SurfaceMeta};
use crate::generation::Generation;
use crate::header::SessionHeader;
use crate::latest::Latest;
use crate::log::{EventSource, Log};
use crate::message::{project, Message};
use crate::payload::EndSeed;
use crate::precheck::{Checked, PrecheckedRow};

/// A row past every rule but the relational ones, with its facts read ahead (if any).
type Accepted = (Arc<Event>, SurfacePlan, Option<Facts>);

/// One row of a seed or restore, in whichever form its path holds it.
enum Row {
    /// A stored row.
    Raw(RawEvent),
    /// A row checked ahead.
    Checked(Checked),
    /// An event accepted before.
    Shared(Arc<Event>),
}

impl Row {
    /// Every rule but the relational ones; also gives the payload facts a decoding thread
    /// read ahead for the relational rules.
    fn accept(self, context: &Context<'_>) -> Result<Accepted, AcceptError> {
        match self {
            Row::Raw(raw) => {
                accept_raw(context, raw).map(|(event, plan, facts)| (Arc::new(event), plan, facts))
            }
            Row::Checked(Checked::Accepted(event, facts)) => {
                let plan = accept_existing(context, &event)?;
                Ok((Arc::new(event), plan, facts))
            }
            Row::Checked(Checked::Rejected(error)) => Err(*error),
            Row::Checked(Checked::Deferred(raw)) => {
                accept_raw(context, *raw).map(|(event, plan, facts)| (Arc::new(event), plan, facts))
            }
            Row::Shared(event) => accept_existing(context, &event).map(|plan| (event, plan, None)),
        }
    }

    /// The event-local rules only (upstream's first pass without the head rules).
    fn local(self, context: &Context<'_>) -> Result<Arc<Event>, AcceptError> {
        match self {
            Row::Raw(raw) => accept_row_local(context, raw, None).map(Arc::new),
            Row::Checked(Checked::Accepted(event, _)) => Ok(Arc::new(event)),
            Row::Checked(Checked::Rejected(error)) => Err(*error),
            Row::Checked(Checked::Deferred(raw)) => {
                accept_row_local(context, *raw, None).map(Arc::new)
            }
            Row::Shared(event) => Ok(event),
        }
    }
}
use crate::relations::{Change, Facts, Relations};
use crate::repair::{CloseCause, TurnState};
use crate::request::canonical_header;
use crate::rule::{AcceptError, Rule};
use crate::seq::Seq;
use crate::surface::{SurfacePlan, SurfaceState, SurfaceUndo};
use crate::wire::RawEvent;

/// An event log with its incrementally maintained folds.
pub struct Session {
    header: SessionHeader,
    generation: Generation,
    /// Invariant: the event at seq `i` has seq `i`; see the `log` module.
    log: Log,
    surface: SurfaceState,
    derived: Mutex<DerivedCache>,
    /// Bumped on every replacement and rollback; keys the derived cache.
    epoch: u64,
    request_header: Option<Arc<Value>>,
    request_context: Option<Arc<Value>>,
    /// Invariant: the `request/header` `request_header` was folded from.
    request_header_seq: Option<Seq>,
    /// Invariant: the `request/context` `request_context` was folded from.
    request_context_seq: Option<Seq>,
    /// Invariant: the latest seq of every event type in the log.
    latest: Latest,
    /// The turn state after the log's first `state_base` events, when the resident tail
    /// alone cannot rebuild it (a lazy session resumed inside an open turn).
    /// Invariant: `Some` only in lazy mode, with `state_base == log.base()`.
    turn_base: Option<TurnState>,
    /// Invariant: ≤ `log.len()`; the seq of the last inherited end-seed marker.
    inherited_count: u64,
    /// The constructor seed's length: events before it came from history.
    first_live_seq: u64,
    /// Invariant: the seq of the last `session/end-seed {inherited: true}` in the log.
    last_inherited_marker: Option<u64>,
    /// Open batches, innermost last (batches nest: `append_batch` inside a
    /// store's `begin_batch` rolls back to its own mark only).
    batches: Vec<BatchFrame>,
    /// Surface undo records of every commit since the outermost open batch
    /// began. Invariant: empty when `batches` is.
    undo: Vec<SurfaceUndo>,
    /// The relational rules' state after the whole log (docs/rules.md); journals one mark
    /// per open batch.
    relations: Relations,
    /// Whether the relational rules are off ([`SeedOptions::surface_only`]).
    surface_only: bool,
    /// Set while [`Session::extend_restored`] runs: tagged end-seed markers are refused.
    extending: bool,
}

/// What rolling one open batch back needs.
struct BatchFrame {
    log_len: u64,
    /// `undo.len()` when the batch began.
    undo_len: usize,
    request_header: Option<Arc<Value>>,
    request_context: Option<Arc<Value>>,
    request_header_seq: Option<Seq>,
    request_context_seq: Option<Seq>,
    latest: Latest,
    last_inherited_marker: Option<u64>,
}

/// A validated candidate, ready to commit at exactly one log position.
#[derive(Debug)]
pub struct AppendPlan {
    event: Event,
    surface: SurfacePlan,
    change: Change,
}

impl AppendPlan {
    /// The event the plan would commit (seq and time assigned).
    pub fn event(&self) -> &Event {
        &self.event
    }
}

/// A plan committed to a session that has moved on since it was made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("append plan for seq {planned} is stale: the log's next seq is {next}")]
pub struct StalePlanError {
    /// The seq the plan was made for.
    pub planned: u64,
    /// The log's next seq now.
    pub next: u64,
}

/// How a seeded or restored session's constructor behaves.
#[derive(Clone, Copy, Debug, Default)]
pub struct SeedOptions {
    /// Time of a constructor-added `session/end-seed` marker (core has no clock).
    pub marker_time: i64,
    /// Run only the event-local and surface rules, not upstream's relational and head rules
    /// (docs/rules.md, "Surface-only sessions"): for the ported session-core surface cases,
    /// which judge surface transitions outside any turn. Never set on a store's path.
    pub surface_only: bool,
    /// Leave a restore's plain end-seed marker to the first write-open: for an import, which
    /// stores the log event for event and records a checkpoint of exactly what it stored, so
    /// that open resumes from it (and adds the marker then, as it would after a full restore).
    pub defer_marker: bool,
    /// For a writer reopening after a crash (persistence §4.2): a turn the stored log leaves
    /// open is closed with closers of this cause (§8) *before* the end-seed marker, so
    /// reopening a repaired log adds nothing. Applies to [`Session::restore`] and
    /// [`Session::resume`]; the closers are the caller's to persist.
    pub repair: Option<CloseCause>,
}

impl SeedOptions {
    /// These options with crash repair by `cause` ([`SeedOptions::repair`]).
    pub fn repaired(self, cause: CloseCause) -> SeedOptions {
        SeedOptions {
            repair: Some(cause),
            ..self
        }
    }
}

/// A row a [`Session::restore`] takes: a stored row ([`RawEvent`]), a row whose event-local
/// rules already ran on the thread that decoded it ([`PrecheckedRow`]), or an event accepted
/// before (`Arc<Event>`: a live session's log, a generated log, shared, not copied). Every
/// kind passes the same rules in the same order, with the same errors.
pub trait RestoreRow: restore_row::Sealed {}

impl RestoreRow for RawEvent {}
impl RestoreRow for PrecheckedRow {}
impl RestoreRow for Arc<Event> {}

/// Keeps [`RestoreRow`] to the three kinds above, whose rows the seeding loop knows.
mod restore_row {
    use super::{Path, Row, Session};
    use crate::rule::AcceptError;

    /// How rows of one kind enter the seeding loop.
    pub trait Sealed: Sized {
        /// Accepts `rows` as a restore's events, from row 0.
        fn seed_all(
            session: &mut Session,
            rows: impl Iterator<Item = Self>,
        ) -> Result<(), AcceptError>;
    }

    impl Sealed for crate::wire::RawEvent {
        fn seed_all(
            session: &mut Session,
            rows: impl Iterator<Item = Self>,
        ) -> Result<(), AcceptError> {
            session.seed_rows(rows.map(Row::Raw), Path::Restore, 0)
        }
    }

    impl Sealed for crate::precheck::PrecheckedRow {
        fn seed_all(
            session: &mut Session,
            rows: impl Iterator<Item = Self>,
        ) -> Result<(), AcceptError> {
            session.seed_rows(rows.map(|row| Row::Checked(row.0)), Path::Restore, 0)
        }
    }

    impl Sealed for std::sync::Arc<crate::event::Event> {
        fn seed_all(
            session: &mut Session,
            rows: impl Iterator<Item = Self>,
        ) -> Result<(), AcceptError> {
            session.seed_rows(rows.map(Row::Shared), Path::Restore, 0)
        }
    }
}

impl Session {
    /// A fresh session with no events.
    pub fn create(header: SessionHeader) -> Result<Session, AcceptError> {
        Session::create_with(header, SeedOptions::default())
    }

    /// [`Session::create`] with `options` (only [`SeedOptions::surface_only`] applies).
    pub fn create_with(
        header: SessionHeader,
        options: SeedOptions,
    ) -> Result<Session, AcceptError> {
        if header.is_seeded() {
            return Err(seed_error(
                "seeded session requires an explicit constructor seed",
            ));
        }
        let mut session = Session::empty(header);
        session.surface_only = options.surface_only;
        Ok(session)
    }

    /// A session whose log starts with `seed` (validated like any stored log,
    /// plus the JSON-snapshot rule), then the end-seed marker of §9.1:
    /// `{inherited: true}` at seq `inherited_count` for a fresh fork child
    /// (`header.is_seeded()`), else `{}` unless the seed already ends with a marker.
    pub fn create_seeded(
        header: SessionHeader,
        seed: impl IntoIterator<Item = RawEvent>,
        inherited_count: Option<u64>,
        options: SeedOptions,
    ) -> Result<Session, AcceptError> {
        let mut session = Session::empty(header);
        session.surface_only = options.surface_only;
        session.seed(seed, Path::Seed)?;
        let seed_len = session.log.len();
        let seeded = session.header.is_seeded();
        match (seeded, inherited_count) {
            (true, None) => {
                return Err(seed_error(
                    "seeded session requires an inherited event count",
                ))
            }
            (false, Some(count)) if count != 0 => {
                return Err(seed_error(
                    "unseeded session inherited event count must be 0",
                ))
            }
            _ => {}
        }
        let count = inherited_count.unwrap_or(0);
        if count > seed_len {
            return Err(seed_error(
                "session inherited event count exceeds its event log",
            ));
        }
        // The last tagged marker fixes the inherited count on reload (§9.1
        // step 5): refuse a seed whose restore would disagree with `count`.
        let stray_marker = session.generation >= Generation::V2
            && session
                .last_inherited_marker
                .is_some_and(|marker| !seeded || marker > count);
        if stray_marker {
            return Err(seed_error(if seeded {
                "seeded session constructor seed must equal its inherited prefix"
            } else {
                "unseeded session inherited event count must be 0"
            }));
        }
        session.first_live_seq = seed_len;
        if seeded {
            // A fork-built seed may already hold the tagged marker at `count` (§9.3).
            let has_marker = Seq::new(count)
                .ok()
                .and_then(|seq| session.log.get(seq))
                .is_some_and(|event| is_inherited_marker(event));
            let prefix_len = if has_marker { count + 1 } else { count };
            if !has_marker && count != seed_len {
                return Err(seed_error(
                    "seeded session constructor seed must equal its inherited prefix",
                ));
            }
            if has_marker && prefix_len > seed_len {
                return Err(seed_error(
                    "seeded session constructor seed must equal its inherited prefix",
                ));
            }
            session.inherited_count = count;
            if !has_marker {
                let time = session
                    .log
                    .last()
                    .map_or(options.marker_time, |event| event.time);
                session.push_marker(true, time)?;
            }
        } else {
            session.inherited_count = 0;
            session.append_plain_marker_if_needed(options.marker_time)?;
        }
        Ok(session)
    }

    /// Rebuilds a session from its stored log (`fromRestore`): envelopes, data
    /// rules, message shapes and surface rules are checked (not JSON
    /// losslessness: stored text is already JSON). The inherited count comes
    /// from the last `session/end-seed {inherited: true}` (V2+) or the header's
    /// `seedLength` (v0/v1). A `session/end-seed {}` is appended unless the log
    /// already ends with a marker (or [`SeedOptions::defer_marker`]); with
    /// [`SeedOptions::repair`], a turn left open is closed first. Events past the
    /// input are the caller's to persist.
    ///
    /// The rows may be of any [`RestoreRow`] kind: rows checked ahead on the threads that
    /// decoded them ([`PrecheckedRow::check`]) run only contiguity and the rules relating
    /// each row to the surface here; events accepted before are shared, not decoded or
    /// copied. Every kind accepts and rejects exactly what stored rows do, with the same
    /// errors (see the `precheck` module).
    pub fn restore<R: RestoreRow>(
        header: SessionHeader,
        rows: impl IntoIterator<Item = R>,
        options: SeedOptions,
    ) -> Result<Session, AcceptError> {
        Session::restore_loaded(header, options, |session| {
            let rows = rows.into_iter();
            session.log.reserve(rows.size_hint().0);
            R::seed_all(session, rows)
        })
    }

    fn restore_loaded<E: From<AcceptError>>(
        header: SessionHeader,
        options: SeedOptions,
        load: impl FnOnce(&mut Session) -> Result<(), E>,
    ) -> Result<Session, E> {
        let mut session = Session::empty(header);
        session.surface_only = options.surface_only;
        load(&mut session)?;
        let log_len = session.log.len();
        session.first_live_seq = log_len;
        let count = session
            .header
            .inherited_count(session.last_inherited_marker, log_len)
            .map_err(E::from)?;
        session.inherited_count = count;
        if let Some(cause) = options.repair {
            let closers = session.open_turn_closers(cause);
            if !closers.is_empty() {
                session.append_batch(closers.candidates, closers.time)?;
            }
            // The closers are part of the constructor seed (persistence §1.1):
            // the first live seq follows them.
            session.first_live_seq = session.log.len();
        }
        if !options.defer_marker {
            session.append_plain_marker_if_needed(options.marker_time)?;
        }
        Ok(session)
    }

    fn empty(header: SessionHeader) -> Session {
        Session {
            generation: header.generation(),
            header,
            log: Log::new(),
            surface: SurfaceState::new(),
            derived: Mutex::new(DerivedCache::new(0)),
            epoch: 0,
            request_header: None,
            request_context: None,
            request_header_seq: None,
            request_context_seq: None,
            latest: Latest::default(),
            turn_base: None,
            inherited_count: 0,
            first_live_seq: 0,
            last_inherited_marker: None,
            batches: Vec::new(),
            undo: Vec::new(),
            relations: Relations::new(),
            surface_only: false,
            extending: false,
        }
    }

    fn seed(
        &mut self,
        rows: impl IntoIterator<Item = RawEvent>,
        path: Path,
    ) -> Result<(), AcceptError> {
        self.seed_from(rows, path, 0)
    }

    /// Accepts `rows` as the next events; the first is row `first_index` of the stored log
    /// (so a resumed tail's errors name the same index a full restore's do).
    fn seed_from(
        &mut self,
        rows: impl IntoIterator<Item = RawEvent>,
        path: Path,
        first_index: u64,
    ) -> Result<(), AcceptError> {
        self.seed_rows(rows.into_iter().map(Row::Raw), path, first_index)
    }

    /// The loop of every seed and restore path, in upstream's evaluation order (docs/rules.md,
    /// "Evaluation order"): a refusal of the second pass (relational rules, the surface fold)
    /// gives way to a first-pass refusal (event-local and head rules) of any later row, and
    /// R39 at a turn boundary is held until the rows after it show whether a
    /// `session/end-seed` makes the open compaction stale.
    fn seed_rows(
        &mut self,
        rows: impl Iterator<Item = Row>,
        path: Path,
        first_index: u64,
    ) -> Result<(), AcceptError> {
        let mut rows = (first_index..).zip(rows);
        // The first R39 refusal, while a later end-seed may still excuse it.
        let mut pending: Option<AcceptError> = None;
        while let Some((index, row)) = rows.next() {
            let next_seq = self.log.next_seq();
            let accepted = {
                let context = self.context(path, index, next_seq);
                row.accept(&context)
            };
            let (event, plan, facts) = match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    let head = self.relations.head().clone();
                    return Err(self.settle(error, pending, head, next_seq.get() + 1, rows, path));
                }
            };
            let related = {
                let context = self.context(path, index, next_seq);
                match self.relate_with(&context, &event, facts.as_ref(), false) {
                    Err(error)
                        if error.rule == Rule::TurnCrossesCompaction && path != Path::Append =>
                    {
                        pending.get_or_insert(error);
                        self.relate_with(&context, &event, facts.as_ref(), true)
                    }
                    other => other,
                }
            };
            let change = match related {
                Ok(change) => change,
                Err(error) => {
                    let context = self.context(path, index, next_seq);
                    let head = relate_head(&context, self.relations.head(), &event)
                        .unwrap_or_else(|_| self.relations.head().clone());
                    // A `compaction/end` settles a held R39: the start is not stale.
                    let (error, pending) = match pending {
                        Some(held) if event.event_type.as_str() == "compaction/end" => (held, None),
                        pending => (error, pending),
                    };
                    return Err(self.settle(error, pending, head, next_seq.get() + 1, rows, path));
                }
            };
            if pending.is_some() {
                match event.event_type.as_str() {
                    // The open compaction is stale: R39 did not apply.
                    "session/end-seed" if self.relations.compaction_open() => pending = None,
                    "compaction/end" => {
                        let head = self.relations.head().clone();
                        let error = pending
                            .take()
                            .unwrap_or_else(|| AcceptError::new(Rule::TurnCrossesCompaction, ""));
                        return Err(self.settle(error, None, head, next_seq.get() + 1, rows, path));
                    }
                    _ => {}
                }
            }
            // Like `plan`: a tagged marker past the constructor would change the inherited
            // count a full restore derives.
            if self.extending && self.generation >= Generation::V2 && is_inherited_marker(&event) {
                return Err(stray_marker_error(event.seq.get()).at_index(index));
            }
            self.commit_shared(event, &plan, change);
        }
        match pending {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn context(&self, path: Path, index: u64, expected_seq: Seq) -> Context<'_> {
        Context {
            generation: self.generation,
            path,
            surface: &self.surface,
            lookup: &self.log,
            expected_seq,
            index,
            head: self.head_rules(),
        }
    }

    /// The head state the head rules read, when they apply (V3, not surface-only).
    fn head_rules(&self) -> Option<&crate::relations::Head> {
        (self.generation.checks_relations() && !self.surface_only).then(|| self.relations.head())
    }

    /// The refusal a seed or restore reports, given the first one found at some row and the
    /// rows after it: a first-pass refusal stands; a second-pass one gives way to the first
    /// first-pass refusal of a later row, and to a held R39 refusal (an earlier seq) unless a
    /// later end-seed makes that compaction stale.
    fn settle(
        &self,
        error: AcceptError,
        pending: Option<AcceptError>,
        mut head: crate::relations::Head,
        mut seq: u64,
        rest: impl Iterator<Item = (u64, Row)>,
        path: Path,
    ) -> AcceptError {
        if self.surface_only || !self.generation.checks_relations() {
            return error;
        }
        if !error.rule.is_second_pass() {
            return error;
        }
        let mut pending = pending;
        let mut watching = pending.is_some();
        for (index, row) in rest {
            let Ok(expected) = Seq::new(seq) else {
                break;
            };
            let context = self.context(path, index, expected);
            let event = match row.local(&context) {
                Ok(event) => event,
                // An unknown type (E16) is judged after the first pass: the head rules step
                // past the row, which is no event of theirs.
                Err(later) if later.rule.is_second_pass() => {
                    seq += 1;
                    continue;
                }
                Err(later) => return later,
            };
            match relate_head(&context, &head, &event) {
                Ok(next) => head = next,
                Err(later) => return later,
            }
            if watching {
                match event.event_type.as_str() {
                    "session/end-seed" => {
                        pending = None;
                        watching = false;
                    }
                    "compaction/end" => watching = false,
                    _ => {}
                }
            }
            seq += 1;
        }
        pending.unwrap_or(error)
    }

    /// The relational rules on an accepted event (off for a surface-only session).
    fn relate(&self, context: &Context<'_>, event: &Event) -> Result<Change, AcceptError> {
        self.relate_with(context, event, None, false)
    }

    fn relate_with(
        &self,
        context: &Context<'_>,
        event: &Event,
        facts: Option<&Facts>,
        skip_r39: bool,
    ) -> Result<Change, AcceptError> {
        if self.surface_only {
            return Ok(Change::default());
        }
        // Only a resumed session's titles look below its checkpoint.
        let older_humans = if self.relations.growing.human_users_from == 0 {
            Vec::new()
        } else {
            self.older_humans(context, event)?
        };
        relate(
            context,
            &self.relations,
            &self.header,
            event,
            facts,
            skip_r39,
            &older_humans,
        )
    }

    /// The seqs a title cites before the human messages the relational state lists (a
    /// resumed session's: see `relations::Growing::human_users_from`) that are human
    /// `user/message` events, read from the log (fetched from the event source when not
    /// held), for R37. Titles are rare; other events read nothing.
    fn older_humans(&self, context: &Context<'_>, event: &Event) -> Result<Vec<u64>, AcceptError> {
        let cited = self.relations.older_cited(event);
        let mut humans = Vec::with_capacity(cited.len());
        for at in cited {
            let seq = Seq::new(at).map_err(|error| source_failed(context, event, at, &error))?;
            let found = self
                .load_event(seq)
                .map_err(|error| source_failed(context, event, at, &error))?;
            if found.is_some_and(|cited| is_human_user(&cited)) {
                humans.push(at);
            }
        }
        Ok(humans)
    }

    fn append_plain_marker_if_needed(&mut self, time: i64) -> Result<(), AcceptError> {
        let ends_with_marker = self.log.len().checked_sub(1).is_some_and(|last| {
            self.latest
                .get(&EventType::SessionEndSeed)
                .is_some_and(|marker| marker.get() == last)
        });
        if ends_with_marker {
            return Ok(());
        }
        self.push_marker(false, time)
    }

    /// Appends the constructor's end-seed marker (the only writer of the
    /// tagged form, so it bypasses `plan`'s marker check).
    fn push_marker(&mut self, inherited: bool, time: i64) -> Result<(), AcceptError> {
        let plan = self.plan_unchecked(Candidate::log_only(EndSeed { inherited }), time)?;
        self.commit_accepted(plan.event, &plan.surface, plan.change);
        Ok(())
    }

    /// Validates `candidate` as the next event at `time` without changing anything.
    ///
    /// A `session/end-seed {inherited: true}` is refused: the tagged marker
    /// fixes the inherited count a reload derives (§9.1 step 5), so only a
    /// fork child's constructor writes it.
    pub fn plan(&self, candidate: Candidate, time: i64) -> Result<AppendPlan, AcceptError> {
        let seq = self.log.len();
        if self.generation >= Generation::V2
            && candidate.event_type == EventType::SessionEndSeed
            && candidate.data.get("inherited") == Some(&Value::Bool(true))
        {
            return Err(stray_marker_error(seq));
        }
        self.plan_unchecked(candidate, time)
    }

    fn plan_unchecked(&self, candidate: Candidate, time: i64) -> Result<AppendPlan, AcceptError> {
        let seq = self.log.next_seq();
        let envelope = Envelope {
            event_type: candidate.event_type,
            seq,
            time,
            data: crate::data::Payload::Value(Box::new(candidate.data)),
            meta: candidate.meta,
            ignorable: candidate.ignorable,
            order: KeyOrder::CANONICAL,
        };
        let context = Context {
            generation: self.generation,
            path: Path::Append,
            surface: &self.surface,
            lookup: &self.log,
            expected_seq: seq,
            index: seq.get(),
            head: self.head_rules(),
        };
        let (event, surface, _) = accept_envelope(&context, envelope)?;
        let change = self.relate(&context, &event)?;
        Ok(AppendPlan {
            event,
            surface,
            change,
        })
    }

    /// Commits a plan made against the current state.
    pub fn commit(&mut self, plan: AppendPlan) -> Result<Arc<Event>, StalePlanError> {
        let next = self.log.len();
        if plan.event.seq.get() != next {
            return Err(StalePlanError {
                planned: plan.event.seq.get(),
                next,
            });
        }
        Ok(self.commit_accepted(plan.event, &plan.surface, plan.change))
    }

    /// Plans and commits one candidate.
    pub fn append(&mut self, candidate: Candidate, time: i64) -> Result<Arc<Event>, AcceptError> {
        let plan = self.plan(candidate, time)?;
        // A plan made against the current state is never stale.
        Ok(self.commit_accepted(plan.event, &plan.surface, plan.change))
    }

    /// Appends candidates as one unit: either all are accepted, or none is and
    /// the session is unchanged (the error names the first rejected candidate).
    pub fn append_batch(
        &mut self,
        candidates: impl IntoIterator<Item = Candidate>,
        time: i64,
    ) -> Result<Vec<Arc<Event>>, AcceptError> {
        let mark = self.begin_batch();
        let mut committed = Vec::new();
        for candidate in candidates {
            match self.append(candidate, time) {
                Ok(event) => committed.push(event),
                Err(error) => {
                    self.rollback(mark);
                    return Err(error);
                }
            }
        }
        self.end_batch(mark);
        Ok(committed)
    }

    /// Appends already-accepted rows read back from storage (a store's tail or
    /// a restored suffix) under restore rules.
    pub fn extend_restored(
        &mut self,
        rows: impl IntoIterator<Item = RawEvent>,
    ) -> Result<(), AcceptError> {
        let start = self.log.len();
        let mark = self.begin_batch();
        self.extending = true;
        let result = self.seed_rows(rows.into_iter().map(Row::Raw), Path::Restore, start);
        self.extending = false;
        match result {
            Ok(()) => {
                self.end_batch(mark);
                Ok(())
            }
            Err(error) => {
                self.rollback(mark);
                Err(error)
            }
        }
    }

    /// Starts recording undo information; commits after this can be rolled back.
    ///
    /// Batches nest: a batch begun while another is open ends or rolls back
    /// on its own, and the outer batch can still roll back everything since
    /// its own mark. End or roll back marks innermost first; ending or rolling
    /// back an outer mark also closes the batches opened inside it.
    pub fn begin_batch(&mut self) -> BatchMark {
        self.batches.push(BatchFrame {
            log_len: self.log.len(),
            undo_len: self.undo.len(),
            request_header: self.request_header.clone(),
            request_context: self.request_context.clone(),
            request_header_seq: self.request_header_seq,
            request_context_seq: self.request_context_seq,
            latest: self.latest.clone(),
            last_inherited_marker: self.last_inherited_marker,
        });
        self.relations.mark();
        BatchMark {
            log_len: self.log.len(),
            depth: self.batches.len(),
        }
    }

    /// Keeps everything committed since `begin_batch` (an enclosing batch may
    /// still roll it back).
    pub fn end_batch(&mut self, mark: BatchMark) {
        if (1..=self.batches.len()).contains(&mark.depth) {
            self.batches.truncate(mark.depth - 1);
            self.relations.end(mark.depth - 1);
        }
        if self.batches.is_empty() {
            self.undo.clear();
        }
    }

    /// Undoes every commit since `begin_batch` (e.g. the store failed to write them).
    pub fn rollback(&mut self, mark: BatchMark) {
        if !(1..=self.batches.len()).contains(&mark.depth) {
            return;
        }
        let inner = self.batches.split_off(mark.depth - 1);
        self.relations.rollback(mark.depth - 1);
        let Some(frame) = inner.into_iter().next() else {
            return;
        };
        debug_assert_eq!(frame.log_len, mark.log_len);
        while self.undo.len() > frame.undo_len {
            if let Some(undo) = self.undo.pop() {
                self.surface.undo(undo);
            }
        }
        self.log.truncate(frame.log_len);
        self.request_header = frame.request_header;
        self.request_context = frame.request_context;
        self.request_header_seq = frame.request_header_seq;
        self.request_context_seq = frame.request_context_seq;
        self.latest = frame.latest;
        self.last_inherited_marker = frame.last_inherited_marker;
        if self.batches.is_empty() {
            self.undo.clear();
        }
        self.epoch += 1;
    }

    fn commit_accepted(&mut self, event: Event, plan: &SurfacePlan, change: Change) -> Arc<Event> {
        self.commit_shared(Arc::new(event), plan, change)
    }

    fn commit_shared(
        &mut self,
        event: Arc<Event>,
        plan: &SurfacePlan,
        change: Change,
    ) -> Arc<Event> {
        self.relations.apply(change);
        if event.event_type == EventType::SessionEndSeed && is_inherited_marker(&event) {
            self.last_inherited_marker = Some(event.seq.get());
        }
        let undo = self.surface.apply(plan);
        if matches!(plan, SurfacePlan::Replace { .. }) {
            self.epoch += 1;
        }
        if !self.batches.is_empty() {
            self.undo.push(undo);
        }
        // Read without caching the parsed payload in the event: a log holds one request header
        // per turn, and their trees would stay in memory (16 MB of a 1 M-event load).
        match event.event_type {
            EventType::RequestHeader => {
                if let Some(header) = event.data.value_uncached().get("header") {
                    self.request_header = Some(Arc::new(canonical_header(header, self.generation)));
                    self.request_header_seq = Some(event.seq);
                }
            }
            EventType::RequestContext => {
                self.request_context = Some(Arc::new(event.data.value_uncached().into_owned()));
                self.request_context_seq = Some(event.seq);
            }
            _ => {}
        }
        self.latest.note(&event.event_type, event.seq);
        self.log.push(event.clone());
        event
    }

    /// The header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// Whether the relational rules are off ([`SeedOptions::surface_only`]).
    pub fn is_surface_only(&self) -> bool {
        self.surface_only
    }

    /// The session id.
    pub fn id(&self) -> &str {
        self.header.id()
    }

    /// The generation whose rules this session's log follows.
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// Every event, in seq order.
    ///
    /// O(1) in full mode. On a lazily resumed session ([`Session::is_lazy`]) the first call
    /// *materializes* the log: every event below [`Session::resident_base`] is fetched from
    /// the event source (and passes the event-local rules again), O(history) in time and
    /// memory, once; the copy then follows appends. That fetch is I/O, so it can fail (the
    /// store's files changed under the session): a full session's call never does. Code on
    /// the resume, append and request paths uses [`Session::resident_events`] and the folds
    /// ([`Session::latest`], [`Session::last_event`], [`Session::turn_state`]) instead.
    pub fn events(&self) -> Result<&[Arc<Event>], ResumeError> {
        self.log.whole(|| self.load_prefix())
    }

    /// The events below the resident tail, pinned ones shared, the others fetched.
    fn load_prefix(&self) -> Result<Vec<Arc<Event>>, ResumeError> {
        let base = self.log.base();
        let Some(source) = self.log.source() else {
            return Err(ResumeError::mismatch(
                None,
                "a lazy session without an event source",
            ));
        };
        let rows = source.load_range(0, base)?;
        if rows.len() as u64 != base {
            return Err(ResumeError::mismatch(
                None,
                format!(
                    "the event source returned {} rows for the {base} events before the tail",
                    rows.len()
                ),
            ));
        }
        let mut events = Vec::with_capacity(rows.len());
        for (seq, raw) in (0..).zip(rows) {
            let seq = Seq::new(seq).map_err(|e| ResumeError::mismatch(Some(seq), e.to_string()))?;
            match self.log.pinned(seq) {
                Some(event) => events.push(event.clone()),
                None => events.push(Arc::new(self.accept_pinned(raw, seq)?)),
            }
        }
        Ok(events)
    }

    /// The events this session holds contiguously: seqs `resident_base()..len()` (the whole
    /// log in full mode).
    pub fn resident_events(&self) -> &[Arc<Event>] {
        self.log.tail()
    }

    /// The seq of the first resident event: 0 in full mode, the checkpoint's length in lazy
    /// mode. Invariant: never changes during the session's life.
    pub fn resident_base(&self) -> u64 {
        self.log.base()
    }

    /// Whether the session was resumed from a checkpoint and holds only part of its log.
    pub fn is_lazy(&self) -> bool {
        !self.log.is_full()
    }

    /// The event at `seq` when the session holds it: always in full mode; in lazy mode when it
    /// is resident or pinned (every surface node, the request header and context events, the
    /// latest event of each type). See [`Session::load_event`] for any other seq.
    pub fn event(&self, seq: Seq) -> Option<&Arc<Event>> {
        self.log.get(seq)
    }

    /// The event at `seq`, fetched from the session's event source when it is not held (lazy
    /// mode); `Ok(None)` when `seq` is past the log. The fetched row passes the event-local
    /// acceptance rules again; it is not kept.
    pub fn load_event(&self, seq: Seq) -> Result<Option<Arc<Event>>, ResumeError> {
        if seq.get() >= self.log.len() {
            return Ok(None);
        }
        if let Some(event) = self.log.get(seq) {
            return Ok(Some(event.clone()));
        }
        let Some(source) = self.log.source() else {
            return Ok(None);
        };
        let raw = source.load(seq)?;
        self.accept_pinned(raw, seq)
            .map(|event| Some(Arc::new(event)))
    }

    /// The number of events (also the next seq).
    pub fn len(&self) -> usize {
        usize::try_from(self.log.len()).unwrap_or(usize::MAX)
    }

    /// Whether the log has no events.
    pub fn is_empty(&self) -> bool {
        self.log.len() == 0
    }

    /// The seq the next append gets.
    pub fn next_seq(&self) -> Seq {
        self.log.next_seq()
    }

    /// The last event of the log (held in both modes).
    pub fn last_event(&self) -> Option<&Arc<Event>> {
        self.log.last()
    }

    /// The latest event of `event_type` (held in both modes): the current turn's `turn/start`,
    /// the newest `compaction/start`, … O(1).
    pub fn latest(&self, event_type: &EventType) -> Option<&Arc<Event>> {
        self.latest
            .get(event_type)
            .and_then(|seq| self.log.get(seq))
    }

    /// The turn left open at the end of the log: what crash repair would close. Rebuilt from
    /// the last `turn/start`/`turn/end` (or the checkpoint, in lazy mode, when that boundary
    /// lies before the resident tail), so it costs O(events of the current turn).
    pub fn turn_state(&self) -> TurnState {
        let boundary = [EventType::TurnStart, EventType::TurnEnd]
            .iter()
            .filter_map(|event_type| self.latest.get(event_type))
            .max();
        match boundary {
            Some(seq) if seq.get() >= self.log.base() => {
                let mut state = TurnState::default();
                let from = usize::try_from(seq.get() - self.log.base()).unwrap_or(usize::MAX);
                state.observe_all(self.log.tail().get(from..).unwrap_or(&[]));
                state
            }
            _ => {
                let mut state = self.turn_base.clone().unwrap_or_default();
                state.observe_all(self.log.tail());
                state
            }
        }
    }

    /// The closers of what is left open at the end of the log (`openTurnClosers`, §8): a
    /// compaction bracket's `compaction/end`, then the turn's closers (see
    /// [`open_turn_closers`](crate::repair::open_turn_closers)). O(events of the current turn); the
    /// bracket is read from the latest-by-type fold, which a lazy session holds too.
    pub fn open_turn_closers(&self, cause: CloseCause) -> crate::repair::Closers {
        let (first_seq, time) = match self.log.last() {
            Some(last) => (last.seq.next(), last.time),
            None => (Seq::ZERO, 0),
        };
        let bracket = self.open_compaction();
        self.turn_state()
            .closers_after(bracket.map(AsRef::as_ref), first_seq, time, cause)
    }

    /// The `compaction/start` of the compaction bracket open at the end of the log: the newest
    /// start, when no `compaction/end` or `session/end-seed` follows it. O(1).
    pub fn open_compaction(&self) -> Option<&Arc<Event>> {
        let start = self.latest(&EventType::parse(crate::repair::COMPACTION_START))?;
        let later = |event_type: &EventType| {
            self.latest
                .get(event_type)
                .is_some_and(|seq| seq > start.seq)
        };
        let closed = later(&EventType::parse(crate::repair::COMPACTION_END))
            || later(&EventType::SessionEndSeed);
        (!closed).then_some(start)
    }

    /// The surface.
    pub fn surface(&self) -> &SurfaceState {
        &self.surface
    }

    /// The count of fork-inherited events (the seq of the inherited marker).
    pub fn inherited_count(&self) -> u64 {
        self.inherited_count
    }

    /// The constructor seed's length: the first seq this process wrote.
    pub fn first_live_seq(&self) -> u64 {
        self.first_live_seq
    }

    /// Events from the inherited count on: this session's own work. Materializes a lazy
    /// session, as [`Session::events`] does.
    pub fn own_events(&self) -> Result<&[Arc<Event>], ResumeError> {
        let start = usize::try_from(self.inherited_count).unwrap_or(usize::MAX);
        Ok(self.events()?.get(start..).unwrap_or(&[]))
    }

    /// Whether `seq` is one of this session's own events.
    pub fn is_own_seq(&self, seq: Seq) -> bool {
        self.inherited_count <= seq.get() && seq.get() < self.log.len()
    }

    /// The canonical header of the latest `request/header` (§7.2).
    pub fn request_header(&self) -> Option<&Arc<Value>> {
        self.request_header.as_ref()
    }

    /// The latest `request/context` payload.
    pub fn request_context(&self) -> Option<&Arc<Value>> {
        self.request_context.as_ref()
    }

    /// The message the event at `seq` projects to (`deriveEventMessage`).
    pub fn project(&self, seq: Seq) -> Option<Message> {
        self.event(seq).and_then(project)
    }

    /// The derived messages: the surface projected to messages (§7.1).
    ///
    /// O(new nodes) after tail appends, O(1) when nothing changed; the result
    /// is a frozen view that later appends never change.
    pub fn derive_messages(&self) -> DerivedMessages {
        let mut cache = self.derived.lock().unwrap_or_else(PoisonError::into_inner);
        let nodes = self.surface.nodes();
        cache.refresh(self.epoch, nodes.len(), |index| {
            nodes
                .get(index)
                .and_then(|seq| self.event(*seq))
                .and_then(project)
        })
    }

    /// Appends the closers of a turn left open at the end of the log (crash
    /// repair, §8); returns them (empty when no turn is open).
    pub fn close_open_turn(
        &mut self,
        cause: crate::repair::CloseCause,
    ) -> Result<Vec<Arc<Event>>, AcceptError> {
        let closers = self.open_turn_closers(cause);
        self.append_batch(closers.candidates, closers.time)
    }

    /// A raw copy of every event, for seeding a replay or fork. Replace endpoints are spelled
    /// as this session's generation writes them (`start`/`end` before V3), so a replay under
    /// the same header's rules accepts them. Materializes a lazy session, as
    /// [`Session::events`] does.
    pub fn to_raw_events(&self) -> Result<Vec<RawEvent>, ResumeError> {
        Ok(self
            .events()?
            .iter()
            .map(|event| RawEvent::from_event_in(event, self.generation))
            .collect())
    }

    /// The session's folds after its whole log, to persist beside it: what
    /// [`Session::resume`] needs to rebuild this state without replaying the log. `None`
    /// while a batch is open (its events may still be rolled back). O(surface).
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        if !self.batches.is_empty() {
            return None;
        }
        Some(Checkpoint {
            n_events: self.log.len(),
            nodes: self.surface.nodes().to_vec(),
            replace_generation: self.surface.replace_generation(),
            request_header_seq: self.request_header_seq,
            request_context_seq: self.request_context_seq,
            last_inherited_marker: self.last_inherited_marker,
            latest: self.latest.entries(),
            turn: self.turn_state(),
            relations: Some(self.relations.for_checkpoint(self.log.len())),
        })
    }

    /// Rebuilds a stored session from a checkpoint of a prefix of its log and the rows after
    /// it, without reading the prefix (*lazy mode*): the events the checkpoint names are
    /// fetched from `source` (and pass the event-local rules), `tail` is validated exactly as
    /// [`Session::restore`] validates those rows (same rules, same errors, same indexes), and
    /// the end-seed marker is added as a restore adds it. Appends then validate exactly as in
    /// full mode. V3 logs only. [`SeedOptions::repair`] closes a turn left open, as a
    /// restore does.
    ///
    /// The store vouches that `checkpoint` describes this log; the cheap checks that fail
    /// give [`ResumeError::Mismatch`], and a caller should then restore the whole log.
    pub fn resume(
        header: SessionHeader,
        checkpoint: Checkpoint,
        tail: impl IntoIterator<Item = RawEvent>,
        source: Arc<dyn EventSource>,
        options: SeedOptions,
    ) -> Result<Session, ResumeError> {
        if !header.generation().checks_relations() {
            return Err(ResumeError::mismatch(
                None,
                format!(
                    "lazy resume reads V3 and V4 logs only, not {:?}",
                    header.generation()
                ),
            ));
        }
        Session::restore_loaded(header, options, |session| {
            let n_events = checkpoint.n_events;
            session.install_checkpoint(checkpoint, source)?;
            session.seed_from(tail, Path::Restore, n_events)?;
            Ok(())
        })
    }

    /// Makes an empty session the state `checkpoint` describes, pinning the events it names.
    fn install_checkpoint(
        &mut self,
        checkpoint: Checkpoint,
        source: Arc<dyn EventSource>,
    ) -> Result<(), ResumeError> {
        check_covered(&checkpoint)?;
        let n_events = checkpoint.n_events;
        let seqs = checkpoint.pinned_seqs();
        let rows = source.load_many(&seqs)?;
        if rows.len() != seqs.len() {
            return Err(ResumeError::mismatch(
                None,
                format!(
                    "the event source returned {} rows for {} seqs",
                    rows.len(),
                    seqs.len()
                ),
            ));
        }
        let mut pinned = Vec::with_capacity(seqs.len());
        for (seq, raw) in seqs.iter().zip(rows) {
            pinned.push(Arc::new(self.accept_pinned(raw, *seq)?));
        }
        self.log = Log::lazy(n_events, pinned, source);
        self.check_pinned_types(&checkpoint)?;
        if let Some(seq) = checkpoint.request_header_seq {
            let header = self
                .log
                .get(seq)
                .filter(|event| event.event_type == EventType::RequestHeader)
                .and_then(|event| event.data().get("header"))
                .ok_or_else(|| not_the_pinned(seq, "a request/header with a header"))?;
            self.request_header = Some(Arc::new(canonical_header(header, self.generation)));
        }
        if let Some(seq) = checkpoint.request_context_seq {
            let context = self
                .log
                .get(seq)
                .filter(|event| event.event_type == EventType::RequestContext)
                .ok_or_else(|| not_the_pinned(seq, "a request/context"))?;
            self.request_context = Some(Arc::new(context.data().clone()));
        }
        self.request_header_seq = checkpoint.request_header_seq;
        self.request_context_seq = checkpoint.request_context_seq;
        self.surface = SurfaceState::from_parts(checkpoint.nodes, checkpoint.replace_generation);
        self.latest = Latest::from_entries(&checkpoint.latest);
        self.last_inherited_marker = checkpoint.last_inherited_marker;
        self.turn_base = Some(checkpoint.turn);
        self.relations = match checkpoint.relations {
            Some(relations) => relations,
            None if self.surface_only => Relations::new(),
            None => {
                return Err(ResumeError::mismatch(
                    None,
                    "the checkpoint holds no relational state (written before strata enforced upstream's relational rules)",
                ))
            }
        };
        Ok(())
    }

    /// Every surface node the checkpoint names is a surface event, and every latest event
    /// has the type it is filed under: the rows the source returned are the ones it covered.
    fn check_pinned_types(&self, checkpoint: &Checkpoint) -> Result<(), ResumeError> {
        for node in &checkpoint.nodes {
            if self.log.get(*node).and_then(|e| e.surface_op()).is_none() {
                return Err(not_the_pinned(*node, "a surface event"));
            }
        }
        for (event_type, seq) in &checkpoint.latest {
            if self.log.get(*seq).map(|event| &event.event_type) != Some(event_type) {
                return Err(not_the_pinned(*seq, event_type.as_str()));
            }
        }
        Ok(())
    }

    /// Accepts a stored row fetched for `seq` under the event-local rules (its relational
    /// rules ran when the log was written; the checkpoint vouches for its place).
    fn accept_pinned(&self, raw: RawEvent, seq: Seq) -> Result<Event, ResumeError> {
        let context = Context {
            generation: self.generation,
            path: Path::Restore,
            surface: &self.surface,
            lookup: &self.log,
            expected_seq: seq,
            index: seq.get(),
            head: None,
        };
        accept_row_local(&context, raw, None).map_err(|error| {
            ResumeError::mismatch(
                Some(seq.get()),
                format!("the stored event fails the rules: {error}"),
            )
        })
    }

    /// The number of events held below the resident tail (lazy mode; 0 in full mode).
    pub fn n_pinned(&self) -> usize {
        self.log.n_pinned()
    }
}

/// A point to roll a batch back to (see [`Session::begin_batch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMark {
    log_len: u64,
    /// Invariant: the batch's 1-based position in the stack of open batches.
    depth: usize,
}

impl EventLookup for Session {
    fn event(&self, seq: Seq) -> Option<&Event> {
        Session::event(self, seq).map(|event| event.as_ref())
    }
}

/// Whether `event` is a human `user/message` (a title may cite it, R37): a `user/message` whose
/// `source.kind` is `"user"`.
fn is_human_user(event: &Event) -> bool {
    event.event_type == EventType::UserMessage
        && event
            .data()
            .get("source")
            .and_then(|source| source.get("kind"))
            .and_then(Value::as_str)
            == Some("user")
}

/// A lazy session could not read the event at `at` that `event` cites: the append is refused
/// as not decidable, naming the source's failure (nothing is changed).
fn source_failed(
    context: &Context<'_>,
    event: &Event,
    at: u64,
    error: &dyn std::fmt::Display,
) -> AcceptError {
    let error = AcceptError::new(
        Rule::EventSourceFailed,
        format!(
            "{} {} cites seq {at}, which the event source could not read: {error}",
            event.event_type.as_str(),
            event.seq.get()
        ),
    )
    .at_seq(event.seq.get());
    match context.path {
        Path::Seed | Path::Restore => error.at_index(context.index),
        Path::Append | Path::Fold | Path::Adopt => error,
    }
}

fn seed_error(message: &str) -> AcceptError {
    AcceptError::new(Rule::SeedMismatch, message)
}

fn stray_marker_error(seq: u64) -> AcceptError {
    AcceptError::new(
        Rule::SeedMismatch,
        format!(
            "session event \"session/end-seed\" at seq {seq} carries inherited: true; only a fork child's constructor writes the inherited marker"
        ),
    )
    .at_seq(seq)
}

fn is_inherited_marker(event: &Event) -> bool {
    event.event_type == EventType::SessionEndSeed
        && event.data.value_uncached().get("inherited") == Some(&Value::Bool(true))
}

/// Builds an event from a trusted internal candidate (markers, closers) at a
/// known position, without acceptance. Callers accept the result later, as
/// part of a seed, so no unvalidated event ever reaches a log.
pub(crate) fn standalone_event(candidate: Candidate, seq: Seq, time: i64) -> Event {
    let meta = match candidate.meta {
        crate::accept::MetaInput::None => SurfaceMeta::LogOnly,
        crate::accept::MetaInput::Typed { op, sources } => SurfaceMeta::Surface {
            op,
            sources: sources.map(Arc::from),
        },
        crate::accept::MetaInput::Accepted { op, sources } => SurfaceMeta::Surface { op, sources },
        crate::accept::MetaInput::Raw {
            surface_op,
            sources,
        } => SurfaceMeta::Opaque {
            surface_op: surface_op.map(|op| Box::new(op.into_owned())),
            source_event_seqs: sources.map(|sources| Box::new(sources.to_value())),
        },
    };
    Event {
        event_type: candidate.event_type,
        seq,
        time,
        data: crate::data::Data::from_value(candidate.data),
        meta: meta.into(),
        ignorable: candidate.ignorable,
        order: KeyOrder::CANONICAL,
        checked_under: None,
    }
}

/// A checkpoint's seqs lie among the events it covers, and no surface node appears twice: what
/// a checkpoint must satisfy before any of its events is fetched.
fn check_covered(checkpoint: &Checkpoint) -> Result<(), ResumeError> {
    let n_events = checkpoint.n_events;
    let before = |seq: u64, what: &str| {
        if seq < n_events {
            Ok(())
        } else {
            Err(ResumeError::mismatch(
                Some(seq),
                format!("{what} is not among the {n_events} covered events"),
            ))
        }
    };
    for node in &checkpoint.nodes {
        before(node.get(), "a surface node")?;
    }
    let mut distinct = checkpoint.nodes.clone();
    distinct.sort_unstable();
    if let Some(pair) = distinct.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(ResumeError::mismatch(
            Some(pair[0].get()),
            "a surface node appears twice",
        ));
    }
    if checkpoint.replace_generation > n_events {
        return Err(ResumeError::mismatch(
            None,
            format!(
                "replace generation {} exceeds the {n_events} covered events",
                checkpoint.replace_generation
            ),
        ));
    }
    let named = [
        (checkpoint.request_header_seq, "the request header"),
        (checkpoint.request_context_seq, "the request context"),
    ];
    for (seq, what) in named {
        if let Some(seq) = seq {
            before(seq.get(), what)?;
        }
    }
    if let Some(marker) = checkpoint.last_inherited_marker {
        before(marker, "the inherited marker")?;
    }
    for (_, seq) in &checkpoint.latest {
        before(seq.get(), "a latest event")?;
    }
    for call in &checkpoint.turn.pending {
        if let Some(seq) = call.call_seq {
            before(seq.get(), "a pending tool call")?;
        }
    }
    Ok(())
}

/// A pinned event that is not what the checkpoint says it is.
fn not_the_pinned(seq: Seq, expected: &str) -> ResumeError {
    ResumeError::mismatch(
        Some(seq.get()),
        format!("the event there is not {expected}"),
    )
}
