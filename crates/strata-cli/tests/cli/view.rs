//! `strata inspect`, `messages --format/--at`, `repair` and `fork` end to end (issue 7): exit
//! codes, `--json` shapes, refusals, and golden outputs of `inspect`, `surface` and `messages`
//! on the logs the repo ships.
//!
//! Golden files live in `tests/golden/`; `STRATA_BLESS=1 cargo test -p strata-cli --test cli
//! view` rewrites them from the current output. Commands run from the repository root with
//! relative paths, so the outputs name the fixtures the same way on every machine.

use std::path::{Path, PathBuf};

use strata_store::{Compression, Store};

use super::*;

/// The repository root, where golden commands run.
fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `strata` with no store or colour settings inherited from the environment, and a scratch
/// home so that a bare id never reaches a real default store.
fn quiet(home: &Path) -> Command {
    let mut command = strata();
    command
        .env("STRATA_HOME", home.join("home"))
        .env_remove("STRATA_STORE")
        .env_remove("STRATA_DATABASE_URL")
        .env("NO_COLOR", "1");
    command
}

/// Runs `command`, asserting its exit code, and returns stdout and stderr.
fn run(command: &mut Command, code: i32) -> (String, String) {
    let output = command.output().expect("run strata");
    let stdout = String::from_utf8(output.stdout).expect("utf8 stdout");
    let stderr = String::from_utf8(output.stderr).expect("utf8 stderr");
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

/// Runs `command`, asserting its exit code, and parses stdout as one JSON line.
fn run_json(command: &mut Command, code: i32) -> Value {
    let (stdout, stderr) = run(command, code);
    assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout}{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("not JSON ({error}): {stdout}"))
}

/// The first `n_lines` lines of the sample (the header and seqs `0..n_lines - 1`) in a file.
fn sample_prefix(dir: &Path, n_lines: usize, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(sample()).expect("sample");
    let kept: String = text
        .lines()
        .take(n_lines)
        .map(|line| format!("{line}\n"))
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, kept).expect("write prefix");
    path
}

/// Imports `file` into a raw JSONL store under `dir` and returns the session file in the
/// store layout.
fn in_jsonl_store(dir: &Path, file: &Path) -> PathBuf {
    let root = dir.join("root");
    quiet(dir)
        .arg("import")
        .arg(file)
        .arg("--store")
        .arg(format!("jsonl:{}", root.display()))
        .assert()
        .success();
    let store = Store::jsonl(&root, Compression::None);
    PathBuf::from(store.read("sample-session").expect("stored").location)
}

/// Imports `file` into a SQLite store under `dir` and returns its `sqlite://PATH#ID`.
fn in_sqlite_store(dir: &Path, file: &Path) -> String {
    let db = dir.join("store.db");
    quiet(dir)
        .arg("import")
        .arg(file)
        .arg("--store")
        .arg(&db)
        .assert()
        .success();
    format!("sqlite://{}#sample-session", db.display())
}

fn validate_ok(dir: &Path, log: &str) {
    let value = run_json(quiet(dir).args(["validate", "--json", log]), 0);
    assert_eq!(value["ok"], true, "{value}");
}

mod golden {
    //! Exact outputs of `inspect`, `surface` and `messages` on the shipped fixtures.

    use super::*;

    /// Every golden case: the golden file, the subcommand and the fixture (relative to the
    /// repository root). A `.json` golden runs with `--json` and is stored indented.
    const CASES: &[(&str, &str, &str)] = &[
        ("inspect.sample.txt", "inspect", "examples/sample.v3.jsonl"),
        ("inspect.sample.json", "inspect", "examples/sample.v3.jsonl"),
        ("surface.sample.txt", "surface", "examples/sample.v3.jsonl"),
        ("surface.sample.json", "surface", "examples/sample.v3.jsonl"),
        (
            "inspect.v0-e500-s11.txt",
            "inspect",
            "fixtures/v0/generated/gen-e500-s11.jsonl",
        ),
        (
            "inspect.v0-e500-s11.json",
            "inspect",
            "fixtures/v0/generated/gen-e500-s11.jsonl",
        ),
        (
            "surface.v0-e500-s11.txt",
            "surface",
            "fixtures/v0/generated/gen-e500-s11.jsonl",
        ),
    ];

