//! End-to-end tests of `strata run` and `strata chat` on the built binary: scripted offline
//! turns, the `--json` event stream, a SIGKILL during a tool body followed by `--resume`
//! against a local HTTP model that records what it is told, a stdout closed mid-turn, and
//! Ctrl-C (SIGINT) during a stuck tool and at the chat prompt.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use strata_store::Store;

fn strata() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

fn demo_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../strata-agent/scripts/demo.json")
}

fn write_script(dir: &Path, name: &str, json: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, json).unwrap();
    path
}

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect()
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect()
}

#[test]
fn run_json_prints_every_appended_event_of_the_demo() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("strata.db");
    let output = strata()
        .args([
            "run",
            "What is in this directory?",
            "--json",
            "--session",
            "demo",
        ])
        .arg("--store")
        .arg(&store)
        .arg("--model-script")
        .arg(demo_script())
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = json_lines(&output.stdout);
    assert_eq!(
        types(&events),
        [
            "turn/start",
            "step/start",
            "system/message",
            "user/message",
            "request/header",
            "request/context",
            "assistant/attempt",
            "assistant/message",
            "tool/call",
            "tool/call",
            "tool/result",
            "tool/result",
            "step/end",
            "step/start",
            "assistant/message",
            "step/end",
            "turn/end",
        ]
    );
    let seqs: Vec<u64> = events
        .iter()
        .filter_map(|event| event["seq"].as_u64())
        .collect();
    assert_eq!(seqs, (0..17).collect::<Vec<_>>());
    // What was printed is what was stored, and the stored log validates.
    let session = Store::sqlite(&store).unwrap().load("demo").unwrap();
    for (printed, stored) in events.iter().zip(session.events().unwrap()) {
        assert_eq!(printed.to_string(), stored.to_json());
    }
    assert_eq!(session.derive_messages().len(), 5);
}

#[test]
fn run_refuses_an_existing_session_without_resume() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "s.json",
        r#"{"responses": [{"events": [{"type": "text_delta", "text": "hi"}, {"type": "finish", "reason": "stop"}]}]}"#,
    );
    let store = format!("jsonl:{}", dir.path().join("logs").display());
    let run = |extra: &[&str]| {
        strata()
            .args(["run", "hello", "--session", "s", "--store", &store])
            .arg("--model-script")
            .arg(&script)
            .arg("--workdir")
            .arg(dir.path())
            .args(extra)
            .output()
            .unwrap()
    };
    let first = run(&[]);
    assert!(first.status.success());
    assert_eq!(String::from_utf8_lossy(&first.stdout), "hi\n");
    let again = run(&[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists; pass --resume"));
    let resumed = run(&["--resume"]);
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
}

#[test]
fn chat_runs_a_turn_per_line_until_quit() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "s.json",
        r#"{"responses": [
            {"events": [{"type": "text_delta", "text": "first answer"}, {"type": "finish", "reason": "stop"}]},
            {"events": [{"type": "text_delta", "text": "second answer"}, {"type": "finish", "reason": "stop"}]}
        ]}"#,
    );
    let store = format!("jsonl:{}", dir.path().join("logs").display());
    let mut child = strata()
        .args(["chat", "--session", "c", "--store", &store])
        .arg("--model-script")
        .arg(&script)
        .arg("--workdir")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"one\n\n/system Be brief.\ntwo\n/quit\n")
        .unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "first answer\nsecond answer\n"
    );
    let session = Store::jsonl(dir.path().join("logs"), strata_store::Compression::None)
        .load("c")
        .unwrap();
    let roles: Vec<String> = session
        .derive_messages()
        .iter()
        .map(|message| message.role().to_owned())
        .collect();
    // The empty first prompt was replaced by /system before turn 2.
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant"]);
}

/// A one-shot HTTP server on 127.0.0.1 answering one chat request with `sse`; returns the
/// request body it received.
fn serve_once(sse: String) -> (u16, thread::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut content_length = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    content_length = value.trim().parse().unwrap();
                }
            }
        }
        let mut body = vec![0u8; content_length];
        reader.read_exact(&mut body).unwrap();
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{sse}"
        )
        .unwrap();
        stream.flush().unwrap();
        body
    });
    (port, handle)
}

