//! PostgreSQL only (issue 8): what the shared contract cannot show. Writers racing on one
//! session through separate connections with no advisory lock, a connection killed while a
//! large batch is in flight, bump-and-reject of the schema version, fork as `INSERT … SELECT`,
//! byte-exact payloads, a follower on another connection seeing appends as they commit, and
//! the `checkpoints` cache (issue 9): a row that does not fit the stored rows is never used,
//! and it goes with its session; a `search_path` in the address's libpq options is the schema
//! written to (issue 22).
//!
//! Every test skips (after the loud notice in `pg.rs`) when there is no server and none is
//! required.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use strata_core::{ForkMode, RawEvent};
use strata_store::postgres::SCHEMA_VERSION;
use strata_store::synth::turn_candidates;
use strata_store::{
    AppendError, Backend, FollowFrom, PostgresBackend, PostgresConfig, SessionWriter, Store,
    StoreError,
};

use crate::common::{append_turns, header};
use crate::pg;
use crate::resume::{compare_opens, new_session};

/// The next turn number and its first seq, from the writer's session.
fn next_turn(writer: &SessionWriter) -> (u64, u64) {
    writer.with_session(|session| {
        let turns = session
            .events()
            .unwrap()
            .iter()
            .filter(|event| event.event_type().as_str() == "turn/start")
            .count() as u64;
        (turns + 1, session.len() as u64)
    })
}

fn is_seq_conflict(error: &StoreError) -> bool {
    matches!(error, StoreError::SeqConflict { .. })
}

#[test]
fn a_stale_writer_gets_a_conflict_naming_both_seqs_and_writes_nothing() {
    let Some((backend, _schema)) = pg::backend_with("stale", |config| config.writer_lock(false))
    else {
        return;
    };
    let store = Store::new(backend);
    let first = store.create(header("s", 1)).unwrap();
    append_turns(&first, 1);
    first.close().unwrap();
    // Two writers open the same 8-event log (each adds nothing: the log ends closed).
    let a = store.open_write("s").unwrap();
    let b = store.open_write("s").unwrap();
    let n_before = a.durable_len();
    assert_eq!(b.durable_len(), n_before);
    let (turn, next) = next_turn(&a);
    a.append(turn_candidates(turn, next, 40), 5).unwrap();
    let (turn, next) = next_turn(&b);
    let error = b.append(turn_candidates(turn, next, 40), 5).unwrap_err();
    let AppendError::Store { cause, .. } = &error else {
        panic!("expected a store error, got {error}");
    };
    let StoreError::SeqConflict {
        id,
        expected,
        found,
    } = cause.as_ref()
    else {
        panic!("expected a conflict, got {cause}");
    };
    assert_eq!(
        (id.as_str(), *expected, *found),
        ("s", n_before, a.durable_len())
    );
    assert_eq!(
        cause.to_string(),
        format!(
            "stale writer for session \"s\": it appends at seq {n_before}, but the store's next seq is {}",
            a.durable_len()
        )
    );
    drop(b);
    a.close().unwrap();
    let log = store.read("s").unwrap();
    assert_eq!(log.events.len() as u64, n_before + 8);
    store.load("s").unwrap();
}

