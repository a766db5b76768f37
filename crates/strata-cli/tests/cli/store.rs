//! The store commands end to end (issue 3 item 4): `sessions`, `import`, `export`, and the
//! inputs every viewing command accepts — zstd files, `sqlite://PATH#ID` references and bare
//! session ids in the default store. Each test gets its own `$STRATA_HOME`, so the default store
//! is a fresh SQLite file.

use std::path::{Path, PathBuf};

use strata_store::{Compression, Store};

use super::*;

/// A scratch home whose default store starts empty.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// `strata` with this home's default store and no inherited store override.
    fn strata(&self) -> Command {
        let mut command = strata();
        command
            .env("STRATA_HOME", self.dir.path().join("home"))
            .env_remove("STRATA_STORE")
            .env_remove("STRATA_DATABASE_URL")
            .env("NO_COLOR", "1");
        command
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("home").join("strata.db")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn import(&self, file: &Path) {
        self.strata().arg("import").arg(file).assert().success();
    }
}

fn json_output(command: &mut Command) -> (Option<i32>, Value) {
    let output = command.output().expect("run");
    let value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "stdout is not one JSON value ({error}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    (output.status.code(), value)
}

/// The sample compressed as dsh does: a header frame, then one frame per batch.
fn zstd_sample(home: &Home) -> PathBuf {
    let text = std::fs::read(sample()).expect("sample");
    let header_end = text.iter().position(|&b| b == b'\n').expect("header") + 1;
    let mut bytes = zstd::bulk::compress(&text[..header_end], 3).expect("compress");
    for chunk in text[header_end..]
        .split_inclusive(|&b| b == b'\n')
        .collect::<Vec<_>>()
        .chunks(16)
    {
        bytes.extend(zstd::bulk::compress(&chunk.concat(), 3).expect("compress"));
    }
    let path = home.path("sample.session.v3.jsonl.zstd");
    std::fs::write(&path, bytes).expect("write");
    path
}

#[test]
fn sessions_lists_an_empty_store_then_imports_newest_first() {
    let home = Home::new();
    let (code, value) = json_output(home.strata().args(["sessions", "--json"]));
    assert_eq!(code, Some(0));
    assert_eq!(value["sessions"], serde_json::json!([]));
    assert_eq!(value["problems"], serde_json::json!([]));

    home.import(&sample());
    // A second, newer session: the sample with another id and a later createdAt.
    let newer = home.path("newer.jsonl");
    let text = std::fs::read_to_string(sample()).expect("sample");
    std::fs::write(
        &newer,
        text.replacen("\"id\":\"sample-session\"", "\"id\":\"newer\"", 1)
            .replacen(
                "\"createdAt\":1700000000000",
                "\"createdAt\":1800000000000",
                1,
            ),
    )
    .expect("write");
    home.import(&newer);

    let (code, value) = json_output(home.strata().args(["sessions", "--json"]));
    assert_eq!(code, Some(0));
    let sessions = value["sessions"].as_array().expect("sessions");
    let ids: Vec<&str> = sessions
        .iter()
        .map(|s| s["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["newer", "sample-session"]);
    // Each entry is the stored header, fields in stored order, without `type`.
    assert_eq!(
        sessions[1].to_string(),
        r#"{"version":3,"id":"sample-session","createdAt":1700000000000,"isSeeded":false,"delegationDepth":0,"cwd":"/home/user/project"}"#
    );
    assert!(value["store"]
        .as_str()
        .expect("store")
        .starts_with("sqlite:"));

    home.strata()
        .arg("sessions")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "sample-session  2023-11-14 22:13:20  /home/user/project",
        ))
        .stdout(predicate::str::contains("newer  2027-01-15 08:00:00"));
}

#[test]
fn sessions_honours_store_flag_for_a_jsonl_root() {
    let home = Home::new();
    let root = home.path("root");
    let spec = format!("jsonl:{}", root.display());
    home.strata()
        .args(["import", "--store", &spec])
        .arg(sample())
        .assert()
        .success();
    assert!(root
        .join("--home-user-project--")
        .join("sample-session")
        .join("session.v3.jsonl")
        .is_file());
    let (code, value) = json_output(home.strata().args(["sessions", "--json", "--store", &spec]));
    assert_eq!(code, Some(0));
    assert_eq!(value["sessions"][0]["id"], "sample-session");
    // The default store was not touched.
    let (_, value) = json_output(home.strata().args(["sessions", "--json"]));
    assert_eq!(value["sessions"], serde_json::json!([]));
}

