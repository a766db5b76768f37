//! The v2→v3 edge, as upstream's released chain writes it (docs/migration.md, "v2 → v3"): the
//! system prompt becomes a protected surface head, the envelope becomes canonical.
//!
//! - An empty `system/message` head is written right after the log's first `step/start`; each
//!   `request/header` whose prompt (`header.system`, `""` when absent or not text) differs from
//!   the current one gets a `system/message` replacing the head written right before it. A
//!   generated message takes the open step's `turn`/`step`, its anchor's time, and the id
//!   `v2-to-v3-system-<sha256 hex of ["session-format-v2-to-v3", headerId, anchorSeq,
//!   anchorType]>`. The prompt leaves the header.
//! - Refused as upstream refuses (ids in docs/migration.md): a surface event before the first
//!   step, a prompt change outside an open step, id collisions with generated ids, an
//!   unclassified event type, an assistant message that still cites chunks, an invalid
//!   request reason, a `tool/result` with `error` not marked `isError`.
//! - Replace endpoints are spelled `{op, startSeq, endSeq}`; `tool/code-dispatch*` becomes
//!   `tool/ptc-dispatch*`, the `code` preset `ptc`, and the plugin `tools-code-mode`
//!   `tools-ptc` (user messages, inbox insertions, title requests); exactly-empty `tools` and
//!   `adapterDefaults` leave the header.
//!
//! Seqs are renumbered densely (the inserted system messages take seqs) and every reference is
//! remapped. State: the seq map, the open step, the head and its prompt, and the source ids
//! that look like generated ids (bounded by what the log holds of that prefix).

use std::collections::{HashSet, VecDeque};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use strata_core::{EventType, Generation};

use super::error::MigrateError;
use super::refusal::Refusal;
use super::remap::{remap_references, SeqMap, Unmapped};
use super::stage::{StageContext, StageItem, Staged};

const EDGE: &str = "v2→v3";

/// The plugin name dsh's agent loop gives its system messages.
pub const SYSTEM_PROMPT_PLUGIN: &str = "@deepseek-ai/dsh-system-prompt";

/// The prefix of the ids the edge gives the system messages it writes.
pub const SYSTEM_ID_PREFIX: &str = "v2-to-v3-system-";

const SURFACE_TYPES: [&str; 3] = ["user/message", "assistant/message", "tool/result"];

/// The order in which dsh's released V3 codec writes header keys (after `type`): see
/// docs/migration.md, "Header".
pub const HEADER_KEY_ORDER: [&str; 9] = [
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "isSeeded",
    "origin",
    "delegationDepth",
    "agentPreset",
];

