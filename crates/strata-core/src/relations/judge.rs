//! The relational rules of one event (docs/rules.md, R1–R53), one method per event family:
//! what [`Relations::check`](super::Relations) runs after the head rules (S9–S13), P12 and
//! R39. Each method reads the event through [`Judging`] and the state before it through the
//! bounded part `b` (copied only by the types that change it) and the growing sets, and
//! records what accepting the event changes in `change`; it changes no state itself.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::{
    edit_calls, facts, field, is_int, is_not_started_repair, is_v4_not_started_repair, js_json,
    js_text, key, names_exact_span, num_is, num_json, refuse, same, title_request_messages_ok,
    Bounded, Call, CallEdit, Chain, Change, Judged, OpenCompaction, PtcStart, Relations, Scheduled,
};
use crate::event::{Event, EventType, SurfaceOp};
use crate::header::SessionHeader;
use crate::json::{json_equal, non_negative_safe_integer};
use crate::rule::{AcceptError, Rule};
use crate::seq::Seq;

/// One event as the relational rules read it: its read-ahead facts, its payload and the
/// payload's `turn` and `step` (a type with facts reads those from the facts).
#[derive(Clone, Copy)]
pub(super) struct Judging<'a> {
    pub(super) relations: &'a Relations,
    pub(super) event: &'a Event,
    pub(super) judged: Judged,
    pub(super) tag: &'a str,
    /// The type as upstream's messages name it.
    pub(super) view: &'a str,
    pub(super) seq: u64,
    pub(super) message: &'a facts::Message,
    pub(super) data: &'a Value,
    pub(super) turn: Option<&'a Value>,
    pub(super) step: Option<&'a Value>,
    pub(super) has_facts: bool,
    /// The surface before the event.
    pub(super) nodes: &'a [Seq],
    pub(super) header: &'a SessionHeader,
    /// Human `user/message` seqs before a resumed session's checkpoint (R37).
    pub(super) older_humans: &'a [u64],
}

