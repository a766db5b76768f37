//! Unit tests of the deadline race and the blocking executor.

use std::future::{pending, ready};
use std::time::{Duration, Instant};

use super::*;

#[test]
fn a_ready_future_beats_the_deadline() {
    let output = block_on(with_deadline(ready(7), Duration::from_secs(60)));
    assert_eq!(output, Some(7));
}

#[test]
fn a_pending_future_times_out_near_the_limit() {
    let started = Instant::now();
    let output = block_on(with_deadline(pending::<()>(), Duration::from_millis(50)));
    assert_eq!(output, None);
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(50), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}
