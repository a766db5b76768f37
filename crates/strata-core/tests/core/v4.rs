//! Issue 25: V4 logs restored natively — the test cases of docs/format-v4.md §5 ("Test cases",
//! numbered as there) that the core decides, each a named test.
//!
//! A case is a list of event rows without `seq` and `time`: [`log`] numbers them densely and
//! sets `time = seq + 10`, so a case reads as the events it is about.

use serde_json::{json, Value};
use strata_core::{AcceptError, Generation, RawEvent, Rule, SeedOptions, Session, SessionHeader};

use crate::rejections::V4_ONLY;

/// The plain V4 header of the cases: `{version:4, id:"s", createdAt:1, isSeeded:false,
/// delegationDepth:0}`.
fn h() -> Value {
    json!({"version": 4, "id": "s", "createdAt": 1, "isSeeded": false, "delegationDepth": 0})
}

fn header(value: Value) -> Result<SessionHeader, AcceptError> {
    SessionHeader::from_value(value, Generation::V4)
}

/// Rows numbered from 0 with `time = seq + 10`, decoded from their JSON text as a store reads
/// them (payloads held as text, judged through views).
fn rows(events: &[Value]) -> Vec<RawEvent> {
    events
        .iter()
        .enumerate()
        .map(|(seq, event)| {
            let mut event = event.clone();
            event["seq"] = json!(seq);
            event["time"] = json!(seq + 10);
            RawEvent::from_json_str(&event.to_string()).expect("a JSON row")
        })
        .collect()
}

fn restore_with(header_value: Value, events: &[Value]) -> Result<Session, AcceptError> {
    let options = SeedOptions {
        defer_marker: true,
        ..SeedOptions::default()
    };
    Session::restore(header(header_value)?, rows(events), options)
}

fn restore(events: &[Value]) -> Result<Session, AcceptError> {
    restore_with(h(), events)
}

#[track_caller]
fn accepted(events: &[Value]) -> Session {
    match restore(events) {
        Ok(session) => session,
        Err(error) => panic!("refused: {error} ({})", error.rule),
    }
}

/// Asserts the log is refused under `rule` with a message containing `text`, at `seq`.
#[track_caller]
fn refused(result: Result<Session, AcceptError>, rule: Rule, text: &str, seq: Option<u64>) {
    match result {
        Ok(_) => panic!("accepted; expected {rule}: {text}"),
        Err(error) => {
            assert_eq!(error.rule, rule, "{error}");
            assert!(error.message.contains(text), "{error} lacks {text:?}");
            if seq.is_some() {
                assert_eq!(error.seq, seq, "{error}");
            }
        }
    }
}

fn user(id: &str) -> Value {
    json!({"type": "user/message", "surfaceOp": "append",
           "data": {"id": id, "role": "user", "source": {"kind": "user"},
                    "content": [{"type": "text", "text": "hi"}]}})
}

fn turn_start(turn: u64) -> Value {
    json!({"type": "turn/start", "data": {"turn": turn}})
}

fn step_start(turn: u64, step: u64) -> Value {
    json!({"type": "step/start", "data": {"turn": turn, "step": step}})
}

fn step_end(turn: u64, step: u64) -> Value {
    json!({"type": "step/end", "data": {"turn": turn, "step": step}})
}

fn turn_end(turn: u64, reason: &str) -> Value {
    json!({"type": "turn/end", "data": {"turn": turn, "reason": {"kind": reason}}})
}

fn system(content: Value) -> Value {
    json!({"type": "system/message", "surfaceOp": "append",
           "data": {"turn": 1, "step": 1,
                    "message": {"id": "sys", "role": "system",
                                "source": {"kind": "system-prompt"}, "content": content}}})
}

fn request_header(tools: Value) -> Value {
    let mut header = json!({"config": {"provider": "p", "model": "m"}});
    if !tools.is_null() {
        header["tools"] = tools;
    }
    json!({"type": "request/header", "data": {"header": header, "reason": "initial"}})
}

