//! [`Agent`]: one turn at a time, in the exact event order of persistence-compaction §7.1 (V3
//! shapes):
//!
//! ```text
//! turn/start
//!   [pre-step hook]                       checkpoint
//!   step/start · system/message? · user/message? · request/header? · request/context?
//!                                         durable: checkpoint before dispatch
//!   assistant/attempt*                    failed attempts, each with its stream
//!   assistant/message {stream, usage?}    the answer (or the delivered prefix, interrupted)
//!   tool/call*                            durable: checkpoint before the tool bodies
//!   tool/result*                          in the model's order, citing their tool/call
//!   step/end
//!   … more steps while the model calls tools …
//! turn/end {reason}
//! ```
//!
//! `step/end` and `turn/end` are always written, whatever ends the turn: the model stops, it
//! hits its token limit, a request fails for good, the user cancels, or the step limit is
//! reached. Only a failing store leaves a turn open, and the next open closes it (§8).

use std::sync::Arc;

use futures_util::StreamExt;
use serde_json::{json, Value};
use strata_core::payload::{
    assistant_message, system_message, user_text_message, AssistantAttempt, AssistantMessage,
    RequestHeader, StepEnd, StepStart, SystemMessage, TurnEnd, TurnStart, UserMessage,
};
use strata_core::{Candidate, EventType, Placement, Session, SurfaceIntent};
use strata_store::SessionWriter;
use tokio_util::sync::CancellationToken;

use super::dispatch::{run_tools, truncated_pairs};
use super::request::{context_matches, context_payload, header_reason, header_value};
use super::{
    chat_request, failure_value, new_id, plan_system, AgentConfig, AgentError, Clock, Journal,
    NoObserver, Observer, PreStepHook, StepPoint, StreamRecorder, SystemClock, SystemPlan,
    SYSTEM_PROMPT_PLUGIN,
};
use crate::llm::{
    stream_with_retries, AttemptItem, ChatModel, ChatRequest, FinishReason, LlmError, RetryPolicy,
    StreamEvent,
};
use crate::tools::{ToolSet, Workspace};

/// The agent loop on one open session.
pub struct Agent {
    journal: Journal,
    model: Arc<dyn ChatModel>,
    tools: ToolSet,
    workspace: Workspace,
    config: AgentConfig,
    hook: Option<Arc<dyn PreStepHook>>,
    /// The surface's replace generation at this instance's previous request; `None` before the
    /// first, which makes the first request of a reopened session a `resume`.
    previous_generation: Option<u64>,
}

/// How a turn ended (its `turn/end` reason).
#[derive(Debug, Clone, PartialEq)]
pub enum TurnOutcome {
    /// The model answered without calling tools (`completed`).
    Completed,
    /// The model hit its token limit (`max-tokens`).
    MaxTokens,
    /// The user cancelled (`aborted`, reason `user`).
    Aborted,
    /// A model request failed for good (`error`).
    Failed(LlmError),
    /// The turn reached the step limit (`error`, code `STEP_LIMIT`).
    StepLimit,
}

impl TurnOutcome {
    /// The `turn/end` reason object.
    pub fn reason(&self, max_steps: u64) -> Value {
        match self {
            TurnOutcome::Completed => json!({"kind": "completed"}),
            TurnOutcome::MaxTokens => json!({"kind": "max-tokens"}),
            TurnOutcome::Aborted => json!({"kind": "aborted", "reason": {"kind": "user"}}),
            TurnOutcome::Failed(error) => json!({"kind": "error", "error": failure_value(error)}),
            TurnOutcome::StepLimit => json!({"kind": "error", "error": {
                "message": format!("turn stopped after {max_steps} steps"),
                "code": "STEP_LIMIT",
            }}),
        }
    }
}

/// What [`Agent::run_turn`] reports.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnReport {
    /// The turn number.
    pub turn: u64,
    /// How it ended.
    pub outcome: TurnOutcome,
    /// Steps started.
    pub n_steps: u64,
}

/// How a step ended.
pub(crate) enum StepExit {
    /// Tool results were committed: the model speaks next.
    Next,
    /// The turn ends.
    Turn(TurnOutcome),
}

/// How one model call ended.
enum Call {
    Answer {
        recorder: StreamRecorder,
        reason: FinishReason,
    },
    Failure {
        recorder: StreamRecorder,
        error: LlmError,
    },
}

