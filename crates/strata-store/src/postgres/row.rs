//! Events to `events` rows and back.
//!
//! A row holds the envelope as columns and the payload as its exact stored text
//! ([`Event::data_json`]): writing never parses or re-serializes it. Reading rebuilds the
//! event's V3 JSONL line (dsh's key order) from the columns and decodes it with the line codec,
//! so a row read back is the same event, byte for byte, as the one appended.
//!
//! Invariant: `Columns` holds one entry per event in every vector, in seq order.

use std::path::PathBuf;
use std::sync::Arc;

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
use postgres::Row;
use strata_core::{Event, RawEvent};

use crate::error::StoreError;
use crate::sql_row::envelope_columns;
use strata_format::codec::{decode_event_line, CodecError, Location};

/// The column values of a batch of events, as the append statement's array parameters take
/// them.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Columns<'e> {
    pub seqs: Vec<i64>,
    pub types: Vec<&'e str>,
    pub times: Vec<i64>,
    pub data: Vec<&'e str>,
    pub sources: Vec<Option<String>>,
    pub surface_ops: Vec<Option<String>>,
    pub ignorable: Vec<Option<bool>>,
}

impl<'e> Columns<'e> {
    pub(super) fn of(events: &'e [Arc<Event>]) -> Columns<'e> {
        let mut columns = Columns {
            seqs: Vec::with_capacity(events.len()),
            types: Vec::with_capacity(events.len()),
            times: Vec::with_capacity(events.len()),
            data: Vec::with_capacity(events.len()),
            sources: Vec::with_capacity(events.len()),
            surface_ops: Vec::with_capacity(events.len()),
            ignorable: Vec::with_capacity(events.len()),
        };
        for event in events {
            let (sources, surface_op) = envelope_columns(event);
            columns
                .seqs
                .push(i64::try_from(event.seq().get()).unwrap_or(i64::MAX));
            columns.types.push(event.event_type().as_str());
            columns.times.push(event.time());
            columns.data.push(event.data_json());
            columns.sources.push(sources);
            columns.surface_ops.push(surface_op);
            columns.ignorable.push(event.is_ignorable().then_some(true));
        }
        columns
    }

    pub(super) fn len(&self) -> usize {
        self.seqs.len()
    }
}

/// The column types of `COPY events (session_id, seq, type, time, data, source_event_seqs,
/// surface_op, ignorable)`.
pub(super) const COPY_TYPES: [Type; 8] = [
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::BOOL,
];

/// Writes `columns` as rows of session `id` into a binary `COPY`.
pub(super) fn copy_rows(
    writer: &mut BinaryCopyInWriter<'_>,
    id: &str,
    columns: &Columns<'_>,
) -> Result<(), postgres::Error> {
    for index in 0..columns.len() {
        writer.write(&[
            &id,
            &columns.seqs[index],
            &columns.types[index],
            &columns.times[index],
            &columns.data[index],
            &columns.sources[index],
            &columns.surface_ops[index],
            &columns.ignorable[index],
        ])?;
    }
    Ok(())
}

/// Decodes one row of `SELECT seq, type, time, data, source_event_seqs, surface_op, ignorable`,
/// which must carry seq `expected`.
pub(super) fn decode_row(row: &Row, location: &str, expected: u64) -> Result<RawEvent, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        location: location.to_owned(),
        line: None,
        seq: Some(expected),
        detail,
    };
    let column = |detail: postgres::Error| corrupt(format!("unreadable column: {detail}"));
    let seq: i64 = row.try_get(0).map_err(column)?;
    if u64::try_from(seq).ok() != Some(expected) {
        return Err(corrupt(format!(
            "seq out of order: expected {expected}, found {seq}"
        )));
    }
    let event_type: &str = row.try_get(1).map_err(column)?;
    let time: i64 = row.try_get(2).map_err(column)?;
    let data: &str = row.try_get(3).map_err(column)?;
    let sources: Option<&str> = row.try_get(4).map_err(column)?;
    let surface_op: Option<&str> = row.try_get(5).map_err(column)?;
    let ignorable: Option<bool> = row.try_get(6).map_err(column)?;
    let line = event_line(
        event_type,
        seq,
        time,
        data,
        sources,
        surface_op,
        ignorable == Some(true),
    );
    let at = Location {
        file: Some(PathBuf::from(location)),
        line: 0,
        seq: Some(expected),
    };
    decode_event_line(&line, &at).map_err(|error| match error {
        CodecError::Json { detail, .. } => corrupt(format!("row is not JSON: {detail}")),
        other => StoreError::from(other),
    })
}

/// The V3 JSONL line (without `\n`) of an event stored as these columns.
pub(super) fn event_line(
    event_type: &str,
    seq: i64,
    time: i64,
    data: &str,
    sources: Option<&str>,
    surface_op: Option<&str>,
    ignorable: bool,
) -> Vec<u8> {
    let mut line = Vec::with_capacity(64 + data.len());
    line.extend_from_slice(b"{\"type\":");
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut line, event_type);
    line.extend_from_slice(format!(",\"seq\":{seq},\"time\":{time},\"data\":").as_bytes());
    line.extend_from_slice(data.as_bytes());
    if let Some(sources) = sources {
        line.extend_from_slice(b",\"sourceEventSeqs\":");
        line.extend_from_slice(sources.as_bytes());
    }
    if let Some(surface_op) = surface_op {
        line.extend_from_slice(b",\"surfaceOp\":");
        line.extend_from_slice(surface_op.as_bytes());
    }
    if ignorable {
        line.extend_from_slice(b",\"ignorable\":true");
    }
    line.push(b'}');
    line
}
