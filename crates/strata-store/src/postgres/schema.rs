//! The PostgreSQL schema: its DDL, the SQL the backend runs (every table name qualified with the
//! store's schema), and the bump-and-reject check done when a backend opens.
//!
//! Invariants:
//! - A schema strata uses holds `schema_version`, `sessions` and `events`, plus the optional
//!   `checkpoints` cache (issue 9); `schema_version` has one row, `('strata', SCHEMA_VERSION)`.
//! - `checkpoints` is created on open when missing, without a version bump: a build that does
//!   not know it never reads it, its deletes still remove a session's row (the foreign key
//!   cascades), and its appends only leave the checkpoint behind the log, which a later
//!   resumable open detects. A store whose table cannot be created (`create_schema(false)`, or no
//!   `CREATE` privilege) works without checkpoints.
//! - A schema with any other version, or with tables but no version row, is refused before
//!   anything in it is changed, naming both versions. There are no in-place migrations.
//! - Creating the tables happens in one transaction, serialized between concurrent openers by a
//!   transaction-level advisory lock (creation only; appends never depend on advisory locks).

use postgres::Client;

use super::{fnv1a, PostgresBackend};
use crate::error::StoreError;

/// The schema version this build reads and writes (the `schema_version` table).
pub const SCHEMA_VERSION: i64 = 1;

/// The tables, with `{s}` standing for the quoted schema name.
///
/// - `sessions.next_seq` is the append watermark. Invariant: equals the number of `events` rows
///   of the session; every append moves it from the batch's first seq to its end in the same
///   statement that inserts the rows.
/// - `events.data` is the payload's exact JSON text (see the module docs of `postgres` for the
///   measurement behind `text`), the other envelope fields are columns.
/// - `events` has no foreign key to `sessions`: every write claims the session row first (the
///   expected-next-seq update, or the insert of a new session), which already proves the session
///   exists, and the per-row referential check doubled the server's insert time when measured.
const DDL: &str = "
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE {s}.schema_version (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    application text NOT NULL,
    version integer NOT NULL
);
CREATE TABLE {s}.sessions (
    id text PRIMARY KEY,
    header text NOT NULL,
    created_at bigint NOT NULL,
    cwd text,
    parent_session text,
    next_seq bigint NOT NULL CHECK (next_seq >= 0)
);
CREATE INDEX sessions_by_created_at ON {s}.sessions (created_at DESC, id);
CREATE TABLE {s}.events (
    session_id text NOT NULL,
    seq bigint NOT NULL CHECK (seq >= 0),
    type text NOT NULL,
    time bigint NOT NULL,
    data text NOT NULL,
    source_event_seqs text,
    surface_op text,
    ignorable boolean CHECK (ignorable),
    PRIMARY KEY (session_id, seq)
);
";

/// The checkpoint cache (issue 9), created on open when missing (see the module docs).
///
/// - `record` is the checkpoint record of `strata_format::checkpoint` (bytes, as SQLite's BLOB), whose
///   evidence names the stored header and the last covered row; `n_events` repeats its
///   coverage for queries, and is never trusted over the record.
/// - The foreign key makes deleting a session delete its checkpoint, whichever build deletes.
const CHECKPOINT_DDL: &str = "
CREATE TABLE IF NOT EXISTS {s}.checkpoints (
    session_id text PRIMARY KEY REFERENCES {s}.sessions (id) ON DELETE CASCADE,
    n_events bigint NOT NULL,
    record bytea NOT NULL
);
";

/// The columns of an `events` row, in the order every statement below uses.
const EVENT_COLUMNS: &str = "seq, type, time, data, source_event_seqs, surface_op, ignorable";

/// The SQL texts of one backend, built once with its schema name.
pub(super) struct Sql {
    pub exists: String,
    pub session: String,
    pub page: String,
    pub list: String,
    pub insert_session: String,
    pub copy_events: String,
    pub append: String,
    pub next_seq: String,
    pub parent_for_share: String,
    pub fork_copy: String,
    pub delete_session: String,
    pub delete_events: String,
    pub resume: String,
    pub evidence: String,
    pub pinned: String,
    pub upsert_checkpoint: String,
    pub holder: &'static str,
}

