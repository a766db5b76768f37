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

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::data::Payload;
use crate::event::{Event, EventType, KeyOrder, ReplaceRange, SurfaceMeta, SurfaceOp};
use crate::generation::{Generation, ReplaceSpelling};
use crate::json::{
    is_lossless, js_non_negative_safe_integer, json_equal, non_negative_safe_integer,
};
use crate::relations::{has_facts, Facts};
use crate::rule::{AcceptError, Rule};
use crate::scan::PreparedView;
use crate::seq::{Seq, MAX_SAFE_INTEGER};
use crate::surface::{find, SurfacePlan, SurfaceState};
use crate::view::{Kind, Node, View};
use crate::wire::RawEvent;

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

/// A candidate's surface metadata before validation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum MetaInput {
    /// Neither field.
    None,
    /// Typed by the caller (typed append): shapes already hold.
    Typed {
        op: SurfaceOp,
        sources: Option<Vec<Seq>>,
    },
    /// Metadata of an event accepted before (replay of accepted events):
    /// shapes hold; the source list is shared, not copied.
    Accepted {
        op: SurfaceOp,
        sources: Option<Arc<[Seq]>>,
    },
    /// Raw JSON (wire rows, dynamic appends): every shape rule applies.
    Raw {
        /// Borrowed for the plain `"append"` of a stored row (no allocation per row).
        surface_op: Option<Cow<'static, Value>>,
        sources: Option<RawSources>,
    },
}

/// A `sourceEventSeqs` not yet validated.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RawSources {
    /// Any JSON: every shape rule applies.
    Value(Value),
    /// A compact list of plain seqs as a store's decoder read it: an array whose entries are
    /// all seqs under every generation, so the shape rules 4b–4d hold; the list is shared
    /// with the accepted event as it is.
    Seqs(Arc<[Seq]>),
}

impl RawSources {
    /// The list as the JSON it was written as (opaque events keep it verbatim).
    pub(crate) fn to_value(&self) -> Value {
        match self {
            RawSources::Value(value) => value.clone(),
            RawSources::Seqs(seqs) => crate::wire::seqs_value(seqs),
        }
    }
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
        let type_tag = envelope.event_type.as_str();
        // The caller's clock is a parameter: refuse what §2.1 would refuse on
        // read, so every appended event restores.
        if envelope.time.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(locate(AcceptError::new(
                Rule::InvalidEnvelope,
                format!(
                    "session event \"{type_tag}\" at seq {seq} has an invalid event envelope: time {} is not a safe integer",
                    envelope.time
                ),
            )));
        }
        if !payload_is_lossless(&envelope.data) {
            return Err(locate(AcceptError::new(
                Rule::NonJson,
                format!("session event \"{type_tag}\" carries non-JSON-serializable data"),
            )));
        }
        if !meta_is_lossless(&envelope.meta) {
            return Err(locate(AcceptError::new(
                Rule::NonJson,
                format!(
                    "session event \"{type_tag}\" carries non-JSON-serializable surface metadata"
                ),
            )));
        }
    }
    // v0 checks contiguity after the payload rules; V2+ first (§5.2 rule 1).
    let legacy_order = context.generation.legacy_check_order();
    if !legacy_order {
        // Appends too: what a V3 restore refuses is never written.
        if context.generation.words_rules_as_released() {
            check_row_sources(&envelope.meta, seq).map_err(locate)?;
        }
        check_contiguity(context, seq).map_err(locate)?;
    }
    // Appends are shape-checked only in the generation strata writes; older
    // generations keep upstream's append behaviour (pinned by the v0 oracle).
    let shape_checked = match context.path {
        Path::Seed | Path::Restore => true,
        Path::Append => context.generation == Generation::NATIVE,
        Path::Fold | Path::Adopt => false,
    };
    if context.path != Path::Fold {
        let who = Who {
            event_type: &envelope.event_type,
            seq,
            shown_seq: None,
        };
        match &envelope.data {
            Payload::Value(value) => {
                check_payload(context, &who, &**value, shape_checked).map_err(locate)?;
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
                            check_payload(context, &who, view, shape_checked).map_err(locate)?;
                            if wants_facts {
                                facts = Facts::from_view(&envelope.event_type, view);
                            }
                        }
                        None => {
                            let value = envelope.data.to_value();
                            check_payload(context, &who, &value, shape_checked).map_err(locate)?;
                        }
                    }
                } else {
                    check_data_by_name(context, &who).map_err(locate)?;
                }
            }
        }
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

