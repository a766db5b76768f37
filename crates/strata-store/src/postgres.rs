//! The PostgreSQL backend: sessions shared by agents on many hosts, behind the same store
//! contract as JSONL and SQLite.
//!
//! One PostgreSQL schema (default `strata`) holds every session: a `sessions` row per header
//! (with `next_seq`, the append watermark) and an `events` row per event with the envelope as
//! columns, primary key `(session_id, seq)`; a `schema_version` table stamps the layout (see
//! `schema.rs` for the DDL). The client is the blocking `postgres` crate, which drives
//! tokio-postgres on a current-thread runtime of its own per connection: the store API is
//! blocking like every other backend, and no runtime leaks into callers (an async caller puts a
//! store call on a blocking thread, as it does for SQLite). Connections come from a small pool
//! of our own (`pool.rs`); writers and followers own a dedicated connection each.
//!
//! # Why the payload is `text`
//!
//! `jsonb` alone cannot be the log: it reorders keys, drops duplicates, respells numbers and adds
//! spaces, so no payload comes back as written (format.md: reading then writing an event is
//! byte-identical). Keeping `jsonb` beside the text doubles the size and the insert time for
//! queries nobody needs from the log (`data::jsonb` works ad hoc). `bytea` costs the same as
//! `text` without being readable in SQL, and client-side zstd only moves the TOAST compressor's
//! work to the client and back. So `data` is `text`, with lz4 TOAST compression where the server
//! has it (faster inserts than the default pglz; reads return the same text). The figures, and
//! the bench that takes them (`cargo bench -p strata-store --bench postgres -- payload`), are in
//! docs/measurements.md §1.
//!
//! # Invariants
//!
//! - **One winner per seq, without locks.** An append is one statement, hence one transaction:
//!   `UPDATE sessions SET next_seq = end WHERE id = $id AND next_seq = first` claims the session
//!   (a racing writer blocks on the row, then re-reads it and no longer matches), the rows are
//!   inserted only when the claim succeeded, and a follower is notified at commit. The loser of
//!   a race gets [`StoreError::SeqConflict`] naming the seq it expected and the one it found,
//!   and nothing of its batch is stored. Correctness never depends on advisory locks.
//! - **Friendly writer lock.** On top, a writer holds a session-level advisory lock on its
//!   dedicated connection (keyed by schema and id), so a second writer fails at open with
//!   [`StoreError::Locked`] naming the holder's pid (carried in the `application_name`). It is
//!   released when the writer is dropped or its connection ends; [`PostgresConfig::writer_lock`]
//!   turns it off, and the conflict check alone then keeps the log dense.
//! - **Durable on return.** Every connection commits with `synchronous_commit` at least `on`.
//!   When the connection dies during an append, the appender terminates its old server backend,
//!   waits for it to go, and reads `next_seq` to learn the outcome: the batch is either entirely
//!   stored (the append returns `Ok`) or entirely absent (it returns the error), never partial.
//! - **Dense reads.** A log is read in seq order a page at a time; a row whose seq is not the
//!   next one is corruption, reported with the seq. Commits land in seq order (a writer cannot
//!   claim `first` before the batch ending at `first` committed), so a reader sees a prefix.
//! - **Lossless rows.** `data` is the exact payload text; `source_event_seqs` the JSONL range
//!   encoding; rows read back are the same events, byte for byte.
//! - **Checkpoints are a cache** (issue 9; `resume.rs`). The `(session_id, seq)` key is the
//!   offset index; a `checkpoints` row per session holds the newest checkpoint record, the table
//!   created on open when missing (no schema version bump, for the reasons SQLite has none:
//!   older builds never read it, their deletes cascade to it, and their appends only leave it
//!   behind the log). It is used only when it covers at most `next_seq` events, the stored
//!   header and the stored row at its last covered seq still hash to what it recorded, and the
//!   events it names decode at their seqs; anything else means a whole-log read. Writing one
//!   is best effort on a shared connection, never the writer's, so it cannot fail an append.
//!
//! # Following a live session
//!
//! Each append runs `pg_notify('strata_<hash of the schema>', '<next_seq> <id>')` in its
//! transaction; [`PostgresBackend::follow`] listens on that channel and reads new rows when its
//! session is named (and at least every poll interval, so a lost notification only delays).

mod follow;
mod options;
mod pool;
mod resume;
mod row;
mod schema;

#[cfg(test)]
mod tests;

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, Statement};
use strata_core::{Checkpoint, Event, RawEvent, SessionHeader};

use crate::backend::load_resuming;
use crate::backend::{
    Backend, Batch, EventRows, FollowFrom, Listing, LoadFn, LogAppender, LogStream, ReadFrom,
};
use crate::error::{LockHolder, StoreError};
use crate::memory::sort_newest_first;
use strata_format::codec::{decode_header_line, encode_header_line, Location};
use strata_format::lines::DEFAULT_MAX_RECORD_LEN;

pub use follow::Follower;
pub use schema::SCHEMA_VERSION;

use pool::Pool;
use row::{copy_rows, decode_row, Columns, COPY_TYPES};
use schema::Sql;

/// The schema a store address without `?schema=` or a `search_path` in its `options` uses.
pub const DEFAULT_SCHEMA: &str = "strata";

