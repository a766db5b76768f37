//! Retrying a streamed call without hiding the failed attempts.
//!
//! The session log records every failed attempt (`assistant/attempt`, with the stream it
//! delivered), so retries cannot be a black box. Two layers:
//!
//! - [`RetryPolicy::retry_delay`] is the pure decision, for a caller that runs its own loop;
//! - [`stream_with_retries`] runs the loop: it forwards each attempt's events live and yields an
//!   [`AttemptItem::Retrying`] for every failed attempt that will be retried, *before* sleeping,
//!   so the caller can persist it while the backoff runs. The final failure is the stream's
//!   `Err`, again with the attempt's events.
//!
//! An attempt is retried only while it has delivered no content (reasoning, text or tool
//! call): once the user has seen output, starting over silently would show it twice. A
//! mid-stream failure is therefore returned to the caller, who may start a new call (and log
//! the partial stream) if it wants.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::pin::Pin;
use std::time::Duration;

use futures_util::{stream, Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use super::{Backoff, ChatModel, ChatRequest, EventStream, LlmError, StreamEvent};

/// How many times, and how long apart, to retry a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 disables retrying.
    pub max_retries: u32,
    /// Delays between attempts.
    pub backoff: Backoff,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 4,
            backoff: Backoff::default(),
        }
    }
}

impl RetryPolicy {
    /// Whether a failure of this kind may go away by itself: rate limits, server errors,
    /// transport errors, timeouts, disconnects and empty responses. Authentication, bad
    /// requests, context overflow, protocol errors and cancellation never do.
    pub fn is_retryable(error: &LlmError) -> bool {
        matches!(
            error,
            LlmError::RateLimited(_)
                | LlmError::Server(_)
                | LlmError::Transport { .. }
                | LlmError::TimeoutConnect { .. }
                | LlmError::TimeoutFirstByte { .. }
                | LlmError::TimeoutIdle { .. }
                | LlmError::StreamDisconnected { .. }
                | LlmError::EmptyResponse { .. }
        )
    }

    /// How long to wait before retrying after attempt `attempt` (1-based) failed with `error`,
    /// or `None` to give up: the error is not retryable, content was already delivered, the
    /// retries are used up, or the server's `Retry-After` exceeds `backoff.max` (waiting that
    /// long is the caller's decision, not a silent stall).
    pub fn retry_delay(
        &self,
        attempt: u32,
        error: &LlmError,
        content_delivered: bool,
    ) -> Option<Duration> {
        self.retry_delay_with_jitter(attempt, error, content_delivered, random_unit())
    }

    /// [`Self::retry_delay`] with the random draw `unit` in `[0, 1)` made explicit.
    fn retry_delay_with_jitter(
        &self,
        attempt: u32,
        error: &LlmError,
        content_delivered: bool,
        unit: f64,
    ) -> Option<Duration> {
        if content_delivered || attempt > self.max_retries || !Self::is_retryable(error) {
            return None;
        }
        if let Some(retry_after) = error.retry_after() {
            return (retry_after <= self.backoff.max).then_some(retry_after);
        }
        let doublings = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let base = self.backoff.initial.as_secs_f64() * 2f64.powi(doublings.min(62));
        let jitter = self.backoff.jitter.clamp(0.0, 1.0);
        let factor = 1.0 + jitter * (2.0 * unit - 1.0);
        let seconds = (base * factor).min(self.backoff.max.as_secs_f64());
        Some(Duration::try_from_secs_f64(seconds).unwrap_or(self.backoff.max))
    }
}

/// One item of [`stream_with_retries`].
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptItem {
    /// An event of the current attempt, delivered as it arrives.
    Event(StreamEvent),
    /// The current attempt failed and another starts after `failed.retry_in`. The events of the
    /// failed attempt were already delivered as [`AttemptItem::Event`]s; they are repeated here
    /// so the caller can log the attempt without keeping its own buffer.
    Retrying(FailedAttempt),
}