#[test]
fn export_to_a_bare_file_name_writes_it_in_the_working_directory() {
    let home = Home::new();
    home.strata().arg("import").arg(sample()).assert().success();
    home.strata()
        .current_dir(home.path(""))
        .args(["export", "sample-session", "-o", "bare.jsonl"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read(home.path("bare.jsonl")).expect("export"),
        std::fs::read(sample()).expect("sample")
    );
}

#[test]
fn import_then_export_is_byte_identical_raw_and_zstd() {
    let home = Home::new();
    let (code, value) = json_output(home.strata().args(["import", "--json"]).arg(sample()));
    assert_eq!(code, Some(0));
    assert_eq!(value["ok"], true);
    assert_eq!(value["id"], "sample-session");
    assert_eq!(value["events"], 132);

    let raw = home.path("out.jsonl");
    let (code, value) = json_output(
        home.strata()
            .args(["export", "sample-session", "--json", "-o"])
            .arg(&raw),
    );
    assert_eq!(code, Some(0));
    assert_eq!(value["events"], 132);
    assert_eq!(
        std::fs::read(&raw).expect("export"),
        std::fs::read(sample()).expect("sample")
    );

    let zstd = home.path("out.jsonl.zstd");
    home.strata()
        .args(["export", "sample-session", "-o"])
        .arg(&zstd)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "exported sample-session (132 events)",
        ));
    let bytes = std::fs::read(&zstd).expect("export");
    assert_eq!(&bytes[..4], &[0x28, 0xB5, 0x2F, 0xFD]);
    assert_eq!(
        zstd::stream::decode_all(&bytes[..]).expect("decode"),
        std::fs::read(sample()).expect("sample")
    );
}

#[test]
fn zstd_input_imports_and_validates_like_the_raw_file() {
    let home = Home::new();
    let zstd = zstd_sample(&home);
    home.strata()
        .arg("validate")
        .arg(&zstd)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "ok (132 events, 6 surface nodes, 3 replacements)",
        ));
    home.import(&zstd);
    let out = home.path("back.jsonl");
    home.strata()
        .args(["export", "sample-session", "-o"])
        .arg(&out)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&out).expect("export"),
        std::fs::read(sample()).expect("sample")
    );
}

#[test]
fn viewing_commands_accept_sqlite_references_and_bare_ids() {
    let home = Home::new();
    home.import(&sample());
    let reference = format!("sqlite://{}#sample-session", home.db().display());
    home.strata()
        .args(["validate", &reference, "sample-session"])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "{reference}: ok (132 events, 6 surface nodes, 3 replacements)"
        )))
        .stdout(predicate::str::contains(
            "#sample-session: ok (132 events, 6 surface nodes, 3 replacements)",
        ));
    let (code, value) = json_output(home.strata().args(["surface", "--json", &reference]));
    assert_eq!(code, Some(0));
    assert_eq!(
        value["nodes"],
        serde_json::json!([2, 120, 123, 124, 126, 129])
    );
    let (code, value) = json_output(home.strata().args(["messages", "--json", "sample-session"]));
    assert_eq!(code, Some(0));
    assert_eq!(value.as_array().expect("messages").len(), 6);
}

#[test]
fn an_existing_path_wins_over_a_stored_id() {
    let home = Home::new();
    home.import(&sample());
    // A file named like the stored session, holding a different (rejected) log.
    let bad = mutated(50, |l| {
        l.replace("\"surfaceOp\":\"append\"", "\"surfaceOp\":\"apend\"")
    });
    let dir = home.path("cwd");
    std::fs::create_dir(&dir).expect("dir");
    std::fs::copy(bad.path(), dir.join("sample-session")).expect("copy");
    home.strata()
        .current_dir(&dir)
        .args(["validate", "sample-session"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "sample-session: seq 48: invalid-surfaceop",
        ));
}

