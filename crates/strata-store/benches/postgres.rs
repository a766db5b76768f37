//! PostgreSQL benchmarks (issue 8), next to SQLite's figures from the same run.
//!
//! - `payload`: the measurement behind the `events.data` column type. The same synthetic
//!   payloads go into one table per candidate (`text`, `text` with lz4 TOAST compression,
//!   `bytea`, `bytea` zstd-compressed client-side from 4 KiB like the SQLite store, `jsonb`,
//!   and `jsonb` kept next to the exact `text`), then are read back in seq order. It reports
//!   insert and load time, table size, and how many payloads come back byte-identical.
//! - `append`: `SessionWriter::append` durable events/s at batch 1 and 64, Postgres and SQLite.
//! - `load`: `Store::load` of an N-event session (default 1,000,000), Postgres and SQLite.
//!
//! Run: `cargo bench -p strata-store --bench postgres [-- payload|append|load]` (all three when
//! no mode is named). The server is `STRATA_TEST_DATABASE_URL`, else `DATABASE_URL`, else
//! `postgres://postgres@127.0.0.1:5432/test`; every table lives in a schema made for the run and
//! dropped after it. Sizes: `STRATA_BENCH_EVENTS` (load, default 1,000,000),
//! `STRATA_BENCH_APPENDS` (appends per append case, default 400), `STRATA_BENCH_PAYLOADS`
//! (payload rows, default 200,000).

use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use strata_core::{HeaderSpec, SessionHeader};
use strata_store::synth::{turn_candidates, EVENTS_PER_TURN};
use strata_store::{PostgresBackend, SessionWriter, SqliteBackend, Store};

mod support;

use support::{database_url, env_u64, Schema};

const ID: &str = "bench";

fn header(created_at: u64) -> SessionHeader {
    SessionHeader::new(HeaderSpec {
        id: ID.to_owned(),
        created_at,
        cwd: Some("/bench".to_owned()),
        ..HeaderSpec::default()
    })
    .unwrap()
}

/// Appends synthetic turns until the log has at least `n_events`, `batch` events per append.
fn fill(writer: &SessionWriter, n_events: u64, batch: usize, text_len: usize) -> Duration {
    let mut pending = Vec::new();
    let mut next = writer.durable_len();
    let mut turn = next / EVENTS_PER_TURN + 1;
    let start = Instant::now();
    while next < n_events {
        while pending.len() < batch {
            pending.extend(turn_candidates(turn, next + pending.len() as u64, text_len));
            turn += 1;
        }
        let rest = pending.split_off(batch);
        let appended = writer
            .append(std::mem::replace(&mut pending, rest), 1)
            .unwrap();
        next += appended.len() as u64;
    }
    start.elapsed()
}

/// Synthetic payloads: `n` events' `data` texts, one in 16 with a large (~8 KiB) tool output
/// so the TOAST / compression path is part of the measurement.
fn payloads(n: u64) -> Vec<String> {
    let store = Store::memory();
    let writer = store.create(header(1)).unwrap();
    let mut next = 0;
    let mut turn = 1;
    let mut texts = Vec::with_capacity(n as usize);
    while next < n {
        let text_len = if turn % 2 == 0 { 8_000 } else { 120 };
        let events = writer
            .append(turn_candidates(turn, next, text_len), 1)
            .unwrap();
        next += events.len() as u64;
        turn += 1;
        texts.extend(events.iter().map(|event| event.data_json().to_owned()));
    }
    texts.truncate(n as usize);
    texts
}

#[derive(Clone, Copy)]
enum Column {
    Text,
    TextLz4,
    Bytea,
    ByteaZstd,
    Jsonb,
    JsonbAndText,
}

impl Column {
    const ALL: [Column; 6] = [
        Column::Text,
        Column::TextLz4,
        Column::Bytea,
        Column::ByteaZstd,
        Column::Jsonb,
        Column::JsonbAndText,
    ];