const UNKNOWN_OUTCOME: &str = "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.";

#[test]
fn sigkill_during_a_tool_call_then_resume_tells_the_model_the_outcome_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let store = dir.path().join("strata.db");
    // The command marks that its body started, then runs long enough to be killed inside.
    let script = write_script(
        dir.path(),
        "deploy.json",
        r#"{"responses": [{"events": [
            {"type": "text_delta", "text": "Deploying."},
            {"type": "tool_call_delta", "index": 0, "id": "call_deploy", "name": "run_command",
             "arguments_delta": "{\"command\": \"touch started && sleep 10\"}"},
            {"type": "finish", "reason": "tool_calls"}
        ]}]}"#,
    );
    let mut child = strata()
        .args([
            "run",
            "Deploy to prod",
            "--json",
            "--session",
            "crash",
            "--allow-commands",
        ])
        .arg("--store")
        .arg(&store)
        .arg("--model-script")
        .arg(&script)
        .arg("--workdir")
        .arg(&work)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Only another process's file can tell us the body started: poll for it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !work.join("started").exists() {
        assert!(Instant::now() < deadline, "the tool body never started");
        assert!(child.try_wait().unwrap().is_none(), "strata exited early");
        thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let crashed = Store::sqlite(&store).unwrap().read("crash").unwrap();
    let last = crashed
        .events
        .last()
        .and_then(|raw| raw.type_tag().map(str::to_owned));
    assert_eq!(last.as_deref(), Some("tool/call"));
    let n_crashed = crashed.events.len();

    let answer = r#"{"choices":[{"index":0,"delta":{"content":"I will verify the deploy first."},"finish_reason":null}]}"#;
    let stop = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    let (port, server) = serve_once(format!(
        "data: {answer}\n\ndata: {stop}\n\ndata: [DONE]\n\n"
    ));
    let output = strata()
        .args([
            "run",
            "Did it work?",
            "--json",
            "--session",
            "crash",
            "--resume",
        ])
        .arg("--store")
        .arg(&store)
        .arg("--workdir")
        .arg(&work)
        .env("STRATA_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("STRATA_API_KEY", "sk-test")
        .env_remove("DEEPSEEK_API_KEY")
        .env("STRATA_MODEL", "deepseek-chat")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = json_lines(&output.stdout);
    assert_eq!(
        types(&events),
        [
            "tool/result",
            "step/end",
            "turn/end",
            "session/end-seed",
            "turn/start",
            "step/start",
            "user/message",
            "request/header",
            "request/context",
            "assistant/message",
            "step/end",
            "turn/end",
        ]
    );
    assert_eq!(events[0]["seq"].as_u64(), Some(n_crashed as u64));
    assert_eq!(events[0]["data"]["error"]["code"], "TOOL_OUTCOME_UNKNOWN");
    assert_eq!(events[2]["data"]["reason"]["kind"], "interrupted");
    assert_eq!(events[7]["data"]["reason"], "resume");
    // The model was told.
    let request: Value = serde_json::from_slice(&server.join().unwrap()).unwrap();
    let told = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|message| {
            message["role"] == "tool"
                && message["tool_call_id"] == "call_deploy"
                && message["content"] == UNKNOWN_OUTCOME
        });
    assert!(told, "{request}");
    // The session continues: the stored log validates and ends with the new turn.
    let session = Store::sqlite(&store).unwrap().load("crash").unwrap();
    let derived = session.derive_messages();
    assert_eq!(derived.last().map(|m| m.role()), Some("assistant"));
    assert_eq!(derived.len(), 5);
}

/// A script answering with 400 KB of text in four deltas: more than a pipe holds, so the
/// answer is still being written when the reader goes away.
fn long_answer(dir: &Path) -> PathBuf {
    let chunk = "x".repeat(100_000);
    let deltas: Vec<Value> = (0..4)
        .map(|_| serde_json::json!({"type": "text_delta", "text": chunk}))
        .chain([serde_json::json!({"type": "finish", "reason": "stop"})])
        .collect();
    let script = serde_json::json!({"responses": [{"events": deltas}]});
    write_script(dir, "long.json", &script.to_string())
}