    /// Golden `messages` outputs: the file and the arguments after `messages`. Stored byte for
    /// byte, JSON included (an export's or the dsh array's exact spelling is the output), on
    /// the sample (escapes, non-ASCII text, a compacted and a pruned history) and a v0 log.
    const MESSAGES_CASES: &[(&str, &[&str])] = &[
        ("messages.sample.txt", &["examples/sample.v3.jsonl"]),
        (
            "messages.sample.jsonl",
            &["examples/sample.v3.jsonl", "--json"],
        ),
        (
            "messages.sample.openai.json",
            &["examples/sample.v3.jsonl", "--format", "openai"],
        ),
        (
            "messages.sample.anthropic.jsonl",
            &[
                "examples/sample.v3.jsonl",
                "--format",
                "anthropic",
                "--json",
            ],
        ),
        (
            "messages.sample.at-117.txt",
            &["examples/sample.v3.jsonl", "--at", "117"],
        ),
        (
            "messages.sample.at-117.jsonl",
            &["examples/sample.v3.jsonl", "--at", "117", "--json"],
        ),
        (
            "messages.sample.at-117.openai.jsonl",
            &[
                "examples/sample.v3.jsonl",
                "--at",
                "117",
                "--format",
                "openai",
                "--json",
            ],
        ),
        (
            "messages.sample.at-117.anthropic.json",
            &[
                "examples/sample.v3.jsonl",
                "--at",
                "117",
                "--format",
                "anthropic",
            ],
        ),
        (
            "messages.v0-e500-s11.jsonl",
            &["fixtures/v0/generated/gen-e500-s11.jsonl", "--json"],
        ),
        (
            "messages.v0-e500-s11.openai.jsonl",
            &[
                "fixtures/v0/generated/gen-e500-s11.jsonl",
                "--format",
                "openai",
                "--json",
            ],
        ),
        (
            "messages.v0-e500-s11.anthropic.json",
            &[
                "fixtures/v0/generated/gen-e500-s11.jsonl",
                "--format",
                "anthropic",
            ],
        ),
    ];

    /// The only code that compares against golden files: `STRATA_BLESS=1` rewrites them.
    fn check(name: &str, actual: &str) {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(name);
        if std::env::var_os("STRATA_BLESS").is_some_and(|value| value == "1") {
            std::fs::create_dir_all(path.parent().expect("golden dir")).expect("golden dir");
            std::fs::write(&path, actual).expect("bless golden");
            return;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!("{}: {error}; create it with STRATA_BLESS=1", path.display())
        });
        if actual == expected {
            return;
        }
        let first_difference = actual
            .lines()
            .zip(expected.lines())
            .position(|(got, want)| got != want)
            .unwrap_or_else(|| actual.lines().count().min(expected.lines().count()));
        panic!(
            "{name} differs from {} at line {}:\n  want: {:?}\n  got:  {:?}\n\
             (rerun with STRATA_BLESS=1 to accept the new output)",
            path.display(),
            first_difference + 1,
            expected.lines().nth(first_difference).unwrap_or("<end>"),
            actual.lines().nth(first_difference).unwrap_or("<end>"),
        );
    }

    #[test]
    fn inspect_and_surface_match_their_golden_outputs() {
        let scratch = tempfile::tempdir().expect("temp dir");
        for (name, subcommand, fixture) in CASES {
            let json = name.ends_with(".json");
            let mut command = quiet(scratch.path());
            command.current_dir(repo_root()).args([subcommand, fixture]);
            if json {
                command.arg("--json");
            }
            let (stdout, _) = run(&mut command, 0);
            let actual = if json {
                assert_eq!(stdout.lines().count(), 1, "{name}: one JSON line");
                let value: Value = serde_json::from_str(&stdout).expect("json");
                serde_json::to_string_pretty(&value).expect("pretty") + "\n"
            } else {
                stdout
            };
            check(name, &actual);
        }
    }

    #[test]
    fn messages_match_their_golden_outputs() {
        let scratch = tempfile::tempdir().expect("temp dir");
        for (name, args) in MESSAGES_CASES {
            let mut command = quiet(scratch.path());
            command.current_dir(repo_root()).arg("messages").args(*args);
            let (stdout, _) = run(&mut command, 0);
            check(name, &stdout);
        }
    }
}