fn assistant_calling(call_ids: &[&str]) -> Value {
    let content: Vec<Value> = call_ids
        .iter()
        .map(|id| json!({"type": "tool-call", "id": id, "name": "read", "arguments": "{}"}))
        .collect();
    json!({"type": "assistant/message", "surfaceOp": "append",
           "data": {"turn": 1, "step": 1, "stream": [],
                    "message": {"id": "a1", "role": "assistant",
                                "source": {"kind": "model", "provider": "p", "model": "m"},
                                "content": content}}})
}

fn tool_call(call_id: &str) -> Value {
    json!({"type": "tool/call",
           "data": {"turn": 1, "step": 1, "callId": call_id, "name": "read", "arguments": "{}"}})
}

fn tool_result(call_id: &str, id: &str, content: Value) -> Value {
    json!({"type": "tool/result", "surfaceOp": "append",
           "data": {"turn": 1, "step": 1,
                    "message": {"role": "tool", "source": {"kind": "tool", "callId": call_id},
                                "toolCallId": call_id, "content": content, "id": id}}})
}

/// A not-started result as a fork writes it (`forked-tool-result-<callId>-<n>`).
fn fork_result(call_id: &str, n: &str, text_blocks: usize) -> Value {
    let content: Vec<Value> = (0..text_blocks)
        .map(|_| json!({"type": "text", "text": "not started in the fork"}))
        .collect();
    json!({"type": "tool/result", "surfaceOp": "append",
           "data": {"turn": 1, "step": 1,
                    "message": {"role": "tool", "source": {"kind": "tool", "callId": call_id},
                                "toolCallId": call_id, "content": content, "isError": true,
                                "id": format!("forked-tool-result-{call_id}-{n}")},
                    "error": {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}}})
}

fn developer(content: Value, header_seq: Option<u64>) -> Value {
    let mut data = json!({"turn": 1, "step": 1,
                          "message": {"id": "d1", "role": "developer",
                                      "source": {"kind": "tool-registry"}, "content": content}});
    if let Some(seq) = header_seq {
        data["headerSeq"] = json!(seq);
    }
    json!({"type": "developer/message", "surfaceOp": "append", "data": data})
}

/// The opening every step-scoped case starts from: turn 1, step 1 and a system head.
fn opened() -> Vec<Value> {
    vec![turn_start(1), step_start(1, 1), system(json!([]))]
}

fn with(mut head: Vec<Value>, tail: &[Value]) -> Vec<Value> {
    head.extend_from_slice(tail);
    head
}

#[test]
fn v4_01_empty_body_restores_with_no_inherited_events() {
    let session = accepted(&[]);
    assert_eq!(session.generation(), Generation::V4);
    assert_eq!(session.inherited_count(), 0);
}

#[test]
fn v4_02_every_optional_header_field_in_dsh_key_order() {
    let mut value = h();
    value["cwd"] = json!("/a");
    value["parentSession"] = json!("p");
    value["origin"] = json!("subagent");
    value["agentPreset"] = json!("x");
    assert!(header(value).is_ok());
    let built = SessionHeader::new_in(
        strata_core::HeaderSpec {
            id: "s".into(),
            created_at: 1,
            cwd: Some("/a".into()),
            parent_session: Some("p".into()),
            is_seeded: false,
            origin: Some("subagent".into()),
            delegation_depth: 0,
            agent_preset: Some("x".into()),
        },
        Generation::V4,
    )
    .expect("a V4 header");
    let keys: Vec<&str> = built.fields().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "version",
            "id",
            "createdAt",
            "cwd",
            "parentSession",
            "isSeeded",
            "origin",
            "delegationDepth",
            "agentPreset"
        ]
    );
}

#[test]
fn v4_03_a_turn_with_a_tool_round_trip_and_tool_role_messages() {
    let session = accepted(&with(
        opened(),
        &[
            user("u1"),
            request_header(Value::Null),
            assistant_calling(&["c1"]),
            tool_call("c1"),
            tool_result("c1", "r1", json!([{"type": "text", "text": "ok"}])),
            step_end(1, 1),
            turn_end(1, "completed"),
        ],
    ));
    let messages = session.derive_messages();
    let roles: Vec<String> = messages
        .iter()
        .map(|message| message.value()["role"].as_str().unwrap_or("").to_owned())
        .collect();
    // The system head's content is empty: it keeps its node and projects no message.
    assert_eq!(roles, ["user", "assistant", "tool"]);
}

