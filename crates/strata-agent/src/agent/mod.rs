//! The agent loop: turns and steps on a durable session (persistence-compaction §7).
//!
//! An [`Agent`] owns a session writer, a model and a tool set. [`Agent::run_turn`] writes one
//! turn in V3 shapes — brackets always closed, the system prompt as surface node 0, request
//! headers with their reasons, one `assistant/message` per answered step embedding the compact
//! stream, failed attempts as `assistant/attempt`, `tool/call` before each tool body and
//! `tool/result` in the model's order — with the log durable before every model dispatch and
//! every tool body. Resuming is opening the session again: the store closes a crashed turn and
//! the next request says `resume`.

mod clock;
mod compaction;
mod config;
mod convert;
mod dispatch;
mod error;
mod hook;
mod ids;
mod journal;
mod observer;
mod request;
mod stream;
mod system;
mod turn;

pub use clock::{Clock, SystemClock};
pub use compaction::{AgentHost, AgentHostError, AutoCompaction, LlmSummarizer};
pub use config::AgentConfig;
pub use convert::{chat_messages, convert, ReasoningReplay};
pub use error::AgentError;
pub use hook::{HookError, HookFuture, PreStepHook, StepPoint};
pub use ids::new_id;
pub use journal::Journal;
pub use observer::{NoObserver, Observer};
pub use request::{
    chat_request, context_matches, context_payload, header_reason, header_value,
    request_from_header, CallConfig, ReconstructError,
};
pub use stream::{failure_value, usage_value, CallBlock, Settled, StreamRecorder};
pub use system::{plan_system, SystemPlan, SYSTEM_PROMPT_PLUGIN};
pub use turn::{Agent, TurnOutcome, TurnReport};
