//! The latest event of each type: an O(1) fold a session keeps in step with its log.
//!
//! Callers ask "what is the current turn number", "is a compaction bracket open", "when was
//! the last event" without scanning history; a lazily resumed session answers from this fold
//! (carried by its checkpoint, the events themselves pinned) exactly as a full one does.
//!
//! Invariant: for every type, the slot holds the greatest seq of an event of that type in the
//! log, or nothing when the log holds none.

use std::sync::Arc;

use crate::event::EventType;
use crate::seq::Seq;

/// The number of interned core types (every [`EventType`] variant but `Other`).
const N_CORE: usize = 16;

/// Latest seq per event type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Latest {
    core: [Option<Seq>; N_CORE],
    /// Other types, in order of first appearance; a log holds few distinct ones.
    other: Vec<(Arc<String>, Seq)>,
}

fn core_slot(event_type: &EventType) -> Option<usize> {
    Some(match event_type {
        EventType::TurnStart => 0,
        EventType::TurnEnd => 1,
        EventType::StepStart => 2,
        EventType::StepEnd => 3,
        EventType::SystemMessage => 4,
        EventType::UserMessage => 5,
        EventType::AssistantMessage => 6,
        EventType::AssistantAttempt => 7,
        EventType::AssistantChunk => 8,
        EventType::ToolCall => 9,
        EventType::ToolResult => 10,
        EventType::RequestHeader => 11,
        EventType::RequestContext => 12,
        EventType::SessionEndSeed => 13,
        EventType::TodoWrite => 14,
        EventType::DeveloperMessage => 15,
        EventType::Other(_) => return None,
    })
}

const CORE_TYPES: [EventType; N_CORE] = [
    EventType::TurnStart,
    EventType::TurnEnd,
    EventType::StepStart,
    EventType::StepEnd,
    EventType::SystemMessage,
    EventType::UserMessage,
    EventType::AssistantMessage,
    EventType::AssistantAttempt,
    EventType::AssistantChunk,
    EventType::ToolCall,
    EventType::ToolResult,
    EventType::RequestHeader,
    EventType::RequestContext,
    EventType::SessionEndSeed,
    EventType::TodoWrite,
    EventType::DeveloperMessage,
];

impl Latest {
    /// Records an event of `event_type` at `seq` (the log's newest).
    pub(crate) fn note(&mut self, event_type: &EventType, seq: Seq) {
        if let Some(slot) = core_slot(event_type) {
            self.core[slot] = Some(seq);
            return;
        }
        let EventType::Other(name) = event_type else {
            return;
        };
        match self
            .other
            .iter_mut()
            .find(|(known, _)| Arc::ptr_eq(known, name) || known == name)
        {
            Some(entry) => entry.1 = seq,
            None => self.other.push((name.clone(), seq)),
        }
    }

    /// The seq of the latest event of `event_type`.
    pub(crate) fn get(&self, event_type: &EventType) -> Option<Seq> {
        match (core_slot(event_type), event_type) {
            (Some(slot), _) => self.core[slot],
            (None, EventType::Other(name)) => self
                .other
                .iter()
                .find(|(known, _)| known == name)
                .map(|(_, seq)| *seq),
            (None, _) => None,
        }
    }

    /// Every `(type, latest seq)`, core types first.
    pub(crate) fn entries(&self) -> Vec<(EventType, Seq)> {
        let core = CORE_TYPES
            .iter()
            .zip(self.core.iter())
            .filter_map(|(event_type, seq)| seq.map(|seq| (event_type.clone(), seq)));
        let other = self
            .other
            .iter()
            .map(|(name, seq)| (EventType::Other(name.clone()), *seq));
        core.chain(other).collect()
    }

    /// The fold holding exactly `entries` (a later entry for the same type wins).
    pub(crate) fn from_entries(entries: &[(EventType, Seq)]) -> Latest {
        let mut latest = Latest::default();
        for (event_type, seq) in entries {
            latest.note(event_type, *seq);
        }
        latest
    }
}
