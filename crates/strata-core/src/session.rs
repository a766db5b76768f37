//! The session: a log, its surface, and the folds built on them (session-core §9.1).
//!
//! A [`Session`] owns the accepted events of one log and keeps every fold
//! (surface, derived messages, request header and context) in step with it.
//! All writes go through one path: a candidate is *planned* against the
//! current state (nothing changes if it is rejected), and the plan is
//! *committed*. Stores put their I/O between the two: plan, write durably,
//! commit; or commit a batch and roll it back if the write fails.
//!
//! Invariants:
//! - `events[i].seq() == i` for every event;
//! - the surface, request folds and derived-message cache equal a replay of
//!   `events` from scratch;
//! - a rejected candidate, seed or batch leaves every one of them unchanged.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::accept::{accept_envelope, accept_raw, Context, Envelope, EventLookup, Path, Window};
use crate::candidate::Candidate;
use crate::derive::{DerivedCache, DerivedMessages};
use crate::event::{Event, EventType, KeyOrder, SurfaceMeta};
use crate::generation::Generation;
use crate::header::SessionHeader;
use crate::message::{project, Message};
use crate::payload::EndSeed;
use crate::request::canonical_header;
use crate::rule::{AcceptError, Rule};
use crate::seq::Seq;
use crate::surface::{Replacement, SurfacePlan, SurfaceState, SurfaceUndo};
use crate::wire::RawEvent;

/// An event log with its incrementally maintained folds.
pub struct Session {
    header: SessionHeader,
    generation: Generation,
    /// Invariant: `events[i].seq == i`.
    events: Vec<Arc<Event>>,
    surface: SurfaceState,
    derived: Mutex<DerivedCache>,
    /// Bumped on every replacement and rollback; keys the derived cache.
    epoch: u64,
    request_header: Option<Arc<Value>>,
    request_context: Option<Arc<Value>>,
    /// Invariant: ≤ `events.len()`; the seq of the last inherited end-seed marker.
    inherited_count: u64,
    /// The constructor seed's length: events before it came from history.
    first_live_seq: u64,
    /// Invariant: the seq of the last `session/end-seed {inherited: true}` in `events`.
    last_inherited_marker: Option<u64>,
    /// Open batches, innermost last (batches nest: `append_batch` inside a
    /// store's `begin_batch` rolls back to its own mark only).
    batches: Vec<BatchFrame>,
    /// Surface undo records of every commit since the outermost open batch
    /// began. Invariant: empty when `batches` is.
    undo: Vec<SurfaceUndo>,
}

/// What rolling one open batch back needs.
struct BatchFrame {
    log_len: usize,
    /// `undo.len()` when the batch began.
    undo_len: usize,
    request_header: Option<Arc<Value>>,
    request_context: Option<Arc<Value>>,
    last_inherited_marker: Option<u64>,
}

/// A validated candidate, ready to commit at exactly one log position.
#[derive(Debug)]
pub struct AppendPlan {
    event: Event,
    surface: SurfacePlan,
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
}

/// The result of an offline fold (`fold_surface`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fold {
    /// The final surface nodes.
    pub nodes: Vec<Seq>,
    /// The final replacement count.
    pub replace_generation: u64,
    /// Every replacement in log order, with the nodes it shadowed.
    pub replacements: Vec<Replacement>,
}

