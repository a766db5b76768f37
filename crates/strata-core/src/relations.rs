//! The relational admission rules of a V3 log (docs/rules.md, R1–R53) and the system-head
//! rules (S9–S13): what an event must agree with in the events before it.
//!
//! [`Relations`] is the state those rules read: the open turn and step and the next numbers,
//! the tool calls the open step advertised, the open compaction, the current retry chains, the
//! request provider and the protected system head — all bounded — plus the sets that grow with
//! the log because upstream's rules look them up across the whole log: every `command/run`
//! id (R33), every `retryId` and scheduled retry (R23–R26), every PTC sub-call (R28–R32), the
//! seqs of human `user/message` events a title may cite (R37) and of command events (R35).
//! A checkpoint leaves the human messages out ([`Relations::for_checkpoint`]): a resumed
//! session lists those after it and reads an earlier one from its log.
//!
//! [`Relations::check`] judges one accepted-so-far event against the state without changing
//! it and returns the [`Change`] to apply; [`Relations::apply`] commits it. While a batch is
//! open ([`Relations::mark`]) every change to a growing set is journaled, so
//! [`Relations::rollback`] restores the state exactly; the bounded part is copied whole.
//!
//! The rules run only under [`Generation::V3`](crate::Generation::V3); events are judged
//! under upstream's projection (a `system/message` counts as a plugin-source `user/message`,
//! a `tool/ptc-dispatch[-start]` as `tool/code-dispatch[-start]`), so messages name the
//! projected type as upstream's do.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::event::{Event, EventType, SurfaceMeta, SurfaceOp};
use crate::json::{js_display, non_negative_safe_integer, to_js_string};
use crate::rule::{AcceptError, Rule};
use crate::seq::Seq;
use crate::surface::find;

/// The one result V3 accepts for a call announced but never started (`tool/call` missing),
/// whatever closes it (`repair` writes it, R-rules here check it): upstream's format layer refuses any other (`tool/result … is not the
/// exact TOOL_NOT_STARTED repair`). Its message id is `interrupted-tool-result-<callId>-<seq>`.
/// V4's fork writes `forked-tool-result-…` with a text of its own here; a V3 log cannot hold
/// that, so a fork closes a never-started call with this repair too (docs/divergences.md).
pub const TOOL_NOT_STARTED_TEXT: &str = "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.";

mod facts;
mod judge;

use judge::Judging;

pub(crate) use facts::{has_facts, Message as Facts};

/// `JSON.stringify(value)` as a template literal shows it (`undefined` when absent).
fn js_json(value: Option<&Value>) -> String {
    match value {
        None => "undefined".into(),
        Some(Value::Number(_)) => js_display(value.unwrap_or(&Value::Null)),
        Some(other) => to_js_string(other),
    }
}

/// A value as a template literal interpolates it (`${id}`).
fn js_text(value: Option<&Value>) -> String {
    match value {
        None => "undefined".into(),
        Some(value) => js_display(value),
    }
}

/// A hashable key for a JSON value (its compact text).
fn key(value: Option<&Value>) -> String {
    value.map_or_else(|| "undefined".into(), to_js_string)
}

/// `a === b` for two optional JSON primitives (absent equals absent).
fn same(left: Option<&Value>, right: Option<&Value>) -> bool {
    match (left, right) {
        (None, None) => true,
        (Some(Value::Number(_)), Some(Value::Number(_))) => {
            js_display(left.unwrap_or(&Value::Null)) == js_display(right.unwrap_or(&Value::Null))
        }
        (Some(Value::String(a)), Some(Value::String(b))) => a == b,
        (Some(Value::Bool(a)), Some(Value::Bool(b))) => a == b,
        (Some(Value::Null), Some(Value::Null)) => true,
        _ => false,
    }
}

/// Whether `value` is the integer `n` (JavaScript `===`).
fn is_int(value: Option<&Value>, n: u64) -> bool {
    value.and_then(non_negative_safe_integer) == Some(n)
}

/// [`is_int`] of a `turn` or `step` read as a fact.
fn num_is(num: Option<&facts::Num>, n: u64) -> bool {
    num.is_some_and(|num| num.is(n))
}

/// [`js_json`] of a `turn` or `step` read as a fact.
fn num_json(num: Option<&facts::Num>) -> String {
    js_json(num.map(facts::Num::value).as_deref())
}

/// One tool call the open step advertised (an `assistant/message` `tool-call` block) and
/// no `tool/result` has settled yet. A settled call leaves the list, as upstream deletes
/// it from its lifecycle map: its id may be advertised again, and a second result for it
/// has no lifecycle (docs/rules.md, R10 and R14).
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The block's `id`.
    pub id: Value,
    /// The block's `name`.
    pub name: Option<Value>,
    /// The block's raw `arguments` string.
    pub arguments: Option<Value>,
    /// Whether a `tool/call` recorded it as started.
    pub started: bool,
}

/// The compaction bracket open at the end of the log.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenCompaction {
    /// The start's `compactionId`.
    pub compaction_id: Option<Value>,
    /// The start's `sourceCommandId`.
    pub source_command_id: Option<Value>,
    /// The start's owner `turn` (`null` for a manual compaction outside a turn).
    pub turn: Option<Value>,
    /// Whether its `compaction/summary` was recorded.
    pub summary: bool,
}

/// The protected system head and the open step the head rules read (S9–S13).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Head {
    /// The seq of the current system head, when the first surface event was a system append.
    pub head: Option<u64>,
    /// Whether any surface event was accepted.
    pub surface_started: bool,
    /// `turn` and `step` of the last `step/start` not yet closed by `step/end` or `turn/end`
    /// (held as counts: a head state is copied at every step boundary, and a number's `Value`
    /// is a heap string under `arbitrary_precision`).
    pub(crate) open_step: Option<(Option<facts::Num>, Option<facts::Num>)>,
}

/// The state of one retry policy chain of the open turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    /// `(step, provider, policyKey)` of the chain, as JSON texts.
    pub key: (String, String, String),
    /// The chain's latest `retry`.
    pub retry: u64,
    /// The chain's `retryId`.
    pub retry_id: Option<Value>,
}

/// The bounded part of the relational state (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Bounded {
    /// The open turn.
    pub open_turn: Option<u64>,
    /// The number the next `turn/start` must carry.
    pub next_turn: u64,
    /// The open step of the open turn.
    pub open_step: Option<u64>,
    /// The number the next `step/start` must carry.
    pub next_step: u64,
    /// The tool calls advertised in the open step, in advertisement order.
    pub calls: Vec<Call>,
    /// The provider of the latest `request/header` (never reset; shared, as the bounded state
    /// is copied at every turn and step boundary).
    pub provider: Option<Arc<Value>>,
    /// The retry chains of the open turn.
    pub chains: Vec<Chain>,
    /// The open compaction.
    pub compaction: Option<OpenCompaction>,
    /// The system head.
    pub head: Head,
}