    fn name(self) -> &'static str {
        match self {
            Column::Text => "text",
            Column::TextLz4 => "text lz4",
            Column::Bytea => "bytea",
            Column::ByteaZstd => "bytea zstd>=4KiB",
            Column::Jsonb => "jsonb",
            Column::JsonbAndText => "jsonb + text",
        }
    }

    fn ddl(self, table: &str) -> String {
        let columns = match self {
            Column::Text => "data text NOT NULL",
            Column::TextLz4 => "data text COMPRESSION lz4 NOT NULL",
            Column::Bytea | Column::ByteaZstd => "data bytea NOT NULL",
            Column::Jsonb => "data jsonb NOT NULL",
            Column::JsonbAndText => "data text NOT NULL, doc jsonb NOT NULL",
        };
        format!("CREATE TABLE {table} (seq bigint PRIMARY KEY, {columns})")
    }

    fn insert(self, table: &str) -> String {
        match self {
            Column::Text | Column::TextLz4 => {
                format!("INSERT INTO {table} SELECT * FROM unnest($1::bigint[], $2::text[])")
            }
            Column::Bytea | Column::ByteaZstd => {
                format!("INSERT INTO {table} SELECT * FROM unnest($1::bigint[], $2::bytea[])")
            }
            Column::Jsonb => format!(
                "INSERT INTO {table} SELECT s, d::jsonb FROM unnest($1::bigint[], $2::text[]) AS r (s, d)"
            ),
            Column::JsonbAndText => format!(
                "INSERT INTO {table} SELECT s, d, d::jsonb FROM unnest($1::bigint[], $2::text[]) AS r (s, d)"
            ),
        }
    }

    fn select(self, table: &str) -> String {
        match self {
            Column::Jsonb => format!("SELECT data::text FROM {table} ORDER BY seq"),
            _ => format!("SELECT data FROM {table} ORDER BY seq"),
        }
    }
}

fn bench_payload(url: &str) {
    let n = env_u64("STRATA_BENCH_PAYLOADS", 200_000);
    let texts = payloads(n);
    let bytes: usize = texts.iter().map(String::len).sum();
    println!(
        "## payload column: {n} payloads, {:.1} MB of JSON text, inserted 64 per statement in one transaction, read back in seq order",
        bytes as f64 / 1e6
    );
    println!(
        "{:<18} {:>10} {:>10} {:>10} {:>10} {:>12}",
        "column", "insert s", "load s", "size MB", "identical", "rows/s in"
    );
    let schema = Schema::create(url, "payload");
    let mut client = Client::connect(url, NoTls).unwrap();
    client
        .batch_execute(&format!("CREATE SCHEMA {}", schema.name))
        .unwrap();
    for column in Column::ALL {
        let table = format!("{}.payload_{}", schema.name, column as u8);
        client.batch_execute(&column.ddl(&table)).unwrap();
        let insert = client.prepare(&column.insert(&table)).unwrap();
        let start = Instant::now();
        // One transaction: the commit's WAL flush is the same for every column type and would
        // drown the differences, so it is paid once.
        let mut tx = client.transaction().unwrap();
        for (chunk_idx, chunk) in texts.chunks(64).enumerate() {
            let seqs: Vec<i64> = (0..chunk.len())
                .map(|offset| (chunk_idx * 64 + offset) as i64)
                .collect();
            match column {
                Column::Bytea => {
                    let data: Vec<&[u8]> = chunk.iter().map(|text| text.as_bytes()).collect();
                    tx.execute(&insert, &[&seqs, &data]).unwrap();
                }
                Column::ByteaZstd => {
                    let data: Vec<Vec<u8>> = chunk
                        .iter()
                        .map(|text| {
                            if text.len() >= 4096 {
                                zstd::bulk::compress(text.as_bytes(), 3).unwrap()
                            } else {
                                text.as_bytes().to_vec()
                            }
                        })
                        .collect();
                    tx.execute(&insert, &[&seqs, &data]).unwrap();
                }
                _ => {
                    let data: Vec<&str> = chunk.iter().map(String::as_str).collect();
                    tx.execute(&insert, &[&seqs, &data]).unwrap();
                }
            }
        }
        tx.commit().unwrap();
        let insert_s = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let mut identical = 0_u64;
        let mut index = 0;
        let select = column.select(&table);
        let mut rows = client.query_raw(select.as_str(), &[] as &[&str]).unwrap();
        while let Some(row) = fallible_next(&mut rows) {
            let same = match column {
                Column::Bytea => row.get::<_, &[u8]>(0) == texts[index].as_bytes(),
                Column::ByteaZstd => {
                    let stored: &[u8] = row.get(0);
                    if texts[index].len() >= 4096 {
                        zstd::bulk::decompress(stored, 1 << 26).unwrap() == texts[index].as_bytes()
                    } else {
                        stored == texts[index].as_bytes()
                    }
                }
                _ => row.get::<_, &str>(0) == texts[index],
            };
            identical += u64::from(same);
            index += 1;
        }
        drop(rows);
        let load_s = start.elapsed().as_secs_f64();
        let size: i64 = client
            .query_one(
                "SELECT pg_total_relation_size($1::text::regclass)",
                &[&table],
            )
            .unwrap()
            .get(0);
        println!(
            "{:<18} {:>10.2} {:>10.2} {:>10.1} {:>9.1}% {:>12.0}",
            column.name(),
            insert_s,
            load_s,
            size as f64 / 1e6,
            identical as f64 * 100.0 / n as f64,
            n as f64 / insert_s
        );
    }
}

