//! Acceptance: the ordered rule list every candidate event passes (session-core §5).
//!
//! One code path serves append, seed, restore and offline folds: a candidate
//! is checked against the current surface and log, in the order of §5.2
//! (first failure wins), and the result is either an [`AcceptError`] or an
//! accepted [`Event`] together with the [`SurfacePlan`] that commits it.
//! Nothing here mutates; callers apply the plan.
//!
//! Which rules run depends on the path (§5.4): seeds and restores check the
//! envelope, appends and seeds check JSON losslessness, folds check only
//! surface rules. Unlike upstream, V3 appends also check message shapes
//! (§4.5): dsh's typed TypeScript API makes an ill-shaped append impossible,
//! while a Rust payload carries its message as JSON, and without the check an
//! append could commit an event that `Session::restore` later refuses. Appends
//! to older generations keep upstream's behaviour (docs/v0-rules.md).
//!
//! This file is the pipeline (envelope, the order of the rules, the relational step, the
//! stored-row paths); the rules live by part: `surface_meta` (rules 2–5, a candidate's
//! `surfaceOp` and sources), `fold` (rules 6–11, the surface transition), `payload` (the data
//! and message-shape rules) and `tool_content` (rule 9's equality).

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

pub(crate) use crate::candidate::{MetaInput, RawSources};
use crate::data::Payload;
use crate::event::{Event, EventType, KeyOrder, SurfaceMeta, SurfaceOp};
use crate::generation::Generation;
use crate::json::{is_lossless, js_non_negative_safe_integer};
use crate::read_depth::view_depth;
use crate::relations::{has_facts, Facts};
use crate::rule::{AcceptError, Rule};
use crate::scan::PreparedView;
use crate::seq::{Seq, MAX_SAFE_INTEGER};
use crate::surface::{SurfacePlan, SurfaceState};
use crate::view::{Node, View};
use crate::wire::RawEvent;

mod fold;
mod payload;
mod surface_meta;
mod tool_content;
mod v4;

pub(crate) use fold::locate_span_in;
use fold::{locate_span, plan_relational, released_wording};
use payload::{check_data, check_data_by_name, check_message_shape, check_payload, Who};
use surface_meta::{check_marker, check_row_sources, check_sources, check_surface_local, Marker};

/// Which entry point a candidate arrived through; decides which rules run and
/// how messages name the candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// `Session::append`: built internally, JSON-snapshotted, shape-checked (V3).
    Append,
    /// A constructor seed: envelope, JSON snapshot, data, shape, surface.
    Seed,
    /// A stored log: like a seed without the JSON snapshot.
    Restore,
    /// `fold_surface`: surface rules only.
    Fold,
    /// A stored row's message shape checked on its own, before anything else about it
    /// (upstream's `adoptSessionEvent`; the v0 restore path's step R3).
    Adopt,
}

/// Looks up accepted events by seq; the surface rules need the events behind
/// shadowed nodes (tool-result rewrites, the system head).
pub trait EventLookup {
    /// The accepted event at `seq`, if this log window holds it.
    fn event(&self, seq: Seq) -> Option<&Event>;
}

/// A contiguous run of accepted events whose first event has seq `base`.
pub struct Window<'a> {
    /// Absolute seq of `events[0]`.
    pub base: Seq,
    /// The events.
    pub events: &'a [Arc<Event>],
}

impl EventLookup for Window<'_> {
    fn event(&self, seq: Seq) -> Option<&Event> {
        seq.index_from(self.base)
            .and_then(|index| self.events.get(index))
            .map(|event| event.as_ref())
    }
}

/// The state a candidate is judged against.
pub(crate) struct Context<'a> {
    pub generation: Generation,
    pub path: Path,
    pub surface: &'a SurfaceState,
    pub lookup: &'a dyn EventLookup,
    /// The seq the candidate must have (the log's next seq).
    pub expected_seq: Seq,
    /// The candidate's index in a seed or restored log.
    pub index: u64,
    /// The system head state before the candidate, when the head rules (S9–S13) apply:
    /// upstream judges them before its surface fold, so a replacement failing both is
    /// refused by its head rule ([`plan_relational`]).
    pub head: Option<&'a crate::relations::Head>,
}