/// A failed attempt with its evidence.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("attempt {attempt} failed after {} events: {error}", .events.len())]
pub struct FailedAttempt {
    /// 1-based attempt number within the call.
    pub attempt: u32,
    /// Why it failed.
    pub error: LlmError,
    /// The events it delivered before failing, in order (empty if it failed before any, or if
    /// cancellation hit during the backoff before the attempt started).
    pub events: Vec<StreamEvent>,
    /// The wait before the next attempt; `None` on the final failure.
    pub retry_in: Option<Duration>,
}

/// A retried call: events and failed attempts as they happen, ending after a
/// [`StreamEvent::Finish`] or with the final `Err`.
pub type AttemptStream<'a> =
    Pin<Box<dyn Stream<Item = Result<AttemptItem, FailedAttempt>> + Send + 'a>>;

/// Runs `request` against `model` under `policy` (see the module doc for what is retried).
///
/// `cancel` stops the current attempt or the backoff sleep; the stream then ends with an `Err`
/// whose error is [`LlmError::Cancelled`] and whose events are what the attempt delivered.
/// Dropping the stream also cancels, silently.
pub fn stream_with_retries<'a>(
    model: &'a dyn ChatModel,
    request: &'a ChatRequest,
    policy: RetryPolicy,
    cancel: CancellationToken,
) -> AttemptStream<'a> {
    let state = Retrying {
        model,
        request,
        policy,
        cancel,
        attempt: 0,
        current: None,
        delivered: Vec::new(),
        sleep_before_next: None,
        done: false,
    };
    Box::pin(stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    }))
}

struct Retrying<'a> {
    model: &'a dyn ChatModel,
    request: &'a ChatRequest,
    policy: RetryPolicy,
    cancel: CancellationToken,
    /// Number of the current (or last) attempt; 0 before the first.
    attempt: u32,
    current: Option<EventStream>,
    /// Invariant: the events the current attempt has yielded so far.
    delivered: Vec<StreamEvent>,
    sleep_before_next: Option<Duration>,
    done: bool,
}

impl Retrying<'_> {
    async fn next(&mut self) -> Option<Result<AttemptItem, FailedAttempt>> {
        if self.done {
            return None;
        }
        if let Some(delay) = self.sleep_before_next.take() {
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    return Some(Err(self.finish(self.attempt + 1, LlmError::Cancelled, Vec::new())));
                }
                _ = tokio::time::sleep(delay) => {}
            }
        }
        if self.current.is_none() {
            self.attempt += 1;
            self.delivered.clear();
            self.current = Some(self.model.stream(self.request));
        }
        let current = self.current.as_mut()?;
        let next = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Some(Err(LlmError::Cancelled)),
            next = current.next() => next,
        };
        let error = match next {
            Some(Ok(event)) => {
                if matches!(event, StreamEvent::Finish { .. }) {
                    self.done = true;
                    self.current = None;
                } else {
                    self.delivered.push(event.clone());
                }
                return Some(Ok(AttemptItem::Event(event)));
            }
            Some(Err(error)) => error,
            None => LlmError::StreamDisconnected {
                detail: "model stream ended without a finish event".into(),
                request_id: None,
            },
        };
        self.current = None;
        let events = std::mem::take(&mut self.delivered);
        let content_delivered = events.iter().any(StreamEvent::is_content);
        match self
            .policy
            .retry_delay(self.attempt, &error, content_delivered)
        {
            Some(delay) => {
                self.sleep_before_next = Some(delay);
                Some(Ok(AttemptItem::Retrying(FailedAttempt {
                    attempt: self.attempt,
                    error,
                    events,
                    retry_in: Some(delay),
                })))
            }
            None => Some(Err(self.finish(self.attempt, error, events))),
        }
    }

    fn finish(&mut self, attempt: u32, error: LlmError, events: Vec<StreamEvent>) -> FailedAttempt {
        self.done = true;
        self.current = None;
        FailedAttempt {
            attempt,
            error,
            events,
            retry_in: None,
        }
    }
}

/// A draw in `[0, 1)` for jitter. `RandomState` is seeded randomly per instance by std, which
/// is all the randomness jitter needs, without a dependency.
fn random_unit() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests;
