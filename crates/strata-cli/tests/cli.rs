//! End-to-end tests of the `strata` binary: exit codes, text and `--json` shapes.

use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn sample() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/sample.v3.jsonl")
}

fn strata() -> Command {
    Command::cargo_bin("strata").expect("the strata binary is built")
}

/// A copy of the sample with line `line` (1-based) rewritten by `edit`.
fn mutated(line: usize, edit: impl Fn(&str) -> String) -> tempfile::NamedTempFile {
    let text = std::fs::read_to_string(sample()).expect("sample");
    let out: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(index, l)| {
            if index + 1 == line {
                edit(l)
            } else {
                l.to_owned()
            }
        })
        .collect();
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), out.join("\n") + "\n").expect("write");
    file
}

mod validate {
    use super::*;

    #[test]
    fn accepted_log_exits_zero_with_a_summary() {
        strata()
            .args(["validate"])
            .arg(sample())
            .assert()
            .success()
            .stdout(predicate::str::contains(
                "ok (132 events, 6 surface nodes, 3 replacements)",
            ));
    }

    #[test]
    fn rejected_log_exits_one_naming_seq_rule_and_message() {
        let bad = mutated(51, |l| {
            l.replace("\"surfaceOp\":\"append\"", "\"surfaceOp\":\"apend\"")
        });
        strata()
            .arg("validate")
            .arg(bad.path())
            .assert()
            .code(1)
            .stdout(predicate::str::contains(
                ": seq 49: invalid-surfaceop: invalid seed event at index 49: session event \"assistant/message\" carries an invalid surfaceOp",
            ));
    }

    #[test]
    fn json_rejection_has_rule_seq_index_message() {
        let bad = mutated(51, |l| {
            l.replace("\"surfaceOp\":\"append\"", "\"surfaceOp\":\"apend\"")
        });
        let output = strata()
            .args(["validate", "--json"])
            .arg(bad.path())
            .output()
            .expect("run");
        assert_eq!(output.status.code(), Some(1));
        let value: Value = serde_json::from_slice(&output.stdout).expect("json");
        assert_eq!(value["ok"], false);
        assert_eq!(value["error"]["rule"], "invalid-surfaceop");
        assert_eq!(value["error"]["seq"], 49);
        assert_eq!(value["error"]["index"], 49);
        assert_eq!(value["error"]["line"], 51);
    }

    #[test]
    fn many_files_report_each_and_fail_if_any_fails() {
        let bad = mutated(3, |_| "{not json".to_owned());
        strata()
            .arg("validate")
            .arg(bad.path())
            .arg(sample())
            .assert()
            .code(1)
            .stdout(predicate::str::contains("invalid-json"))
            .stdout(predicate::str::contains("sample.v3.jsonl: ok"));
    }

    #[test]
    fn a_torn_final_record_is_accepted_with_a_note_naming_it() {
        let text = std::fs::read(sample()).expect("sample");
        let end_of_line_12 = text
            .iter()
            .enumerate()
            .filter(|(_, byte)| **byte == b'\n')
            .nth(11)
            .map(|(at, _)| at + 1)
            .expect("12 lines");
        let torn = tempfile::NamedTempFile::new().expect("temp");
        std::fs::write(torn.path(), &text[..end_of_line_12 + 40]).expect("write");
        strata()
            .arg("validate")
            .arg(torn.path())
            .assert()
            .success()
            .stdout(predicate::str::contains("ok (11 events"))
            .stderr(predicate::str::contains(format!(
                "ignored an unfinished final record (40 bytes at byte {end_of_line_12})"
            )));
        let output = strata()
            .args(["validate", "--json"])
            .arg(torn.path())
            .output()
            .expect("run");
        let value: Value = serde_json::from_slice(&output.stdout).expect("json");
        assert_eq!(value["tornTail"]["bytes"], 40);
        assert_eq!(value["tornTail"]["offset"], end_of_line_12 as u64);
        let whole = strata()
            .args(["validate", "--json"])
            .arg(sample())
            .output()
            .expect("run");
        let value: Value = serde_json::from_slice(&whole.stdout).expect("json");
        assert_eq!(value["tornTail"], Value::Null);
    }

    #[test]
    fn unreadable_file_exits_two() {
        strata()
            .args(["validate", "/nonexistent/strata/log.jsonl"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("cannot open"));
    }

    #[test]
    fn usage_error_exits_two() {
        strata().args(["validate"]).assert().code(2);
    }
}

mod surface {
    use super::*;