/// Runs `command` reading one byte of its stdout and then closing it (`… | head -c 1`), with
/// `input` on a stdin that stays open until it exits; returns its exit status and stderr.
fn with_stdout_closed_early(
    command: &mut Command,
    input: &[u8],
) -> (std::process::ExitStatus, String) {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    drop(stdin);
    (status, stderr)
}

/// The stored session ends with its turn closed and validates with `strata validate`.
fn assert_closed_and_valid(db: &Path, id: &str) {
    let log = Store::sqlite(db).unwrap().read(id).unwrap();
    let last = log
        .events
        .last()
        .and_then(|raw| raw.type_tag().map(str::to_owned));
    assert_eq!(last.as_deref(), Some("turn/end"), "{id}");
    let output = strata()
        .arg("validate")
        .arg(format!("sqlite://{}#{id}", db.display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
}

#[test]
fn a_closed_stdout_ends_run_and_chat_quietly_with_the_turn_closed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("strata.db");
    let script = long_answer(dir.path());
    let agent = |args: &[&str]| {
        let mut command = strata();
        command
            .args(args)
            .arg("--store")
            .arg(&db)
            .arg("--model-script")
            .arg(&script)
            .arg("--workdir")
            .arg(dir.path());
        command
    };
    for (id, json) in [("text", false), ("json", true)] {
        let mut command = agent(&["run", "hello", "--session", id]);
        if json {
            command.arg("--json");
        }
        let (status, stderr) = with_stdout_closed_early(&mut command, b"");
        assert_eq!(status.code(), Some(0), "{id}: {stderr}");
        assert!(!stderr.contains("panicked"), "{id}: {stderr}");
        assert_closed_and_valid(&db, id);
    }
    // chat ends by itself: its stdin stays open, and no /quit comes.
    let (status, stderr) =
        with_stdout_closed_early(&mut agent(&["chat", "--session", "chat"]), b"hello\n");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_closed_and_valid(&db, "chat");
}

/// A script whose one tool call runs until the file `go` appears in the workspace (it never
/// does: only a cancellation ends it), after marking that it started.
fn stuck_tool(dir: &Path) -> PathBuf {
    let arguments = serde_json::json!({
        "command": "touch started && while [ ! -e go ]; do sleep 0.05; done"
    });
    let script = serde_json::json!({"responses": [
        {"events": [
            {"type": "tool_call_delta", "index": 0, "id": "call_stuck", "name": "run_command",
             "arguments_delta": arguments.to_string()},
            {"type": "finish", "reason": "tool_calls"}
        ]},
        {"events": [{"type": "text_delta", "text": "unused"}, {"type": "finish", "reason": "stop"}]}
    ]});
    write_script(dir, "stuck.json", &script.to_string())
}

/// Sends SIGINT (Ctrl-C) to `child`.
fn interrupt(child: &std::process::Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -INT failed");
}

/// Waits (at most 60 s) for `file` to appear while `child` runs.
fn wait_for_file(child: &mut std::process::Child, file: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !file.exists() {
        assert!(Instant::now() < deadline, "the tool body never started");
        assert!(child.try_wait().unwrap().is_none(), "strata exited early");
        thread::sleep(Duration::from_millis(10));
    }
}

/// The stored session's last turn ended as cancelled by the user, its tool result `ABORTED`,
/// and the log validates.
fn assert_cancelled_turn(db: &Path, id: &str) {
    assert_closed_and_valid(db, id);
    let session = Store::sqlite(db).unwrap().load(id).unwrap();
    let events = session.events().unwrap();
    let end = events
        .iter()
        .rev()
        .find(|e| e.event_type().as_str() == "turn/end");
    assert_eq!(end.unwrap().data()["reason"]["kind"], "aborted");
    let result = events
        .iter()
        .rev()
        .find(|e| e.event_type().as_str() == "tool/result");
    assert_eq!(result.unwrap().data()["error"]["code"], "ABORTED");
}

#[test]
fn ctrl_c_during_a_stuck_tool_closes_the_turn_and_run_exits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("strata.db");
    let mut child = strata()
        .args(["run", "go", "--session", "stuck", "--allow-commands"])
        .arg("--store")
        .arg(&db)
        .arg("--model-script")
        .arg(stuck_tool(dir.path()))
        .arg("--workdir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&mut child, &dir.path().join("started"));
    interrupt(&child);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("turn 1 of session stuck was cancelled"),
        "{stderr}"
    );
    assert_cancelled_turn(&db, "stuck");
}

