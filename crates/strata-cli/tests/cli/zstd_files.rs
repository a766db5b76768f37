//! Any zstd file through every reading command (issue 27 item 4): a log compressed by the
//! `zstd` tool (one frame) or cut into frames anywhere (mid-line, the header split), named
//! `.zst` or `.zstd`, reads as its raw log does — `validate`, `inspect`, `surface`, `messages`,
//! `report`, `import`, `convert`, the dry runs, and `validate`/`migrate` of an older
//! generation. A writer keeps dsh's framing: appending to a foreign-framed file is refused,
//! saying why and what to do, and leaves its bytes alone.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::*;

/// The ways a test compresses a log: one frame (what `zstd FILE` writes), one streamed frame
/// without a content size (what `zstd < FILE` writes), frames behind skippable frames (what
/// `pzstd` writes), and frames cut at odd plaintext offsets (inside the header, mid-line, one
/// byte long).
fn framings(plain: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let one_frame = zstd::bulk::compress(plain, 19).expect("compress");
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 3).expect("encoder");
    encoder.write_all(plain).expect("compress");
    let streamed = encoder.finish().expect("compress");
    let mut cuts = vec![
        0,
        7,
        8,
        401,
        plain.len() / 3,
        plain.len() / 3 + 1,
        plain.len() - 2,
    ];
    cuts.push(plain.len());
    let odd: Vec<u8> = cuts
        .windows(2)
        .flat_map(|pair| zstd::bulk::compress(&plain[pair[0]..pair[1]], 3).expect("compress"))
        .collect();
    // What `pzstd` writes: each frame behind a skippable frame carrying its size.
    let mut skippable_first = Vec::new();
    for piece in [&plain[..plain.len() / 2], &plain[plain.len() / 2..]] {
        let frame = zstd::bulk::compress(piece, 3).expect("compress");
        skippable_first.extend(0x184D_2A50_u32.to_le_bytes());
        skippable_first.extend(4_u32.to_le_bytes());
        skippable_first.extend((frame.len() as u32).to_le_bytes());
        skippable_first.extend(frame);
    }
    vec![
        ("one-frame.v3.jsonl.zst", one_frame),
        ("streamed.v3.jsonl.zstd", streamed),
        ("skippable.v3.jsonl.zst", skippable_first),
        ("odd-frames.v3.jsonl.zst", odd.clone()),
        ("odd-frames.v3.jsonl.zstd", odd),
    ]
}

/// `strata` with a scratch home (its own default store) and no store override.
fn strata_in(home: &Path) -> Command {
    let mut command = strata();
    command
        .env("STRATA_HOME", home)
        .env_remove("STRATA_STORE")
        .env_remove("STRATA_DATABASE_URL")
        .env("NO_COLOR", "1");
    command
}

