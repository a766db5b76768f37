//! §11.7 `derived-cache.spec`: the incremental derived-message cache (§7.1).
//!
//! Skipped from §11.7: `seq-ranges.spec` (the §10.1 codec lives in
//! strata-store), `tool-history.spec` and `developer-header.spec` (V4 only).

use std::sync::Arc;

use serde_json::json;
use strata_core::{payload, Candidate, Placement, RawEvent, Seq, Session, SurfaceIntent};

use crate::harness::{candidate, header, live, parse_json, rows, scratch_messages};

/// The messages of a fresh restore of `session`'s log: the from-scratch answer.
fn replayed_messages(session: &Session) -> Vec<serde_json::Value> {
    let replay = Session::restore(
        header("replay"),
        session.to_raw_events().unwrap(),
        crate::harness::SURFACE_ONLY,
    )
    .unwrap();
    scratch_messages(&replay)
        .iter()
        .map(|message| message.value().clone())
        .collect()
}

fn values(session: &Session) -> Vec<serde_json::Value> {
    session
        .derive_messages()
        .iter()
        .map(|message| message.value().clone())
        .collect()
}

// §11.7 derived-cache: the cache equals a from-scratch replay at every length
// of a growing log, including an empty assistant message that only carries usage.
#[test]
fn derived_cache_equals_scratch_replay_as_the_log_grows() {
    let log = rows(
        r#"
{"$":"TS"}
{"$":"SS"}
{"$":"S","$text":"prompt"}
{"$":"U"}
{"$":"A","$text":"","$data":{"usage":{"outputTokens":0}}}
{"$":"AT"}
{"$":"A","$calls":["c1"]}
{"$":"TC"}
{"$":"T","sourceEventSeqs":[7]}
{"$":"SE"}
{"$":"TE"}
{"$":"U","surfaceOp":{"op":"replace","startSeq":3,"endSeq":8},"sourceEventSeqs":[3,4,6,8]}
{"$":"U"}
"#,
    );
    let mut session = crate::harness::create(header("s")).unwrap();
    for (index, row) in log.iter().enumerate() {
        let (candidate, time) = candidate(&parse_json(row), index).unwrap();
        session.append(candidate, time).unwrap();
        assert_eq!(
            values(&session),
            replayed_messages(&session),
            "after seq {index}"
        );
    }
    assert_eq!(session.derive_messages().len(), 3);
}

// §11.7 derived-cache: a replacement rebuilds the cache; an array returned
// before it keeps its two items.
#[test]
fn derived_cache_rebuilds_after_replace_and_old_snapshots_keep_their_items() {
    let mut session = live("s", &rows("{\"$\":\"U\"}\n{\"$\":\"U\"}"));
    let before = session.derive_messages();
    assert_eq!(before.len(), 2);
    let summary = Candidate::surface(
        payload::UserMessage {
            message: payload::user_text_message("sum", "compacted"),
        },
        SurfaceIntent::replace(
            Seq::ZERO,
            Seq::new(1).unwrap(),
            vec![Seq::ZERO, Seq::new(1).unwrap()],
        ),
    );
    session.append(summary, 2).unwrap();
    let after = session.derive_messages();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].id(), "sum");
    assert_eq!(before.len(), 2);
    assert_eq!(before[1].id(), "m1");
}

// §11.7 derived-cache: fresh snapshots share the messages (the log's own
// events), and each message's content is the event's own value.
#[test]
fn derived_cache_snapshots_share_the_events_messages() {
    let session = live("s", &rows("{\"$\":\"U\"}\n{\"$\":\"A\"}"));
    let first = session.derive_messages();
    let second = session.derive_messages();
    for index in 0..2 {
        assert!(Arc::ptr_eq(first[index].event(), second[index].event()));
        assert!(Arc::ptr_eq(
            first[index].event(),
            &session.events().unwrap()[index]
        ));
    }
    let user_content = session.events().unwrap()[0].data()["content"]
        .as_array()
        .unwrap();
    assert!(std::ptr::eq(first[0].content(), user_content.as_slice()));
    let assistant_content = session.events().unwrap()[1].data()["message"]["content"]
        .as_array()
        .unwrap();
    assert!(std::ptr::eq(
        first[1].content(),
        assistant_content.as_slice()
    ));
}

// §11.7 derived-cache: `project` (deriveEventMessage) equals the node's
// message, and is `None` for brackets and an empty assistant message.
#[test]
fn derived_cache_project_equals_the_nodes_message() {
    let session = live(
        "s",
        &rows(
            r#"
{"$":"TS"}
{"$":"U"}
{"$":"A","$text":""}
{"$":"S","$text":""}
{"$":"T"}
{"$":"TE"}
"#,
        ),
    );
    let projected: Vec<Option<String>> = (0..6)
        .map(|seq| {
            session
                .project(Seq::new(seq).unwrap())
                .map(|message| format!("{}:{}", message.role(), message.id()))
        })
        .collect();
    assert_eq!(
        projected,
        [
            None,
            Some("user:m1".to_owned()),
            None,
            None,
            Some("user:t4".to_owned()),
            None
        ]
    );
    assert_eq!(
        session.derive_messages().to_vec(),
        scratch_messages(&session)
    );
}

// §7.1 / §6.3: a rolled-back batch leaves the cache equal to a scratch
// derivation, even when messages were derived in the middle of the batch.
#[test]
fn derived_cache_survives_a_rolled_back_batch() {
    let mut session = live("s", &rows("{\"$\":\"U\"}\n{\"$\":\"U\"}"));
    let before = values(&session);
    let mark = session.begin_batch();
    let summary = Candidate::surface(
        payload::UserMessage {
            message: payload::user_text_message("sum", "compacted"),
        },
        SurfaceIntent::replace(Seq::ZERO, Seq::ZERO, vec![Seq::ZERO]),
    );
    session.append(summary, 2).unwrap();
    session
        .append(
            Candidate::surface(
                payload::AssistantMessage {
                    turn: 1,
                    step: 1,
                    message: payload::assistant_message(
                        "a",
                        vec![payload::text_block("x")],
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
    assert_eq!(session.derive_messages().len(), 3);
    session.rollback(mark);
    assert_eq!(values(&session), before);
    assert_eq!(session.surface().replace_generation(), 0);
    assert_eq!(session.len(), 2);
    // The session keeps working after the rollback.
    let row = RawEvent::from_value(json!({"type":"turn/start","seq":2,"time":0,"data":{"turn":1}}));
    session.extend_restored([row]).unwrap();
    assert_eq!(values(&session), replayed_messages(&session));
}