/// An envelope that passed the envelope check.
pub(crate) struct Envelope {
    pub event_type: EventType,
    pub seq: Seq,
    pub time: i64,
    pub data: Payload,
    pub meta: MetaInput,
    pub ignorable: bool,
    pub order: KeyOrder,
}

/// Accepts one stored or seeded row.
///
/// Also gives the payload facts the relational rules read (`relations::Facts`), when they
/// apply and the row's view gave them: the rules then read no payload text again.
pub(crate) fn accept_raw(context: &Context<'_>, raw: RawEvent) -> Result<Accepted, AcceptError> {
    let index = context.index;
    if context.generation.legacy_check_order() {
        // v0 reads the row's `type` before anything else (docs/v0-rules.md, E0): a `null` row
        // throws upstream's `TypeError`, and the retired delta format beats a bad envelope.
        if raw.null_row {
            return Err(AcceptError::new(
                Rule::InternalTypeError,
                "Cannot read properties of null (reading 'type')",
            ));
        }
        if raw.type_tag() == Some("request/header-delta") {
            return Err(AcceptError::new(
                Rule::LegacyHeaderDelta,
                format!(
                    "seed event at index {index} uses unsupported legacy request/header-delta format"
                ),
            )
            .at_index(index));
        }
    }
    let envelope = decode_envelope(raw, context.generation).ok_or_else(|| {
        AcceptError::new(
            Rule::InvalidEnvelope,
            format!("seed event at index {index} has an invalid event envelope"),
        )
        .at_index(index)
    })?;
    if context.path == Path::Seed
        && (!payload_is_lossless(&envelope.data) || !meta_is_lossless(&envelope.meta))
    {
        return Err(AcceptError::new(
            Rule::NonJson,
            format!("seed event at index {index} is not losslessly JSON-serializable"),
        )
        .at_index(index)
        .at_seq(envelope.seq.get()));
    }
    accept_envelope(context, envelope)
}

/// An accepted event, its surface plan and the payload facts its view gave the relational
/// rules (see [`accept_raw`]).
pub(crate) type Accepted = (Event, SurfacePlan, Option<Facts>);

/// Accepts one envelope (typed append, or a decoded row).
pub(crate) fn accept_envelope(
    context: &Context<'_>,
    envelope: Envelope,
) -> Result<Accepted, AcceptError> {
    accept_checked(context, envelope, true, None)
}

/// Accepts a stored row under the event-local rules only (envelope, data, shapes, surface
/// rules 2–4), for an event a verified checkpoint places on the surface (lazy resume): the
/// rules relating it to the log ran when it was first accepted.
///
/// `prepared` is the payload's view when the row's decoder built one (the `scan` module); it
/// is used when it was built to the depth the row's type asks for, else the text is parsed.
pub(crate) fn accept_row_local(
    context: &Context<'_>,
    raw: RawEvent,
    prepared: Option<&PreparedView<'_>>,
) -> Result<Event, AcceptError> {
    let index = context.index;
    let envelope = decode_envelope(raw, context.generation).ok_or_else(|| {
        AcceptError::new(
            Rule::InvalidEnvelope,
            format!("seed event at index {index} has an invalid event envelope"),
        )
        .at_index(index)
    })?;
    accept_checked(context, envelope, false, prepared).map(|(event, _, _)| event)
}

