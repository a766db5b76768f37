//! Streaming reads at scale (issue 3 performance work): a load streams rows into the restore,
//! zstd logs decode frame by frame (a log written as one huge frame streams too), and a tail
//! read of a zstd log finds its last frames from the end.

use std::io::Write;

use strata_store::{read_log, scan_log, write_log, Compression, Store};

use crate::common::{find_log, header, long_session, DURABLE};

#[test]
fn zstd_tail_reads_match_the_full_read_at_every_cut_near_the_end() {
    let dir = tempfile::tempdir().expect("dir");
    let session = long_session(600);
    let n_events = session.len() as u64 - 1; // without the marker the restore added
    for kind in DURABLE {
        let store = crate::common::store(kind, dir.path());
        let writer = store.create(header("tail", 1)).expect("create");
        // One append per turn: one zstd frame per batch, as dsh writes.
        for chunk in session.events().unwrap()[..n_events as usize].chunks(8) {
            let candidates = chunk
                .iter()
                .map(|event| {
                    strata_core::Candidate::dynamic(
                        event.event_type().as_str(),
                        event.data().clone(),
                        event.surface_op().map(|op| {
                            op.to_value(strata_core::Generation::NATIVE.replace_spelling())
                        }),
                        event.sources().map(|sources| {
                            serde_json::Value::Array(
                                sources.iter().map(|seq| seq.get().into()).collect(),
                            )
                        }),
                    )
                })
                .collect();
            writer.append(candidates, 1).expect("append");
        }
        writer.close().expect("close");
        if kind == crate::common::Kind::Zstd {
            let file = find_log(&dir.path().join("zstd"));
            let len = std::fs::metadata(&file).expect("stat").len();
            // Large enough that the tail is found from the end, not by the whole-file walk.
            assert!(len > 64 * 1024, "zstd log is {len} bytes");
        }
        let full = store.read("tail").expect("read").events;
        assert_eq!(full.len() as u64, n_events);
        for from in [
            n_events - 50,
            n_events - 1,
            n_events - 300,
            n_events / 2,
            0,
            n_events,
        ] {
            let tail = store.read_from("tail", from).expect("read_from");
            assert_eq!(tail, full[from as usize..], "{kind:?} from {from}");
        }
    }
}

#[test]
fn a_log_written_as_one_huge_zstd_frame_streams_and_loads() {
    let dir = tempfile::tempdir().expect("dir");
    let session = long_session(400);
    let n_events = session.len() - 1;
    // The header frame, then every event in a single frame (older writers did this).
    let mut header_line = Vec::new();
    strata_format::encode_header_line(session.header(), &mut header_line).expect("header");
    let mut body = Vec::new();
    for event in &session.events().unwrap()[..n_events] {
        strata_format::encode_event_line(event, &mut body);
    }
    assert!(
        body.len() > 1 << 20,
        "the frame is over 1 MiB: {} bytes",
        body.len()
    );
    let path = dir.path().join("one-frame.jsonl.zstd");
    let mut file = std::fs::File::create(&path).expect("create");
    file.write_all(&zstd::bulk::compress(&header_line, 3).expect("compress"))
        .expect("write");
    file.write_all(&zstd::bulk::compress(&body, 3).expect("compress"))
        .expect("write");
    drop(file);
    let mut stream = scan_log(&path).expect("scan");
    let restored = strata_store::restore_stream(&mut stream, strata_core::SeedOptions::default())
        .expect("restore");
    assert_eq!(stream.n_read() as usize, n_events);
    assert_eq!(
        restored.events().unwrap()[..n_events],
        session.events().unwrap()[..n_events]
    );

    // write_log splits the same events into ~1 MiB frames; reading back is lossless.
    let out = dir.path().join("framed.jsonl.zstd");
    write_log(
        &out,
        session.header(),
        &session.events().unwrap()[..n_events],
    )
    .expect("write");
    let bytes = std::fs::read(&out).expect("read");
    let scan = strata_format::frames::scan_frames(&bytes).expect("frames");
    assert!(scan.frames.len() >= 3, "{} frames", scan.frames.len());
    let plain = zstd::stream::decode_all(&bytes[..]).expect("decode");
    assert_eq!(plain, [header_line, body].concat());
    assert_eq!(read_log(&out).expect("read").events.len(), n_events);
}

#[test]
fn compression_modes_store_the_same_events() {
    // A store of each compression mode, imported from the same log, reads back identically.
    let dir = tempfile::tempdir().expect("dir");
    let session = long_session(40);
    let n_events = session.len() - 1;
    let raw = dir.path().join("log.jsonl");
    write_log(
        &raw,
        session.header(),
        &session.events().unwrap()[..n_events],
    )
    .expect("write");
    let mut reads = Vec::new();
    for compression in [Compression::None, Compression::Zstd] {
        let store = Store::jsonl(dir.path().join(format!("{compression:?}")), compression);
        let n = store
            .import_stream(&mut scan_log(&raw).expect("scan"))
            .expect("import");
        assert_eq!(n as usize, n_events);
        reads.push(store.read("long").expect("read").events);
    }
    assert_eq!(reads[0], reads[1]);
}
