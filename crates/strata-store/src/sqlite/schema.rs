//! The SQLite store's schema: the tables, the pragmas every connection sets, and the first
//! open that creates or checks them (docs/format.md §3).

use std::path::Path;

use rusqlite::Connection;

use crate::error::StoreError;

/// The schema this build reads and writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 1;

/// Page size of a new database, in bytes. A log is read start to end far more often than a
/// row is rewritten: at SQLite's default 4 KiB, a full load of a million ~1 KB events was
/// ~285,000 `pread` calls on the reading thread; 16 KiB pages make that a quarter.
const PAGE_SIZE: u32 = 16 * 1024;

/// `PRAGMA application_id` of a strata database: "STRA".
pub const APPLICATION_ID: i64 = 0x5354_5241;

const SCHEMA: &str = "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    header TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    cwd TEXT,
    parent_session TEXT,
    next_seq INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_by_created_at ON sessions (created_at DESC, id);
CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    time INTEGER NOT NULL,
    data ANY NOT NULL,
    source_event_seqs TEXT,
    surface_op TEXT,
    ignorable INTEGER CHECK (ignorable IS NULL OR ignorable = 1),
    PRIMARY KEY (session_id, seq)
) STRICT;
";

/// The checkpoint cache (issue 9), created on every open when missing.
const CHECKPOINT_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS checkpoints (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    n_events INTEGER NOT NULL,
    record BLOB NOT NULL
) STRICT;
";

pub(super) fn connect(path: &Path) -> Result<Connection, StoreError> {
    let sql = |op: &'static str| {
        move |source| StoreError::Sqlite {
            path: path.to_path_buf(),
            op,
            source,
        }
    };
    let conn = Connection::open(path).map_err(sql("open"))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(sql("set busy_timeout"))?;
    Ok(conn)
}

/// Checks (or, on a pristine file, creates) the schema, then sets the durability pragmas.
pub(super) fn initialise(path: &Path, conn: &Connection) -> Result<(), StoreError> {
    let sql = |op: &'static str| {
        move |source| StoreError::Sqlite {
            path: path.to_path_buf(),
            op,
            source,
        }
    };
    let pragma = |name: &str| -> Result<i64, StoreError> {
        conn.query_row(&format!("PRAGMA {name}"), [], |row| row.get(0))
            .map_err(sql("read pragma"))
    };
    let check = |application_id: i64, user_version: i64| -> Result<(), StoreError> {
        if application_id != APPLICATION_ID {
            return Err(StoreError::ForeignDatabase {
                path: path.to_path_buf(),
                found: application_id,
                expected: APPLICATION_ID,
            });
        }
        if user_version != SCHEMA_VERSION {
            return Err(StoreError::SchemaVersion {
                path: path.to_path_buf(),
                found: user_version,
                expected: SCHEMA_VERSION,
            });
        }
        Ok(())
    };
    let (application_id, user_version) = (pragma("application_id")?, pragma("user_version")?);
    if application_id == 0 && user_version == 0 {
        conn.execute_batch(&format!("PRAGMA page_size = {PAGE_SIZE}"))
            .map_err(sql("set page_size"))?;
        conn.execute_batch("BEGIN IMMEDIATE")
            .map_err(sql("begin schema transaction"))?;
        let result = (|| {
            let n_objects: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
                .map_err(sql("inspect schema"))?;
            let (application_id, user_version) =
                (pragma("application_id")?, pragma("user_version")?);
            if application_id == 0 && user_version == 0 {
                if n_objects != 0 {
                    return Err(StoreError::SchemaVersion {
                        path: path.to_path_buf(),
                        found: 0,
                        expected: SCHEMA_VERSION,
                    });
                }
                conn.execute_batch(SCHEMA).map_err(sql("create schema"))?;
                conn.execute_batch(&format!(
                    "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
                ))
                .map_err(sql("stamp schema version"))?;
                Ok(())
            } else {
                check(application_id, user_version)
            }
        })();
        match result {
            Ok(()) => conn.execute_batch("COMMIT").map_err(sql("commit schema"))?,
            Err(error) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(error);
            }
        }
    } else {
        check(application_id, user_version)?;
    }
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(sql("set journal_mode"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Sqlite {
            path: path.to_path_buf(),
            op: "set journal_mode",
            source: rusqlite::Error::InvalidParameterName(format!(
                "journal_mode is {mode}, not wal"
            )),
        });
    }
    conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        .map_err(sql("set pragmas"))?;
    conn.execute_batch(CHECKPOINT_SCHEMA)
        .map_err(sql("create the checkpoint table"))?;
    Ok(())
}
