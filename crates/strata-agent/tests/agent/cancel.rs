//! Cancellation: mid-stream the delivered prefix becomes an interrupted `assistant/message`
//! with undispatched calls absent; during tools, running bodies abort and calls not yet started
//! are answered `ABORTED_BEFORE_DISPATCH`. The turn ends `aborted` (reason `user`) either way.

use std::sync::Arc;

use serde_json::{json, Value};
use strata_agent::agent::TurnOutcome;
use strata_agent::llm::{HttpChatModel, ScriptedModel};
use strata_agent::tools::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput};
use tokio_util::sync::CancellationToken;

use crate::server::{delta, role, Part, Reply, TestServer};
use crate::support::{config, derived, field, of_type, types, Fixture, Trigger, Watch};

#[tokio::test]
async fn cancel_mid_stream_keeps_the_delivered_prefix_as_an_interrupted_message() {
    let fixture = Fixture::new();
    let stalled = Reply::sse(vec![
        role(),
        delta(r#"{"content":null,"reasoning_content":"Thinking"}"#),
        delta(r#"{"content":"Partial ","reasoning_content":null}"#),
        delta(
            r#"{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"grep","arguments":"{\"pat"}}]}"#,
        ),
        Part::Stall,
    ]);
    let server = TestServer::start(vec![stalled]).await;
    let model = Arc::new(HttpChatModel::new(server.config()).unwrap());
    let cancel = CancellationToken::new();
    let watch = Arc::new(Watch::cancelling(cancel.clone(), Trigger::Deltas(3)));
    let mut agent = fixture
        .agent("s", model, config("deepseek-reasoner"))
        .with_observer(watch);
    let report = agent.run_turn("Search", &cancel).await.unwrap();
    assert_eq!(report.outcome, TurnOutcome::Aborted);
    agent.close().unwrap();
    let session = fixture.load("s");
    assert_eq!(
        types(&session)[6..],
        [
            "assistant/message",
            "step/end",
            "turn/end",
            "session/end-seed"
        ]
    );
    let message = of_type(&session, "assistant/message")[0];
    assert_eq!(field(message, &["interrupted"]), true);
    assert_eq!(
        field(message, &["message", "content"]),
        &json!([{"type": "reasoning", "text": "Thinking"}, {"type": "text", "text": "Partial "}])
    );
    let stream = field(message, &["stream"]).as_array().unwrap();
    assert!(stream
        .iter()
        .any(|record| record["type"] == "tool-call-chunks"));
    assert_eq!(
        stream.last().map(|record| &record["chunk"]["reason"]),
        Some(&json!({"kind": "aborted", "failure": {"message": "cancelled", "code": "CANCELLED"}}))
    );
    assert!(of_type(&session, "tool/call").is_empty());
    assert_eq!(
        field(of_type(&session, "turn/end")[0], &["reason"]),
        &json!({"kind": "aborted", "reason": {"kind": "user"}})
    );
    assert_eq!(
        derived(&session),
        [
            ("user".into(), "Search".into()),
            ("assistant".into(), "thought:Thinking|Partial ".into())
        ]
    );
    fixture.assert_logs_accepted();
}

#[tokio::test]
async fn cancel_before_any_content_logs_an_attempt() {
    let fixture = Fixture::new();
    let server = TestServer::start(vec![Reply::sse(vec![role(), Part::Stall])]).await;
    let model = Arc::new(HttpChatModel::new(server.config()).unwrap());
    let cancel = CancellationToken::new();
    let watch = Arc::new(Watch::cancelling(
        cancel.clone(),
        Trigger::Event("request/context"),
    ));
    let mut agent = fixture
        .agent("s", model, config("deepseek-chat"))
        .with_observer(watch);
    let report = agent.run_turn("Hi", &cancel).await.unwrap();
    assert_eq!(report.outcome, TurnOutcome::Aborted);
    agent.close().unwrap();
    let session = fixture.load("s");
    assert_eq!(
        types(&session)[6..],
        [
            "assistant/attempt",
            "step/end",
            "turn/end",
            "session/end-seed"
        ]
    );
    assert_eq!(derived(&session), [("user".into(), "Hi".into())]);
    fixture.assert_logs_accepted();
}

/// A tool that cancels the turn itself (the user pressing Ctrl-C while it runs), then waits for
/// the cancellation like a long-running tool would.
struct CancelsWhileRunning;

impl Tool for CancelsWhileRunning {
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Takes a while."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn run<'a>(&'a self, input: ToolInput<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            input.cancel.cancel();
            input.cancel.cancelled().await;
            Err(ToolError::Aborted)
        })
    }
}