impl Judging<'_> {
    /// Runs the event's relational rules on the state before it (`b`, and the growing sets).
    pub(super) fn judge(
        &self,
        b: &mut Cow<'_, Bounded>,
        change: &mut Change,
    ) -> Result<(), AcceptError> {
        let (data, nodes) = (self.data, self.nodes);
        match self.judged {
            Judged::TurnStart => self.turn_start(b),
            Judged::TurnEnd => self.turn_end(b),
            Judged::StepStart => self.step_start(b),
            Judged::StepEnd => self.step_end(b),
            Judged::AssistantMessage => self.assistant_message(b, change),
            // R9
            Judged::AssistantAttempt if !self.in_open_step(b) => Err(refuse(
                Rule::AttemptOutsideStep,
                "assistant/attempt does not match an open turn and step",
            )),
            // N-REL-3
            Judged::DeveloperMessage if !self.in_open_step(b) => Err(refuse(
                Rule::V4StepScoped,
                "developer/message does not match an open turn and step",
            )),
            Judged::DeveloperMessage => self.developer_binding(),
            Judged::ToolCall => self.tool_call(b, change),
            Judged::ToolResult => self.tool_result(b, change),
            Judged::RequestHeader => self.request_header(b, change),
            // R18
            Judged::RequestContext if b.open_turn.is_none() => Err(refuse(
                Rule::RequestContextOutsideTurn,
                "request/context is outside an open turn",
            )),
            Judged::LlmRetry => self.retry(b, change),
            Judged::LlmRetryStarted => self.retry_started(change),
            Judged::CodeDispatchStart | Judged::CodeDispatch => self.code_dispatch(b, change),
            Judged::CommandRun => self.command_run(change),
            Judged::CommandDone => self.command_done(change),
            Judged::SessionTitle | Judged::SessionTitleLlmRequest => self.title(),
            Judged::CompactionStart => self.compaction_start(b),
            Judged::CompactionSummary | Judged::CompactionEnd => self.compaction_close(b),
            // R52
            Judged::CompactionPrune if !names_exact_span(data, nodes) => Err(refuse(
                Rule::PruneSpan,
                "compaction/prune shadowedSeqs do not name an exact current surface span",
            )),
            // R51
            Judged::SessionEndSeed => {
                b.to_mut().compaction = None;
                // The catalog facts before an inherited marker are the parent's (N-REL-CAT).
                if self.header.generation().is_v4()
                    && field(data, "inherited") == Some(&Value::Bool(true))
                {
                    change.growth().catalog_cleared = true;
                }
                Ok(())
            }
            Judged::DeliveryAccepted => self.delivery(),
            Judged::SubagentCatalog => self.catalog(change),
            Judged::UserMessage => self.user_message(b, change),
            _ => Ok(()),
        }
    }

    /// Whether the event's `turn` and `step` are the open turn's and step's.
    fn in_open_step(&self, b: &Bounded) -> bool {
        match (b.open_turn, b.open_step) {
            (Some(t), Some(s)) if self.has_facts => {
                self.message.turn.as_ref().is_some_and(|turn| turn.is(t))
                    && self.message.step.as_ref().is_some_and(|step| step.is(s))
            }
            (Some(t), Some(s)) => is_int(self.turn, t) && is_int(self.step, s),
            _ => false,
        }
    }

    /// R1: a `turn/start` opens the next turn, none being open.
    fn turn_start(&self, b: &mut Cow<'_, Bounded>) -> Result<(), AcceptError> {
        let Judging { message, .. } = *self;
        if b.open_turn.is_some() || !num_is(message.turn.as_ref(), b.next_turn) {
            return Err(refuse(
                Rule::TurnStartNumber,
                format!(
                    "turn/start {} does not open expected turn {}",
                    num_json(message.turn.as_ref()),
                    b.next_turn
                ),
            ));
        }
        // `next_turn` moves on at the turn's end: upstream names it in R1 while the
        // turn is open.
        b.to_mut().open_turn = Some(b.next_turn);
        b.to_mut().open_step = None;
        b.to_mut().next_step = 1;
        b.to_mut().calls.clear();
        b.to_mut().chains.clear();
        Ok(())
    }

    /// R2–R4: a `turn/end` closes the open turn, its calls resolved and no step open.
    fn turn_end(&self, b: &mut Cow<'_, Bounded>) -> Result<(), AcceptError> {
        let Judging { message, .. } = *self;
        if !b
            .open_turn
            .is_some_and(|t| num_is(message.turn.as_ref(), t))
        {
            return Err(refuse(
                Rule::TurnEndUnmatched,
                format!(
                    "turn/end {} has no matching open turn",
                    num_json(message.turn.as_ref())
                ),
            ));
        }
        if let Some(call) = b.calls.first() {
            return Err(refuse(
                Rule::TurnEndUnresolvedCall,
                format!(
                    "turn/end leaves unresolved tool call {}",
                    js_text(Some(&call.id))
                ),
            ));
        }
        if b.open_step.is_some() {
            return Err(refuse(
                Rule::TurnEndCrossesStep,
                format!(
                    "turn/end {} crosses an open step",
                    num_json(message.turn.as_ref())
                ),
            ));
        }
        b.to_mut().open_turn = None;
        b.to_mut().next_turn += 1;
        Ok(())
    }

    /// R5: a `step/start` opens the next step of the open turn.
    fn step_start(&self, b: &mut Cow<'_, Bounded>) -> Result<(), AcceptError> {
        let Judging { message, .. } = *self;
        let ok = b.open_step.is_none()
            && b.open_turn
                .is_some_and(|t| num_is(message.turn.as_ref(), t))
            && num_is(message.step.as_ref(), b.next_step);
        if !ok {
            return Err(refuse(
                Rule::StepStartNumber,
                "step/start does not match the open turn and next step",
            ));
        }
        b.to_mut().open_step = Some(b.next_step);
        b.to_mut().next_step += 1;
        Ok(())
    }

    /// R6–R7: a `step/end` closes the open step, its calls resolved.
    fn step_end(&self, b: &mut Cow<'_, Bounded>) -> Result<(), AcceptError> {
        if !self.in_open_step(b) {
            return Err(refuse(
                Rule::StepEndUnmatched,
                "step/end does not match an open turn and step",
            ));
        }
        if let Some(call) = b.calls.first() {
            return Err(refuse(
                Rule::StepEndUnresolvedCall,
                format!(
                    "step/end leaves unresolved tool call {}",
                    js_text(Some(&call.id))
                ),
            ));
        }
        b.to_mut().open_step = None;
        b.to_mut().calls.clear();
        Ok(())
    }

    /// R8, R10: an `assistant/message` in the open step advertises its tool calls, each once.
    fn assistant_message(
        &self,
        b: &mut Cow<'_, Bounded>,
        change: &mut Change,
    ) -> Result<(), AcceptError> {
        let Judging { message, .. } = *self;
        if !self.in_open_step(b) {
            return Err(refuse(
                Rule::AssistantOutsideStep,
                "assistant/message does not match an open turn and step",
            ));
        }
        let mut advertised: Vec<Call> = Vec::new();
        for block in &message.calls {
            if b.calls
                .iter()
                .chain(&advertised)
                .any(|call| same(Some(&call.id), Some(&block.id)))
            {
                return Err(refuse(
                    Rule::AssistantRepeatsCall,
                    format!(
                        "assistant/message repeats advertised tool call {}",
                        js_text(Some(&block.id))
                    ),
                ));
            }
            advertised.push(Call {
                id: block.id.clone(),
                name: block.name.clone(),
                arguments: block.arguments.clone(),
                started: false,
            });
        }
        if !advertised.is_empty() {
            edit_calls(b, change, CallEdit::Advertise(advertised));
        }
        Ok(())
    }

    /// R11–R12: a `tool/call` starts exactly one advertised, unstarted call of the open step.
    fn tool_call(&self, b: &mut Cow<'_, Bounded>, change: &mut Change) -> Result<(), AcceptError> {
        let Judging { message, .. } = *self;
        if !self.in_open_step(b) {
            return Err(refuse(
                Rule::ToolCallOutsideStep,
                "tool/call does not match an open turn and step",
            ));
        }
        let invocation = message.invocation();
        let call_id = invocation.call_id.as_ref();
        let name = invocation.name.as_ref();
        let arguments = invocation.arguments.as_ref();
        let matching: Vec<usize> = b
            .calls
            .iter()
            .enumerate()
            .filter(|(_, call)| {
                same(Some(&call.id), call_id)
                    && !call.started
                    && same(call.name.as_ref(), name)
                    && same(call.arguments.as_ref(), arguments)
            })
            .map(|(index, _)| index)
            .collect();
        let [index] = matching[..] else {
            return Err(refuse(
                Rule::ToolCallUnadvertised,
                format!(
                    "tool/call {} does not match one advertised tool call",
                    js_text(call_id)
                ),
            ));
        };
        edit_calls(b, change, CallEdit::Start(index));
        Ok(())
    }

    /// R13–R16: a `tool/result` settles an advertised call of the open step (an unstarted one by
    /// the exact TOOL_NOT_STARTED repair only); a replacement needs only an open turn.
    fn tool_result(
        &self,
        b: &mut Cow<'_, Bounded>,
        change: &mut Change,
    ) -> Result<(), AcceptError> {
        let Judging { event, message, .. } = *self;
        let replace = matches!(event.surface_op(), Some(SurfaceOp::Replace(_)));
        if replace {
            if b.open_turn.is_none() {
                return Err(refuse(
                    Rule::ToolResultReplaceOutsideTurn,
                    "tool/result replacement is outside an open turn",
                ));
            }
        } else {
            if !self.in_open_step(b) {
                return Err(refuse(
                    Rule::ToolResultOutsideStep,
                    "tool/result does not match an open turn and step",
                ));
            }
            let call_id = message.source.call_id();
            let Some(index) = b
                .calls
                .iter()
                .position(|call| same(Some(&call.id), call_id))
            else {
                return Err(refuse(
                    Rule::ToolResultUnadvertised,
                    format!(
                        "tool/result {} has no advertised tool lifecycle",
                        js_text(call_id)
                    ),
                ));
            };
            // The exact-repair check reads the whole payload (rare: a call never
            // started).
            let repaired = || {
                let data = event.data_uncached();
                if self.header.generation().is_v4() {
                    event.sources().is_none()
                        && call_id
                            .and_then(Value::as_str)
                            .is_some_and(|call_id| is_v4_not_started_repair(&data, call_id))
                } else {
                    is_not_started_repair(event, &data, call_id)
                }
            };
            if !b.calls[index].started && !repaired() {
                return Err(refuse(
                    Rule::ToolResultNotRepair,
                    format!(
                        "tool/result {} is not the exact TOOL_NOT_STARTED repair",
                        js_text(call_id)
                    ),
                ));
            }
            edit_calls(b, change, CallEdit::Settle(index));
        }
        Ok(())
    }

    /// R17: a `request/header` lies inside an open turn and names the provider retries match.
    fn request_header(
        &self,
        b: &mut Cow<'_, Bounded>,
        change: &mut Change,
    ) -> Result<(), AcceptError> {
        let Judging { data, seq, .. } = *self;
        if b.open_turn.is_none() {
            return Err(refuse(
                Rule::RequestHeaderOutsideTurn,
                "request/header is outside an open turn",
            ));
        }
        if self.header.generation().is_v4() {
            change.growth().header_tools = Some((seq, bindable_tools(data)));
        }
        b.to_mut().provider = data
            .get("header")
            .and_then(|header| header.get("config"))
            .and_then(|config| config.get("provider"))
            .cloned()
            .map(Arc::new);
        Ok(())
    }

    /// N-REL-CAT: a V4 `subagent/catalog` is a fact of payload version 0 or 1, naming a child
    /// no other own catalog fact names.
    fn catalog(&self, change: &mut Change) -> Result<(), AcceptError> {
        let Judging { data, seq, .. } = *self;
        let version = field(data, "version").and_then(non_negative_safe_integer);
        let mode = field(data, "mode").and_then(Value::as_str);
        let label = field(data, "label");
        let child = field(data, "childId").and_then(Value::as_str);
        let mode_ok = matches!(
            (version, mode),
            (Some(0 | 1), Some("continuable" | "one-shot")) | (Some(1), Some("unknown"))
        );
        let label_ok = match (mode, label) {
            (Some("continuable"), label) => label.is_some_and(Value::is_string),
            (_, None) => true,
            (_, Some(label)) => label.is_string(),
        };
        let created_ok = field(data, "childCreatedAt")
            .and_then(non_negative_safe_integer)
            .is_some();
        let Some(child) = child.filter(|_| mode_ok && label_ok && created_ok) else {
            return Err(refuse(
                Rule::V4Catalog,
                format!("subagent/catalog {seq} requires a supported versioned catalog fact"),
            ));
        };
        if self.relations.growing.catalog_children.contains(child) {
            return Err(refuse(
                Rule::V4Catalog,
                format!("duplicate catalog child {child}"),
            ));
        }
        change.growth().catalog_child = Some(child.to_owned());
        Ok(())
    }

    /// N-DEV-4: a developer message's tool additions name tools its `headerSeq` header
    /// defines, each exactly once with a description and parameters.
    fn developer_binding(&self) -> Result<(), AcceptError> {
        let Judging { data, seq, .. } = *self;
        let additions: Vec<&str> = data
            .get("message")
            .and_then(|message| message.get("content"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool-addition"))
            .filter_map(|block| block.get("toolName").and_then(Value::as_str))
            .collect();
        if additions.is_empty() {
            return Ok(());
        }
        let header_seq = field(data, "headerSeq").and_then(non_negative_safe_integer);
        let tools = header_seq
            .filter(|at| *at < seq)
            .and_then(|at| self.relations.growing.header_tools.get(&at));
        let Some(tools) = tools else {
            return Err(refuse(
                Rule::V4DeveloperBinding,
                format!(
                    "developer/message {seq} headerSeq {} names no earlier request/header",
                    js_json(field(data, "headerSeq"))
                ),
            ));
        };
        match additions.iter().find(|name| !tools.iter().any(|tool| tool == *name)) {
            Some(name) => Err(refuse(
                Rule::V4DeveloperBinding,
                format!(
                    "developer/message {seq} adds tool {name} its request/header does not define once with a description and parameters"
                ),
            )),
            None => Ok(()),
        }
    }

    /// R19–R23: an `llm/retry` continues (or starts) one policy chain of the current step:
    /// numbered in order, its `retryId` kept within the chain and never reused across chains.
    fn retry(&self, b: &mut Cow<'_, Bounded>, change: &mut Change) -> Result<(), AcceptError> {
        let Judging {
            data, turn, step, ..
        } = *self;
        let step_ok = match b.open_step {
            Some(open) => is_int(step, open),
            None => is_int(step, b.next_step - 1),
        };
        if !b.open_turn.is_some_and(|t| is_int(turn, t)) || !step_ok {
            return Err(refuse(
                Rule::RetryOutsideStep,
                "llm/retry does not match the current turn and step",
            ));
        }
        let provider = field(data, "provider");
        if b.provider.is_none() || !same(provider, b.provider.as_deref()) {
            return Err(refuse(
                Rule::RetryProviderMismatch,
                "llm/retry provider does not match the open request/header",
            ));
        }
        let chain_key = (key(step), key(provider), key(field(data, "policyKey")));
        let retry = field(data, "retry");
        let retry_id = field(data, "retryId");
        let chain = b.chains.iter().position(|chain| chain.key == chain_key);
        let expected = chain.map_or(1, |index| b.chains[index].retry + 1);
        if !is_int(retry, expected) {
            return Err(refuse(
                Rule::RetryNumber,
                format!("llm/retry must use retry {expected}"),
            ));
        }
        match chain {
            Some(index) => {
                if !same(b.chains[index].retry_id.as_ref(), retry_id) {
                    return Err(refuse(
                        Rule::RetryIdChanged,
                        "llm/retry must preserve retryId across one policy chain",
                    ));
                }
                b.to_mut().chains[index].retry = expected;
            }
            None => {
                if self.relations.growing.retry_ids.contains(&key(retry_id)) {
                    return Err(refuse(
                        Rule::RetryIdReused,
                        format!(
                            "llm/retry reuses retryId {} across policy chains",
                            js_json(retry_id)
                        ),
                    ));
                }
                b.to_mut().chains.push(Chain {
                    key: chain_key,
                    retry: expected,
                    retry_id: retry_id.cloned(),
                });
            }
        }
        change.growth().retry_id = Some(key(retry_id));
        change.growth().scheduled = Some((
            (key(retry_id), expected),
            Scheduled {
                turn: turn.cloned(),
                step: step.cloned(),
                started: false,
            },
        ));
        Ok(())
    }

    /// R24–R26: an `llm/retry-started` pairs one scheduled, not yet started attempt.
    fn retry_started(&self, change: &mut Change) -> Result<(), AcceptError> {
        let Judging {
            data, turn, step, ..
        } = *self;
        let retry = field(data, "retry").and_then(non_negative_safe_integer);
        let scheduled = retry.and_then(|retry| {
            self.relations
                .growing
                .scheduled
                .get(&(key(field(data, "retryId")), retry))
                .map(|scheduled| (retry, scheduled))
        });
        let Some((retry, scheduled)) = scheduled else {
            return Err(refuse(
                Rule::RetryStartedUnpaired,
                "llm/retry-started pairs no prior scheduled attempt",
            ));
        };
        if !same(scheduled.turn.as_ref(), turn) || !same(scheduled.step.as_ref(), step) {
            return Err(refuse(
                Rule::RetryStartedWrongStep,
                "llm/retry-started does not match its scheduled turn and step",
            ));
        }
        if scheduled.started {
            return Err(refuse(
                Rule::RetryStartedRepeats,
                "llm/retry-started repeats one scheduled attempt",
            ));
        }
        change.growth().scheduled = Some((
            (key(field(data, "retryId")), retry),
            Scheduled {
                started: true,
                ..scheduled.clone()
            },
        ));
        Ok(())
    }

    /// R27–R32: a PTC dispatch (start or settle) inside an open turn keeps its root, belongs
    /// to it, and settles exactly the start it names.
    fn code_dispatch(
        &self,
        b: &mut Cow<'_, Bounded>,
        change: &mut Change,
    ) -> Result<(), AcceptError> {
        let Judging {
            judged, view, data, ..
        } = *self;
        if b.open_turn.is_none() {
            return Err(refuse(
                Rule::PtcOutsideTurn,
                format!("{view} is outside an open turn"),
            ));
        }
        let sub = key(field(data, "subCallId"));
        let root_value = field(data, "rootCallId");
        let root = key(root_value);
        let parent = field(data, "parentCallId");
        if self
            .relations
            .growing
            .ptc_roots
            .get(&sub)
            .is_some_and(|known| *known != root)
        {
            return Err(refuse(
                Rule::PtcRootChanged,
                format!("{view} changes its rootCallId"),
            ));
        }
        let parent_ok = same(parent, root_value)
            || self
                .relations
                .growing
                .ptc_roots
                .get(&key(parent))
                .is_some_and(|known| *known == root);
        if !parent_ok {
            return Err(refuse(
                Rule::PtcParentOutsideRoot,
                format!("{view} parentCallId does not belong to rootCallId"),
            ));
        }
        let start = self.relations.growing.ptc_starts.get(&sub);
        if judged == Judged::CodeDispatchStart {
            if start.is_some() {
                return Err(refuse(
                    Rule::PtcStartRepeats,
                    "tool/code-dispatch-start repeats subCallId",
                ));
            }
            change.growth().ptc_start = Some((
                sub.clone(),
                PtcStart {
                    root: root_value.cloned(),
                    parent: parent.cloned(),
                    name: field(data, "name").cloned(),
                    arguments: field(data, "arguments").cloned(),
                    settled: false,
                },
            ));
        } else {
            let Some(start) = start.filter(|start| !start.settled) else {
                return Err(refuse(
                    Rule::PtcDispatchNoStart,
                    "tool/code-dispatch has no unique start",
                ));
            };
            let arguments_equal = match (&start.arguments, field(data, "arguments")) {
                (Some(a), Some(b)) => json_equal(a, b),
                (None, None) => true,
                _ => false,
            };
            let matches = same(start.root.as_ref(), root_value)
                && same(start.parent.as_ref(), parent)
                && same(start.name.as_ref(), field(data, "name"))
                && arguments_equal;
            if !matches {
                return Err(refuse(
                    Rule::PtcDispatchMismatch,
                    "tool/code-dispatch does not match its start",
                ));
            }
            change.growth().ptc_start = Some((
                sub.clone(),
                PtcStart {
                    settled: true,
                    ..start.clone()
                },
            ));
        }
        if !self.relations.growing.ptc_roots.contains_key(&sub) {
            change.growth().ptc_root = Some((sub, root));
        }
        Ok(())
    }

    /// R33: a `command/run` names a new command id.
    fn command_run(&self, change: &mut Change) -> Result<(), AcceptError> {
        let Judging { seq, data, .. } = *self;
        let id = field(data, "commandId");
        if self.relations.growing.command_ids.contains(&key(id)) {
            return Err(refuse(
                Rule::CommandRunRepeats,
                format!("command/run repeats commandId {}", js_text(id)),
            ));
        }
        change.growth().command_id = Some(key(id));
        change.growth().command_seq = Some(seq);
        Ok(())
    }

    /// R34–R35: a `command/done` follows its `command/run`; a source it names is no command.
    fn command_done(&self, change: &mut Change) -> Result<(), AcceptError> {
        let Judging { seq, data, .. } = *self;
        let id = field(data, "commandId");
        if !self.relations.growing.command_ids.contains(&key(id)) {
            return Err(refuse(
                Rule::CommandDoneUnmatched,
                format!("command/done {} has no prior command/run", js_text(id)),
            ));
        }
        if let Some(source) = field(data, "sourceEventSeq") {
            let success = field(data, "kind").and_then(Value::as_str) == Some("success");
            let names_command = non_negative_safe_integer(source).is_some_and(|at| {
                self.relations
                    .growing
                    .command_seqs
                    .binary_search(&at)
                    .is_ok()
            });
            if !success || names_command {
                return Err(refuse(
                    Rule::CommandDoneBadSource,
                    format!("command/done {} has invalid sourceEventSeq", js_text(id)),
                ));
            }
        }
        change.growth().command_seq = Some(seq);
        Ok(())
    }

    /// R36–R38: a session title cites earlier human messages (none for a user title), and its
    /// LLM request represents them.
    fn title(&self) -> Result<(), AcceptError> {
        let Judging {
            judged,
            tag,
            seq,
            data,
            older_humans,
            ..
        } = *self;
        let seqs = field(data, "messageSeqs").and_then(Value::as_array);
        if judged == Judged::SessionTitle {
            let user = data
                .get("source")
                .and_then(|source| source.get("kind"))
                .and_then(Value::as_str)
                == Some("user");
            let empty = seqs.is_none_or(Vec::is_empty);
            if empty != user {
                return Err(refuse(
                    Rule::TitleSeqsForUser,
                    format!(
                        "session/title {seq} messageSeqs must be empty exactly for a user title"
                    ),
                ));
            }
        }
        let cites_humans = seqs.into_iter().flatten().all(|cited| {
            non_negative_safe_integer(cited).is_some_and(|at| {
                at < seq
                    && if at < self.relations.growing.human_users_from {
                        older_humans.contains(&at)
                    } else {
                        self.relations
                            .growing
                            .human_users
                            .binary_search(&at)
                            .is_ok()
                    }
            })
        });
        if !cites_humans {
            return Err(refuse(
                Rule::TitleCitesNonHuman,
                format!("{tag} {seq} messageSeqs must cite earlier human user/message events"),
            ));
        }
        if judged == Judged::SessionTitleLlmRequest
            && !title_request_messages_ok(data, self.header.generation().is_v4())
        {
            return Err(refuse(
                Rule::TitleRequestMessages,
                "session/title-llm-request messages do not represent messageSeqs",
            ));
        }
        Ok(())
    }

    /// R40–R41: a `compaction/start` opens a compaction owned by the open turn (or none).
    fn compaction_start(&self, b: &mut Cow<'_, Bounded>) -> Result<(), AcceptError> {
        let Judging { data, turn, .. } = *self;
        if b.compaction.is_some() {
            return Err(refuse(
                Rule::CompactionOverlap,
                "compaction/start overlaps an open compaction",
            ));
        }
        let owner_ok = match turn {
            Some(Value::Null) => b.open_turn.is_none(),
            other => b.open_turn.is_some_and(|t| is_int(other, t)),
        };
        if !owner_ok {
            return Err(refuse(
                Rule::CompactionStartTurn,
                "compaction/start does not match the open turn",
            ));
        }
        b.to_mut().compaction = Some(OpenCompaction {
            compaction_id: field(data, "compactionId").cloned(),
            source_command_id: field(data, "sourceCommandId").cloned(),
            turn: turn.cloned(),
            summary: false,
        });
        Ok(())
    }

    /// R42–R49: a `compaction/summary` (once, naming an exact surface span) or `compaction/end`
    /// (after a summary when it succeeds) matches the open compaction and its owner turn.
    fn compaction_close(&self, b: &mut Cow<'_, Bounded>) -> Result<(), AcceptError> {
        let Judging {
            judged,
            data,
            turn,
            nodes,
            ..
        } = *self;
        let summary = judged == Judged::CompactionSummary;
        let open = b.compaction.clone().filter(|open| {
            same(open.compaction_id.as_ref(), field(data, "compactionId"))
                && same(
                    open.source_command_id.as_ref(),
                    field(data, "sourceCommandId"),
                )
        });
        let Some(open) = open else {
            return Err(if summary {
                refuse(
                    Rule::SummaryUnmatched,
                    "compaction/summary has no matching compaction/start",
                )
            } else {
                refuse(
                    Rule::CompactionEndUnmatched,
                    "compaction/end has no matching compaction/start",
                )
            });
        };
        let owner_open = match &open.turn {
            Some(Value::Null) => b.open_turn.is_none(),
            other => b.open_turn.is_some_and(|t| is_int(other.as_ref(), t)),
        };
        if summary {
            if !owner_open {
                return Err(refuse(
                    Rule::SummaryTurn,
                    "compaction/summary does not match the open turn",
                ));
            }
            if open.summary {
                return Err(refuse(Rule::SummaryRepeats, "compaction/summary repeats"));
            }
            if !names_exact_span(data, nodes) {
                return Err(refuse(
                    Rule::SummarySpan,
                    "compaction/summary shadowedSeqs do not name an exact current surface span",
                ));
            }
            if let Some(open) = b.to_mut().compaction.as_mut() {
                open.summary = true;
            }
        } else {
            let same_owner = match (&open.turn, turn) {
                (Some(Value::Null), Some(Value::Null)) => true,
                (a, b) => same(a.as_ref(), b),
            };
            if !same_owner {
                return Err(refuse(
                    Rule::CompactionEndOwner,
                    "compaction/end changes its owner turn",
                ));
            }
            if !owner_open {
                return Err(refuse(
                    Rule::CompactionEndTurn,
                    "compaction/end does not match the open turn",
                ));
            }
            if field(data, "error").is_none() && !open.summary {
                return Err(refuse(
                    Rule::CompactionEndNoSummary,
                    "successful compaction/end requires one summary",
                ));
            }
            b.to_mut().compaction = None;
        }
        Ok(())
    }

    /// R53: a current-generation delivery marker names this session.
    fn delivery(&self) -> Result<(), AcceptError> {
        let Judging { data, header, .. } = *self;
        if header.generation().is_v4() {
            return self.delivery_v4();
        }
        // Upstream's relational pass runs with generation 2 (docs/rules.md, R53).
        let version =
            field(data, "sessionFormatVersion").map_or(Some(0), non_negative_safe_integer);
        let names = field(data, "sessionId").and_then(Value::as_str) == Some(header.id());
        if version == Some(2) && !names {
            return Err(refuse(
                Rule::DeliveryMarkerWrongSession,
                "current-generation delivery marker names the wrong Session",
            ));
        }
        Ok(())
    }

    /// N-REL-DLV: a generation-4 delivery marker of a V4 log covers earlier events and names
    /// this session (or, before the inherited cut of a fork, its parent's).
    fn delivery_v4(&self) -> Result<(), AcceptError> {
        let Judging {
            data, header, seq, ..
        } = *self;
        let version =
            field(data, "sessionFormatVersion").map_or(Some(0), non_negative_safe_integer);
        if version != Some(4) {
            return Ok(());
        }
        let through = field(data, "throughSeq").and_then(non_negative_safe_integer);
        if through.is_none_or(|through| through >= seq) {
            return Err(refuse(
                Rule::DeliveryMarkerWrongSession,
                "delivery throughSeq must precede its marker",
            ));
        }
        let Some(session) = field(data, "sessionId")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
        else {
            return Err(refuse(
                Rule::DeliveryMarkerWrongSession,
                "delivery requires a nonempty Session id",
            ));
        };
        // A fork's inherited prefix holds its parent's markers. Where the cut lies is known
        // only at the last tagged end-seed, so a seeded fork's foreign marker passes anywhere
        // (docs/divergences.md, "V4 delivery markers of a fork").
        let inherited = header.parent_session().is_some() && header.is_seeded();
        if session != header.id() && !inherited {
            return Err(refuse(
                Rule::DeliveryMarkerWrongSession,
                "current-generation delivery marker names the wrong Session",
            ));
        }
        Ok(())
    }

    /// R50: a compaction checkpoint matches the open compaction; a human message is noted for
    /// the titles that may cite it (R37).
    fn user_message(
        &self,
        b: &mut Cow<'_, Bounded>,
        change: &mut Change,
    ) -> Result<(), AcceptError> {
        let Judging {
            event,
            seq,
            message,
            ..
        } = *self;
        let source = &message.source;
        // A system message projects to a plugin-source user message.
        let system = event.event_type == EventType::SystemMessage;
        // V4 names a compaction checkpoint by its own source kind (docs/format-v4.md §2.7).
        let named = if self.header.generation().is_v4() {
            !system && source.compact_checkpoint
        } else {
            (system || source.plugin) && source.compact
        };
        let checkpoint = named && matches!(event.surface_op(), Some(SurfaceOp::Replace(_)));
        if checkpoint {
            let matches = b.compaction.as_ref().is_some_and(|open| {
                same(open.compaction_id.as_ref(), source.compaction_id())
                    && same(open.source_command_id.as_ref(), source.source_command_id())
            });
            if !matches {
                return Err(refuse(
                    Rule::CheckpointUnmatched,
                    format!("compaction checkpoint at seq {seq} has no matching compaction/start"),
                ));
            }
        }
        if source.user && !system {
            change.human_user = Some(seq);
        }
        Ok(())
    }
}

/// The tools a V4 `request/header` defines exactly once by name, each with a string
/// `description` and object `parameters`: what a developer message may add (N-DEV-4).
fn bindable_tools(data: &Value) -> Vec<String> {
    let tools: Vec<&Value> = data
        .get("header")
        .and_then(|header| header.get("tools"))
        .and_then(Value::as_array)
        .map(|tools| tools.iter().collect())
        .unwrap_or_default();
    let name = |tool: &Value| tool.get("name").and_then(Value::as_str).map(str::to_owned);
    let mut names: Vec<String> = tools
        .iter()
        .filter(|tool| {
            tool.get("description").is_some_and(Value::is_string)
                && tool.get("parameters").is_some_and(Value::is_object)
        })
        .filter_map(|tool| name(tool))
        .filter(|candidate| {
            tools
                .iter()
                .filter(|tool| name(tool).as_deref() == Some(candidate.as_str()))
                .count()
                == 1
        })
        .collect();
    names.sort();
    names
}
