//! Where the loop gets event times: the core takes time as a parameter, so the agent, the
//! first layer that may read a clock, decides which one.

use std::time::{SystemTime, UNIX_EPOCH};

/// A source of epoch-millisecond timestamps for appended events and stream records.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| {
                i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
            })
    }
}
