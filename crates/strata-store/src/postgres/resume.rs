//! Lazy resume on PostgreSQL (issue 9): the checkpoint a session's `checkpoints` row holds, the
//! evidence that ties it to the stored rows, the rows after it, and an [`EventSource`] that
//! fetches the events it names by seq. The design is SQLite's (`sqlite.rs`): the primary key
//! `(session_id, seq)` is the offset index, and the record is `strata_format::checkpoint`'s.
//!
//! Invariants:
//! - **Never trusted blindly.** A record is used only when it decodes, names this session,
//!   covers `0 < nEvents ≤ next_seq` events, its `headerHash` is the FNV-1a 64 of the stored
//!   header text, and its `lastHash` is that of the stored row at `nEvents − 1` (`type`, `time`,
//!   `data`, each followed by `\n`). Anything else is "no checkpoint": the whole log is read.
//! - **Pinned events are validated.** Each row the source returns must carry the asked seq
//!   and decode like any other row; the core then runs the event-local rules on it. A missing
//!   or bad row fails the resume, which the caller turns into a whole-log read.
//! - **Writing is best effort.** A record is written only when it covers exactly the writer's
//!   durable rows, on a shared connection (never the writer's own, whose state the
//!   expected-next-seq append depends on); a failure is returned for the caller to ignore.

use std::sync::Arc;

use postgres::types::Type;
use postgres::Row;
use strata_core::{Checkpoint, EventSource, RawEvent, Seq, SourceError};

use super::row::decode_row;
use super::{PostgresBackend, PostgresRows, PAGE_ROWS};
use crate::backend::{LogStream, ResumePoint};
use crate::error::StoreError;
use strata_format::checkpoint::{fnv64_hex, Evidence};

/// Seqs per query when fetching pinned events: one round trip for a typical surface, and a
/// bounded result set for a huge one.
const PINNED_BATCH: usize = 1024;

/// What a checkpoint row proved about the stored session.
struct Fitting {
    header_text: String,
    next_seq: u64,
    checkpoint: Checkpoint,
}

impl PostgresBackend {
    /// The rows after the session's checkpoint, when it has one that fits the stored rows;
    /// `None` when it has none, or one that does not fit (the caller reads the whole log).
    pub(super) fn resume_stream(&self, id: &str) -> Result<Option<LogStream<'_>>, StoreError> {
        if !self.keeps_checkpoints() {
            return Ok(None);
        }
        if PostgresBackend::storable(id).is_err() {
            return Err(self.not_found(id));
        }
        let fitting = self.read(|backend, client| backend.fitting_checkpoint(client, id))?;
        let Some(fitting) = fitting else {
            return Ok(None);
        };
        let header = self.decode_header(id, &fitting.header_text)?;
        let rows = PostgresRows {
            backend: self,
            id: id.to_owned(),
            page: Vec::new().into_iter(),
            n_yielded: 0,
            n_stored: fitting.next_seq,
            next_seq: fitting.checkpoint.n_events,
            done: false,
        };
        let point = ResumePoint {
            checkpoint: fitting.checkpoint,
            source: Arc::new(PostgresSource {
                backend: self.clone(),
                id: id.to_owned(),
            }),
        };
        Ok(Some(LogStream::resuming(
            header,
            self.location(id),
            None,
            rows,
            point,
        )))
    }

    /// Reads the session row, its checkpoint and the evidence row on `client`, and checks the
    /// evidence (see the module invariants). `NotFound` when the session is not stored.
    fn fitting_checkpoint(
        &self,
        client: &mut postgres::Client,
        id: &str,
    ) -> Result<Option<Fitting>, StoreError> {
        let failed = self.failed("read checkpoint");
        let row = client
            .query_typed_opt(&self.inner.sql.resume, &[(&id, Type::TEXT)])
            .map_err(&failed)?;
        let Some(row) = row else {
            return Err(self.not_found(id));
        };
        let header_text: String = row.try_get(0).map_err(&failed)?;
        let next_seq: i64 = row.try_get(1).map_err(&failed)?;
        let next_seq = u64::try_from(next_seq).unwrap_or(0);
        let record: Option<&[u8]> = row.try_get(2).map_err(&failed)?;
        let Some(record) = record else {
            return Ok(None);
        };
        let Ok((session_id, evidence, checkpoint)) =
            strata_format::checkpoint::decode(record, next_seq)
        else {
            return Ok(None);
        };
        let covers = session_id == id
            && evidence.n_events > 0
            && evidence.n_events <= next_seq
            && checkpoint.n_events == evidence.n_events
            && evidence.header_hash == fnv64_hex(header_text.as_bytes());
        if !covers {
            return Ok(None);
        }
        // The joined row is the one the `n_events` column names; the record decides.
        let column: i64 = row.try_get(3).map_err(&failed)?;
        let last_hash = if u64::try_from(column).ok() == Some(evidence.n_events) {
            row_hash(&row, 4).map_err(&failed)?
        } else {
            let last = i64::try_from(evidence.n_events - 1).unwrap_or(i64::MAX);
            client
                .query_typed_opt(
                    &self.inner.sql.evidence,
                    &[(&id, Type::TEXT), (&last, Type::INT8)],
                )
                .map_err(&failed)?
                .map(|row| row_hash(&row, 1))
                .transpose()
                .map_err(&failed)?
                .flatten()
        };
        if last_hash.as_ref() != Some(&evidence.last_hash) {
            return Ok(None);
        }
        Ok(Some(Fitting {
            header_text,
            next_seq,
            checkpoint,
        }))
    }

    /// Records `checkpoint` for session `id`, whose writer has `next_seq` durable rows: only
    /// when it covers exactly those (else, like a session that is gone, nothing is written).
    pub(super) fn write_checkpoint(
        &self,
        id: &str,
        next_seq: u64,
        checkpoint: &Checkpoint,
    ) -> Result<(), StoreError> {
        let n_events = checkpoint.n_events;
        if n_events == 0 || n_events != next_seq || !self.keeps_checkpoints() {
            return Ok(());
        }
        let n_events_i64 = i64::try_from(n_events).unwrap_or(i64::MAX);
        let last = i64::try_from(n_events - 1).unwrap_or(i64::MAX);
        // On a shared connection, retried once on a fresh one if an idle one turns out dead:
        // the upsert is idempotent, so running it twice is harmless.
        self.read(|backend, client| {
            let failed = backend.failed("write checkpoint");
            let row = client
                .query_typed_opt(
                    &backend.inner.sql.evidence,
                    &[(&id, Type::TEXT), (&last, Type::INT8)],
                )
                .map_err(&failed)?;
            let Some(row) = row else {
                return Ok(());
            };
            let header_text: &str = row.try_get(0).map_err(&failed)?;
            let Some(last_hash) = row_hash(&row, 1).map_err(&failed)? else {
                return Ok(());
            };
            let evidence = Evidence {
                n_events,
                log_bytes: 0,
                last_frame: n_events - 1,
                last_offset: 0,
                last_hash,
                header_hash: fnv64_hex(header_text.as_bytes()),
                file: None,
            };
            let record = strata_format::checkpoint::encode(id, checkpoint, &evidence);
            client
                .execute(
                    &backend.inner.sql.upsert_checkpoint,
                    &[&id, &n_events_i64, &record],
                )
                .map_err(&failed)?;
            Ok(())
        })
    }
}

