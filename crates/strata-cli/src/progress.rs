//! Progress bars for long loads and copies.
//!
//! A bar is drawn only on a terminal (stderr), and only once the operation has run for about a
//! second: quick commands, pipes and scripts never see one, and nothing has to guess a duration
//! from a size up front. `NO_COLOR` turns the bar's colours off. The bar measures what the
//! store reports as read (file bytes for JSONL logs, rows for SQLite).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use strata_core::ingest::PrecheckedRow;
use strata_core::{Generation, RawEvent};
use strata_store::backend::EventRows;
use strata_store::{LogStream, StoreError, TornInfo};

/// How long an operation runs before its bar appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Rows between two looks at the clock.
const ROWS_PER_TICK: u64 = 4096;

/// A progress bar that shows itself once its operation has taken [`SHOW_AFTER`].
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    /// Invariant: set once the bar draws to stderr; never cleared.
    shown: Arc<AtomicBool>,
    /// Whether this run may draw at all (stderr is a terminal).
    enabled: bool,
}

impl Progress {
    /// A hidden bar for an operation described by `message`.
    pub fn new(message: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(bar_style());
        bar.set_message(message.to_owned());
        Progress {
            bar,
            started: Instant::now(),
            shown: Arc::new(AtomicBool::new(false)),
            enabled: std::io::stderr().is_terminal(),
        }
    }

    /// Records `done` of `total` units and `n_events` events, revealing the bar when due.
    pub fn update(&self, done: Option<(u64, u64)>, n_events: u64) {
        if let Some((done, total)) = done {
            self.bar.set_length(total);
            self.bar.set_position(done);
        }
        self.bar.set_prefix(format!("{n_events} events"));
        if self.enabled
            && !self.shown.load(Ordering::Relaxed)
            && self.started.elapsed() >= SHOW_AFTER
        {
            self.shown.store(true, Ordering::Relaxed);
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Starts a phase that reports no position (writing a file): when the operation is already
    /// slow enough to show a bar, a spinner names the phase until [`Progress::finish`].
    pub fn phase(&self, message: &str) {
        self.bar.set_message(message.to_owned());
        if self.shown.load(Ordering::Relaxed) {
            self.bar.set_style(spinner_style());
            self.bar.enable_steady_tick(Duration::from_millis(120));
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

fn colours() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

fn bar_style() -> ProgressStyle {
    let template = if colours() {
        "{msg} [{bar:30.cyan/blue}] {percent:>3}% {prefix} {elapsed} (eta {eta})"
    } else {
        "{msg} [{bar:30}] {percent:>3}% {prefix} {elapsed} (eta {eta})"
    };
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

fn spinner_style() -> ProgressStyle {
    let template = if colours() {
        "{spinner:.cyan} {msg} {elapsed}"
    } else {
        "{spinner} {msg} {elapsed}"
    };
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// Wraps a log stream so that reading it drives `progress`.
pub fn observe<'a>(stream: LogStream<'a>, progress: &Progress) -> LogStream<'a> {
    let header = stream.header().clone();
    let location = stream.location().to_owned();
    let first_line = stream.first_line();
    LogStream::new(
        header,
        location,
        first_line,
        Observed {
            inner: stream,
            progress: progress.clone(),
        },
    )
}

/// A stream's rows, reporting progress every [`ROWS_PER_TICK`] rows.
struct Observed<'a> {
    inner: LogStream<'a>,
    progress: Progress,
}

impl Observed<'_> {
    /// Reports progress every [`ROWS_PER_TICK`] rows and at the end.
    fn tick(&self, ended: bool) {
        let n_read = self.inner.n_read();
        if ended || n_read % ROWS_PER_TICK == 0 {
            self.progress.update(self.inner.progress(), n_read);
        }
    }
}

impl Iterator for Observed<'_> {
    type Item = Result<RawEvent, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next();
        self.tick(item.is_none());
        item
    }
}

impl EventRows for Observed<'_> {
    fn torn(&self) -> Option<TornInfo> {
        self.inner.torn()
    }

    fn progress(&self) -> Option<(u64, u64)> {
        self.inner.progress()
    }

    /// Forwarded, so a restore through the wrapper keeps the rows the backend checked ahead
    /// on its decoding threads (without it every rule ran again on the restoring thread, and
    /// `strata validate` took twice as long as a load).
    fn next_prechecked(
        &mut self,
        generation: Generation,
    ) -> Option<Result<PrecheckedRow, StoreError>> {
        let item = EventRows::next_prechecked(&mut self.inner, generation);
        self.tick(item.is_none());
        item
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use strata_core::synth::{generate, SynthConfig};
    use strata_core::{SeedOptions, SessionHeader};
    use strata_store::restore_stream;

    use super::*;

    /// Rows that count how many were asked for checked ahead.
    struct Counting {
        rows: std::vec::IntoIter<RawEvent>,
        index: u64,
        checked_ahead: Arc<AtomicU64>,
    }

    impl Iterator for Counting {
        type Item = Result<RawEvent, StoreError>;

        fn next(&mut self) -> Option<Self::Item> {
            let raw = self.rows.next()?;
            self.index += 1;
            Some(Ok(raw))
        }
    }

    impl EventRows for Counting {
        fn next_prechecked(
            &mut self,
            generation: Generation,
        ) -> Option<Result<PrecheckedRow, StoreError>> {
            let raw = self.rows.next()?;
            let row = PrecheckedRow::check(generation, self.index, raw);
            self.index += 1;
            self.checked_ahead.fetch_add(1, Ordering::Relaxed);
            Some(Ok(row))
        }
    }

    #[test]
    fn an_observed_stream_keeps_the_rows_checked_ahead() {
        let generated = generate(&SynthConfig {
            events: 200,
            ..SynthConfig::default()
        })
        .unwrap();
        let generation = generated.generation();
        let rows: Vec<RawEvent> = generated
            .events()
            .unwrap()
            .iter()
            .map(|event| RawEvent::from_event_in(event, generation))
            .collect();
        let n_rows = rows.len() as u64;
        let header: SessionHeader = generated.header().clone();
        let checked_ahead = Arc::new(AtomicU64::new(0));
        let stream = LogStream::new(
            header,
            "counting".to_owned(),
            None,
            Counting {
                rows: rows.into_iter(),
                index: 0,
                checked_ahead: checked_ahead.clone(),
            },
        );
        let progress = Progress::new("test");
        let mut observed = observe(stream, &progress);
        let session = restore_stream(&mut observed, SeedOptions::default()).unwrap();
        assert_eq!(session.surface().nodes(), generated.surface().nodes());
        assert_eq!(observed.n_read(), n_rows);
        // Every row reached the restore checked ahead, through both wrappers (the observer and
        // the stream inside it): none was checked again on the restoring thread.
        assert_eq!(checked_ahead.load(Ordering::Relaxed), n_rows);
    }
}
