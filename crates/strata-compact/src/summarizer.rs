//! The summarizer seam: what a compaction asks for and what it gets back
//! (persistence-compaction §5.5, §5.9).
//!
//! A [`Summarizer`] turns a [`SummaryRequest`] into a [`Summary`]. The LLM summarizer
//! lives in strata-agent (it owns the HTTP client); this crate defines the trait, shapes
//! the request, and ships the deterministic offline [`ExtractiveSummarizer`](crate::ExtractiveSummarizer).
//!
//! Request shape, and why (§5.9): the summary request must be a *byte-prefix extension*
//! of the last conversation request, so the provider's prompt cache covers everything
//! but the directive. The region is head-anchored, so [`SummaryRequest::messages`] is
//! exactly the head of the derived messages (system prompt, then the shadowed span, as
//! the model last saw them), sent with the same header (config and tools, although no
//! tool may be called), and the directive goes last as one user message. A summarizer
//! must not add its own system prompt or drop the tools.

use std::future::Future;
use std::sync::Arc;

use serde_json::{json, Value};
use strata_core::{Message, Seq};

/// A request for a summary of a shadowed span.
#[derive(Clone, Debug)]
pub struct SummaryRequest {
    /// The canonical request header of the last request (`config`, `tools`, …).
    pub header: Option<Arc<Value>>,
    /// The latest `request/context` (provider, model, context window).
    pub context: Option<Arc<Value>>,
    /// The exact head of the derived messages: everything before the span (the system
    /// prompt) and the shadowed span itself, in surface order.
    pub messages: Vec<Message>,
    /// Index in `messages` of the first shadowed message.
    pub shadowed_from: usize,
    /// The shadowed node seqs, in surface order.
    pub shadowed: Vec<Seq>,
    /// The directive, sent last as a user message (see [`SummaryRequest::instruction_message`]).
    pub instruction: String,
    /// Cap on generated tokens.
    pub max_tokens: u32,
}

impl SummaryRequest {
    /// The directive as a V3 user message `{content, source, role, id}`; its source names
    /// this crate so it is never mistaken for something the user typed.
    pub fn instruction_message(&self) -> Value {
        json!({
            "content": [{"type": "text", "text": self.instruction}],
            "source": {"kind": "plugin", "plugin": INSTRUCTION_PLUGIN},
            "role": "user",
            "id": "strata-compact-instruction",
        })
    }

    /// The shadowed messages (without the prefix before the span).
    pub fn shadowed_messages(&self) -> &[Message] {
        self.messages.get(self.shadowed_from..).unwrap_or(&[])
    }
}

/// The plugin name on the directive message and on checkpoint sources.
pub const INSTRUCTION_PLUGIN: &str = "strata-compact";

/// A summarizer's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// The summary's text blocks, in order (non-text output is the summarizer's to refuse).
    pub text: Vec<String>,
    /// The provider actually used (after any rerouting).
    pub provider: String,
    /// The model actually used.
    pub model: String,
    /// Provider usage of the summary call, verbatim.
    pub usage: Option<Value>,
    /// Every output block as assembled, for audit (`compaction/summary.rawOutput`).
    pub raw_output: Option<Vec<Value>>,
}

/// Why a summarizer produced no usable summary. Every variant becomes the `error` of the
/// attempt's `compaction/end`; none changes the surface.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SummarizeError {
    /// The provider or model failed (`code` is the provider's, e.g. `CONTEXT_WINDOW_EXCEEDED`).
    #[error("summarizer failed ({code}): {message}")]
    Failed {
        /// A stable code.
        code: String,
        /// What happened.
        message: String,
    },
    /// The output hit the token cap: an incomplete checkpoint is worse than none.
    #[error("summary hit the {limit}-token cap (incomplete checkpoint)")]
    MaxTokens {
        /// The cap.
        limit: u32,
    },
    /// The output held a block a checkpoint cannot carry (an image, say).
    #[error("summary holds unsupported content: {block_type} block")]
    UnsupportedContent {
        /// The block type.
        block_type: String,
    },
    /// No answer within the configured time.
    #[error("summarizer timed out after {after_ms} ms")]
    TimedOut {
        /// The limit, in milliseconds.
        after_ms: u64,
    },
    /// The caller cancelled the summary.
    #[error("summary cancelled")]
    Cancelled,
}

/// Produces summaries. Implemented by strata-agent's LLM summarizer and by
/// [`ExtractiveSummarizer`](crate::ExtractiveSummarizer).
pub trait Summarizer: Send + Sync {
    /// Summarizes the request's shadowed span. Must not touch the session.
    fn summarize(
        &self,
        request: &SummaryRequest,
    ) -> impl Future<Output = Result<Summary, SummarizeError>> + Send;
}

impl<S: Summarizer + ?Sized> Summarizer for &S {
    fn summarize(
        &self,
        request: &SummaryRequest,
    ) -> impl Future<Output = Result<Summary, SummarizeError>> + Send {
        (**self).summarize(request)
    }
}

impl<S: Summarizer + ?Sized> Summarizer for Arc<S> {
    fn summarize(
        &self,
        request: &SummaryRequest,
    ) -> impl Future<Output = Result<Summary, SummarizeError>> + Send {
        (**self).summarize(request)
    }
}

/// The text that frames every checkpoint, before `<compacted-summary>`. Worded so the
/// model continues the task rather than acknowledging the summary (§5.5).
pub const CHECKPOINT_PREAMBLE: &str = "This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context. Treat the captured context as established background and build on it without restating it. Continue the task directly from the messages that follow, without acknowledging this checkpoint.";

/// The section headings a summary must have, in order (§5.5).
pub const SUMMARY_SECTIONS: [&str; 8] = [
    "## Primary Request and Intent",
    "## Key Technical Concepts",
    "## Files and Code",
    "## Errors and Fixes",
    "## Pending Jobs",
    "## Current Work",
    "## Next Step",
    "## Critical Context",
];

/// The summary directive sent last in an LLM summary request.
pub fn instruction_text() -> String {
    let mut text = String::from(
        "You are acting as a compaction engine. Write a checkpoint of the conversation above \
so that work can continue from it after those messages are removed from context.\n\n\
Answer in Markdown with exactly these sections, in this order, each with terse bullet \
points, writing \"(none)\" under a section with nothing to record:\n",
    );
    for section in SUMMARY_SECTIONS {
        text.push_str(section);
        text.push('\n');
    }
    text.push_str(
        "\nRules:\n\
- Write concise English engineering prose, translating narrative written in other \
languages, but keep every literal exactly as written: paths, commands, error strings, \
identifiers, numbers and signatures.\n\
- Record the user's feedback and corrections, and what the user asked for most recently.\n\
- Record work in flight (tool calls, sub-agents, jobs) so it is neither lost nor repeated.\n\
- If the conversation holds an earlier <compacted-summary> block, merge its content into \
your sections instead of copying it.\n\
- Do not call tools. Do not mention this summarization.",
    );
    text
}

#[cfg(test)]
mod tests;
