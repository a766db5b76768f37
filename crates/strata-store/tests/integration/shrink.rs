//! A log cut under its reader (issue 22): a writer trimming a torn tail or rolling back a failed
//! append, or a user's `truncate`, shrinks a file another process is reading. The read must end
//! with an I/O error naming the file, never a signal: strata once read raw logs through memory
//! maps, and a mapped page past the new end killed the reader with `SIGBUS`. Each test pulls a
//! few rows, cuts the file far below what the reader has buffered, and drains the rest; the
//! process surviving is half the check. (The v0 reader's case is strata-migrate's.)

use std::fs::OpenOptions;

use strata_store::{scan_log, write_log, Compression, JsonlBackend, JsonlConfig, Store};
use strata_testkit::files::drain_after_cut;

use crate::common::{find_log, long_session};

#[test]
fn a_raw_and_a_zstd_log_cut_under_scan_log_end_with_a_shrink_error() {
    let dir = tempfile::tempdir().expect("dir");
    let session = long_session(6_000);
    for name in ["cut.v3.jsonl", "cut.v3.jsonl.zstd"] {
        let path = dir.path().join(name);
        write_log(&path, session.header(), session.events().unwrap()).expect("write the log");
        // The raw log is far more than the reader and its decoders buffer ahead, so the cut
        // lands in bytes not yet read (the zstd one compresses to less than one read chunk:
        // its read ends inside a frame, which only the file's new length tells from a torn
        // append).
        let len = std::fs::metadata(&path).expect("stat").len();
        assert!(
            name.ends_with(".zstd") || len > 16 << 20,
            "{name} is {len} bytes"
        );
        let stream = scan_log(&path).expect("open the log");
        drain_after_cut(stream, &path);
    }
}

#[test]
fn a_store_log_cut_under_a_load_ends_with_a_shrink_error() {
    let dir = tempfile::tempdir().expect("dir");
    let session = long_session(6_000);
    let root = dir.path().join("raw");
    let backend = JsonlBackend::new(JsonlConfig::new(root.clone(), Compression::None));
    let mut appender =
        strata_store::Backend::create(&backend, session.header(), &[]).expect("create the log");
    for batch in session.events().unwrap().chunks(512) {
        appender.append_events(batch).expect("append");
    }
    drop(appender);
    let store = Store::new(backend);
    let path = find_log(&root);
    let stream = store.scan("long").expect("scan");
    drain_after_cut(stream, &path);
}

#[test]
fn a_log_that_grows_under_its_reader_reads_to_the_end_it_reached() {
    // A writer appending while a log is read (strata's and dsh's writers do) is no error: the
    // read ends at whatever complete records it reached, and a torn tail is the one it saw.
    let dir = tempfile::tempdir().expect("dir");
    let session = long_session(6_000);
    let path = dir.path().join("grow.v3.jsonl");
    write_log(&path, session.header(), session.events().unwrap()).expect("write the log");
    let mut stream = scan_log(&path).expect("open the log");
    stream
        .next()
        .expect("a first row")
        .unwrap_or_else(|error| panic!("first row: {error}"));
    let text = std::fs::read_to_string(&path).expect("read");
    let last = text.lines().last().expect("a last line").to_owned();
    let mut file = OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open for append");
    // A half-written record, as a writer caught mid-append leaves it.
    std::io::Write::write_all(&mut file, &last.as_bytes()[..last.len() / 2]).expect("append");
    drop(file);
    let mut n_rows = 1;
    for row in stream.by_ref() {
        row.unwrap_or_else(|error| panic!("row {n_rows}: {error}"));
        n_rows += 1;
    }
    assert_eq!(n_rows, session.len());
    let torn = stream.torn().expect("the half record is a torn tail");
    assert_eq!(torn.len, last.len() as u64 / 2);
}
