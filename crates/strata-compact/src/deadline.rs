//! Runtime-free time limits and a minimal blocking executor.
//!
//! strata-compact must work under any async runtime (the agent uses tokio) and under
//! none (the CLI, tests), so it cannot use a runtime's timer. [`with_deadline`] races a
//! future against a helper thread that sleeps on a condition variable; the thread ends
//! as soon as the race is decided or the future is dropped, so no sleeper outlives it.
//! [`block_on`] drives one future on the current thread (no I/O reactor: only futures
//! that wake themselves, like the offline summarizer and [`with_deadline`], finish).

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// Resolves to `Some(output)` if `future` finishes within `limit`, `None` otherwise.
pub fn with_deadline<F: Future>(future: F, limit: Duration) -> Deadline<F> {
    Deadline {
        future: Box::pin(future),
        limit,
        timer: None,
    }
}

/// The future returned by [`with_deadline`].
pub struct Deadline<F> {
    future: Pin<Box<F>>,
    limit: Duration,
    /// Started on first poll, so the limit counts from when the work begins.
    timer: Option<Arc<Timer>>,
}

struct Timer {
    state: Mutex<TimerState>,
    changed: Condvar,
}

struct TimerState {
    fired: bool,
    /// Set when the race is over; tells the thread to stop waiting.
    done: bool,
    waker: Option<Waker>,
}

impl<F: Future> Future for Deadline<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<F::Output>> {
        let this = &mut *self;
        let timer = match &this.timer {
            Some(timer) => Arc::clone(timer),
            None => {
                let timer = Arc::new(Timer {
                    state: Mutex::new(TimerState {
                        fired: false,
                        done: false,
                        waker: Some(cx.waker().clone()),
                    }),
                    changed: Condvar::new(),
                });
                let thread_timer = Arc::clone(&timer);
                let limit = this.limit;
                let spawned = thread::Builder::new()
                    .name("strata-compact-deadline".into())
                    .spawn(move || run_timer(&thread_timer, limit));
                if spawned.is_err() {
                    // Without a timer thread the limit cannot be enforced; fail closed.
                    return Poll::Ready(None);
                }
                this.timer = Some(Arc::clone(&timer));
                timer
            }
        };
        {
            let mut state = timer.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.fired {
                state.done = true;
                return Poll::Ready(None);
            }
            state.waker = Some(cx.waker().clone());
        }
        match this.future.as_mut().poll(cx) {
            Poll::Ready(output) => {
                finish(&timer);
                Poll::Ready(Some(output))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<F> Drop for Deadline<F> {
    fn drop(&mut self) {
        if let Some(timer) = &self.timer {
            finish(timer);
        }
    }
}

fn finish(timer: &Timer) {
    let mut state = timer.state.lock().unwrap_or_else(PoisonError::into_inner);
    state.done = true;
    state.waker = None;
    timer.changed.notify_all();
}

fn run_timer(timer: &Timer, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut state = timer.state.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if state.done {
            return;
        }
        let now = Instant::now();
        if now >= deadline {
            state.fired = true;
            if let Some(waker) = state.waker.take() {
                drop(state);
                waker.wake();
            }
            return;
        }
        state = timer
            .changed
            .wait_timeout(state, deadline - now)
            .map(|(guard, _)| guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner().0);
    }
}

/// Runs `future` to completion on the current thread, parking between polls.
///
/// For the CLI and tests; an agent loop uses its own runtime instead.
pub fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => thread::park(),
        }
    }
}

#[cfg(test)]
mod tests;
