//! The v0→v1 edge, as upstream's released chain writes it (docs/migration.md, "v0 → v1"): v1
//! is an identity re-label of v0 plus bounded normalizations.
//!
//! Per event, in order: the upgrades of the v0 restore path (pre-react-loop `turn/start`
//! triggers and `turn/end` reasons, `steering/message`, pre-identity message payloads), the
//! historical `compact/*` → `compaction/*` rename, the id of an `llm/retry` without `retryId`
//! (one per retry chain: turn, step, provider, policyKey; an `llm/retry-started` is never given
//! one and is refused without it), the open compaction's id for a bracket event or checkpoint
//! message without one (only while a `compaction/start` is open; `session/end-seed` forgets
//! it), and dropping `request/header.header.messagePrefix` (refused when it is not an array).
//! The first-party vocabulary is closed here: a type the v0 build does not know refuses the
//! migration even when it is `ignorable`.
//!
//! Seqs are unchanged (one event in, one event out); the state is the upgrader's message ids,
//! the open compaction's id and the id of each retry chain.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::error::MigrateError;
use super::payload_audit::{self, AuditError};
use super::refusal::Refusal;
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
    /// The id of each retry chain seen, keyed by its (turn, step, provider, policyKey).
    retry_chains: HashMap<String, String>,
}

impl<I: Iterator<Item = StageItem>> V0ToV1<I> {
    /// Wraps a stream of validated v0 events.
    pub fn new(input: I, context: StageContext) -> V0ToV1<I> {
        V0ToV1 {
            upgrader: Upgrader::new(&context.session_id),
            input,
            context,
            open_compaction: None,
            retry_chains: HashMap::new(),
        }
    }