#[test]
fn v4_04_a_tool_result_with_empty_content_and_no_is_error() {
    accepted(&with(
        opened(),
        &[
            assistant_calling(&["c1"]),
            tool_call("c1"),
            tool_result("c1", "r1", json!([])),
        ],
    ));
}

#[test]
fn v4_05_a_developer_message_adding_a_tool_bound_to_a_header() {
    let tools = json!([{"name": "t", "description": "d", "parameters": {}}]);
    accepted(&with(
        opened(),
        &[
            request_header(tools.clone()),
            developer(json!([{"type": "tool-addition", "toolName": "t"}]), Some(3)),
        ],
    ));
    accepted(&with(
        opened(),
        &[
            request_header(tools),
            developer(
                json!([{"type": "tool-addition", "toolName": "t"},
                       {"type": "tool-removal", "toolName": "u"}]),
                Some(3),
            ),
        ],
    ));
}

#[test]
fn v4_06_removal_only_and_empty_developer_messages() {
    accepted(&with(
        opened(),
        &[developer(
            json!([{"type": "tool-removal", "toolName": "t"}]),
            None,
        )],
    ));
    let session = accepted(&with(opened(), &[developer(json!([]), None)]));
    assert_eq!(session.surface().nodes().len(), 2);
    assert_eq!(session.derive_messages().len(), 0);
}

#[test]
fn v4_06b_a_developer_message_projects_with_its_role() {
    let session = accepted(&with(
        opened(),
        &[developer(
            json!([{"type": "text", "text": "be brief"}]),
            None,
        )],
    ));
    let messages = session.derive_messages();
    assert_eq!(messages.len(), 1);
    assert_eq!(
        messages.iter().next().map(|m| m.value()["role"].clone()),
        Some(json!("developer"))
    );
}

#[test]
fn v4_07_a_deferred_tool_without_developer_history() {
    accepted(&with(
        opened(),
        &[request_header(
            json!([{"name": "t", "description": "d", "parameters": {}, "deferLoading": true}]),
        )],
    ));
}

#[test]
fn v4_08_an_unknown_ignorable_event_is_kept_verbatim() {
    let session = accepted(&[json!({"type": "x/y", "ignorable": true, "data": {},
                                    "surfaceOp": {"garbage": 1}, "sourceEventSeqs": "bad"})]);
    assert_eq!(session.len(), 1);
}

#[test]
fn v4_10_and_11_a_fork_result_appended_then_replaced() {
    let mut events = with(
        opened(),
        &[assistant_calling(&["c"]), fork_result("c", "4", 1)],
    );
    assert_eq!(events.len(), 5);
    accepted(&events);
    let mut replacement = fork_result("c", "4", 1);
    replacement["surfaceOp"] = json!({"op": "replace", "startSeq": 4, "endSeq": 4});
    replacement["sourceEventSeqs"] = json!([4]);
    replacement["data"]["message"]["content"] = json!([{"type": "text", "text": "later"}]);
    events.push(replacement);
    accepted(&events);
}

#[test]
fn v4_12_the_crash_repair_result_of_a_call_never_started() {
    let mut repair = fork_result("c", "4", 1);
    repair["data"]["message"]["id"] = json!("interrupted-tool-result-c-4");
    repair["data"]["message"]["content"] =
        json!([{"type": "text", "text": strata_core::repair::TOOL_NOT_STARTED_TEXT}]);
    accepted(&with(opened(), &[assistant_calling(&["c"]), repair]));
}

fn catalog(value: Value) -> Value {
    json!({"type": "subagent/catalog", "data": value})
}

