//! The row ↔ column mapping: an event as the SQL values of its columns, inserted in one
//! statement per batch, and a stored row decoded back as its V3 JSONL line.

use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection};
use strata_core::ingest::{ScanArena, ScannedRow};
use strata_core::Event;

use crate::decode_pool::RecordDecoder;
use crate::error::StoreError;
use crate::sql_row::envelope_columns;
use strata_format::codec::{expand_sources, scan_json_row, Location};

/// `data` payloads at least this long are stored zstd-compressed when that is smaller.
pub const COMPRESS_THRESHOLD: usize = 4096;

/// Decodes a row rebuilt as its V3 JSONL line, on the reading thread or in the decode pool,
/// with the same errors.
#[derive(Clone)]
pub(super) struct SqliteRowDecoder {
    pub(super) location: Arc<str>,
}

impl RecordDecoder for SqliteRowDecoder {
    fn decode<'a>(
        &self,
        _line: u64,
        seq: u64,
        bytes: &'a [u8],
        arena: Option<&'a ScanArena>,
    ) -> Result<ScannedRow<'a>, StoreError> {
        let row = scan_json_row(bytes, arena).map_err(|error| StoreError::Corrupt {
            location: self.location.to_string(),
            line: None,
            seq: Some(seq),
            detail: format!("row is not JSON: {error}"),
        })?;
        if !row.envelope().has_source_event_seqs() {
            return Ok(row);
        }
        // Only a row citing sources needs its location (for a range that does not decode):
        // built here, not for every row.
        let location = Location {
            file: Some(PathBuf::from(&*self.location)),
            line: 0,
            seq: Some(seq),
        };
        row.try_map_envelope(|raw| expand_sources(raw, &location))
            .map_err(StoreError::from)
    }
}

/// The SQL values of one event's columns.
pub(super) struct Row {
    pub(super) seq: i64,
    pub(super) event_type: String,
    pub(super) time: i64,
    pub(super) data: SqlValue,
    pub(super) sources: Option<String>,
    pub(super) surface_op: Option<String>,
    pub(super) ignorable: Option<i64>,
}

pub(super) fn event_row(event: &Event) -> Row {
    // The payload's stored text, as is: no parse, no re-serialization.
    let data = event.data_json();
    let data = if data.len() >= COMPRESS_THRESHOLD {
        match zstd::bulk::compress(data.as_bytes(), 3) {
            Ok(compressed) if compressed.len() < data.len() => SqlValue::Blob(compressed),
            _ => SqlValue::Text(data.to_owned()),
        }
    } else {
        SqlValue::Text(data.to_owned())
    };
    let (sources, surface_op) = envelope_columns(event);
    Row {
        seq: i64::try_from(event.seq().get()).unwrap_or(i64::MAX),
        event_type: event.event_type().as_str().to_owned(),
        time: event.time(),
        data,
        sources,
        surface_op,
        ignorable: event.is_ignorable().then_some(1),
    }
}

pub(super) fn insert_events(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    events: &[Arc<Event>],
) -> rusqlite::Result<()> {
    let rows: Vec<Row> = events.iter().map(|event| event_row(event)).collect();
    insert_rows(tx, id, &rows)
}

/// Inserts one session's rows on `conn`, inside the caller's transaction.
pub(super) fn insert_rows(conn: &Connection, id: &str, rows: &[Row]) -> rusqlite::Result<()> {
    let mut statement = conn.prepare_cached(
        "INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for row in rows {
        statement.execute(params![
            id,
            row.seq,
            row.event_type,
            row.time,
            row.data,
            row.sources,
            row.surface_op,
            row.ignorable
        ])?;
    }
    Ok(())
}