    #[test]
    fn json_lists_nodes_and_replacements_with_shadowed_seqs() {
        let output = strata()
            .args(["surface", "--json"])
            .arg(sample())
            .output()
            .expect("run");
        assert!(output.status.success());
        let value: Value = serde_json::from_slice(&output.stdout).expect("json");
        let nodes: Vec<u64> = value["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .map(|n| n.as_u64().expect("seq"))
            .collect();
        assert_eq!(nodes, [2, 120, 123, 124, 126, 129]);
        let replacements = value["replacements"].as_array().expect("replacements");
        assert_eq!(replacements.len(), 3);
        assert_eq!(replacements[1]["seq"], 89);
        assert_eq!(replacements[1]["startSeq"], 73);
        assert_eq!(replacements[1]["endSeq"], 73);
        assert_eq!(replacements[1]["shadowed"], serde_json::json!([73]));
    }

    #[test]
    fn text_view_shows_each_node() {
        strata()
            .arg("surface")
            .arg(sample())
            .assert()
            .success()
            .stdout(predicate::str::contains("6 surface nodes, 3 replacements"))
            .stdout(predicate::str::contains(
                "replace @89: 73..73 shadowed [73]",
            ));
    }
}

mod messages {
    use super::*;

    #[test]
    fn json_is_the_array_of_projected_messages() {
        let output = strata()
            .args(["messages", "--json"])
            .arg(sample())
            .output()
            .expect("run");
        assert!(output.status.success());
        let value: Value = serde_json::from_slice(&output.stdout).expect("json");
        let messages = value.as_array().expect("array");
        assert_eq!(messages.len(), 6);
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(messages[1]["source"]["plugin"], "compact");
        // Projection is verbatim: the user message is the event's data, key order kept.
        let text = String::from_utf8(output.stdout).expect("utf8");
        assert!(text.contains(
            r#"{"content":[{"type":"text","text":"This is an automatically generated checkpoint."#
        ));
    }

    #[test]
    fn rejected_log_exits_one() {
        let bad = mutated(50, |l| {
            l.replace("\"surfaceOp\":\"append\"", "\"surfaceOp\":\"apend\"")
        });
        strata().arg("messages").arg(bad.path()).assert().code(1);
    }
}

// Damaged logs through every reading command: no panics (fuzz-style, seeded).
#[path = "cli/hostile.rs"]
mod hostile;

// The store commands and store references (issue 3).
#[path = "cli/store.rs"]
mod store;

// `strata compact` and `strata prune` (issue 5).
#[path = "cli/compact.rs"]
mod compact;

// `strata report`: the self-contained HTML page, checked in headless Chromium (issue 7).
#[path = "cli/report.rs"]
mod report;

// Older generations and `strata migrate` (issue 4).
#[path = "cli/migrate.rs"]
mod migrate;

// `strata inspect`, `messages --format/--at`, `repair`, `fork`, and the golden outputs of
// `inspect`, `surface` and `messages` (issue 7).
#[path = "cli/view.rs"]
mod view;

// The PostgreSQL server harness of the store's tests, shared rather than copied.
#[cfg(feature = "postgres")]
#[path = "../../strata-store/tests/integration/pg.rs"]
#[allow(dead_code)]
mod pg;

// PostgreSQL stores, `strata tail` and `strata convert` (issue 8).
#[cfg(feature = "postgres")]
#[path = "cli/postgres.rs"]
mod postgres;

// `strata demo` and `strata completions` (issue 7).
#[path = "cli/demo.rs"]
mod demo;

// The shipped sample: the synth generator's output, accepted by upstream (issue 23).
#[path = "cli/sample.rs"]
mod sample;

// Failures under `--json` are JSON on stdout too (issue 22).
#[path = "cli/json_errors.rs"]
mod json_errors;

// The agent's test server, streaming like DeepSeek's chat-completions API: shared, not copied.
#[path = "../../strata-agent/tests/llm/server.rs"]
#[allow(dead_code)]
mod llm_server;

// `strata compact` with a model, against that server (issue 27).
#[path = "cli/compact_model.rs"]
mod compact_model;

// Any zstd file through the reading commands; writers keep dsh's framing (issue 27).
#[path = "cli/zstd_files.rs"]
mod zstd_files;

// dsh's own session folder as a store (issue 27 item 1).
#[path = "cli/dsh.rs"]
mod dsh;

// In-place maintenance of a loose log file (issue 27 item 2).
#[path = "cli/loose.rs"]
mod loose;

// V4 logs, what dsh writes since 0.1.7, read natively (issue 25).
#[path = "cli/v4.rs"]
mod v4;
