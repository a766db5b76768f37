//! The in-memory backend: the store contract with no I/O, for tests and examples.
//!
//! Sessions live in a map behind one mutex. Each keeps its header, its events as encoded V3
//! JSONL lines (so reads go through the same codec as files, and byte-level checks are
//! possible) and whether a writer holds it. Failures can be injected to exercise the poisoned
//! writer path.
//!
//! Invariants:
//! - A session's `lines` hold exactly `n_events` complete `\n`-terminated records.
//! - At most one live appender per session (`locked`); dropping it clears the flag.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use strata_core::{Event, RawEvent, SessionHeader};

use crate::backend::ensure_read_to_end;
use crate::backend::{
    Backend, Batch, EventRows, Listing, LoadFn, LogAppender, LogStream, ReadFrom,
};
use crate::error::{LockHolder, StoreError};
use strata_format::codec::{decode_event_line, encode_event_line, Location};
use strata_format::lines::DEFAULT_MAX_RECORD_LEN;

/// An in-memory [`Backend`].
#[derive(Clone, Default)]
pub struct MemoryBackend {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    sessions: Mutex<HashMap<String, MemorySession>>,
    /// Appends still to succeed before injected failures start (`usize::MAX`: never fail).
    appends_before_failure: AtomicUsize,
}

struct MemorySession {
    header: SessionHeader,
    lines: Vec<u8>,
    n_events: u64,
    locked: bool,
}

impl MemoryBackend {
    /// An empty store.
    pub fn new() -> MemoryBackend {
        let backend = MemoryBackend::default();
        backend
            .inner
            .appends_before_failure
            .store(usize::MAX, Ordering::SeqCst);
        backend
    }

    /// Makes every append after the next `n_ok` fail with [`StoreError::Injected`].
    pub fn fail_appends_after(&self, n_ok: usize) {
        self.inner
            .appends_before_failure
            .store(n_ok, Ordering::SeqCst);
    }

    /// The stored JSONL body (event lines only) of a session.
    pub fn body(&self, id: &str) -> Option<Vec<u8>> {
        self.sessions().get(id).map(|session| session.lines.clone())
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, MemorySession>> {
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn not_found(&self, id: &str) -> StoreError {
        StoreError::NotFound {
            store: self.describe(),
            id: id.to_owned(),
        }
    }

    /// A stream over a snapshot of a session's lines.
    fn stream(&self, id: &str, session: &MemorySession) -> LogStream<'static> {
        let rows = MemoryRows {
            id: id.to_owned(),
            lines: session.lines.clone(),
            pos: 0,
            seq: 0,
            n_events: session.n_events,
        };
        LogStream::new(
            session.header.clone(),
            format!("memory#{id}"),
            Some(2),
            rows,
        )
    }

    fn decode(
        &self,
        id: &str,
        session: &MemorySession,
        from_seq: u64,
    ) -> Result<Vec<RawEvent>, StoreError> {
        let mut events = Vec::new();
        for (index, line) in session.lines.split(|&byte| byte == b'\n').enumerate() {
            let seq = index as u64;
            if seq >= session.n_events {
                break;
            }
            if seq < from_seq {
                continue;
            }
            let location = Location {
                file: None,
                line: seq + 2,
                seq: Some(seq),
            };
            events.push(decode_event_line(line, &location).map_err(|error| {
                StoreError::Corrupt {
                    location: format!("memory#{id}"),
                    line: Some(seq + 2),
                    seq: Some(seq),
                    detail: error.to_string(),
                }
            })?);
        }
        Ok(events)
    }
}

impl Backend for MemoryBackend {
    fn describe(&self) -> String {
        "memory".to_owned()
    }

    fn max_record_len(&self) -> usize {
        DEFAULT_MAX_RECORD_LEN
    }

    fn create(
        &self,
        header: &SessionHeader,
        events: &[Arc<Event>],
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let id = header.id().to_owned();
        let mut sessions = self.sessions();
        if sessions.contains_key(&id) {
            return Err(StoreError::AlreadyExists {
                store: self.describe(),
                id,
            });
        }
        let mut lines = Vec::new();
        for event in events {
            encode_event_line(event, &mut lines);
        }
        sessions.insert(
            id.clone(),
            MemorySession {
                header: header.clone(),
                lines,
                n_events: events.len() as u64,
                locked: true,
            },
        );
        Ok(Box::new(MemoryAppender {
            backend: self.clone(),
            id,
            next_seq: events.len() as u64,
        }))
    }