#[test]
fn v4_13_catalog_facts_of_both_payload_versions() {
    accepted(&[
        catalog(json!({"version": 1, "childId": "a", "childCreatedAt": 2, "mode": "unknown"})),
        catalog(json!({"version": 0, "childId": "b", "childCreatedAt": 3, "mode": "one-shot"})),
        catalog(
            json!({"version": 0, "childId": "c", "childCreatedAt": 4, "mode": "continuable",
                       "label": "child task", "extension": {"kept": true}}),
        ),
    ]);
}

#[test]
fn v4_32_each_child_once_among_the_sessions_own_facts() {
    let fact = catalog(json!({"version": 0, "childId": "a", "childCreatedAt": 2,
                              "mode": "one-shot"}));
    refused(
        restore(&[fact.clone(), fact.clone()]),
        Rule::V4Catalog,
        "duplicate catalog child a",
        Some(1),
    );
    // The first copy is the parent's (before the inherited marker), the second the child's own.
    let mut seeded = h();
    seeded["isSeeded"] = json!(true);
    seeded["parentSession"] = json!("p");
    let marker = json!({"type": "session/end-seed", "data": {"inherited": true}});
    assert!(restore_with(seeded, &[fact.clone(), marker, fact]).is_ok());
}

#[test]
fn v4_33_unsupported_catalog_facts() {
    for fact in [
        json!({"version": 0, "childId": "a", "childCreatedAt": 2, "mode": "unknown"}),
        json!({"version": 0, "childId": "a", "childCreatedAt": 2, "mode": "continuable"}),
        json!({"version": 2, "childId": "a", "childCreatedAt": 2, "mode": "one-shot"}),
        json!({"version": 0, "childId": "a", "childCreatedAt": -1, "mode": "one-shot"}),
    ] {
        refused(
            restore(&[catalog(fact)]),
            Rule::V4Catalog,
            "requires a supported versioned catalog fact",
            Some(0),
        );
    }
}

#[test]
fn v4_14_a_compaction_whose_checkpoint_names_its_bracket() {
    let checkpoint = json!({"type": "user/message",
        "surfaceOp": {"op": "replace", "startSeq": 3, "endSeq": 3}, "sourceEventSeqs": [3],
        "data": {"id": "sum", "role": "user",
                 "source": {"kind": "compact-checkpoint", "compactionId": "k", "sourceCommandId": "cmd"},
                 "content": [{"type": "text", "text": "summary"}]}});
    let start = json!({"type": "compaction/start",
                       "data": {"turn": null, "compactionId": "k", "sourceCommandId": "cmd"}});
    let summary = json!({"type": "compaction/summary",
        "data": {"turn": null, "compactionId": "k", "sourceCommandId": "cmd",
                 "shadowedRange": {"start": 3, "end": 3}, "shadowedSeqs": [3],
                 "summary": [{"type": "text", "text": "summary"}]}});
    let end = json!({"type": "compaction/end",
                     "data": {"turn": null, "compactionId": "k", "sourceCommandId": "cmd"}});
    let mut events = with(
        opened(),
        &[user("u1"), step_end(1, 1), turn_end(1, "completed")],
    );
    events.extend([
        start.clone(),
        summary.clone(),
        checkpoint.clone(),
        end.clone(),
    ]);
    accepted(&events);
    // The same checkpoint naming another bracket is refused.
    let mut wrong = checkpoint;
    wrong["data"]["source"]["compactionId"] = json!("other");
    let mut events = with(
        opened(),
        &[user("u1"), step_end(1, 1), turn_end(1, "completed")],
    );
    events.extend([start, summary, wrong, end]);
    refused(
        restore(&events),
        Rule::CheckpointUnmatched,
        "no matching compaction/start",
        Some(8),
    );
}