/// The rule list; `relational` runs the rules that relate the event to the current surface.
fn accept_checked(
    context: &Context<'_>,
    envelope: Envelope,
    relational: bool,
    prepared: Option<&PreparedView<'_>>,
) -> Result<Accepted, AcceptError> {
    let seq = envelope.seq;
    // The relational rules run after these (V3, not surface-only: `head` is set) and read a
    // message's facts: read them from the view built here rather than decode the text again.
    let wants_facts = relational && context.head.is_some() && has_facts(&envelope.event_type);
    let mut facts = None;
    let locate = |error: AcceptError| {
        let error = error.at_seq(seq.get());
        match context.path {
            Path::Seed | Path::Restore => error.at_index(context.index),
            Path::Append | Path::Fold | Path::Adopt => error,
        }
    };
    if context.path == Path::Append {
        check_appended_envelope(&envelope).map_err(locate)?;
    }
    // v0 checks contiguity after the payload rules; V2+ first (§5.2 rule 1).
    let legacy_order = context.generation.legacy_check_order();
    if !legacy_order {
        // Appends too: what a V3 restore refuses is never written.
        // V4's codec decodes no metadata of an unknown ignorable row (docs/format-v4.md §3.4).
        let opaque_v4 = context.generation.is_v4()
            && envelope.ignorable
            && !envelope.event_type.is_known_in(context.generation);
        if context.generation.words_rules_as_released() && !opaque_v4 {
            check_row_sources(&envelope.meta, seq).map_err(locate)?;
        }
        check_contiguity(context, seq).map_err(locate)?;
        check_vocabulary(context.generation, &envelope).map_err(locate)?;
    }
    // Appends are shape-checked only in the generation strata writes; older
    // generations keep upstream's append behaviour (pinned by the v0 oracle).
    let shape_checked = match context.path {
        Path::Seed | Path::Restore => true,
        Path::Append => context.generation == Generation::NATIVE,
        Path::Fold | Path::Adopt => false,
    };
    if context.path != Path::Fold {
        facts = check_payload_rules(context, &envelope, prepared, shape_checked, wants_facts)
            .map_err(locate)?;
    }
    if legacy_order {
        check_contiguity(context, seq).map_err(locate)?;
    }
    let wrap = |error: AcceptError| match context.path {
        Path::Seed | Path::Restore => AcceptError {
            message: format!(
                "invalid seed event at index {}: {}",
                context.index, error.message
            ),
            ..error
        },
        Path::Append | Path::Fold | Path::Adopt => error,
    };
    let marker = check_marker(
        context.generation,
        &envelope.event_type,
        seq,
        envelope.ignorable,
        &envelope.meta,
    )
    .map_err(wrap)
    .map_err(locate)?;
    // v0 locates the replaced span (rules 6–8) before it reads the source list.
    if let (true, true, Marker::Surface(SurfaceOp::Replace(range))) =
        (relational, legacy_order, &marker)
    {
        locate_span(context, *range).map_err(wrap).map_err(locate)?;
    }
    let meta = check_sources(
        context.generation,
        &envelope.event_type,
        seq,
        &envelope.meta,
        marker,
    )
    .map_err(|error| released_wording(context, &envelope.event_type, seq, error))
    .map_err(wrap)
    .map_err(locate)?;
    let event = Event {
        event_type: envelope.event_type,
        seq,
        time: envelope.time,
        data: envelope.data.into_data(),
        meta: meta.into(),
        ignorable: envelope.ignorable,
        order: envelope.order,
        checked_under: (context.path != Path::Fold && shape_checked).then_some(context.generation),
    };
    if !relational {
        return Ok((event, SurfacePlan::None, None));
    }
    let plan = plan_relational(context, &event)
        .map_err(wrap)
        .map_err(locate)?;
    Ok((event, plan, facts))
}