impl Default for Bounded {
    fn default() -> Bounded {
        Bounded {
            open_turn: None,
            next_turn: 1,
            open_step: None,
            next_step: 1,
            calls: Vec::new(),
            provider: None,
            chains: Vec::new(),
            compaction: None,
            head: Head::default(),
        }
    }
}

/// A scheduled retry attempt (`llm/retry`), for `llm/retry-started` (R24–R26).
#[derive(Clone, Debug, PartialEq)]
pub struct Scheduled {
    /// Its `turn`.
    pub turn: Option<Value>,
    /// Its `step`.
    pub step: Option<Value>,
    /// Whether a `llm/retry-started` paired it.
    pub started: bool,
}

/// A PTC sub-call start (`tool/ptc-dispatch-start`).
#[derive(Clone, Debug, PartialEq)]
pub struct PtcStart {
    /// Its `rootCallId`.
    pub root: Option<Value>,
    /// Its `parentCallId`.
    pub parent: Option<Value>,
    /// Its `name`.
    pub name: Option<Value>,
    /// Its `arguments`.
    pub arguments: Option<Value>,
    /// Whether a `tool/ptc-dispatch` settled it.
    pub settled: bool,
}

/// The parts of the relational state that grow with the log (see the module docs).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Growing {
    /// Every `command/run` id (R33, R34).
    pub command_ids: HashSet<String>,
    /// Seqs of `command/run` and `command/done` events, ascending (R35).
    pub command_seqs: Vec<u64>,
    /// Every `retryId` of an `llm/retry` (R23).
    pub retry_ids: HashSet<String>,
    /// Every scheduled retry by `(retryId, retry)` (R24–R26).
    pub scheduled: HashMap<(String, u64), Scheduled>,
    /// Seqs of human `user/message` events from [`Growing::human_users_from`] on, ascending
    /// (R37).
    pub human_users: Vec<u64>,
    /// The first seq [`Growing::human_users`] covers. A checkpoint leaves the list out (it
    /// would hold one entry per user turn of the whole log, and a lazy resume would read them
    /// all): a resumed session starts it at the checkpoint, and R37 asks the session's log
    /// about an earlier seq (see [`Relations::check`]'s `older_humans`).
    pub human_users_from: u64,
    /// The root of every PTC sub-call seen (R28, R29).
    pub ptc_roots: HashMap<String, String>,
    /// Every PTC start by sub-call id (R30–R32).
    pub ptc_starts: HashMap<String, PtcStart>,
    /// V4: the tools each `request/header` (by seq) defines once, with a string description and
    /// object parameters — what a developer message's additions may bind to (N-DEV-4).
    pub header_tools: HashMap<u64, Vec<String>>,
    /// V4: the child ids the `subagent/catalog` events after the last inherited end-seed name
    /// (N-REL-CAT: each child once among the session's own catalog facts).
    pub catalog_children: HashSet<String>,
}

/// One journaled change to the growing sets, undone on rollback.
#[derive(Clone, Debug)]
enum Undo {
    CommandId(String),
    CommandSeq,
    RetryId(String),
    Scheduled((String, u64), Option<Scheduled>),
    HumanUser,
    PtcRoot(String, Option<String>),
    PtcStart(String, Option<PtcStart>),
    HeaderTools(u64),
    CatalogChild(String),
    /// An inherited end-seed cleared these own catalog children.
    CatalogCleared(HashSet<String>),
}

/// The relational state of a V3 log (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Relations {
    /// The bounded part.
    pub bounded: Bounded,
    /// The growing part.
    pub growing: Growing,
    /// Journals of the open batches (outermost first): bounded copy and undo records.
    journal: Vec<(Bounded, usize)>,
    undo: Vec<Undo>,
    /// Whether the head rules (S9–S13) are off: a migration artifact has no system head
    /// (see [`crate::Verifier::for_migration_artifact`]).
    without_head: bool,
}

impl PartialEq for Relations {
    /// Two states are equal when they decide alike: the open batches' journals do not count.
    fn eq(&self, other: &Relations) -> bool {
        self.bounded == other.bounded && self.growing == other.growing
    }
}

/// What accepting one event changes in the relational state. Both parts are boxed: most
/// events change neither, and a `Change` travels by value from the check to the commit.
#[derive(Clone, Debug, Default)]
pub(crate) struct Change {
    bounded: Option<Box<Bounded>>,
    /// An edit of the call list, applied after `bounded`.
    calls: Option<Box<CallEdit>>,
    /// The seq of a human `user/message` (outside `growth`: one event in three is one).
    human_user: Option<u64>,
    growth: Option<Box<Growth>>,
}

impl Change {
    fn growth(&mut self) -> &mut Growth {
        self.growth.get_or_insert_with(Box::default)
    }
}

/// What one event does to the open step's tool calls, carried on its own when nothing else
/// of the bounded state changes: a conversation's tool events then copy no call list.
#[derive(Clone, Debug)]
enum CallEdit {
    /// An `assistant/message` advertises these calls.
    Advertise(Vec<Call>),
    /// A `tool/call` starts the call at this index.
    Start(usize),
    /// A `tool/result` settles (removes) the call at this index.
    Settle(usize),
}

impl CallEdit {
    fn apply(self, calls: &mut Vec<Call>) {
        match self {
            CallEdit::Advertise(advertised) => calls.extend(advertised),
            CallEdit::Start(index) => {
                if let Some(call) = calls.get_mut(index) {
                    call.started = true;
                }
            }
            CallEdit::Settle(index) => {
                if index < calls.len() {
                    calls.remove(index);
                }
            }
        }
    }
}

/// Applies `edit` to a bounded state the event already copies, else carries it in `change`.
fn edit_calls(b: &mut Cow<'_, Bounded>, change: &mut Change, edit: CallEdit) {
    match b {
        Cow::Owned(owned) => edit.apply(&mut owned.calls),
        Cow::Borrowed(_) => change.calls = Some(Box::new(edit)),
    }
}

/// What one event adds to the growing sets.
#[derive(Clone, Debug, Default)]
struct Growth {
    command_id: Option<String>,
    command_seq: Option<u64>,
    retry_id: Option<String>,
    scheduled: Option<((String, u64), Scheduled)>,
    ptc_root: Option<(String, String)>,
    ptc_start: Option<(String, PtcStart)>,
    header_tools: Option<(u64, Vec<String>)>,
    catalog_child: Option<String>,
    /// An inherited end-seed: the catalog facts before it are the parent's.
    catalog_cleared: bool,
}

/// A refusal under `rule` with upstream's text.
fn refuse(rule: Rule, message: impl Into<String>) -> AcceptError {
    AcceptError::new(rule, message)
}

