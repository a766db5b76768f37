//! Lazy resume on PostgreSQL (issue 9): the checkpoint a session's `checkpoints` row holds,
//! the evidence row it is checked against, the rows after it, and the events it names fetched
//! by seq. What SQLite shares — the checks on a record, the source by primary key — is
//! `crate::keyed`'s, with its invariants; the record is `strata_format::checkpoint`'s.
//!
//! Invariants:
//! - **One round trip for the usual case.** The resume query joins the row the checkpoint
//!   column names; only a record that names another row costs a second query.
//! - **Writing is best effort.** A record is written only when it covers exactly the writer's
//!   durable rows, on a shared connection (never the writer's own, whose state the
//!   expected-next-seq append depends on); a failure is returned for the caller to ignore.

use postgres::types::Type;
use postgres::Row;
use strata_core::{Checkpoint, RawEvent, Seq, SourceError};

use super::row::decode_row;
use super::{PostgresBackend, PostgresRows};
use crate::backend::LogStream;
use crate::error::StoreError;
use crate::keyed::{fitting, row_hash, KeyedRows, KeyedSource};
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
        let point = KeyedSource::resume_point(
            fitting.checkpoint,
            PostgresKeyed {
                backend: self.clone(),
                id: id.to_owned(),
            },
        );
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
        // The joined row is the one the `n_events` column names; the record decides.
        let column: i64 = row.try_get(3).map_err(&failed)?;
        let checkpoint = fitting(record, id, &header_text, next_seq, |last| {
            if u64::try_from(column).ok() == Some(last + 1) {
                return stored_row_hash(&row, 4).map_err(&failed);
            }
            let last = i64::try_from(last).unwrap_or(i64::MAX);
            client
                .query_typed_opt(
                    &self.inner.sql.evidence,
                    &[(&id, Type::TEXT), (&last, Type::INT8)],
                )
                .map_err(&failed)?
                .map(|row| stored_row_hash(&row, 1))
                .transpose()
                .map_err(&failed)
                .map(Option::flatten)
        })?;
        let Some(checkpoint) = checkpoint else {
            return Ok(None);
        };
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
            let Some(last_hash) = stored_row_hash(&row, 1).map_err(&failed)? else {
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

/// [`row_hash`] of a stored row from the `type`, `time` and `data` columns starting at
/// `first`; `None` when the row is absent (the columns are NULL).
fn stored_row_hash(row: &Row, first: usize) -> Result<Option<String>, postgres::Error> {
    let event_type: Option<&str> = row.try_get(first)?;
    let time: Option<i64> = row.try_get(first + 1)?;
    let data: Option<&str> = row.try_get(first + 2)?;
    let (Some(event_type), Some(time), Some(data)) = (event_type, time, data) else {
        return Ok(None);
    };
    let time = time.to_string();
    Ok(Some(row_hash(
        event_type.as_bytes(),
        time.as_bytes(),
        data.as_bytes(),
    )))
}

/// One session's rows by primary key: pages as every read of the backend reads them, and
/// pinned seqs a batch per query.
struct PostgresKeyed {
    backend: PostgresBackend,
    id: String,
}

impl KeyedRows for PostgresKeyed {
    fn rows_from(&self, from: u64, limit: u64) -> Result<Vec<RawEvent>, StoreError> {
        let id = self.id.as_str();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.backend
            .read(|backend, client| backend.page_on(client, id, from, Some(limit)))
    }

    fn rows_at(&self, seqs: &[Seq]) -> Result<Vec<RawEvent>, SourceError> {
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
            // Rows come in seq order: the i-th is the i-th seq asked for, and a short answer
            // ends the events (the source names the first one missing).
            for (row, seq) in rows.iter().zip(chunk) {
                let event = decode_row(row, &location, seq.get())
                    .map_err(|error| SourceError::new(seq.get(), error))?;
                events.push(event);
            }
            if rows.len() < chunk.len() {
                break;
            }
        }
        Ok(events)
    }
}
