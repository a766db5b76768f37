//! What an [`Agent`](super::Agent) is configured with, apart from its model, tools and store.

use super::{CallConfig, ReasoningReplay};
use crate::llm::RetryPolicy;

/// Agent settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// The system prompt; empty means none (an empty `system/message` still holds node 0 so a
    /// later prompt can replace it).
    pub system_prompt: String,
    /// The routed model and its call settings.
    pub call: CallConfig,
    /// Retries of failed model attempts (and restarts after a mid-stream failure).
    pub retry: RetryPolicy,
    /// Most steps in one turn; the turn ends with an error after that many.
    pub max_steps: u64,
    /// When earlier reasoning is replayed to the model.
    pub reasoning: ReasoningReplay,
    /// Run a step's tool calls concurrently (results are still committed in the model's
    /// order). When false, each call is recorded and run only after the previous one ended.
    pub parallel_tools: bool,
}

impl AgentConfig {
    /// Defaults for `call`: no system prompt, default retries, 50 steps, reasoning replayed
    /// within the current exchange, parallel tools.
    pub fn new(call: CallConfig) -> AgentConfig {
        AgentConfig {
            system_prompt: String::new(),
            call,
            retry: RetryPolicy::default(),
            max_steps: 50,
            reasoning: ReasoningReplay::default(),
            parallel_tools: true,
        }
    }
}
