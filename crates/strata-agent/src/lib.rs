//! strata-agent: the agent loop on a strata session. It owns the LLM client ([`llm`]: a
//! streaming OpenAI-compatible chat client with DeepSeek's extensions, retries, and a scripted
//! model that replays canned responses offline), the [`tools`] a local agent offers the model,
//! and the loop itself ([`agent`]: turns, steps, cancellation and resume on a durable session),
//! plus [`export`]: the request a log implies in OpenAI and Anthropic shapes.
//!
//! Layer: cli → **agent** → compact → store → core. The agent is the only layer that touches the
//! network; it must never write session bytes itself (the store does) nor decide surface rules
//! (the core does). See ARCHITECTURE.md for the bird's-eye view.
//!
//! What an agent builder uses is re-exported here at the root: the loop ([`Agent`],
//! [`AgentConfig`], [`CallConfig`], [`TurnOutcome`], [`Observer`], [`AutoCompaction`]), the model
//! interface and its two implementations ([`ChatModel`], [`HttpChatModel`], [`ScriptedModel`],
//! [`LlmConfig`]) and the tools ([`ToolSet`], [`ToolsConfig`], [`Workspace`], [`Tool`]). The
//! modules hold the rest. `examples/scripted_turn.rs` runs one turn on the embedded store.
//!
//! ```
//! use futures_util::StreamExt;
//! use strata_agent::llm::{ChatMessage, ChatRequest, StreamEvent};
//! use strata_agent::{ChatModel, ScriptedModel};
//!
//! let script = r#"{"responses": [{"events": [
//!     {"type": "text_delta", "text": "Hello"},
//!     {"type": "finish", "reason": "stop"}
//! ]}]}"#;
//! let model = ScriptedModel::from_json_str(script).unwrap();
//! let request = ChatRequest::new("deepseek-chat", vec![ChatMessage::user("Hi")]);
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
//! let events: Vec<_> = runtime.block_on(model.stream(&request).collect());
//! assert_eq!(events[0], Ok(StreamEvent::TextDelta { text: "Hello".into() }));
//! assert_eq!(model.requests(), vec![request]);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod agent;
pub mod export;
pub mod llm;
pub mod tools;

pub use agent::{
    Agent, AgentConfig, AgentError, AutoCompaction, CallConfig, LlmSummarizer, NoObserver,
    Observer, ReasoningReplay, TurnOutcome, TurnReport,
};
pub use llm::{ChatModel, HttpChatModel, LlmConfig, LlmError, RetryPolicy, ScriptedModel};
pub use tools::{Tool, ToolError, ToolSet, ToolsConfig, Workspace};
