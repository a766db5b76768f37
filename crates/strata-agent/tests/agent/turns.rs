//! Full turns against the local DeepSeek-shaped SSE server: reasoning, parallel tool calls,
//! real built-in tools, and the exact event order of persistence §7.1 in V3 shapes.

use std::sync::Arc;

use serde_json::json;
use strata_agent::agent::{Agent, ReasoningReplay, TurnOutcome};
use strata_agent::llm::HttpChatModel;
use strata_agent::tools::{ToolSet, ToolsConfig};
use strata_core::EventType;
use tokio_util::sync::CancellationToken;

use crate::server::{delta, done, finish, role, usage, Reply, TestServer};
use crate::support::{
    config, derived, field, of_type, reconstructed_requests, types, Fixture, Watch,
};

fn tool_call_reply() -> Reply {
    Reply::sse(vec![
        role(),
        delta(r#"{"content":null,"reasoning_content":"The user wants "}"#),
        delta(r#"{"content":null,"reasoning_content":"the notes."}"#),
        delta(r#"{"content":"Let me look.","reasoning_content":null}"#),
        delta(
            r#"{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"list_dir","arguments":""}}]}"#,
        ),
        delta(
            r#"{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}"#,
        ),
        delta(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\": \".\"}"}}]}"#),
        delta(r#"{"tool_calls":[{"index":1,"function":{"arguments":"th\": \"notes.txt\"}"}}]}"#),
        finish("tool_calls"),
        usage(),
        done(),
    ])
}

fn answer_reply() -> Reply {
    Reply::sse(vec![
        role(),
        delta(r#"{"content":null,"reasoning_content":"Got it."}"#),
        delta(r#"{"content":"Buy ","reasoning_content":null}"#),
        delta(r#"{"content":"milk."}"#),
        finish("stop"),
        usage(),
        done(),
    ])
}

#[tokio::test]
async fn a_turn_with_parallel_tool_calls_round_trips_over_http() {
    let fixture = Fixture::new();
    std::fs::write(
        fixture.work_dir.path().join("notes.txt"),
        "remember the milk",
    )
    .unwrap();
    let server = TestServer::start(vec![tool_call_reply(), answer_reply()]).await;
    let model = Arc::new(HttpChatModel::new(server.config()).unwrap());
    let watch = Arc::new(Watch::default());
    let mut agent = fixture
        .agent("s1", model, config("deepseek-reasoner"))
        .with_observer(watch.clone());
    let report = agent
        .run_turn("What do my notes say?", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.outcome, TurnOutcome::Completed);
    assert_eq!((report.turn, report.n_steps), (1, 2));
    agent.close().unwrap();

    // The stored log validates (restore of what the store holds) and has the §7.1 shape.
    let session = fixture.load("s1");
    assert_eq!(
        types(&session),
        [
            "turn/start",
            "step/start",
            "system/message",
            "user/message",
            "request/header",
            "request/context",
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
            "session/end-seed",
        ]
    );
    let events = session.events().unwrap();
    // No prompt: node 0 is an empty system message, which projects nothing.
    assert_eq!(field(&events[2], &["message", "content"]), &json!([]));
    assert_eq!(session.surface().nodes()[0].get(), 2);
    assert_eq!(field(&events[4], &["reason"]), "initial");
    assert_eq!(
        field(&events[4], &["header", "config"]),
        &json!({"provider": "deepseek", "model": "deepseek-reasoner"})
    );
    assert_eq!(
        field(&events[4], &["header", "tools"])
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    assert_eq!(
        events[5].data(),
        &json!({"provider": "deepseek", "model": "deepseek-reasoner"})
    );
    // Tool results cite their tool/call and come in the model's order.
    for (result, call) in [(9usize, 7usize), (10, 8)] {
        assert_eq!(
            events[result].sources().map(|s| s[0].get()),
            Some(call as u64)
        );
        assert_eq!(
            field(&events[result], &["message", "source", "callId"]),
            field(&events[call], &["callId"])
        );
    }
    assert_eq!(field(&events[7], &["callId"]), "call_0");
    assert_eq!(
        field(&events[8], &["arguments"]),
        "{\"path\": \"notes.txt\"}"
    );
    // The answer embeds its stream and usage; no assistant/chunk events exist.
    assert!(of_type(&session, "assistant/chunk").is_empty());
    let stream = field(&events[6], &["stream"]).as_array().unwrap();
    assert_eq!(stream[1]["type"], "reasoning-chunks");
    assert_eq!(stream[1]["texts"], json!(["The user wants ", "the notes."]));
    assert!(stream
        .iter()
        .any(|record| record["type"] == "tool-call-chunks" && record["id"] == "call_1"));
    assert_eq!(
        field(&events[6], &["usage"]),
        &json!({"inputTokens": 64, "outputTokens": 40, "cacheReadTokens": 0, "reasoningTokens": 12})
    );
    assert_eq!(
        field(&events[15], &["reason"]),
        &json!({"kind": "completed"})
    );
    assert_eq!(
        derived(&session),
        [
            ("user".into(), "What do my notes say?".into()),
            (
                "assistant".into(),
                "thought:The user wants the notes.|Let me look.|call:list_dir|call:read_file"
                    .into()
            ),
            ("user".into(), "tool:notes.txt".into()),
            ("user".into(), "tool:remember the milk".into()),
            ("assistant".into(), "thought:Got it.|Buy milk.".into()),
        ]
    );
    // Each request on the wire is, byte for byte, what the log rebuilds at that point.
    let received = server.received();
    let rebuilt = reconstructed_requests(&fixture, "s1", ReasoningReplay::default());
    assert_eq!(received.len(), 2);
    assert_eq!(rebuilt.len(), 2);
    for (sent, rebuilt) in received.iter().zip(&rebuilt) {
        assert_eq!(sent.body, serde_json::to_vec(rebuilt).unwrap());
    }
    let second: serde_json::Value = serde_json::from_slice(&received[1].body).unwrap();
    assert_eq!(
        second["messages"][2],
        json!({"role": "tool", "tool_call_id": "call_0", "content": "notes.txt"})
    );
    assert_eq!(
        second["messages"][1]["reasoning_content"],
        "The user wants the notes."
    );
    // Every appended event was shown to the observer, in order.
    let seen: Vec<u64> = watch
        .events
        .lock()
        .unwrap()
        .iter()
        .map(|e| e.seq().get())
        .collect();
    assert_eq!(seen, (0..16).collect::<Vec<_>>());
    assert_eq!(
        events
            .iter()
            .filter(|e| *e.event_type() == EventType::ToolResult)
            .count(),
        2
    );
    fixture.assert_logs_accepted();
}

#[tokio::test]
async fn a_second_turn_reuses_the_header_and_a_system_prompt_is_node_zero() {
    let fixture = Fixture::new();
    let server = TestServer::start(vec![
        crate::server::hello_reply(),
        crate::server::hello_reply(),
    ])
    .await;
    let model = Arc::new(HttpChatModel::new(server.config()).unwrap());
    let mut config = config("deepseek-chat");
    config.system_prompt = "You are terse.".into();
    let mut agent = fixture.agent("s2", model, config);
    let cancel = CancellationToken::new();
    agent.run_turn("Hi", &cancel).await.unwrap();
    agent.run_turn("Again", &cancel).await.unwrap();
    agent.close().unwrap();
    let session = fixture.load("s2");
    assert_eq!(
        types(&session),
        [
            "turn/start",
            "step/start",
            "system/message",
            "user/message",
            "request/header",
            "request/context",
            "assistant/message",
            "step/end",
            "turn/end",
            "turn/start",
            "step/start",
            "user/message",
            "assistant/message",
            "step/end",
            "turn/end",
            "session/end-seed",
        ]
    );
    assert_eq!(field(&session.events().unwrap()[9], &["turn"]), 2);
    assert_eq!(
        derived(&session),
        [
            ("system".into(), "You are terse.".into()),
            ("user".into(), "Hi".into()),
            ("assistant".into(), "Hello".into()),
            ("user".into(), "Again".into()),
            ("assistant".into(), "Hello".into()),
        ]
    );
    let second: serde_json::Value = serde_json::from_slice(&server.received()[1].body).unwrap();
    assert_eq!(
        second["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(second["messages"].as_array().map(Vec::len), Some(4));
    fixture.assert_logs_accepted();
}

/// Issue 22 (defects found by hostile probes): the strings a model sends are JavaScript
/// strings, lone surrogates included. The tools get text (a lone surrogate written to a file is
/// U+FFFD, as Node writes it), the log keeps the model's strings as `JSON.stringify` writes
/// them, and a file's characters of the range strata holds lone surrogates in come back as
/// themselves.
#[tokio::test]
async fn lone_surrogates_reach_tools_as_text_and_the_log_as_json_stringify_writes_them() {
    let fixture = Fixture::new();
    std::fs::write(fixture.work_dir.path().join("r.txt"), "x\u{10F800}y").unwrap();
    let calls = Reply::sse(vec![
        role(),
        delta(r#"{"content":"Writing A\ud800B."}"#),
        delta(
            r#"{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"w.txt\",\"content\":\"A\ud800B\"}"}}]}"#,
        ),
        delta(
            r#"{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"r.txt\"}"}}]}"#,
        ),
        finish("tool_calls"),
        usage(),
        done(),
    ]);
    let server = TestServer::start(vec![calls, answer_reply()]).await;
    let model = Arc::new(HttpChatModel::new(server.config()).unwrap());
    let writer = fixture
        .store
        .create(strata_core::SessionHeader::fresh("s1", 1).unwrap())
        .unwrap();
    let tools = ToolSet::builtin(&ToolsConfig {
        allow_write: true,
        ..ToolsConfig::default()
    });
    let mut agent = Agent::new(
        writer,
        model,
        tools,
        fixture.workspace.clone(),
        config("deepseek-chat"),
    );
    let report = agent
        .run_turn("Write it.", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.outcome, TurnOutcome::Completed);
    agent.close().unwrap();

    let session = fixture.load("s1");
    let stored = |kind: &str| -> Vec<String> {
        fixture
            .raw("s1")
            .iter()
            .filter(|event| event.type_tag() == Some(kind))
            .map(|event| event.data_json().unwrap_or_default().to_owned())
            .collect()
    };
    let assistant = stored("assistant/message").join("\n");
    assert!(
        assistant.contains(r#""text":"Writing A\ud800B.""#),
        "{assistant}"
    );
    assert!(
        assistant.contains(r#"\"content\":\"A\ud800B\"}"#),
        "{assistant}"
    );
    let results = stored("tool/result").join("\n");
    let written = std::fs::read(fixture.work_dir.path().join("w.txt"));
    assert_eq!(
        written.ok().as_deref(),
        Some("A\u{FFFD}B".as_bytes()),
        "{results}"
    );
    assert!(results.contains("x\u{10F800}y"), "{results}");
    assert!(!results.contains(r"\ud800"), "{results}");
    // The second request sends the model's own text back as it came.
    let body = String::from_utf8(server.received()[1].body.clone()).unwrap();
    assert!(body.contains(r#""content":"Writing A\ud800B.""#), "{body}");
    drop(session);
    fixture.assert_logs_accepted();
}