impl Sql {
    pub(super) fn new(schema: &str) -> Sql {
        let s = quote_ident(schema);
        Sql {
            exists: format!("SELECT 1 FROM {s}.sessions WHERE id = $1"),
            session: format!("SELECT header, next_seq FROM {s}.sessions WHERE id = $1"),
            // `LIMIT NULL` is `LIMIT ALL`. The upper bound is redundant for a dense log but
            // keeps the plan bounded: on a freshly loaded table (no statistics yet) the planner
            // picks a bitmap scan + sort of *every* row from `$2` on for each page, which made
            // a long session's read quadratic (docs/measurements.md §2).
            page: format!(
                "SELECT {EVENT_COLUMNS} FROM {s}.events \
                 WHERE session_id = $1 AND seq >= $2 \
                 AND seq < COALESCE($2 + $3, 9223372036854775807) ORDER BY seq LIMIT $3"
            ),
            list: format!("SELECT id, header FROM {s}.sessions ORDER BY created_at DESC, id"),
            insert_session: format!(
                "INSERT INTO {s}.sessions (id, header, created_at, cwd, parent_session, next_seq) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING"
            ),
            copy_events: format!(
                "COPY {s}.events (session_id, {EVENT_COLUMNS}) FROM STDIN (FORMAT binary)"
            ),
            // One statement, so one implicit transaction and one round trip: claim the session
            // by moving `next_seq` from the expected value (a row lock: a racing writer waits,
            // then re-reads the row and no longer matches), insert the rows only if the claim
            // succeeded, and notify followers (delivered at commit). Returns how many rows each
            // part touched.
            append: format!(
                "WITH claimed AS ( \
                     UPDATE {s}.sessions SET next_seq = $3 \
                     WHERE id = $1 AND next_seq = $2 RETURNING id \
                 ), inserted AS ( \
                     INSERT INTO {s}.events (session_id, {EVENT_COLUMNS}) \
                     SELECT claimed.id, batch.* FROM claimed, \
                         unnest($4::bigint[], $5::text[], $6::bigint[], $7::text[], \
                                $8::text[], $9::text[], $10::boolean[]) \
                         AS batch ({EVENT_COLUMNS}) \
                     RETURNING 1 \
                 ), notified AS ( \
                     SELECT pg_notify($11, $12) FROM claimed \
                 ) \
                 SELECT (SELECT count(*) FROM claimed), (SELECT count(*) FROM inserted), \
                        (SELECT count(*) FROM notified)"
            ),
            next_seq: format!("SELECT next_seq FROM {s}.sessions WHERE id = $1"),
            parent_for_share: format!(
                "SELECT header, next_seq FROM {s}.sessions WHERE id = $1 FOR SHARE"
            ),
            fork_copy: format!(
                "INSERT INTO {s}.events (session_id, {EVENT_COLUMNS}) \
                 SELECT $1, {EVENT_COLUMNS} FROM {s}.events WHERE session_id = $2 AND seq < $3"
            ),
            delete_session: format!("DELETE FROM {s}.sessions WHERE id = $1"),
            delete_events: format!("DELETE FROM {s}.events WHERE session_id = $1"),
            // A session's stored header and `next_seq`, its checkpoint record, and the row the
            // `n_events` column says the record covers last (its evidence), in one round trip.
            resume: format!(
                "SELECT s.header, s.next_seq, c.record, c.n_events, e.type, e.time, e.data \
                 FROM {s}.sessions s \
                 LEFT JOIN {s}.checkpoints c ON c.session_id = s.id \
                 LEFT JOIN {s}.events e ON e.session_id = s.id AND e.seq = c.n_events - 1 \
                 WHERE s.id = $1"
            ),
            // A session's stored header and the row at seq `$2`: a checkpoint's evidence.
            evidence: format!(
                "SELECT s.header, e.type, e.time, e.data FROM {s}.sessions s \
                 LEFT JOIN {s}.events e ON e.session_id = s.id AND e.seq = $2 \
                 WHERE s.id = $1"
            ),
            pinned: format!(
                "SELECT {EVENT_COLUMNS} FROM {s}.events \
                 WHERE session_id = $1 AND seq = ANY($2) ORDER BY seq"
            ),
            upsert_checkpoint: format!(
                "INSERT INTO {s}.checkpoints (session_id, n_events, record) VALUES ($1, $2, $3) \
                 ON CONFLICT (session_id) DO UPDATE \
                 SET n_events = excluded.n_events, record = excluded.record"
            ),
            // Who holds a session-level advisory lock on the key (`classid`, `objid`): the
            // backend's application name carries the strata writer's pid.
            holder: "SELECT a.application_name FROM pg_locks l \
                     JOIN pg_stat_activity a ON a.pid = l.pid \
                     WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
                       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                       AND l.classid::bigint = $1 AND l.objid::bigint = $2 \
                     LIMIT 1",
        }
    }
}