#[test]
fn v4_15_to_18_headers_v4_refuses() {
    let with_key = |key: &str, value: Value| {
        let mut header = h();
        header[key] = value;
        header
    };
    let invalid = |value: Value, text: &str| match header(value) {
        Ok(_) => panic!("accepted a header; expected {text:?}"),
        Err(error) => {
            assert_eq!(error.rule, Rule::HeaderInvalid, "{error}");
            assert!(error.message.contains(text), "{error} lacks {text:?}");
        }
    };
    invalid(
        with_key("extension", json!({})),
        "format v4 header has unexpected field extension",
    );
    invalid(with_key("origin", json!("headless")), "origin");
    let mut no_depth = h();
    no_depth
        .as_object_mut()
        .map(|fields| fields.remove("delegationDepth"));
    invalid(
        no_depth,
        "format v4 header lacks required field delegationDepth",
    );
    invalid(with_key("cwd", json!("rel/path")), "absolute");
    invalid(
        with_key("seedLength", json!(0)),
        "unexpected field seedLength",
    );
}

#[test]
fn v4_19_a_v3_shaped_tool_result_in_a_v4_log() {
    let mut v3 = tool_result("c1", "r1", json!([]));
    v3["data"]["message"] = json!({"id": "r1", "role": "user",
        "source": {"kind": "tool", "callId": "c1"},
        "content": [{"type": "tool-result", "toolCallId": "c1", "content": []}]});
    let events = with(opened(), &[assistant_calling(&["c1"]), tool_call("c1"), v3]);
    refused(
        restore(&events),
        Rule::V4ToolRole,
        "requires a tool-role message",
        Some(5),
    );
}

#[test]
fn v4_20_a_plugin_source_is_retired() {
    let mut plugin = user("u1");
    plugin["data"]["source"] = json!({"kind": "plugin", "plugin": "acme"});
    refused(
        restore(&[plugin]),
        Rule::V4RetiredSource,
        "requires a producer-owned source kind",
        Some(0),
    );
}

#[test]
fn v4_21_header_system_is_retired_even_empty() {
    let mut header_event = request_header(Value::Null);
    header_event["data"]["header"]["system"] = json!("");
    refused(
        restore(&with(opened(), &[header_event])),
        Rule::V4RetiredSyntax,
        "rejects retired header.system",
        Some(3),
    );
}

#[test]
fn v4_22_and_23_required_retired_and_unknown_types() {
    let dispatch = json!({"type": "tool/code-dispatch", "data": {}});
    refused(
        restore(std::slice::from_ref(&dispatch)),
        Rule::UnknownType,
        "format v4 rejects retired event type \"tool/code-dispatch\" at seq 0",
        Some(0),
    );
    let mut ignorable = dispatch;
    ignorable["ignorable"] = json!(true);
    accepted(&[ignorable]);
    refused(
        restore(&[json!({"type": "x/y", "data": {}})]),
        Rule::UnknownType,
        "format v4 contains unknown event type \"x/y\" at seq 0",
        Some(0),
    );
    // zDSH's fork-only type is unknown to V4; `image/offload` is upstream's.
    refused(
        restore(&[json!({"type": "slots/dispatch", "data": {}})]),
        Rule::UnknownType,
        "unknown event type \"slots/dispatch\"",
        Some(0),
    );
    accepted(&[json!({"type": "image/offload", "data": {"targets": []}})]);
}

#[test]
fn v4_24_a_seq_gap() {
    let mut events = rows(&[turn_start(1), step_start(1, 1)]);
    events[1] = RawEvent::from_json_str(
        r#"{"type":"step/start","seq":2,"time":12,"data":{"turn":1,"step":1}}"#,
    )
    .expect("a JSON row");
    let result = Session::restore(header(h()).expect("header"), events, SeedOptions::default());
    refused(result, Rule::SeqNotContiguous, "", None);
}

#[test]
fn v4_25_header_seq_goes_with_tool_additions_only() {
    refused(
        restore(&with(
            opened(),
            &[developer(
                json!([{"type": "tool-addition", "toolName": "t"}]),
                None,
            )],
        )),
        Rule::V4Developer,
        "require a headerSeq",
        Some(3),
    );
    refused(
        restore(&with(
            opened(),
            &[developer(
                json!([{"type": "tool-removal", "toolName": "t"}]),
                Some(0),
            )],
        )),
        Rule::V4Developer,
        "must omit headerSeq without tool additions",
        Some(3),
    );
}

