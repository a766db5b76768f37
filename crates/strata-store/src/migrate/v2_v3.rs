//! The v2→v3 edge: the system prompt becomes surface node 0 and the envelope becomes canonical
//! (session-core §0, §7.3, §12; persistence §2.10).
//!
//! - The prompt leaves `request/header.header.system`: a `system/message` with the first
//!   header's prompt (empty content when there is none) is written just before the log's first
//!   surface event, so it is node 0; when a later header changes the prompt, a `system/message`
//!   replacing that node (`{op:"replace", startSeq: n, endSeq: n}`, `sourceEventSeqs: [n]`) is
//!   written just before that header. Finding the first header's prompt needs a look-ahead from
//!   the first surface event to the first header, bounded by [`LOOKAHEAD_LIMIT`]; past it the
//!   head starts empty and the header's prompt arrives as a replacement.
//! - Replace endpoints are spelled `{op, startSeq, endSeq}`; `tool/code-dispatch*` becomes
//!   `tool/ptc-dispatch*` and the `code` preset `ptc`.
//! - Request headers become canonical: no `system`, no empty `tools`/`adapterDefaults`, a
//!   `reason` among initial/resume/change/series (an older or missing reason becomes `initial`
//!   for the first header and `change` after), `startsSeries` only when `true`.
//! - A tool result with `error` is marked `isError: true` on its result block (v3 requires it).
//!
//! Seqs are renumbered densely (the inserted system messages take seqs) and every reference is
//! remapped.

use std::collections::VecDeque;

use serde_json::{json, Map, Value};

use super::error::MigrateError;
use super::remap::{remap_references, SeqMap, Unmapped};
use super::stage::{StageContext, StageItem, Staged};

const EDGE: &str = "v2→v3";

/// The plugin name dsh's agent loop gives its system messages.
pub const SYSTEM_PROMPT_PLUGIN: &str = "@deepseek-ai/dsh-system-prompt";

/// How many events the edge may hold while looking for the first prompt.
pub const LOOKAHEAD_LIMIT: usize = 4096;

const SURFACE_TYPES: [&str; 3] = ["user/message", "assistant/message", "tool/result"];

/// The v3 header: `version: 3`, the `code` preset renamed `ptc`.
pub fn header(mut header: Map<String, Value>) -> Map<String, Value> {
    header.insert("version".into(), Value::from(3));
    if header.get("agentPreset").and_then(Value::as_str) == Some("code") {
        header.insert("agentPreset".into(), Value::from("ptc"));
    }
    header
}

/// The v2→v3 edge over a stream of v2 events.
pub struct V2ToV3<I> {
    input: I,
    context: StageContext,
    map: SeqMap,
    next_out: u64,
    /// Output seq of the current system node, once written.
    head: Option<u64>,
    /// The prompt text the current system node holds.
    head_prompt: String,
    /// The prompt of the latest header seen before the head exists.
    prompt: Option<String>,
    seen_header: bool,
    /// Events held while looking for the first prompt; processed once it is known.
    held: VecDeque<Staged>,
    turn: Value,
    step: Value,
    out: VecDeque<Staged>,
    input_done: bool,
    failed: bool,
}

impl<I: Iterator<Item = StageItem>> V2ToV3<I> {
    /// Wraps a stream of v2 events.
    pub fn new(input: I, context: StageContext) -> V2ToV3<I> {
        V2ToV3 {
            input,
            context,
            map: SeqMap::default(),
            next_out: 0,
            head: None,
            head_prompt: String::new(),
            prompt: None,
            seen_header: false,
            held: VecDeque::new(),
            turn: Value::from(0),
            step: Value::from(0),
            out: VecDeque::new(),
            input_done: false,
            failed: false,
        }
    }

    fn unsupported(&self, staged: &Staged, detail: String) -> MigrateError {
        MigrateError::Unsupported {
            at: self.context.at(staged),
            edge: EDGE,
            detail,
        }
    }