/// Most bytes a new session's id may take. The id is a key of B-tree indexes (`sessions` and
/// `events` primary keys, `sessions_by_created_at`), whose entries hold at most 2704 bytes on
/// 8 KiB pages: 2684 bytes of an id that does not compress. A round limit below that, the same
/// whatever the id's bytes, instead of a failure deep in a `COPY` for some ids only.
pub const MAX_ID_BYTES: usize = 2048;

/// Rows per page of a streamed read: per-query costs vanish, and a page stays a bounded buffer.
const PAGE_ROWS: i64 = 1024;

/// How a [`PostgresBackend`] reaches its server and lays out its tables.
///
/// Built from an address: `postgres://user[:password]@host[:port]/database[?param=value…]`
/// (`postgresql://` too), with every libpq-style parameter the driver knows plus strata's own
/// `schema=NAME` (ASCII letters, digits and `_`, at most 63 bytes; default `strata`). A
/// `search_path` set in `options` (`options=-csearch_path%3DNAME`, or `--search_path%3DNAME`)
/// names the schema too, its first entry as PostgreSQL reads it (unquoted names fold to lower
/// case); one that names no fixed schema (`$user`), or another than `schema=`, is refused.
#[derive(Clone)]
pub struct PostgresConfig {
    pg: postgres::Config,
    schema: String,
    pool_size: usize,
    writer_lock: bool,
    create_schema: bool,
    /// `postgres://user@host:port/db?schema=NAME`, for messages (never the password).
    store: String,
}

impl PostgresConfig {
    /// Parses a store address (see the type docs). The password, if any, never appears in
    /// messages.
    pub fn from_url(url: &str) -> Result<PostgresConfig, StoreError> {
        let bad = |detail: String| StoreError::PostgresUrl {
            url: redact(url),
            detail,
        };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(bad(
                "the address must start with postgres:// or postgresql://".into(),
            ));
        }
        if url.contains('#') {
            return Err(bad(
                "a store address has no #fragment (a session reference is ADDRESS#ID)".into(),
            ));
        }
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut named = None;
        let mut kept = Vec::new();
        for param in query.split('&').filter(|param| !param.is_empty()) {
            match param.split_once('=') {
                Some(("schema", name)) => named = Some(name.to_owned()),
                _ => kept.push(param),
            }
        }
        let driver_url = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        let pg = postgres::Config::from_str(&driver_url)
            .map_err(|error| bad(crate::error::error_chain(&error)))?;
        // The options still go to the server and set the connection's search_path. strata's
        // statements name their schema, so they would ignore the path: the schema follows it.
        let on_path = match pg.get_options() {
            Some(options) => options::search_path_schema(options).map_err(bad)?,
            None => None,
        };
        let schema = match (named, on_path) {
            (Some(named), Some(on_path)) if named != on_path => {
                return Err(bad(format!(
                    "schema={named} and the search_path in options (first schema {on_path:?}) \
                     name different schemas; give one"
                )))
            }
            (None, Some(on_path)) if !valid_schema_name(&on_path) => {
                return Err(bad(format!(
                    "the search_path in options names schema {on_path:?} first, which strata \
                     cannot use: {SCHEMA_NAME_RULE}"
                )))
            }
            (Some(schema), _) | (None, Some(schema)) => schema,
            (None, None) => DEFAULT_SCHEMA.to_owned(),
        };
        PostgresConfig::new(pg, &schema)
    }

    /// A configuration from a driver configuration and a schema name, used as given: a
    /// `search_path` in `pg`'s options only reaches the server (an address's is read by
    /// [`PostgresConfig::from_url`]).
    pub fn new(mut pg: postgres::Config, schema: &str) -> Result<PostgresConfig, StoreError> {
        if pg.get_application_name().is_none() {
            pg.application_name(&application_name());
        }
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(Duration::from_secs(10));
        }
        let mut config = PostgresConfig {
            pg,
            schema: String::new(),
            pool_size: 8,
            writer_lock: true,
            create_schema: true,
            store: String::new(),
        };
        config.set_schema(schema)?;
        Ok(config)
    }

    /// Uses the tables in `schema` instead (tests give each case its own).
    pub fn schema(mut self, schema: &str) -> Result<PostgresConfig, StoreError> {
        self.set_schema(schema)?;
        Ok(self)
    }

    /// At most `n` shared connections (default 8; writers and followers have their own).
    pub fn pool_size(mut self, n: usize) -> PostgresConfig {
        self.pool_size = n.max(1);
        self
    }

    /// Whether writers take the advisory writer lock (default on). The lock only turns a second
    /// writer away early with a friendly error; without it, racing writers are still kept
    /// apart by the expected-next-seq check, and the losers get [`StoreError::SeqConflict`].
    pub fn writer_lock(mut self, on: bool) -> PostgresConfig {
        self.writer_lock = on;
        self
    }

    /// Whether opening a schema that holds no store creates the tables (default on). Off for
    /// lookups that must not leave anything behind.
    pub fn create_schema(mut self, on: bool) -> PostgresConfig {
        self.create_schema = on;
        self
    }

    /// The PostgreSQL schema holding the tables.
    pub fn schema_name(&self) -> &str {
        &self.schema
    }

    /// The store as `postgres://user@host:port/db?schema=NAME`, for messages.
    pub fn describe(&self) -> &str {
        &self.store
    }

    fn set_schema(&mut self, schema: &str) -> Result<(), StoreError> {
        if !valid_schema_name(schema) {
            return Err(StoreError::PostgresUrl {
                url: describe(&self.pg, schema),
                detail: format!("schema name {schema:?} {SCHEMA_NAME_RULE}"),
            });
        }
        self.schema = schema.to_owned();
        self.store = describe(&self.pg, schema);
        Ok(())
    }
}