#[test]
fn missing_inputs_exit_two_naming_them() {
    let home = Home::new();
    home.strata()
        .args(["validate", "no-such-session"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no default store at"));
    assert!(
        !home.db().exists(),
        "looking up an id never creates the default store"
    );
    home.import(&sample());
    home.strata()
        .args(["validate", "no-such-session"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("\"no-such-session\" not found"));
    let missing_db = home.path("missing.db");
    home.strata()
        .arg("validate")
        .arg(format!("sqlite://{}#x", missing_db.display()))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no SQLite store at"));
    assert!(!missing_db.exists(), "a reference never creates a database");
    home.strata()
        .args(["validate", "sqlite://nohash"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("sqlite://PATH#ID"));
    home.strata()
        .args(["export", "nope", "-o"])
        .arg(home.path("x.jsonl"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not found"));
    home.strata()
        .args(["import"])
        .arg(home.path("absent.jsonl"))
        .assert()
        .code(2);
    home.strata()
        .args(["export", "sample-session"])
        .assert()
        .code(2);
}

#[test]
fn import_refuses_a_rejected_log_and_a_duplicate() {
    let home = Home::new();
    let bad = mutated(50, |l| {
        l.replace("\"surfaceOp\":\"append\"", "\"surfaceOp\":\"apend\"")
    });
    let (code, value) = json_output(home.strata().args(["import", "--json"]).arg(bad.path()));
    assert_eq!(code, Some(1));
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["rule"], "invalid-surfaceop");
    assert_eq!(value["error"]["seq"], 48);
    assert_eq!(value["error"]["line"], 50);
    let (_, listing) = json_output(home.strata().args(["sessions", "--json"]));
    assert_eq!(
        listing["sessions"],
        serde_json::json!([]),
        "nothing was stored"
    );

    home.import(&sample());
    home.strata()
        .arg("import")
        .arg(sample())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
}

#[test]
fn export_never_replaces_a_file_and_reports_a_corrupt_store_row() {
    let home = Home::new();
    home.import(&sample());
    let out = home.path("taken.jsonl");
    std::fs::write(&out, "keep me").expect("write");
    home.strata()
        .args(["export", "sample-session", "-o"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
    assert_eq!(std::fs::read_to_string(&out).expect("read"), "keep me");

    // Damage one stored payload: the export names the seq and exits 1, writing nothing.
    let conn = rusqlite::Connection::open(home.db()).expect("open store");
    conn.execute("UPDATE events SET data = '{not json' WHERE seq = 5", [])
        .expect("damage a row");
    drop(conn);
    let target = home.path("never.jsonl");
    let (code, value) = json_output(
        home.strata()
            .args(["export", "sample-session", "--json", "-o"])
            .arg(&target),
    );
    assert_eq!(code, Some(1));
    assert_eq!(value["error"]["rule"], "corrupt-record");
    assert_eq!(value["error"]["seq"], 5);
    assert!(!target.exists());
}

#[test]
fn a_seq_gap_in_a_file_is_judged_by_the_core_rule() {
    // Files are streamed to the core unjudged, so a gap reports the core's rule and upstream's
    // text, in a zstd file as in a raw one.
    let home = Home::new();
    let gap = mutated(10, |l| l.replacen("\"seq\":8,", "\"seq\":9,", 1));
    home.strata()
        .arg("validate")
        .arg(gap.path())
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "seq 9: seq-not-contiguous: released v2 row 8 has seq gap (expected 8, got 9)",
        ));
    let text = std::fs::read(gap.path()).expect("gap");
    let header_end = text.iter().position(|&b| b == b'\n').expect("header") + 1;
    let mut bytes = zstd::bulk::compress(&text[..header_end], 3).expect("compress");
    bytes.extend(zstd::bulk::compress(&text[header_end..], 3).expect("compress"));
    let zstd = home.path("gap.jsonl.zstd");
    std::fs::write(&zstd, bytes).expect("write");
    let (code, value) = json_output(home.strata().args(["validate", "--json"]).arg(&zstd));
    assert_eq!(code, Some(1));
    assert_eq!(value["error"]["rule"], "seq-not-contiguous");
    assert_eq!(value["error"]["line"], 10);
}

#[test]
fn importing_a_dsh_v0_log_points_at_migrate_and_the_migrated_copy_imports() {
    let home = Home::new();
    let v0 = home.path("session.jsonl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/v0/generated/released-e500-s11.jsonl"),
        &v0,
    )
    .expect("copy the v0 log");
    let output = home.strata().arg("import").arg(&v0).output().expect("run");
    assert_eq!(output.status.code(), Some(1), "a rejected log");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unsupported-version"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "`strata migrate {}` writes a V3 copy beside it",
            v0.display()
        )),
        "{stderr}"
    );
    let (_, value) = json_output(home.strata().args(["sessions", "--json"]));
    assert_eq!(value["sessions"], serde_json::json!([]), "nothing imported");

    home.strata().arg("migrate").arg(&v0).assert().success();
    home.import(&home.path("session.v3.jsonl"));
    let (_, value) = json_output(home.strata().args(["sessions", "--json"]));
    assert_eq!(value["sessions"].as_array().map(Vec::len), Some(1));
}

/// Every file under `dir` whose name ends in `.tmp`.
fn temp_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|extension| extension == "tmp") {
                found.push(path);
            }
        }
    }
    found
}