    fn convert(&mut self, mut staged: Staged) -> StageItem {
        if let Some((refusal, text)) = self.retired(&staged) {
            return Err(MigrateError::Refused {
                at: self.context.at(&staged),
                refusal,
                text,
            });
        }
        if let Some(text) = normalizer_members(&staged) {
            return Err(MigrateError::Refused {
                at: self.context.at(&staged),
                refusal: Refusal::PayloadShape,
                text,
            });
        }
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
            self.complete_ids(&staged, &tag, data, &seq_text)?;
        }
        // The payload audit (docs/migration.md, "v0 → v1" step 10).
        if tag != "assistant/chunk" {
            self.audit(&staged, &tag, &event, &seq_text)?;
        }
        staged.event = event;
        Ok(staged)
    }

    /// Upstream's id completion of v0 → v1: a retry chain's `retryId`, a compaction's
    /// `compactionId` (and the checkpoint's inside its bracket), minted where the log has none;
    /// a `request/header`'s empty `messagePrefix` dropped. What it cannot complete refuses.
    fn complete_ids(
        &mut self,
        staged: &Staged,
        tag: &str,
        data: &mut Map<String, Value>,
        seq_text: &str,
    ) -> Result<(), MigrateError> {
        match tag {
            "llm/retry" => {
                // One id per retry chain (turn, step, provider, policyKey), minted at the
                // chain's first id-less retry and reused by its later ones.
                let chain = Value::Array(
                    ["turn", "step", "provider", "policyKey"]
                        .iter()
                        .map(|key| data.get(*key).cloned().unwrap_or(Value::Null))
                        .collect(),
                );
                let chain = strata_core::json::to_js_string(&chain);
                match data.get("retryId") {
                    Some(Value::String(id)) if !id.is_empty() => {
                        self.retry_chains.insert(chain, id.clone());
                    }
                    Some(_) => {}
                    None => {
                        let id = self
                            .retry_chains
                            .entry(chain)
                            .or_insert_with(|| {
                                format!("legacy-retry:{}:{seq_text}", self.context.session_id)
                            })
                            .clone();
                        data.insert("retryId".into(), Value::from(id));
                    }
                }
            }
            "llm/retry-started" if !data.contains_key("retryId") => {
                return Err(MigrateError::Refused {
                    at: self.context.at(staged),
                    refusal: Refusal::RetryStartedWithoutId,
                    text: format!(
                        "llm/retry-started {seq_text} data lacks required member \"retryId\""
                    ),
                });
            }
            "session/end-seed" => self.open_compaction = None,
            "compaction/start" => {
                let id = match data.get("compactionId") {
                    Some(Value::String(id)) if !id.is_empty() => Value::from(id.clone()),
                    _ => {
                        let id = Value::from(format!(
                            "legacy-compaction:{}:{seq_text}",
                            self.context.session_id
                        ));
                        data.insert("compactionId".into(), id.clone());
                        id
                    }
                };
                self.open_compaction = Some(id);
            }
            "compaction/summary" | "compaction/end" => {
                if let (false, Some(id)) =
                    (data.contains_key("compactionId"), &self.open_compaction)
                {
                    data.insert("compactionId".into(), id.clone());
                }
                if tag == "compaction/end" {
                    self.open_compaction = None;
                }
            }
            "user/message" => {
                if let (Some(Value::Object(source)), Some(id)) =
                    (data.get_mut("source"), &self.open_compaction)
                {
                    let compact = source.get("kind").and_then(Value::as_str) == Some("plugin")
                        && source.get("plugin").and_then(Value::as_str) == Some("compact");
                    if compact && !source.contains_key("compactionId") {
                        source.insert("compactionId".into(), id.clone());
                    }
                }
            }
            "request/header" => {
                if let Some(Value::Object(header)) = data.get_mut("header") {
                    match header.get("messagePrefix") {
                        None | Some(Value::Array(_)) => {
                            header.shift_remove("messagePrefix");
                        }
                        Some(_) => {
                            return Err(MigrateError::Refused {
                                at: self.context.at(staged),
                                refusal: Refusal::MessagePrefixNotArray,
                                text: format!(
                                    "session {} contains malformed request/header messagePrefix at seq {seq_text}",
                                    strata_core::json::to_js_string(&Value::from(
                                        &*self.context.session_id
                                    ))
                                ),
                            });
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The payload audit of one converted event, its failures sorted into refusals.
    fn audit(
        &self,
        staged: &Staged,
        tag: &str,
        event: &Map<String, Value>,
        seq_text: &str,
    ) -> Result<(), MigrateError> {
        let seq = staged.source_seq.unwrap_or_default();
        let refused = |refusal, text| MigrateError::Refused {
            at: self.context.at(staged),
            refusal,
            text,
        };
        match payload_audit::audit(tag, seq, event.get("data"), 0) {
            Ok(()) => {}
            Err(AuditError::UnknownType) => {
                let shown = payload_audit::shown_type(event.get("type"));
                return Err(refused(
                    Refusal::UnknownHistoricalType,
                    format!(
                        "format v0 contains unknown historical event type {shown} at seq \
                         {seq_text}; migration refuses unknown historical events even when \
                         ignorable"
                    ),
                ));
            }
            Err(AuditError::DescriptorVersion(version)) => {
                return Err(refused(
                    Refusal::DescriptorVersion,
                    format!("{tag} {seq_text} uses unsupported descriptor version {version}"),
                ));
            }
            Err(AuditError::Rule(text)) => {
                let refusal = if text.ends_with("data must be a JSON object") {
                    Refusal::DataNotObject
                } else {
                    Refusal::PayloadShape
                };
                return Err(refused(refusal, text));
            }
        }
        Ok(())
    }

    /// Upstream's step 2: the retired `request/header-delta` and `mode/set` events and the
    /// retired `fallback` request reason refuse the migration.
    fn retired(&self, staged: &Staged) -> Option<(Refusal, String)> {
        let tag = staged.event_type();
        let seq = staged
            .source_seq
            .map_or_else(|| "undefined".to_owned(), |seq| seq.to_string());
        let session = strata_core::json::to_js_string(&Value::from(&*self.context.session_id));
        match tag {
            "request/header-delta" | "mode/set" => Some((
                Refusal::RetiredEvent,
                format!("session {session} contains unsupported legacy {tag} event at seq {seq}"),
            )),
            "request/header" => match staged.event.get("data") {
                Some(Value::Object(data)) => (data.get("reason") == Some(&Value::from("fallback")))
                    .then(|| {
                        (
                            Refusal::RetiredEvent,
                            format!(
                                "session {session} contains unsupported request/header reason \
                                 \"fallback\" at seq {seq}"
                            ),
                        )
                    }),
                _ => Some((
                    Refusal::DataNotObject,
                    format!("request/header {seq} data must be a JSON object"),
                )),
            },
            _ => None,
        }
    }

    fn unsupported(&self, staged: &Staged, rejection: &Rejection) -> MigrateError {
        MigrateError::Unsupported {
            at: self.context.at(staged),
            edge: EDGE,
            detail: rejection.message.clone(),
        }
    }
}

/// The member checks upstream's `turn/end` and `steering/message` normalizers make before they
/// rewrite (docs/migration.md, "v0 → v1" steps 4 and 6), with their texts; what they call
/// malformed is left to the upgrader, which says so in the same words.
fn normalizer_members(staged: &Staged) -> Option<String> {
    use crate::legacy::released_rows::{count, exact_keys};
    let tag = staged.event_type();
    if !matches!(tag, "turn/end" | "steering/message") {
        return None;
    }
    let seq = crate::legacy::js::display(staged.event.get("seq"));
    let label = format!("{tag} {seq}");
    let Some(Value::Object(data)) = staged.event.get("data") else {
        return Some(format!("{label} data must be a JSON object"));
    };
    let data_label = format!("{label} data");
    let required: &[&str] = match tag {
        "turn/end" => &["turn", "reason"],
        _ if data.contains_key("message") => &["turn", "message"],
        _ => &["turn", "content", "source"],
    };
    if let Err(text) = exact_keys(data, required, &[], &data_label) {
        return Some(text);
    }
    if count(data.get("turn")).is_none() {
        return Some(format!("{label} turn must be a non-negative safe integer"));
    }
    if tag != "turn/end" {
        return None;
    }
    let Some(Value::Object(reason)) = data.get("reason") else {
        return Some(format!("{label} reason must be a JSON object"));
    };
    let exact_kind = match reason.get("kind").and_then(Value::as_str) {
        Some("completed" | "blocked" | "max-tokens" | "interrupted" | "disposed") => true,
        Some("aborted") => !reason.contains_key("reason"),
        _ => false,
    };
    if exact_kind {
        return exact_keys(reason, &["kind"], &[], &format!("{label} reason")).err();
    }
    None
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
