//! Header shapes, the reason decision, and rebuilding a request from a session.

use serde_json::json;
use strata_core::payload::{self, HeaderReason, RequestHeader};
use strata_core::{Candidate, Placement, SessionHeader, SurfaceIntent};

use super::*;

fn call() -> CallConfig {
    let mut call = CallConfig::new("deepseek", "deepseek-chat");
    call.max_tokens = Some(4096);
    call.temperature = Some(0.7);
    call
}

fn tools() -> Vec<Value> {
    vec![json!({"name": "grep", "description": "Search", "parameters": {"type": "object"}})]
}

#[test]
fn header_value_has_config_then_tools_and_omits_empty_tools() {
    assert_eq!(
        header_value(&call(), &tools()).to_string(),
        r#"{"config":{"provider":"deepseek","model":"deepseek-chat","maxTokens":4096,"temperature":0.7},"tools":[{"name":"grep","description":"Search","parameters":{"type":"object"}}]}"#
    );
    let bare = CallConfig::new("deepseek", "deepseek-chat");
    assert_eq!(
        header_value(&bare, &[]).to_string(),
        r#"{"config":{"provider":"deepseek","model":"deepseek-chat"}}"#
    );
}

#[test]
fn header_reasons_follow_session_core_7_2() {
    let desired = header_value(&call(), &tools());
    let other = header_value(&CallConfig::new("deepseek", "deepseek-reasoner"), &tools());
    assert_eq!(
        header_reason(None, &desired, None, 0),
        Some((HeaderReason::Initial, false))
    );
    assert_eq!(
        header_reason(Some(&desired), &desired, None, 3),
        Some((HeaderReason::Resume, false))
    );
    assert_eq!(header_reason(Some(&desired), &desired, Some(3), 3), None);
    assert_eq!(
        header_reason(Some(&desired), &desired, Some(3), 4),
        Some((HeaderReason::Series, false))
    );
    assert_eq!(
        header_reason(Some(&other), &desired, Some(3), 3),
        Some((HeaderReason::Change, false))
    );
    assert_eq!(
        header_reason(Some(&other), &desired, Some(3), 4),
        Some((HeaderReason::Change, true))
    );
}

#[test]
fn context_matches_route_and_window() {
    let mut call = call();
    call.context_window = Some(128_000);
    let payload = strata_core::LogOnlyPayload::into_data(context_payload(&call));
    assert!(context_matches(Some(&payload), &call));
    assert!(!context_matches(None, &call));
    let mut bigger = call.clone();
    bigger.context_window = Some(256_000);
    assert!(!context_matches(Some(&payload), &bigger));
}

#[test]
fn chat_request_reads_the_header_fold_and_derived_messages() {
    let mut session = Session::create(SessionHeader::fresh("s", 1).unwrap()).unwrap();
    assert_eq!(
        chat_request(&session, ReasoningReplay::default()),
        Err(ReconstructError::NoHeader { id: "s".into() })
    );
    let mut call = call();
    call.reasoning_effort = Some("high".into());
    // Inside a turn and step, as the V3 rules require (docs/rules.md S9, R8, R17).
    let events = vec![
        Candidate::log_only(payload::TurnStart { turn: 1 }),
        Candidate::log_only(payload::StepStart { turn: 1, step: 1 }),
        Candidate::surface(
            payload::SystemMessage {
                turn: 1,
                step: 1,
                message: payload::system_message("s0", "Be brief.", "p"),
            },
            SurfaceIntent::append(),
        ),
        Candidate::surface(
            payload::UserMessage {
                message: payload::user_text_message("u0", "hi"),
            },
            SurfaceIntent::append(),
        ),
        Candidate::log_only(RequestHeader {
            header: header_value(&call, &tools()),
            reason: HeaderReason::Initial,
            starts_series: false,
        }),
        Candidate::surface(
            payload::AssistantMessage {
                turn: 1,
                step: 1,
                message: payload::assistant_message(
                    "a0",
                    vec![payload::text_block("hello")],
                    "deepseek",
                    "deepseek-chat",
                ),
                stream: vec![],
                usage: None,
                interrupted: false,
            },
            Placement::append(),
        ),
    ];
    session.append_batch(events, 2).unwrap();
    let request = chat_request(&session, ReasoningReplay::default()).unwrap();
    let mut expected = ChatRequest::new(
        "deepseek-chat",
        vec![
            crate::llm::ChatMessage::system("Be brief."),
            crate::llm::ChatMessage::user("hi"),
            crate::llm::ChatMessage::assistant("hello"),
        ],
    );
    expected.max_tokens = Some(4096);
    expected.temperature = Some(0.7);
    expected.reasoning_effort = Some("high".into());
    expected.tools = vec![ToolDefinition::function(
        "grep",
        "Search",
        json!({"type": "object"}),
    )];
    assert_eq!(request, expected);
    assert_eq!(
        serde_json::to_string(&request).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
}