/// Issue 22: an import killed while it publishes into a JSONL store leaves its temp file (the
/// whole log, up to that point) in the session directory; nothing removed it. The next import
/// of that session does, and publishes the log.
#[test]
fn an_import_killed_mid_publish_leaves_a_temp_file_the_next_import_removes() {
    let home = Home::new();
    let root = home.path("root");
    let spec = format!("jsonl:{}", root.display());
    // The kill lands while the temp file exists: the child is killed as soon as it holds
    // bytes, and a child that got further (published already) is tried again with a longer
    // log.
    let mut n_events = 5_000;
    let (log, left) = loop {
        let session = strata_core::synth::generate(&strata_core::synth::SynthConfig {
            events: n_events,
            content_bytes: 2_000,
            id: "big".into(),
            ..strata_core::synth::SynthConfig::default()
        })
        .expect("synthetic session");
        let log = home.path(&format!("big-{n_events}.jsonl"));
        strata_store::write_log(&log, session.header(), session.events().unwrap())
            .expect("write log");
        let _ = std::fs::remove_dir_all(&root);
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
            .env("STRATA_HOME", home.path("home"))
            .args(["import", "--store", &spec])
            .arg(&log)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn strata import");
        let written = |path: &PathBuf| std::fs::metadata(path).is_ok_and(|meta| meta.len() > 0);
        while !temp_files_under(&root).iter().any(written)
            && child.try_wait().expect("wait").is_none()
        {
            std::thread::yield_now();
        }
        child.kill().expect("SIGKILL"); // a child that already exited is not an error here
        child.wait().expect("reap");
        let left = temp_files_under(&root);
        if !left.is_empty() {
            break (log, left);
        }
        assert!(
            n_events < 1_000_000,
            "the import never showed its temp file"
        );
        n_events *= 4;
    };
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(std::fs::metadata(&left[0]).expect("stat").len() > 0);
    home.strata()
        .args(["import", "--store", &spec])
        .arg(&log)
        .assert()
        .success();
    assert_eq!(temp_files_under(&root), Vec::<PathBuf>::new());
    let published = left[0].with_file_name("session.v3.jsonl");
    assert_eq!(
        std::fs::read(&published).expect("published log"),
        std::fs::read(&log).expect("source log")
    );
}

/// Runs `import --json` of `file` into the SQLite store `db`: exit code, the JSON object, and
/// stderr.
fn import_json(home: &Home, file: &Path, db: &Path) -> (Option<i32>, Value, String) {
    let output = home
        .strata()
        .args(["import", "--json", "--store"])
        .arg(db)
        .arg(file)
        .output()
        .expect("run");
    let stderr = String::from_utf8(output.stderr).expect("utf8");
    let value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output.status.code(), value, stderr)
}

