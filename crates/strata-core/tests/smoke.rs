//! Quick end-to-end checks of the core API.
use serde_json::json;
use strata_core::*;

fn raw(value: serde_json::Value) -> RawEvent {
    RawEvent::from_value(value)
}

fn user(seq: u64, op: serde_json::Value, sources: Option<serde_json::Value>) -> RawEvent {
    let mut event = json!({"type":"user/message","seq":seq,"time":0,
        "data":{"content":[{"type":"text","text":format!("u{seq}")}],"source":{"kind":"user"},"role":"user","id":format!("m{seq}")},
        "surfaceOp":op});
    if let Some(sources) = sources {
        event["sourceEventSeqs"] = sources;
    }
    raw(event)
}

#[test]
fn fold_example_of_section_6_5() {
    let fold = fold_surface(vec![
        user(0, json!("append"), None),
        user(1, json!("append"), None),
        user(
            2,
            json!({"op":"replace","startSeq":0,"endSeq":0}),
            Some(json!([0])),
        ),
        user(
            3,
            json!({"op":"replace","startSeq":2,"endSeq":1}),
            Some(json!([2, 1])),
        ),
    ])
    .unwrap();
    let seqs = |v: &[u64]| v.iter().map(|&s| Seq::new(s).unwrap()).collect::<Vec<_>>();
    assert_eq!(fold.nodes, seqs(&[3]));
    assert_eq!(fold.replacements.len(), 2);
    assert_eq!(fold.replacements[0].shadowed, seqs(&[0]));
    assert_eq!(fold.replacements[1].shadowed, seqs(&[2, 1]));
    assert_eq!(fold.replacements[1].start, Seq::new(2).unwrap());
}

#[test]
fn seeded_session_round_trips_and_adds_marker() {
    let header = SessionHeader::fresh("s", 0).unwrap();
    let session = Session::create_seeded(
        header,
        vec![
            user(0, json!("append"), None),
            user(1, json!("append"), None),
        ],
        None,
        SeedOptions::default(),
    )
    .unwrap();
    assert_eq!(session.len(), 3);
    assert_eq!(session.first_live_seq(), 2);
    assert_eq!(session.events()[2].event_type(), &EventType::SessionEndSeed);
    let messages = session.derive_messages();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].id(), "m1");
    let line = session.events()[0].to_json();
    assert_eq!(
        line,
        r#"{"type":"user/message","seq":0,"time":0,"data":{"content":[{"type":"text","text":"u0"}],"source":{"kind":"user"},"role":"user","id":"m0"},"surfaceOp":"append"}"#
    );
}

#[test]
fn rejected_append_changes_nothing() {
    let header = SessionHeader::fresh("s", 0).unwrap();
    let mut session = Session::create(header).unwrap();
    session
        .append(
            Candidate::surface(
                payload::UserMessage {
                    message: payload::user_text_message("a", "hi"),
                },
                SurfaceIntent::append(),
            ),
            5,
        )
        .unwrap();
    let before = session.derive_messages();
    let error = session
        .append(
            Candidate::surface(
                payload::AssistantMessage {
                    turn: 1,
                    step: 1,
                    message: payload::assistant_message(
                        "b",
                        vec![payload::text_block("x")],
                        "p",
                        "m",
                    ),
                    stream: vec![],
                    usage: None,
                    interrupted: false,
                },
                Placement(SurfaceOp::replace(Seq::ZERO, Seq::ZERO)),
            ),
            6,
        )
        .unwrap_err();
    assert_eq!(error.rule, Rule::ReplaceUncoveredSource);
    assert_eq!(
        error.message,
        "surface replace: sourceEventSeqs must include every shadowed surface node; missing 0"
    );
    assert_eq!(session.len(), 1);
    assert_eq!(session.surface().replace_generation(), 0);
    assert_eq!(session.derive_messages(), before);
}

#[test]
fn repair_closes_an_open_turn_with_tool_calls() {
    let header = SessionHeader::fresh("s", 0).unwrap();
    let mut session = Session::create(header).unwrap();
    session
        .append(Candidate::log_only(payload::TurnStart { turn: 1 }), 1)
        .unwrap();
    session
        .append(
            Candidate::log_only(payload::StepStart { turn: 1, step: 1 }),
            2,
        )
        .unwrap();
    session
        .append(
            Candidate::surface(
                payload::AssistantMessage {
                    turn: 1,
                    step: 1,
                    message: payload::assistant_message(
                        "a",
                        vec![
                            payload::tool_call_block("c1", "read", "{}"),
                            payload::tool_call_block("c2", "read", "{}"),
                        ],
                        "p",
                        "m",
                    ),
                    stream: vec![],
                    usage: None,
                    interrupted: false,
                },
                Placement::append(),
            ),
            3,
        )
        .unwrap();
    session
        .append(
            Candidate::log_only(payload::ToolCall {
                turn: 1,
                step: 1,
                call_id: "c1".into(),
                name: "read".into(),
                arguments: "{}".into(),
            }),
            4,
        )
        .unwrap();
    let closers = session.close_open_turn(CloseCause::Interrupted).unwrap();
    let types: Vec<_> = closers
        .iter()
        .map(|e| e.event_type().as_str().to_owned())
        .collect();
    assert_eq!(
        types,
        ["tool/result", "tool/result", "step/end", "turn/end"]
    );
    assert_eq!(closers[0].sources().unwrap(), &[Seq::new(3).unwrap()]);
    assert_eq!(
        closers[0].data()["message"]["id"],
        "interrupted-tool-result-c1-4"
    );
    assert_eq!(closers[1].data()["error"]["code"], "TOOL_NOT_STARTED");
    assert!(closers.iter().all(|e| e.time() == 4));
    assert!(session
        .close_open_turn(CloseCause::Interrupted)
        .unwrap()
        .is_empty());
}
