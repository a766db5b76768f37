//! `strata compact` with a model (issue 27 item 3), against a local server that streams like
//! DeepSeek's chat-completions API (the agent's own test server, shared): a summary is
//! written as the library writes one; a 429 is retried; a failure, a summary cut at the token
//! cap and one longer than what it replaces are recorded as failed attempts that leave the
//! surface unchanged and exit 1. Every log written is checked by upstream's released V3 layer.

use std::path::{Path, PathBuf};
use std::process::Output;

use super::llm_server::{delta, done, finish, role, usage, Reply, TestServer};
use super::*;

/// The sample in a raw JSONL store under `dir`: its session file, which a write may open.
fn stored_sample(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    strata()
        .arg("convert")
        .arg(sample())
        .arg(format!("jsonl:{}", root.display()))
        .assert()
        .success();
    root.join("--home-user-project--")
        .join("sample-session")
        .join("session.v3.jsonl")
}

/// A streamed answer whose text is `text`, ending with `reason`.
fn answer(text: &str, reason: &str) -> Reply {
    let chunk = serde_json::json!({ "content": text }).to_string();
    Reply::sse(vec![role(), delta(&chunk), finish(reason), usage(), done()])
}

/// The server's replies, and the requests it received once `compact` is done.
struct Served {
    _runtime: tokio::runtime::Runtime,
    server: TestServer,
}

impl Served {
    fn start(replies: Vec<Reply>) -> Served {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let server = runtime.block_on(TestServer::start(replies));
        Served {
            _runtime: runtime,
            server,
        }
    }

    /// `strata compact FILE extra…` configured for this server through the environment the
    /// agent reads.
    fn compact(&self, file: &Path, extra: &[&str]) -> Output {
        strata()
            .arg("compact")
            .arg(file)
            .args(extra)
            .env("STRATA_BASE_URL", format!("http://{}/", self.server.addr))
            .env("STRATA_API_KEY", "sk-test")
            .env_remove("DEEPSEEK_API_KEY")
            .env_remove("STRATA_MODEL")
            .env("NO_COLOR", "1")
            .output()
            .expect("run strata")
    }

    /// The JSON bodies of the requests received.
    fn bodies(&self) -> Vec<Value> {
        self.server
            .received()
            .iter()
            .map(|received| {
                assert_eq!(received.path, "/chat/completions");
                assert_eq!(received.authorization.as_deref(), Some("Bearer sk-test"));
                serde_json::from_slice(&received.body).expect("a JSON request")
            })
            .collect()
    }
}

/// Every event of the log, as JSON.
fn events(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .expect("log")
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str(line).expect("event"))
        .collect()
}

fn surface(file: &Path) -> Value {
    let output = strata()
        .args(["surface", "--json"])
        .arg(file)
        .output()
        .expect("run");
    assert!(output.status.success());
    serde_json::from_slice(&output.stdout).expect("json")
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|event| event["type"].as_str().unwrap_or_default())
        .collect()
}

#[test]
fn a_model_summary_is_written_as_the_library_writes_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = stored_sample(dir.path());
    let n_before = events(&file).len();
    let served = Served::start(vec![answer(
        "The agent fixed the build; tests pass.",
        "stop",
    )]);
    let output = served.compact(&file, &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("compacted 4 history items into a checkpoint at seq "),
        "{stdout}"
    );
    // The request extends the conversation's: its header's model and settings, the derived
    // messages, then the directive, with tools off.
    let bodies = served.bodies();
    assert_eq!(bodies.len(), 1);
    let request = &bodies[0];
    assert_eq!(request["model"], "deepseek-chat");
    assert_eq!(request["stream"], true);
    assert_eq!(request["tool_choice"], "none");
    assert_eq!(request["max_tokens"], 8192);
    let messages = request["messages"].as_array().expect("messages");
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(
        messages.last().map(|message| &message["role"]),
        Some(&Value::from("user"))
    );
    // Opening for writing adds the end-seed marker, then the library's compaction batch.
    let after = events(&file);
    assert_eq!(
        types(&after[n_before..]),
        [
            "session/end-seed",
            "compaction/start",
            "compaction/summary",
            "user/message",
            "compaction/end"
        ]
    );
    let summary = &after[n_before + 2]["data"];
    assert_eq!(
        summary["summary"][0]["text"],
        "The agent fixed the build; tests pass."
    );
    assert_eq!(summary["model"], "deepseek-chat");
    assert!(after[n_before + 4]["data"].get("error").is_none());
    strata().arg("validate").arg(&file).assert().success();
    strata_conformance::format_oracle::assert_accepted(&[&file]);
}