impl Agent {
    /// An agent writing to `writer` (a fresh session from `Store::create`, or one reopened with
    /// `Store::open_write`, which has already closed a crashed turn).
    pub fn new(
        writer: SessionWriter,
        model: Arc<dyn ChatModel>,
        tools: ToolSet,
        workspace: Workspace,
        config: AgentConfig,
    ) -> Agent {
        Agent {
            journal: Journal::new(writer, Arc::new(SystemClock), Arc::new(NoObserver)),
            model,
            tools,
            workspace,
            config,
            hook: None,
            previous_generation: None,
        }
    }

    /// Shows appended events, stream deltas and warnings to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Agent {
        self.journal.set_observer(observer);
        self
    }

    /// Takes event times from `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Agent {
        self.journal.set_clock(clock);
        self
    }

    /// Runs `hook` at every pre-step point and on context overflow.
    pub fn with_hook(mut self, hook: Arc<dyn PreStepHook>) -> Agent {
        self.hook = Some(hook);
        self
    }

    /// The session handle.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// Changes the system prompt; the next step replaces the system node (§7.3) and its request
    /// starts a new series.
    pub fn set_system_prompt(&mut self, prompt: impl Into<String>) {
        self.config.system_prompt = prompt.into();
    }

    /// Flushes and closes the session writer. Blocks until the writer's flusher has stopped, as
    /// the store calls that open the writer do: call it off the async executor (the CLI closes
    /// the agent after its runtime's turns are over).
    pub fn close(self) -> Result<(), AgentError> {
        self.journal.close()
    }

    /// Runs one turn for the user's `prompt` until the model stops calling tools, the turn is
    /// cancelled through `cancel`, a request fails for good, or the step limit is reached.
    /// Those all end the turn properly and come back as a [`TurnOutcome`]; an `Err` means the
    /// store failed and the turn is left open for crash repair.
    pub async fn run_turn(
        &mut self,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Result<TurnReport, AgentError> {
        let turn = self.journal.with_session(next_turn);
        self.journal
            .append(vec![Candidate::log_only(TurnStart { turn })])
            .await?;
        let mut n_steps = 0;
        let outcome = loop {
            if n_steps >= self.config.max_steps {
                break TurnOutcome::StepLimit;
            }
            self.pre_step(turn, n_steps + 1, cancel).await;
            if cancel.is_cancelled() {
                break TurnOutcome::Aborted;
            }
            self.journal.checkpoint()?;
            n_steps += 1;
            let user = (n_steps == 1).then_some(prompt);
            match self.run_step(turn, n_steps, user, cancel).await? {
                StepExit::Next => {}
                StepExit::Turn(outcome) => break outcome,
            }
        };
        let reason = outcome.reason(self.config.max_steps);
        self.journal
            .append(vec![Candidate::log_only(TurnEnd { turn, reason })])
            .await?;
        Ok(TurnReport {
            turn,
            outcome,
            n_steps,
        })
    }

    async fn pre_step(&self, turn: u64, step: u64, cancel: &CancellationToken) {
        let Some(hook) = &self.hook else { return };
        if cancel.is_cancelled() {
            return;
        }
        let point = StepPoint {
            journal: &self.journal,
            turn,
            step,
            model: &*self.model,
            cancel,
        };
        if let Err(error) = hook.before_step(point).await {
            self.journal.observer().warning(&format!(
                "pre-step hook failed: {error}; continuing the turn"
            ));
        }
    }

    async fn run_step(
        &mut self,
        turn: u64,
        step: u64,
        user: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<StepExit, AgentError> {
        let mut opening = vec![Candidate::log_only(StepStart { turn, step })];
        // Configured text, compared with and stored beside strings read from the log (held).
        let prompt = &*strata_core::json::held_from_text(&self.config.system_prompt);
        let (system, generation) = self.journal.with_session(|session| {
            (
                plan_system(session, prompt),
                session.surface().replace_generation(),
            )
        });
        let system_node = |message| SystemMessage {
            turn,
            step,
            message,
        };
        match system {
            SystemPlan::Append => opening.push(Candidate::surface(
                system_node(system_message(&new_id(), prompt, SYSTEM_PROMPT_PLUGIN)),
                SurfaceIntent::append(),
            )),
            SystemPlan::Replace(seq) => opening.push(Candidate::surface(
                system_node(system_message(&new_id(), prompt, SYSTEM_PROMPT_PLUGIN)),
                SurfaceIntent::replace(seq, seq, vec![seq]),
            )),
            SystemPlan::Unchanged => {}
        }
        let generation = generation + u64::from(matches!(system, SystemPlan::Replace(_)));
        if let Some(text) = user {
            opening.push(Candidate::surface(
                UserMessage {
                    message: user_text_message(&new_id(), &strata_core::json::held_from_text(text)),
                },
                SurfaceIntent::append(),
            ));
        }
        opening.extend(self.request_envelope(generation));
        // Durable on return: the request envelope is on disk before the model is called.
        self.journal.append(opening).await?;
        let end = self.step_body(turn, step, cancel).await?;
        self.journal
            .append(vec![Candidate::log_only(StepEnd { turn, step })])
            .await?;
        Ok(end)
    }

    /// The `request/header` and `request/context` the next request needs (§7.2), for a surface
    /// at replace generation `generation`.
    fn request_envelope(&mut self, generation: u64) -> Vec<Candidate> {
        let desired = header_value(&self.config.call, &self.tools.header_schemas());
        let previous = self.previous_generation;
        let call = &self.config.call;
        let (reason, context_ok) = self.journal.with_session(|session| {
            (
                header_reason(
                    session.request_header().map(|header| &**header),
                    &desired,
                    previous,
                    generation,
                ),
                context_matches(session.request_context().map(|context| &**context), call),
            )
        });
        let mut envelope = Vec::new();
        if let Some((reason, starts_series)) = reason {
            envelope.push(Candidate::log_only(RequestHeader {
                header: desired,
                reason,
                starts_series,
            }));
        }
        if !context_ok {
            envelope.push(Candidate::log_only(context_payload(call)));
        }
        self.previous_generation = Some(generation);
        envelope
    }

    async fn step_body(
        &mut self,
        turn: u64,
        step: u64,
        cancel: &CancellationToken,
    ) -> Result<StepExit, AgentError> {
        let mut n_restarts = 0;
        loop {
            let request = self
                .journal
                .with_session(|session| chat_request(session, self.config.reasoning))?;
            self.journal.checkpoint()?;
            let (recorder, error) = match self.call_model(turn, step, &request, cancel).await? {
                Call::Answer { recorder, reason } => {
                    return self.answer(turn, step, recorder, reason, cancel).await
                }
                Call::Failure { recorder, error } => (recorder, error),
            };
            let now = self.journal.now();
            if matches!(error, LlmError::Cancelled) {
                let delivered = recorder.has_visible();
                let settled = recorder.fail(&error, now);
                let candidate = if delivered {
                    Candidate::surface(
                        AssistantMessage {
                            turn,
                            step,
                            message: self.assistant_message(settled.content),
                            stream: settled.stream,
                            usage: settled.usage,
                            interrupted: true,
                        },
                        Placement::append(),
                    )
                } else {
                    attempt(turn, step, settled.stream)
                };
                self.journal.append(vec![candidate]).await?;
                return Ok(StepExit::Turn(TurnOutcome::Aborted));
            }
            let content_delivered = recorder.n_events() > 0;
            let settled = recorder.fail(&error, now);
            self.journal
                .append(vec![attempt(turn, step, settled.stream)])
                .await?;
            if matches!(error, LlmError::ContextWindowExceeded(_))
                && self.recover_overflow(turn, step, &error, cancel).await
            {
                let generation = self
                    .journal
                    .with_session(|session| session.surface().replace_generation());
                let envelope = self.request_envelope(generation);
                self.journal.append(envelope).await?;
                continue;
            }
            // A failure after content was delivered is not retried by the retry stream (the
            // user saw output); the step starts a fresh call, which is logged as its own attempt.
            let restart = content_delivered && RetryPolicy::is_retryable(&error);
            match restart
                .then(|| self.config.retry.retry_delay(n_restarts + 1, &error, false))
                .flatten()
            {
                Some(delay) => {
                    n_restarts += 1;
                    self.journal.observer().warning(&format!(
                        "model stream failed after delivering output ({error}); restarting the request in {} ms",
                        delay.as_millis()
                    ));
                    tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return Ok(StepExit::Turn(TurnOutcome::Aborted)),
                        _ = tokio::time::sleep(delay) => {}
                    }
                }
                None => return Ok(StepExit::Turn(TurnOutcome::Failed(error))),
            }
        }
    }

    /// Streams one model call under the retry policy, logging each retried attempt.
    async fn call_model(
        &self,
        turn: u64,
        step: u64,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<Call, AgentError> {
        let mut recorder = StreamRecorder::new();
        let mut attempts =
            stream_with_retries(&*self.model, request, self.config.retry, cancel.clone());
        while let Some(item) = attempts.next().await {
            match item {
                Ok(AttemptItem::Event(StreamEvent::Finish { reason })) => {
                    return Ok(Call::Answer { recorder, reason });
                }
                Ok(AttemptItem::Event(event)) => {
                    self.journal.observer().stream(&event);
                    recorder.push(event, self.journal.now());
                }
                Ok(AttemptItem::Retrying(failed)) => {
                    let settled =
                        std::mem::take(&mut recorder).fail(&failed.error, self.journal.now());
                    self.journal
                        .append(vec![attempt(turn, step, settled.stream)])
                        .await?;
                    self.journal.observer().warning(&format!(
                        "model attempt {} failed ({}); retrying in {} ms",
                        failed.attempt,
                        failed.error,
                        failed.retry_in.map_or(0, |delay| delay.as_millis())
                    ));
                }
                Err(failed) => {
                    return Ok(Call::Failure {
                        recorder,
                        error: failed.error,
                    })
                }
            }
        }
        Ok(Call::Failure {
            recorder,
            error: LlmError::StreamDisconnected {
                detail: "retry stream ended without a finish or an error".into(),
                request_id: None,
            },
        })
    }

    async fn recover_overflow(
        &self,
        turn: u64,
        step: u64,
        error: &LlmError,
        cancel: &CancellationToken,
    ) -> bool {
        let Some(hook) = &self.hook else { return false };
        let point = StepPoint {
            journal: &self.journal,
            turn,
            step,
            model: &*self.model,
            cancel,
        };
        match hook.recover_overflow(point, error).await {
            Ok(recovered) => recovered && !cancel.is_cancelled(),
            Err(hook_error) => {
                self.journal
                    .observer()
                    .warning(&format!("context overflow recovery failed: {hook_error}"));
                false
            }
        }
    }

    /// Settles a finished answer: the `assistant/message`, then its tool calls if any.
    async fn answer(
        &self,
        turn: u64,
        step: u64,
        recorder: StreamRecorder,
        reason: FinishReason,
        cancel: &CancellationToken,
    ) -> Result<StepExit, AgentError> {
        let settled = recorder.settle(&reason, self.journal.now());
        let calls = settled.tool_calls;
        let message = Candidate::surface(
            AssistantMessage {
                turn,
                step,
                message: self.assistant_message(settled.content),
                stream: settled.stream,
                usage: settled.usage,
                interrupted: false,
            },
            Placement::append(),
        );
        if reason == FinishReason::Length {
            // Arguments may be cut off: answer each call without running it.
            let message_seq = self.journal.with_session(Session::next_seq);
            let mut batch = vec![message];
            batch.extend(truncated_pairs(turn, step, &calls, message_seq));
            self.journal.append(batch).await?;
            return Ok(StepExit::Turn(TurnOutcome::MaxTokens));
        }
        if calls.is_empty() {
            self.journal.append(vec![message]).await?;
            return Ok(StepExit::Turn(TurnOutcome::Completed));
        }
        run_tools(
            &self.journal,
            &self.tools,
            &self.workspace,
            self.config.parallel_tools,
            turn,
            step,
            message,
            &calls,
            cancel,
        )
        .await?;
        if cancel.is_cancelled() {
            return Ok(StepExit::Turn(TurnOutcome::Aborted));
        }
        Ok(StepExit::Next)
    }

    fn assistant_message(&self, content: Vec<Value>) -> Value {
        assistant_message(
            &new_id(),
            content,
            &self.config.call.provider,
            &self.config.call.model,
        )
    }
}

fn attempt(turn: u64, step: u64, stream: Vec<Value>) -> Candidate {
    Candidate::log_only(AssistantAttempt { turn, step, stream })
}

/// The next turn number: one past the last `turn/start`, or 1.
fn next_turn(session: &Session) -> u64 {
    // O(1) in both session modes: the latest-by-type fold, not a scan of the log.
    session
        .latest(&EventType::TurnStart)
        .and_then(|event| event.u64_field("turn"))
        .map_or(1, |turn| turn + 1)
}