/// The two stores compared, on a fresh schema and a fresh temp dir.
fn stores(url: &str, label: &str) -> (Store, Store, Schema, tempfile::TempDir) {
    let schema = Schema::create(url, label);
    let postgres = Store::new(PostgresBackend::connect(&schema.store_url()).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::new(SqliteBackend::open(&dir.path().join("strata.db")).unwrap());
    (postgres, sqlite, schema, dir)
}

fn bench_append(url: &str) {
    let n_appends = env_u64("STRATA_BENCH_APPENDS", 400);
    println!("## durable append (SessionWriter::append), {n_appends} appends per case");
    println!(
        "{:<9} {:>6} {:>12} {:>14}",
        "backend", "batch", "events/s", "ms / append"
    );
    for batch in [1_usize, 64] {
        let (postgres, sqlite, _schema, _dir) = stores(url, &format!("append{batch}"));
        for (name, store) in [("postgres", &postgres), ("sqlite", &sqlite)] {
            let writer = store.create(header(1)).unwrap();
            // Warm up (connection, prepared statement, first pages).
            fill(&writer, batch as u64 * 4, batch, 120);
            let before = writer.durable_len();
            let elapsed = fill(&writer, before + n_appends * batch as u64, batch, 120);
            let n_events = writer.durable_len() - before;
            writer.close().unwrap();
            println!(
                "{:<9} {:>6} {:>12.0} {:>14.3}",
                name,
                batch,
                n_events as f64 / elapsed.as_secs_f64(),
                elapsed.as_secs_f64() * 1e3 / (n_events as f64 / batch as f64)
            );
        }
    }
}

fn bench_load(url: &str) {
    let n_events = env_u64("STRATA_BENCH_EVENTS", 1_000_000);
    let memory = Store::memory();
    let writer = memory.create(header(1)).unwrap();
    fill(&writer, n_events, 8_192, 120);
    let events = writer.with_session(|session| session.events().unwrap().to_vec());
    writer.close().unwrap();
    drop(memory);
    let bytes: usize = events.iter().map(|event| event.to_json().len() + 1).sum();
    println!(
        "## full load (Store::load) of a {}-event session, {:.0} MB as JSONL",
        events.len(),
        bytes as f64 / 1e6
    );
    println!(
        "{:<9} {:>10} {:>10} {:>12} {:>10} {:>12}",
        "backend", "create s", "read s", "load s", "load MB/s", "events/s"
    );
    let (postgres, sqlite, _schema, _dir) = stores(url, "load");
    for (name, store) in [("postgres", &postgres), ("sqlite", &sqlite)] {
        let start = Instant::now();
        drop(store.backend().create(&header(1), &events).unwrap());
        let create_s = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let read = store.read(ID).unwrap();
        let read_s = start.elapsed().as_secs_f64();
        assert_eq!(read.events.len(), events.len());
        drop(read);
        // Best of two: the first load also warms the server's (or the OS's) page cache.
        let mut load_s = f64::MAX;
        for _ in 0..2 {
            let start = Instant::now();
            let session = store.load(ID).unwrap();
            load_s = load_s.min(start.elapsed().as_secs_f64());
            assert!(session.len() >= events.len());
        }
        println!(
            "{:<9} {:>10.2} {:>10.2} {:>12.2} {:>10.1} {:>12.0}",
            name,
            create_s,
            read_s,
            load_s,
            bytes as f64 / 1e6 / load_s,
            events.len() as f64 / load_s
        );
    }
}

fn fallible_next(rows: &mut postgres::RowIter<'_>) -> Option<postgres::Row> {
    use postgres::fallible_iterator::FallibleIterator;
    rows.next().unwrap()
}

fn main() {
    let modes: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let wants = |mode: &str| modes.is_empty() || modes.iter().any(|m| m == mode);
    let url = database_url();
    if let Err(error) = Client::connect(&url, NoTls) {
        println!("SKIP: no PostgreSQL server at {url}: {error}");
        return;
    }
    if wants("payload") {
        bench_payload(&url);
    }
    if wants("append") {
        bench_append(&url);
    }
    if wants("load") {
        bench_load(&url);
    }
}
