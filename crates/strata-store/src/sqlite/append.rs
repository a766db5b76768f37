//! The exclusive appender of one SQLite session: its batches go through the store's group
//! committer (`group_commit`).

use rusqlite::params;
use strata_core::Checkpoint;

use super::group_commit::Job;
use super::rows::event_row;
use super::{lock_conn, SqliteBackend};
use crate::backend::{Batch, LogAppender};
use crate::error::StoreError;
use crate::lock::SessionLock;

/// The exclusive appender of one SQLite session.
pub(super) struct SqliteAppender {
    pub(super) backend: SqliteBackend,
    pub(super) id: String,
    pub(super) next_seq: u64,
    pub(super) _lock: SessionLock,
}

impl LogAppender for SqliteAppender {
    fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Submits the batch to the store's group committer: it commits in one transaction with
    /// the batches other sessions submitted at the same moment, under this batch's own checks.
    fn append(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let Some(first) = batch.events.first() else {
            return Ok(());
        };
        let job = Job {
            id: self.id.clone(),
            first_seq: first.seq().get(),
            rows: batch.events.iter().map(|event| event_row(event)).collect(),
        };
        self.backend.inner.committer.submit(&self.backend, job)?;
        self.next_seq = first.seq().get() + batch.events.len() as u64;
        Ok(())
    }

    fn checkpoint(&mut self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        let n_events = checkpoint.n_events;
        if n_events == 0 || n_events != self.next_seq {
            return Ok(());
        }
        let backend = &self.backend;
        let conn = lock_conn(&backend.inner.writer);
        let (header_text, _) = backend.session_row_on(&conn, &self.id)?;
        let Some(last_hash) = backend.row_hash_on(&conn, &self.id, n_events - 1)? else {
            return Ok(());
        };
        let evidence = strata_format::checkpoint::Evidence {
            n_events,
            log_bytes: 0,
            last_frame: n_events - 1,
            last_offset: 0,
            last_hash,
            header_hash: strata_format::checkpoint::fnv64_hex(header_text.as_bytes()),
            file: None,
        };
        let record = strata_format::checkpoint::encode(&self.id, checkpoint, &evidence);
        conn.execute(
            "INSERT INTO checkpoints (session_id, n_events, record) VALUES (?1, ?2, ?3) \
             ON CONFLICT (session_id) DO UPDATE SET n_events = excluded.n_events, \
             record = excluded.record",
            params![self.id, i64::try_from(n_events).unwrap_or(i64::MAX), record],
        )
        .map_err(backend.sql("write checkpoint"))?;
        Ok(())
    }
}
