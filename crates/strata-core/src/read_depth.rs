//! How deep each event type's rules read its payload: the depth a stored payload's view must be
//! built to, shared by the rules that read it (`accept`) and the scanner that builds it ahead
//! (`scan`), so neither imports the other for it.

use crate::event::EventType;

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
