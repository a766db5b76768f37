//! One test per block type and role: what each surface message becomes on the wire.

use serde_json::json;
use strata_core::payload::{
    assistant_message, system_message, tool_call_block, tool_result_message, user_message,
    user_text_message,
};

use super::*;

fn one(message: &Value) -> Vec<ChatMessage> {
    let mut out = Vec::new();
    convert(message, true, &mut out);
    out
}

#[test]
fn system_text_becomes_a_system_message() {
    let message = system_message("s1", "You are terse.", "p");
    assert_eq!(one(&message), vec![ChatMessage::system("You are terse.")]);
}

#[test]
fn user_text_blocks_are_joined_by_newlines() {
    let message = user_message(
        "u1",
        vec![
            json!({"type": "text", "text": "first"}),
            json!({"type": "text", "text": "second"}),
        ],
        json!({"kind": "user"}),
    );
    assert_eq!(one(&message), vec![ChatMessage::user("first\nsecond")]);
}

#[test]
fn user_attachments_become_placeholders_and_plugin_blocks_are_skipped() {
    let message = user_message(
        "u1",
        vec![
            json!({"type": "image", "attachment": {"id": "img"}}),
            json!({"type": "file", "attachment": {"id": "f"}}),
            json!({"type": "plugin-block", "value": 1}),
            json!({"type": "text", "text": "see above"}),
        ],
        json!({"kind": "user"}),
    );
    assert_eq!(
        one(&message),
        vec![ChatMessage::user(
            "[image attachment omitted]\n[file attachment omitted]\nsee above"
        )]
    );
}

#[test]
fn assistant_text_only() {
    let message = assistant_message(
        "a1",
        vec![json!({"type": "text", "text": "Hi."})],
        "deepseek",
        "m",
    );
    assert_eq!(one(&message), vec![ChatMessage::assistant("Hi.")]);
}

#[test]
fn assistant_reasoning_is_sent_only_when_included() {
    let message = assistant_message(
        "a1",
        vec![
            json!({"type": "reasoning", "text": "hmm"}),
            json!({"type": "text", "text": "Hi."}),
        ],
        "deepseek",
        "m",
    );
    assert_eq!(
        one(&message),
        vec![ChatMessage::Assistant {
            content: "Hi.".into(),
            reasoning_content: Some("hmm".into()),
            tool_calls: vec![],
        }]
    );
    let mut out = Vec::new();
    convert(&message, false, &mut out);
    assert_eq!(out, vec![ChatMessage::assistant("Hi.")]);
}

#[test]
fn assistant_tool_calls_keep_ids_names_and_raw_arguments() {
    let message = assistant_message(
        "a1",
        vec![
            tool_call_block("call_a", "list_dir", "{\"path\":\"src\"}"),
            tool_call_block("call_b", "read_file", "{not json"),
        ],
        "deepseek",
        "m",
    );
    assert_eq!(
        one(&message),
        vec![ChatMessage::Assistant {
            content: String::new(),
            reasoning_content: None,
            tool_calls: vec![
                ToolCall::function("call_a", "list_dir", "{\"path\":\"src\"}"),
                ToolCall::function("call_b", "read_file", "{not json"),
            ],
        }]
    );
}

#[test]
fn tool_results_become_tool_messages_with_their_call_id() {
    let message = tool_result_message(
        "r1",
        "call_a",
        vec![json!({"type": "text", "text": "Cargo.toml\nsrc/"})],
        false,
    );
    assert_eq!(
        one(&message),
        vec![ChatMessage::tool("call_a", "Cargo.toml\nsrc/")]
    );
    let failed = tool_result_message(
        "r2",
        "call_b",
        vec![json!({"type": "text", "text": "Error: tool call aborted"})],
        true,
    );
    assert_eq!(
        one(&failed),
        vec![ChatMessage::tool("call_b", "Error: tool call aborted")]
    );
}

#[test]
fn reasoning_replay_covers_only_the_current_exchange_by_default() {
    let thought = |id: &str, text: &str| {
        assistant_message(
            id,
            vec![
                json!({"type": "reasoning", "text": text}),
                tool_call_block(id, "grep", "{}"),
            ],
            "deepseek",
            "m",
        )
    };
    let messages = vec![
        system_message("s", "sys", "p"),
        user_text_message("u1", "old question"),
        thought("a1", "old thought"),
        tool_result_message(
            "r1",
            "a1",
            vec![json!({"type": "text", "text": "x"})],
            false,
        ),
        user_text_message("u2", "new question"),
        thought("a2", "new thought"),
        tool_result_message(
            "r2",
            "a2",
            vec![json!({"type": "text", "text": "y"})],
            false,
        ),
    ];
    let reasoning_of = |policy| -> Vec<Option<String>> {
        chat_messages(&messages, policy)
            .into_iter()
            .filter_map(|message| match message {
                ChatMessage::Assistant {
                    reasoning_content, ..
                } => Some(reasoning_content),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        reasoning_of(ReasoningReplay::CurrentExchange),
        vec![None, Some("new thought".into())]
    );
    assert_eq!(reasoning_of(ReasoningReplay::Never), vec![None, None]);
    assert_eq!(
        reasoning_of(ReasoningReplay::Always),
        vec![Some("old thought".into()), Some("new thought".into())]
    );
}
