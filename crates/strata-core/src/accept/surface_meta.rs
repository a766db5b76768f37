//! Rules 2–5: a candidate's surface metadata (`surfaceOp` and `sourceEventSeqs`), read from the
//! raw row or the typed intent, before the surface transition is planned.

use std::sync::Arc;

use serde_json::Value;

use super::{MetaInput, RawSources};
use crate::event::{EventType, ReplaceRange, SurfaceMeta, SurfaceOp};
use crate::generation::{Generation, ReplaceSpelling};
use crate::json::{js_non_negative_safe_integer, non_negative_safe_integer};
use crate::rule::{AcceptError, Rule};
use crate::seq::Seq;

/// E7 of a V3 row, of any type (an opaque one too): upstream's released row decoder reads a
/// row's `sourceEventSeqs` before it asks whether the row's seq is dense (E8), and refuses a
/// value that is not an array, or a list of seqs that are not unique and below the row's own.
/// (Lists of other members, `[start, end]` ranges among them, meet rules 4b–4f later.)
pub(super) fn check_row_sources(meta: &MetaInput, seq: Seq) -> Result<(), AcceptError> {
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
pub(super) const RELEASED_SOURCES_TEXT: &str =
    "sourceEventSeqs ranges must contain unique earlier seqs";

/// What rules 2–3 decided about a candidate's marker.
#[derive(Clone, Debug)]
pub(super) enum Marker {
    /// A log-only event without metadata, or an unknown ignorable one (opaque metadata).
    Done(SurfaceMeta),
    /// A surface event with a well-formed op; its source list is checked next.
    Surface(SurfaceOp),
}

/// Rules 2–4 of session-core §5.2: eligibility, marker, op shape, endpoints
/// earlier, source list. Returns the validated metadata.
pub(super) fn check_surface_local(
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
pub(super) fn check_marker(
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
    if !event_type.is_surface_in(generation) {
        if ignorable && generation.keeps_opaque_metadata() && !event_type.is_known_in(generation) {
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
pub(super) fn check_sources(
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