impl Session {
    /// A fresh session with no events.
    pub fn create(header: SessionHeader) -> Result<Session, AcceptError> {
        if header.is_seeded() {
            return Err(seed_error(
                "seeded session requires an explicit constructor seed",
            ));
        }
        Ok(Session::empty(header))
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
        session.seed(seed, Path::Seed)?;
        let seed_len = session.events.len() as u64;
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
            let has_marker = session
                .events
                .get(count as usize)
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
                    .events
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
    /// already ends with a marker; events past the input are the caller's to persist.
    pub fn restore(
        header: SessionHeader,
        events: impl IntoIterator<Item = RawEvent>,
        options: SeedOptions,
    ) -> Result<Session, AcceptError> {
        Session::restore_with(header, events, options, None)
    }

    /// [`Session::restore`] for a writer resuming after a crash (persistence §4.2): a turn
    /// the stored log leaves open is closed with `cause` closers (§8) *before* the end-seed
    /// marker, so reopening a repaired log adds nothing. Events past the input (closers and
    /// marker) are the caller's to persist.
    pub fn restore_repaired(
        header: SessionHeader,
        events: impl IntoIterator<Item = RawEvent>,
        cause: crate::repair::CloseCause,
        options: SeedOptions,
    ) -> Result<Session, AcceptError> {
        Session::restore_with(header, events, options, Some(cause))
    }

    /// [`Session::restore`] from events that were accepted before (a live
    /// session's log, a generated log): every rule runs again under this
    /// header's generation, but the events are shared, not decoded or copied.
    pub fn restore_events(
        header: SessionHeader,
        events: impl IntoIterator<Item = Arc<Event>>,
        options: SeedOptions,
    ) -> Result<Session, AcceptError> {
        Session::restore_loaded(header, options, None, |session| {
            session.seed_accepted(events)
        })
    }

    fn restore_with(
        header: SessionHeader,
        events: impl IntoIterator<Item = RawEvent>,
        options: SeedOptions,
        repair: Option<crate::repair::CloseCause>,
    ) -> Result<Session, AcceptError> {
        Session::restore_loaded(header, options, repair, |session| {
            session.seed(events, Path::Restore)
        })
    }

    fn restore_loaded(
        header: SessionHeader,
        options: SeedOptions,
        repair: Option<crate::repair::CloseCause>,
        load: impl FnOnce(&mut Session) -> Result<(), AcceptError>,
    ) -> Result<Session, AcceptError> {
        let mut session = Session::empty(header);
        load(&mut session)?;
        let log_len = session.events.len() as u64;
        session.first_live_seq = log_len;
        let count = if session.generation >= Generation::V2 {
            let marker = session.last_inherited_marker;
            match (session.header.is_seeded(), marker) {
                (true, None) => {
                    return Err(seed_error(
                        "seeded session requires an inherited event count",
                    ))
                }
                (false, Some(_)) => {
                    return Err(seed_error(
                        "unseeded session inherited event count must be 0",
                    ))
                }
                (_, marker) => marker.unwrap_or(0),
            }
        } else {
            // A v0/v1 `seedLength` is only type-checked, never compared with the log
            // (docs/v0-rules.md, "seedLength"); the count cannot exceed the log.
            session.header.seed_length().unwrap_or(0).min(log_len)
        };
        if count > log_len && session.generation.checks_inherited_count() {
            return Err(seed_error(
                "session inherited event count exceeds its event log",
            ));
        }
        session.inherited_count = count;
        if let Some(cause) = repair {
            let closers = crate::repair::open_turn_closers(&session.events, cause);
            if !closers.is_empty() {
                session.append_batch(closers.candidates, closers.time)?;
            }
            // The closers are part of the constructor seed (persistence §1.1):
            // the first live seq follows them.
            session.first_live_seq = session.events.len() as u64;
        }
        session.append_plain_marker_if_needed(options.marker_time)?;
        Ok(session)
    }

    fn empty(header: SessionHeader) -> Session {
        Session {
            generation: header.generation(),
            header,
            events: Vec::new(),
            surface: SurfaceState::new(),
            derived: Mutex::new(DerivedCache::new(0)),
            epoch: 0,
            request_header: None,
            request_context: None,
            inherited_count: 0,
            first_live_seq: 0,
            last_inherited_marker: None,
            batches: Vec::new(),
            undo: Vec::new(),
        }
    }

    fn seed(
        &mut self,
        rows: impl IntoIterator<Item = RawEvent>,
        path: Path,
    ) -> Result<(), AcceptError> {
        for (index, raw) in rows.into_iter().enumerate() {
            let (event, plan) = {
                let lookup = Window {
                    base: Seq::ZERO,
                    events: &self.events,
                };
                let context = Context {
                    generation: self.generation,
                    path,
                    surface: &self.surface,
                    lookup: &lookup,
                    expected_seq: Seq::from_index(self.events.len()),
                    index: index as u64,
                };
                accept_raw(&context, raw)?
            };
            self.commit_accepted(event, &plan);
        }
        Ok(())
    }

    fn seed_accepted(
        &mut self,
        events: impl IntoIterator<Item = Arc<Event>>,
    ) -> Result<(), AcceptError> {
        let events = events.into_iter();
        self.events.reserve(events.size_hint().0);
        for (index, event) in events.enumerate() {
            let plan = {
                let lookup = Window {
                    base: Seq::ZERO,
                    events: &self.events,
                };
                let context = Context {
                    generation: self.generation,
                    path: Path::Restore,
                    surface: &self.surface,
                    lookup: &lookup,
                    expected_seq: Seq::from_index(self.events.len()),
                    index: index as u64,
                };
                crate::accept::accept_existing(&context, &event)?
            };
            self.commit_shared(event, &plan);
        }
        Ok(())
    }

    fn append_plain_marker_if_needed(&mut self, time: i64) -> Result<(), AcceptError> {
        let ends_with_marker = self
            .events
            .last()
            .is_some_and(|event| event.event_type == EventType::SessionEndSeed);
        if ends_with_marker {
            return Ok(());
        }
        self.push_marker(false, time)
    }

    /// Appends the constructor's end-seed marker (the only writer of the
    /// tagged form, so it bypasses `plan`'s marker check).
    fn push_marker(&mut self, inherited: bool, time: i64) -> Result<(), AcceptError> {
        let plan = self.plan_unchecked(Candidate::log_only(EndSeed { inherited }), time)?;
        self.commit_accepted(plan.event, &plan.surface);
        Ok(())
    }

    /// Validates `candidate` as the next event at `time` without changing anything.
    ///
    /// A `session/end-seed {inherited: true}` is refused: the tagged marker
    /// fixes the inherited count a reload derives (§9.1 step 5), so only a
    /// fork child's constructor writes it.
    pub fn plan(&self, candidate: Candidate, time: i64) -> Result<AppendPlan, AcceptError> {
        let seq = self.events.len() as u64;
        if self.generation >= Generation::V2
            && candidate.event_type == EventType::SessionEndSeed
            && candidate.data.get("inherited") == Some(&Value::Bool(true))
        {
            return Err(stray_marker_error(seq));
        }
        self.plan_unchecked(candidate, time)
    }

    fn plan_unchecked(&self, candidate: Candidate, time: i64) -> Result<AppendPlan, AcceptError> {
        let seq = Seq::from_index(self.events.len());
        let envelope = Envelope {
            event_type: candidate.event_type,
            seq,
            time,
            data: crate::data::Payload::Value(candidate.data),
            meta: candidate.meta,
            ignorable: candidate.ignorable,
            order: KeyOrder::CANONICAL,
        };
        let lookup = Window {
            base: Seq::ZERO,
            events: &self.events,
        };
        let context = Context {
            generation: self.generation,
            path: Path::Append,
            surface: &self.surface,
            lookup: &lookup,
            expected_seq: seq,
            index: seq.get(),
        };
        let (event, surface) = accept_envelope(&context, envelope)?;
        Ok(AppendPlan { event, surface })
    }

    /// Commits a plan made against the current state.
    pub fn commit(&mut self, plan: AppendPlan) -> Result<Arc<Event>, StalePlanError> {
        let next = self.events.len() as u64;
        if plan.event.seq.get() != next {
            return Err(StalePlanError {
                planned: plan.event.seq.get(),
                next,
            });
        }
        Ok(self.commit_accepted(plan.event, &plan.surface))
    }

    /// Plans and commits one candidate.
    pub fn append(&mut self, candidate: Candidate, time: i64) -> Result<Arc<Event>, AcceptError> {
        let plan = self.plan(candidate, time)?;
        // A plan made against the current state is never stale.
        Ok(self.commit_accepted(plan.event, &plan.surface))
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
        let start = self.events.len();
        let mark = self.begin_batch();
        for (offset, raw) in rows.into_iter().enumerate() {
            let (event, plan) = {
                let lookup = Window {
                    base: Seq::ZERO,
                    events: &self.events,
                };
                let context = Context {
                    generation: self.generation,
                    path: Path::Restore,
                    surface: &self.surface,
                    lookup: &lookup,
                    expected_seq: Seq::from_index(self.events.len()),
                    index: (start + offset) as u64,
                };
                match accept_raw(&context, raw) {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        self.rollback(mark);
                        return Err(error);
                    }
                }
            };
            // Like `plan`: a tagged marker past the constructor would change
            // the inherited count a full restore derives.
            if self.generation >= Generation::V2 && is_inherited_marker(&event) {
                self.rollback(mark);
                return Err(stray_marker_error(event.seq.get()).at_index((start + offset) as u64));
            }
            self.commit_accepted(event, &plan);
        }
        self.end_batch(mark);
        Ok(())
    }

