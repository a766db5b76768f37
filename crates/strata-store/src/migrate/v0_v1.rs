//! The v0→v1 edge: v1 is an identity re-label of v0 plus the frozen legacy normalizations
//! (session-core §2.4, persistence §0.5 [NEWER]).
//!
//! Per event, in order: the U1–U4 upgrades of the v0 restore path (pre-react-loop `turn/start`
//! triggers and `turn/end` reasons, `steering/message`, pre-identity message payloads), the
//! historical `compact/*` → `compaction/*` rename, deterministic ids for an `llm/retry` without
//! `retryId` and a compaction bracket without `compactionId`, and dropping the obsolete
//! `request/header.header.messagePrefix`. The first-party vocabulary is closed here: a type the
//! v0 build does not know refuses the migration even when it is `ignorable`.
//!
//! Seqs are unchanged (one event in, one event out); the only state is the upgrader's message
//! ids and the open compaction's id.

use serde_json::Value;
use strata_core::{EventType, Generation};

use super::error::MigrateError;
use super::stage::{StageContext, StageItem, Staged};
use crate::legacy::{Rejection, Upgrader};

const EDGE: &str = "v0→v1";

/// The v1 header: the v0 header with `version: 1`.
pub fn header(mut header: serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
    header.insert("version".into(), Value::from(1));
    header
}

/// The v0→v1 edge over a stream of v0 events.
pub struct V0ToV1<I> {
    input: I,
    context: StageContext,
    upgrader: Upgrader,
    open_compaction: Option<Value>,
    last_retry: Option<Value>,
}

impl<I: Iterator<Item = StageItem>> V0ToV1<I> {
    /// Wraps a stream of validated v0 events.
    pub fn new(input: I, context: StageContext) -> V0ToV1<I> {
        V0ToV1 {
            upgrader: Upgrader::new(&context.session_id),
            input,
            context,
            open_compaction: None,
            last_retry: None,
        }
    }

    fn convert(&mut self, mut staged: Staged) -> StageItem {
        let mut event = Value::Object(std::mem::take(&mut staged.event));
        self.upgrader
            .upgrade(&mut event)
            .map_err(|rejection| self.unsupported(&staged, &rejection))?;
        let Value::Object(mut event) = event else {
            return Ok(staged);
        };
        let tag = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let tag = match tag.strip_prefix("compact/") {
            Some(rest) => {
                let renamed = format!("compaction/{rest}");
                event.insert("type".into(), Value::from(renamed.clone()));
                renamed
            }
            None => tag,
        };
        let seq_text = staged
            .source_seq
            .map_or_else(|| "unknown".to_owned(), |seq| seq.to_string());
        if let Some(Value::Object(data)) = event.get_mut("data") {
            match tag.as_str() {
                "llm/retry" => {
                    let id = data.entry("retryId").or_insert_with(|| {
                        Value::from(format!(
                            "legacy-retry:{}:{seq_text}",
                            self.context.session_id
                        ))
                    });
                    self.last_retry = Some(id.clone());
                }
                "llm/retry-started" if !data.contains_key("retryId") => {
                    let id = self.last_retry.clone().unwrap_or_else(|| {
                        Value::from(format!(
                            "legacy-retry:{}:{seq_text}",
                            self.context.session_id
                        ))
                    });
                    data.insert("retryId".into(), id);
                }
                "compaction/start" => {
                    let id = data.entry("compactionId").or_insert_with(|| {
                        Value::from(format!(
                            "legacy-compaction:{}:{seq_text}",
                            self.context.session_id
                        ))
                    });
                    self.open_compaction = Some(id.clone());
                }
                "compaction/summary" | "compaction/end" => {
                    if !data.contains_key("compactionId") {
                        let id = self.open_compaction.clone().unwrap_or_else(|| {
                            Value::from(format!(
                                "legacy-compaction:{}:{seq_text}",
                                self.context.session_id
                            ))
                        });
                        data.insert("compactionId".into(), id);
                    }
                    if tag == "compaction/end" {
                        self.open_compaction = None;
                    }
                }
                "request/header" => {
                    if let Some(Value::Object(header)) = data.get_mut("header") {
                        header.shift_remove("messagePrefix");
                    }
                }
                _ => {}
            }
        }
        if !Generation::V0.is_known_type(&EventType::parse(&tag)) {
            staged.event = event;
            return Err(MigrateError::UnknownType {
                at: self.context.at(&staged),
                edge: EDGE,
                event_type: tag,
            });
        }
        staged.event = event;
        Ok(staged)
    }

    fn unsupported(&self, staged: &Staged, rejection: &Rejection) -> MigrateError {
        MigrateError::Unsupported {
            at: self.context.at(staged),
            edge: EDGE,
            detail: rejection.message.clone(),
        }
    }
}

impl<I: Iterator<Item = StageItem>> Iterator for V0ToV1<I> {
    type Item = StageItem;

    fn next(&mut self) -> Option<StageItem> {
        let staged = match self.input.next()? {
            Ok(staged) => staged,
            Err(error) => return Some(Err(error)),
        };
        Some(self.convert(staged))
    }
}