/// The type upstream's relationship pass sees an event as, for the rules' dispatch: read once
/// from the parsed [`EventType`] (a plugin type by its name), so each rule's choice is an
/// enum match rather than string comparisons.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Judged {
    TurnStart,
    TurnEnd,
    StepStart,
    StepEnd,
    AssistantMessage,
    AssistantAttempt,
    ToolCall,
    ToolResult,
    RequestHeader,
    RequestContext,
    LlmRetry,
    LlmRetryStarted,
    /// `tool/ptc-dispatch-start`, judged as `tool/code-dispatch-start`.
    CodeDispatchStart,
    /// `tool/ptc-dispatch`, judged as `tool/code-dispatch`.
    CodeDispatch,
    CommandRun,
    CommandDone,
    SessionTitle,
    SessionTitleLlmRequest,
    CompactionStart,
    CompactionSummary,
    CompactionEnd,
    CompactionPrune,
    SessionEndSeed,
    DeliveryAccepted,
    /// `subagent/catalog` (V4: N-REL-CAT).
    SubagentCatalog,
    /// `user/message`, and `system/message` (a plugin-source user message upstream).
    UserMessage,
    /// `developer/message` (V4): step-scoped, like `assistant/attempt`.
    DeveloperMessage,
    /// A type with no relational rule of its own.
    Other,
}

impl Judged {
    fn of(event_type: &EventType) -> Judged {
        match event_type {
            EventType::TurnStart => Judged::TurnStart,
            EventType::TurnEnd => Judged::TurnEnd,
            EventType::StepStart => Judged::StepStart,
            EventType::StepEnd => Judged::StepEnd,
            EventType::SystemMessage | EventType::UserMessage => Judged::UserMessage,
            EventType::AssistantMessage => Judged::AssistantMessage,
            EventType::AssistantAttempt => Judged::AssistantAttempt,
            EventType::ToolCall => Judged::ToolCall,
            EventType::ToolResult => Judged::ToolResult,
            EventType::RequestHeader => Judged::RequestHeader,
            EventType::RequestContext => Judged::RequestContext,
            EventType::SessionEndSeed => Judged::SessionEndSeed,
            EventType::DeveloperMessage => Judged::DeveloperMessage,
            EventType::AssistantChunk | EventType::TodoWrite => Judged::Other,
            EventType::Other(name) => Judged::of_name(name),
        }
    }

    /// The type of a tag, as upstream's projection names it (a plugin type's; a core tag
    /// spelled as a name reads as its type).
    fn of_name(tag: &str) -> Judged {
        match tag {
            "turn/start" => Judged::TurnStart,
            "turn/end" => Judged::TurnEnd,
            "step/start" => Judged::StepStart,
            "step/end" => Judged::StepEnd,
            "system/message" | "user/message" => Judged::UserMessage,
            "assistant/message" => Judged::AssistantMessage,
            "assistant/attempt" => Judged::AssistantAttempt,
            "tool/call" => Judged::ToolCall,
            "tool/result" => Judged::ToolResult,
            "request/header" => Judged::RequestHeader,
            "request/context" => Judged::RequestContext,
            "llm/retry" => Judged::LlmRetry,
            "llm/retry-started" => Judged::LlmRetryStarted,
            "tool/ptc-dispatch-start" | "tool/code-dispatch-start" => Judged::CodeDispatchStart,
            "tool/ptc-dispatch" | "tool/code-dispatch" => Judged::CodeDispatch,
            "command/run" => Judged::CommandRun,
            "command/done" => Judged::CommandDone,
            "session/title" => Judged::SessionTitle,
            "session/title-llm-request" => Judged::SessionTitleLlmRequest,
            "compaction/start" => Judged::CompactionStart,
            "compaction/summary" => Judged::CompactionSummary,
            "compaction/end" => Judged::CompactionEnd,
            "compaction/prune" => Judged::CompactionPrune,
            "session/end-seed" => Judged::SessionEndSeed,
            "session-log-deepseek/delivery-accepted" => Judged::DeliveryAccepted,
            "subagent/catalog" => Judged::SubagentCatalog,
            _ => Judged::Other,
        }
    }

    /// The projected type's name, as upstream's messages name it; `tag` is the event's.
    fn name(self, tag: &str) -> &str {
        match self {
            Judged::UserMessage => "user/message",
            Judged::CodeDispatchStart => "tool/code-dispatch-start",
            Judged::CodeDispatch => "tool/code-dispatch",
            _ => tag,
        }
    }
}

/// Whether upstream's relationship pass handles (and so requires an object `data` of) a type;
/// V4's also judges `subagent/catalog` (N-REL-CAT).
fn handled(event: &Event, v4: bool) -> bool {
    let tag = match &event.event_type {
        // Retired in V3: opaque when ignorable, refused otherwise.
        EventType::AssistantChunk => return false,
        EventType::Other(name) => name.as_str(),
        // Every other core type is a known v0 type, `system/message` or `assistant/attempt`.
        _ => return true,
    };
    if matches!(
        tag,
        "tool/code-dispatch" | "tool/code-dispatch-start" | "assistant/chunk"
    ) {
        // retired or unknown in V3: opaque when ignorable, refused otherwise
        return false;
    }
    matches!(
        tag,
        "system/message"
            | "assistant/attempt"
            | "tool/ptc-dispatch"
            | "tool/ptc-dispatch-start"
            | "session-log-deepseek/delivery-accepted"
    ) || (v4 && tag == "subagent/catalog")
        || event
            .event_type
            .is_known_in(crate::generation::Generation::V0)
}

fn field<'v>(data: &'v Value, name: &str) -> Option<&'v Value> {
    data.get(name)
}

impl Relations {
    /// A fresh state (an empty log).
    pub fn new() -> Relations {
        Relations::default()
    }

    /// The rules without the head rules (S9–S13), for a log that has no system head.
    pub(crate) fn without_head_rules() -> Relations {
        Relations {
            without_head: true,
            ..Relations::default()
        }
    }

    /// Starts journaling (a batch begins).
    pub(crate) fn mark(&mut self) {
        self.journal.push((self.bounded.clone(), self.undo.len()));
    }

    /// Keeps the changes since the innermost mark (`depth` marks stay open).
    pub(crate) fn end(&mut self, depth: usize) {
        self.journal.truncate(depth);
        if self.journal.is_empty() {
            self.undo.clear();
        }
    }