/// E16 (V3) and N-ART-3 (V4): a type the generation does not know must be marked `ignorable`
/// (it is then opaque). Older generations' readers apply their own vocabulary.
fn check_vocabulary(generation: Generation, envelope: &Envelope) -> Result<(), AcceptError> {
    let event_type = &envelope.event_type;
    if envelope.ignorable || !generation.checks_relations() || event_type.is_known_in(generation) {
        return Ok(());
    }
    let (seq, tag) = (envelope.seq, event_type.as_str());
    let retired = matches!(tag, "tool/code-dispatch" | "tool/code-dispatch-start");
    let message = match (generation.is_v4(), retired) {
        (true, true) => format!("format v4 rejects retired event type \"{tag}\" at seq {seq}"),
        (true, false) => format!("format v4 contains unknown event type \"{tag}\" at seq {seq}"),
        // Upstream's row admission (E9) names the retired PTC tags; its restore pass (E16)
        // says "format v2" for every other type, as its relational view is a v2 artifact.
        (false, true) => format!("format v3 contains unknown event type \"{tag}\" at seq {seq}"),
        (false, false) => format!("format v2 contains unknown event type \"{tag}\" at seq {seq}"),
    };
    Err(AcceptError::new(Rule::UnknownType, message))
}

/// What an append must satisfy before the rules every path runs, so that every appended event
/// restores: a safe-integer `time` (the caller's clock is a parameter: refuse what §2.1 would
/// refuse on read) and a payload and metadata that survive JSON.
fn check_appended_envelope(envelope: &Envelope) -> Result<(), AcceptError> {
    let seq = envelope.seq;
    let type_tag = envelope.event_type.as_str();
    if envelope.time.unsigned_abs() > MAX_SAFE_INTEGER {
        return Err(AcceptError::new(
            Rule::InvalidEnvelope,
            format!(
                "session event \"{type_tag}\" at seq {seq} has an invalid event envelope: time {} is not a safe integer",
                envelope.time
            ),
        ));
    }
    if !payload_is_lossless(&envelope.data) {
        return Err(AcceptError::new(
            Rule::NonJson,
            format!("session event \"{type_tag}\" carries non-JSON-serializable data"),
        ));
    }
    if !meta_is_lossless(&envelope.meta) {
        return Err(AcceptError::new(
            Rule::NonJson,
            format!("session event \"{type_tag}\" carries non-JSON-serializable surface metadata"),
        ));
    }
    Ok(())
}

/// The data and message-shape rules on the envelope's payload (`accept/payload`), through the
/// view a decoder `prepared` when it fits, else one parsed here; `shape_checked` as the path
/// decides. Returns the payload facts the relational rules read, when `wants_facts` and the
/// payload was read through a view.
fn check_payload_rules(
    context: &Context<'_>,
    envelope: &Envelope,
    prepared: Option<&PreparedView<'_>>,
    shape_checked: bool,
    wants_facts: bool,
) -> Result<Option<Facts>, AcceptError> {
    let seq = envelope.seq;
    let mut facts = None;
    let who = Who {
        event_type: &envelope.event_type,
        seq,
        shown_seq: None,
    };
    if context.generation.is_v4() && v4::reads(&envelope.event_type) {
        // V4's row rules read deeper than a V3 view is built: judge a parsed tree, dropped
        // after the rules ran.
        let parsed;
        let value = match &envelope.data {
            Payload::Value(value) => &**value,
            Payload::Raw(_) | Payload::Text(_) => {
                parsed = envelope.data.to_value();
                &parsed
            }
        };
        // Row admission comes first, then the installed session's shapes (§3.1).
        let (append, sources) = v4_placement(&envelope.meta);
        v4::check_row(&envelope.event_type, seq, value, append, sources.as_deref())?;
        check_payload(context, &who, value, shape_checked)?;
        return Ok(None);
    }
    match &envelope.data {
        Payload::Value(value) => {
            check_payload(context, &who, &**value, shape_checked)?;
        }
        Payload::Raw(_) | Payload::Text(_) => {
            let text = envelope.data.text().unwrap_or("null");
            let depth = view_depth(&envelope.event_type);
            let parsed;
            let view = match prepared {
                Some(prepared) if prepared.depth == depth => Some(&prepared.view),
                _ if depth > 0 => {
                    parsed = View::parse(text, depth);
                    parsed.as_ref()
                }
                _ => None,
            };
            if depth > 0 {
                match view {
                    Some(view) => {
                        check_payload(context, &who, view, shape_checked)?;
                        if wants_facts {
                            facts = Facts::from_view(&envelope.event_type, view);
                        }
                    }
                    None => {
                        let value = envelope.data.to_value();
                        check_payload(context, &who, &value, shape_checked)?;
                    }
                }
            } else {
                check_data_by_name(context, &who)?;
            }
        }
    }
    Ok(facts)
}