    /// The prompt text of a request header, or an error for a prompt that is not text.
    fn header_prompt(&self, staged: &Staged) -> Result<String, MigrateError> {
        let system = staged
            .event
            .get("data")
            .and_then(|data| data.get("header"))
            .and_then(|header| header.get("system"));
        match system {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(text)) => Ok(text.clone()),
            Some(other) => Err(self.unsupported(
                staged,
                format!("request/header system prompt is not text: {other}"),
            )),
        }
    }

    fn system_message(&self, seq: u64, prompt: &str) -> Value {
        let content = if prompt.is_empty() {
            json!([])
        } else {
            json!([{"type": "text", "text": prompt}])
        };
        json!({
            "turn": self.turn,
            "step": self.step,
            "message": {
                "id": format!("migrated-system-prompt:{}:{seq}", self.context.session_id),
                "role": "system",
                "source": {"kind": "plugin", "plugin": SYSTEM_PROMPT_PLUGIN},
                "content": content,
            }
        })
    }

    /// Writes a system node before `before` (the head, or a replacement of the head).
    fn emit_system(&mut self, before: &Staged, prompt: String) {
        let seq = self.next_out;
        let mut event = Map::new();
        event.insert("type".into(), Value::from("system/message"));
        event.insert("seq".into(), Value::from(seq));
        event.insert(
            "time".into(),
            before.event.get("time").cloned().unwrap_or(Value::from(0)),
        );
        event.insert("data".into(), self.system_message(seq, &prompt));
        match self.head {
            Some(head) => {
                event.insert("sourceEventSeqs".into(), json!([head]));
                event.insert(
                    "surfaceOp".into(),
                    json!({"op": "replace", "startSeq": head, "endSeq": head}),
                );
            }
            None => {
                event.insert("surfaceOp".into(), Value::from("append"));
            }
        }
        self.next_out += 1;
        self.head = Some(seq);
        self.head_prompt = prompt;
        self.out.push_back(Staged {
            line: before.line,
            source_seq: None,
            event,
        });
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
                    Unmapped::NotEarlier => "it does not name an earlier event",
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

    /// Processes one event whose prompt context is settled.
    fn process(&mut self, mut staged: Staged) -> Result<(), MigrateError> {
        let tag = staged.event_type().to_owned();
        match tag.as_str() {
            "turn/start" => {
                if let Some(turn) = staged.event.get("data").and_then(|data| data.get("turn")) {
                    self.turn = turn.clone();
                }
                self.step = Value::from(0);
            }
            "step/start" => {
                if let Some(step) = staged.event.get("data").and_then(|data| data.get("step")) {
                    self.step = step.clone();
                }
            }
            "request/header" => {
                let prompt = self.header_prompt(&staged)?;
                if self.head.is_some() {
                    if prompt != self.head_prompt {
                        self.emit_system(&staged, prompt);
                    }
                } else {
                    self.prompt = Some(prompt);
                }
                let first = !self.seen_header;
                self.seen_header = true;
                if let Some(Value::Object(data)) = staged.event.get_mut("data") {
                    canonical_request_header(data, first);
                }
            }
            "tool/code-dispatch" => {
                staged
                    .event
                    .insert("type".into(), Value::from("tool/ptc-dispatch"));
            }
            "tool/code-dispatch-start" => {
                staged
                    .event
                    .insert("type".into(), Value::from("tool/ptc-dispatch-start"));
            }
            "agent-preset/selected" => {
                if let Some(Value::Object(data)) = staged.event.get_mut("data") {
                    if data.get("agentPreset").and_then(Value::as_str) == Some("code") {
                        data.insert("agentPreset".into(), Value::from("ptc"));
                    }
                }
            }
            "tool/result" => mark_error_result(&mut staged.event),
            _ => {}
        }
        if self.head.is_none() && SURFACE_TYPES.contains(&tag.as_str()) {
            let prompt = self.prompt.clone().unwrap_or_default();
            self.emit_system(&staged, prompt);
        }
        self.emit_kept(staged)
    }

    /// Holds events from the first surface event until the first header's prompt is known.
    fn needs_lookahead(&self, staged: &Staged) -> bool {
        self.head.is_none()
            && !self.seen_header
            && (!self.held.is_empty() || SURFACE_TYPES.contains(&staged.event_type()))
    }

    fn release_held(&mut self) -> Result<(), MigrateError> {
        if let Some(header) = self
            .held
            .iter()
            .find(|staged| staged.event_type() == "request/header")
        {
            let prompt = self.header_prompt(header)?;
            self.prompt = Some(prompt);
        }
        while let Some(staged) = self.held.pop_front() {
            self.process(staged)?;
        }
        Ok(())
    }

    fn on_event(&mut self, staged: Staged) -> Result<(), MigrateError> {
        if self.needs_lookahead(&staged) {
            let is_header = staged.event_type() == "request/header";
            self.held.push_back(staged);
            if is_header || self.held.len() >= LOOKAHEAD_LIMIT {
                self.release_held()?;
            }
            return Ok(());
        }
        self.process(staged)
    }
}

/// Makes a v2 request header canonical for v3 (session-core §5.3, §7.2).
fn canonical_request_header(data: &mut Map<String, Value>, first: bool) {
    if let Some(Value::Object(header)) = data.get_mut("header") {
        header.shift_remove("system");
        if matches!(header.get("tools"), Some(Value::Array(tools)) if tools.is_empty()) {
            header.shift_remove("tools");
        }
        if matches!(header.get("adapterDefaults"), Some(Value::Object(map)) if map.is_empty()) {
            header.shift_remove("adapterDefaults");
        }
    }
    let valid_reason = matches!(
        data.get("reason").and_then(Value::as_str),
        Some("initial" | "resume" | "change" | "series")
    );
    if !valid_reason {
        let reason = if first { "initial" } else { "change" };
        data.insert("reason".into(), Value::from(reason));
    }
    if data.contains_key("startsSeries") && data.get("startsSeries") != Some(&Value::Bool(true)) {
        data.shift_remove("startsSeries");
    }
}

/// v3 requires `error` ⇒ `message.content[0].isError === true` (session-core §5.3).
fn mark_error_result(event: &mut Map<String, Value>) {
    let Some(Value::Object(data)) = event.get_mut("data") else {
        return;
    };
    if !data.contains_key("error") {
        return;
    }
    if let Some(Value::Object(block)) = data
        .get_mut("message")
        .and_then(|message| message.get_mut("content"))
        .and_then(|content| content.get_mut(0))
    {
        if block.get("isError") != Some(&Value::Bool(true)) {
            block.insert("isError".into(), Value::Bool(true));
        }
    }
}

impl<I: Iterator<Item = StageItem>> Iterator for V2ToV3<I> {
    type Item = StageItem;

    fn next(&mut self) -> Option<StageItem> {
        loop {
            if let Some(staged) = self.out.pop_front() {
                return Some(Ok(staged));
            }
            if self.failed || (self.input_done && self.held.is_empty()) {
                return None;
            }
            let step = match self.input.next() {
                Some(Ok(staged)) => self.on_event(staged),
                Some(Err(error)) => Err(error),
                None => {
                    self.input_done = true;
                    self.release_held()
                }
            };
            if let Err(error) = step {
                self.failed = true;
                self.out.clear();
                return Some(Err(error));
            }
        }
    }
}
