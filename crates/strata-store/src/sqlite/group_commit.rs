//! Group commit across sessions (issue 28 item 3): the batches of different sessions that wait
//! at the same moment are committed in one SQLite transaction, so one fsync makes them all
//! durable (see `docs/format.md`, "SQLite store").
//!
//! Every appender of one [`SqliteBackend`] (all its sessions share the one writer connection)
//! submits its batch here and waits. The committer is whichever submitter finds no commit
//! running: it takes every batch waiting at that moment, opens one `BEGIN IMMEDIATE`, runs each
//! batch inside a `SAVEPOINT` of its own, then one `COMMIT`, and wakes each submitter with its
//! own result. Before waking them it hands the committer's role to the first batch that arrived
//! meanwhile, so batches that arrive while a commit runs coalesce into the next one. No timer
//! or debounce is involved.
//!
//! Invariants:
//! - **Acknowledged only once durable.** A submitter gets `Ok` only after the `COMMIT` holding
//!   its batch returned (WAL, `synchronous=FULL`: one fsync of the WAL per commit).
//! - **A batch fails alone.** Each batch runs the checks a single append ran (the session's
//!   stored `next_seq` equals the batch's first seq, else [`StoreError::SeqConflict`]) inside
//!   its savepoint; a batch that fails is rolled back to its savepoint and reports its own
//!   error, and the others still commit. Only a failure of the transaction itself (`BEGIN`,
//!   a savepoint command, `COMMIT`) fails every batch of that commit.
//! - **Per-session order is unchanged.** A session has one appender (its writer lock) and its
//!   [`SessionWriter`](crate::SessionWriter) has at most one batch in flight, so a commit holds
//!   at most one batch per session and a session's batches commit in submission order.
//! - **Exactly one committer.** `committing` is set while a committer runs (or has been handed
//!   the role); a submitter that finds it set waits in the queue, and the role passes only to
//!   a queued batch's submitter, who commits the whole queue (its own batch included).
//! - **No waiter waits forever.** A panic inside a commit (a bug: no input reaches one) is
//!   caught: the transaction is rolled back, that commit's batches fail with
//!   [`StoreError::CommitPanicked`], and the role is handed on as after any commit.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use rusqlite::{params, Connection};

use super::rows::{insert_rows, Row};
use super::{lock_conn, SqliteBackend};
use crate::backend::Backend;
use crate::error::StoreError;

/// One session's batch, its rows built on the submitter's thread (encoding and compression
/// stay off the serial commit path).
pub(super) struct Job {
    pub(super) id: String,
    pub(super) first_seq: u64,
    pub(super) rows: Vec<Row>,
}

/// How many commits and batches the store's group committer has done, for tests and benches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Transactions committed (each one fsync), batches of failed transactions included.
    pub commits: u64,
    /// Batches those transactions held; above `commits` when sessions shared commits.
    pub batches: u64,
    /// Batches queued for the next commit right now.
    pub waiting: usize,
    /// Whether a commit is running (or its committer is being woken) right now.
    pub committing: bool,
}

/// The store's one committer queue.
#[derive(Default)]
pub(super) struct GroupCommitter {
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    /// Batches waiting for the next commit, in arrival order.
    pending: Vec<Entry>,
    /// Invariant: set while exactly one submitter holds the committer's role.
    committing: bool,
    n_commits: u64,
    n_batches: u64,
}

struct Entry {
    job: Job,
    slot: Arc<Slot>,
}

/// Where a waiting submitter learns what became of its batch.
struct Slot {
    state: Mutex<SlotState>,
    ready: Condvar,
}

enum SlotState {
    Waiting,
    /// The submitter now commits the queue.
    Lead,
    Done(Result<(), StoreError>),
}