/// How an envelope places its event, as V4's fork-result rule reads it (N-ROW-6): whether it
/// appends, and its sources when they are a list of seqs.
fn v4_placement(meta: &MetaInput) -> (bool, Option<Vec<u64>>) {
    let seqs = |sources: &[Seq]| sources.iter().map(|seq| seq.get()).collect();
    match meta {
        MetaInput::None => (false, None),
        MetaInput::Typed { op, sources } => (
            matches!(op, SurfaceOp::Append),
            sources.as_deref().map(seqs),
        ),
        MetaInput::Accepted { op, sources } => (
            matches!(op, SurfaceOp::Append),
            sources.as_deref().map(seqs),
        ),
        MetaInput::Raw {
            surface_op,
            sources,
        } => {
            let append = surface_op
                .as_deref()
                .is_some_and(|op| op.as_str() == Some("append"));
            let sources = sources.as_ref().and_then(|sources| match sources {
                RawSources::Seqs(list) => Some(seqs(list)),
                RawSources::Value(Value::Array(items)) => items
                    .iter()
                    .map(crate::json::non_negative_safe_integer)
                    .collect(),
                RawSources::Value(_) => None,
            });
            (append, sources)
        }
    }
}

/// The head and relational rules (docs/rules.md: S9–S13, R1–R53) on an event the rules above
/// accepted, against `relations` and the surface before the event; V3 and V4 logs only (older
/// generations keep their own rule sets). `facts` are the event's payload facts when a
/// decoding thread read them ahead ([`PrecheckedRow`](crate::ingest::PrecheckedRow)). Errors are
/// located and worded like the other rules'.
pub(crate) fn relate(
    context: &Context<'_>,
    relations: &crate::relations::Relations,
    header: &crate::header::SessionHeader,
    event: &Event,
    facts: Option<&crate::relations::Facts>,
    skip_r39: bool,
    older_humans: &[u64],
) -> Result<crate::relations::Change, AcceptError> {
    if !context.generation.checks_relations() || context.path == Path::Fold {
        return Ok(crate::relations::Change::default());
    }
    relations
        .check(
            event,
            context.surface.nodes(),
            facts,
            header,
            skip_r39,
            older_humans,
        )
        .map_err(|error| locate_related(context, event, error))
}

/// The head rules alone (S9–S13) on an event after `head`, located like [`relate`]'s errors.
pub(crate) fn relate_head(
    context: &Context<'_>,
    head: &crate::relations::Head,
    event: &Event,
) -> Result<crate::relations::Head, AcceptError> {
    crate::relations::head_rules_of(head, event)
        .map_err(|error| locate_related(context, event, error))
}

fn locate_related(context: &Context<'_>, event: &Event, error: AcceptError) -> AcceptError {
    let error = error.at_seq(event.seq.get());
    match context.path {
        Path::Seed | Path::Restore => AcceptError {
            message: format!(
                "invalid seed event at index {}: {}",
                context.index, error.message
            ),
            ..error
        }
        .at_index(context.index),
        Path::Append | Path::Fold | Path::Adopt => error,
    }
}