/// What [`valid_schema_name`] checks, for messages.
const SCHEMA_NAME_RULE: &str = "must be 1 to 63 ASCII letters, digits or underscores";

/// Whether strata can keep its tables in schema `name` (see [`SCHEMA_NAME_RULE`]).
fn valid_schema_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

impl std::fmt::Debug for PostgresConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresConfig")
            .field("store", &self.store)
            .field("pool_size", &self.pool_size)
            .field("writer_lock", &self.writer_lock)
            .field("create_schema", &self.create_schema)
            .finish()
    }
}

/// The PostgreSQL [`Backend`] (see the module docs for the layout and its invariants).
#[derive(Clone)]
pub struct PostgresBackend {
    inner: Arc<Inner>,
}

struct Inner {
    config: PostgresConfig,
    sql: Sql,
    pool: Pool,
    /// The `LISTEN`/`NOTIFY` channel of this schema's appends.
    channel: String,
    /// Whether the schema has the `checkpoints` cache (set once, when the backend opens).
    checkpoints: AtomicBool,
}

impl PostgresBackend {
    /// Connects, checks the schema version (creating the tables in an empty schema) and the
    /// server encoding.
    pub fn open(config: PostgresConfig) -> Result<PostgresBackend, StoreError> {
        let channel = format!("strata_{:016x}", fnv1a(&["strata channel", &config.schema]));
        let backend = PostgresBackend {
            inner: Arc::new(Inner {
                sql: Sql::new(&config.schema),
                pool: Pool::new(config.pg.clone(), config.store.clone(), config.pool_size),
                config,
                channel,
                checkpoints: AtomicBool::new(false),
            }),
        };
        let mut client = backend.inner.pool.get()?;
        let encoding: String = client
            .query_one("SELECT current_setting('server_encoding')", &[])
            .and_then(|row| row.try_get(0))
            .map_err(backend.failed("read server_encoding"))?;
        // Payloads are stored as text: the database must keep UTF-8 text as it is given.
        if encoding != "UTF8" && encoding != "SQL_ASCII" {
            return Err(StoreError::PostgresUrl {
                url: backend.describe_store(),
                detail: format!("the database encoding is {encoding}, not UTF8"),
            });
        }
        let checkpoints = schema::initialise(&backend, &mut client)?;
        backend
            .inner
            .checkpoints
            .store(checkpoints, Ordering::Relaxed);
        drop(client);
        Ok(backend)
    }