    /// Undoes every change since mark number `depth` (0-based) and closes it and the marks
    /// inside it.
    pub(crate) fn rollback(&mut self, depth: usize) {
        if depth >= self.journal.len() {
            return;
        }
        let inner = self.journal.split_off(depth);
        let Some((bounded, undo_len)) = inner.into_iter().next() else {
            return;
        };
        while self.undo.len() > undo_len {
            let Some(undo) = self.undo.pop() else { break };
            let growing = &mut self.growing;
            match undo {
                Undo::CommandId(id) => {
                    growing.command_ids.remove(&id);
                }
                Undo::CommandSeq => {
                    growing.command_seqs.pop();
                }
                Undo::RetryId(id) => {
                    growing.retry_ids.remove(&id);
                }
                Undo::Scheduled(key, previous) => match previous {
                    Some(previous) => {
                        growing.scheduled.insert(key, previous);
                    }
                    None => {
                        growing.scheduled.remove(&key);
                    }
                },
                Undo::HumanUser => {
                    growing.human_users.pop();
                }
                Undo::PtcRoot(id, previous) => match previous {
                    Some(previous) => {
                        growing.ptc_roots.insert(id, previous);
                    }
                    None => {
                        growing.ptc_roots.remove(&id);
                    }
                },
                Undo::PtcStart(id, previous) => match previous {
                    Some(previous) => {
                        growing.ptc_starts.insert(id, previous);
                    }
                    None => {
                        growing.ptc_starts.remove(&id);
                    }
                },
                Undo::HeaderTools(seq) => {
                    growing.header_tools.remove(&seq);
                }
                Undo::CatalogChild(id) => {
                    growing.catalog_children.remove(&id);
                }
                Undo::CatalogCleared(children) => growing.catalog_children = children,
            }
        }
        self.bounded = bounded;
        if self.journal.is_empty() {
            self.undo.clear();
        }
    }

    /// Commits what [`Relations::check`] decided for one event.
    pub(crate) fn apply(&mut self, change: Change) {
        let journaling = !self.journal.is_empty();
        let growing = &mut self.growing;
        let undo = &mut self.undo;
        if let Some(bounded) = change.bounded {
            self.bounded = *bounded;
        }
        if let Some(edit) = change.calls {
            edit.apply(&mut self.bounded.calls);
        }
        if let Some(seq) = change.human_user {
            growing.human_users.push(seq);
            if journaling {
                undo.push(Undo::HumanUser);
            }
        }
        let Some(change) = change.growth else {
            return;
        };
        if let Some(id) = change.command_id {
            if growing.command_ids.insert(id.clone()) && journaling {
                undo.push(Undo::CommandId(id));
            }
        }
        if let Some(seq) = change.command_seq {
            growing.command_seqs.push(seq);
            if journaling {
                undo.push(Undo::CommandSeq);
            }
        }
        if let Some(id) = change.retry_id {
            if growing.retry_ids.insert(id.clone()) && journaling {
                undo.push(Undo::RetryId(id));
            }
        }
        if let Some((k, scheduled)) = change.scheduled {
            let previous = growing.scheduled.insert(k.clone(), scheduled);
            if journaling {
                undo.push(Undo::Scheduled(k, previous));
            }
        }
        if let Some((id, root)) = change.ptc_root {
            let previous = growing.ptc_roots.insert(id.clone(), root);
            if journaling {
                undo.push(Undo::PtcRoot(id, previous));
            }
        }
        if let Some((id, start)) = change.ptc_start {
            let previous = growing.ptc_starts.insert(id.clone(), start);
            if journaling {
                undo.push(Undo::PtcStart(id, previous));
            }
        }
        if let Some((seq, tools)) = change.header_tools {
            growing.header_tools.insert(seq, tools);
            if journaling {
                undo.push(Undo::HeaderTools(seq));
            }
        }
        if change.catalog_cleared && !growing.catalog_children.is_empty() {
            let cleared = std::mem::take(&mut growing.catalog_children);
            if journaling {
                undo.push(Undo::CatalogCleared(cleared));
            }
        }
        if let Some(id) = change.catalog_child {
            if growing.catalog_children.insert(id.clone()) && journaling {
                undo.push(Undo::CatalogChild(id));
            }
        }
    }