/// Accepts an event another log already accepted (replay, fork, in-memory
/// restore): the same rules as a stored row, without re-decoding or copying —
/// the caller commits the very same `Arc<Event>`.
pub(crate) fn accept_existing(
    context: &Context<'_>,
    event: &Event,
) -> Result<SurfacePlan, AcceptError> {
    let locate = |error: AcceptError| {
        let error = error.at_seq(event.seq.get());
        match context.path {
            Path::Seed | Path::Restore => error.at_index(context.index),
            Path::Append | Path::Fold | Path::Adopt => error,
        }
    };
    check_contiguity(context, event.seq).map_err(locate)?;
    // Every event-local rule (data, shape, surface rules 2–4) reads the event alone: one that
    // passed under this generation when it was accepted needs only the rules relating it to
    // this log.
    if event.checked_under != Some(context.generation) {
        if context.path != Path::Fold {
            check_existing_payload(context, event).map_err(locate)?;
        }
        let checked = check_existing_meta(context, event)
            .map_err(|error| locate_related(context, event, error))?;
        if &checked != event.meta() {
            // Accepted under another generation's rules into a different shape:
            // treat as a rejection rather than silently reinterpreting.
            return Err(locate(AcceptError::new(
                Rule::InvalidEnvelope,
                format!(
                    "session event \"{}\" at seq {} was accepted under another generation's rules",
                    event.event_type, event.seq
                ),
            )));
        }
    }
    plan_relational(context, event).map_err(|error| locate_related(context, event, error))
}

/// The payload rules on an accepted event: data always, message shapes on the seed and restore
/// paths — read through a view of its text unless its tree is already parsed.
fn check_existing_payload(context: &Context<'_>, event: &Event) -> Result<(), AcceptError> {
    let who = Who {
        event_type: &event.event_type,
        seq: event.seq,
        shown_seq: None,
    };
    if context.generation.is_v4() && v4::reads(&event.event_type) {
        let value = event.data_uncached();
        let sources: Option<Vec<u64>> = event
            .sources()
            .map(|s| s.iter().map(|seq| seq.get()).collect());
        let append = matches!(event.surface_op(), Some(SurfaceOp::Append));
        v4::check_row(
            &event.event_type,
            event.seq,
            &value,
            append,
            sources.as_deref(),
        )?;
        return check_payload_node(context, &who, &*value);
    }
    let depth = view_depth(&event.event_type);
    if depth == 0 {
        return check_data_by_name(context, &who);
    }
    if event.is_data_parsed() {
        return check_payload_node(context, &who, event.data());
    }
    match View::parse(event.data_json(), depth) {
        Some(view) => check_payload_node(context, &who, &view),
        None => check_payload_node(context, &who, event.data()),
    }
}

fn check_payload_node<'n, N: Node<'n>>(
    context: &Context<'_>,
    who: &Who<'_>,
    value: N,
) -> Result<(), AcceptError> {
    check_data(context, who, value)?;
    if matches!(context.path, Path::Seed | Path::Restore) {
        check_message_shape(context, who, value)?;
    }
    Ok(())
}

/// The surface metadata an accepted event's envelope yields under this context's generation
/// (surface rules 2–4), to compare with what it was accepted as.
fn check_existing_meta(context: &Context<'_>, event: &Event) -> Result<SurfaceMeta, AcceptError> {
    let meta = match event.meta() {
        SurfaceMeta::LogOnly => MetaInput::None,
        SurfaceMeta::Surface { op, sources } => MetaInput::Accepted {
            op: *op,
            sources: sources.clone(),
        },
        SurfaceMeta::Opaque {
            surface_op,
            source_event_seqs,
        } => MetaInput::Raw {
            surface_op: surface_op.as_deref().cloned().map(Cow::Owned),
            sources: source_event_seqs.as_deref().cloned().map(RawSources::Value),
        },
    };
    check_surface_local(
        context.generation,
        &event.event_type,
        event.seq,
        event.ignorable,
        &meta,
    )
}