mod inspect {
    use super::*;

    #[test]
    fn json_counts_add_up_and_name_every_replacement() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let value = run_json(
            quiet(scratch.path())
                .arg("inspect")
                .arg(sample())
                .arg("--json"),
            0,
        );
        assert_eq!(value["generation"], "v3");
        assert_eq!(value["header"]["id"], "sample-session");
        assert_eq!(value["events"], 132);
        assert_eq!(value["fileSize"], 39_381);
        assert_eq!(value["compression"], "none");
        let counted: u64 = value["counts"]
            .as_object()
            .expect("counts")
            .values()
            .map(|count| count.as_u64().expect("count"))
            .sum();
        assert_eq!(counted, 132);
        assert_eq!(value["counts"]["assistant/message"], 20);
        assert_eq!(
            (value["turns"].clone(), value["steps"].clone()),
            (8.into(), 20.into())
        );
        assert_eq!(value["openTurn"], Value::Null);
        assert_eq!(value["surface"]["nodes"], 6);
        assert_eq!(value["surface"]["replacements"], 3);
        let shadowed = value["shadowed"].as_array().expect("shadowed");
        assert_eq!(value["surface"]["shadowed"], shadowed.len());
        assert_eq!(shadowed[0], serde_json::json!({"seq": 3, "by": 45}));
        let replacements = value["replacements"].as_array().expect("replacements");
        assert_eq!(replacements.len(), 3);
        assert_eq!(replacements[1]["seq"], 89);
        assert_eq!(replacements[1]["shadowed"], serde_json::json!([73]));
        assert_eq!(value["usage"]["inputTokens"], 21_322);
        assert_eq!(value["usage"]["outputTokens"], 2_808);
        assert_eq!(value["stepsWithUsage"], 20);
    }

    #[test]
    fn a_stored_session_has_no_file_size() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let reference = in_sqlite_store(scratch.path(), &sample());
        let value = run_json(
            quiet(scratch.path()).args(["inspect", "--json", &reference]),
            0,
        );
        assert_eq!(value["events"], 132);
        assert_eq!(value["fileSize"], Value::Null);
        let (text, _) = run(quiet(scratch.path()).args(["inspect", &reference]), 0);
        assert!(text.contains("file size     - (not a file)"), "{text}");
    }

    #[test]
    fn a_crashed_log_shows_its_open_turn() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let cut = sample_prefix(scratch.path(), 45, "cut.jsonl");
        let value = run_json(
            quiet(scratch.path()).arg("inspect").arg(&cut).arg("--json"),
            0,
        );
        assert_eq!(value["openTurn"], 4);
        let (text, _) = run(quiet(scratch.path()).arg("inspect").arg(&cut), 0);
        assert!(text.contains("open turn     turn 4"), "{text}");
    }

    #[test]
    fn a_rejected_log_exits_one_and_a_missing_file_two() {
        let bad = mutated(50, |l| {
            l.replace("\"surfaceOp\":\"append\"", "\"surfaceOp\":\"apend\"")
        });
        let scratch = tempfile::tempdir().expect("temp dir");
        let value = run_json(
            quiet(scratch.path())
                .arg("inspect")
                .arg(bad.path())
                .arg("--json"),
            1,
        );
        assert_eq!(value["ok"], false);
        assert_eq!(value["error"]["rule"], "invalid-surfaceop");
        let (_, stderr) = run(
            quiet(scratch.path()).args(["inspect", "no/such/session.v3.jsonl"]),
            2,
        );
        assert!(stderr.contains("no/such/session.v3.jsonl"), "{stderr}");
    }
}

