//! Hydration of v0 *fixture* logs: the oracle's input format, for tests and conformance runs.
//!
//! A fixture is looser than a stored log (persistence §9): the header line is optional, and an
//! event may omit `seq` and `time`. This module reads one exactly as the dsh oracle does
//! (`oracle.mjs` of the oracle folder, docs/testing.md), so strata and upstream judge the same events:
//!
//! - blank lines are skipped and a trailing `\r` is dropped;
//! - the first line is the header when it is an object with `type: "session"` and no event came
//!   before it; it maps to the logical header like upstream's JSONL backend (unknown keys
//!   dropped); without one the header is `{version: 0, id, createdAt: <time>}`;
//! - every other line goes through packed-row expansion first; then an object event without
//!   `seq` gets its index, and one without `time` gets the fixed time, else the header's
//!   `createdAt`, else 1700000000000.
//!
//! A real stored log must carry `seq` and `time`; only this loader synthesizes them.

use serde_json::{Map, Value};

use super::header::map_v0_fields;
use super::reader::LogRecord;
use super::rows::{expand_record, RowError};

/// The time upstream's oracle uses when neither `--time` nor a header supplies one.
pub const DEFAULT_FIXTURE_TIME: i64 = 1_700_000_000_000;

/// How to fill in what a fixture leaves out.
#[derive(Clone, Debug)]
pub struct FixtureOptions {
    /// The time given to events without one (the oracle's `--time`); `None` uses the header's
    /// `createdAt`, else [`DEFAULT_FIXTURE_TIME`].
    pub time: Option<i64>,
    /// The session id when there is no header line.
    pub id: String,
}

impl Default for FixtureOptions {
    fn default() -> Self {
        FixtureOptions {
            time: None,
            id: "oracle-session".into(),
        }
    }
}

/// A hydrated fixture: the logical header and the events, each with its physical line.
#[derive(Clone, Debug, PartialEq)]
pub struct Fixture {
    /// The logical header object.
    pub header: Map<String, Value>,
    /// Whether the file had a header line.
    pub has_header_line: bool,
    /// The events in order.
    pub events: Vec<LogRecord>,
}

/// Why a fixture could not be hydrated (the oracle fails the same way, before any rule runs).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FixtureError {
    /// A line is not JSON (the oracle's `BAD_JSON`).
    #[error("line {line}: not valid JSON ({detail})")]
    Json {
        /// 1-based physical line.
        line: u64,
        /// The parser's description.
        detail: String,
    },
    /// A packed chunk row is malformed (upstream's `decodeStorageRecord`).
    #[error("line {line}: {source}")]
    MalformedRow {
        /// 1-based physical line.
        line: u64,
        /// The row rule that failed, with upstream's text.
        #[source]
        source: RowError,
    },
}

impl FixtureError {
    /// The 1-based physical line.
    pub fn line(&self) -> u64 {
        match self {
            FixtureError::Json { line, .. } | FixtureError::MalformedRow { line, .. } => *line,
        }
    }
}

/// Hydrates a fixture held in memory.
pub fn hydrate_fixture(bytes: &[u8], options: &FixtureOptions) -> Result<Fixture, FixtureError> {
    let mut header: Option<Map<String, Value>> = None;
    let mut events: Vec<LogRecord> = Vec::new();
    for (number, raw) in bytes.split(|&byte| byte == b'\n').enumerate() {
        let line = number as u64 + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // Read as JSON.parse reads it (strata_core::json): lone surrogates are kept.
        let value: Value = std::str::from_utf8(raw)
            .map_err(|error| error.to_string())
            .and_then(|text| strata_core::json::parse(text).map_err(|error| error.to_string()))
            .map_err(|detail| FixtureError::Json { line, detail })?;
        if header.is_none()
            && events.is_empty()
            && value.get("type").and_then(Value::as_str) == Some("session")
        {
            if let Value::Object(fields) = &value {
                header = Some(map_v0_fields(fields));
                continue;
            }
        }
        let expanded =
            expand_record(value).map_err(|source| FixtureError::MalformedRow { line, source })?;
        for event in expanded {
            events.push(LogRecord { line, event });
        }
    }
    let has_header_line = header.is_some();
    // `--time ?? header.createdAt ?? 1700000000000`, whatever value the header holds.
    let time = match (
        options.time,
        header.as_ref().and_then(|h| h.get("createdAt")),
    ) {
        (Some(time), _) => Value::from(time),
        (None, Some(created_at)) if !created_at.is_null() => created_at.clone(),
        (None, _) => Value::from(DEFAULT_FIXTURE_TIME),
    };
    let header = header.unwrap_or_else(|| {
        let mut fields = Map::new();
        fields.insert("version".into(), Value::from(0));
        fields.insert("id".into(), Value::from(options.id.clone()));
        fields.insert(
            "createdAt".into(),
            Value::from(options.time.unwrap_or(DEFAULT_FIXTURE_TIME)),
        );
        fields
    });
    for (index, record) in events.iter_mut().enumerate() {
        if let Value::Object(event) = &mut record.event {
            if !event.contains_key("seq") {
                event.insert("seq".into(), Value::from(index as u64));
            }
            if !event.contains_key("time") {
                event.insert("time".into(), time.clone());
            }
        }
    }
    Ok(Fixture {
        header,
        has_header_line,
        events,
    })
}

#[cfg(test)]
mod tests;