    /// [`PostgresConfig::from_url`] then [`PostgresBackend::open`].
    pub fn connect(url: &str) -> Result<PostgresBackend, StoreError> {
        PostgresBackend::open(PostgresConfig::from_url(url)?)
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &PostgresConfig {
        &self.inner.config
    }

    /// The PostgreSQL schema holding the tables.
    pub fn schema(&self) -> &str {
        &self.inner.config.schema
    }

    /// Follows session `id` from `from`: a [`Follower`] hands out events as other writers (on
    /// any host) append them.
    pub fn follow(&self, id: &str, from: FollowFrom) -> Result<Follower, StoreError> {
        Follower::start(self.clone(), id, from)
    }

    /// Whether this schema keeps checkpoints (see `resume.rs`).
    fn keeps_checkpoints(&self) -> bool {
        self.inner.checkpoints.load(Ordering::Relaxed)
    }

    fn describe_store(&self) -> String {
        self.inner.config.store.clone()
    }

    fn location(&self, id: &str) -> String {
        format!("{}#{id}", self.inner.config.store)
    }

    fn failed(&self, op: &'static str) -> impl Fn(postgres::Error) -> StoreError + '_ {
        move |source| StoreError::Postgres {
            store: self.inner.config.store.clone(),
            op,
            source,
        }
    }

    /// Refuses an id PostgreSQL text cannot hold (a NUL character) before anything is written.
    fn storable(id: &str) -> Result<(), StoreError> {
        match id.find('\0') {
            Some(offset) => Err(StoreError::BadId {
                id: id.to_owned(),
                source: strata_format::layout::LayoutError::UnsafeByte {
                    segment: id.to_owned(),
                    offset,
                    byte: 0,
                },
            }),
            None => Ok(()),
        }
    }

    fn not_found(&self, id: &str) -> StoreError {
        StoreError::NotFound {
            store: self.describe_store(),
            id: id.to_owned(),
        }
    }

    /// Runs a read on a shared connection, once more on a fresh one when a connection that sat
    /// idle in the pool turns out to be dead (a server restart, an idle timeout).
    fn read<T>(
        &self,
        mut f: impl FnMut(&PostgresBackend, &mut Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut client = self.inner.pool.get()?;
        match f(self, &mut client) {
            Err(StoreError::Postgres { source, .. })
                if client.reused() && (source.is_closed() || client.is_closed()) =>
            {
                drop(client);
                let mut fresh = self.inner.pool.get()?;
                f(self, &mut fresh)
            }
            other => other,
        }
    }

    /// The header and `next_seq` of a session, on `client`.
    fn session_on(
        &self,
        client: &mut Client,
        id: &str,
    ) -> Result<(SessionHeader, u64), StoreError> {
        let row = client
            .query_typed_opt(&self.inner.sql.session, &[(&id, Type::TEXT)])
            .map_err(self.failed("read session"))?;
        let Some(row) = row else {
            return Err(self.not_found(id));
        };
        let header_text: &str = row.try_get(0).map_err(self.failed("read session"))?;
        let next_seq: i64 = row.try_get(1).map_err(self.failed("read session"))?;
        let header = self.decode_header(id, header_text)?;
        Ok((header, u64::try_from(next_seq).unwrap_or(0)))
    }

    fn decode_header(&self, id: &str, text: &str) -> Result<SessionHeader, StoreError> {
        let location = Location {
            file: Some(self.location(id).into()),
            line: 1,
            seq: None,
        };
        Ok(decode_header_line(text.as_bytes(), &location)?)
    }

    /// Up to `limit` events (all when `None`) with seq `from_seq..`, on `client`.
    fn page_on(
        &self,
        client: &mut Client,
        id: &str,
        from_seq: u64,
        limit: Option<i64>,
    ) -> Result<Vec<RawEvent>, StoreError> {
        let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
        let rows = client
            .query_typed(
                &self.inner.sql.page,
                &[(&id, Type::TEXT), (&from, Type::INT8), (&limit, Type::INT8)],
            )
            .map_err(self.failed("read events"))?;
        let location = self.location(id);
        let mut events = Vec::with_capacity(rows.len());
        for (offset, row) in rows.iter().enumerate() {
            events.push(decode_row(row, &location, from_seq + offset as u64)?);
        }
        // One block for the page's payloads rather than one allocation each.
        RawEvent::share_payloads(&mut events);
        Ok(events)
    }

    /// The stored `next_seq` of a session, `None` when it is not stored.
    fn next_seq_on(&self, client: &mut Client, id: &str) -> Result<Option<u64>, StoreError> {
        let row = client
            .query_typed_opt(&self.inner.sql.next_seq, &[(&id, Type::TEXT)])
            .map_err(self.failed("read next_seq"))?;
        row.map(|row| {
            row.try_get::<_, i64>(0)
                .map(|next| u64::try_from(next).unwrap_or(0))
                .map_err(self.failed("read next_seq"))
        })
        .transpose()
    }

    /// The conflict a failed claim means: the session's stored `next_seq`, or its absence.
    fn conflict(&self, id: &str, expected: u64) -> StoreError {
        match self.read(|backend, client| backend.next_seq_on(client, id)) {
            Ok(Some(found)) => StoreError::SeqConflict {
                id: id.to_owned(),
                expected,
                found,
            },
            Ok(None) => self.not_found(id),
            Err(error) => error,
        }
    }

    /// A dedicated connection for a writer of session `id`, holding the advisory writer lock
    /// when the configuration asks for it.
    fn writer_connection(&self, id: &str) -> Result<WriterConnection, StoreError> {
        PostgresBackend::storable(id)?;
        let mut client = self.inner.pool.dedicated()?;
        let row = client
            .query_one("SELECT pg_backend_pid()", &[])
            .map_err(self.failed("start writer"))?;
        let server_pid: i32 = row.try_get(0).map_err(self.failed("start writer"))?;
        let mut connection = WriterConnection {
            client,
            server_pid,
            lock_key: None,
        };
        if !self.inner.config.writer_lock {
            return Ok(connection);
        }
        let key = fnv1a(&["strata writer", self.schema(), id]) as i64;
        let locked: bool = connection
            .client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .and_then(|row| row.try_get(0))
            .map_err(self.failed("take writer lock"))?;
        if !locked {
            return Err(StoreError::Locked {
                id: id.to_owned(),
                holder: self.lock_holder(&mut connection.client, key),
            });
        }
        connection.lock_key = Some(key);
        Ok(connection)
    }

    /// Who holds the advisory lock `key`, as far as the server tells (best effort: the pid is
    /// evidence for the message, never used to decide anything).
    fn lock_holder(&self, client: &mut Client, key: i64) -> LockHolder {
        let high = (key as u64 >> 32) as i64;
        let low = (key as u64 & 0xffff_ffff) as i64;
        let name: Option<String> = client
            .query_opt(self.inner.sql.holder, &[&high, &low])
            .ok()
            .flatten()
            .and_then(|row| row.try_get(0).ok());
        LockHolder {
            pid: name.as_deref().and_then(parse_pid),
        }
    }

    /// The appender of a session whose rows `0..next_seq` are stored, on `connection`.
    fn appender(
        &self,
        id: &str,
        next_seq: u64,
        mut connection: WriterConnection,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let statement = connection
            .client
            .prepare(&self.inner.sql.append)
            .map_err(self.failed("prepare append"))?;
        Ok(Box::new(PostgresAppender {
            backend: self.clone(),
            id: id.to_owned(),
            next_seq,
            connection,
            statement,
        }))
    }

    /// Opens a session for appending on a dedicated connection; `resumable` first offers `load`
    /// the rows after its checkpoint (see [`Backend::open_append`] from [`ReadFrom::Checkpoint`]), and reads the
    /// whole log when there is none that fits or `load` finds it stale.
    fn open_append_with(
        &self,
        id: &str,
        load: &mut LoadFn<'_>,
        resumable: bool,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        if !self.exists(id)? {
            return Err(self.not_found(id));
        }
        let connection = self.writer_connection(id)?;
        let resumed = if resumable {
            self.resume_stream(id)?
        } else {
            None
        };
        let stream = load_resuming(
            resumed,
            || self.scan(id, ReadFrom::Start),
            load,
            || self.location(id),
        )?;
        self.appender(id, stream.next_seq(), connection)
    }

    /// Inserts a new session row and its first events in `tx`; `AlreadyExists` if stored.
    fn insert_session(
        &self,
        tx: &mut postgres::Transaction<'_>,
        header: &SessionHeader,
        n_events: u64,
    ) -> Result<(), StoreError> {
        let id = header.id();
        let mut line = Vec::new();
        encode_header_line(header, &mut line)?;
        line.pop();
        let header_text = String::from_utf8_lossy(&line);
        let created_at = i64::try_from(header.created_at()).unwrap_or(i64::MAX);
        let next_seq = i64::try_from(n_events).unwrap_or(i64::MAX);
        let inserted = tx
            .execute(
                &self.inner.sql.insert_session,
                &[
                    &id,
                    &header_text.as_ref(),
                    &created_at,
                    &header.cwd(),
                    &header.parent_session(),
                    &next_seq,
                ],
            )
            .map_err(self.failed("create session"))?;
        if inserted == 0 {
            return Err(StoreError::AlreadyExists {
                store: self.describe_store(),
                id: id.to_owned(),
            });
        }
        Ok(())
    }

    /// Writes `events` as rows of session `id` with one binary `COPY` in `tx`.
    fn copy_events(
        &self,
        tx: &mut postgres::Transaction<'_>,
        id: &str,
        events: &[Arc<Event>],
    ) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let columns = Columns::of(events);
        let sink = tx
            .copy_in(&self.inner.sql.copy_events)
            .map_err(self.failed("copy events"))?;
        let mut writer = postgres::binary_copy::BinaryCopyInWriter::new(sink, &COPY_TYPES);
        copy_rows(&mut writer, id, &columns).map_err(self.failed("copy events"))?;
        writer.finish().map_err(self.failed("copy events"))?;
        Ok(())
    }

    /// Learns what became of a batch whose connection died mid-append: ends the old server
    /// backend (so it cannot commit later), then reads `next_seq`. `Ok` when the whole batch is
    /// stored, the original error when none of it is.
    fn resolve_lost_append(
        &self,
        id: &str,
        server_pid: i32,
        columns: &Columns<'_>,
        first: u64,
        error: postgres::Error,
    ) -> Result<(), StoreError> {
        let mut client = self.inner.pool.get()?;
        if !self.terminate_backend(&mut client, server_pid) {
            return Err(StoreError::Postgres {
                store: self.describe_store(),
                op: "append (the connection was lost and its server backend would not end, so the batch may still commit)",
                source: error,
            });
        }
        let end = first + columns.len() as u64;
        match self.next_seq_on(&mut client, id)? {
            None => Err(self.not_found(id)),
            Some(found) if found == first => Err(StoreError::Postgres {
                store: self.describe_store(),
                op: "append (the connection was lost; nothing of the batch was stored)",
                source: error,
            }),
            Some(found) if found >= end && self.rows_match(&mut client, id, columns, first)? => {
                Ok(())
            }
            Some(found) => Err(StoreError::SeqConflict {
                id: id.to_owned(),
                expected: first,
                found,
            }),
        }
    }

    /// Terminates server backend `pid` and waits (up to 10 s) until it is gone.
    fn terminate_backend(&self, client: &mut Client, pid: i32) -> bool {
        let _ = client.execute("SELECT pg_terminate_backend($1)", &[&pid]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let alive = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
                    &[&pid],
                )
                .and_then(|row| row.try_get::<_, i64>(0));
            match alive {
                Ok(0) => return true,
                Ok(_) => std::thread::sleep(Duration::from_millis(10)),
                Err(_) => return false,
            }
        }
        false
    }

    /// Whether the stored rows `first..first + columns.len()` are exactly `columns`.
    fn rows_match(
        &self,
        client: &mut Client,
        id: &str,
        columns: &Columns<'_>,
        first: u64,
    ) -> Result<bool, StoreError> {
        let from = i64::try_from(first).unwrap_or(i64::MAX);
        let limit = Some(columns.len() as i64);
        let rows = client
            .query_typed(
                &self.inner.sql.page,
                &[(&id, Type::TEXT), (&from, Type::INT8), (&limit, Type::INT8)],
            )
            .map_err(self.failed("read events"))?;
        if rows.len() != columns.len() {
            return Ok(false);
        }
        let mut stored = Columns::default();
        for row in &rows {
            let get = |index| row.try_get::<_, Option<String>>(index).ok().flatten();
            stored.seqs.push(row.try_get(0).unwrap_or(-1));
            stored.types.push(row.try_get(1).unwrap_or(""));
            stored.times.push(row.try_get(2).unwrap_or(i64::MIN));
            stored.data.push(row.try_get(3).unwrap_or(""));
            stored.sources.push(get(4));
            stored.surface_ops.push(get(5));
            stored.ignorable.push(row.try_get(6).ok().flatten());
        }
        Ok(&stored == columns)
    }
}

/// A writer's own connection, holding the advisory writer lock while it lives.
struct WriterConnection {
    client: Client,
    /// The server process serving this connection (ended after a lost connection).
    server_pid: i32,
    /// The advisory lock key, when the lock is held.
    lock_key: Option<i64>,
}

impl Drop for WriterConnection {
    fn drop(&mut self) {
        // Released explicitly: the server ends a closed connection's backend asynchronously,
        // and the next open of this session must not find the lock still held.
        if let Some(key) = self.lock_key {
            if !self.client.is_closed() {
                let _ = self
                    .client
                    .execute("SELECT pg_advisory_unlock($1)", &[&key]);
            }
        }
    }
}

impl Backend for PostgresBackend {
    fn describe(&self) -> String {
        self.describe_store()
    }

