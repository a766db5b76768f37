//! What flows between migration stages: one event object at a time, with its provenance.
//!
//! Every edge (v0→v1, v1→v2, v2→v3) is an iterator adapter over [`Staged`] items, so a chain
//! of edges holds only each edge's bounded state (one model attempt's chunks, a seq map of
//! runs, a short look-ahead for the system prompt), never the log.

use std::sync::Arc;

use serde_json::{Map, Value};
use strata_core::Generation;

use super::error::MigrateError;
use crate::legacy::{js_seq, At};

/// One event between stages.
#[derive(Clone, Debug, PartialEq)]
pub struct Staged {
    /// The physical line of the source file it came from (an inserted event carries the line
    /// of the event that caused it).
    pub line: u64,
    /// Its seq in the source log (`None` for events an edge inserted).
    pub source_seq: Option<u64>,
    /// The event object, in the spelling of the stage it was last written by.
    pub event: Map<String, Value>,
}

impl Staged {
    /// A source event (`event` must be an object; other rows never pass validation).
    pub fn from_source(line: u64, event: Value) -> Staged {
        let event = match event {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Staged {
            line,
            source_seq: event.get("seq").and_then(js_seq),
            event,
        }
    }

    /// The event's type tag.
    pub fn event_type(&self) -> &str {
        self.event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The event's current seq (in the numbering of the stage that produced it).
    pub fn seq(&self) -> Option<u64> {
        self.event.get("seq").and_then(js_seq)
    }
}

/// What every stage needs to name its errors.
#[derive(Clone, Debug)]
pub struct StageContext {
    /// The source file, for messages.
    pub file: Arc<str>,
    /// The source log's generation.
    pub source_generation: Generation,
    /// The session id (minted ids embed it).
    pub session_id: Arc<str>,
}

impl StageContext {
    /// Where `staged` came from.
    pub fn at(&self, staged: &Staged) -> At {
        At {
            file: self.file.to_string(),
            generation: self.source_generation,
            line: staged.line,
            seq: staged.source_seq,
        }
    }
}

/// The item every stage yields.
pub type StageItem = Result<Staged, MigrateError>;
