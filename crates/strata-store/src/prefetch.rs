//! Read-ahead for log streams: a backend's rows are decoded on a helper thread while the
//! caller (typically `Session::restore`) consumes the previous ones, so decoding and acceptance
//! overlap on two cores instead of alternating on one.
//!
//! Invariants:
//! - Rows arrive in the order the inner iterator yields them, errors included; the first error
//!   is the last row.
//! - At most [`CHUNKS_IN_FLIGHT`] chunks of [`ROWS_PER_CHUNK`] rows are buffered: memory stays
//!   bounded however long the log is.
//! - Dropping the reader stops the helper at its next chunk (its send fails); the helper never
//!   outlives the rows it could still deliver, and it holds no lock.
//! - [`EventRows::torn`] and [`EventRows::progress`] report what the inner rows reported at the
//!   point the consumer has reached (torn: once the end has been delivered).

use std::sync::mpsc::{sync_channel, Receiver};
use std::thread;

use strata_core::RawEvent;

use crate::error::StoreError;
use crate::store::{EventRows, TornInfo};

/// Rows per message from the helper: large enough to amortize the channel, small enough that
/// the consumer starts at once and progress stays fine-grained.
const ROWS_PER_CHUNK: usize = 128;

/// Chunks the helper may run ahead of the consumer.
const CHUNKS_IN_FLIGHT: usize = 16;

type Row = Result<RawEvent, StoreError>;

enum Message {
    /// Rows, with the inner progress after the last of them.
    Rows(Vec<Row>, Option<(u64, u64)>),
    /// The inner rows ended: their torn end and final progress.
    End(Option<TornInfo>, Option<(u64, u64)>),
}

/// The rows of an inner [`EventRows`], decoded ahead on a helper thread.
pub(crate) struct Prefetch {
    receiver: Receiver<Message>,
    current: std::vec::IntoIter<Row>,
    progress: Option<(u64, u64)>,
    torn: Option<TornInfo>,
    ended: bool,
}

impl Prefetch {
    /// Starts reading `inner` ahead. If no thread can be started, `inner` is read by the same
    /// channel on the caller's thread, one chunk at a time, as the rows are pulled.
    pub(crate) fn start(inner: impl EventRows + 'static) -> Prefetch {
        let (sender, receiver) = sync_channel(CHUNKS_IN_FLIGHT);
        let progress = inner.progress();
        let spawned = thread::Builder::new()
            .name("strata-read".into())
            .spawn(move || {
                let mut inner = inner;
                let mut chunk = Vec::with_capacity(ROWS_PER_CHUNK);
                while let Some(row) = inner.next() {
                    let failed = row.is_err();
                    chunk.push(row);
                    if chunk.len() == ROWS_PER_CHUNK || failed {
                        let rows =
                            std::mem::replace(&mut chunk, Vec::with_capacity(ROWS_PER_CHUNK));
                        if sender.send(Message::Rows(rows, inner.progress())).is_err() {
                            return;
                        }
                    }
                    if failed {
                        break;
                    }
                }
                if !chunk.is_empty() && sender.send(Message::Rows(chunk, inner.progress())).is_err()
                {
                    return;
                }
                let _ = sender.send(Message::End(inner.torn(), inner.progress()));
            });
        match spawned {
            Ok(_) => {}
            Err(error) => {
                // No thread: deliver the failure as the only row rather than hang.
                let (sender, fallback) = sync_channel(1);
                let row = Err(StoreError::io("start a reader thread for", "", error));
                let _ = sender.send(Message::Rows(vec![row], None));
                return Prefetch {
                    receiver: fallback,
                    current: Vec::new().into_iter(),
                    progress,
                    torn: None,
                    ended: false,
                };
            }
        }
        Prefetch {
            receiver,
            current: Vec::new().into_iter(),
            progress,
            torn: None,
            ended: false,
        }
    }
}

impl Iterator for Prefetch {
    type Item = Row;

    fn next(&mut self) -> Option<Row> {
        loop {
            if let Some(row) = self.current.next() {
                return Some(row);
            }
            if self.ended {
                return None;
            }
            match self.receiver.recv() {
                Ok(Message::Rows(rows, progress)) => {
                    self.progress = progress;
                    self.current = rows.into_iter();
                }
                Ok(Message::End(torn, progress)) => {
                    self.torn = torn;
                    self.progress = progress;
                    self.ended = true;
                }
                // The helper stopped without an end message (it cannot, short of a panic):
                // end here rather than hang.
                Err(_) => self.ended = true,
            }
        }
    }
}

impl EventRows for Prefetch {
    fn torn(&self) -> Option<TornInfo> {
        self.torn
    }

    fn progress(&self) -> Option<(u64, u64)> {
        self.progress
    }
}
