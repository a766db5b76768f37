//! Watching a turn as it happens: appended events, live stream deltas and warnings. The CLI
//! prints from here; the loop never depends on what an observer does.

use std::sync::Arc;

use strata_core::Event;

use crate::llm::StreamEvent;

/// Receives what the loop does. Methods are called on the loop's task and must not block.
pub trait Observer: Send + Sync {
    /// An event was appended and is durable.
    fn event(&self, event: &Arc<Event>) {
        let _ = event;
    }

    /// A stream event arrived from the model (before it is recorded).
    fn stream(&self, event: &StreamEvent) {
        let _ = event;
    }

    /// Something went wrong that the turn survives (a retry, a failed hook).
    fn warning(&self, message: &str) {
        let _ = message;
    }
}

/// Ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}
