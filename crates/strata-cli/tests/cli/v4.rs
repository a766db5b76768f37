//! V4 logs end to end (issue 25, docs/format-v4.md): the shipped `examples/sample.v4.jsonl`
//! through the reading commands, a V4 refusal naming its rule and seq, and dsh's folder holding
//! a V3 and a V4 generation of one session, where the V4 one is the session.

use std::path::PathBuf;

use super::dsh::DshHome;
use super::*;

fn sample_v4() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/sample.v4.jsonl")
}

/// The V4 sample imported into a SQLite store in `dir`; the store's path.
fn imported_sample(dir: &std::path::Path) -> PathBuf {
    let db = dir.join("store.db");
    strata()
        .arg("import")
        .arg(sample_v4())
        .arg("--store")
        .arg(&db)
        .assert()
        .success();
    db
}

/// The bytes `strata export` writes of the sample's session in store `db`.
fn exported_sample(db: &std::path::Path, dir: &std::path::Path) -> Vec<u8> {
    let exported = dir.join("out.v4.jsonl");
    strata()
        .args(["export", "sample-v4", "--store"])
        .arg(db)
        .arg("-o")
        .arg(&exported)
        .assert()
        .success();
    std::fs::read(&exported).expect("exported")
}

#[test]
fn the_v4_sample_validates() {
    strata()
        .arg("validate")
        .arg(sample_v4())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "ok (15 events, 6 surface nodes, 0 replacements)",
        ));
}

#[test]
fn inspect_names_the_generation() {
    strata()
        .arg("inspect")
        .arg(sample_v4())
        .assert()
        .success()
        .stdout(predicate::str::contains("v4 (header version 4)"));
}

#[test]
fn messages_carry_the_developer_and_tool_roles() {
    let output = strata()
        .arg("messages")
        .arg(sample_v4())
        .output()
        .expect("run");
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    let headings: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("── "))
        .collect();
    assert_eq!(
        headings,
        [
            "── system (system-1)",
            "── user (user-1)",
            "── developer (developer-1)",
            "── assistant (assistant-1)",
            "── tool (tool-result-1)",
            "── assistant (assistant-2)",
        ]
    );
}

#[test]
fn a_retired_plugin_source_exits_one_naming_rule_and_seq() {
    let text = std::fs::read_to_string(sample_v4()).expect("sample");
    let edited = text.replacen(
        r#""source":{"kind":"user"},"content""#,
        r#""source":{"kind":"plugin","plugin":"acme"},"content""#,
        1,
    );
    assert_ne!(edited, text);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("session.v4.jsonl");
    std::fs::write(&file, edited).expect("write");
    strata()
        .arg("validate")
        .arg(&file)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "seq 4: N-ROW-2: format v4 user/message at seq 4 message requires a producer-owned source kind",
        ));
}

#[test]
fn dsh_folder_reads_the_v4_generation_beside_a_v3_one() {
    let home = DshHome {
        dir: tempfile::tempdir().expect("temp dir"),
    };
    let dir = home.session_dir(Some("/home/user/project"), "sample-v4");
    std::fs::create_dir_all(&dir).expect("session dir");
    let v4 = std::fs::read(sample_v4()).expect("sample");
    std::fs::write(dir.join("session.v4.jsonl"), &v4).expect("write v4");
    // An older generation of the same session, as dsh leaves it after migrating.
    let v3 = std::fs::read_to_string(sample()).expect("v3 sample");
    let v3 = v3.replacen("\"id\":\"sample-session\"", "\"id\":\"sample-v4\"", 1);
    std::fs::write(dir.join("session.v3.jsonl"), v3).expect("write v3");
    let listed = home
        .strata()
        .args(["sessions", "--store", "dsh"])
        .output()
        .expect("run");
    assert!(listed.status.success(), "{listed:?}");
    let rows: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|line| line.contains("sample-v4"))
        .map(str::to_owned)
        .collect();
    assert_eq!(rows.len(), 1, "one session, counted once: {rows:?}");
    assert!(rows[0].contains(" v4 "), "{}", rows[0]);
    home.strata()
        .args(["validate", "dsh#sample-v4"])
        .assert()
        .success()
        .stdout(predicate::str::contains("session.v4.jsonl: ok (15 events"));
    // Reading left the folder as it was.
    assert_eq!(
        std::fs::read(dir.join("session.v4.jsonl")).expect("read"),
        v4
    );
}

#[test]
fn exports_map_developer_text_and_tool_role_results() {
    let openai = strata()
        .args(["messages", "--format", "openai"])
        .arg(sample_v4())
        .output()
        .expect("run");
    assert!(openai.status.success(), "{openai:?}");
    let request: Value = serde_json::from_slice(&openai.stdout).expect("json");
    let roles: Vec<&str> = request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|message| message["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "system", "assistant", "tool", "assistant"]
    );
    assert_eq!(request["messages"][2]["content"], "read_file is available.");
    assert_eq!(request["messages"][4]["tool_call_id"], "call-1");
    let anthropic = strata()
        .args(["messages", "--format", "anthropic"])
        .arg(sample_v4())
        .output()
        .expect("run");
    assert!(anthropic.status.success(), "{anthropic:?}");
    let request: Value = serde_json::from_slice(&anthropic.stdout).expect("json");
    assert_eq!(
        request["system"],
        "You are a careful coding agent.\n\nread_file is available."
    );
    let messages = request["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages
        .iter()
        .map(|message| message["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "call-1");
}

#[test]
fn writing_commands_refuse_a_v4_log_and_leave_it_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("session.v4.jsonl");
    let bytes = std::fs::read(sample_v4()).expect("sample");
    std::fs::write(&file, &bytes).expect("write");
    for args in [
        vec!["repair"],
        vec!["compact", "--offline"],
        vec!["migrate"],
    ] {
        let output = strata().args(&args).arg(&file).output().expect("run");
        assert!(!output.status.success(), "{args:?} wrote a V4 log");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("v4 log") && !stderr.contains("run `strata migrate`"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(std::fs::read(&file).expect("read"), bytes);
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .flatten()
        .map(|entry| entry.file_name())
        .collect();
    assert_eq!(entries.len(), 1, "nothing written beside it: {entries:?}");
}

#[test]
fn a_v4_log_is_kept_by_sqlite_and_refused_by_a_jsonl_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = imported_sample(dir.path());
    strata()
        .args(["validate", "sample-v4", "--store"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("ok (15 events, 6 surface nodes"));
    assert_eq!(
        exported_sample(&db, dir.path()),
        std::fs::read(sample_v4()).expect("sample"),
        "a V4 log round-trips through SQLite byte for byte"
    );
    let root = dir.path().join("jsonl");
    strata()
        .arg("convert")
        .arg(sample_v4())
        .arg(format!("jsonl:{}", root.display()))
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "is a v4 log; this JSONL store keeps v3 logs",
        ));
}

#[test]
fn the_agent_does_not_resume_a_v4_session() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = imported_sample(dir.path());
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"responses": [{"events": [{"type": "text_delta", "text": "Hello."}, {"type": "finish", "reason": "stop"}]}]}"#,
    )
    .expect("script");
    strata()
        .args([
            "run",
            "hello",
            "--resume",
            "--session",
            "sample-v4",
            "--store",
        ])
        .arg(&db)
        .arg("--model-script")
        .arg(&script)
        .arg("--workdir")
        .arg(dir.path())
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "a v4 session is read, not written",
        ));
    // Nothing was appended: the exported log is the sample, byte for byte.
    assert_eq!(
        exported_sample(&db, dir.path()),
        std::fs::read(sample_v4()).expect("sample")
    );
}
