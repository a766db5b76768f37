//! The checkpoint and offset-index readers (a JSONL log's `session.v3.ckpt` and
//! `session.v3.idx` sidecars; the SQLite store's checkpoint rows use the same record).

use std::sync::{Arc, OnceLock};

use strata_core::{EventSource, RawEvent, SeedOptions, Seq, Session, SessionHeader, SourceError};
use strata_format::checkpoint::{decode as decode_checkpoint, fnv64_hex};
use strata_format::{checkpoint::CHECKPOINT_MAGIC, JsonlReader, ReaderOptions};
use strata_store::fuzzing::{IndexIdentity, OffsetIndex};

/// The log a fuzzed checkpoint is resumed against: the repository's sample session.
pub(crate) const BASE_LOG: &[u8] = include_bytes!("../../../examples/sample.v3.jsonl");

/// The base log's header and rows (as restored, with its end-seed marker).
pub(crate) struct Base {
    pub(crate) header: SessionHeader,
    pub(crate) rows: Vec<RawEvent>,
}

pub(crate) fn base() -> Option<&'static Base> {
    static BASE: OnceLock<Option<Base>> = OnceLock::new();
    BASE.get_or_init(|| {
        let mut reader = JsonlReader::new(BASE_LOG, ReaderOptions::default()).ok()?;
        let rows: Vec<RawEvent> = reader
            .by_ref()
            .map(|row| row.map(|line| line.event))
            .collect::<Result<_, _>>()
            .ok()?;
        let header = reader.header().clone();
        let session = Session::restore(header.clone(), rows, SeedOptions::default()).ok()?;
        Some(Base {
            header,
            rows: session.to_raw_events().ok()?,
        })
    })
    .as_ref()
}

/// The base log as a lazy session's event source.
struct BaseSource(&'static Base);

impl EventSource for BaseSource {
    fn load(&self, seq: Seq) -> Result<RawEvent, SourceError> {
        let index = usize::try_from(seq.get()).unwrap_or(usize::MAX);
        self.0
            .rows
            .get(index)
            .cloned()
            .ok_or_else(|| SourceError::new(seq.get(), "past the end of the base log"))
    }
}

/// Wraps a record body as the store writes it (magic line, body, checksum line), so that
/// mutations of the body reach the decoder past its checksum.
pub(crate) fn record(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 64);
    out.extend_from_slice(CHECKPOINT_MAGIC.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(body);
    out.push(b'\n');
    out.extend_from_slice(fnv64_hex(body).as_bytes());
    out.push(b'\n');
    out
}

/// The input is a checkpoint record's JSON body: decoded as the store decodes a sidecar (bounded
/// by the base log's length), then, when it covers at most the base log, resumed by the core against that log (the rows after
/// it as the tail) and its lazily held events fetched.
pub fn checkpoint(data: &[u8]) {
    let Some(base) = base() else {
        return;
    };
    // What a store passes: how many events the log holds (here, the base log).
    let max_events = base.rows.len() as u64;
    let _ = decode_checkpoint(data, max_events);
    let Ok((_, _, checkpoint)) = decode_checkpoint(&record(data), max_events) else {
        return;
    };
    let Ok(covered) = usize::try_from(checkpoint.n_events) else {
        return;
    };
    let Some(tail) = base.rows.get(covered..) else {
        return;
    };
    let resumed = Session::resume(
        base.header.clone(),
        checkpoint,
        tail.to_vec(),
        Arc::new(BaseSource(base)),
        SeedOptions::default(),
    );
    if let Ok(session) = resumed {
        let _ = session.derive_messages();
        let _ = session.events().map(<[_]>::len);
        let _ = session.checkpoint();
    }
}

/// The index identity every input is opened under.
const IDENTITY: IndexIdentity = IndexIdentity {
    zstd: false,
    header_hash: 0x5354_5241_4644_5a31,
    dev: 1,
    ino: 2,
};

/// The input is an offset index file. A first byte with the low bit set: the rest is the
/// entries after a header of `IDENTITY` (so the reader gets past the header check); clear,
/// the rest is the whole file. Every entry slot is then looked up, and a few past the end.
pub fn offset_index(data: &[u8]) {
    let (first, rest) = data.split_first().unwrap_or((&0, data));
    let mut file = Vec::with_capacity(rest.len() + 48);
    if first & 1 != 0 {
        file.extend_from_slice(b"STRAIDX\0");
        file.extend_from_slice(&1_u32.to_le_bytes());
        file.extend_from_slice(&u32::from(IDENTITY.zstd).to_le_bytes());
        file.extend_from_slice(&IDENTITY.header_hash.to_le_bytes());
        file.extend_from_slice(&IDENTITY.dev.to_le_bytes());
        file.extend_from_slice(&IDENTITY.ino.to_le_bytes());
        file.extend_from_slice(&0_u64.to_le_bytes());
    }
    file.extend_from_slice(rest);
    let path = crate::scratch().join("session.v3.idx");
    if std::fs::write(&path, &file).is_err() {
        return;
    }
    let Ok(Some(index)) = OffsetIndex::open(&path, &IDENTITY) else {
        return;
    };
    let n = index.n_entries();
    for seq in (0..n.min(4096)).chain([n, n + 1, u64::MAX / 16, u64::MAX]) {
        let _ = index.get(seq);
    }
}