/// The message-shape rules (session-core §4.5) on one stored row, by themselves: what
/// upstream's persistence coordinator runs over a whole v0 log before any envelope or surface
/// rule (`adoptSessionEvent`, docs/v0-rules.md step R3). Messages name the seq the row wrote
/// (`session event at seq 5 lacks an identified message`); rows of non-surface types pass.
pub fn check_stored_message(generation: Generation, raw: &RawEvent) -> Result<(), AcceptError> {
    let Some(tag) = raw.type_tag() else {
        return Ok(());
    };
    let event_type = EventType::parse(tag);
    if !event_type.is_surface_in(generation) {
        return Ok(());
    }
    let seq_value = raw.seq_value();
    let shown_seq = seq_value
        .as_ref()
        .map_or_else(|| "undefined".to_owned(), crate::json::js_display);
    let surface = SurfaceState::new();
    let lookup = Window {
        base: Seq::ZERO,
        events: &[],
    };
    let context = Context {
        generation,
        path: Path::Adopt,
        surface: &surface,
        lookup: &lookup,
        expected_seq: Seq::ZERO,
        index: 0,
        head: None,
    };
    let who = Who {
        event_type: &event_type,
        seq: Seq::ZERO,
        shown_seq: Some(shown_seq),
    };
    let data = raw.data();
    let value = data.as_deref().unwrap_or(&Value::Null);
    check_message_shape(&context, &who, value).map_err(|error| {
        match seq_value.as_ref().and_then(js_non_negative_safe_integer) {
            Some(seq) => error.at_seq(seq),
            None => error,
        }
    })
}

/// The envelope check of session-core §2.1; `None` means "invalid event envelope".
pub(crate) fn decode_envelope(mut raw: RawEvent, generation: Generation) -> Option<Envelope> {
    if raw.malformed {
        return None;
    }
    let event_type = match raw.event_type.take()? {
        crate::wire::TypeField::Tag(event_type) => event_type,
        crate::wire::TypeField::Other(_) => return None,
    };
    let seq = Seq::new(raw.seq_for(generation)?).ok()?;
    let time = raw.time_for(generation)?;
    let ignorable = match raw.ignorable.as_deref() {
        None => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return None,
    };
    let surface_op = raw.take_surface_op();
    let data = raw.data?;
    let sources = match (raw.source_event_seqs, raw.plain_sources) {
        (Some(value), _) => Some(RawSources::Value(*value)),
        (None, Some(seqs)) => Some(RawSources::Seqs(seqs)),
        (None, None) => None,
    };
    let meta = if surface_op.is_none() && sources.is_none() {
        MetaInput::None
    } else {
        MetaInput::Raw {
            surface_op,
            sources,
        }
    };
    Some(Envelope {
        event_type,
        seq,
        time,
        data,
        meta,
        ignorable,
        order: raw.order.unwrap_or(KeyOrder::CANONICAL),
    })
}

fn payload_is_lossless(payload: &Payload) -> bool {
    match payload {
        Payload::Value(value) => is_lossless(value),
        Payload::Raw(raw) => crate::json::text_is_lossless(raw.get()),
        Payload::Text(text) => crate::json::text_is_lossless(text.as_str()),
    }
}

fn meta_is_lossless(meta: &MetaInput) -> bool {
    match meta {
        MetaInput::None | MetaInput::Typed { .. } | MetaInput::Accepted { .. } => true,
        MetaInput::Raw {
            surface_op,
            sources,
        } => {
            surface_op.as_deref().is_none_or(is_lossless)
                && sources.as_ref().is_none_or(|sources| match sources {
                    RawSources::Value(value) => is_lossless(value),
                    // Plain integers: `JSON.stringify` writes them back as they are.
                    RawSources::Seqs(_) => true,
                })
        }
    }
}

fn check_contiguity(context: &Context<'_>, seq: Seq) -> Result<(), AcceptError> {
    if seq == context.expected_seq {
        return Ok(());
    }
    let message = match context.path {
        // E8, as upstream's released row decoder words it.
        Path::Seed | Path::Restore if context.generation.words_rules_as_released() => format!(
            "released v2 row {} has seq gap (expected {}, got {seq})",
            context.index, context.expected_seq
        ),
        Path::Seed | Path::Restore => format!(
            "seed event at index {} has seq {} (expected {}); seed must be contiguous from 0",
            context.index, seq, context.expected_seq
        ),
        Path::Append | Path::Fold | Path::Adopt => format!(
            "session event seq {} is not contiguous; expected {}",
            seq, context.expected_seq
        ),
    };
    Err(AcceptError::new(Rule::SeqNotContiguous, message))
}