/// Issue 22: a zstd log cut inside a frame (a crash mid-append, or a copy cut short) imported
/// the events before the torn frame and said nothing about the rest. It still imports them,
/// and says on stderr that the tail was torn, naming the file and how many events it kept.
/// The sample is compressed by strata's own writer (`strata convert` to a zstd store: a header
/// frame, then one frame of every event), then cut at several offsets.
#[test]
fn a_torn_zstd_log_imports_its_complete_events_with_a_warning() {
    let home = Home::new();
    let root = home.path("zroot");
    home.strata()
        .arg("convert")
        .arg(sample())
        .arg(format!("jsonl-zstd:{}", root.display()))
        .assert()
        .success();
    let log = root
        .join("--home-user-project--")
        .join("sample-session")
        .join("session.v3.jsonl.zstd");
    let bytes = std::fs::read(&log).expect("zstd log");
    let header_end = zstd::zstd_safe::find_frame_compressed_size(&bytes).expect("header frame");
    assert!(header_end < bytes.len());
    // Cut inside the frame's one block, nothing of it decodes; cut in its checksum, the block
    // is whole and its 132 complete records are kept.
    let cuts = [
        (header_end + 1, 0, ""),
        ((header_end + bytes.len()) / 2, 0, ""),
        (
            bytes.len() - 1,
            132,
            ", 132 of them recovered from the torn zstd frame",
        ),
    ];
    for (cut, n_kept, recovered) in cuts {
        let file = home.path(&format!("cut-{cut}.jsonl.zstd"));
        std::fs::write(&file, &bytes[..cut]).expect("write");
        let db = home.path(&format!("cut-{cut}.db"));
        let (code, value, stderr) = import_json(&home, &file, &db);
        assert_eq!(code, Some(0), "cut at {cut}: {stderr}");
        assert_eq!(value["events"], n_kept, "cut at {cut}");
        assert_eq!(value["tornTail"]["offset"], header_end);
        assert_eq!(value["tornTail"]["bytes"], cut - header_end);
        assert_eq!(value["tornTail"]["recovered"], n_kept);
        assert!(
            stderr.contains(&format!(
                "strata: warning: {}: the log ends in a torn write ({} bytes from byte \
                 {header_end}, never completed): kept the {n_kept} complete events before \
                 it{recovered} and left the torn tail out",
                file.display(),
                cut - header_end
            )),
            "cut at {cut}: {stderr}"
        );
    }
    // `convert` copies the same way and says the same.
    let file = home.path(&format!("cut-{}.jsonl.zstd", bytes.len() - 1));
    home.strata()
        .arg("convert")
        .arg(&file)
        .arg(format!("sqlite:{}", home.path("converted.db").display()))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "converted sample-session (132 events)",
        ))
        .stderr(predicate::str::contains(format!(
            "strata: warning: {}: the log ends in a torn write",
            file.display()
        )));
    // Cut inside the header line, the log has no header: refused, nothing stored.
    for cut in [10, header_end / 2] {
        let file = home.path(&format!("head-{cut}.jsonl.zstd"));
        std::fs::write(&file, &bytes[..cut]).expect("write");
        let db = home.path(&format!("head-{cut}.db"));
        let (code, value, stderr) = import_json(&home, &file, &db);
        assert_eq!(code, Some(1), "cut at {cut}: {stderr}");
        assert_eq!(value["ok"], false, "cut at {cut}");
        assert!(!stderr.contains("warning"), "cut at {cut}: {stderr}");
    }
    // Cut in the header frame's checksum, the header line is whole: a file is read in any
    // framing (docs/format.md §2), where only the end of the plaintext can be torn, so the
    // session imports with no events and the torn tail is named.
    let cut = header_end - 1;
    let file = home.path(&format!("head-{cut}.jsonl.zstd"));
    std::fs::write(&file, &bytes[..cut]).expect("write");
    let db = home.path(&format!("head-{cut}.db"));
    let (code, value, stderr) = import_json(&home, &file, &db);
    assert_eq!(code, Some(0), "cut at {cut}: {stderr}");
    assert_eq!(value["events"], 0);
    assert_eq!(value["tornTail"]["offset"], 0);
    assert!(stderr.contains("the log ends in a torn write"), "{stderr}");
}