/// Exit code, stdout and stderr of `args` run on `file` (`{}` in `args` is the file), with
/// `file`'s path written as `as_label` so two files' outputs compare.
fn run_on(home: &Path, args: &[&str], file: &Path, as_label: &Path) -> (Option<i32>, String) {
    let output = strata_in(home)
        .args(args.iter().map(|arg| {
            if *arg == "{}" {
                file.as_os_str().to_owned()
            } else {
                (*arg).into()
            }
        }))
        .output()
        .expect("run strata");
    let text = format!(
        "{}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = text.replace(&file.display().to_string(), &as_label.display().to_string());
    (output.status.code(), text)
}

/// The reading commands whose output depends only on the log's events.
const READERS: &[&[&str]] = &[
    &["validate", "{}"],
    &["validate", "--json", "{}"],
    &["surface", "{}"],
    &["surface", "--json", "{}"],
    &["messages", "{}"],
    &["messages", "--json", "--at", "40", "{}"],
    &["messages", "--format", "openai", "--json", "{}"],
    &["compact", "--offline", "--dry-run", "{}"],
    &["compact", "--dry-run", "{}"],
    &["repair", "--dry-run", "{}"],
    &["repair", "--dry-run", "--json", "{}"],
    &["prune", "--dry-run", "{}"],
];

/// `inspect`'s output without its one line about the file on disk, which is about the bytes.
fn without_file_facts(text: &str, json: bool) -> String {
    if json {
        let body = text.split("\n--- stderr\n").next().unwrap_or_default();
        let mut value: Value = serde_json::from_str(body).expect("inspect json");
        if let Some(object) = value.as_object_mut() {
            object.remove("fileSize");
            object.remove("compression");
        }
        return value.to_string();
    }
    text.lines()
        .filter(|line| !line.trim_start().starts_with("file size"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_log_in_any_zstd_framing_reads_as_the_raw_log_through_every_reading_command() {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    let raw = dir.path().join("sample.v3.jsonl");
    let plain = std::fs::read(sample()).expect("sample");
    std::fs::write(&raw, &plain).expect("write");
    let expected: Vec<_> = READERS
        .iter()
        .map(|args| run_on(&home, args, &raw, &raw))
        .collect();
    assert_eq!(expected[0].0, Some(0), "{}", expected[0].1);
    for (name, bytes) in framings(&plain) {
        let file = dir.path().join(name);
        std::fs::write(&file, &bytes).expect("write");
        for (args, expected) in READERS.iter().zip(&expected) {
            assert_eq!(
                &run_on(&home, args, &file, &raw),
                expected,
                "{name}: {args:?}"
            );
        }
        // inspect: the same, but for what it says about the file itself.
        for json in [false, true] {
            let args: &[&str] = if json {
                &["inspect", "--json", "{}"]
            } else {
                &["inspect", "{}"]
            };
            let (code, text) = run_on(&home, args, &file, &raw);
            let (raw_code, raw_text) = run_on(&home, args, &raw, &raw);
            assert_eq!(code, raw_code, "{name}");
            assert_eq!(
                without_file_facts(&text, json),
                without_file_facts(&raw_text, json)
            );
            if json {
                let value: Value =
                    serde_json::from_str(text.split("\n--- stderr\n").next().unwrap_or_default())
                        .expect("json");
                assert_eq!(value["compression"], "zstd", "{name}");
                assert_eq!(value["fileSize"], bytes.len(), "{name}");
            }
        }
        // report: the same page.
        let page = |log: &Path, out: &str| {
            let out = dir.path().join(out);
            let _ = std::fs::remove_file(&out);
            strata_in(&home)
                .arg("report")
                .arg(log)
                .arg("-o")
                .arg(&out)
                .assert()
                .success();
            std::fs::read_to_string(&out)
                .expect("page")
                .replace(&log.display().to_string(), "LOG")
                .replace(
                    log.file_name()
                        .and_then(|name| name.to_str())
                        .unwrap_or("-"),
                    "LOG",
                )
        };
        assert_eq!(
            page(&file, "zst.html"),
            page(&raw, "raw.html"),
            "{name}: report"
        );
    }
}

#[test]
fn import_and_convert_copy_a_foreign_framed_log_event_for_event() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plain = std::fs::read(sample()).expect("sample");
    for (index, (name, bytes)) in framings(&plain).into_iter().enumerate() {
        let home = dir.path().join(format!("home-{index}"));
        let file = dir.path().join(name);
        std::fs::write(&file, &bytes).expect("write");
        strata_in(&home).arg("import").arg(&file).assert().success();
        // Exported raw, the log is byte for byte the one that was compressed; exported to a
        // `.zst` name, it is zstd in dsh's framing (header frame first), which reads back.
        let out = dir.path().join(format!("export-{index}.v3.jsonl"));
        strata_in(&home)
            .args(["export", "sample-session", "-o"])
            .arg(&out)
            .assert()
            .success();
        assert_eq!(std::fs::read(&out).expect("export"), plain, "{name}");
        let zst = dir.path().join(format!("export-{index}.v3.jsonl.zst"));
        strata_in(&home)
            .args(["export", "sample-session", "-o"])
            .arg(&zst)
            .assert()
            .success();
        let written = std::fs::read(&zst).expect("export");
        let header_frame =
            zstd::zstd_safe::find_frame_compressed_size(&written).expect("header frame");
        let header_end = plain
            .iter()
            .position(|&byte| byte == b'\n')
            .expect("header")
            + 1;
        assert_eq!(
            zstd::stream::decode_all(&written[..header_frame]).expect("decode"),
            plain[..header_end]
        );
        assert_eq!(
            zstd::stream::decode_all(&written[..]).expect("decode"),
            plain
        );
        // convert into a raw JSONL store: the same bytes again.
        let root = dir.path().join(format!("root-{index}"));
        strata_in(&home)
            .arg("convert")
            .arg(&file)
            .arg(format!("jsonl:{}", root.display()))
            .assert()
            .success();
        let converted = root
            .join("--home-user-project--")
            .join("sample-session")
            .join("session.v3.jsonl");
        assert_eq!(
            std::fs::read(&converted).expect("converted"),
            plain,
            "{name}"
        );
    }
}

#[test]
fn a_foreign_framed_log_that_was_cut_reads_its_complete_events_as_torn() {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    // One frame with its checksum, as the `zstd` tool writes it.
    let plain = std::fs::read(sample()).expect("sample");
    let mut compressor = zstd::bulk::Compressor::new(3).expect("compressor");
    compressor.include_checksum(true).expect("checksum");
    let bytes = compressor.compress(&plain).expect("compress");
    let file = dir.path().join("cut.v3.jsonl.zst");
    std::fs::write(&file, &bytes[..bytes.len() * 2 / 3]).expect("write");
    // The sample is one block: nothing decodes before the cut, which is not an event at all.
    let (code, text) = run_on(&home, &["validate", "{}"], &file, &file);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("missing-header") || text.contains("empty"),
        "{text}"
    );
    // Cut in the checksum: every block is whole, every event reads, the tail is torn.
    std::fs::write(&file, &bytes[..bytes.len() - 1]).expect("write");
    let (code, text) = run_on(&home, &["import", "{}"], &file, &file);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("torn write"), "{text}");
    assert!(
        text.contains("132 of them recovered from the torn zstd frame"),
        "{text}"
    );
}

/// A zstd JSONL store holding the sample, and its session file.
fn zstd_store(dir: &Path, home: &Path) -> PathBuf {
    let root = dir.join("zroot");
    strata_in(home)
        .arg("convert")
        .arg(sample())
        .arg(format!("jsonl-zstd:{}", root.display()))
        .assert()
        .success();
    root.join("--home-user-project--")
        .join("sample-session")
        .join("session.v3.jsonl.zstd")
}

#[test]
fn a_writer_refuses_a_foreign_framed_log_saying_why_and_leaves_it_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    let log = zstd_store(dir.path(), &home);
    let plain = zstd::stream::decode_all(&std::fs::read(&log).expect("log")[..]).expect("decode");
    for (name, bytes) in framings(&plain) {
        std::fs::write(&log, &bytes).expect("write");
        // Reading it in place works …
        strata_in(&home)
            .arg("validate")
            .arg(&log)
            .assert()
            .success();
        // … writing to it does not, and says what to do instead.
        for args in [&["compact", "--offline"][..], &["repair"][..]] {
            let output = strata_in(&home).args(args).arg(&log).output().expect("run");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{name} {args:?}: {stderr}");
            assert!(
                stderr.contains("dsh's framing"),
                "{name} {args:?}: {stderr}"
            );
            assert!(
                stderr.contains("strata convert"),
                "{name} {args:?}: {stderr}"
            );
            assert_eq!(std::fs::read(&log).expect("log"), bytes, "{name} {args:?}");
        }
    }
}