mod messages_format {
    use super::*;

    #[test]
    fn openai_is_a_chat_completions_request() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let value = run_json(
            quiet(scratch.path())
                .args(["messages", "--format", "openai", "--json"])
                .arg(sample()),
            0,
        );
        assert_eq!(value["model"], "deepseek-chat");
        let messages = value["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 6);
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(messages[4]["role"], "tool");
        // Without --json the same request is indented.
        let (text, _) = run(
            quiet(scratch.path())
                .args(["messages", "--format", "openai"])
                .arg(sample()),
            0,
        );
        assert_eq!(serde_json::from_str::<Value>(&text).expect("json"), value);
        assert!(text.lines().count() > 1);
    }

    #[test]
    fn anthropic_joins_the_system_prompt_and_alternates_roles() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let value = run_json(
            quiet(scratch.path())
                .args(["messages", "--format", "anthropic", "--json"])
                .arg(sample()),
            0,
        );
        assert_eq!(value["system"], "You are a careful coding agent.");
        assert_eq!(value["max_tokens"], 8192);
        let roles: Vec<&str> = value["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|message| message["role"].as_str().expect("role"))
            .collect();
        assert!(roles.windows(2).all(|pair| pair[0] != pair[1]), "{roles:?}");
        assert_eq!(roles.first(), Some(&"user"));
    }

    #[test]
    fn an_unanswered_tool_call_is_refused_with_the_pairing_error() {
        let scratch = tempfile::tempdir().expect("temp dir");
        // Header and seqs 0..=13: the assistant message at seq 12 called a tool, then the log
        // ends (a crash before the result).
        let cut = sample_prefix(scratch.path(), 15, "cut.jsonl");
        for shape in ["openai", "anthropic"] {
            let (stdout, stderr) = run(
                quiet(scratch.path())
                    .args(["messages", "--format", shape])
                    .arg(&cut),
                1,
            );
            assert!(stdout.is_empty(), "{stdout}");
            assert!(
                stderr.contains(&format!("cannot export as {shape}: tool-pairing: ")),
                "{stderr}"
            );
            assert!(
                stderr.contains("tool call \"call-2-1-0\" (read_file) in message \"assistant-2-1\" at seq 12 has no result"),
                "{stderr}"
            );
            assert!(stderr.contains("hint: "), "{stderr}");
        }
        let value = run_json(
            quiet(scratch.path())
                .args(["messages", "--format", "openai", "--json"])
                .arg(&cut),
            1,
        );
        assert_eq!(value["ok"], false);
        assert_eq!(value["error"]["rule"], "tool-pairing");
        assert_eq!(value["error"]["seq"], 12);
        // The dsh shape shows what the log says, paired or not.
        run(
            quiet(scratch.path()).args(["messages", "--json"]).arg(&cut),
            0,
        );
    }