    fn max_record_len(&self) -> usize {
        DEFAULT_MAX_RECORD_LEN
    }

    fn check_new_id(&self, id: &str) -> Result<(), StoreError> {
        PostgresBackend::storable(id)?;
        if id.len() <= MAX_ID_BYTES {
            return Ok(());
        }
        Err(StoreError::IdTooLong {
            store: self.describe_store(),
            id: id.to_owned(),
            n_bytes: id.len(),
            n_name_bytes: None,
            limit: MAX_ID_BYTES,
            reason: "the id keys B-tree indexes, whose entries hold at most 2704 bytes",
        })
    }

    fn create(
        &self,
        header: &SessionHeader,
        events: &[Arc<Event>],
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let id = header.id();
        self.check_new_id(id)?;
        let mut connection = self.writer_connection(id)?;
        let mut tx = connection
            .client
            .transaction()
            .map_err(self.failed("begin create"))?;
        self.insert_session(&mut tx, header, events.len() as u64)?;
        self.copy_events(&mut tx, id, events)?;
        tx.commit().map_err(self.failed("commit create"))?;
        self.appender(id, events.len() as u64, connection)
    }

    fn create_fork(
        &self,
        parent: &SessionHeader,
        n_shared: u64,
        header: &SessionHeader,
        events: &[Arc<Event>],
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        let id = header.id();
        self.check_new_id(id)?;
        let parent_id = parent.id();
        let n_shared_rows = n_shared.min(events.len() as u64);
        let mut connection = self.writer_connection(id)?;
        let mut tx = connection
            .client
            .transaction()
            .map_err(self.failed("begin fork"))?;
        // The parent row is share-locked: it cannot be deleted or re-created under the copy.
        let stored = tx
            .query_opt(&self.inner.sql.parent_for_share, &[&parent_id])
            .map_err(self.failed("read fork parent"))?;
        let Some(stored) = stored else {
            return Err(self.not_found(parent_id));
        };
        let stored_header: &str = stored.try_get(0).map_err(self.failed("read fork parent"))?;
        let stored_next: i64 = stored.try_get(1).map_err(self.failed("read fork parent"))?;
        let changed = |detail: String| StoreError::Corrupt {
            location: self.location(parent_id),
            line: None,
            seq: None,
            detail,
        };
        if self.decode_header(parent_id, stored_header)? != *parent {
            return Err(changed(format!(
                "session {parent_id:?} was replaced while {id:?} was forked from it"
            )));
        }
        let stored_next = u64::try_from(stored_next).unwrap_or(0);
        if stored_next < n_shared_rows {
            return Err(changed(format!(
                "the fork inherits {n_shared_rows} events but only {stored_next} are stored"
            )));
        }
        self.insert_session(&mut tx, header, events.len() as u64)?;
        let n_shared_i64 = i64::try_from(n_shared_rows).unwrap_or(i64::MAX);
        let copied = tx
            .execute(&self.inner.sql.fork_copy, &[&id, &parent_id, &n_shared_i64])
            .map_err(self.failed("copy inherited events"))?;
        if copied != n_shared_rows {
            return Err(changed(format!(
                "copied {copied} inherited events, expected {n_shared_rows}"
            )));
        }
        let rest = events.get(n_shared_rows as usize..).unwrap_or(&[]);
        self.copy_events(&mut tx, id, rest)?;
        tx.commit().map_err(self.failed("commit fork"))?;
        self.appender(id, events.len() as u64, connection)
    }