    /// Starts recording undo information; commits after this can be rolled back.
    ///
    /// Batches nest: a batch begun while another is open ends or rolls back
    /// on its own, and the outer batch can still roll back everything since
    /// its own mark. End or roll back marks innermost first; ending or rolling
    /// back an outer mark also closes the batches opened inside it.
    pub fn begin_batch(&mut self) -> BatchMark {
        self.batches.push(BatchFrame {
            log_len: self.events.len(),
            undo_len: self.undo.len(),
            request_header: self.request_header.clone(),
            request_context: self.request_context.clone(),
            last_inherited_marker: self.last_inherited_marker,
        });
        BatchMark {
            log_len: self.events.len(),
            depth: self.batches.len(),
        }
    }

    /// Keeps everything committed since `begin_batch` (an enclosing batch may
    /// still roll it back).
    pub fn end_batch(&mut self, mark: BatchMark) {
        if (1..=self.batches.len()).contains(&mark.depth) {
            self.batches.truncate(mark.depth - 1);
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
        let Some(frame) = inner.into_iter().next() else {
            return;
        };
        debug_assert_eq!(frame.log_len, mark.log_len);
        while self.undo.len() > frame.undo_len {
            if let Some(undo) = self.undo.pop() {
                self.surface.undo(undo);
            }
        }
        self.events.truncate(frame.log_len);
        self.request_header = frame.request_header;
        self.request_context = frame.request_context;
        self.last_inherited_marker = frame.last_inherited_marker;
        if self.batches.is_empty() {
            self.undo.clear();
        }
        self.epoch += 1;
    }

    fn commit_accepted(&mut self, event: Event, plan: &SurfacePlan) -> Arc<Event> {
        self.commit_shared(Arc::new(event), plan)
    }

    fn commit_shared(&mut self, event: Arc<Event>, plan: &SurfacePlan) -> Arc<Event> {
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
        match event.event_type {
            EventType::RequestHeader => {
                if let Some(header) = event.data().get("header") {
                    self.request_header = Some(Arc::new(canonical_header(header, self.generation)));
                }
            }
            EventType::RequestContext => {
                self.request_context = Some(Arc::new(event.data().clone()));
            }
            _ => {}
        }
        self.events.push(event.clone());
        event
    }

    /// The header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
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
    pub fn events(&self) -> &[Arc<Event>] {
        &self.events
    }

    /// The event at `seq`.
    pub fn event(&self, seq: Seq) -> Option<&Arc<Event>> {
        seq.index_from(Seq::ZERO)
            .and_then(|index| self.events.get(index))
    }

    /// The number of events (also the next seq).
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether the log has no events.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The seq the next append gets.
    pub fn next_seq(&self) -> Seq {
        Seq::from_index(self.events.len())
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

    /// Events from the inherited count on: this session's own work.
    pub fn own_events(&self) -> &[Arc<Event>] {
        let start = usize::try_from(self.inherited_count).unwrap_or(usize::MAX);
        self.events.get(start..).unwrap_or(&[])
    }

    /// Whether `seq` is one of this session's own events.
    pub fn is_own_seq(&self, seq: Seq) -> bool {
        self.inherited_count <= seq.get() && seq.get() < self.events.len() as u64
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
        let closers = crate::repair::open_turn_closers(&self.events, cause);
        self.append_batch(closers.candidates, closers.time)
    }

    /// A raw copy of every event, for seeding a replay or fork.
    pub fn to_raw_events(&self) -> Vec<RawEvent> {
        self.events
            .iter()
            .map(|event| RawEvent::from_event(event))
            .collect()
    }
}

/// A point to roll a batch back to (see [`Session::begin_batch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMark {
    log_len: usize,
    /// Invariant: the batch's 1-based position in the stack of open batches.
    depth: usize,
}

impl EventLookup for Session {
    fn event(&self, seq: Seq) -> Option<&Event> {
        Session::event(self, seq).map(|event| event.as_ref())
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
        && event.data().get("inherited") == Some(&Value::Bool(true))
}

/// Replays `events` (base seq 0) through the surface rules only and reports
/// the final nodes and every replacement (session-core §6.5).
pub fn fold_surface(events: impl IntoIterator<Item = RawEvent>) -> Result<Fold, AcceptError> {
    fold_window(Generation::NATIVE, Seq::ZERO, events)
}

/// [`fold_surface`] over a window whose first event has seq `base`, under
/// `generation`'s rules.
pub fn fold_window(
    generation: Generation,
    base: Seq,
    events: impl IntoIterator<Item = RawEvent>,
) -> Result<Fold, AcceptError> {
    let mut surface = SurfaceState::new();
    let mut accepted: Vec<Arc<Event>> = Vec::new();
    let mut replacements = Vec::new();
    for (offset, raw) in events.into_iter().enumerate() {
        let expected_seq = Seq::new(base.get() + offset as u64)
            .map_err(|error| AcceptError::new(Rule::SeqNotContiguous, error.to_string()))?;
        let (event, plan) = {
            let lookup = Window {
                base,
                events: &accepted,
            };
            let context = Context {
                generation,
                path: Path::Fold,
                surface: &surface,
                lookup: &lookup,
                expected_seq,
                index: offset as u64,
            };
            match crate::accept::decode_envelope(raw, generation) {
                Some(envelope) => accept_envelope(&context, envelope)?,
                None => {
                    return Err(AcceptError::new(
                        Rule::InvalidEnvelope,
                        format!("session event at index {offset} has an invalid event envelope"),
                    )
                    .at_index(offset as u64))
                }
            }
        };
        let undo = surface.apply(&plan);
        if let (
            SurfaceUndo::Unreplace { shadowed, .. },
            SurfaceMeta::Surface {
                op: crate::event::SurfaceOp::Replace(range),
                ..
            },
        ) = (undo, &event.meta)
        {
            replacements.push(Replacement {
                seq: event.seq,
                start: range.start,
                end: range.end,
                shadowed,
            });
        }
        accepted.push(Arc::new(event));
    }
    Ok(Fold {
        nodes: surface.nodes().to_vec(),
        replace_generation: surface.replace_generation(),
        replacements,
    })
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
            surface_op: surface_op.map(Box::new),
            source_event_seqs: sources.map(Box::new),
        },
    };
    Event {
        event_type: candidate.event_type,
        seq,
        time,
        data: crate::data::Data::from_value(candidate.data),
        meta,
        ignorable: candidate.ignorable,
        order: KeyOrder::CANONICAL,
        checked_under: None,
    }
}