#[test]
fn eight_racing_writers_leave_a_dense_log_holding_every_acknowledged_append() {
    let Some((backend, _schema)) = pg::backend_with("race", |config| config.writer_lock(false))
    else {
        return;
    };
    let config = backend.config().clone();
    Store::new(backend)
        .create(header("race", 1))
        .unwrap()
        .close()
        .unwrap();
    let n_writers = 8;
    let n_turns_each = 6;
    let start = Arc::new(Barrier::new(n_writers));
    let results: Vec<(Vec<(u64, String)>, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n_writers)
            .map(|_| {
                let config = config.clone();
                let start = Arc::clone(&start);
                scope.spawn(move || {
                    // Each writer is its own "host": its own backend, pool and connections.
                    let store = Store::new(PostgresBackend::open(config).unwrap());
                    let mut acked = Vec::new();
                    let mut n_conflicts = 0;
                    let mut n_turns = 0;
                    let mut writer: Option<SessionWriter> = None;
                    start.wait();
                    while n_turns < n_turns_each {
                        let current = match writer.take() {
                            Some(writer) => writer,
                            None => match store.open_write("race") {
                                Ok(writer) => writer,
                                // The reopen's own marker lost a race: try again.
                                Err(error) if is_seq_conflict(&error) => {
                                    n_conflicts += 1;
                                    continue;
                                }
                                Err(error) => panic!("open: {error}"),
                            },
                        };
                        let (turn, next) = next_turn(&current);
                        match current.append(turn_candidates(turn, next, 40), 7) {
                            Ok(events) => {
                                acked.extend(
                                    events
                                        .iter()
                                        .map(|event| (event.seq().get(), event.to_json())),
                                );
                                n_turns += 1;
                                writer = Some(current);
                            }
                            Err(AppendError::Store { cause, .. }) if is_seq_conflict(&cause) => {
                                // The loser: nothing of its batch is stored; reopen and retry.
                                let StoreError::SeqConflict {
                                    expected, found, ..
                                } = *cause
                                else {
                                    unreachable!()
                                };
                                assert_eq!(expected, next);
                                assert!(found > expected, "{cause}");
                                n_conflicts += 1;
                            }
                            Err(error) => panic!("append: {error}"),
                        }
                    }
                    (acked, n_conflicts)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    let store = Store::new(PostgresBackend::open(config).unwrap());
    let log = store.read("race").unwrap();
    // Dense (the read checks every seq) and valid under the core's rules.
    let session = store.load("race").unwrap();
    let stored: Vec<String> = session.events().unwrap()[..log.events.len()]
        .iter()
        .map(|event| event.to_json())
        .collect();
    let mut n_acked = 0;
    for (acked, _) in &results {
        for (seq, json) in acked {
            assert_eq!(
                &stored[*seq as usize], json,
                "acknowledged seq {seq} differs"
            );
            n_acked += 1;
        }
    }
    assert_eq!(n_acked, n_writers * n_turns_each * 8);
    let n_conflicts: u64 = results.iter().map(|(_, n)| n).sum();
    assert!(n_conflicts > 0, "8 racing writers never conflicted");
    // Everything stored beyond the acknowledged turns is reopen markers.
    let n_turn_starts = session
        .events()
        .unwrap()
        .iter()
        .filter(|event| event.event_type().as_str() == "turn/start")
        .count();
    assert_eq!(n_turn_starts, n_writers * n_turns_each);
}

#[test]
fn a_connection_killed_mid_batch_leaves_no_partial_batch() {
    let Some(schema) = pg::schema("kill") else {
        return;
    };
    let store = Store::new(PostgresBackend::connect(&schema.store_url()).unwrap());
    let mut admin = pg::client();
    let mut n_killed_in_flight = 0;
    // A kill can miss (the statement may finish first): a few tries, each with a bigger batch.
    for attempt in 0..3 {
        let id = format!("kill-{attempt}");
        let writer = store.create(header(&id, 1)).unwrap();
        append_turns(&writer, 1);
        let n_before = writer.durable_len();
        let mut batch = Vec::new();
        let n_turns = 4_000 << attempt;
        for turn in 0..n_turns {
            batch.extend(turn_candidates(2 + turn, n_before + turn * 8, 600));
        }
        let n_batch = batch.len() as u64;
        let result = std::thread::scope(|scope| {
            let append = scope.spawn(|| writer.append(batch, 9));
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut killed = false;
            while !append.is_finished() && Instant::now() < deadline {
                let row = admin
                    .query_opt(
                        "SELECT pid FROM pg_stat_activity WHERE state = 'active' \
                         AND query LIKE '%WITH claimed AS%' AND query LIKE $1 \
                         AND pid <> pg_backend_pid()",
                        &[&format!("%{}%", schema.name())],
                    )
                    .unwrap();
                if let Some(row) = row {
                    // Let it insert for a while, then pull the plug.
                    std::thread::sleep(Duration::from_millis(150));
                    let pid: i32 = row.get(0);
                    admin
                        .execute("SELECT pg_terminate_backend($1)", &[&pid])
                        .unwrap();
                    killed = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            (append.join().unwrap(), killed)
        });
        let (appended, killed) = result;
        let n_stored = store.read(&id).unwrap().events.len() as u64;
        match appended {
            Err(error) => {
                assert!(killed, "append failed without a kill: {error}");
                assert_eq!(n_stored, n_before, "{error}");
                assert!(
                    error
                        .to_string()
                        .contains("nothing of the batch was stored"),
                    "{error}"
                );
                n_killed_in_flight += 1;
            }
            Ok(events) => assert_eq!(n_stored, n_before + events.len() as u64),
        }
        assert!(n_stored == n_before || n_stored == n_before + n_batch);
        let (count, next_seq): (i64, i64) = {
            let row = admin
                .query_one(
                    &format!(
                        "SELECT (SELECT count(*) FROM {s}.events WHERE session_id = $1), \
                                (SELECT next_seq FROM {s}.sessions WHERE id = $1)",
                        s = schema.name()
                    ),
                    &[&id],
                )
                .unwrap();
            (row.get(0), row.get(1))
        };
        assert_eq!((count as u64, next_seq as u64), (n_stored, n_stored));
        // The poisoned writer is dropped; a reopen works and appends again.
        drop(writer);
        let reopened = store.open_write(&id).unwrap();
        append_turns(&reopened, 1);
        reopened.close().unwrap();
        store.load(&id).unwrap();
        if n_killed_in_flight > 0 {
            break;
        }
    }
    assert!(
        n_killed_in_flight > 0,
        "no kill landed while a batch was in flight"
    );
}

#[test]
fn another_schema_version_is_refused_naming_both() {
    let Some((backend, schema)) = pg::backend_with("version", |config| config) else {
        return;
    };
    drop(backend);
    let mut admin = pg::client();
    admin
        .batch_execute(&format!(
            "UPDATE {}.schema_version SET version = 2",
            schema.name()
        ))
        .unwrap();
    let error = PostgresBackend::connect(&schema.store_url())
        .err()
        .expect("version 2 must be refused");
    assert!(
        matches!(
            error,
            StoreError::PostgresSchemaVersion {
                found: 2,
                expected: SCHEMA_VERSION,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains(&format!(
        "has strata schema version 2, but this build reads only version {SCHEMA_VERSION}"
    )));

    // A schema holding tables strata did not make is refused too, and left alone.
    let Some(foreign) = pg::schema("foreign") else {
        return;
    };
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA {s}; CREATE TABLE {s}.sessions (x int)",
            s = foreign.name()
        ))
        .unwrap();
    let error = PostgresBackend::connect(&foreign.store_url())
        .err()
        .expect("a foreign schema must be refused");
    assert!(
        matches!(error, StoreError::PostgresSchemaVersion { found: 0, .. }),
        "{error}"
    );
    let n_tables: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = $1",
            &[&foreign.name()],
        )
        .unwrap()
        .get(0);
    assert_eq!(n_tables, 1);

    // A lookup that may not create anything leaves a missing schema missing.
    let Some(missing) = pg::schema("missing") else {
        return;
    };
    let config = PostgresConfig::from_url(&missing.store_url())
        .unwrap()
        .create_schema(false);
    let error = PostgresBackend::open(config).err().expect("no store there");
    assert!(
        error.to_string().contains("holds no strata store"),
        "{error}"
    );
    let n_schemas: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname = $1",
            &[&missing.name()],
        )
        .unwrap()
        .get(0);
    assert_eq!(n_schemas, 0);
}

#[test]
fn fork_copies_the_inherited_rows_server_side_and_refuses_a_replaced_parent() {
    let Some((backend, schema)) = pg::backend_with("fork", |config| config) else {
        return;
    };
    let store = Store::new(backend.clone());
    let parent = store.create(header("parent", 1)).unwrap();
    append_turns(&parent, 2);
    parent.close().unwrap();
    let child = store
        .fork("parent", "child", Some(15), ForkMode::ClosedTurn)
        .unwrap();
    child.close().unwrap();
    let mut admin = pg::client();
    // Rows 0..16 of the child are the parent's rows, column for column.
    let n_differing: i64 = admin
        .query_one(
            &format!(
                "SELECT count(*) FROM {s}.events p FULL JOIN \
                 (SELECT * FROM {s}.events WHERE session_id = 'child' AND seq < 16) c USING (seq) \
                 WHERE p.session_id = 'parent' AND (c.seq IS NULL OR \
                   (p.type, p.time, p.data, p.source_event_seqs, p.surface_op, p.ignorable) \
                   IS DISTINCT FROM (c.type, c.time, c.data, c.source_event_seqs, c.surface_op, c.ignorable))",
                s = schema.name()
            ),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(n_differing, 0);
    let log = store.read("child").unwrap();
    assert_eq!(log.events.len(), 17);
    assert_eq!(log.header.parent_session(), Some("parent"));
    store.load("child").unwrap();

    // A parent header that no longer matches what is stored: refused, nothing created.
    let session = store.load("parent").unwrap();
    let impostor = header("parent", 99);
    let error = backend
        .create_fork(
            &impostor,
            16,
            &header("orphan", 2),
            &session.events().unwrap()[..16],
        )
        .err()
        .expect("a replaced parent must be refused");
    assert!(error.to_string().contains("was replaced"), "{error}");
    assert!(!store.backend().exists("orphan").unwrap());
}

#[test]
fn payload_text_is_stored_exactly_as_written() {
    let Some((backend, schema)) = pg::backend_with("exact", |config| config) else {
        return;
    };
    let store = Store::new(backend);
    // Key order, number spellings, escapes and spacing that jsonb would all rewrite (a stored
    // log may carry spellings an append would not produce; they must survive untouched).
    let data = r#"{"z":1,"a":-0,"n":1.50,"e":1E+2,"s":"tab\tnul\u0000é\u00e9"}"#;
    let line =
        format!(r#"{{"type":"x-test/exact","seq":0,"time":3,"data":{data},"ignorable":true}}"#);
    let row = RawEvent::from_json_str(&line).unwrap();
    store.import(header("exact", 1), vec![row]).unwrap();
    let mut admin = pg::client();
    let stored: String = admin
        .query_one(
            &format!(
                "SELECT data FROM {}.events WHERE session_id = 'exact' AND seq = 0",
                schema.name()
            ),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(stored, data);
    let read = store.read("exact").unwrap();
    assert_eq!(read.events[0].data_json(), Some(data));
    assert_eq!(
        store.load("exact").unwrap().events().unwrap()[0].to_json(),
        line
    );
}

#[test]
fn a_follower_on_another_connection_sees_appends_as_they_commit() {
    let Some((writer_backend, schema)) = pg::backend_with("follow", |config| config) else {
        return;
    };
    let store = Store::new(writer_backend);
    let writer = store.create(header("live", 1)).unwrap();
    append_turns(&writer, 1);
    // The reader is another "host": its own backend on the same schema.
    let reader = PostgresBackend::connect(&schema.store_url()).unwrap();
    let mut follower = reader.follow("live", FollowFrom::Last(6)).unwrap();
    assert_eq!(follower.header().id(), "live");
    // The backlog first, from the requested seq.
    let backlog = follower.wait(Duration::from_secs(5)).unwrap();
    let seqs: Vec<u64> = backlog.iter().filter_map(|e| e.seq_number()).collect();
    assert_eq!(seqs, (2..8).collect::<Vec<_>>());
    // Nothing new: the wait times out empty.
    assert!(follower
        .wait(Duration::from_millis(200))
        .unwrap()
        .is_empty());
    std::thread::scope(|scope| {
        let appender = scope.spawn(|| {
            for _ in 0..3 {
                std::thread::sleep(Duration::from_millis(300));
                append_turns(&writer, 1);
            }
        });
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while seen.len() < 24 && Instant::now() < deadline {
            // A long timeout: an event arriving well before it proves the notification woke
            // the follower (the fallback re-read happens only at the timeout).
            let started = Instant::now();
            let events = follower.wait(Duration::from_secs(20)).unwrap();
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the follower was not woken by the append's notification"
            );
            seen.extend(events.iter().filter_map(|e| e.seq_number()));
        }
        appender.join().unwrap();
        assert_eq!(seen, (8..32).collect::<Vec<_>>());
    });
    assert_eq!(follower.next_seq(), 32);
    writer.close().unwrap();
    store.delete("live").unwrap();
    let error = follower.wait(Duration::from_millis(100)).unwrap_err();
    assert!(matches!(error, StoreError::NotFound { .. }), "{error}");
}

/// FNV-1a 64 as 16 hex digits, the checksum of a checkpoint record's JSON line.
fn fnv64_hex(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Rewrites the JSON body of session `id`'s checkpoint record with `edit`, keeping the record
/// well-formed (a fresh checksum line), as a bug or a foreign writer could leave it.
fn forge_checkpoint(
    admin: &mut postgres::Client,
    schema: &str,
    id: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) {
    let record: Vec<u8> = admin
        .query_one(
            &format!("SELECT record FROM {schema}.checkpoints WHERE session_id = $1"),
            &[&id],
        )
        .unwrap()
        .get(0);
    let text = String::from_utf8(record).unwrap();
    let lines: Vec<&str> = text.split('\n').collect();
    let mut body: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    edit(&mut body);
    let json = serde_json::to_string(&body).unwrap();
    let forged = format!("{}\n{json}\n{}\n", lines[0], fnv64_hex(json.as_bytes()));
    admin
        .execute(
            &format!("UPDATE {schema}.checkpoints SET record = $2 WHERE session_id = $1"),
            &[&id, &forged.as_bytes()],
        )
        .unwrap();
}

fn n_checkpoints(admin: &mut postgres::Client, schema: &str, id: &str) -> i64 {
    admin
        .query_one(
            &format!("SELECT count(*) FROM {schema}.checkpoints WHERE session_id = $1"),
            &[&id],
        )
        .unwrap()
        .get(0)
}

// Issue 9: a checkpoint row is used only when its evidence matches the stored rows; every
// other open reads the whole log, equals a full restore, and rewrites the row.
#[test]
fn stale_checkpoint_rows_are_ignored_and_the_open_equals_a_full_restore() {
    let Some((backend, schema)) = pg::backend_with("ckpt", |config| config) else {
        return;
    };
    let store = Store::new(backend);
    let s = schema.name();
    let mut admin = pg::client();
    new_session(&store, "s", 8);
    assert!(
        compare_opens(&store, "s"),
        "a closed writer leaves a checkpoint"
    );
    assert_eq!(n_checkpoints(&mut admin, s, "s"), 1);

    // A torn record (the checksum line is gone).
    admin
        .execute(
            &format!("UPDATE {s}.checkpoints SET record = substring(record from 1 for 40)"),
            &[],
        )
        .unwrap();
    assert!(!compare_opens(&store, "s"), "torn record");
    assert!(
        compare_opens(&store, "s"),
        "rewritten by the whole-log open"
    );

    // An edited record (one byte of the body changed, the checksum no longer matches).
    admin
        .execute(
            &format!(
                "UPDATE {s}.checkpoints SET record = \
                 overlay(record placing '\\x41'::bytea from 30 for 1)"
            ),
            &[],
        )
        .unwrap();
    assert!(!compare_opens(&store, "s"), "edited record");
    assert!(compare_opens(&store, "s"));

    // A well-formed record claiming more events than the log holds.
    forge_checkpoint(&mut admin, s, "s", |body| {
        let n = body["evidence"]["nEvents"].as_u64().unwrap();
        body["evidence"]["nEvents"] = (n + 5).into();
    });
    assert!(!compare_opens(&store, "s"), "nEvents beyond the log");
    assert!(compare_opens(&store, "s"));

    // The `n_events` column disagrees with the record: the record decides (still fits).
    admin
        .execute(
            &format!("UPDATE {s}.checkpoints SET n_events = 100000"),
            &[],
        )
        .unwrap();
    assert!(compare_opens(&store, "s"), "the column is not the evidence");

    // The last covered row (the checkpoint covers the whole log) changed under the
    // checkpoint: same JSON, other bytes.
    admin
        .execute(
            &format!(
                "UPDATE {s}.events SET data = ' ' || data WHERE session_id = 's' \
                 AND seq = (SELECT next_seq - 1 FROM {s}.sessions WHERE id = 's')"
            ),
            &[],
        )
        .unwrap();
    assert!(!compare_opens(&store, "s"), "row data changed");
    assert!(compare_opens(&store, "s"));

    // The stored header changed under the checkpoint (same header, other bytes).
    admin
        .execute(
            &format!("UPDATE {s}.sessions SET header = header || ' ' WHERE id = 's'"),
            &[],
        )
        .unwrap();
    assert!(!compare_opens(&store, "s"), "header changed");
    assert!(compare_opens(&store, "s"));

    // The log lost its last rows (an older copy restored): the checkpoint covers more.
    admin
        .batch_execute(&format!(
            "DELETE FROM {s}.events WHERE session_id = 's' \
               AND seq = (SELECT next_seq - 1 FROM {s}.sessions WHERE id = 's'); \
             UPDATE {s}.sessions SET next_seq = next_seq - 1 WHERE id = 's'"
        ))
        .unwrap();
    assert!(
        !compare_opens(&store, "s"),
        "log shorter than the checkpoint"
    );
    assert!(compare_opens(&store, "s"));

    // Evidence that fits, but a checkpoint that does not describe the log (a surface node
    // named twice): the resume fails, the open falls back to the whole log (StaleCheckpoint).
    forge_checkpoint(&mut admin, s, "s", |body| {
        let nodes = body["nodes"].as_array_mut().unwrap();
        let first = nodes[0].clone();
        nodes.insert(0, first);
    });
    assert!(
        !compare_opens(&store, "s"),
        "a checkpoint that does not fit"
    );
    assert!(compare_opens(&store, "s"));

    // A checkpoint whose evidence fits but which names a row that is gone: the same.
    forge_checkpoint(&mut admin, s, "s", |body| {
        body["requestHeaderSeq"] = 3.into();
    });
    admin
        .execute(
            &format!("DELETE FROM {s}.events WHERE session_id = 's' AND seq = 3"),
            &[],
        )
        .unwrap_or_else(|error| panic!("{error}"));
    let full = store.load("s").err().expect("a gap is corruption");
    assert!(
        matches!(full, StoreError::Corrupt { seq: Some(3), .. }),
        "{full}"
    );
    // The lazy open's pinned row is missing, so it reads the whole log, which reports the gap.
    let lazy = store.open_write("s").expect_err("the whole log decides");
    assert_eq!(lazy.to_string(), full.to_string());
    let lazy = store.load_lazy("s").err().expect("the whole log decides");
    assert_eq!(lazy.to_string(), full.to_string());

    // Deleting the session deletes its checkpoint.
    store.delete("s").unwrap();
    let n_rows: i64 = admin
        .query_one(&format!("SELECT count(*) FROM {s}.checkpoints"), &[])
        .unwrap()
        .get(0);
    assert_eq!(n_rows, 0);
}

// Issue 9: a fork child starts without a checkpoint (it is never copied from the parent),
// gets its own when its writer closes, and keeps it when the parent goes.
#[test]
fn a_fork_child_starts_without_a_checkpoint() {
    let Some((backend, schema)) = pg::backend_with("ckptfork", |config| config) else {
        return;
    };
    let store = Store::new(backend);
    let s = schema.name();
    let mut admin = pg::client();
    new_session(&store, "parent", 3);
    assert!(compare_opens(&store, "parent"));
    let child = store
        .fork("parent", "child", Some(15), ForkMode::ClosedTurn)
        .unwrap();
    assert_eq!(n_checkpoints(&mut admin, s, "child"), 0);
    append_turns(&child, 1);
    child.close().unwrap();
    assert_eq!(n_checkpoints(&mut admin, s, "child"), 1);
    assert!(compare_opens(&store, "child"));
    store.delete("parent").unwrap();
    assert_eq!(n_checkpoints(&mut admin, s, "parent"), 0);
    assert_eq!(n_checkpoints(&mut admin, s, "child"), 1);
    assert!(compare_opens(&store, "child"));
}

// Issue 9: a schema made by a build without checkpoints gets the table on the next open (no
// version bump); a lookup that may not create anything works without it.
#[test]
fn the_checkpoint_table_is_an_optional_cache() {
    let Some((backend, schema)) = pg::backend_with("ckptopt", |config| config) else {
        return;
    };
    let store = Store::new(backend);
    new_session(&store, "s", 2);
    drop(store);
    let mut admin = pg::client();
    admin
        .batch_execute(&format!("DROP TABLE {}.checkpoints", schema.name()))
        .unwrap();
    let config = PostgresConfig::from_url(&schema.store_url())
        .unwrap()
        .create_schema(false);
    let lookup = Store::new(PostgresBackend::open(config).unwrap());
    assert!(!compare_opens(&lookup, "s"), "no table, no checkpoint");
    let n_tables: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'checkpoints'",
            &[&schema.name()],
        )
        .unwrap()
        .get(0);
    assert_eq!(n_tables, 0, "create_schema(false) created nothing");
    drop(lookup);
    let store = Store::new(PostgresBackend::connect(&schema.store_url()).unwrap());
    let version: i32 = admin
        .query_one(
            &format!("SELECT version FROM {}.schema_version", schema.name()),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(i64::from(version), SCHEMA_VERSION);
    assert!(!compare_opens(&store, "s"), "the first open writes one");
    assert!(compare_opens(&store, "s"));
}

// Issue 22: a search_path in the address's options was ignored in favour of `strata`.
#[test]
fn a_search_path_in_the_address_options_is_the_schema_written_to() {
    let Some(schema) = pg::schema("search_path") else {
        return;
    };
    let base = &pg::server().expect("a server").url;
    let id = schema.name();
    let url = format!("{base}?options=-csearch_path%3D{}", schema.name());
    // Checked before anything opens, so a build that ignores the option writes nowhere.
    let config = PostgresConfig::from_url(&url).unwrap();
    assert_eq!(config.schema_name(), schema.name());
    let store = Store::new(PostgresBackend::open(config).unwrap());
    let writer = store.create(header(id, 1)).unwrap();
    append_turns(&writer, 1);
    writer.close().unwrap();
    let n_events = store.read(id).unwrap().events.len() as i64;
    assert!(n_events > 0);
    let mut admin = pg::client();
    let n_rows: i64 = admin
        .query_one(
            &format!(
                "SELECT count(*) FROM {}.events WHERE session_id = $1",
                schema.name()
            ),
            &[&id],
        )
        .unwrap()
        .get(0);
    assert_eq!(n_rows, n_events);
    // Nothing of it in the default schema, if that exists at all.
    let default_exists: bool = admin
        .query_one("SELECT to_regclass('strata.sessions') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    if default_exists {
        let in_default: i64 = admin
            .query_one("SELECT count(*) FROM strata.sessions WHERE id = $1", &[&id])
            .unwrap()
            .get(0);
        assert_eq!(in_default, 0);
    }
    // The long form of the option names the same store.
    let url = format!("{base}?options=--search_path%3D{}", schema.name());
    let again = Store::new(PostgresBackend::connect(&url).unwrap());
    assert_eq!(again.load(id).unwrap().len() as i64, n_events + 1);
}