    fn open_append(
        &self,
        id: &str,
        from: ReadFrom,
        load: &mut LoadFn<'_>,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        self.open_append_with(id, load, from == ReadFrom::Checkpoint)
    }

    fn scan(&self, id: &str, from: ReadFrom) -> Result<LogStream<'_>, StoreError> {
        if from == ReadFrom::Checkpoint {
            if let Some(stream) = self.resume_stream(id)? {
                return Ok(stream);
            }
        }
        if PostgresBackend::storable(id).is_err() {
            return Err(self.not_found(id));
        }
        let (header, n_stored) = self.read(|backend, client| backend.session_on(client, id))?;
        let rows = PostgresRows {
            backend: self,
            id: id.to_owned(),
            page: Vec::new().into_iter(),
            n_yielded: 0,
            n_stored,
            next_seq: 0,
            done: false,
        };
        Ok(LogStream::new(header, self.location(id), None, rows))
    }

    fn read_from(&self, id: &str, from_seq: u64) -> Result<Vec<RawEvent>, StoreError> {
        if PostgresBackend::storable(id).is_err() {
            return Err(self.not_found(id));
        }
        self.read(|backend, client| {
            backend.session_on(client, id)?;
            backend.page_on(client, id, from_seq, None)
        })
    }

    fn exists(&self, id: &str) -> Result<bool, StoreError> {
        if PostgresBackend::storable(id).is_err() {
            return Ok(false);
        }
        self.read(|backend, client| {
            client
                .query_typed_opt(&backend.inner.sql.exists, &[(&id, Type::TEXT)])
                .map(|row| row.is_some())
                .map_err(backend.failed("look up session"))
        })
    }

