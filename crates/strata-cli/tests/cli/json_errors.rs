//! Under `--json` a failure is JSON on stdout as well as text on stderr (issue 22): a consumer
//! that reads only the JSON learns that a log could not be read or a command line was refused,
//! instead of seeing nothing.

use super::*;

/// The JSON objects a run printed on stdout, one per line.
fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("every stdout line is JSON"))
        .collect()
}

#[test]
fn validate_reports_an_unreadable_log_in_its_place_among_the_others() {
    let missing = "/nonexistent/strata/log.jsonl";
    let output = strata()
        .args(["validate", "--json", missing])
        .arg(sample())
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let lines = json_lines(&output.stdout);
    assert_eq!(lines.len(), 2, "one object per log: {lines:?}");
    assert_eq!(lines[0]["ok"], false);
    assert_eq!(lines[0]["file"], missing);
    assert_eq!(lines[0]["error"]["kind"], "io");
    let message = lines[0]["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains("cannot open") && message.contains(missing),
        "{message}"
    );
    assert_eq!(lines[1]["ok"], true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("1 of 2 logs could not be read"), "{stderr}");
}

#[test]
fn viewing_commands_report_an_unreadable_log_as_json() {
    let missing = "/nonexistent/strata/log.jsonl";
    for command in [
        vec!["inspect", "--json", missing],
        vec!["surface", "--json", missing],
        vec!["messages", "--json", missing],
        vec![
            "fork",
            "--json",
            missing,
            "--at",
            "3",
            "-o",
            "/nonexistent/out.jsonl",
        ],
        vec![
            "import",
            "--json",
            missing,
            "--store",
            "/nonexistent/dir/s.db",
        ],
    ] {
        let output = strata().args(&command).output().expect("run");
        assert_eq!(output.status.code(), Some(2), "{command:?}");
        let lines = json_lines(&output.stdout);
        assert_eq!(lines.len(), 1, "{command:?}: {lines:?}");
        assert_eq!(lines[0]["ok"], false, "{command:?}");
        assert_eq!(lines[0]["error"]["kind"], "io", "{command:?}");
        assert!(
            lines[0]["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains(missing)),
            "{command:?}: {lines:?}"
        );
    }
}

#[test]
fn a_refused_command_line_with_json_is_a_usage_error_object() {
    let output = strata()
        .args(["validate", "--json", "--no-such-flag", "x"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let lines = json_lines(&output.stdout);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["error"]["kind"], "usage");
    assert!(
        lines[0]["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("--no-such-flag")),
        "{lines:?}"
    );
    // Help is a request, not an error: plain text, exit 0.
    let help = strata()
        .args(["validate", "--json", "--help"])
        .output()
        .expect("run");
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage:"));
}

#[test]
fn an_os_error_is_named_once() {
    // A directory is not a log: the OS error is in the store's message and is also its source.
    let dir = tempfile::tempdir().expect("dir");
    let output = strata()
        .arg("validate")
        .arg(dir.path())
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let first = stderr.lines().next().unwrap_or_default();
    assert_eq!(
        first.matches("Is a directory").count(),
        1,
        "the OS error once: {first}"
    );
}