    /// The head rules S9–S13 (upstream's first pass), then — when `relational` — the
    /// relational rules R1–R53 on `event`, whose surface transition (S7–S8) already passed.
    /// `nodes` is the surface before the event. Returns the change to apply on commit.
    ///
    /// With `skip_r39`, R39 is not checked (a restore's look-ahead found the open
    /// compaction stale, or will decide so: see [`crate::Session`]'s restore loop).
    pub(crate) fn check(
        &self,
        event: &Event,
        nodes: &[Seq],
        facts: Option<&Facts>,
        header: &crate::header::SessionHeader,
        skip_r39: bool,
        older_humans: &[u64],
    ) -> Result<Change, AcceptError> {
        let mut change = Change::default();
        let tag = event.event_type.as_str();
        let judged = Judged::of(&event.event_type);
        let seq = event.seq.get();
        let is_handled = handled(event, header.generation().is_v4());
        // A message's rules, and the turn and step boundaries', read a few scalars
        // ([`facts::Message`]); other payloads are small.
        let has_facts = facts::has_facts(&event.event_type);
        // Read ahead by a decoding thread (a stored row), or here.
        let read;
        let message = match facts {
            Some(facts) if has_facts => facts,
            _ => {
                read = if has_facts {
                    facts::Message::read(event)
                } else {
                    facts::Message::default()
                };
                &read
            }
        };
        let data_cow;
        let data: &Value = if is_handled && !has_facts {
            data_cow = facts::payload(event);
            &data_cow
        } else {
            &Value::Null
        };
        // A type with facts reads its `turn` and `step` there (`message.turn`): `turn` and
        // `step` are the other types'.
        let (turn, step, object) = if has_facts {
            (None, None, message.object)
        } else {
            (field(data, "turn"), field(data, "step"), data.is_object())
        };
        // Pass 1: the system head (S9–S13).
        let bounded = self.head_pass(event, judged, message, turn, step, data)?;
        if !is_handled {
            change.bounded = bounded.map(Box::new);
            return Ok(change);
        }
        let view = judged.name(tag);
        // P12
        if !object {
            return Err(refuse(
                Rule::DataNotJsonObject,
                format!("{view} {seq} data must be a JSON object"),
            ));
        }
        // Copied only by the types that change it.
        let mut b: Cow<'_, Bounded> = match bounded {
            Some(changed) => Cow::Owned(changed),
            None => Cow::Borrowed(&self.bounded),
        };
        // R39: a turn boundary inside an open compaction.
        let boundary = matches!(judged, Judged::TurnStart | Judged::TurnEnd);
        if !skip_r39 && boundary && b.compaction.is_some() {
            return Err(refuse(
                Rule::TurnCrossesCompaction,
                format!("{tag} crosses an open compaction"),
            ));
        }
        Judging {
            relations: self,
            event,
            judged,
            tag,
            view,
            seq,
            message,
            data,
            turn,
            step,
            has_facts,
            nodes,
            header,
            older_humans,
        }
        .judge(&mut b, &mut change)?;
        if let Cow::Owned(changed) = b {
            change.bounded = Some(Box::new(changed));
        }
        Ok(change)
    }

    /// The system head rules (S9–S13) on `event`: the bounded state with its new head, or
    /// `None` when the head does not change. `turn` and `step` are the payload's (a type with
    /// facts has them in `message`).
    fn head_pass(
        &self,
        event: &Event,
        judged: Judged,
        message: &facts::Message,
        turn: Option<&Value>,
        step: Option<&Value>,
        data: &Value,
    ) -> Result<Option<Bounded>, AcceptError> {
        // Most events cannot touch the head state: skip its copy.
        let quiet = self.without_head
            || !(matches!(
                judged,
                Judged::StepStart
                    | Judged::StepEnd
                    | Judged::TurnEnd
                    | Judged::CompactionSummary
                    | Judged::CompactionPrune
            ) || event.event_type == EventType::SystemMessage)
                && match event.surface_op() {
                    None => true,
                    Some(SurfaceOp::Append) => self.bounded.head.surface_started,
                    Some(SurfaceOp::Replace(_)) => false,
                };
        let head = if quiet {
            None
        } else {
            // A type with facts has its `turn` and `step` as counts already.
            let payload_turn = turn.map(facts::Num::of_ref);
            let payload_step = step.map(facts::Num::of_ref);
            let (turn, step) = if facts::has_facts(&event.event_type) {
                (message.turn.as_ref(), message.step.as_ref())
            } else {
                (payload_turn.as_ref(), payload_step.as_ref())
            };
            Some(head_rules(&self.bounded.head, event, turn, step, data)?)
        };
        Ok(head
            .filter(|head| *head != self.bounded.head)
            .map(|head| Bounded {
                head,
                ..self.bounded.clone()
            }))
    }

    /// The head state (S9–S13) after the whole log.
    pub(crate) fn head(&self) -> &Head {
        &self.bounded.head
    }

    /// Whether a compaction is open.
    pub(crate) fn compaction_open(&self) -> bool {
        self.bounded.compaction.is_some()
    }

    /// The state a checkpoint of the first `n_events` events keeps: all of it but the human
    /// `user/message` seqs, which a session resumed from it looks up in its log (see
    /// [`Growing::human_users_from`]). Full and lazy sessions over one log give equal ones.
    pub(crate) fn for_checkpoint(&self, n_events: u64) -> Relations {
        let g = &self.growing;
        Relations {
            bounded: self.bounded.clone(),
            growing: Growing {
                command_ids: g.command_ids.clone(),
                command_seqs: g.command_seqs.clone(),
                retry_ids: g.retry_ids.clone(),
                scheduled: g.scheduled.clone(),
                human_users: Vec::new(),
                human_users_from: n_events,
                ptc_roots: g.ptc_roots.clone(),
                ptc_starts: g.ptc_starts.clone(),
                header_tools: g.header_tools.clone(),
                catalog_children: g.catalog_children.clone(),
            },
            journal: Vec::new(),
            undo: Vec::new(),
            without_head: self.without_head,
        }
    }

    /// The seqs a `session/title` or `session/title-llm-request` cites below
    /// [`Growing::human_users_from`] (what the session must look up for R37); empty for any
    /// other event, and in a session that holds every seq.
    pub(crate) fn older_cited(&self, event: &Event) -> Vec<u64> {
        let from = self.growing.human_users_from;
        if from == 0
            || !matches!(
                Judged::of(&event.event_type),
                Judged::SessionTitle | Judged::SessionTitleLlmRequest
            )
        {
            return Vec::new();
        }
        let data = facts::payload(event);
        let Some(seqs) = field(&data, "messageSeqs").and_then(Value::as_array) else {
            return Vec::new();
        };
        seqs.iter()
            .filter_map(non_negative_safe_integer)
            .filter(|at| *at < from)
            .collect()
    }
}

/// S9–S13 on one event, reading its payload only for the types they look at.
pub(crate) fn head_rules_of(head: &Head, event: &Event) -> Result<Head, AcceptError> {
    let reads = matches!(
        event.event_type.as_str(),
        "step/start" | "system/message" | "compaction/summary" | "compaction/prune"
    );
    if reads {
        let data = event.data_uncached();
        let turn = field(&data, "turn").map(facts::Num::of_ref);
        let step = field(&data, "step").map(facts::Num::of_ref);
        head_rules(head, event, turn.as_ref(), step.as_ref(), &data)
    } else {
        head_rules(head, event, None, None, &Value::Null)
    }
}

/// S9–S13 on one event: the head state after it. `turn` and `step` are the payload's (read
/// for `step/start` and `system/message`), `data` the payload (read for the compaction
/// types).
fn head_rules(
    head: &Head,
    event: &Event,
    turn: Option<&facts::Num>,
    step: Option<&facts::Num>,
    data: &Value,
) -> Result<Head, AcceptError> {
    let mut head = head.clone();
    let tag = event.event_type.as_str();
    match tag {
        "step/start" => {
            head.open_step = Some((turn.cloned(), step.cloned()));
            return Ok(head);
        }
        "step/end" | "turn/end" => {
            head.open_step = None;
            return Ok(head);
        }
        "compaction/summary" | "compaction/prune" => {
            if let Some(at) = head.head {
                let lists_head = field(data, "shadowedSeqs")
                    .and_then(Value::as_array)
                    .is_some_and(|seqs| {
                        seqs.iter()
                            .any(|seq| non_negative_safe_integer(seq) == Some(at))
                    });
                if lists_head {
                    return Err(refuse(
                        Rule::CompactionShadowsHead,
                        "compaction cannot shadow the protected system head",
                    ));
                }
            }
            return Ok(head);
        }
        _ => {}
    }
    let SurfaceMeta::Surface { op, .. } = event.meta() else {
        return Ok(head);
    };
    let system = event.event_type == EventType::SystemMessage;
    if system {
        let in_step = head
            .open_step
            .as_ref()
            .is_some_and(|(open_turn, open_step)| {
                facts::Num::same(open_turn.as_ref(), turn)
                    && facts::Num::same(open_step.as_ref(), step)
            });
        if !in_step {
            return Err(refuse(
                Rule::SystemOutsideStep,
                "system/message does not match an open step",
            ));
        }
        if head.surface_started && head.head.is_none() {
            return Err(refuse(
                Rule::SystemWithoutHead,
                "system/message requires a protected first surface head",
            ));
        }
    }
    match op {
        SurfaceOp::Append => {
            if !head.surface_started && system {
                head.head = Some(event.seq.get());
            }
        }
        SurfaceOp::Replace(range) => {
            if let Some(at) = head.head {
                let touches = range.start.get() == at || range.end.get() == at;
                if system && touches {
                    if range.start.get() != at || range.end.get() != at {
                        return Err(refuse(
                            Rule::SystemReplacesHeadInexactly,
                            "system/message must replace exactly the current system head",
                        ));
                    }
                    head.head = Some(event.seq.get());
                } else if !system && touches {
                    return Err(refuse(
                        Rule::ReplacementShadowsHead,
                        "surface replacement cannot shadow the protected system head",
                    ));
                }
            }
        }
    }
    head.surface_started = true;
    Ok(head)
}

