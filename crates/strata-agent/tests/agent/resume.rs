//! Resume: a process that dies inside a tool body leaves the `tool/call` durable; reopening
//! closes the turn with crash closers (the call's outcome is unknown), the next request says
//! `resume` and carries the closer's text to the model, and the session goes on. Also: a system
//! prompt change replaces node 0 and starts a series.

use std::sync::Arc;

use serde_json::{json, Value};
use strata_agent::agent::{Agent, ReasoningReplay, TurnOutcome};
use strata_agent::llm::{ChatMessage, ScriptedModel};
use strata_agent::tools::{Tool, ToolFuture, ToolInput};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::support::{config, derived, field, of_type, reconstructed_requests, types, Fixture};

const UNKNOWN_OUTCOME: &str = "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.";

/// A tool that never returns, announcing that its body started.
struct Hangs {
    started: Arc<Notify>,
}

impl Tool for Hangs {
    fn name(&self) -> &str {
        "deploy"
    }
    fn description(&self) -> &str {
        "Deploys."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn run<'a>(&'a self, _input: ToolInput<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            self.started.notify_one();
            std::future::pending().await
        })
    }
}

fn script(json: &str) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::from_json_str(json).unwrap())
}

#[tokio::test]
async fn a_crash_inside_a_tool_body_resumes_with_unknown_outcome() {
    let fixture = Fixture::new();
    let first = script(
        r#"{"responses": [{"events": [
            {"type": "text_delta", "text": "Deploying."},
            {"type": "tool_call_delta", "index": 0, "id": "call_d", "name": "deploy", "arguments_delta": "{\"env\":\"prod\"}"},
            {"type": "finish", "reason": "tool_calls"}
        ]}]}"#,
    );
    let started = Arc::new(Notify::new());
    let writer = fixture
        .store
        .create(strata_core::SessionHeader::fresh("s", 1).unwrap())
        .unwrap();
    let tools = fixture.tools().with(Hangs {
        started: started.clone(),
    });
    let mut agent = Agent::new(
        writer,
        first,
        tools,
        fixture.workspace.clone(),
        config("deepseek-chat"),
    );
    let cancel = CancellationToken::new();
    tokio::select! {
        report = agent.run_turn("Deploy it", &cancel) => panic!("the turn ended: {report:?}"),
        () = started.notified() => {}
    }
    // The process dies here: the turn future is gone and nothing more is written.
    drop(agent);
    let crashed = fixture.raw("s");
    let kinds: Vec<&str> = crashed.iter().filter_map(|raw| raw.type_tag()).collect();
    assert_eq!(kinds.last(), Some(&"tool/call"), "{kinds:?}");

    let second = script(
        r#"{"responses": [{"events": [
            {"type": "text_delta", "text": "I will check whether the deploy happened."},
            {"type": "finish", "reason": "stop"}
        ]}]}"#,
    );
    let mut agent = fixture.reopen("s", second.clone(), config("deepseek-chat"));
    let report = agent.run_turn("What happened?", &cancel).await.unwrap();
    assert_eq!((report.turn, report.outcome), (2, TurnOutcome::Completed));
    agent.close().unwrap();

    let session = fixture.load("s");
    let n = crashed.len();
    assert_eq!(
        types(&session)[n..],
        [
            "tool/result",
            "step/end",
            "turn/end",
            "session/end-seed",
            "turn/start",
            "step/start",
            "user/message",
            "request/header",
            "assistant/message",
            "step/end",
            "turn/end",
            "session/end-seed",
        ]
    );
    let closer = &session.events().unwrap()[n];
    assert_eq!(
        field(closer, &["error"]),
        &json!({"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"})
    );
    let call_seq = of_type(&session, "tool/call")[0].seq();
    assert_eq!(closer.sources(), Some(&[call_seq][..]));
    assert_eq!(
        field(&session.events().unwrap()[n + 2], &["reason"]),
        &json!({"kind": "interrupted"})
    );
    let headers = of_type(&session, "request/header");
    assert_eq!(field(headers[1], &["reason"]), "resume");
    // The model is told the outcome is unknown.
    let requests = second.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0]
            .messages
            .contains(&ChatMessage::tool("call_d", UNKNOWN_OUTCOME)),
        "{:?}",
        requests[0].messages
    );
    assert_eq!(
        requests,
        reconstructed_requests(&fixture, "s", ReasoningReplay::default())[1..]
    );
    assert_eq!(
        derived(&session)[1..],
        [
            ("assistant".into(), "Deploying.|call:deploy".into()),
            ("user".into(), format!("tool:{UNKNOWN_OUTCOME}")),
            ("user".into(), "What happened?".into()),
            (
                "assistant".into(),
                "I will check whether the deploy happened.".into()
            ),
        ]
    );
    fixture.assert_logs_accepted();
}