impl GroupCommitter {
    /// Commits `job` together with every batch waiting beside it; returns once its commit
    /// returned, with this batch's own result.
    pub(super) fn submit(&self, backend: &SqliteBackend, job: Job) -> Result<(), StoreError> {
        let slot = Arc::new(Slot {
            state: Mutex::new(SlotState::Waiting),
            ready: Condvar::new(),
        });
        let lead = {
            let mut queue = lock(&self.queue);
            queue.pending.push(Entry {
                job,
                slot: Arc::clone(&slot),
            });
            !std::mem::replace(&mut queue.committing, true)
        };
        if !lead {
            let mut state = lock(&slot.state);
            loop {
                match std::mem::replace(&mut *state, SlotState::Waiting) {
                    SlotState::Waiting => {
                        state = slot
                            .ready
                            .wait(state)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                    SlotState::Lead => break,
                    SlotState::Done(result) => return result,
                }
            }
        }
        self.lead(backend, &slot)
    }

    /// The committer's round: commit the whole queue, hand the role on, wake the submitters.
    fn lead(&self, backend: &SqliteBackend, own: &Arc<Slot>) -> Result<(), StoreError> {
        let entries = std::mem::take(&mut lock(&self.queue).pending);
        let results =
            catch_unwind(AssertUnwindSafe(|| commit(backend, &entries))).unwrap_or_else(|_| {
                let conn = lock_conn(&backend.inner.writer);
                if !conn.is_autocommit() {
                    // Nothing of the broken transaction may stay for the next commit to carry.
                    let _ = run(&conn, "ROLLBACK");
                }
                entries
                    .iter()
                    .map(|_| {
                        Err(StoreError::CommitPanicked {
                            store: backend.describe(),
                        })
                    })
                    .collect()
            });
        {
            let mut queue = lock(&self.queue);
            queue.n_commits += 1;
            queue.n_batches += entries.len() as u64;
            // Hand the role to the first batch that arrived meanwhile: it commits all of them.
            match queue.pending.first() {
                Some(next) => {
                    *lock(&next.slot.state) = SlotState::Lead;
                    next.slot.ready.notify_one();
                }
                None => queue.committing = false,
            }
        }
        let mut own_result = None;
        for (entry, result) in entries.into_iter().zip(results) {
            if Arc::ptr_eq(&entry.slot, own) {
                own_result = Some(result);
            } else {
                *lock(&entry.slot.state) = SlotState::Done(result);
                entry.slot.ready.notify_one();
            }
        }
        // The committer's own batch was queued when it took the queue (see `submit`).
        own_result.unwrap_or_else(|| {
            Err(StoreError::Injected(
                "group commit lost the committer's own batch".into(),
            ))
        })
    }

    /// The committer's counters and queue right now.
    pub(super) fn stats(&self) -> GroupCommitStats {
        let queue = lock(&self.queue);
        GroupCommitStats {
            commits: queue.n_commits,
            batches: queue.n_batches,
            waiting: queue.pending.len(),
            committing: queue.committing,
        }
    }
}

/// One transaction for every entry, a savepoint per entry; each entry's result, in order.
fn commit(backend: &SqliteBackend, entries: &[Entry]) -> Vec<Result<(), StoreError>> {
    let conn = lock_conn(&backend.inner.writer);
    #[cfg(test)]
    tests::panic_if_asked(backend);
    let fail_all = |op: &'static str, error: &rusqlite::Error| -> Vec<Result<(), StoreError>> {
        if !conn.is_autocommit() {
            // Nothing of this transaction may stay: a later commit must not carry it along.
            let _ = run(&conn, "ROLLBACK");
        }
        entries
            .iter()
            .map(|_| Err(backend_error(backend, op, error)))
            .collect()
    };
    if let Err(error) = run(&conn, "BEGIN IMMEDIATE") {
        return fail_all("begin append", &error);
    }
    let mut results = Vec::with_capacity(entries.len());
    for entry in entries {
        if let Err(error) = run(&conn, "SAVEPOINT batch") {
            return fail_all("begin a batch's savepoint", &error);
        }
        let result = append_batch(backend, &conn, &entry.job);
        let end = match result {
            Ok(()) => run(&conn, "RELEASE batch"),
            Err(_) => run(&conn, "ROLLBACK TO batch").and_then(|()| run(&conn, "RELEASE batch")),
        };
        if let Err(error) = end {
            return fail_all("end a batch's savepoint", &error);
        }
        results.push(result);
    }
    if let Err(error) = run(&conn, "COMMIT") {
        if !conn.is_autocommit() {
            let _ = run(&conn, "ROLLBACK");
        }
        // Every batch of the transaction is lost with it; a batch that failed on its own keeps
        // its own error.
        return results
            .into_iter()
            .map(|result| {
                result.and_then(|()| Err(backend_error(backend, "commit append", &error)))
            })
            .collect();
    }
    results
}

