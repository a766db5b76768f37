//! What the SQL stores' rows share: an event's envelope as the texts of its
//! `source_event_seqs` and `surface_op` columns (SQLite and PostgreSQL store them alike), so a
//! row read back rebuilds the event's V3 line byte for byte.

use serde_json::Value;
use strata_core::{Event, ReplaceSpelling, SurfaceMeta};
use strata_format::codec::write_range_sources;

/// `sourceEventSeqs` (JSONL range encoding) and `surfaceOp` as stored JSON texts; `None` for
/// a field the event does not carry.
pub(crate) fn envelope_columns(event: &Event) -> (Option<String>, Option<String>) {
    match event.meta() {
        SurfaceMeta::LogOnly => (None, None),
        SurfaceMeta::Surface { op, sources } => (
            sources.as_ref().map(|sources| {
                let mut out = Vec::new();
                write_range_sources(sources, &mut out);
                String::from_utf8_lossy(&out).into_owned()
            }),
            Some(op.to_value(ReplaceSpelling::StartSeqEndSeq).to_string()),
        ),
        SurfaceMeta::Opaque {
            surface_op,
            source_event_seqs,
        } => (
            source_event_seqs.as_deref().map(Value::to_string),
            surface_op.as_deref().map(Value::to_string),
        ),
    }
}