    fn list(&self) -> Result<Listing, StoreError> {
        let rows = self.read(|backend, client| {
            client
                .query(&backend.inner.sql.list, &[])
                .map_err(backend.failed("list sessions"))
        })?;
        let mut listing = Listing::default();
        for row in rows {
            let id: &str = row.try_get(0).map_err(self.failed("list sessions"))?;
            let header: &str = row.try_get(1).map_err(self.failed("list sessions"))?;
            match self.decode_header(id, header) {
                Ok(header) => listing.sessions.push(header),
                Err(error) => listing.problems.push(error),
            }
        }
        sort_newest_first(&mut listing.sessions);
        Ok(listing)
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        if PostgresBackend::storable(id).is_err() {
            return Err(self.not_found(id));
        }
        let mut client = self.inner.pool.get()?;
        let mut tx = client.transaction().map_err(self.failed("begin delete"))?;
        if self.inner.config.writer_lock {
            let key = fnv1a(&["strata writer", self.schema(), id]) as i64;
            let free: bool = tx
                .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&key])
                .and_then(|row| row.try_get(0))
                .map_err(self.failed("take writer lock"))?;
            if !free {
                drop(tx);
                return Err(StoreError::Locked {
                    id: id.to_owned(),
                    holder: self.lock_holder(&mut client, key),
                });
            }
        }
        // The session row first: a racing append waits on it, then finds no session.
        let n_deleted = tx
            .execute(&self.inner.sql.delete_session, &[&id])
            .map_err(self.failed("delete session"))?;
        if n_deleted == 0 {
            return Err(self.not_found(id));
        }
        tx.execute(&self.inner.sql.delete_events, &[&id])
            .map_err(self.failed("delete events"))?;
        tx.commit().map_err(self.failed("commit delete"))
    }
}

/// The rows of one session, read a page at a time (keyset pagination on `seq`), each page on a
/// shared connection taken only while the page is read.
struct PostgresRows<'a> {
    backend: &'a PostgresBackend,
    id: String,
    page: std::vec::IntoIter<RawEvent>,
    /// Rows handed out so far.
    n_yielded: u64,
    /// The session's `next_seq` when the read started (for progress; a live writer may add).
    n_stored: u64,
    /// Invariant: the seq of the first row of the next page.
    next_seq: u64,
    done: bool,
}

impl Iterator for PostgresRows<'_> {
    type Item = Result<RawEvent, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(row) = self.page.next() {
                self.n_yielded += 1;
                return Some(Ok(row));
            }
            if self.done {
                return None;
            }
            let (id, from) = (&self.id, self.next_seq);
            let page = self
                .backend
                .read(|backend, client| backend.page_on(client, id, from, Some(PAGE_ROWS)));
            match page {
                Ok(page) => {
                    self.done = (page.len() as i64) < PAGE_ROWS;
                    self.next_seq += page.len() as u64;
                    self.page = page.into_iter();
                }
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            }
        }
    }
}

impl EventRows for PostgresRows<'_> {
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.n_yielded.min(self.n_stored), self.n_stored))
    }
}

/// The appender of one PostgreSQL session, on its writer's own connection.
struct PostgresAppender {
    backend: PostgresBackend,
    id: String,
    /// Invariant: the number of stored events as far as this writer knows.
    next_seq: u64,
    connection: WriterConnection,
    /// The append statement, prepared on `connection`.
    statement: Statement,
}

impl LogAppender for PostgresAppender {
    fn next_seq(&self) -> u64 {
        self.next_seq
    }