/// `name` as a quoted SQL identifier.
pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Checks the schema's version, creating the tables in a schema that has none; returns whether
/// the `checkpoints` cache is there (created now when missing and creating is allowed).
pub(super) fn initialise(
    backend: &PostgresBackend,
    client: &mut Client,
) -> Result<bool, StoreError> {
    let schema = backend.schema();
    let failed = backend.failed("initialise schema");
    let mut tx = client.transaction().map_err(&failed)?;
    let key = fnv1a(&["strata schema", schema]) as i64;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&key])
        .map_err(&failed)?;
    let row = tx
        .query_one(
            "SELECT to_regclass(format('%I.schema_version', $1::text)) IS NOT NULL, \
                    (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f'))",
            &[&schema],
        )
        .map_err(&failed)?;
    let has_version: bool = row.try_get(0).map_err(&failed)?;
    let n_relations: i64 = row.try_get(1).map_err(&failed)?;
    let refuse = |found: i64| StoreError::PostgresSchemaVersion {
        store: backend.describe_store(),
        schema: schema.to_owned(),
        found,
        expected: SCHEMA_VERSION,
    };
    if has_version {
        let quoted = quote_ident(schema);
        let version = tx
            .query_opt(
                &format!(
                    "SELECT version FROM {quoted}.schema_version WHERE application = 'strata'"
                ),
                &[],
            )
            .map_err(&failed)?;
        let found = match version {
            Some(row) => i64::from(row.try_get::<_, i32>(0).map_err(&failed)?),
            None => 0,
        };
        if found != SCHEMA_VERSION {
            return Err(refuse(found));
        }
        let checkpoints = ensure_checkpoints(backend, &mut tx)?;
        tx.commit().map_err(backend.failed("commit schema"))?;
        return Ok(checkpoints);
    }
    if n_relations != 0 {
        return Err(refuse(0));
    }
    if !backend.config().create_schema {
        return Err(StoreError::PostgresUrl {
            url: backend.describe_store(),
            detail: format!(
                "schema {schema:?} holds no strata store (and creating one was not asked for)"
            ),
        });
    }
    let quoted = quote_ident(schema);
    tx.batch_execute(&DDL.replace("{s}", &quoted))
        .map_err(backend.failed("create schema"))?;
    // lz4 TOAST compression where the server has it (PostgreSQL 14+ built with lz4): faster
    // inserts than the default pglz (docs/measurements.md §1), and reads return the same text
    // either way. A savepoint keeps a server without lz4 on the default.
    tx.batch_execute("SAVEPOINT lz4").map_err(&failed)?;
    let lz4 = tx.batch_execute(&format!(
        "ALTER TABLE {quoted}.events ALTER COLUMN data SET COMPRESSION lz4"
    ));
    let undo = if lz4.is_ok() {
        "RELEASE SAVEPOINT lz4"
    } else {
        "ROLLBACK TO SAVEPOINT lz4"
    };
    tx.batch_execute(undo).map_err(&failed)?;
    tx.execute(
        &format!(
            "INSERT INTO {quoted}.schema_version (application, version) VALUES ('strata', $1)"
        ),
        &[&(SCHEMA_VERSION as i32)],
    )
    .map_err(backend.failed("stamp schema version"))?;
    let checkpoints = ensure_checkpoints(backend, &mut tx)?;
    tx.commit().map_err(backend.failed("commit schema"))?;
    Ok(checkpoints)
}

/// Creates the `checkpoints` cache in `tx` when it is missing and creating is allowed; returns
/// whether it exists. A failed creation (no privilege) is rolled back to a savepoint, and the
/// store then runs without checkpoints: they are an optimisation, never a reason to refuse.
fn ensure_checkpoints(
    backend: &PostgresBackend,
    tx: &mut postgres::Transaction<'_>,
) -> Result<bool, StoreError> {
    let schema = backend.schema();
    let failed = backend.failed("initialise checkpoints");
    let exists: bool = tx
        .query_one(
            "SELECT to_regclass(format('%I.checkpoints', $1::text)) IS NOT NULL",
            &[&schema],
        )
        .and_then(|row| row.try_get(0))
        .map_err(&failed)?;
    if exists {
        return Ok(true);
    }
    if !backend.config().create_schema {
        return Ok(false);
    }
    tx.batch_execute("SAVEPOINT checkpoints").map_err(&failed)?;
    let created = tx.batch_execute(&CHECKPOINT_DDL.replace("{s}", &quote_ident(schema)));
    let undo = if created.is_ok() {
        "RELEASE SAVEPOINT checkpoints"
    } else {
        "ROLLBACK TO SAVEPOINT checkpoints"
    };
    tx.batch_execute(undo).map_err(&failed)?;
    Ok(created.is_ok())
}
