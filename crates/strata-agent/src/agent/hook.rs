//! The pre-step point: where automatic compaction runs (persistence-compaction §5.3).
//!
//! Between one step's `step/end` and the next `step/start`, inside the open turn, the loop calls
//! [`PreStepHook::before_step`]; when a request fails with a context overflow it calls
//! [`PreStepHook::recover_overflow`] and retries the step's request if the hook freed space.
//! Hooks append through the [`Journal`] like the loop does, so whatever they write (compaction
//! brackets, replacements) is validated by the core and durable before the next request. A hook
//! error is a warning: the turn continues on the full history.

use std::future::Future;
use std::pin::Pin;

use tokio_util::sync::CancellationToken;

use super::Journal;
use crate::llm::{ChatModel, LlmError};

/// A boxed hook future.
pub type HookFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a hook sees at its point.
#[derive(Clone, Copy)]
pub struct StepPoint<'a> {
    /// The session, for reading and appending.
    pub journal: &'a Journal,
    /// The open turn.
    pub turn: u64,
    /// The step about to start (or, for overflow recovery, the step whose request failed).
    pub step: u64,
    /// The loop's model, for summarization requests.
    pub model: &'a dyn ChatModel,
    /// The turn's cancellation.
    pub cancel: &'a CancellationToken,
}

/// A failed hook, reported as a warning.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    /// What went wrong.
    pub message: String,
}

/// Work the loop runs before each step and on context overflow.
pub trait PreStepHook: Send + Sync {
    /// Runs before `step/start` of every step.
    fn before_step<'a>(&'a self, point: StepPoint<'a>) -> HookFuture<'a, Result<(), HookError>>;

    /// Tries to free context after `error` (a `CONTEXT_WINDOW_EXCEEDED` failure); `Ok(true)`
    /// means the surface changed and the request should be retried in the same step.
    fn recover_overflow<'a>(
        &'a self,
        point: StepPoint<'a>,
        error: &'a LlmError,
    ) -> HookFuture<'a, Result<bool, HookError>> {
        let _ = (point, error);
        Box::pin(async { Ok(false) })
    }
}