#[test]
fn v4_26_header_seq_binds_to_an_earlier_header_defining_the_tool_once() {
    let addition = |header_seq: u64| {
        developer(
            json!([{"type": "tool-addition", "toolName": "t"}]),
            Some(header_seq),
        )
    };
    let tool = json!({"name": "t", "description": "d", "parameters": {}});
    let unbound = |events: Vec<Value>, text: &str| {
        let seq = events.len() as u64 - 1;
        refused(restore(&events), Rule::V4DeveloperBinding, text, Some(seq));
    };
    // A later event, a user message, a header without the tool, a header defining it twice,
    // a definition without a string description.
    unbound(
        with(opened(), &[addition(4)]),
        "names no earlier request/header",
    );
    unbound(
        with(opened(), &[user("u1"), addition(3)]),
        "names no earlier request/header",
    );
    let other = json!([{"name": "u", "description": "d", "parameters": {}}]);
    unbound(
        with(opened(), &[request_header(other), addition(3)]),
        "adds tool t its request/header does not define once",
    );
    unbound(
        with(
            opened(),
            &[request_header(json!([tool.clone(), tool])), addition(3)],
        ),
        "adds tool t its request/header does not define once",
    );
    let undescribed = json!([{"name": "t", "description": 1, "parameters": {}}]);
    unbound(
        with(opened(), &[request_header(undescribed), addition(3)]),
        "adds tool t its request/header does not define once",
    );
}

#[test]
fn v4_26b_a_lazy_session_binds_like_a_full_one() {
    // The binding state is relational state, so a checkpoint carries it.
    let tools = json!([{"name": "t", "description": "d", "parameters": {}}]);
    let events = with(opened(), &[request_header(tools)]);
    let session = accepted(&events);
    let checkpoint = session.checkpoint().expect("a checkpoint");
    let relations = checkpoint.relations.clone().expect("relational state");
    let round_trip = strata_core::Relations::from_json(&relations.to_json());
    assert_eq!(round_trip.as_ref(), Some(&relations));
    assert_eq!(
        relations.growing.header_tools.get(&3),
        Some(&vec!["t".to_owned()])
    );
}

#[test]
fn v4_27_tool_changes_name_a_tool_and_carry_no_definition() {
    refused(
        restore(&with(
            opened(),
            &[developer(
                json!([{"type": "tool-addition", "toolName": "t", "tool": {}}]),
                Some(0),
            )],
        )),
        Rule::V4Developer,
        "must omit inline tool definitions",
        Some(3),
    );
    refused(
        restore(&with(
            opened(),
            &[developer(
                json!([{"type": "tool-removal", "toolName": ""}]),
                None,
            )],
        )),
        Rule::V4Developer,
        "requires a non-empty toolName",
        Some(3),
    );
}

#[test]
fn v4_28_tool_changes_outside_a_developer_message() {
    let mut addition = user("u1");
    addition["data"]["content"] = json!([{"type": "tool-addition", "toolName": "t"}]);
    refused(
        restore(&[addition]),
        Rule::V4Developer,
        "require developer role",
        Some(0),
    );
    let mut streamed = assistant_calling(&[]);
    streamed["data"]["stream"] = json!([{"type": "chunk",
        "chunk": {"type": "block-start", "blockType": "tool-addition"}}]);
    refused(
        restore(&with(opened(), &[streamed])),
        Rule::V4Developer,
        "require developer role",
        Some(3),
    );
    let mut role = user("u1");
    role["data"]["role"] = json!("developer");
    refused(
        restore(&[role]),
        Rule::V4Developer,
        "developer/message and developer role must occur together",
        Some(0),
    );
}

#[test]
fn v4_29_defer_loading_is_only_ever_true() {
    refused(
        restore(&with(
            opened(),
            &[request_header(
                json!([{"name": "t", "description": "d", "parameters": {},
                                      "deferLoading": false}]),
            )],
        )),
        Rule::V4Developer,
        "deferLoading must be true when present",
        Some(3),
    );
}