/// FNV-1a 64 (hex) of a stored row's `type`, `time` and `data`, each followed by `\n`, from the
/// three columns starting at `first`; `None` when the row is absent (the columns are NULL).
fn row_hash(row: &Row, first: usize) -> Result<Option<String>, postgres::Error> {
    let event_type: Option<&str> = row.try_get(first)?;
    let time: Option<i64> = row.try_get(first + 1)?;
    let data: Option<&str> = row.try_get(first + 2)?;
    let (Some(event_type), Some(time), Some(data)) = (event_type, time, data) else {
        return Ok(None);
    };
    let time = time.to_string();
    let mut bytes = Vec::with_capacity(event_type.len() + time.len() + data.len() + 3);
    for part in [event_type, time.as_str(), data] {
        bytes.extend_from_slice(part.as_bytes());
        bytes.push(b'\n');
    }
    Ok(Some(fnv64_hex(&bytes)))
}

/// Fetches events of one session by seq (the primary key is the index), each row decoded and
/// checked against the seq asked for, as every read of the backend does.
struct PostgresSource {
    backend: PostgresBackend,
    id: String,
}

impl EventSource for PostgresSource {
    fn load(&self, seq: Seq) -> Result<RawEvent, SourceError> {
        self.load_many(&[seq])?
            .pop()
            .ok_or_else(|| SourceError::new(seq.get(), "no such row"))
    }

    fn load_many(&self, seqs: &[Seq]) -> Result<Vec<RawEvent>, SourceError> {
        let location = self.backend.location(&self.id);
        let mut events = Vec::with_capacity(seqs.len());
        for chunk in seqs.chunks(PINNED_BATCH) {
            let Some(first) = chunk.first().map(|seq| seq.get()) else {
                continue;
            };
            let wanted: Vec<i64> = chunk
                .iter()
                .map(|seq| i64::try_from(seq.get()).unwrap_or(i64::MAX))
                .collect();
            let id = self.id.as_str();
            let rows = self
                .backend
                .read(|backend, client| {
                    client
                        .query_typed(
                            &backend.inner.sql.pinned,
                            &[(&id, Type::TEXT), (&wanted, Type::INT8_ARRAY)],
                        )
                        .map_err(backend.failed("read events"))
                })
                .map_err(|error| SourceError::new(first, error))?;
            // Rows come in seq order: the i-th must be the i-th seq asked for.
            for (index, seq) in chunk.iter().enumerate() {
                let row = rows
                    .get(index)
                    .ok_or_else(|| SourceError::new(seq.get(), "no such row"))?;
                let event = decode_row(row, &location, seq.get())
                    .map_err(|error| SourceError::new(seq.get(), error))?;
                events.push(event);
            }
        }
        Ok(events)
    }

    fn load_range(&self, start: u64, end: u64) -> Result<Vec<RawEvent>, SourceError> {
        let mut events = Vec::new();
        let mut from = start;
        while from < end {
            let limit = i64::try_from(end - from).map_or(PAGE_ROWS, |n| n.min(PAGE_ROWS));
            let id = self.id.as_str();
            let page = self
                .backend
                .read(|backend, client| backend.page_on(client, id, from, Some(limit)))
                .map_err(|error| SourceError::new(from, error))?;
            let n_read = page.len() as u64;
            events.extend(page);
            if n_read < limit as u64 {
                break;
            }
            from += n_read;
        }
        Ok(events)
    }
}