/// R45 / R52: `shadowedSeqs` is exactly the surface slice from `shadowedRange.start` to
/// `shadowedRange.end`, by surface position.
fn names_exact_span(data: &Value, nodes: &[Seq]) -> bool {
    let range = data.get("shadowedRange");
    let endpoint = |name: &str| {
        range
            .and_then(|range| range.get(name))
            .and_then(non_negative_safe_integer)
            .and_then(|seq| Seq::new(seq).ok())
            .and_then(|seq| find(nodes, seq))
    };
    let (Some(start), Some(end)) = (endpoint("start"), endpoint("end")) else {
        return false;
    };
    if end < start {
        return false;
    }
    let Some(listed) = data.get("shadowedSeqs").and_then(Value::as_array) else {
        return false;
    };
    let slice = &nodes[start..=end];
    listed.len() == slice.len()
        && listed
            .iter()
            .zip(slice)
            .all(|(listed, node)| non_negative_safe_integer(listed) == Some(node.get()))
}

/// R15: the exact TOOL_NOT_STARTED repair result for `call_id`.
fn is_not_started_repair(event: &Event, data: &Value, call_id: Option<&Value>) -> bool {
    if event.sources().is_some() {
        return false;
    }
    let error_ok = data
        .get("error")
        .and_then(Value::as_object)
        .is_some_and(|error| {
            error.len() == 2
                && error.get("name").and_then(Value::as_str) == Some("ToolNotStartedError")
                && error.get("code").and_then(Value::as_str) == Some("TOOL_NOT_STARTED")
        });
    let Some(message) = data.get("message") else {
        return false;
    };
    let id_ok = match (
        message.get("id").and_then(Value::as_str),
        call_id.and_then(Value::as_str),
    ) {
        (Some(id), Some(call_id)) => id
            .strip_prefix("interrupted-tool-result-")
            .and_then(|rest| rest.strip_prefix(call_id))
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|suffix| {
                crate::json::canonical_decimal(suffix.strip_prefix('-').unwrap_or(suffix)).is_some()
            }),
        _ => false,
    };
    let block = message.get("content").and_then(|content| content.get(0));
    let block_ok = block.is_some_and(|block| {
        block.get("isError") == Some(&Value::Bool(true))
            && block
                .get("content")
                .and_then(Value::as_array)
                .is_some_and(|inner| {
                    inner.len() == 1
                        && inner[0].get("type").and_then(Value::as_str) == Some("text")
                        && inner[0].get("text").and_then(Value::as_str)
                            == Some(TOOL_NOT_STARTED_TEXT)
                })
    });
    error_ok && id_ok && block_ok
}

