//! Rules 6–11: the surface transition a candidate makes against the current surface, planned
//! (never applied) so that a refusal leaves everything unchanged.

use super::surface_meta::RELEASED_SOURCES_TEXT;
use super::tool_content::equal_except_tool_content;
use super::{Context, Path};
use crate::event::{Event, EventType, ReplaceRange, SurfaceMeta, SurfaceOp};
use crate::generation::Generation;
use crate::rule::{AcceptError, Rule};
use crate::seq::Seq;
use crate::surface::{find, SurfacePlan};

/// Rules 6–11: the surface transition against the current state.
pub(super) fn plan_relational(
    context: &Context<'_>,
    event: &Event,
) -> Result<SurfacePlan, AcceptError> {
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
pub(super) fn released_wording(
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
        // stay in memory with both events.
        if !equal_except_tool_content(
            &target.data.value_uncached(),
            &event.data.value_uncached(),
            context.generation.is_v4(),
        ) {
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
pub(super) fn locate_span(
    context: &Context<'_>,
    range: ReplaceRange,
) -> Result<(usize, usize), AcceptError> {
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