/// The same through a log of many frames, as strata's writer appends them (one frame per
/// batch), with batches large enough for a frame of several zstd blocks: a cut anywhere keeps
/// exactly the events of the complete frames before it plus the complete records the torn
/// frame's complete blocks hold, each byte-identical to the source, and says how many.
#[test]
fn a_torn_zstd_log_of_many_frames_keeps_every_complete_record_before_the_cut() {
    let home = Home::new();
    let store = Store::jsonl(home.path("zroot"), Compression::Zstd);
    let header = strata_core::SessionHeader::fresh("torn", 1).expect("header");
    let writer = store.create(header).expect("create");
    let log = home
        .path("zroot")
        .join("_no-cwd")
        .join("torn")
        .join("session.v3.jsonl.zstd");
    let mut frame_ends = vec![std::fs::metadata(&log).expect("stat").len() as usize];
    for batch in 0..4_u64 {
        // Four turns a batch, tool results of ~100 KiB: frames of several 128 KiB blocks.
        let mut candidates = Vec::new();
        for turn in 0..4 {
            let first_seq = writer.durable_len() + candidates.len() as u64;
            candidates.extend(strata_store::synth::turn_candidates(
                batch * 4 + turn + 1,
                first_seq,
                100_000,
            ));
        }
        writer.append(candidates, 2).expect("append");
        frame_ends.push(std::fs::metadata(&log).expect("stat").len() as usize);
    }
    writer.close().expect("close");
    let bytes = std::fs::read(&log).expect("log");
    let source = strata_store::read_log(&log).expect("read").events;
    assert_eq!(source.len(), 128);
    let mut n_cuts_recovering = 0;
    for window in frame_ends.windows(2) {
        let (start, end) = (window[0], window[1]);
        for cut in [start + 1, start + (end - start) / 3, end - 1] {
            let file = home.path(&format!("cut-{cut}.jsonl.zstd"));
            std::fs::write(&file, &bytes[..cut]).expect("write");
            let db = home.path(&format!("cut-{cut}.db"));
            let (code, value, stderr) = import_json(&home, &file, &db);
            assert_eq!(code, Some(0), "cut at {cut}: {stderr}");
            let n_kept = value["events"].as_u64().expect("events") as usize;
            let n_before = 32 * (frame_ends.iter().position(|&e| e == start).expect("frame"));
            let n_recovered = value["tornTail"]["recovered"].as_u64().expect("recovered");
            assert_eq!(n_kept, n_before + n_recovered as usize, "cut at {cut}");
            n_cuts_recovering += usize::from(n_recovered > 0);
            assert_eq!(value["tornTail"]["offset"], start, "cut at {cut}");
            assert!(
                stderr.contains(&format!(
                    "{}: the log ends in a torn write ({} bytes from byte {start}, never \
                     completed): kept the {n_kept} complete events before it",
                    file.display(),
                    cut - start
                )),
                "cut at {cut}: {stderr}"
            );
            let stored = Store::sqlite(&db)
                .expect("store")
                .read("torn")
                .expect("read")
                .events;
            assert_eq!(stored[..], source[..n_kept], "cut at {cut}");
        }
    }
    // The cuts a third into each frame fall after its first complete block.
    assert!(n_cuts_recovering >= 4, "{n_cuts_recovering}");
}

/// Issue 22: an id over 255 bytes failed on the JSONL and SQLite stores with "File name too
/// long" (the SQLite store only because its lock file was named after the id). SQLite now takes
/// it; a JSONL store, whose dsh layout cannot hold it, refuses it before writing anything,
/// naming the limit.
#[test]
fn a_long_session_id_imports_into_sqlite_and_is_refused_by_jsonl_naming_the_limit() {
    let home = Home::new();
    let text = std::fs::read_to_string(sample()).expect("sample");
    let id = "i".repeat(256);
    let log = home.path("long.jsonl");
    std::fs::write(
        &log,
        text.replacen("\"id\":\"sample-session\"", &format!("\"id\":\"{id}\""), 1),
    )
    .expect("write");
    home.strata()
        .arg("import")
        .arg(&log)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "imported {id} (132 events)"
        )));
    let root = home.path("root");
    home.strata()
        .args(["import", "--store"])
        .arg(format!("jsonl:{}", root.display()))
        .arg(&log)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "strata: session id \"{}\"… is 256 bytes, 256 as a directory name; jsonl:{} takes at \
             most 255 (dsh's layout names a session's directory after its id",
            &id[..32],
            root.display()
        )));
    assert!(!root.exists());
}