/// One session's batch inside the shared transaction: the checks and writes of a single
/// append.
fn append_batch(backend: &SqliteBackend, conn: &Connection, job: &Job) -> Result<(), StoreError> {
    let stored: i64 = conn
        .prepare_cached("SELECT next_seq FROM sessions WHERE id = ?1")
        .and_then(|mut statement| statement.query_row([&job.id], |row| row.get(0)))
        .map_err(backend.sql("append"))?;
    if u64::try_from(stored).ok() != Some(job.first_seq) {
        return Err(StoreError::SeqConflict {
            id: job.id.clone(),
            expected: job.first_seq,
            found: u64::try_from(stored).unwrap_or(0),
        });
    }
    insert_rows(conn, &job.id, &job.rows).map_err(backend.sql("append"))?;
    let next = job.first_seq + job.rows.len() as u64;
    conn.prepare_cached("UPDATE sessions SET next_seq = ?1 WHERE id = ?2")
        .and_then(|mut statement| {
            statement.execute(params![i64::try_from(next).unwrap_or(i64::MAX), job.id])
        })
        .map_err(backend.sql("append"))?;
    Ok(())
}

/// Runs one statement without parameters, prepared once per connection.
fn run(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// A failure of the shared transaction, told to each of its batches (a `rusqlite::Error` is
/// not `Clone`: each gets the same code and message).
fn backend_error(backend: &SqliteBackend, op: &'static str, error: &rusqlite::Error) -> StoreError {
    let source = match error {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    };
    StoreError::Sqlite {
        path: backend.inner.path.clone(),
        op,
        source,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::{Mutex, PoisonError};

    use strata_core::{payload, Candidate, SessionHeader, SurfaceIntent};

    use super::super::SqliteBackend;
    use crate::store::Store;

    /// The database whose next commit panics (tests of other databases run beside this one).
    static PANIC_ON: Mutex<Option<PathBuf>> = Mutex::new(None);

    /// Called at the start of every commit in test builds.
    pub(super) fn panic_if_asked(backend: &SqliteBackend) {
        let mut armed = PANIC_ON.lock().unwrap_or_else(PoisonError::into_inner);
        if armed.as_deref() == Some(backend.path()) {
            *armed = None;
            drop(armed);
            panic!("a panic injected inside a group commit");
        }
    }

    fn hello(id: &str) -> Vec<Candidate> {
        let message = payload::UserMessage {
            message: payload::user_text_message(id, "hello"),
        };
        vec![Candidate::surface(message, SurfaceIntent::append())]
    }

    #[test]
    fn a_commit_that_panics_fails_its_batch_and_the_store_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strata.db");
        let backend = SqliteBackend::open(&path).unwrap();
        let store = Store::new(backend.clone());
        let writer = store.create(SessionHeader::fresh("s", 1).unwrap()).unwrap();
        *PANIC_ON.lock().unwrap() = Some(backend.path().to_path_buf());
        let error = writer.append(hello("m1"), 2).unwrap_err().to_string();
        assert!(
            error.contains("a group commit failed inside strata"),
            "{error}"
        );
        assert!(
            !backend.group_commit_stats().committing,
            "the role was released"
        );
        drop(writer);
        // The failed batch left nothing behind, and the next commit goes through.
        let writer = store.open_write("s").unwrap();
        writer.append(hello("m2"), 3).unwrap();
        writer.close().unwrap();
        let ids: Vec<String> = store
            .load("s")
            .unwrap()
            .derive_messages()
            .iter()
            .map(|message| message.id().to_owned())
            .collect();
        assert_eq!(ids, ["m2"]);
    }
}