/// The generated v0 log of the migration tests.
fn v0_plaintext() -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/v0/generated/released-e500-s11.jsonl"),
    )
    .expect("fixture")
}

#[test]
fn an_older_generation_in_any_zstd_framing_validates_and_migrates_as_the_raw_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    let plain = v0_plaintext();
    let raw_dir = dir.path().join("raw");
    std::fs::create_dir(&raw_dir).expect("dir");
    let raw = raw_dir.join("session.jsonl");
    std::fs::write(&raw, &plain).expect("write");
    let readers: &[&[&str]] = &[
        &["validate", "{}"],
        &["surface", "--json", "{}"],
        &["messages", "{}"],
    ];
    let expected: Vec<_> = readers
        .iter()
        .map(|args| run_on(&home, args, &raw, &raw))
        .collect();
    assert_eq!(expected[0].0, Some(0), "{}", expected[0].1);
    strata_in(&home).arg("migrate").arg(&raw).assert().success();
    let migrated = std::fs::read(raw_dir.join("session.v3.jsonl")).expect("migrated");
    for (index, (name, bytes)) in framings(&plain).into_iter().enumerate() {
        let sub = dir.path().join(format!("z{index}"));
        std::fs::create_dir(&sub).expect("dir");
        let extension = if name.ends_with(".zst") {
            "zst"
        } else {
            "zstd"
        };
        let file = sub.join(format!("session.jsonl.{extension}"));
        std::fs::write(&file, &bytes).expect("write");
        for (args, expected) in readers.iter().zip(&expected) {
            assert_eq!(
                &run_on(&home, args, &file, &raw),
                expected,
                "{name}: {args:?}"
            );
        }
        // migrate writes a V3 zstd copy beside it, in dsh's framing, holding what the raw
        // source migrates to.
        strata_in(&home)
            .arg("migrate")
            .arg(&file)
            .assert()
            .success();
        let target = sub.join("session.v3.jsonl.zstd");
        let written = std::fs::read(&target).expect("target");
        assert_eq!(
            zstd::stream::decode_all(&written[..]).expect("decode"),
            migrated,
            "{name}"
        );
        assert_eq!(
            std::fs::read(&file).expect("source"),
            bytes,
            "{name}: source untouched"
        );
        strata_in(&home)
            .arg("validate")
            .arg(&target)
            .assert()
            .success();
    }
}

#[test]
fn the_zstd_tool_output_reads_when_the_tool_is_installed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    let raw = dir.path().join("sample.v3.jsonl");
    std::fs::copy(sample(), &raw).expect("copy");
    let file = dir.path().join("sample.v3.jsonl.zst");
    let compressed = std::process::Command::new("zstd")
        .args(["-q", "-19", "--no-progress"])
        .arg(&raw)
        .arg("-o")
        .arg(&file)
        .status();
    match compressed {
        Ok(status) if status.success() => {}
        _ => {
            eprintln!("skipped: no zstd tool on PATH (the other tests cover its framing)");
            return;
        }
    }
    for args in READERS {
        assert_eq!(
            run_on(&home, args, &file, &raw),
            run_on(&home, args, &raw, &raw),
            "{args:?}"
        );
    }
}