#[test]
fn v4_30_fork_results_in_any_other_shape() {
    let invalid = |result: Value| {
        refused(
            restore(&with(opened(), &[assistant_calling(&["c"]), result])),
            Rule::V4ForkResult,
            "invalid V4 not-started fork result",
            Some(4),
        );
    };
    invalid(fork_result("c", "04", 1));
    invalid(fork_result("c", "3", 1));
    invalid(fork_result("c", "4", 2));
}

#[test]
fn v4_31_a_reworded_crash_repair() {
    let mut repair = fork_result("c", "4", 1);
    repair["data"]["message"]["id"] = json!("interrupted-tool-result-c-4");
    refused(
        restore(&with(opened(), &[assistant_calling(&["c"]), repair])),
        Rule::ToolResultNotRepair,
        "is not the exact TOOL_NOT_STARTED repair",
        Some(4),
    );
}

#[test]
fn v4_34_turn_and_step_nesting() {
    refused(
        restore(&[turn_start(1), step_start(1, 1), turn_end(1, "completed")]),
        Rule::TurnEndCrossesStep,
        "",
        Some(2),
    );
    refused(
        restore(&[turn_start(2)]),
        Rule::TurnStartNumber,
        "",
        Some(0),
    );
}

#[test]
fn v4_35_the_inherited_cut_and_the_seeded_flag_agree() {
    let mut seeded = h();
    seeded["isSeeded"] = json!(true);
    seeded["parentSession"] = json!("p");
    refused(
        restore_with(seeded, &[user("u1")]),
        Rule::SeedMismatch,
        "",
        None,
    );
    let marker = json!({"type": "session/end-seed", "data": {"inherited": true}});
    assert!(restore(&[user("u1"), marker]).is_err());
}

#[test]
fn v4_36_a_generation_4_delivery_marker() {
    let marker = |session: &str, through: u64| {
        json!({"type": "session-log-deepseek/delivery-accepted",
               "data": {"sessionFormatVersion": 4, "sessionId": session, "throughSeq": through}})
    };
    accepted(&[user("u1"), marker("s", 0)]);
    refused(
        restore(&[user("u1"), marker("other", 0)]),
        Rule::DeliveryMarkerWrongSession,
        "names the wrong Session",
        Some(1),
    );
    refused(
        restore(&[user("u1"), marker("s", 1)]),
        Rule::DeliveryMarkerWrongSession,
        "throughSeq must precede its marker",
        Some(1),
    );
    // Other generations' markers are inert.
    let mut v3 = marker("other", 5);
    v3["data"]["sessionFormatVersion"] = json!(3);
    accepted(&[user("u1"), v3]);
}

#[test]
fn v4_37_a_system_message_needs_the_protected_head() {
    let mut late = system(json!([]));
    late["data"]["message"]["id"] = json!("sys2");
    refused(
        restore(&[turn_start(1), step_start(1, 1), user("u1"), late]),
        Rule::SystemWithoutHead,
        "requires a protected first surface head",
        Some(3),
    );
}

#[test]
fn v4_39_a_turn_boundary_inside_an_open_compaction() {
    let start = json!({"type": "compaction/start",
                       "data": {"turn": null, "compactionId": "k", "sourceCommandId": "cmd"}});
    refused(
        restore(&[user("u1"), start.clone(), turn_start(1)]),
        Rule::TurnCrossesCompaction,
        "crosses an open compaction",
        Some(2),
    );
    let end_seed = json!({"type": "session/end-seed", "data": {}});
    accepted(&[user("u1"), start, end_seed, turn_start(1)]);
}

#[test]
fn v4_40_an_ignorable_developer_message_is_still_judged() {
    let mut malformed = developer(json!([]), None);
    malformed["ignorable"] = json!(true);
    malformed["data"]["turn"] = json!(0);
    refused(
        restore(&with(opened(), &[malformed])),
        Rule::V4Developer,
        "turn must be a positive safe integer",
        Some(3),
    );
}

#[test]
fn v4_developer_messages_are_step_scoped() {
    refused(
        restore(&[turn_start(1), developer(json!([]), None)]),
        Rule::V4StepScoped,
        "developer/message does not match an open turn and step",
        Some(1),
    );
}