    /// Keeps no checkpoints: whatever `from` says, the whole log is read.
    fn open_append(
        &self,
        id: &str,
        _from: ReadFrom,
        load: &mut LoadFn<'_>,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let mut stream = {
            let mut sessions = self.sessions();
            let session = sessions.get_mut(id).ok_or_else(|| self.not_found(id))?;
            if session.locked {
                return Err(StoreError::Locked {
                    id: id.to_owned(),
                    holder: LockHolder {
                        pid: Some(std::process::id()),
                    },
                });
            }
            session.locked = true;
            self.stream(id, session)
        };
        // The appender owns the lock from here: dropping it on an early return unlocks.
        let mut appender = MemoryAppender {
            backend: self.clone(),
            id: id.to_owned(),
            next_seq: 0,
        };
        load(&mut stream)?;
        ensure_read_to_end(&mut stream, || format!("memory#{id}"))?;
        appender.next_seq = stream.n_read();
        Ok(Box::new(appender))
    }

    /// Keeps no checkpoints: whatever `from` says, the whole log is read.
    fn scan(&self, id: &str, _from: ReadFrom) -> Result<LogStream<'_>, StoreError> {
        let sessions = self.sessions();
        let session = sessions.get(id).ok_or_else(|| self.not_found(id))?;
        Ok(self.stream(id, session))
    }

    fn read_from(&self, id: &str, from_seq: u64) -> Result<Vec<RawEvent>, StoreError> {
        let sessions = self.sessions();
        let session = sessions.get(id).ok_or_else(|| self.not_found(id))?;
        self.decode(id, session, from_seq)
    }

    fn exists(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.sessions().contains_key(id))
    }

    fn list(&self) -> Result<Listing, StoreError> {
        let mut sessions: Vec<SessionHeader> = self
            .sessions()
            .values()
            .map(|session| session.header.clone())
            .collect();
        sort_newest_first(&mut sessions);
        Ok(Listing {
            sessions,
            problems: Vec::new(),
        })
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        let mut sessions = self.sessions();
        match sessions.get(id) {
            None => Err(self.not_found(id)),
            Some(session) if session.locked => Err(StoreError::Locked {
                id: id.to_owned(),
                holder: LockHolder {
                    pid: Some(std::process::id()),
                },
            }),
            Some(_) => {
                sessions.remove(id);
                Ok(())
            }
        }
    }
}

/// The rows of a snapshot of one session's lines.
struct MemoryRows {
    id: String,
    lines: Vec<u8>,
    /// Invariant: offset of the next line in `lines`.
    pos: usize,
    seq: u64,
    n_events: u64,
}

impl Iterator for MemoryRows {
    type Item = Result<RawEvent, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.seq >= self.n_events {
            return None;
        }
        let rest = self.lines.get(self.pos..).unwrap_or(&[]);
        let end = rest
            .iter()
            .position(|&byte| byte == b'\n')
            .unwrap_or(rest.len());
        let line = &rest[..end];
        self.pos += end + 1;
        let seq = self.seq;
        self.seq += 1;
        let location = Location {
            file: None,
            line: seq + 2,
            seq: Some(seq),
        };
        let decoded = decode_event_line(line, &location).map_err(|error| StoreError::Corrupt {
            location: format!("memory#{}", self.id),
            line: Some(seq + 2),
            seq: Some(seq),
            detail: error.to_string(),
        });
        if decoded.is_err() {
            self.n_events = seq;
        }
        Some(decoded)
    }
}

impl EventRows for MemoryRows {}

/// Sorts headers newest `createdAt` first, ties by id, as every backend lists them.
pub(crate) fn sort_newest_first(headers: &mut [SessionHeader]) {
    headers.sort_by(|a, b| {
        b.created_at()
            .cmp(&a.created_at())
            .then_with(|| a.id().cmp(b.id()))
    });
}

struct MemoryAppender {
    backend: MemoryBackend,
    id: String,
    next_seq: u64,
}

impl LogAppender for MemoryAppender {
    fn next_seq(&self) -> u64 {
        self.next_seq
    }

    fn append(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let remaining = self
            .backend
            .inner
            .appends_before_failure
            .load(Ordering::SeqCst);
        if remaining == 0 {
            return Err(StoreError::Injected(format!(
                "append to memory#{} at seq {}",
                self.id, self.next_seq
            )));
        }
        if remaining != usize::MAX {
            self.backend
                .inner
                .appends_before_failure
                .store(remaining - 1, Ordering::SeqCst);
        }
        let first = batch
            .events
            .first()
            .map_or(self.next_seq, |event| event.seq().get());
        if first != self.next_seq {
            return Err(StoreError::SeqConflict {
                id: self.id.clone(),
                expected: first,
                found: self.next_seq,
            });
        }
        let mut sessions = self.backend.sessions();
        let session = sessions
            .get_mut(&self.id)
            .ok_or_else(|| self.backend.not_found(&self.id))?;
        session.lines.extend_from_slice(batch.jsonl);
        session.n_events += batch.events.len() as u64;
        self.next_seq += batch.events.len() as u64;
        Ok(())
    }
}

impl Drop for MemoryAppender {
    fn drop(&mut self) {
        if let Some(session) = self.backend.sessions().get_mut(&self.id) {
            session.locked = false;
        }
    }
}