#[test]
fn a_429_is_retried_and_model_names_the_model_asked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = stored_sample(dir.path());
    let served = Served::start(vec![
        Reply::error(
            429,
            r#"{"error":{"message":"rate limited","type":"rate_limit"}}"#,
        )
        .header("retry-after", "0"),
        answer("Short summary.", "stop"),
    ]);
    let output = served.compact(&file, &["--model", "deepseek-reasoner"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bodies = served.bodies();
    assert_eq!(bodies.len(), 2, "one refusal, one retry");
    assert!(bodies
        .iter()
        .all(|body| body["model"] == "deepseek-reasoner"));
    let after = events(&file);
    let summary = after
        .iter()
        .find(|event| event["type"] == "compaction/summary" && event["seq"].as_u64() > Some(131))
        .expect("a summary");
    assert_eq!(summary["data"]["summary"][0]["text"], "Short summary.");
    assert_eq!(summary["data"]["model"], "deepseek-reasoner");
    strata_conformance::format_oracle::assert_accepted(&[&file]);
}

/// Runs a compaction the model fails in `replies`' way and checks that it was recorded as a
/// failure naming `expected`, with the surface unchanged and exit 1.
fn assert_recorded_failure(replies: Vec<Reply>, expected: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = stored_sample(dir.path());
    let n_before = events(&file).len();
    let surface_before = surface(&file);
    let served = Served::start(replies);
    let output = served.compact(&file, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("compaction failed and was recorded; the conversation is unchanged"),
        "{stderr}"
    );
    assert!(stderr.contains(expected), "{stderr}");
    let after = events(&file);
    assert_eq!(
        types(&after[n_before..]),
        ["session/end-seed", "compaction/start", "compaction/end"]
    );
    let error = after[n_before + 2]["data"]["error"]
        .as_str()
        .expect("compaction/end records the error");
    assert!(error.contains(expected), "{error}");
    assert_eq!(surface(&file), surface_before);
    strata_conformance::format_oracle::assert_accepted(&[&file]);
}

#[test]
fn a_model_failure_is_recorded_and_leaves_the_surface_unchanged() {
    assert_recorded_failure(
        vec![Reply::error(
            400,
            r#"{"error":{"message":"invalid request: bad things","type":"invalid_request_error"}}"#,
        )],
        "bad things",
    );
}

#[test]
fn a_summary_cut_at_the_token_cap_is_refused_and_recorded() {
    assert_recorded_failure(
        vec![answer("An unfinished summ", "length")],
        "summary hit the 8192-token cap",
    );
}

#[test]
fn a_summary_longer_than_what_it_replaces_is_refused_and_recorded() {
    let long = "The agent looked at every file again and again. ".repeat(200);
    assert_recorded_failure(
        vec![answer(&long, "stop")],
        "summary is not smaller than the shadowed content",
    );
}

#[test]
fn a_bad_model_configuration_is_refused_before_the_log_is_opened() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = stored_sample(dir.path());
    let before = std::fs::read(&file).expect("log");
    let output = strata()
        .arg("compact")
        .arg(&file)
        .env("STRATA_BASE_URL", "ftp://nowhere")
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("is not an absolute http or https url"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(std::fs::read(&file).expect("log"), before);
    // --offline and the model flags exclude each other.
    strata()
        .args(["compact", "--offline", "--model", "m"])
        .arg(&file)
        .assert()
        .code(2);
}