#[test]
fn v4_system_fields_and_blocks() {
    refused(
        restore(&[
            turn_start(1),
            step_start(1, 1),
            system(json!([{"type": "text"}])),
        ]),
        Rule::V4SystemFields,
        "has an invalid text block",
        Some(2),
    );
}

#[test]
fn v4_tool_role_rules() {
    let mut mismatched = tool_result("c1", "r1", json!([]));
    mismatched["data"]["message"]["toolCallId"] = json!("c2");
    let events = with(
        opened(),
        &[assistant_calling(&["c1"]), tool_call("c1"), mismatched],
    );
    refused(
        restore(&events),
        Rule::V4ToolRole,
        "requires toolCallId matching its tool source",
        Some(5),
    );
    let mut flagged = tool_result("c1", "r1", json!([]));
    flagged["data"]["error"] = json!({"name": "E", "code": "X"});
    let events = with(
        opened(),
        &[assistant_calling(&["c1"]), tool_call("c1"), flagged],
    );
    refused(
        restore(&events),
        Rule::V4ToolRole,
        "carries error metadata for a non-error tool result",
        Some(5),
    );
    let mut wrapped = tool_result("c1", "r1", json!([{"type": "tool-result"}]));
    wrapped["data"]["message"]["id"] = json!("r1");
    let events = with(
        opened(),
        &[assistant_calling(&["c1"]), tool_call("c1"), wrapped],
    );
    refused(
        restore(&events),
        Rule::V4RetiredSyntax,
        "must not contain a released tool-result wrapper",
        Some(5),
    );
}

/// Every V4-only rule has a case above: run each refusing case's log and collect the rules.
#[test]
fn v4_every_v4_rule_is_raised_by_a_case() {
    let mut plugin = user("u1");
    plugin["data"]["source"] = json!({"kind": "plugin", "plugin": "acme"});
    let mut header_event = request_header(Value::Null);
    header_event["data"]["header"]["system"] = json!("");
    let mut mismatched = tool_result("c1", "r1", json!([]));
    mismatched["data"]["message"]["toolCallId"] = json!("c2");
    let logs = [
        vec![plugin],
        with(opened(), &[header_event]),
        vec![
            turn_start(1),
            step_start(1, 1),
            system(json!([{"type": "text"}])),
        ],
        with(
            opened(),
            &[assistant_calling(&["c1"]), tool_call("c1"), mismatched],
        ),
        with(
            opened(),
            &[assistant_calling(&["c"]), fork_result("c", "04", 1)],
        ),
        with(
            opened(),
            &[developer(
                json!([{"type": "tool-removal", "toolName": ""}]),
                None,
            )],
        ),
        vec![turn_start(1), developer(json!([]), None)],
        with(
            opened(),
            &[developer(
                json!([{"type": "tool-addition", "toolName": "t"}]),
                Some(0),
            )],
        ),
        vec![catalog(json!({"version": 9}))],
    ];
    let raised: Vec<Rule> = logs
        .iter()
        .filter_map(|events| restore(events).err().map(|error| error.rule))
        .collect();
    for rule in V4_ONLY {
        assert!(raised.contains(rule), "no case raises {rule}");
    }
}

#[test]
fn v3_logs_keep_the_v3_vocabulary() {
    // developer/message is V4's: a V3 log holding one required is refused as unknown.
    let v3 =
        json!({"version": 3, "id": "s", "createdAt": 1, "isSeeded": false, "delegationDepth": 0});
    let result = Session::restore(
        SessionHeader::from_value(v3, Generation::V3).expect("a V3 header"),
        rows(&[turn_start(1), step_start(1, 1), developer(json!([]), None)]),
        SeedOptions::default(),
    );
    match result {
        Ok(_) => panic!("a V3 log accepted a developer/message"),
        Err(error) => {
            assert_eq!(error.rule, Rule::UnknownType);
            assert!(error
                .message
                .contains("format v2 contains unknown event type"));
        }
    }
}