#[test]
fn ctrl_c_at_the_chat_prompt_ends_the_chat_while_stdin_stays_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("strata.db");
    let mut child = strata()
        .args(["chat", "--session", "stuck", "--allow-commands"])
        .arg("--store")
        .arg(&db)
        .arg("--model-script")
        .arg(stuck_tool(dir.path()))
        .arg("--workdir")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The stdin pipe stays open and silent: the prompt's read of the next line never returns.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (sender, lines) = std::sync::mpsc::channel();
    thread::spawn(move || {
        for line in stderr.lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    wait_for_file(&mut child, &dir.path().join("started"));
    // The first Ctrl-C cancels the turn...
    interrupt(&child);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .expect("chat never reported the cancel");
        if line.contains("(cancelled)") {
            break;
        }
    }
    // ...and the next, at the prompt, ends the chat. Sent until it exits: one that arrives
    // before the prompt listens for it is not seen.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chat did not exit after Ctrl-C at the prompt");
        }
        interrupt(&child);
        thread::sleep(Duration::from_millis(50));
    };
    drop(stdin);
    assert_eq!(status.code(), Some(0));
    assert_cancelled_turn(&db, "stuck");
}

/// A crash inside a compaction leaves its `compaction/start` open; `run --resume` closes it
/// (`compaction/end {error: "interrupted"}`) before the crashed turn's `turn/end`, so the log
/// stays one upstream's released V3 layer accepts (a closer after the end-seed marker matches
/// no start, and a `turn/end` may not cross an open compaction).
#[test]
fn run_resume_after_a_crash_inside_a_compaction_writes_a_log_upstream_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "s.json",
        r#"{"responses": [
            {"events": [{"type": "text_delta", "text": "hi"}, {"type": "finish", "reason": "stop"}]},
            {"events": [{"type": "text_delta", "text": "again"}, {"type": "finish", "reason": "stop"}]}
        ]}"#,
    );
    let root = dir.path().join("logs");
    let store_flag = format!("jsonl:{}", root.display());
    let run = |prompt: &str, extra: &[&str]| {
        strata()
            .args(["run", prompt, "--session", "s", "--store", &store_flag])
            .arg("--model-script")
            .arg(&script)
            .arg("--workdir")
            .arg(dir.path())
            .args(extra)
            .output()
            .unwrap()
    };
    assert!(run("hello", &[]).status.success());
    let store = Store::jsonl(&root, strata_store::Compression::None);
    let log = store.read("s").unwrap();
    let next = log.events.len();
    let time = log
        .events
        .last()
        .and_then(|raw| raw.time_number())
        .unwrap_or(0);
    // The process died inside turn 2's automatic compaction, after its compaction/start.
    let crashed = [
        format!(r#"{{"type":"turn/start","seq":{next},"time":{time},"data":{{"turn":2}}}}"#),
        format!(
            r#"{{"type":"compaction/start","seq":{},"time":{time},"data":{{"compactionId":"crashed","turn":2}}}}"#,
            next + 1
        ),
    ];
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&log.location)
        .unwrap();
    for line in crashed {
        writeln!(file, "{line}").unwrap();
    }
    drop(file);
    let resumed = run("go on", &["--resume"]);
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let after = store.read("s").unwrap();
    let added: Vec<&str> = after.events[next + 2..]
        .iter()
        .filter_map(|raw| raw.type_tag())
        .take(3)
        .collect();
    assert_eq!(added, ["compaction/end", "turn/end", "session/end-seed"]);
    strata_conformance::format_oracle::assert_accepted(&[&after.location]);
}