/// Whether an appended not-started result is one of the two exact repairs V4 accepts
/// (docs/format-v4.md §3.5 N-REL-4): a fork's (N-ROW-6 vouched for its shape) or crash
/// repair's `interrupted-tool-result-<callId>-<N>` with the one not-started text.
fn is_v4_not_started_repair(data: &Value, call_id: &str) -> bool {
    let message = data.get("message");
    let id = message
        .and_then(|message| message.get("id"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let error_ok = data.get("error").is_some_and(|error| {
        error.get("name").and_then(Value::as_str) == Some("ToolNotStartedError")
            && error.get("code").and_then(Value::as_str) == Some("TOOL_NOT_STARTED")
    });
    let is_error = message.and_then(|message| message.get("isError")) == Some(&Value::Bool(true));
    if !error_ok || !is_error {
        return false;
    }
    if id
        .strip_prefix("forked-tool-result-")
        .and_then(|rest| rest.strip_prefix(call_id))
        .is_some_and(|rest| rest.starts_with('-'))
    {
        return true;
    }
    let interrupted = id
        .strip_prefix("interrupted-tool-result-")
        .and_then(|rest| rest.strip_prefix(call_id))
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(crate::json::canonical_decimal)
        .is_some();
    let text_ok = message
        .and_then(|message| message.get("content"))
        .and_then(Value::as_array)
        .is_some_and(|content| {
            content.len() == 1
                && content[0].get("type").and_then(Value::as_str) == Some("text")
                && content[0].get("text").and_then(Value::as_str) == Some(TOOL_NOT_STARTED_TEXT)
        });
    interrupted && text_ok
}

/// R38: the title request's messages are one plugin user message of one text block (in V4,
/// whose source kind is `dsh-session-title-llm`: docs/format-v4.md N-REL-8).
fn title_request_messages_ok(data: &Value, v4: bool) -> bool {
    let Some(messages) = data.get("messages").and_then(Value::as_array) else {
        return false;
    };
    let [message] = &messages[..] else {
        return false;
    };
    let role_ok = message.get("role").and_then(Value::as_str) == Some("user");
    let content_ok = message
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|content| {
            content.len() == 1 && content[0].get("type").and_then(Value::as_str) == Some("text")
        });
    let source_ok = message
        .get("source")
        .and_then(Value::as_object)
        .is_some_and(|source| {
            if v4 {
                return source.get("kind").and_then(Value::as_str) == Some("dsh-session-title-llm");
            }
            source.len() == 2
                && source.get("kind").and_then(Value::as_str) == Some("plugin")
                && source.get("plugin").and_then(Value::as_str) == Some("dsh-session-title-llm")
        });
    role_ok && content_ok && source_ok
}

/// `{key: value}` entries of an optional JSON value (absent stays absent, `null` stays `null`).
fn put(map: &mut serde_json::Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(value) = value {
        map.insert(key.to_owned(), value.clone());
    }
}

fn object(entries: Vec<(&str, Option<Value>)>) -> Value {
    let mut map = serde_json::Map::new();
    for (key, value) in entries {
        put(&mut map, key, value.as_ref());
    }
    Value::Object(map)
}

fn get_u64(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

fn get_bool(value: &Value, key: &str) -> Option<bool> {
    value.get(key).and_then(Value::as_bool)
}

fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    value?
        .as_array()?
        .iter()
        .map(|item| item.as_str().map(str::to_owned))
        .collect()
}

fn u64s(value: Option<&Value>) -> Option<Vec<u64>> {
    value?.as_array()?.iter().map(Value::as_u64).collect()
}

impl Relations {
    /// The state as JSON, for a store's checkpoint record (docs/format.md §8); read back by
    /// [`Relations::from_json`]. Holds the growing sets whole (see the module docs).
    pub fn to_json(&self) -> Value {
        let b = &self.bounded;
        let g = &self.growing;
        let calls: Vec<Value> = b
            .calls
            .iter()
            .map(|call| {
                object(vec![
                    ("id", Some(call.id.clone())),
                    ("name", call.name.clone()),
                    ("arguments", call.arguments.clone()),
                    ("started", Some(call.started.into())),
                ])
            })
            .collect();
        let chains: Vec<Value> = b
            .chains
            .iter()
            .map(|chain| {
                object(vec![
                    ("step", Some(chain.key.0.clone().into())),
                    ("provider", Some(chain.key.1.clone().into())),
                    ("policyKey", Some(chain.key.2.clone().into())),
                    ("retry", Some(chain.retry.into())),
                    ("retryId", chain.retry_id.clone()),
                ])
            })
            .collect();
        let compaction = b.compaction.as_ref().map(|open| {
            object(vec![
                ("compactionId", open.compaction_id.clone()),
                ("sourceCommandId", open.source_command_id.clone()),
                ("turn", open.turn.clone()),
                ("summary", Some(open.summary.into())),
            ])
        });
        let head = object(vec![
            ("head", b.head.head.map(Value::from)),
            ("surfaceStarted", Some(b.head.surface_started.into())),
            (
                "openStep",
                b.head.open_step.as_ref().map(|(turn, step)| {
                    let value =
                        |num: &Option<facts::Num>| num.as_ref().map(|num| num.value().into_owned());
                    object(vec![("turn", value(turn)), ("step", value(step))])
                }),
            ),
        ]);
        let sorted = |set: &HashSet<String>| {
            let mut list: Vec<&String> = set.iter().collect();
            list.sort();
            Value::from(list.into_iter().cloned().collect::<Vec<_>>())
        };
        let command_ids = sorted(&g.command_ids);
        let retry_ids = sorted(&g.retry_ids);
        let mut scheduled: Vec<(&(String, u64), &Scheduled)> = g.scheduled.iter().collect();
        scheduled.sort_by(|a, b| a.0.cmp(b.0));
        let scheduled: Vec<Value> = scheduled
            .into_iter()
            .map(|((id, retry), at)| {
                object(vec![
                    ("retryId", Some(id.clone().into())),
                    ("retry", Some((*retry).into())),
                    ("turn", at.turn.clone()),
                    ("step", at.step.clone()),
                    ("started", Some(at.started.into())),
                ])
            })
            .collect();
        let mut roots: Vec<(&String, &String)> = g.ptc_roots.iter().collect();
        roots.sort();
        let roots: Vec<Value> = roots
            .into_iter()
            .map(|(sub, root)| Value::from(vec![sub.clone(), root.clone()]))
            .collect();
        let mut starts: Vec<(&String, &PtcStart)> = g.ptc_starts.iter().collect();
        starts.sort_by(|a, b| a.0.cmp(b.0));
        let starts: Vec<Value> = starts
            .into_iter()
            .map(|(sub, start)| {
                object(vec![
                    ("subCallId", Some(sub.clone().into())),
                    ("rootCallId", start.root.clone()),
                    ("parentCallId", start.parent.clone()),
                    ("name", start.name.clone()),
                    ("arguments", start.arguments.clone()),
                    ("settled", Some(start.settled.into())),
                ])
            })
            .collect();
        // V4 only: absent from a V3 checkpoint, so V3 records are unchanged.
        let header_tools = (!g.header_tools.is_empty()).then(|| {
            let mut entries: Vec<(&u64, &Vec<String>)> = g.header_tools.iter().collect();
            entries.sort();
            Value::from(
                entries
                    .into_iter()
                    .map(|(seq, names)| {
                        Value::from(vec![Value::from(*seq), Value::from(names.clone())])
                    })
                    .collect::<Vec<_>>(),
            )
        });
        object(vec![
            ("openTurn", b.open_turn.map(Value::from)),
            ("nextTurn", Some(b.next_turn.into())),
            ("openStep", b.open_step.map(Value::from)),
            ("nextStep", Some(b.next_step.into())),
            ("calls", Some(calls.into())),
            ("provider", b.provider.as_deref().cloned()),
            ("chains", Some(chains.into())),
            ("compaction", compaction),
            ("head", Some(head)),
            ("commandIds", Some(command_ids)),
            ("commandSeqs", Some(g.command_seqs.clone().into())),
            ("retryIds", Some(retry_ids)),
            ("scheduled", Some(scheduled.into())),
            ("humanUsers", Some(g.human_users.clone().into())),
            ("humanUsersFrom", Some(g.human_users_from.into())),
            ("ptcRoots", Some(roots.into())),
            ("ptcStarts", Some(starts.into())),
            ("headerTools", header_tools),
            (
                "catalogChildren",
                (!g.catalog_children.is_empty()).then(|| sorted(&g.catalog_children)),
            ),
        ])
    }

    /// Reads what [`Relations::to_json`] wrote; `None` for anything else.
    pub fn from_json(value: &Value) -> Option<Relations> {
        let list = |key: &str| value.get(key).and_then(Value::as_array);
        // A record from before settled calls left the list marks them `resolved`.
        let calls = list("calls")?
            .iter()
            .filter(|call| get_bool(call, "resolved") != Some(true))
            .map(|call| {
                Some(Call {
                    id: call.get("id")?.clone(),
                    name: call.get("name").cloned(),
                    arguments: call.get("arguments").cloned(),
                    started: get_bool(call, "started")?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let text =
            |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let chains = list("chains")?
            .iter()
            .map(|chain| {
                Some(Chain {
                    key: (
                        text(chain, "step")?,
                        text(chain, "provider")?,
                        text(chain, "policyKey")?,
                    ),
                    retry: get_u64(chain, "retry")?,
                    retry_id: chain.get("retryId").cloned(),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let compaction = match value.get("compaction") {
            None => None,
            Some(open) => Some(OpenCompaction {
                compaction_id: open.get("compactionId").cloned(),
                source_command_id: open.get("sourceCommandId").cloned(),
                turn: open.get("turn").cloned(),
                summary: get_bool(open, "summary")?,
            }),
        };
        let head_value = value.get("head")?;
        let head = Head {
            head: match head_value.get("head") {
                None => None,
                Some(seq) => Some(seq.as_u64()?),
            },
            surface_started: get_bool(head_value, "surfaceStarted")?,
            open_step: head_value.get("openStep").map(|open| {
                (
                    open.get("turn").map(facts::Num::of_ref),
                    open.get("step").map(facts::Num::of_ref),
                )
            }),
        };
        let optional_u64 = |key: &str| match value.get(key) {
            None => Some(None),
            Some(number) => number.as_u64().map(Some),
        };
        let bounded = Bounded {
            open_turn: optional_u64("openTurn")?,
            next_turn: get_u64(value, "nextTurn")?,
            open_step: optional_u64("openStep")?,
            next_step: get_u64(value, "nextStep")?,
            calls,
            provider: value.get("provider").cloned().map(Arc::new),
            chains,
            compaction,
            head,
        };
        let scheduled = list("scheduled")?
            .iter()
            .map(|entry| {
                Some((
                    (text(entry, "retryId")?, get_u64(entry, "retry")?),
                    Scheduled {
                        turn: entry.get("turn").cloned(),
                        step: entry.get("step").cloned(),
                        started: get_bool(entry, "started")?,
                    },
                ))
            })
            .collect::<Option<HashMap<_, _>>>()?;
        let ptc_roots = list("ptcRoots")?
            .iter()
            .map(|pair| {
                let pair = strings(Some(pair))?;
                match &pair[..] {
                    [sub, root] => Some((sub.clone(), root.clone())),
                    _ => None,
                }
            })
            .collect::<Option<HashMap<_, _>>>()?;
        let ptc_starts = list("ptcStarts")?
            .iter()
            .map(|start| {
                Some((
                    text(start, "subCallId")?,
                    PtcStart {
                        root: start.get("rootCallId").cloned(),
                        parent: start.get("parentCallId").cloned(),
                        name: start.get("name").cloned(),
                        arguments: start.get("arguments").cloned(),
                        settled: get_bool(start, "settled")?,
                    },
                ))
            })
            .collect::<Option<HashMap<_, _>>>()?;
        let header_tools = match value.get("headerTools") {
            None => HashMap::new(),
            Some(entries) => entries
                .as_array()?
                .iter()
                .map(|entry| match entry.as_array().map(Vec::as_slice) {
                    Some([seq, names]) => Some((seq.as_u64()?, strings(Some(names))?)),
                    _ => None,
                })
                .collect::<Option<HashMap<_, _>>>()?,
        };
        let growing = Growing {
            command_ids: strings(value.get("commandIds"))?.into_iter().collect(),
            command_seqs: u64s(value.get("commandSeqs"))?,
            retry_ids: strings(value.get("retryIds"))?.into_iter().collect(),
            scheduled,
            human_users: u64s(value.get("humanUsers"))?,
            // A record from before the list was left out holds it whole.
            human_users_from: match value.get("humanUsersFrom") {
                None => 0,
                Some(from) => from.as_u64()?,
            },
            ptc_roots,
            ptc_starts,
            header_tools,
            catalog_children: match value.get("catalogChildren") {
                None => HashSet::new(),
                children => strings(children)?.into_iter().collect(),
            },
        };
        Some(Relations {
            bounded,
            growing,
            ..Relations::default()
        })
    }
}

/// P4–P10: upstream's payload rules of a `system/message` (its first pass, before S9), with
/// upstream's texts. P10 checks the part of the user-message audit a system message reaches:
/// the source's members and the content's text blocks.
pub(crate) fn system_payload_rules<'n, N: crate::view::Node<'n>>(
    data: N,
) -> Result<(), AcceptError> {
    use crate::view::Kind;
    let exact = |node: N, keys: &[&str], rule: Rule, label: &str| -> Result<(), AcceptError> {
        let members = node.members();
        for key in keys {
            if !members.iter().any(|(name, _)| name == key) {
                return Err(refuse(rule, format!("{label} lacks required field {key}")));
            }
        }
        if let Some((name, _)) = members
            .iter()
            .find(|(name, _)| !keys.contains(&name.as_ref()))
        {
            return Err(refuse(rule, format!("{label} has unexpected field {name}")));
        }
        Ok(())
    };
    if data.kind() != Kind::Object {
        return Err(refuse(
            Rule::SystemDataNotObject,
            "system/message data must be an object",
        ));
    }
    exact(
        data,
        &["turn", "step", "message"],
        Rule::SystemDataKeys,
        "system/message data",
    )?;
    for key in ["turn", "step"] {
        match data.get(key).and_then(|value| value.seq_number()) {
            None => {
                return Err(refuse(
                    Rule::SystemTurnStep,
                    format!("{key} must be a non-negative safe integer"),
                ))
            }
            Some(0) => {
                return Err(refuse(
                    Rule::SystemTurnStep,
                    format!("{key} must be positive"),
                ))
            }
            Some(_) => {}
        }
    }
    let Some(message) = data.get("message").filter(|m| m.kind() == Kind::Object) else {
        return Err(refuse(
            Rule::SystemMessageKeys,
            "system message must be an object",
        ));
    };
    exact(
        message,
        &["id", "role", "source", "content"],
        Rule::SystemMessageKeys,
        "system message",
    )?;
    let id_ok = message.get("id").is_some_and(|id| id.is_non_empty_str());
    let role_ok = message.get("role").and_then(|role| role.text()).as_deref() == Some("system");
    if !id_ok || !role_ok {
        return Err(refuse(
            Rule::SystemIdRole,
            "system message requires an id and system role",
        ));
    }
    let Some(source) = message.get("source").filter(|s| s.kind() == Kind::Object) else {
        return Err(refuse(
            Rule::SystemSource,
            "system source must be an object",
        ));
    };
    let plugin = source.get("plugin");
    let plugin_ok = source.get("kind").and_then(|kind| kind.text()).as_deref() == Some("plugin")
        && plugin.is_some_and(|plugin| plugin.is_non_empty_str());
    if !plugin_ok {
        return Err(refuse(
            Rule::SystemSource,
            "system message requires plugin source",
        ));
    }
    let compact = plugin.and_then(|plugin| plugin.text()).as_deref() == Some("compact");
    for (name, _) in source.members() {
        let allowed = matches!(
            name.as_ref(),
            "kind" | "plugin" | "form" | "sections" | "summary"
        ) || (compact && matches!(name.as_ref(), "compactionId" | "sourceCommandId"));
        if !allowed {
            return Err(refuse(
                Rule::SystemAsUserMessage,
                format!(
                    "user/message 0 source has unexpected member {}",
                    to_js_string(&Value::String(name.into_owned()))
                ),
            ));
        }
    }
    let Some(content) = message.get("content").filter(|c| c.kind() == Kind::Array) else {
        return Err(refuse(
            Rule::SystemAsUserMessage,
            "user/message 0 content must be an array",
        ));
    };
    for index in 0..content.len().unwrap_or(0) {
        let Some(block) = content.at(index) else {
            break;
        };
        let is_text = block.get("type").and_then(|t| t.text()).as_deref() == Some("text");
        if is_text
            && block
                .get("text")
                .is_none_or(|text| text.kind() != Kind::Str)
        {
            return Err(refuse(
                Rule::SystemAsUserMessage,
                format!("user/message 0 content[{index}] text must be a string"),
            ));
        }
    }
    Ok(())
}