/// A tool that finishes at once, whatever the cancellation says.
struct Quick;

impl Tool for Quick {
    fn name(&self) -> &str {
        "quick"
    }
    fn description(&self) -> &str {
        "Returns at once."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn run<'a>(&'a self, _input: ToolInput<'a>) -> ToolFuture<'a> {
        Box::pin(async { Ok(ToolOutput::text("done")) })
    }
}

fn two_calls_script() -> &'static str {
    r#"{"responses": [{"events": [
        {"type": "tool_call_delta", "index": 0, "id": "call_a", "name": "slow", "arguments_delta": "{}"},
        {"type": "tool_call_delta", "index": 1, "id": "call_b", "name": "quick", "arguments_delta": "{}"},
        {"type": "finish", "reason": "tool_calls"}
    ]}]}"#
}

#[tokio::test]
async fn cancel_during_sequential_tools_aborts_the_running_one_and_skips_the_rest() {
    let fixture = Fixture::new();
    let model = Arc::new(ScriptedModel::from_json_str(two_calls_script()).unwrap());
    let mut config = config("deepseek-chat");
    config.parallel_tools = false;
    let writer = fixture
        .store
        .create(strata_core::SessionHeader::fresh("s", 1).unwrap())
        .unwrap();
    let tools = fixture.tools().with(CancelsWhileRunning).with(Quick);
    let mut agent =
        strata_agent::agent::Agent::new(writer, model, tools, fixture.workspace.clone(), config);
    let cancel = CancellationToken::new();
    let report = agent.run_turn("Go", &cancel).await.unwrap();
    assert_eq!(report.outcome, TurnOutcome::Aborted);
    agent.close().unwrap();
    let session = fixture.load("s");
    assert_eq!(
        types(&session)[6..],
        [
            "assistant/message",
            "tool/call",
            "tool/result",
            "tool/call",
            "tool/result",
            "step/end",
            "turn/end",
            "session/end-seed"
        ]
    );
    let results = of_type(&session, "tool/result");
    assert_eq!(
        field(results[0], &["error"]),
        &json!({"name": "AbortError", "code": "ABORTED"})
    );
    assert_eq!(
        field(results[1], &["error"]),
        &json!({"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"})
    );
    assert_eq!(
        results[1].data()["message"]["content"][0]["content"][0]["text"],
        "Error: tool call aborted before dispatch"
    );
    assert_eq!(results[1].data()["message"]["content"][0]["isError"], true);
    // Every call is answered: the surface has no orphan call.
    assert_eq!(
        derived(&session)[2..],
        [
            ("user".into(), "tool:Error: tool call aborted".into()),
            (
                "user".into(),
                "tool:Error: tool call aborted before dispatch".into()
            ),
        ]
    );
    fixture.assert_logs_accepted();
}

#[tokio::test]
async fn cancel_during_parallel_tools_drains_started_bodies() {
    let fixture = Fixture::new();
    let model = Arc::new(ScriptedModel::from_json_str(two_calls_script()).unwrap());
    let writer = fixture
        .store
        .create(strata_core::SessionHeader::fresh("s", 1).unwrap())
        .unwrap();
    let tools = fixture.tools().with(CancelsWhileRunning).with(Quick);
    let mut agent = strata_agent::agent::Agent::new(
        writer,
        model,
        tools,
        fixture.workspace.clone(),
        config("deepseek-chat"),
    );
    let cancel = CancellationToken::new();
    let report = agent.run_turn("Go", &cancel).await.unwrap();
    assert_eq!(report.outcome, TurnOutcome::Aborted);
    agent.close().unwrap();
    let session = fixture.load("s");
    assert_eq!(
        types(&session)[6..],
        [
            "assistant/message",
            "tool/call",
            "tool/call",
            "tool/result",
            "tool/result",
            "step/end",
            "turn/end",
            "session/end-seed"
        ]
    );
    let results = of_type(&session, "tool/result");
    assert_eq!(results[0].data()["error"]["code"], "ABORTED");
    // The quick tool started together with the slow one and its real outcome is committed.
    assert_eq!(results[1].data().get("error"), None);
    assert_eq!(derived(&session)[3], ("user".into(), "tool:done".into()));
    fixture.assert_logs_accepted();
}