#[tokio::test]
async fn reopening_a_cleanly_closed_session_resumes_without_closers() {
    let fixture = Fixture::new();
    let answer = r#"{"events": [{"type": "text_delta", "text": "ok"}, {"type": "finish", "reason": "stop"}]}"#;
    let model = script(&format!(r#"{{"responses": [{answer}]}}"#));
    let mut agent = fixture.agent("s", model, config("deepseek-chat"));
    agent
        .run_turn("one", &CancellationToken::new())
        .await
        .unwrap();
    agent.close().unwrap();
    let model = script(&format!(r#"{{"responses": [{answer}]}}"#));
    let mut agent = fixture.reopen("s", model, config("deepseek-chat"));
    assert_eq!(agent.journal().writer().added_on_open().len(), 1);
    agent
        .run_turn("two", &CancellationToken::new())
        .await
        .unwrap();
    agent.close().unwrap();
    let session = fixture.load("s");
    assert!(of_type(&session, "tool/result").is_empty());
    let headers = of_type(&session, "request/header");
    let reasons: Vec<&Value> = headers.iter().map(|h| field(h, &["reason"])).collect();
    assert_eq!(reasons, [&json!("initial"), &json!("resume")]);
    assert_eq!(of_type(&session, "turn/end").len(), 2);
    fixture.assert_logs_accepted();
}

#[tokio::test]
async fn a_system_prompt_change_replaces_node_zero_and_starts_a_series() {
    let fixture = Fixture::new();
    let answer = r#"{"events": [{"type": "text_delta", "text": "ok"}, {"type": "finish", "reason": "stop"}]}"#;
    let model = script(&format!(r#"{{"responses": [{answer}, {answer}]}}"#));
    let mut config = config("deepseek-chat");
    config.system_prompt = "Be brief.".into();
    let mut agent = fixture.agent("s", model.clone(), config);
    let cancel = CancellationToken::new();
    agent.run_turn("one", &cancel).await.unwrap();
    agent.set_system_prompt("Be thorough.");
    agent.run_turn("two", &cancel).await.unwrap();
    agent.close().unwrap();
    let session = fixture.load("s");
    assert_eq!(
        types(&session)[9..],
        [
            "turn/start",
            "step/start",
            "system/message",
            "user/message",
            "request/header",
            "assistant/message",
            "step/end",
            "turn/end",
            "session/end-seed"
        ]
    );
    let replacement = &session.events().unwrap()[11];
    let json = replacement.to_json();
    assert!(
        json.contains(r#""surfaceOp":{"op":"replace","startSeq":2,"endSeq":2}"#),
        "{json}"
    );
    assert_eq!(replacement.sources().map(|s| s[0].get()), Some(2));
    assert_eq!(field(&session.events().unwrap()[13], &["reason"]), "series");
    assert_eq!(session.surface().nodes()[0].get(), 11);
    assert_eq!(
        derived(&session)[0],
        ("system".into(), "Be thorough.".into())
    );
    let requests = model.requests();
    assert_eq!(requests[1].messages[0], ChatMessage::system("Be thorough."));
    assert_eq!(
        requests,
        reconstructed_requests(&fixture, "s", ReasoningReplay::default())
    );
    fixture.assert_logs_accepted();
}