    #[test]
    fn at_seq_is_the_request_as_it_was_then() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let at = |seq: &str, shape: &str, code: i32| {
            run_json(
                quiet(scratch.path())
                    .args(["messages", "--json", "--format", shape, "--at", seq])
                    .arg(sample()),
                code,
            )
        };
        let only_system = at("2", "dsh", 0);
        assert_eq!(only_system.as_array().expect("array").len(), 1);
        assert_eq!(only_system[0]["id"], "system-0");
        // Before the compaction at seq 45 the first turns are still visible.
        let before = at("41", "dsh", 0);
        let ids: Vec<&str> = before
            .as_array()
            .expect("array")
            .iter()
            .map(|message| message["id"].as_str().expect("id"))
            .collect();
        assert_eq!(ids.first(), Some(&"system-0"));
        assert!(ids.contains(&"user-1"), "{ids:?}");
        assert!(ids.len() > 6);
        // Right after the tool call at seq 13 the call has no result yet.
        let refused = at("13", "openai", 1);
        assert_eq!(refused["error"]["rule"], "tool-pairing");
        let answered = at("14", "openai", 0);
        assert_eq!(answered["model"], "deepseek-chat");
        // The last seq is the current request.
        let last = at("131", "dsh", 0);
        let current = run_json(
            quiet(scratch.path())
                .args(["messages", "--json"])
                .arg(sample()),
            0,
        );
        assert_eq!(last, current);
    }

    #[test]
    fn at_a_seq_past_the_end_is_a_usage_error() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let (stdout, stderr) = run(
            quiet(scratch.path())
                .args(["messages", "--at", "132"])
                .arg(sample()),
            2,
        );
        assert!(stdout.is_empty());
        assert!(
            stderr.contains("--at 132: seq-out-of-range: the log holds 132 events (last seq: 131)"),
            "{stderr}"
        );
    }
}

// Issue 22 (defects found by hostile probes): a lone UTF-16 surrogate in a message's text
// passed `validate`, then the message came out `null` (`--json`) or empty (exports).
mod lone_surrogates {
    use super::*;

