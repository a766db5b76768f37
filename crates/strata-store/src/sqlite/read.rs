//! Reading a session: rows streamed a page at a time (keyset pagination on `seq`), pages for
//! the decode pool, and events fetched by seq for a lazy session.

use std::sync::Arc;

use rusqlite::Connection;
use strata_core::RawEvent;

use super::rows::SqliteRowDecoder;
use super::schema::connect;
use super::{lock_conn, SqliteBackend};
use crate::backend::{Backend, EventRows, TornInfo};
use crate::decode_pool::{PageSource, RecordBatch, RecordSource};
use crate::error::StoreError;
use crate::keyed::KeyedRows;

/// Rows per page of a streamed read: large enough that per-query costs vanish, small enough that
/// a page is a bounded buffer.
pub(super) const PAGE_ROWS: usize = 1024;

/// The rows of one session, read a page at a time (keyset pagination on `seq`) on the shared
/// reader connection, which is locked only while a page is read (so a read-ahead thread never
/// holds it while the caller waits).
pub(super) struct SqliteRows {
    pub(super) backend: SqliteBackend,
    pub(super) id: String,
    /// The session's stored header when the read started (a paged read checks it per page).
    pub(super) header_text: Arc<str>,
    pub(super) page: std::vec::IntoIter<RawEvent>,
    /// Rows handed out so far.
    pub(super) n_yielded: u64,
    /// The session's `next_seq` when the read started (for progress; a live writer may add).
    pub(super) n_stored: u64,
    /// Invariant: the seq of the first row of the next page.
    pub(super) next_seq: u64,
    pub(super) done: bool,
}

impl Iterator for SqliteRows {
    type Item = Result<RawEvent, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(row) = self.page.next() {
                self.n_yielded += 1;
                return Some(Ok(row));
            }
            if self.done {
                return None;
            }
            let conn = lock_conn(&self.backend.inner.reader);
            let page = self
                .backend
                .read_events_on(&conn, &self.id, self.next_seq, Some(PAGE_ROWS));
            drop(conn);
            match page {
                Ok(page) => {
                    self.done = page.len() < PAGE_ROWS;
                    self.next_seq += page.len() as u64;
                    self.page = page.into_iter();
                }
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            }
        }
    }
}

impl EventRows for SqliteRows {
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.n_yielded.min(self.n_stored), self.n_stored))
    }
}

impl RecordSource for SqliteRows {
    type Decoder = SqliteRowDecoder;
    type Pages = SqlitePages;

    /// More than a page left to read: each decoder reads its own pages on a connection of
    /// its own (SQLite's share of a load then runs on every decoder, and no reading thread
    /// copies every row across to them: docs/measurements.md §3).
    fn pages(&self) -> Option<Arc<SqlitePages>> {
        (!self.done && self.n_yielded == 0 && self.n_stored > self.next_seq + PAGE_ROWS as u64)
            .then(|| {
                Arc::new(SqlitePages {
                    backend: self.backend.clone(),
                    id: self.id.clone(),
                    header_text: self.header_text.clone(),
                    start: self.next_seq,
                    n_stored: self.n_stored,
                })
            })
    }

    fn decoder(&self) -> SqliteRowDecoder {
        self.backend.row_decoder(&self.id)
    }

    /// One page of rows, rebuilt as their lines, per batch.
    fn fill(&mut self, batch: &mut RecordBatch) -> Result<bool, StoreError> {
        if self.done {
            return Ok(false);
        }
        let conn = lock_conn(&self.backend.inner.reader);
        let backend = &self.backend;
        let id = &self.id;
        let read = backend.read_lines_on(&conn, id, self.next_seq, Some(PAGE_ROWS), |seq, row| {
            batch.push_with(0, seq, |line| backend.row_line(id, row, seq, line))
        });
        drop(conn);
        let n_read = batch.len() as u64;
        self.n_yielded += n_read;
        self.next_seq += n_read;
        match read {
            Ok(n) => {
                self.done = n < PAGE_ROWS as u64;
                Ok(!self.done)
            }
            Err(error) => {
                self.done = true;
                Err(error)
            }
        }
    }

    fn next_row(&mut self) -> Option<Result<RawEvent, StoreError>> {
        self.next()
    }

    fn torn(&self) -> Option<TornInfo> {
        None
    }

    fn progress(&self) -> Option<(u64, u64)> {
        EventRows::progress(self)
    }

    fn location(&self) -> String {
        self.backend.location(&self.id)
    }
}

/// A session's rows from `start` on, read a page ([`PAGE_ROWS`] rows) at a time on any thread's
/// own connection. Rows below the session's `next_seq` never change while it exists, so pages
/// read in separate transactions fit together; a page that is not full is the end (as for
/// [`SqliteRows`], a writer's later rows are simply not read). Each page is read in one
/// transaction with the session's header, which must still be the one the read started with:
/// pages of a session deleted and created again under the same id are never mixed.
pub(super) struct SqlitePages {
    pub(super) backend: SqliteBackend,
    pub(super) id: String,
    pub(super) header_text: Arc<str>,
    pub(super) start: u64,
    /// The session's `next_seq` when the read started (for progress).
    pub(super) n_stored: u64,
}

impl PageSource for SqlitePages {
    type Reader = Connection;

    fn open_reader(&self) -> Result<Connection, StoreError> {
        connect(&self.backend.inner.path)
    }

    fn fill_page(
        &self,
        conn: &mut Connection,
        index: u64,
        batch: &mut RecordBatch,
    ) -> Result<bool, StoreError> {
        let backend = &self.backend;
        let id = &self.id;
        let from = self
            .start
            .saturating_add(index.saturating_mul(PAGE_ROWS as u64));
        // A read transaction: the header check and the page see one snapshot. It only reads,
        // so dropping it (a rollback) is all its end needs.
        let tx = conn
            .transaction()
            .map_err(backend.sql("begin a page read"))?;
        let header_text = match backend.session_row_on(&tx, id) {
            Ok((header_text, _)) => Some(header_text),
            Err(StoreError::NotFound { .. }) => None,
            Err(error) => return Err(error),
        };
        if header_text.as_deref() != Some(&*self.header_text) {
            return Err(StoreError::ChangedDuringRead {
                store: backend.describe(),
                id: id.clone(),
            });
        }
        let n = backend.read_lines_on(&tx, id, from, Some(PAGE_ROWS), |seq, row| {
            batch.push_with(0, seq, |line| backend.row_line(id, row, seq, line))
        })?;
        Ok(n == PAGE_ROWS as u64)
    }

    fn progress(&self, index: u64) -> Option<(u64, u64)> {
        let read = (index + 1).saturating_mul(PAGE_ROWS as u64);
        Some((read.min(self.n_stored), self.n_stored))
    }
}

/// One session's rows by primary key, for a lazy session's [`KeyedSource`](crate::keyed).
pub(super) struct SqliteKeyed {
    pub(super) backend: SqliteBackend,
    pub(super) id: String,
}

impl KeyedRows for SqliteKeyed {
    fn rows_from(&self, from: u64, limit: u64) -> Result<Vec<RawEvent>, StoreError> {
        let conn = lock_conn(&self.backend.inner.reader);
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        self.backend
            .read_events_on(&conn, &self.id, from, Some(limit))
    }
}
