//! Auto-compaction for the loop (persistence-compaction §5.3, §5.5): strata-compact's drivers
//! run at the pre-step point and on context overflow, summarizing with the loop's own model.
//!
//! - [`LlmSummarizer`] sends the summary request as a byte-prefix extension of the last
//!   conversation request (§5.9): the same header (model, settings, tools), the head of the
//!   derived messages converted exactly as the loop converts them, then the directive as the
//!   last user message, with `tool_choice: none`.
//! - [`AgentHost`] lets the drivers read the session and append through the [`Journal`], so
//!   compaction batches are validated, durable and shown to the observer like any append.
//! - [`AutoCompaction`] is the [`PreStepHook`]: pressure compaction before each step, overflow
//!   recovery at most once per step (so a provider that keeps refusing cannot loop).

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;

use futures_util::StreamExt;
use serde_json::Value;
use strata_compact::IdGenerator;
use strata_compact::{
    AutoStatus, CompactError, CompactionHost, Compactor, Pruner, SummarizeError, Summarizer,
    Summary, SummaryRequest,
};
use strata_core::{Candidate, Seq, Session};
use tokio_util::sync::CancellationToken;

use super::{
    chat_messages, request_from_header, AgentError, HookError, HookFuture, Journal, PreStepHook,
    ReasoningReplay, StepPoint, StreamRecorder,
};
use crate::llm::{
    stream_with_retries, AttemptItem, ChatMessage, ChatModel, FinishReason, LlmError, RetryPolicy,
    StreamEvent, ToolChoice,
};

/// Summarizes with a chat model, under the conversation's own header.
pub struct LlmSummarizer<'a> {
    model: &'a dyn ChatModel,
    session_id: String,
    reasoning: ReasoningReplay,
    retry: RetryPolicy,
    cancel: CancellationToken,
}

impl<'a> LlmSummarizer<'a> {
    /// A summarizer calling `model` for session `session_id`, converting messages with
    /// `reasoning` (the loop's policy, so the request head matches), retrying under `retry`,
    /// stopping when `cancel` fires.
    pub fn new(
        model: &'a dyn ChatModel,
        session_id: impl Into<String>,
        reasoning: ReasoningReplay,
        retry: RetryPolicy,
        cancel: CancellationToken,
    ) -> LlmSummarizer<'a> {
        LlmSummarizer {
            model,
            session_id: session_id.into(),
            reasoning,
            retry,
            cancel,
        }
    }

    async fn run(&self, request: &SummaryRequest) -> Result<Summary, SummarizeError> {
        let failed = |code: &str, message: String| SummarizeError::Failed {
            code: code.to_owned(),
            message,
        };
        let header = request.header.as_deref().ok_or_else(|| {
            failed(
                "NO_HEADER",
                "the log has no request/header to summarize under".into(),
            )
        })?;
        let mut messages = chat_messages(
            request.messages.iter().map(|message| message.value()),
            self.reasoning,
        );
        messages.push(ChatMessage::user(request.instruction.clone()));
        let mut chat = request_from_header(&self.session_id, header, messages)
            .map_err(|error| failed("BAD_HEADER", error.to_string()))?;
        chat.max_tokens = Some(request.max_tokens);
        chat.tool_choice = (!chat.tools.is_empty()).then_some(ToolChoice::None);
        let config = header.get("config");
        let name = |key: &str| {
            config
                .and_then(|config| config.get(key))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let mut recorder = StreamRecorder::new();
        let mut attempts = stream_with_retries(self.model, &chat, self.retry, self.cancel.clone());
        while let Some(item) = attempts.next().await {
            match item {
                Ok(AttemptItem::Event(StreamEvent::Finish { reason })) => {
                    if reason == FinishReason::Length {
                        return Err(SummarizeError::MaxTokens {
                            limit: request.max_tokens,
                        });
                    }
                    let settled = std::mem::take(&mut recorder).settle(&reason, 0);
                    let text = settled
                        .content
                        .iter()
                        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
                        .filter_map(|block| block.get("text").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect();
                    return Ok(Summary {
                        text,
                        provider: name("provider"),
                        model: name("model"),
                        usage: settled.usage,
                        raw_output: Some(settled.content),
                    });
                }
                Ok(AttemptItem::Event(event)) => recorder.push(event, 0),
                Ok(AttemptItem::Retrying(_)) => recorder = StreamRecorder::new(),
                Err(failure) => {
                    return Err(match failure.error {
                        LlmError::Cancelled => SummarizeError::Cancelled,
                        error => failed(error.code(), error.to_string()),
                    })
                }
            }
        }
        Err(failed(
            "STREAM_DISCONNECTED",
            "summary stream ended without a finish".into(),
        ))
    }
}

impl Summarizer for LlmSummarizer<'_> {
    fn summarize(
        &self,
        request: &SummaryRequest,
    ) -> impl Future<Output = Result<Summary, SummarizeError>> + Send {
        self.run(request)
    }
}