    /// The sample with `A\ud800B ` at the start of the text of seq 123, the last message the
    /// user typed (a JavaScript slice that cut a surrogate pair leaves such a string).
    fn reproducer() -> tempfile::NamedTempFile {
        mutated(125, |line| {
            assert!(line.contains(r#""seq":123,"#), "{line}");
            line.replacen(r#""text":"tool tab"#, r#""text":"A\ud800B tool tab"#, 1)
        })
    }

    fn stdout_of(args: &[&str], log: &Path) -> String {
        let scratch = tempfile::tempdir().expect("temp dir");
        run(quiet(scratch.path()).args(args).arg(log), 0).0
    }

    #[test]
    fn messages_json_keeps_the_text_as_json_stringify_writes_it() {
        let log = reproducer();
        let scratch = tempfile::tempdir().expect("temp dir");
        validate_ok(scratch.path(), &log.path().display().to_string());
        let text = stdout_of(&["messages", "--json"], log.path());
        assert!(
            text.contains(r#"[{"type":"text","text":"A\ud800B tool tab"#),
            "{text}"
        );
        let messages = strata_core::json::parse(&text).expect("JSON.parse reads it");
        let messages = messages.as_array().expect("array");
        assert_eq!(messages.len(), 6);
        assert!(messages.iter().all(Value::is_object), "{text}");
        // For people, the lone surrogate is the replacement character.
        let text = stdout_of(&["messages"], log.path());
        assert!(text.contains("A\u{FFFD}B tool tab"), "{text}");
    }

    #[test]
    fn openai_and_anthropic_exports_keep_the_text() {
        let log = reproducer();
        let openai = stdout_of(&["messages", "--format", "openai", "--json"], log.path());
        assert!(
            openai.contains(r#"{"role":"user","content":"A\ud800B tool tab"#),
            "{openai}"
        );
        let pretty = stdout_of(&["messages", "--format", "openai"], log.path());
        assert!(
            pretty.contains(r#""content": "A\ud800B tool tab"#),
            "{pretty}"
        );
        assert_eq!(
            strata_core::json::parse(&pretty).expect("json"),
            strata_core::json::parse(&openai).expect("json")
        );
        let anthropic = stdout_of(&["messages", "--format", "anthropic", "--json"], log.path());
        assert!(
            anthropic.contains(r#"{"type":"text","text":"A\ud800B tool tab"#),
            "{anthropic}"
        );
        let pretty = stdout_of(&["messages", "--format", "anthropic"], log.path());
        assert!(pretty.contains(r#""text": "A\ud800B tool tab"#), "{pretty}");
    }
}

mod repair {
    use super::*;

    /// The sample cut inside turn 4, right after `compaction/start` (seq 43): both the turn and
    /// the compaction bracket are open.
    fn crashed_store(dir: &Path) -> PathBuf {
        let cut = sample_prefix(dir, 45, "cut.jsonl");
        in_jsonl_store(dir, &cut)
    }

    #[test]
    fn a_dry_run_prints_the_closers_and_writes_nothing() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let log = crashed_store(scratch.path());
        let before = std::fs::read(&log).expect("read");
        let (text, _) = run(
            quiet(scratch.path())
                .args(["repair", "--dry-run"])
                .arg(&log),
            0,
        );
        assert!(text.contains("would append 3 events"), "{text}");
        assert!(text.contains("compaction/end"), "{text}");
        let value = run_json(
            quiet(scratch.path())
                .args(["repair", "--dry-run", "--json"])
                .arg(&log),
            0,
        );
        assert_eq!(value["dryRun"], true);
        assert_eq!(value["repaired"], false);
        let types: Vec<&str> = value["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|event| event["type"].as_str().expect("type"))
            .collect();
        assert_eq!(types, ["compaction/end", "turn/end", "session/end-seed"]);
        assert_eq!(value["events"][0]["seq"], 44);
        assert_eq!(value["events"][0]["data"]["error"], "interrupted");
        assert_eq!(std::fs::read(&log).expect("read"), before);
    }

    #[test]
    fn repair_closes_a_log_cut_mid_turn_and_a_second_repair_writes_nothing() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let log = crashed_store(scratch.path());
        let value = run_json(
            quiet(scratch.path()).args(["repair", "--json"]).arg(&log),
            0,
        );
        assert_eq!(value["repaired"], true);
        assert_eq!(value["events"].as_array().expect("events").len(), 3);
        let log_text = log.display().to_string();
        validate_ok(scratch.path(), &log_text);
        strata_conformance::format_oracle::assert_accepted(&[&log]);
        let inspected = run_json(
            quiet(scratch.path()).args(["inspect", "--json", &log_text]),
            0,
        );
        assert_eq!(inspected["events"], 47);
        assert_eq!(inspected["openTurn"], Value::Null);
        let repaired = std::fs::read(&log).expect("read");
        let (text, _) = run(quiet(scratch.path()).arg("repair").arg(&log), 0);
        assert!(text.contains("nothing to repair"), "{text}");
        let again = run_json(
            quiet(scratch.path()).args(["repair", "--json"]).arg(&log),
            0,
        );
        assert_eq!(again["repaired"], false);
        assert_eq!(again["events"], serde_json::json!([]));
        assert_eq!(std::fs::read(&log).expect("read"), repaired);
    }

    /// Issue 22: a session file named relative to the working directory (a bare name in its
    /// session directory, or `ID/session.v3.jsonl` from its project directory) had no parents
    /// to walk up to the store root, so the log was refused as "not in a session store layout".
    #[test]
    fn a_session_file_named_relative_to_the_working_directory_is_repaired() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let log = crashed_store(scratch.path());
        let session_dir = log.parent().expect("session dir");
        let name = log.file_name().expect("name").to_str().expect("utf8");
        let value = run_json(
            quiet(scratch.path())
                .current_dir(session_dir)
                .args(["repair", "--json", name]),
            0,
        );
        assert_eq!(value["repaired"], true);
        let project_dir = session_dir.parent().expect("project dir");
        let relative = Path::new(session_dir.file_name().expect("id")).join(name);
        let (text, _) = run(
            quiet(scratch.path())
                .current_dir(project_dir)
                .arg("repair")
                .arg(&relative),
            0,
        );
        assert!(text.contains("nothing to repair"), "{text}");
    }

    #[test]
    fn a_stored_session_is_repaired_through_its_store() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let cut = sample_prefix(scratch.path(), 15, "cut.jsonl");
        let reference = in_sqlite_store(scratch.path(), &cut);
        let value = run_json(
            quiet(scratch.path()).args(["repair", "--json", &reference]),
            0,
        );
        assert_eq!(value["repaired"], true);
        validate_ok(scratch.path(), &reference);
        // The crashed tool call now has a result, so the export goes through.
        run_json(
            quiet(scratch.path()).args(["messages", "--format", "openai", "--json", &reference]),
            0,
        );
    }

    /// Issue 27: a loose file is repaired in place under its own lock; `--dry-run` still
    /// writes nothing.
    #[test]
    fn a_loose_file_is_repaired_in_place_and_a_dry_run_writes_nothing() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let cut = sample_prefix(scratch.path(), 45, "cut.jsonl");
        let before = std::fs::read(&cut).expect("read");
        run(
            quiet(scratch.path())
                .args(["repair", "--dry-run"])
                .arg(&cut),
            0,
        );
        assert_eq!(std::fs::read(&cut).expect("read"), before);
        let value = run_json(
            quiet(scratch.path()).args(["repair", "--json"]).arg(&cut),
            0,
        );
        assert_eq!(value["repaired"], true);
        let after = std::fs::read(&cut).expect("read");
        assert_eq!(&after[..before.len()], &before[..]);
        validate_ok(scratch.path(), cut.to_str().expect("utf8"));
        strata_conformance::format_oracle::assert_accepted(&[&cut]);
    }

    #[test]
    fn a_complete_log_needs_nothing() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let value = run_json(
            quiet(scratch.path())
                .args(["repair", "--dry-run", "--json"])
                .arg(sample()),
            0,
        );
        assert_eq!(value["events"], serde_json::json!([]));
    }
}

mod fork {
    use super::*;

    #[test]
    fn fork_to_a_file_mid_turn_validates_and_names_its_parent() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let out = scratch.path().join("child.session.v3.jsonl");
        // Seq 13 is a tool call whose result (seq 14) the child does not inherit.
        let value = run_json(
            quiet(scratch.path())
                .args(["fork", "--at", "13", "--json", "-o"])
                .arg(&out)
                .arg(sample()),
            0,
        );
        assert_eq!(value["ok"], true);
        assert_eq!(value["at"], 13);
        assert_eq!(value["inherited"], 14);
        assert_eq!(value["file"], out.display().to_string());
        let n_events = value["events"].as_u64().expect("events");
        assert!(
            n_events > 15,
            "marker and closers follow the prefix: {value}"
        );
        let child = run_json(
            quiet(scratch.path()).arg("inspect").arg("--json").arg(&out),
            0,
        );
        assert_eq!(child["header"]["parentSession"], "sample-session");
        assert_eq!(child["header"]["isSeeded"], true);
        assert_eq!(child["header"]["id"], value["id"]);
        assert_eq!(child["events"], n_events);
        assert_eq!(child["openTurn"], Value::Null);
        validate_ok(scratch.path(), &out.display().to_string());
    }

    /// Seq 12 is an assistant message whose tool call was never started: the child closes it
    /// with V3's exact `TOOL_NOT_STARTED` repair, the only result upstream accepts for it (the
    /// fork wrote a `forked-tool-result-…` one, which upstream's released V3 layer refused).
    #[test]
    fn a_fork_cut_before_a_tool_call_started_is_accepted_by_upstream() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let out = scratch.path().join("child.session.v3.jsonl");
        run_json(
            quiet(scratch.path())
                .args(["fork", "--at", "12", "--json", "-o"])
                .arg(&out)
                .arg(sample()),
            0,
        );
        let child = strata_store::read_log(&out).expect("read the fork");
        let closer = child
            .events
            .iter()
            .find(|event| event.type_tag() == Some("tool/result") && event.seq_number() == Some(14))
            .expect("a closer after the marker");
        let data = closer.data().expect("data").into_owned();
        assert_eq!(
            data["message"]["id"],
            "interrupted-tool-result-call-2-1-0-14"
        );
        assert_eq!(data["error"]["code"], "TOOL_NOT_STARTED");
        assert_eq!(
            data["message"]["content"][0]["content"][0]["text"],
            strata_core::repair::TOOL_NOT_STARTED_TEXT
        );
        strata_conformance::format_oracle::assert_accepted(&[&out]);
    }

    #[test]
    fn fork_to_a_zstd_file_and_never_over_an_existing_file() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let out = scratch.path().join("child.session.v3.jsonl.zstd");
        let (text, _) = run(
            quiet(scratch.path())
                .args(["fork", "--at", "60", "-o"])
                .arg(&out)
                .arg(sample()),
            0,
        );
        assert!(text.contains("forked "), "{text}");
        let bytes = std::fs::read(&out).expect("read");
        assert_eq!(bytes.get(..4), Some(&[0x28, 0xB5, 0x2F, 0xFD][..]));
        validate_ok(scratch.path(), &out.display().to_string());
        let (_, stderr) = run(
            quiet(scratch.path())
                .args(["fork", "--at", "10", "-o"])
                .arg(&out)
                .arg(sample()),
            2,
        );
        assert!(stderr.contains("already exists"), "{stderr}");
        assert_eq!(std::fs::read(&out).expect("read"), bytes);
    }

    #[test]
    fn a_seq_past_the_end_names_the_seq_and_the_rule() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let out = scratch.path().join("child.session.v3.jsonl");
        let (_, stderr) = run(
            quiet(scratch.path())
                .args(["fork", "--at", "132", "-o"])
                .arg(&out)
                .arg(sample()),
            2,
        );
        assert!(
            stderr.contains("fork --at 132: INVALID_BOUNDARY: fork boundary 132 does not exist in session \"sample-session\" (last seq: 131)"),
            "{stderr}"
        );
        assert!(!out.exists());
    }