/// The v3 header: `version: 3`, the `code` preset renamed `ptc`, keys in
/// [`HEADER_KEY_ORDER`] (any other key after them, in its order).
pub fn header(mut header: Map<String, Value>) -> Map<String, Value> {
    header.insert("version".into(), Value::from(3));
    if header.get("agentPreset").and_then(Value::as_str) == Some("code") {
        header.insert("agentPreset".into(), Value::from("ptc"));
    }
    let mut ordered = Map::new();
    for key in HEADER_KEY_ORDER {
        if let Some(value) = header.shift_remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    ordered.extend(header);
    ordered
}

/// The v2→v3 edge over a stream of v2 events.
pub struct V2ToV3<I> {
    input: I,
    context: StageContext,
    map: SeqMap,
    next_out: u64,
    n_input: u64,
    /// Output seq of the current system head, once written.
    head: Option<u64>,
    /// The prompt the head holds (initially empty).
    prompt: String,
    /// The open step's `turn` and `step`.
    open_step: Option<(Value, Value)>,
    /// Generated system ids, and source message ids with the generated prefix.
    generated_ids: HashSet<String>,
    source_ids: HashSet<String>,
    out: VecDeque<Staged>,
    done: bool,
    /// Whether this edge refused: later calls only drain the input, so that the refusals of
    /// the hop before it (see `artifact`) are still found, and yield nothing but its errors.
    refused: bool,
}

impl<I: Iterator<Item = StageItem>> V2ToV3<I> {
    /// Wraps a stream of v2 events.
    pub fn new(input: I, context: StageContext) -> V2ToV3<I> {
        V2ToV3 {
            input,
            context,
            map: SeqMap::default(),
            next_out: 0,
            n_input: 0,
            head: None,
            prompt: String::new(),
            open_step: None,
            generated_ids: HashSet::new(),
            source_ids: HashSet::new(),
            out: VecDeque::new(),
            done: false,
            refused: false,
        }
    }

    fn refuse(&self, staged: &Staged, refusal: Refusal, text: String) -> MigrateError {
        MigrateError::Refused {
            at: self.context.at(staged),
            refusal,
            text,
        }
    }

    /// Upstream's id for the system message anchored at v2 seq `anchor_seq` of `anchor_type`.
    fn system_id(&self, anchor_seq: u64, anchor_type: &str) -> String {
        let key = Value::Array(vec![
            Value::from("session-format-v2-to-v3"),
            Value::from(&*self.context.session_id),
            Value::from(anchor_seq),
            Value::from(anchor_type),
        ]);
        let digest = Sha256::digest(strata_core::json::to_js_string(&key).as_bytes());
        let mut id = String::with_capacity(SYSTEM_ID_PREFIX.len() + 64);
        id.push_str(SYSTEM_ID_PREFIX);
        for byte in digest {
            id.push_str(&format!("{byte:02x}"));
        }
        id
    }

    /// Writes a system message anchored at `anchor` (the head after the first `step/start`,
    /// or a replacement of the head before a prompt-changing header).
    fn emit_system(&mut self, anchor: &Staged, prompt: String) -> Result<(), MigrateError> {
        let (turn, step) = self
            .open_step
            .clone()
            .unwrap_or((Value::from(0), Value::from(0)));
        let id = self.system_id(anchor.seq().unwrap_or(0), anchor.event_type());
        if self.source_ids.contains(&id) || !self.generated_ids.insert(id.clone()) {
            return Err(self.refuse(
                anchor,
                Refusal::GeneratedIdCollision,
                "generated system message id collides with an existing message id".into(),
            ));
        }
        let content = if prompt.is_empty() {
            json!([])
        } else {
            json!([{"type": "text", "text": prompt}])
        };
        let mut event = Map::new();
        event.insert("type".into(), Value::from("system/message"));
        event.insert("seq".into(), Value::from(self.next_out));
        event.insert(
            "time".into(),
            anchor.event.get("time").cloned().unwrap_or(Value::from(0)),
        );
        event.insert(
            "data".into(),
            json!({
                "turn": turn,
                "step": step,
                "message": {
                    "id": id,
                    "role": "system",
                    "source": {"kind": "plugin", "plugin": SYSTEM_PROMPT_PLUGIN},
                    "content": content,
                }
            }),
        );
        match self.head {
            Some(head) => {
                event.insert(
                    "surfaceOp".into(),
                    json!({"op": "replace", "startSeq": head, "endSeq": head}),
                );
                event.insert("sourceEventSeqs".into(), json!([head]));
            }
            None => {
                event.insert("surfaceOp".into(), Value::from("append"));
            }
        }
        self.head = Some(self.next_out);
        self.prompt = prompt;
        self.next_out += 1;
        self.out.push_back(Staged {
            line: anchor.line,
            source_seq: None,
            event,
        });
        Ok(())
    }

    fn emit_kept(&mut self, mut staged: Staged) -> Result<(), MigrateError> {
        remap_references(&mut staged.event, &self.map, ("start", "end")).map_err(|bad| {
            MigrateError::Reference {
                at: self.context.at(&staged),
                edge: EDGE,
                field: bad.field,
                target: bad.target,
                reason: match bad.reason {
                    Unmapped::Consumed => "it names an event the edge dropped",
                    Unmapped::NotEarlier | Unmapped::NotASeq => "it does not name an earlier event",
                },
            }
        })?;
        if let Some(Value::Object(op)) = staged.event.get_mut("surfaceOp") {
            if op.contains_key("start") || op.contains_key("end") {
                let start = op.get("start").cloned().unwrap_or(Value::Null);
                let end = op.get("end").cloned().unwrap_or(Value::Null);
                let op_value = op.get("op").cloned().unwrap_or(Value::Null);
                op.clear();
                op.insert("op".into(), op_value);
                op.insert("startSeq".into(), start);
                op.insert("endSeq".into(), end);
            }
        }
        if let Some(input) = staged.seq() {
            self.map.keep(input, self.next_out);
        }
        staged
            .event
            .insert("seq".into(), Value::from(self.next_out));
        self.next_out += 1;
        self.out.push_back(staged);
        Ok(())
    }

    /// The source audit of the edge (the parts strata reproduces; docs/migration.md).
    fn audit(&mut self, staged: &Staged) -> Result<(), MigrateError> {
        let tag = staged.event_type();
        let seq = staged.seq().unwrap_or(0);
        let known = EventType::parse(tag).is_known_in(Generation::V2)
            || matches!(tag, "feedback/message-put" | "feedback/message-delete");
        if !known {
            return Err(self.refuse(
                staged,
                Refusal::UnclassifiedEvent,
                format!("format v2 to v3 cannot safely transform unclassified event {tag}"),
            ));
        }
        if tag == "assistant/message" && staged.event.contains_key("sourceEventSeqs") {
            return Err(self.refuse(
                staged,
                Refusal::ObsoleteChunkProvenance,
                format!("assistant/message {seq} retains obsolete chunk provenance"),
            ));
        }
        let data = staged.event.get("data");
        if tag == "request/header" {
            let reason_ok = matches!(
                data.and_then(|data| data.get("reason"))
                    .and_then(Value::as_str),
                Some("initial" | "resume" | "change" | "series")
            );
            if !reason_ok {
                return Err(self.refuse(
                    staged,
                    Refusal::RequestReason,
                    format!(
                        "request/header {seq} reason must be one of initial, resume, change, series"
                    ),
                ));
            }
        }
        for message in messages_of(tag, data) {
            if let Some(kind) = message
                .get("source")
                .and_then(|source| source.get("kind"))
                .and_then(Value::as_str)
            {
                if !SOURCE_KINDS.contains(&kind) {
                    return Err(self.refuse(
                        staged,
                        Refusal::UnclassifiedSource,
                        "cannot safely transform unclassified message source".into(),
                    ));
                }
            }
        }
        // Message-id collisions with the ids this edge generates.
        for message in messages_of(tag, data) {
            if let Some(id) = message.get("id").and_then(Value::as_str) {
                if id.starts_with(SYSTEM_ID_PREFIX) {
                    if self.generated_ids.contains(id) {
                        return Err(self.refuse(
                            staged,
                            Refusal::SourceIdCollision,
                            "source message id collides with a generated system message id".into(),
                        ));
                    }
                    self.source_ids.insert(id.to_owned());
                }
            }
        }
        Ok(())
    }

    fn on_event(&mut self, mut staged: Staged) -> Result<(), MigrateError> {
        self.n_input += 1;
        self.audit(&staged)?;
        let tag = staged.event_type().to_owned();
        let seq = staged.seq().unwrap_or(0);
        if tag == "request/header" {
            let prompt = match staged
                .event
                .get("data")
                .and_then(|data| data.get("header"))
                .and_then(|header| header.get("system"))
            {
                Some(Value::String(text)) => text.clone(),
                _ => String::new(),
            };
            if prompt != self.prompt {
                if self.open_step.is_none() {
                    return Err(self.refuse(
                        &staged,
                        Refusal::PromptChangeOutsideStep,
                        "format v2 changed request prompt outside an open step cannot retain \
                         source chronology"
                            .into(),
                    ));
                }
                self.emit_system(&staged, prompt)?;
            }
        }
        if self.head.is_none() && SURFACE_TYPES.contains(&tag.as_str()) {
            return Err(self.refuse(
                &staged,
                Refusal::SurfaceBeforeFirstStep,
                "format v2 surface before first step cannot acquire a system head without \
                 changing chronology"
                    .into(),
            ));
        }
        rename_and_canonicalize(&tag, &mut staged.event);
        if tag == "tool/result" && !error_result_is_marked(&staged.event) {
            return Err(self.refuse(
                &staged,
                Refusal::ErrorWithoutIsError,
                format!(
                    "format v3 tool/result at seq {} carries error metadata for a non-error tool result",
                    self.next_out
                ),
            ));
        }
        let anchor = staged.clone();
        let _ = seq;
        self.emit_kept(staged)?;
        match tag.as_str() {
            "step/start" => {
                let field = |key: &str| {
                    anchor
                        .event
                        .get("data")
                        .and_then(|data| data.get(key))
                        .cloned()
                        .unwrap_or(Value::Null)
                };
                self.open_step = Some((field("turn"), field("step")));
                if self.head.is_none() {
                    self.emit_system(&anchor, String::new())?;
                }
            }
            "step/end" | "turn/end" => self.open_step = None,
            _ => {}
        }
        Ok(())
    }
}

/// The message source kinds upstream's v2→v3 audit classifies.
const SOURCE_KINDS: [&str; 15] = [
    "user",
    "plugin",
    "model",
    "tool",
    "agent-instructions",
    "session-reference",
    "team-message",
    "goal",
    "skill-invocation",
    "skill-catalog",
    "coordinator",
    "subagent-report",
    "subagent-settled",
    "webhook",
    "agent-message",
];

/// The messages an event of `tag` carries (the five message slots).
fn messages_of<'a>(tag: &str, data: Option<&'a Value>) -> Vec<&'a Value> {
    let Some(data) = data else {
        return Vec::new();
    };
    match tag {
        "user/message" => vec![data],
        "assistant/message" | "tool/result" => data.get("message").into_iter().collect(),
        "agent/inbox/spliced" => data
            .get("inserted")
            .and_then(Value::as_array)
            .map(|items| items.iter().collect())
            .unwrap_or_default(),
        "session/title-llm-request" => data
            .get("messages")
            .and_then(Value::as_array)
            .map(|items| items.iter().collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The renames and canonical spellings of the edge (docs/migration.md, "v2 → v3" step 9).
pub(super) fn rename_and_canonicalize(tag: &str, event: &mut Map<String, Value>) {
    match tag {
        "tool/code-dispatch" => {
            event.insert("type".into(), Value::from("tool/ptc-dispatch"));
        }
        "tool/code-dispatch-start" => {
            event.insert("type".into(), Value::from("tool/ptc-dispatch-start"));
        }
        _ => {}
    }
    let Some(Value::Object(data)) = event.get_mut("data") else {
        return;
    };
    match tag {
        "agent-preset/selected"
            if data.get("agentPreset").and_then(Value::as_str) == Some("code") =>
        {
            data.insert("agentPreset".into(), Value::from("ptc"));
        }
        "request/header" => {
            if let Some(Value::Object(header)) = data.get_mut("header") {
                header.shift_remove("system");
                if matches!(header.get("tools"), Some(Value::Array(tools)) if tools.is_empty()) {
                    header.shift_remove("tools");
                }
                if matches!(header.get("adapterDefaults"), Some(Value::Object(map)) if map.is_empty())
                {
                    header.shift_remove("adapterDefaults");
                }
            }
        }
        "user/message" => rename_ptc_plugin(data),
        "agent/inbox/spliced" | "session/title-llm-request" => {
            let key = if tag == "agent/inbox/spliced" {
                "inserted"
            } else {
                "messages"
            };
            if let Some(Value::Array(messages)) = data.get_mut(key) {
                for message in messages {
                    if let Value::Object(message) = message {
                        rename_ptc_plugin(message);
                    }
                }
            }
        }
        _ => {}
    }
}

/// `source.plugin` `tools-code-mode` → `tools-ptc` for a plugin source.
fn rename_ptc_plugin(message: &mut Map<String, Value>) {
    if let Some(Value::Object(source)) = message.get_mut("source") {
        if source.get("kind").and_then(Value::as_str) == Some("plugin")
            && source.get("plugin").and_then(Value::as_str) == Some("tools-code-mode")
        {
            source.insert("plugin".into(), Value::from("tools-ptc"));
        }
    }
}

/// A `tool/result` with `error` must hold exactly one `tool-result` block with
/// `isError: true` (V3's rule; the edge refuses, it does not repair).
fn error_result_is_marked(event: &Map<String, Value>) -> bool {
    let Some(data) = event.get("data") else {
        return true;
    };
    if data.get("error").is_none() {
        return true;
    }
    match data
        .get("message")
        .and_then(|message| message.get("content"))
        .and_then(Value::as_array)
    {
        Some(blocks) if blocks.len() == 1 => {
            blocks[0].get("type").and_then(Value::as_str) == Some("tool-result")
                && blocks[0].get("isError") == Some(&Value::Bool(true))
        }
        _ => false,
    }
}

impl<I: Iterator<Item = StageItem>> Iterator for V2ToV3<I> {
    type Item = StageItem;

    fn next(&mut self) -> Option<StageItem> {
        if self.refused {
            return self.input.by_ref().find(Result::is_err);
        }
        loop {
            if let Some(staged) = self.out.pop_front() {
                return Some(Ok(staged));
            }
            if self.done {
                return None;
            }
            let step = match self.input.next() {
                Some(Ok(staged)) => self.on_event(staged),
                Some(Err(error)) => {
                    self.done = true;
                    self.out.clear();
                    return Some(Err(error));
                }
                None => {
                    self.done = true;
                    Ok(())
                }
            };
            if let Err(error) = step {
                self.done = true;
                self.refused = true;
                self.out.clear();
                return Some(Err(error));
            }
        }
    }
}
