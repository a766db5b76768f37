//! `strata compact` without `--offline` (issue 27 item 3): the checkpoint summary comes from a
//! chat model, built, configured and retried exactly as `chat` and `run` build theirs
//! ([`super::agent::chat_model`]: `--model-script`, `--model`, `STRATA_BASE_URL`,
//! `DEEPSEEK_API_KEY`/`STRATA_API_KEY`, `STRATA_MODEL`), and asked the way the agent's own
//! automatic compaction asks it ([`LlmSummarizer`]: the log's last request header, the head of
//! the derived messages, the directive, `tool_choice: none`).
//!
//! The compaction itself runs on the command's thread, where the store's blocking writer lives
//! (a PostgreSQL writer drives a runtime of its own and refuses to start inside another); only
//! the model call runs on a Tokio runtime of this module's. What is written is the library's:
//! the attempt's `compaction/start`, then `compaction/summary`, the checkpoint and
//! `compaction/end` on success, or `compaction/start` and `compaction/end {error}` on failure,
//! which leaves the surface as it was.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use serde_json::Value;
use strata_agent::agent::{AgentConfig, LlmSummarizer, ReasoningReplay};
use strata_agent::llm::{ChatModel, RetryPolicy};
use strata_compact::{SummarizeError, Summarizer, Summary, SummaryRequest};
use tokio_util::sync::CancellationToken;

/// The model flags of `strata compact`, named as `chat` and `run` name theirs.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelFlags {
    /// `--model-script FILE`: replay a scripted model instead of calling the API.
    pub model_script: Option<PathBuf>,
    /// `--model NAME`: the model to ask.
    pub model: Option<String>,
}

/// A [`Summarizer`] calling the agent's chat model through [`LlmSummarizer`], on a runtime of
/// its own.
pub(crate) struct ModelSummarizer {
    runtime: tokio::runtime::Runtime,
    model: Arc<dyn ChatModel>,
    /// The model the summary request names instead of the log's (`--model`, else
    /// `$STRATA_MODEL`); `None` keeps the header's, so the request extends the conversation's.
    model_name: Option<String>,
    session_id: String,
    reasoning: ReasoningReplay,
    retry: RetryPolicy,
}

impl ModelSummarizer {
    /// The summarizer `flags` and the environment describe. Fails (before anything is opened
    /// for writing) on a bad configuration: a base URL that is not http(s), an unreadable model
    /// script.
    pub(crate) fn new(flags: &ModelFlags) -> anyhow::Result<ModelSummarizer> {
        let (model, call, retry) =
            super::agent::chat_model(flags.model_script.as_deref(), flags.model.as_deref())?;
        let from_env = || {
            std::env::var("STRATA_MODEL")
                .ok()
                .filter(|name| !name.is_empty())
        };
        let model_name = match &flags.model_script {
            // A scripted model answers whatever the request names.
            Some(_) => flags.model.clone(),
            None => flags.model.clone().or_else(from_env),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("start the runtime for the model call")?;
        Ok(ModelSummarizer {
            runtime,
            model,
            model_name,
            session_id: String::new(),
            // The loop's own policy, so the request head is the one the agent would send.
            reasoning: AgentConfig::new(call).reasoning,
            retry,
        })
    }

    /// Names the session the summaries are for (in the model client's messages).
    pub(crate) fn set_session(&mut self, id: String) {
        self.session_id = id;
    }

    /// `request` naming [`ModelSummarizer::model_name`] in its header's config, when set.
    fn retargeted(&self, request: &SummaryRequest) -> SummaryRequest {
        let mut request = request.clone();
        if let (Some(name), Some(header)) = (&self.model_name, &request.header) {
            let mut header = Value::clone(header);
            if let Some(config) = header.get_mut("config").and_then(Value::as_object_mut) {
                config.insert("model".into(), Value::from(name.as_str()));
            }
            request.header = Some(Arc::new(header));
        }
        request
    }
}

impl Summarizer for ModelSummarizer {
    fn summarize(
        &self,
        request: &SummaryRequest,
    ) -> impl Future<Output = Result<Summary, SummarizeError>> + Send {
        let request = self.retargeted(request);
        let model = Arc::clone(&self.model);
        let session_id = self.session_id.clone();
        let (reasoning, retry) = (self.reasoning, self.retry);
        let task = self.runtime.spawn(async move {
            let summarizer = LlmSummarizer::new(
                model.as_ref(),
                session_id,
                reasoning,
                retry,
                CancellationToken::new(),
            );
            summarizer.summarize(&request).await
        });
        async move {
            task.await.unwrap_or_else(|error| {
                Err(SummarizeError::Failed {
                    code: "INTERNAL".into(),
                    message: format!("the model call did not finish: {error}"),
                })
            })
        }
    }
}