    #[test]
    fn fork_in_a_jsonl_store_creates_a_sibling_session() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let log = in_jsonl_store(scratch.path(), &sample());
        let value = run_json(
            quiet(scratch.path())
                .args(["fork", "--at", "89", "--json"])
                .arg(&log),
            0,
        );
        let child = PathBuf::from(value["file"].as_str().expect("child file"));
        assert!(child.is_file(), "{value}");
        assert_eq!(
            child.parent().and_then(Path::parent),
            log.parent().and_then(Path::parent)
        );
        validate_ok(scratch.path(), &child.display().to_string());
        let inspected = run_json(
            quiet(scratch.path())
                .arg("inspect")
                .arg("--json")
                .arg(&child),
            0,
        );
        assert_eq!(inspected["header"]["parentSession"], "sample-session");
        // At seq 89 the second replacement is inherited with what it shadowed.
        assert_eq!(inspected["surface"]["replacements"], 2);
    }

    #[test]
    fn fork_in_a_sqlite_store_prints_the_new_reference() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let reference = in_sqlite_store(scratch.path(), &sample());
        let value = run_json(
            quiet(scratch.path()).args(["fork", "--at", "20", "--json", &reference]),
            0,
        );
        let id = value["id"].as_str().expect("id");
        let child = value["location"].as_str().expect("location");
        assert!(
            child.starts_with("sqlite://") && child.ends_with(&format!("#{id}")),
            "{value}"
        );
        assert_eq!(value["file"], Value::Null);
        validate_ok(scratch.path(), child);
        let (_, stderr) = run(
            quiet(scratch.path()).args(["fork", "--at", "500", &reference]),
            2,
        );
        assert!(stderr.contains("INVALID_BOUNDARY"), "{stderr}");
    }

    #[test]
    fn a_loose_file_without_output_is_refused() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let (_, stderr) = run(
            quiet(scratch.path())
                .args(["fork", "--at", "5"])
                .arg(sample()),
            2,
        );
        assert!(stderr.contains("pass -o OUT"), "{stderr}");
    }
}