    fn append(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let Some(first) = batch.events.first() else {
            return Ok(());
        };
        let first = first.seq().get();
        let end = first + batch.events.len() as u64;
        let columns = Columns::of(batch.events);
        let (first_i64, end_i64) = (
            i64::try_from(first).unwrap_or(i64::MAX),
            i64::try_from(end).unwrap_or(i64::MAX),
        );
        let payload = notify_payload(end, &self.id);
        let channel = self.backend.inner.channel.as_str();
        let params: [&(dyn ToSql + Sync); 12] = [
            &self.id,
            &first_i64,
            &end_i64,
            &columns.seqs,
            &columns.types,
            &columns.times,
            &columns.data,
            &columns.sources,
            &columns.surface_ops,
            &columns.ignorable,
            &channel,
            &payload,
        ];
        let backend = &self.backend;
        match self.connection.client.query_one(&self.statement, &params) {
            Ok(row) => {
                let counts: Result<(i64, i64), _> = row
                    .try_get(0)
                    .and_then(|claimed| Ok((claimed, row.try_get(1)?)));
                let (claimed, inserted) = counts.map_err(backend.failed("append"))?;
                if claimed == 0 {
                    return Err(backend.conflict(&self.id, first));
                }
                if inserted != columns.len() as i64 {
                    return Err(StoreError::Corrupt {
                        location: backend.location(&self.id),
                        line: None,
                        seq: Some(first),
                        detail: format!(
                            "an append of {} events inserted {inserted} rows",
                            columns.len()
                        ),
                    });
                }
                self.next_seq = end;
                Ok(())
            }
            Err(error) if is_conflict(&error) => Err(backend.conflict(&self.id, first)),
            Err(error) if connection_lost(&error, &self.connection.client) => {
                backend.resolve_lost_append(
                    &self.id,
                    self.connection.server_pid,
                    &columns,
                    first,
                    error,
                )?;
                self.next_seq = end;
                Ok(())
            }
            Err(error) => Err(backend.failed("append")(error)),
        }
    }

    fn checkpoint(&mut self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        self.backend
            .write_checkpoint(&self.id, self.next_seq, checkpoint)
    }
}

/// Whether an append failed because another transaction won: a serialization failure or
/// deadlock under a stricter default isolation level, or a row another writer inserted.
fn is_conflict(error: &postgres::Error) -> bool {
    matches!(
        error.code(),
        Some(&SqlState::T_R_SERIALIZATION_FAILURE)
            | Some(&SqlState::T_R_DEADLOCK_DETECTED)
            | Some(&SqlState::UNIQUE_VIOLATION)
    )
}

/// Whether an error means the connection is gone, so a statement in flight may or may not have
/// committed: the driver saw it close, a connection-class SQLSTATE (`08…`), or the server is
/// ending the session (`57P01` admin shutdown — `pg_terminate_backend` —, `57P02`, `57P03`).
fn connection_lost(error: &postgres::Error, client: &Client) -> bool {
    let code = error.code().map(SqlState::code);
    error.is_closed()
        || client.is_closed()
        || code.is_some_and(|code| code.starts_with("08"))
        || matches!(code, Some("57P01" | "57P02" | "57P03"))
}

/// The notification of an append: `<next_seq> <id>`, or just `<next_seq>` when the id would not
/// fit the server's 8000-byte payload limit (followers then re-read on any such notification).
fn notify_payload(next_seq: u64, id: &str) -> String {
    if id.len() <= 7_000 {
        format!("{next_seq} {id}")
    } else {
        next_seq.to_string()
    }
}

/// `strata pid=N[ host=NAME]`, at most 63 bytes (the server truncates longer names).
fn application_name() -> String {
    let mut name = format!("strata pid={}", std::process::id());
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        name.push_str(" host=");
        name.push_str(host.trim());
    }
    let mut end = name.len().min(63);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name.truncate(end);
    name
}

/// The pid in an application name written by [`application_name`].
fn parse_pid(application_name: &str) -> Option<u32> {
    application_name
        .strip_prefix("strata ")?
        .split(' ')
        .find_map(|part| part.strip_prefix("pid="))?
        .parse()
        .ok()
}

/// `postgres://user@host:port/db?schema=NAME`: the store as messages name it.
fn describe(pg: &postgres::Config, schema: &str) -> String {
    let user = pg.get_user().unwrap_or("");
    let hosts: Vec<String> = pg
        .get_hosts()
        .iter()
        .map(|host| match host {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = pg.get_ports().iter().map(u16::to_string).collect();
    let mut out = String::from("postgres://");
    if !user.is_empty() {
        out.push_str(user);
        out.push('@');
    }
    out.push_str(&hosts.join(","));
    if !ports.is_empty() {
        out.push(':');
        out.push_str(&ports.join(","));
    }
    out.push('/');
    out.push_str(pg.get_dbname().unwrap_or(""));
    out.push_str("?schema=");
    out.push_str(schema);
    out
}

/// `url` with the password of its user info removed.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info
                .split_once(':')
                .map_or(user_info, |(user, _)| user);
            format!("{scheme}://{user}@{host}{tail}")
        }
        None => url.to_owned(),
    }
}

/// 64-bit FNV-1a over `parts` separated by NUL: a stable key for advisory locks and channel
/// names, computed the same way on every host.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            hash ^= 0;
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        for byte in part.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}