/// The head and relational rules (docs/rules.md: S9–S13, R1–R53) on an event the rules above
/// accepted, against `relations` and the surface before the event; V3 logs only (older
/// generations keep their own rule sets). `facts` are the event's payload facts when a
/// decoding thread read them ahead ([`PrecheckedRow`](crate::PrecheckedRow)). Errors are
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
    if context.generation != Generation::V3 || context.path == Path::Fold {
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
    let seq = event.seq;
    let locate = |error: AcceptError| {
        let error = error.at_seq(seq.get());
        match context.path {
            Path::Seed | Path::Restore => error.at_index(context.index),
            Path::Append | Path::Fold | Path::Adopt => error,
        }
    };
    check_contiguity(context, seq).map_err(locate)?;
    let already_checked = event.checked_under == Some(context.generation);
    if context.path != Path::Fold && !already_checked {
        let who = Who {
            event_type: &event.event_type,
            seq,
            shown_seq: None,
        };
        let shape_checked = matches!(context.path, Path::Seed | Path::Restore);
        let depth = view_depth(&event.event_type);
        if event.is_data_parsed() || depth == 0 {
            let value = if depth == 0 {
                &Value::Null
            } else {
                event.data()
            };
            if depth == 0 {
                check_data_by_name(context, &who).map_err(locate)?;
            } else {
                check_data(context, &who, value).map_err(locate)?;
                if shape_checked {
                    check_message_shape(context, &who, value).map_err(locate)?;
                }
            }
        } else {
            let value;
            let view = View::parse(event.data_json(), depth);
            match &view {
                Some(view) => {
                    check_data(context, &who, view).map_err(locate)?;
                    if shape_checked {
                        check_message_shape(context, &who, view).map_err(locate)?;
                    }
                }
                None => {
                    value = event.data();
                    check_data(context, &who, value).map_err(locate)?;
                    if shape_checked {
                        check_message_shape(context, &who, value).map_err(locate)?;
                    }
                }
            }
        }
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
    if already_checked {
        // Every event-local rule (data, shape, surface rules 2–4) reads the
        // event alone and passed under this generation when it was accepted:
        // only the rules relating it to this log are left.
        return plan_relational(context, event)
            .map_err(wrap)
            .map_err(locate);
    }
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
    let checked = check_surface_local(
        context.generation,
        &event.event_type,
        seq,
        event.ignorable,
        &meta,
    )
    .map_err(wrap)
    .map_err(locate)?;
    if &checked != event.meta() {
        // Accepted under another generation's rules into a different shape:
        // treat as a rejection rather than silently reinterpreting.
        return Err(locate(AcceptError::new(
            Rule::InvalidEnvelope,
            format!(
                "session event \"{}\" at seq {seq} was accepted under another generation's rules",
                event.event_type
            ),
        )));
    }
    plan_relational(context, event)
        .map_err(wrap)
        .map_err(locate)
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
    if !generation.is_surface_type(&event_type) {
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

/// E7 of a V3 row, of any type (an opaque one too): upstream's released row decoder reads a
/// row's `sourceEventSeqs` before it asks whether the row's seq is dense (E8), and refuses a
/// value that is not an array, or a list of seqs that are not unique and below the row's own.
/// (Lists of other members, `[start, end]` ranges among them, meet rules 4b–4f later.)
fn check_row_sources(meta: &MetaInput, seq: Seq) -> Result<(), AcceptError> {
    if let MetaInput::Raw {
        sources: Some(RawSources::Value(value)),
        ..
    } = meta
    {
        if !value.is_array() {
            return Err(AcceptError::new(
                Rule::SourceNotArray,
                "sourceEventSeqs must be an array",
            ));
        }
    }
    let members: Vec<u64> = match meta {
        MetaInput::Raw {
            sources: Some(RawSources::Seqs(seqs)),
            ..
        } => {
            // A writer's list is ascending: judged without a copy (this runs on every load).
            let ascending = seqs.windows(2).all(|pair| pair[0] < pair[1]);
            if ascending && seqs.last().is_none_or(|last| *last < seq) {
                return Ok(());
            }
            seqs.iter().map(|member| member.get()).collect()
        }
        MetaInput::Raw {
            sources: Some(RawSources::Value(Value::Array(items))),
            ..
        } => match items
            .iter()
            .map(Value::as_u64)
            .collect::<Option<Vec<u64>>>()
        {
            Some(members) => members,
            None => return Ok(()),
        },
        _ => return Ok(()),
    };
    let mut sorted = members;
    sorted.sort_unstable();
    let unique = sorted.windows(2).all(|pair| pair[0] < pair[1]);
    let earlier = sorted.last().is_none_or(|last| *last < seq.get());
    if unique && earlier {
        return Ok(());
    }
    Err(AcceptError::new(
        if unique {
            Rule::SourceNotEarlier
        } else {
            Rule::SourceDuplicate
        },
        RELEASED_SOURCES_TEXT,
    ))
}

/// Upstream's released row decoder's refusal of a source list (E7).
const RELEASED_SOURCES_TEXT: &str = "sourceEventSeqs ranges must contain unique earlier seqs";

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

/// The candidate a data or shape rule is judged on, for messages.
struct Who<'e> {
    event_type: &'e EventType,
    seq: Seq,
    /// The seq as the stored row wrote it (adopt path: the row is not validated yet).
    shown_seq: Option<String>,
}

/// How messages name the candidate in data and shape rules (§5.3).
fn subject(context: &Context<'_>, who: &Who<'_>) -> String {
    match context.path {
        Path::Seed | Path::Restore => {
            format!("seed {} at index {}", who.event_type, context.index)
        }
        Path::Adopt => match &who.shown_seq {
            Some(shown) => format!("session event at seq {shown}"),
            None => format!("session event at seq {}", who.seq),
        },
        Path::Append | Path::Fold => {
            format!("session event \"{}\" at seq {}", who.event_type, who.seq)
        }
    }
}

/// The payload rules of one candidate in its generation's order: V2+ run the data rules
/// (§5.3) before the shapes (§4.5); v0 checks the shapes first and refuses the `fallback`
/// reason after them (docs/v0-rules.md, "Path --seed" steps 2–3).
fn check_payload<'n, N: Node<'n>>(
    context: &Context<'_>,
    who: &Who<'_>,
    data: N,
    shape_checked: bool,
) -> Result<(), AcceptError> {
    if context.generation.legacy_check_order() {
        if shape_checked {
            check_message_shape(context, who, data)?;
        }
        check_data(context, who, data)
    } else {
        check_data(context, who, data)?;
        if shape_checked {
            check_message_shape(context, who, data)?;
        }
        Ok(())
    }
}

/// How messages of the retired-shape refusals name the candidate (upstream names the
/// position, not the type: `seed event at index 3`, or `session event "T"` on append).
fn legacy_subject(context: &Context<'_>, who: &Who<'_>) -> String {
    match context.path {
        Path::Seed | Path::Restore => format!("seed event at index {}", context.index),
        Path::Append | Path::Fold | Path::Adopt => {
            format!("session event \"{}\"", who.event_type)
        }
    }
}

/// How deep a store's scan materializes a payload's view: as deep as its type's data and
/// shape rules read ([`view_depth`]), and the top level of a `tool/call` and of the turn and
/// step boundaries, which only the relational rules read (`relations::Facts`, read ahead on
/// the decoding thread).
pub(crate) fn scan_depth(event_type: &EventType) -> u8 {
    match event_type {
        EventType::ToolCall
        | EventType::TurnStart
        | EventType::TurnEnd
        | EventType::StepStart
        | EventType::StepEnd => 1,
        other => view_depth(other),
    }
}

/// How deep a stored payload must be materialized for its type's data and
/// shape rules (containers at depths below this are built; deeper values stay
/// raw text). 0: no rule reads the payload.
pub(crate) fn view_depth(event_type: &EventType) -> u8 {
    match event_type {
        // A system message's text blocks are read (P10); an assistant message's tool-call
        // blocks, by the relational rules (`relations::Facts`).
        EventType::ToolResult | EventType::SystemMessage | EventType::AssistantMessage => 4,
        EventType::RequestHeader => 3,
        EventType::UserMessage => 2,
        EventType::AssistantAttempt => 1,
        _ => 0,
    }
}

/// The data rules that depend on the type name only (payload not read).
fn check_data_by_name(context: &Context<'_>, who: &Who<'_>) -> Result<(), AcceptError> {
    match who.event_type {
        // The retired legacy shapes are refused by name only when reading v0/v1
        // logs (§0.5, §2.4). In V2+ `request/header-delta` is an ordinary unknown
        // type and `fallback` an invalid reason (§11.3 item 11).
        EventType::Other(name)
            if context.generation <= Generation::V1 && name.as_ref() == "request/header-delta" =>
        {
            Err(AcceptError::new(
                Rule::LegacyHeaderDelta,
                format!(
                    "{} uses unsupported legacy request/header-delta format",
                    legacy_subject(context, who)
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// Event-local data rules (session-core §5.3).
fn check_data<'n, N: Node<'n>>(
    context: &Context<'_>,
    who: &Who<'_>,
    data: N,
) -> Result<(), AcceptError> {
    let generation = context.generation;
    let fail = |rule: Rule, detail: &str| {
        Err(AcceptError::new(
            rule,
            format!("{} {detail}", subject(context, who)),
        ))
    };
    match who.event_type {
        EventType::RequestHeader => {
            if data.kind() != Kind::Object {
                // v0/v1 have no such rule: the shape check already said `lacks provider/model`.
                if !generation.checks_request_header_objects() {
                    return Ok(());
                }
                return fail(Rule::DataNotObject, "data must be an object");
            }
            if generation <= Generation::V1
                && data.get("reason").and_then(Node::text).as_deref() == Some("fallback")
            {
                return Err(AcceptError::new(
                    Rule::LegacyFallbackReason,
                    format!(
                        "{} uses unsupported legacy request/header reason \"fallback\"",
                        legacy_subject(context, who)
                    ),
                ));
            }
            let Some(header) = data.get("header").filter(|h| h.kind() == Kind::Object) else {
                if !generation.checks_request_header_objects() {
                    return Ok(());
                }
                return fail(Rule::HeaderNotObject, "header must be an object");
            };
            if generation >= Generation::V3 {
                if header.get("system").is_some() {
                    return fail(
                        Rule::HeaderSystemForbidden,
                        "must omit header.system; use system/message",
                    );
                }
                if header.get("tools").is_some_and(Node::is_empty_array) {
                    return fail(Rule::EmptyTools, "must omit empty tools");
                }
                if header
                    .get("adapterDefaults")
                    .is_some_and(Node::is_empty_object)
                {
                    return fail(
                        Rule::EmptyAdapterDefaults,
                        "must omit empty adapterDefaults",
                    );
                }
            }
        }
        EventType::ToolResult if generation >= Generation::V3 => {
            if data.kind() != Kind::Object {
                return fail(Rule::DataNotObject, "data must be an object");
            }
            if data.get("error").is_some() {
                let first_block_is_error = data
                    .get("message")
                    .and_then(|message| message.get("content"))
                    .and_then(|content| content.at(0))
                    .and_then(|block| block.get("isError"))
                    .and_then(Node::boolean)
                    == Some(true);
                if !first_block_is_error {
                    return fail(
                        Rule::ToolErrorWithoutIsError,
                        "error requires message content[0].isError === true",
                    );
                }
            }
        }
        _ => return check_data_by_name(context, who),
    }
    Ok(())
}

/// Message-shape checks (session-core §4.5): on seed and restore, and on V3 appends.
fn check_message_shape<'n, N: Node<'n>>(
    context: &Context<'_>,
    who: &Who<'_>,
    data: N,
) -> Result<(), AcceptError> {
    let generation = context.generation;
    let fail = |rule: Rule, detail: String| {
        Err(AcceptError::new(
            rule,
            format!("{} {detail}", subject(context, who)),
        ))
    };
    let settlement_ok = |data: N| {
        data.get("turn").and_then(Node::seq_number).is_some()
            && data.get("step").and_then(Node::seq_number).is_some()
            && data
                .get("stream")
                .is_some_and(|stream| stream.kind() == Kind::Array)
    };
    let (role, message) = match who.event_type {
        EventType::UserMessage => ("user", Some(data)),
        EventType::SystemMessage if generation >= Generation::V3 => {
            // Upstream's own payload rules of a system message come first (P4–P10).
            crate::relations::system_payload_rules(data).map_err(|error| AcceptError {
                message: format!("{} {}", subject(context, who), error.message),
                ..error
            })?;
            ("system", data.get("message"))
        }
        EventType::AssistantMessage => ("assistant", data.get("message")),
        EventType::ToolResult => ("user", data.get("message")),
        EventType::AssistantAttempt if generation >= Generation::V2 => {
            if !settlement_ok(data) {
                return fail(
                    Rule::InvalidSettlementFields,
                    "has invalid settlement fields".into(),
                );
            }
            return Ok(());
        }
        EventType::RequestHeader => return check_request_header_shape(context, who, data),
        _ => return Ok(()),
    };
    let Some(message) = message.filter(|message| {
        message.kind() == Kind::Object && message.get("id").is_some_and(Node::is_non_empty_str)
    }) else {
        return fail(Rule::MessageNoId, "lacks an identified message".into());
    };
    if message.get("role").and_then(Node::text).as_deref() != Some(role) {
        return fail(
            Rule::MessageWrongRole,
            format!("message must have role \"{role}\""),
        );
    }
    let source = message.get("source");
    if !source.is_some_and(|source| source.get("kind").is_some_and(Node::is_non_empty_str)) {
        return fail(
            Rule::MessageInvalidSource,
            "message has invalid source".into(),
        );
    }
    let Some(content) = message.get("content").filter(|c| c.kind() == Kind::Array) else {
        return fail(
            Rule::MessageInvalidContent,
            "message has invalid content".into(),
        );
    };
    let source_kind = source
        .and_then(|source| source.get("kind"))
        .and_then(Node::text);
    let source_field = |key: &str| source.and_then(|s| s.get(key));
    match who.event_type {
        EventType::SystemMessage => {
            let plugin_ok = source_kind.as_deref() == Some("plugin")
                && source_field("plugin").is_some_and(Node::is_non_empty_str);
            if !plugin_ok {
                return fail(
                    Rule::SystemNoPluginSource,
                    "message must have plugin source".into(),
                );
            }
        }
        EventType::AssistantMessage => {
            let model_ok = source_kind.as_deref() == Some("model")
                && source_field("provider").is_some_and(Node::is_non_empty_str)
                && source_field("model").is_some_and(Node::is_non_empty_str);
            if !model_ok {
                return fail(
                    Rule::AssistantNoModelSource,
                    "message must have model source".into(),
                );
            }
            if generation >= Generation::V2 && !settlement_ok(data) {
                return fail(
                    Rule::InvalidSettlementFields,
                    "has invalid settlement fields".into(),
                );
            }
        }
        EventType::ToolResult => {
            let call_id = source_field("callId");
            if source_kind.as_deref() != Some("tool")
                || !call_id.is_some_and(Node::is_non_empty_str)
            {
                return fail(
                    Rule::ToolResultNoToolSource,
                    "message must have tool source".into(),
                );
            }
            let block = content.at(0);
            let one_block = content.len() == Some(1)
                && block
                    .and_then(|block| block.get("type"))
                    .and_then(Node::text)
                    .as_deref()
                    == Some("tool-result")
                && block
                    .and_then(|block| block.get("content"))
                    .is_some_and(|inner| inner.kind() == Kind::Array);
            if !one_block {
                return fail(
                    Rule::ToolResultNotOneBlock,
                    "message must contain one tool-result block".into(),
                );
            }
            let block_call_id = block.and_then(|block| block.get("toolCallId"));
            let same = match (block_call_id, call_id) {
                (Some(a), Some(b)) => a.kind() == b.kind() && a.text() == b.text(),
                (None, None) => true,
                _ => false,
            };
            if !same {
                return fail(
                    Rule::ToolResultMismatchedCallId,
                    "message has mismatched tool call ids".into(),
                );
            }
        }
        _ => {}
    }
    Ok(())
}

fn check_request_header_shape<'n, N: Node<'n>>(
    context: &Context<'_>,
    who: &Who<'_>,
    data: N,
) -> Result<(), AcceptError> {
    let fail = |rule: Rule, detail: &str| {
        Err(AcceptError::new(
            rule,
            format!("{} {detail}", subject(context, who)),
        ))
    };
    let header = data.get("header");
    let config = header.and_then(|header| header.get("config"));
    let has = |key: &str| {
        config
            .and_then(|config| config.get(key))
            .is_some_and(Node::is_non_empty_str)
    };
    if !has("provider") || !has("model") {
        return fail(Rule::RequestHeaderNoModel, "lacks provider/model");
    }
    if let Some(effort) = config.and_then(|config| config.get("reasoningEffort")) {
        if !effort.is_non_empty_str() {
            return fail(
                Rule::RequestHeaderBadReasoningEffort,
                "has an invalid reasoningEffort",
            );
        }
    }
    if let Some(defaults) = header.and_then(|header| header.get("adapterDefaults")) {
        let valid = defaults.kind() == Kind::Object
            && defaults.members().into_iter().all(|(key, flag)| {
                matches!(key.as_ref(), "reasoningEffort" | "maxTokens")
                    && flag.boolean() == Some(true)
                    && config.is_some_and(|config| config.get(&key).is_some())
            });
        if !valid {
            return fail(
                Rule::RequestHeaderBadAdapterDefaults,
                "has invalid adapterDefaults",
            );
        }
    }
    // v0/v1 check no reason here (only the retired `fallback`, a data rule).
    if !context.generation.checks_request_reason() {
        return Ok(());
    }
    let reasons: &[&str] = &["initial", "resume", "change", "series"];
    let reason_ok = data
        .get("reason")
        .and_then(Node::text)
        .is_some_and(|reason| reasons.contains(&reason.as_ref()));
    if !reason_ok {
        return fail(Rule::RequestHeaderBadReason, "has an invalid reason");
    }
    if let Some(marker) = data.get("startsSeries") {
        if marker.boolean() != Some(true) {
            return fail(
                Rule::RequestHeaderBadStartsSeries,
                "has an invalid startsSeries marker",
            );
        }
    }
    Ok(())
}

/// What rules 2–3 decided about a candidate's marker.
#[derive(Clone, Debug)]
enum Marker {
    /// A log-only event without metadata, or an unknown ignorable one (opaque metadata).
    Done(SurfaceMeta),
    /// A surface event with a well-formed op; its source list is checked next.
    Surface(SurfaceOp),
}

/// Rules 2–4 of session-core §5.2: eligibility, marker, op shape, endpoints
/// earlier, source list. Returns the validated metadata.
fn check_surface_local(
    generation: Generation,
    event_type: &EventType,
    seq: Seq,
    ignorable: bool,
    meta: &MetaInput,
) -> Result<SurfaceMeta, AcceptError> {
    let marker = check_marker(generation, event_type, seq, ignorable, meta)?;
    check_sources(generation, event_type, seq, meta, marker)
}

/// Surface metadata as raw values (`surfaceOp`, `sourceEventSeqs`) or in typed form.
type MetaParts<'m> = (
    Option<&'m Value>,
    Option<&'m RawSources>,
    Option<(SurfaceOp, Option<&'m [Seq]>)>,
);

/// Splits metadata into its raw values or its typed form.
fn meta_parts(meta: &MetaInput) -> MetaParts<'_> {
    match meta {
        MetaInput::None => (None, None, None),
        MetaInput::Raw {
            surface_op,
            sources,
        } => (surface_op.as_deref(), sources.as_ref(), None),
        MetaInput::Typed { op, sources } => (None, None, Some((*op, sources.as_deref()))),
        MetaInput::Accepted { op, sources } => (None, None, Some((*op, sources.as_deref()))),
    }
}

/// Rules 2–3: eligibility, the marker and its shape, endpoints earlier (V3).
fn check_marker(
    generation: Generation,
    event_type: &EventType,
    seq: Seq,
    ignorable: bool,
    meta: &MetaInput,
) -> Result<Marker, AcceptError> {
    let tag = event_type.as_str();
    let (raw_op, raw_sources, typed) = meta_parts(meta);
    let has_op = raw_op.is_some() || typed.is_some();
    let has_sources = raw_sources.is_some() || typed.is_some_and(|(_, sources)| sources.is_some());

    // Rule 2a: log-only types.
    if !generation.is_surface_type(event_type) {
        if ignorable && generation.keeps_opaque_metadata() && !generation.is_known_type(event_type)
        {
            return Ok(Marker::Done(SurfaceMeta::Opaque {
                surface_op: raw_op
                    .cloned()
                    .or_else(|| typed.map(|(op, _)| op.to_value(generation.replace_spelling())))
                    .map(Box::new),
                source_event_seqs: raw_sources
                    .map(RawSources::to_value)
                    .or_else(|| typed.and_then(|(_, sources)| sources.map(crate::wire::seqs_value)))
                    .map(Box::new),
            }));
        }
        if has_op {
            return Err(AcceptError::new(
                Rule::SurfaceOpOnNonSurface,
                format!(
                    "session event \"{tag}\" is not surface-eligible and cannot carry surfaceOp"
                ),
            ));
        }
        if has_sources {
            return Err(AcceptError::new(
                Rule::SourceOnNonSurface,
                format!(
                    "session event \"{tag}\" is not surface-eligible and cannot carry sourceEventSeqs"
                ),
            ));
        }
        return Ok(Marker::Done(SurfaceMeta::LogOnly));
    }

    // Rule 2b/2c: the marker and its shape.
    let op = match (typed, raw_op) {
        (Some((op, _)), _) => op,
        (None, Some(raw)) => parse_surface_op(generation, tag, raw)?,
        (None, None) => {
            return Err(AcceptError::new(
                Rule::MissingSurfaceOp,
                format!(
                    "session event \"{tag}\" is surface-eligible and requires a surfaceOp marker"
                ),
            ))
        }
    };

    // Rule 3: endpoints reference earlier events (V3, event-local).
    if let SurfaceOp::Replace(range) = op {
        if generation.checks_endpoints_earlier() && (range.start >= seq || range.end >= seq) {
            return Err(AcceptError::new(
                Rule::ReplaceEndpointsNotEarlier,
                format!(
                    "surface replace at seq {seq}: startSeq and endSeq must reference earlier events"
                ),
            ));
        }
    }
    Ok(Marker::Surface(op))
}

/// Rule 4: the source list of a surface event whose marker passed.
fn check_sources(
    generation: Generation,
    event_type: &EventType,
    seq: Seq,
    meta: &MetaInput,
    marker: Marker,
) -> Result<SurfaceMeta, AcceptError> {
    let op = match marker {
        Marker::Done(meta) => return Ok(meta),
        Marker::Surface(op) => op,
    };
    let tag = event_type.as_str();
    let (_, raw_sources, typed) = meta_parts(meta);
    let has_sources = raw_sources.is_some() || typed.is_some_and(|(_, sources)| sources.is_some());
    // 4a comes first: an assistant message may not carry the field at all
    // (V2+), whatever its value, even `[]`.
    let is_assistant = *event_type == EventType::AssistantMessage;
    if is_assistant && has_sources && !generation.assistant_may_cite_sources() {
        return Err(AcceptError::new(
            Rule::AssistantCitesSources,
            "assistant/message embeds its source stream and cannot carry sourceEventSeqs",
        ));
    }
    let sources: Option<std::borrow::Cow<'_, [Seq]>> =
        match (typed, raw_sources) {
            (Some((_, sources)), _) => sources.map(std::borrow::Cow::Borrowed),
            (None, Some(RawSources::Seqs(seqs))) => Some(std::borrow::Cow::Borrowed(seqs)),
            (None, Some(RawSources::Value(raw))) => Some(std::borrow::Cow::Owned(
                parse_sources_shape(generation, tag, seq, raw, is_assistant)?,
            )),
            (None, None) => None,
        };
    if let Some(list) = &sources {
        check_source_list(generation, seq, list, is_assistant)?;
    }
    // A list already shared is kept, not copied.
    if let MetaInput::Accepted { sources, .. } = meta {
        return Ok(SurfaceMeta::Surface {
            op,
            sources: sources.clone(),
        });
    }
    if let MetaInput::Raw {
        sources: Some(RawSources::Seqs(seqs)),
        ..
    } = meta
    {
        return Ok(SurfaceMeta::Surface {
            op,
            sources: Some(seqs.clone()),
        });
    }
    Ok(SurfaceMeta::Surface {
        op,
        sources: sources.map(Arc::from),
    })
}

/// A seq as `generation` reads one from JSON (v0/v1: `-0` and `1.0` are seqs).
fn seq_value(generation: Generation, value: &Value) -> Option<Seq> {
    let number = if generation.negative_zero_is_a_seq() {
        js_non_negative_safe_integer(value)
    } else {
        non_negative_safe_integer(value)
    };
    number.and_then(|number| Seq::new(number).ok())
}

fn parse_surface_op(
    generation: Generation,
    tag: &str,
    raw: &Value,
) -> Result<SurfaceOp, AcceptError> {
    let invalid_replace = || {
        AcceptError::new(
            Rule::ReplaceBadShape,
            format!("session event \"{tag}\" carries an invalid replace surfaceOp"),
        )
    };
    match raw {
        Value::String(text) if text == "append" => Ok(SurfaceOp::Append),
        Value::Object(map) => {
            let (start_key, end_key) = match generation.replace_spelling() {
                ReplaceSpelling::StartEnd => ("start", "end"),
                ReplaceSpelling::StartSeqEndSeq => ("startSeq", "endSeq"),
            };
            if map.len() != 3 || map.get("op").and_then(Value::as_str) != Some("replace") {
                return Err(invalid_replace());
            }
            let endpoint = |key: &str| map.get(key).and_then(|value| seq_value(generation, value));
            match (endpoint(start_key), endpoint(end_key)) {
                (Some(start), Some(end)) => Ok(SurfaceOp::Replace(ReplaceRange { start, end })),
                _ => Err(invalid_replace()),
            }
        }
        _ => Err(AcceptError::new(
            Rule::InvalidSurfaceOp,
            format!("session event \"{tag}\" carries an invalid surfaceOp"),
        )),
    }
}

/// Rules 4b–4d on a raw list: array, non-empty, every entry a seq.
fn parse_sources_shape(
    generation: Generation,
    tag: &str,
    seq: Seq,
    raw: &Value,
    is_assistant: bool,
) -> Result<Vec<Seq>, AcceptError> {
    let Value::Array(items) = raw else {
        return Err(AcceptError::new(
            Rule::SourceNotArray,
            format!("sourceEventSeqs on event at seq {seq} must be an array when present"),
        ));
    };
    if items.is_empty() {
        check_source_list(generation, seq, &[], is_assistant)?;
        return Ok(Vec::new());
    }
    items
        .iter()
        .map(|item| {
            seq_value(generation, item).ok_or_else(|| {
                    AcceptError::new(
                        Rule::SourceInvalidSeq,
                        format!(
                            "session event \"{tag}\" sourceEventSeqs must densely contain non-negative safe integers"
                        ),
                    )
                })
        })
        .collect()
}

/// Rules 4c, 4e, 4f on a well-typed list.
fn check_source_list(
    generation: Generation,
    seq: Seq,
    sources: &[Seq],
    is_assistant: bool,
) -> Result<(), AcceptError> {
    if sources.is_empty() {
        if generation.assistant_may_cite_sources() {
            if !is_assistant {
                return Err(AcceptError::new(
                    Rule::EmptySourceOnNonAssistant,
                    "sourceEventSeqs must not be empty except on assistant/message",
                ));
            }
            return Ok(());
        }
        return Err(AcceptError::new(
            Rule::EmptySource,
            "sourceEventSeqs must not be empty",
        ));
    }
    let strictly_increasing = sources.windows(2).all(|pair| pair[0] < pair[1]);
    if !strictly_increasing {
        let mut sorted = sources.to_vec();
        sorted.sort_unstable();
        if sorted.windows(2).any(|pair| pair[0] == pair[1]) {
            return Err(AcceptError::new(
                Rule::SourceDuplicate,
                "sourceEventSeqs must not contain duplicates",
            ));
        }
    }
    if let Some(late) = sources.iter().find(|source| **source >= seq) {
        return Err(AcceptError::new(
            Rule::SourceNotEarlier,
            format!("sourceEventSeqs must reference earlier events: {late} >= current seq {seq}"),
        ));
    }
    Ok(())
}

/// Rules 6–11: the surface transition against the current state.
fn plan_relational(context: &Context<'_>, event: &Event) -> Result<SurfacePlan, AcceptError> {
    plan_fold(context, event).map_err(|error| {
        // Upstream's first pass (the head rules) precedes its fold (docs/rules.md,
        // "Evaluation order").
        let head_error = context
            .head
            .and_then(|head| crate::relations::head_rules_of(head, event).err());
        match head_error {
            Some(head_error) => head_error,
            None => released_wording(context, &event.event_type, event.seq, error),
        }
    })
}

/// An S4–S8 refusal of a V3 event in upstream's released words (docs/rules.md; E7 for a stored
/// row's source list), strata's own
/// detail kept where it says more (which nodes are missing, which endpoint is off the surface).
/// Other refusals, and those of older generations, pass through.
fn released_wording(
    context: &Context<'_>,
    event_type: &EventType,
    seq: Seq,
    error: AcceptError,
) -> AcceptError {
    if !context.generation.words_rules_as_released() {
        return error;
    }
    let stored = matches!(context.path, Path::Seed | Path::Restore);
    let tag = event_type.as_str();
    // The fold names the type upstream's relationship pass sees.
    let projected = match event_type {
        EventType::SystemMessage => "user/message",
        _ => tag,
    };
    let message = match error.rule {
        Rule::AssistantCitesSources => format!(
            "format v3 assistant/message at seq {seq} embeds its stream and cannot carry sourceEventSeqs"
        ),
        Rule::EmptySource | Rule::SourceNotArray => {
            format!("format v3 {tag} at seq {seq} sourceEventSeqs must be a non-empty array")
        }
        // A stored row's list is refused by the row decoder (E7), an appended one by S6.
        Rule::SourceDuplicate | Rule::SourceNotEarlier if stored => RELEASED_SOURCES_TEXT.into(),
        Rule::SourceDuplicate | Rule::SourceNotEarlier => {
            format!("format v3 {tag} at seq {seq} sourceEventSeqs must be unique earlier seqs")
        }
        Rule::ReplaceStartNotFound | Rule::ReplaceEndNotFound | Rule::ReplaceEndpointsReversed => {
            format!(
                "{projected} replacement range is not on the current surface ({})",
                error.message
            )
        }
        Rule::ReplaceUncoveredSource => format!(
            "{projected} replacement sourceEventSeqs omit a shadowed surface node ({})",
            error.message
        ),
        _ => return error,
    };
    AcceptError { message, ..error }
}

/// The surface fold of an accepted event (rules 6–9: the span, its sources, a tool-result
/// rewrite), in strata's words.
fn plan_fold(context: &Context<'_>, event: &Event) -> Result<SurfacePlan, AcceptError> {
    let (op, sources) = match event.meta() {
        SurfaceMeta::Surface { op, sources } => (*op, sources.as_deref()),
        SurfaceMeta::LogOnly | SurfaceMeta::Opaque { .. } => return Ok(SurfacePlan::None),
    };
    let range = match op {
        SurfaceOp::Append => return Ok(SurfacePlan::Append(event.seq)),
        SurfaceOp::Replace(range) => range,
    };
    let nodes = context.surface.nodes();
    let (start_index, end_index) = locate_span(context, range)?;
    let shadowed = &nodes[start_index..=end_index];
    // Rule 8: every shadowed node is cited.
    let missing = uncovered(shadowed, sources.unwrap_or(&[]));
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(ToString::to_string).collect();
        return Err(AcceptError::new(
            Rule::ReplaceUncoveredSource,
            format!(
                "surface replace: sourceEventSeqs must include every shadowed surface node; missing {}",
                list.join(", ")
            ),
        ));
    }
    // Rule 9: a tool-result rewrite replaces one tool result and only its content.
    if event.event_type == EventType::ToolResult {
        if shadowed.len() != 1 {
            return Err(AcceptError::new(
                Rule::ToolResultReplaceMulti,
                "tool/result surface replacement must rewrite exactly one current node",
            ));
        }
        let target = context
            .lookup
            .event(shadowed[0])
            .filter(|target| target.event_type == EventType::ToolResult);
        let Some(target) = target else {
            return Err(AcceptError::new(
                Rule::ToolResultReplaceWrongTarget,
                "tool/result surface replacement must target a current tool/result",
            ));
        };
        // Parsed without caching: a pruned log holds many such pairs, and cached trees would
        // stay in memory with both events. Most pairs settle on their texts alone.
        let same = same_text_but_tool_content(target.data.json(), event.data.json())
            || equal_except_tool_content(
                &target.data.value_uncached(),
                &event.data.value_uncached(),
            );
        if !same {
            return Err(AcceptError::new(
                Rule::ToolResultReplaceChangesNonContent,
                "tool/result surface replacement may change only content",
            ));
        }
    }
    // Rule 10: the system prompt at node 0 is rewritten only by one system message.
    if context.generation >= Generation::V3 && start_index == 0 {
        let head_is_system = context
            .lookup
            .event(nodes[0])
            .is_some_and(|head| head.event_type == EventType::SystemMessage);
        if head_is_system && (event.event_type != EventType::SystemMessage || shadowed.len() != 1) {
            // Upstream's S11/S12 texts follow strata's own (docs/rules.md).
            let upstream = if event.event_type == EventType::SystemMessage {
                "system/message must replace exactly the current system head"
            } else {
                "surface replacement cannot shadow the protected system head"
            };
            return Err(AcceptError::new(
                Rule::SystemHeadProtected,
                format!("surface replace: node 0 holds the system prompt and may be rewritten only by a system/message over exactly that node ({upstream})"),
            ));
        }
    }
    Ok(SurfacePlan::Replace {
        seq: event.seq,
        start_index,
        end_index,
    })
}

/// Rule 7: both endpoints on the surface, start not after end (by surface position);
/// returns their surface indexes.
fn locate_span(context: &Context<'_>, range: ReplaceRange) -> Result<(usize, usize), AcceptError> {
    locate_span_in(context.surface.nodes(), range)
}

/// [`locate_span`] on the surface `nodes`.
pub(crate) fn locate_span_in(
    nodes: &[Seq],
    range: ReplaceRange,
) -> Result<(usize, usize), AcceptError> {
    let start_index = find(nodes, range.start).ok_or_else(|| {
        AcceptError::new(
            Rule::ReplaceStartNotFound,
            format!(
                "surface replace: start seq {} not found in surface",
                range.start
            ),
        )
    })?;
    // The end usually follows the start: search there first, so a replace
    // costs one pass over the surface, not two.
    let end_index = match find(&nodes[start_index..], range.end) {
        Some(offset) => start_index + offset,
        None => find(&nodes[..start_index], range.end).ok_or_else(|| {
            AcceptError::new(
                Rule::ReplaceEndNotFound,
                format!(
                    "surface replace: end seq {} not found in surface",
                    range.end
                ),
            )
        })?,
    };
    if start_index > end_index {
        return Err(AcceptError::new(
            Rule::ReplaceEndpointsReversed,
            format!(
                "surface replace: start seq {} (index {start_index}) is after end seq {} (index {end_index})",
                range.start, range.end
            ),
        ));
    }
    Ok((start_index, end_index))
}

/// The shadowed nodes missing from `sources`, in surface order.
fn uncovered(shadowed: &[Seq], sources: &[Seq]) -> Vec<Seq> {
    if shadowed.len() <= 8 {
        return shadowed
            .iter()
            .filter(|node| !sources.contains(node))
            .copied()
            .collect();
    }
    let mut sorted = sources.to_vec();
    sorted.sort_unstable();
    shadowed
        .iter()
        .filter(|node| sorted.binary_search(node).is_err())
        .copied()
        .collect()
}

/// Deep equality of two tool-result payloads with the tool-result block's
/// inner content (`message.content[0].content`) treated as equal (§5.2 rule 9c).
/// Rule 9 read off the texts: two tool-result payloads that are byte-identical but for the
/// value of their first block's `content` (`message.content[0].content`, as a view finds it)
/// are equal except for that content, so [`equal_except_tool_content`] would say so too:
/// every byte outside that value is the same, so everything serde reads from them is the same
/// except what that value becomes, which is the one field rule 9 ignores (or, were it a
/// repeated key's value serde drops, nothing). `false` says only that the texts cannot settle
/// it. This spares parsing both payloads into trees (a twentieth of a pruned log's restore).
fn same_text_but_tool_content(left: &str, right: &str) -> bool {
    // The byte range of `message.content[0].content`'s value in `text`.
    fn content_span(text: &str) -> Option<(usize, usize)> {
        // Materialized down to the block; its `content` stays raw text (a `View::Deep`).
        let view = View::parse(text, 4)?;
        let block = (&view).get("message")?.get("content")?.at(0)?;
        let View::Deep(raw) = block.get("content")? else {
            return None;
        };
        let start = (raw.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
        let end = start.checked_add(raw.len())?;
        // A view's raw text lies in the text it was parsed from.
        (text.get(start..end)? == *raw).then_some((start, end))
    }
    let (Some((left_start, left_end)), Some((right_start, right_end))) =
        (content_span(left), content_span(right))
    else {
        return false;
    };
    left.get(..left_start) == right.get(..right_start)
        && left.get(left_end..) == right.get(right_end..)
}

fn equal_except_tool_content(left: &Value, right: &Value) -> bool {
    let (Value::Object(left), Value::Object(right)) = (left, right) else {
        return json_equal(left, right);
    };
    if left.len() != right.len() {
        return false;
    }
    left.iter().all(|(key, left_value)| {
        let Some(right_value) = right.get(key) else {
            return false;
        };
        if key == "message" {
            equal_message_except_content(left_value, right_value)
        } else {
            json_equal(left_value, right_value)
        }
    })
}

fn equal_message_except_content(left: &Value, right: &Value) -> bool {
    let (Value::Object(left), Value::Object(right)) = (left, right) else {
        return json_equal(left, right);
    };
    left.len() == right.len()
        && left.iter().all(|(key, left_value)| {
            let Some(right_value) = right.get(key) else {
                return false;
            };
            if key != "content" {
                return json_equal(left_value, right_value);
            }
            let (Value::Array(left_blocks), Value::Array(right_blocks)) = (left_value, right_value)
            else {
                return json_equal(left_value, right_value);
            };
            left_blocks.len() == right_blocks.len()
                && left_blocks
                    .iter()
                    .zip(right_blocks)
                    .enumerate()
                    .all(|(index, (a, b))| {
                        if index > 0 {
                            return json_equal(a, b);
                        }
                        equal_block_except_content(a, b)
                    })
        })
}

fn equal_block_except_content(left: &Value, right: &Value) -> bool {
    let (Value::Object(left), Value::Object(right)) = (left, right) else {
        return json_equal(left, right);
    };
    // Blanking sets `content` to null on both sides, so a missing key and a
    // present one compare equal once blanked.
    let keys_left = left.keys().filter(|key| *key != "content");
    let count_left = keys_left.clone().count();
    let count_right = right.keys().filter(|key| *key != "content").count();
    count_left == count_right
        && keys_left.into_iter().all(|key| {
            right.get(key).is_some_and(|right_value| {
                left.get(key).is_some_and(|l| json_equal(l, right_value))
            })
        })
}

#[cfg(test)]
mod tool_content_tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::{equal_except_tool_content, same_text_but_tool_content};

    const TARGET: &str = r#"{"turn":1,"step":1,"message":{"source":{"kind":"tool","callId":"c-1"},"content":[{"type":"tool-result","toolCallId":"c-1","content":[{"type":"text","text":"a long result"}],"isError":false}],"role":"user","id":"r-1"}}"#;

    fn full(left: &str, right: &str) -> bool {
        let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        equal_except_tool_content(&parse(left), &parse(right))
    }

    #[test]
    fn a_pruned_content_is_settled_on_the_texts() {
        for content in [
            r#"[{"type":"text","text":"[pruned]"}]"#,
            "[]",
            "null",
            r#""x""#,
        ] {
            let pruned = TARGET.replace(r#"[{"type":"text","text":"a long result"}]"#, content);
            assert!(same_text_but_tool_content(TARGET, &pruned), "{pruned}");
            assert!(full(TARGET, &pruned), "{pruned}");
        }
    }

    #[test]
    fn other_changes_are_left_to_the_trees() {
        for (from, to) in [
            (r#""isError":false"#, r#""isError":true"#),
            (r#""id":"r-1""#, r#""id":"r-2""#),
            (r#""turn":1"#, r#""turn":2"#),
            (r#""toolCallId":"c-1""#, r#""toolCallId":"c-2""#),
            // the same values, another order: equal, but not by the texts
            (r#""role":"user","id":"r-1""#, r#""id":"r-1","role":"user""#),
        ] {
            let changed = TARGET.replace(from, to);
            assert!(!same_text_but_tool_content(TARGET, &changed), "{changed}");
        }
    }

    /// Significant bytes to edit a payload with.
    const EDITS: &[u8] = b"\"\\{}[],:0123456789.eE-tfnulcx ";

    strata_testkit::proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever two payloads the texts call equal but for the tool content, the trees do
        /// too: an edit anywhere, a repeated key, content of any shape.
        #[test]
        fn the_texts_never_call_equal_what_the_trees_do_not(
            edits in crate::byte_edits::edits(),
            both in any::<bool>(),
        ) {
            let bytes = crate::byte_edits::apply(TARGET, edits, EDITS);
            let Ok(edited) = std::str::from_utf8(&bytes) else { return Ok(()) };
            if serde_json::from_str::<Value>(edited).is_err() {
                return Ok(());
            }
            let left = if both { edited } else { TARGET };
            if same_text_but_tool_content(left, edited) {
                prop_assert!(full(left, edited), "{} vs {}", left, edited);
            }
        }
    }
}