/// The loop's [`Journal`] as a compaction host.
pub struct AgentHost<'a> {
    journal: &'a Journal,
}

impl<'a> AgentHost<'a> {
    /// Hosts `journal`.
    pub fn new(journal: &'a Journal) -> AgentHost<'a> {
        AgentHost { journal }
    }
}

/// Why an [`AgentHost`] append failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentHostError {
    /// The journal refused or failed the append.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The batch landed at another seq than it was built for (another appender interleaved).
    #[error("compaction batch built for seq {expected} landed at seq {found}")]
    SeqMoved {
        /// The seq the batch was built for.
        expected: u64,
        /// Where it landed.
        found: u64,
    },
}

impl CompactionHost for AgentHost<'_> {
    type Error = AgentHostError;

    fn with_session<R>(&self, f: impl FnOnce(&Session) -> R) -> R {
        self.journal.with_session(f)
    }

    fn append(
        &mut self,
        batch: Vec<Candidate>,
        first_seq: Seq,
    ) -> impl Future<Output = Result<(), AgentHostError>> + Send {
        let journal = self.journal;
        async move {
            let events = journal.append(batch).await?;
            match events.first() {
                Some(first) if first.seq() != first_seq => Err(AgentHostError::SeqMoved {
                    expected: first_seq.get(),
                    found: first.seq().get(),
                }),
                _ => Ok(()),
            }
        }
    }
}

/// Automatic compaction as the loop's pre-step hook.
pub struct AutoCompaction {
    compactor: Compactor,
    pruner: Option<Pruner>,
    reasoning: ReasoningReplay,
    retry: RetryPolicy,
    ids: tokio::sync::Mutex<IdGenerator>,
    /// The `(turn, step)` of the last overflow recovery: one per step.
    last_overflow: Mutex<Option<(u64, u64)>>,
}

impl AutoCompaction {
    /// Compacts with `compactor`, pruning oversized tool results first when `pruner` is given;
    /// summary requests convert messages with `reasoning` and retry under `retry`.
    pub fn new(
        compactor: Compactor,
        pruner: Option<Pruner>,
        reasoning: ReasoningReplay,
        retry: RetryPolicy,
    ) -> AutoCompaction {
        let mut seed = RandomState::new().build_hasher();
        seed.write_u64(0x5eed);
        AutoCompaction {
            compactor,
            pruner,
            reasoning,
            retry,
            ids: tokio::sync::Mutex::new(IdGenerator::seeded(seed.finish())),
            last_overflow: Mutex::new(None),
        }
    }

    fn summarizer<'a>(&self, point: &StepPoint<'a>) -> LlmSummarizer<'a> {
        LlmSummarizer::new(
            point.model,
            point.journal.id(),
            self.reasoning,
            self.retry,
            point.cancel.clone(),
        )
    }
}

impl PreStepHook for AutoCompaction {
    fn before_step<'a>(&'a self, point: StepPoint<'a>) -> HookFuture<'a, Result<(), HookError>> {
        Box::pin(async move {
            let summarizer = self.summarizer(&point);
            let mut host = AgentHost::new(point.journal);
            let mut ids = self.ids.lock().await;
            let report = match self
                .compactor
                .compact_if_needed(&mut host, &summarizer, self.pruner.as_ref(), &mut ids)
                .await
            {
                Ok(report) => report,
                // No context window known for this route: nothing to measure against.
                Err(CompactError::NoContextWindow) => return Ok(()),
                Err(error) => {
                    return Err(HookError {
                        message: format!("compaction failed: {error}"),
                    })
                }
            };
            match report.status {
                AutoStatus::Failed => Err(HookError {
                    message: "compaction attempt failed (its compaction/end records why)".into(),
                }),
                AutoStatus::StillAboveThreshold => Err(HookError {
                    message: format!(
                        "compaction still above threshold after {} compaction attempts ({} estimated tokens >= threshold {})",
                        report.attempts.len(),
                        report.after.total_tokens,
                        report.budget.threshold_tokens
                    ),
                }),
                _ => Ok(()),
            }
        })
    }

    fn recover_overflow<'a>(
        &'a self,
        point: StepPoint<'a>,
        _error: &'a LlmError,
    ) -> HookFuture<'a, Result<bool, HookError>> {
        Box::pin(async move {
            {
                let mut last = self
                    .last_overflow
                    .lock()
                    .unwrap_or_else(|poison| poison.into_inner());
                if *last == Some((point.turn, point.step)) {
                    return Ok(false);
                }
                *last = Some((point.turn, point.step));
            }
            let summarizer = self.summarizer(&point);
            let mut host = AgentHost::new(point.journal);
            let ids = self.ids.lock().await.next_ids();
            let report = self
                .compactor
                .recover_overflow(&mut host, &summarizer, self.pruner.as_ref(), &ids)
                .await
                .map_err(|error| HookError {
                    message: format!("overflow compaction failed: {error}"),
                })?;
            Ok(report.retry)
        })
    }
}
