//! §11.3 `session.spec`: the session object, seeds, restores, message shapes
//! and headers.
//!
//! Data cases live in `data/session.txt`; the code tests below cover what is
//! about session objects rather than logs.
//!
//! Skipped, with why:
//! - 13–16 (`snapshotSessionEvent`/`adoptSessionEvent`, freezing adopted
//!   messages): strata has no adopt API; accepted events are immutable
//!   `Arc<Event>`s by construction. Item 17 (shape before anything else) is
//!   ported onto restore.
//! - 28, 29, 34, 38, 41 (getters read once), 31, 32, 33, 40 (class instances,
//!   null prototypes), 35 (a pluggable surface validator), 36, 37, 47 (caller
//!   mutates its input afterwards), 44 (deep freeze): JavaScript object
//!   mechanics with no Rust equivalent — values are parsed JSON, moved into
//!   the core, and immutable behind `Arc`.
//! - 52–59, 66–68, 71–77 (SessionStore publication, listeners, fibers,
//!   announce/detach): store-level, not core. 69 and 70 (a veto before commit)
//!   map onto `Session::plan` without `commit`, ported below.
//! - 60–65 (store create with meta): ported onto `SessionHeader::new`/`fresh`.

use std::sync::Arc;

use serde_json::{json, Value};
use strata_core::{
    payload, Candidate, EventType, Generation, HeaderSpec, Rule, Seq, Session, SessionHeader,
    StalePlanError, SurfaceIntent,
};

use crate::harness::{header, live, raw_events, rows, scratch_messages, Snapshot};

data_tests! { "session";
    // §11.3 item 2
    session_02_turn_with_tool_call_derives_user_assistant_user,
    // docs/format.md §1a; issue 22
    session_lone_surrogates_are_strings_like_any_other,
    // §11.3 item 3
    session_03_max_tokens_turn_end_round_trips,
    // §11.3 item 5
    session_05_injected_messages_derive_as_user_content,
    // §11.3 item 6
    session_06_agent_instructions_source_is_kept_exactly,
    // §11.3 item 8, §9.1 step 5
    session_08_end_seed_markers_in_a_log,
    // §11.3 item 9
    session_09_seed_shape_errors,
    // §11.3 item 10
    session_10_restore_checks_settlement_fields,
    // §11.3 item 11
    session_11_request_header_reason_and_series_marker,
    // §11.3 item 12
    session_12_seed_message_shape_errors,
    // §11.3 item 17
    session_17_shape_is_checked_before_surface_rules,
    // §11.3 item 18
    session_18_reasoning_effort,
    // §11.3 item 19
    session_19_adapter_defaults,
    // §11.3 item 21
    session_21_append_refuses_non_json_data,
    // §11.3 item 22
    session_22_surface_type_without_intent,
    // §11.3 item 23
    session_23_dense_nested_values_are_accepted,
    // §11.3 item 24
    session_24_seed_refuses_non_lossless_data,
    // §11.3 item 25
    session_25_seed_with_seq_gap,
    // §11.3 item 26
    session_26_seed_with_markerless_user_message,
    // §11.3 item 30
    session_30_seed_surface_op_must_be_lossless,
    // §11.3 item 39
    session_39_append_surface_op_must_be_lossless,
    // §11.3 item 42
    session_42_append_surface_op_shapes,
    // §11.3 item 43
    session_43_log_only_event_with_surface_op,
    // §11.3 item 51
    session_51_seed_envelope_errors,
}

fn user(id: &str, text: &str) -> Candidate {
    Candidate::surface(
        payload::UserMessage {
            message: payload::user_text_message(id, text),
        },
        SurfaceIntent::append(),
    )
}

fn seeded(rows: &[String]) -> Session {
    Session::create_seeded(
        header("seeded"),
        raw_events(rows),
        None,
        crate::harness::SURFACE_ONLY,
    )
    .unwrap()
}

// §11.3 item 1: the surface is one object owned by the session, the same
// across appends.
#[test]
fn session_01_surface_is_one_stable_view() {
    let mut session = crate::harness::create(header("s")).unwrap();
    let before: *const strata_core::SurfaceState = session.surface();
    session.append(user("m0", "hi"), 1).unwrap();
    assert!(std::ptr::eq(before, session.surface()));
}

// §11.3 item 4: an aborted turn replays through a seed: the replay minus its
// trailing end-seed equals the original, byte for byte.
#[test]
fn session_04_aborted_turn_round_trips_through_seeded_replay() {
    let log = rows(
        r#"
{"$":"TS"}
{"$":"U"}
{"$":"TE","$reason":{"kind":"aborted","reason":{"kind":"user"}}}
"#,
    );
    let original = live("s", &log);
    let replay = seeded(&log);
    let replayed: Vec<String> = replay
        .events()
        .unwrap()
        .iter()
        .map(|e| e.to_json())
        .collect();
    let expected: Vec<String> = original
        .events()
        .unwrap()
        .iter()
        .map(|e| e.to_json())
        .collect();
    assert_eq!(replayed[..replayed.len() - 1], expected[..]);
    assert_eq!(
        replayed.last().unwrap(),
        r#"{"type":"session/end-seed","seq":3,"time":0,"data":{}}"#
    );
}

// §11.3 item 7: a seeded replay has the same messages, the original events
// verbatim, one more event, and first_live_seq at the original length.
#[test]
fn session_07_seeded_replay_keeps_events_and_messages() {
    let log = rows(
        r#"
{"$":"TS"}
{"$":"U"}
{"$":"A","$calls":["c1"]}
{"$":"TC"}
{"$":"T","sourceEventSeqs":[3]}
{"$":"TE"}
"#,
    );
    let original = live("s", &log);
    let replay = seeded(&log);
    assert_eq!(
        replay.derive_messages().to_vec(),
        original.derive_messages().to_vec()
    );
    assert_eq!(replay.len(), original.len() + 1);
    assert_eq!(replay.first_live_seq(), original.len() as u64);
    for (a, b) in original
        .events()
        .unwrap()
        .iter()
        .zip(replay.events().unwrap())
    {
        assert_eq!(a.to_json(), b.to_json());
    }
}

// §11.3 item 8: a fresh session has no events; an explicitly empty seed gives
// [end-seed {} @0] with first_live_seq 0; reopening that log adds nothing and
// first_live_seq is 1.
#[test]
fn session_08_fresh_empty_seed_and_reopen() {
    let fresh = crate::harness::create(header("s")).unwrap();
    assert!(fresh.is_empty());
    assert_eq!(fresh.first_live_seq(), 0);
    let empty_seed = seeded(&[]);
    let lines: Vec<String> = empty_seed
        .events()
        .unwrap()
        .iter()
        .map(|e| e.to_json())
        .collect();
    assert_eq!(
        lines,
        [r#"{"type":"session/end-seed","seq":0,"time":0,"data":{}}"#]
    );
    assert_eq!(empty_seed.first_live_seq(), 0);
    let reopened = Session::restore(
        header("s"),
        empty_seed.to_raw_events().unwrap(),
        crate::harness::SURFACE_ONLY,
    )
    .unwrap();
    assert_eq!(reopened.len(), 1);
    assert_eq!(reopened.first_live_seq(), 1);
}

// §11.3 item 20: a derived-message snapshot is immutable; reordering a copy is
// harmless; the log is unchanged.
#[test]
fn session_20_derived_messages_are_immutable_snapshots() {
    let session = live(
        "s",
        &rows(
            r#"
{"$":"U"}
{"$":"A"}
"#,
        ),
    );
    let before = Snapshot::of(&session);
    let messages = session.derive_messages();
    let mut copy = messages.to_vec();
    copy.reverse();
    assert_eq!(copy[0].id(), "a1");
    assert_eq!(session.derive_messages()[0].id(), "m0");
    assert_eq!(messages[0].id(), "m0");
    assert_eq!(Snapshot::of(&session), before);
}

// §11.3 item 27: a well-formed seed is preserved and first_live_seq is its length.
#[test]
fn session_27_well_formed_seed_is_preserved() {
    let log = rows(
        r#"
{"$":"TS"}
{"$":"U"}
{"$":"TE"}
"#,
    );
    let session = seeded(&log);
    assert_eq!(session.first_live_seq(), 3);
    assert_eq!(session.inherited_count(), 0);
    for (row, event) in log.iter().zip(session.events().unwrap()) {
        assert_eq!(row, &event.to_json());
    }
    assert_eq!(
        session.events().unwrap()[3].event_type(),
        &EventType::SessionEndSeed
    );
}

// §11.3 item 45: a held message snapshot never grows; the session's own list does.
#[test]
fn session_45_held_snapshots_never_grow() {
    let mut session = crate::harness::create(header("s")).unwrap();
    session.append(user("m0", "a"), 1).unwrap();
    let held = session.derive_messages();
    session.append(user("m1", "b"), 2).unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(session.derive_messages().len(), 2);
    let again = session.derive_messages();
    assert_eq!(again.len(), 2);
    assert!(Arc::ptr_eq(again[0].event(), held[0].event()));
}

// §11.3 item 46: `event(seq)` returns the stored event; `None` past the end.
#[test]
fn session_46_event_at_returns_the_stored_event() {
    let mut session = crate::harness::create(header("s")).unwrap();
    let appended = session.append(user("m0", "a"), 1).unwrap();
    assert!(Arc::ptr_eq(session.event(Seq::ZERO).unwrap(), &appended));
    assert!(session.event(Seq::new(1).unwrap()).is_none());
    assert_eq!(session.project(Seq::ZERO).unwrap().id(), "m0");
    assert!(session.project(Seq::new(1).unwrap()).is_none());
}

fn header_error(value: Value) -> (Rule, String) {
    let error = SessionHeader::from_value(value, Generation::V3).unwrap_err();
    (error.rule, error.message)
}

fn minimal_header() -> Value {
    json!({"version": 3, "id": "s", "createdAt": 0, "isSeeded": false})
}

fn with(mut value: Value, key: &str, field: Value) -> Value {
    value[key] = field;
    value
}

// §11.3 item 48: a header that is not a JSON object, a non-lossless field,
// and an id that is not the session's.
#[test]
fn session_48_header_object_and_id_errors() {
    for value in [json!(null), json!(1), json!([])] {
        assert_eq!(
            header_error(value),
            (
                Rule::HeaderInvalid,
                "session header is not a plain JSON record".to_owned()
            )
        );
    }
    let lossy: Value = serde_json::from_str(
        r#"{"version":3,"id":"s","createdAt":0,"isSeeded":false,"parentSession":1e400}"#,
    )
    .unwrap();
    assert_eq!(
        header_error(lossy),
        (
            Rule::HeaderInvalid,
            "session header is not losslessly JSON-serializable".to_owned()
        )
    );
    let header = SessionHeader::from_value(minimal_header(), Generation::V3).unwrap();
    let error = header.check_id("other").unwrap_err();
    assert_eq!(error.rule, Rule::HeaderIdMismatch);
    assert_eq!(
        error.message,
        "session header id \"s\" does not match session id \"other\""
    );
    assert!(header.check_id("s").is_ok());
}

// §11.3 item 49: header field errors, with the §2.3 messages.
#[test]
fn session_49_header_field_errors() {
    let cases: Vec<(Value, Rule, &str)> = vec![
        (
            with(minimal_header(), "version", json!(4)),
            Rule::HeaderBadVersion,
            "session header version must be 3, got 4",
        ),
        (
            json!({"id": "s", "createdAt": 0, "isSeeded": false}),
            Rule::HeaderBadVersion,
            "session header version must be 3, got undefined",
        ),
        (
            with(minimal_header(), "version", json!("3")),
            Rule::HeaderBadVersion,
            "session header version must be 3, got 3",
        ),
        (
            with(minimal_header(), "id", json!(7)),
            Rule::HeaderInvalid,
            "session header id must be a string",
        ),
        (
            with(minimal_header(), "createdAt", json!("0")),
            Rule::HeaderInvalid,
            "session header createdAt must be a non-negative safe integer",
        ),
        (
            with(minimal_header(), "cwd", json!(1)),
            Rule::HeaderInvalid,
            "session header cwd must be a string",
        ),
        (
            with(minimal_header(), "cwd", json!("relative/dir")),
            Rule::HeaderInvalid,
            "session header cwd must be an absolute path",
        ),
        (
            with(minimal_header(), "parentSession", json!(1)),
            Rule::HeaderInvalid,
            "session header parentSession must be a string",
        ),
        (
            with(minimal_header(), "isSeeded", json!("yes")),
            Rule::HeaderInvalid,
            "session header isSeeded must be a boolean",
        ),
        (
            with(minimal_header(), "seedLength", json!(2)),
            Rule::HeaderInvalid,
            "session header has invalid field \"seedLength\"",
        ),
        (
            with(minimal_header(), "origin", json!("user")),
            Rule::HeaderInvalid,
            "session header origin must be \"subagent\"",
        ),
        (
            with(minimal_header(), "delegationDepth", json!(-1)),
            Rule::HeaderInvalid,
            "session header delegationDepth must be a non-negative safe integer",
        ),
        (
            with(minimal_header(), "agentPreset", json!(false)),
            Rule::HeaderInvalid,
            "session header agentPreset must be a string",
        ),
    ];
    for (value, rule, message) in cases {
        assert_eq!(
            header_error(value.clone()),
            (rule, message.to_owned()),
            "{value}"
        );
    }
}

// §11.3 item 50: an unknown logical header extension is retained, in order.
#[test]
fn session_50_unknown_header_extension_is_retained() {
    let value = with(
        minimal_header(),
        "extension",
        json!({"nested": [1, {"a": null}]}),
    );
    let header = SessionHeader::from_value(value.clone(), Generation::V3).unwrap();
    assert_eq!(Value::Object(header.fields().clone()), value);
    assert_eq!(
        serde_json::to_string(header.fields()).unwrap(),
        serde_json::to_string(&value).unwrap()
    );
}

// §11.3 items 60–65 (store create with meta, ported onto header construction):
// the minimal header, optional cwd/parentSession, origin and delegation depth,
// invalid meta, a relative cwd, and a bare session's current-version header.
#[test]
fn session_60_to_65_header_construction() {
    let minimal = SessionHeader::fresh("s", 5).unwrap();
    assert_eq!(
        serde_json::to_string(minimal.fields()).unwrap(),
        r#"{"version":3,"id":"s","createdAt":5,"isSeeded":false,"delegationDepth":0}"#
    );
    assert!(!minimal.is_seeded());
    assert_eq!(minimal.generation(), Generation::V3);
    let full = SessionHeader::new(HeaderSpec {
        id: "s".into(),
        created_at: 5,
        cwd: Some("/work".into()),
        parent_session: Some("p".into()),
        is_seeded: false,
        origin: Some("subagent".into()),
        delegation_depth: 2,
        agent_preset: Some("coder".into()),
    })
    .unwrap();
    assert_eq!(full.cwd(), Some("/work"));
    assert_eq!(full.parent_session(), Some("p"));
    assert_eq!(full.origin(), Some("subagent"));
    assert_eq!(full.delegation_depth(), 2);
    assert_eq!(full.agent_preset(), Some("coder"));
    let relative = SessionHeader::new(HeaderSpec {
        id: "s".into(),
        cwd: Some("work".into()),
        ..HeaderSpec::default()
    })
    .unwrap_err();
    assert_eq!(
        relative.message,
        "session header cwd must be an absolute path"
    );
    let bad_origin = SessionHeader::new(HeaderSpec {
        id: "s".into(),
        origin: Some("user".into()),
        ..HeaderSpec::default()
    })
    .unwrap_err();
    assert_eq!(
        bad_origin.message,
        "session header origin must be \"subagent\""
    );
    let bare = crate::harness::create(SessionHeader::fresh("b", 0).unwrap()).unwrap();
    assert_eq!(bare.header().generation(), Generation::NATIVE);
    assert_eq!(bare.id(), "b");
}

// §11.3 items 69–70 (a veto before commit): a plan that is never committed
// changes nothing — not even a replacement's nodes or generation — and a retry
// commits; a plan made before another commit is stale.
#[test]
fn session_69_uncommitted_plan_changes_nothing() {
    let mut session = live("s", &rows(r#"{"$":"U"}"#));
    let before = Snapshot::of(&session);
    let replace = || {
        Candidate::surface(
            payload::UserMessage {
                message: payload::user_text_message("m1", "summary"),
            },
            SurfaceIntent::replace(Seq::ZERO, Seq::ZERO, vec![Seq::ZERO]),
        )
    };
    let plan = session.plan(replace(), 1).unwrap();
    assert_eq!(
        plan.event().seq(),
        Seq::new(1).unwrap(),
        "planned at the old length"
    );
    drop(plan);
    assert_eq!(Snapshot::of(&session), before);
    let plan = session.plan(replace(), 1).unwrap();
    let stale = session.plan(user("m2", "x"), 1).unwrap();
    session.commit(plan).unwrap();
    assert_eq!(session.surface().nodes(), &[Seq::new(1).unwrap()]);
    assert_eq!(session.surface().replace_generation(), 1);
    assert_eq!(
        session.commit(stale).unwrap_err(),
        StalePlanError {
            planned: 1,
            next: 2
        }
    );
    assert_eq!(session.len(), 2);
    assert_eq!(
        session.derive_messages().to_vec(),
        scratch_messages(&session)
    );
}

fn seeded_header(id: &str, is_seeded: bool) -> SessionHeader {
    SessionHeader::new(HeaderSpec {
        id: id.into(),
        parent_session: is_seeded.then(|| "p".to_owned()),
        is_seeded,
        ..HeaderSpec::default()
    })
    .unwrap()
}

// §9.1 step 3: seed, `isSeeded` and inherited count must agree (exact texts).
#[test]
fn session_9_1_seed_header_and_inherited_count_agree() {
    let log = rows(
        r#"
{"$":"TS"}
{"$":"TE"}
"#,
    );
    let message = |result: Result<Session, strata_core::AcceptError>| {
        let error = result.err().unwrap();
        assert_eq!(error.rule, Rule::SeedMismatch);
        error.message
    };
    assert_eq!(
        message(crate::harness::create(seeded_header("c", true))),
        "seeded session requires an explicit constructor seed"
    );
    assert_eq!(
        message(Session::create_seeded(
            seeded_header("c", true),
            raw_events(&log),
            None,
            crate::harness::SURFACE_ONLY
        )),
        "seeded session requires an inherited event count"
    );
    assert_eq!(
        message(Session::create_seeded(
            seeded_header("c", false),
            raw_events(&log),
            Some(1),
            crate::harness::SURFACE_ONLY
        )),
        "unseeded session inherited event count must be 0"
    );
    assert_eq!(
        message(Session::create_seeded(
            seeded_header("c", true),
            raw_events(&log),
            Some(3),
            crate::harness::SURFACE_ONLY
        )),
        "session inherited event count exceeds its event log"
    );
    assert_eq!(
        message(Session::create_seeded(
            seeded_header("c", true),
            raw_events(&log),
            Some(1),
            crate::harness::SURFACE_ONLY
        )),
        "seeded session constructor seed must equal its inherited prefix"
    );
    // A seeded restore needs its tagged marker; an unseeded one must not have one (in
    // upstream's released codec's words, docs/rules.md R56).
    assert_eq!(
        message(Session::restore(
            seeded_header("c", true),
            raw_events(&log),
            crate::harness::SURFACE_ONLY
        )),
        "released v2 seeded Session lacks an inherited end-seed marker"
    );
    let tagged = rows(
        r#"
{"$":"TS"}
{"$":"TE"}
{"$":"ES","$inherited":true}
"#,
    );
    assert_eq!(
        message(Session::restore(
            seeded_header("c", false),
            raw_events(&tagged),
            crate::harness::SURFACE_ONLY
        )),
        "released v2 unseeded Session contains an inherited end-seed marker"
    );
    let child = Session::restore(
        seeded_header("c", true),
        raw_events(&tagged),
        crate::harness::SURFACE_ONLY,
    )
    .unwrap();
    assert_eq!(child.inherited_count(), 2);
    assert_eq!(child.len(), 3, "a log ending in a marker gets no new one");
    assert_eq!(child.own_events().unwrap().len(), 1);
    assert!(child.is_own_seq(Seq::new(2).unwrap()));
    assert!(!child.is_own_seq(Seq::new(1).unwrap()));
}

// §9.1 step 4: a fresh fork child always gets the tagged marker at the
// inherited count, with the last inherited event's time, even when the copied
// prefix already ends in an ancestor's marker.
#[test]
fn session_9_1_fresh_child_always_gets_a_tagged_marker() {
    let log = rows(
        r#"
{"$":"TS","time":7}
{"$":"TE","time":8}
{"$":"ES","$inherited":true,"time":9}
"#,
    );
    let child = Session::create_seeded(
        seeded_header("c", true),
        raw_events(&log),
        Some(3),
        crate::harness::SURFACE_ONLY,
    )
    .unwrap();
    assert_eq!(child.len(), 4);
    assert_eq!(
        child.events().unwrap()[3].to_json(),
        r#"{"type":"session/end-seed","seq":3,"time":9,"data":{"inherited":true}}"#
    );
    assert_eq!(child.inherited_count(), 3);
    assert_eq!(child.first_live_seq(), 3);
}

// §6.3 / Session docs: a rejected or rolled-back batch leaves everything
// unchanged — also when the batch contains nested batches (`append_batch`,
// `close_open_turn`, `extend_restored` inside a store's `begin_batch`).
#[test]
fn session_nested_batches_roll_back_to_their_mark() {
    let log = rows(
        r#"
{"$":"H"}
{"$":"TS"}
{"$":"SS"}
{"$":"U"}
{"$":"A","$calls":["c1"]}
"#,
    );
    let mut session = live("s", &log);
    let before = Snapshot::of(&session);
    let outer = session.begin_batch();
    let header_change = Candidate::log_only(payload::RequestHeader {
        header: json!({"config": {"provider": "p", "model": "m2"}}),
        reason: payload::HeaderReason::Change,
        starts_series: false,
    });
    session.append(header_change, 9).unwrap();
    let closers = session
        .close_open_turn(strata_core::CloseCause::Interrupted)
        .unwrap();
    assert_eq!(closers.len(), 3);
    // An inner batch that fails rolls back only itself.
    let inner = session.append_batch(
        [
            user("m9", "x"),
            Candidate::dynamic("user/message", json!({}), None, None),
        ],
        9,
    );
    assert!(inner.is_err());
    assert_eq!(session.len(), log.len() + 4);
    session.rollback(outer);
    assert_eq!(Snapshot::of(&session), before);
    assert_eq!(
        session.derive_messages().to_vec(),
        scratch_messages(&session)
    );
    // And the session keeps working.
    session.append(user("m10", "again"), 10).unwrap();
    assert_eq!(session.len(), log.len() + 1);
}

/// A restore reads request headers, request contexts and pruned tool results to fold and
/// check them, but keeps no parsed tree in any event: a 1 M-event log held ~16 MB of them.
#[test]
fn a_restore_leaves_every_stored_payload_unparsed() {
    let session = strata_core::synth::generate(&strata_core::synth::SynthConfig {
        events: 3_000,
        prune_rate: 0.3,
        ..strata_core::synth::SynthConfig::default()
    })
    .unwrap();
    let rows: Vec<strata_core::RawEvent> = session
        .events()
        .unwrap()
        .iter()
        .map(|event| strata_core::RawEvent::from_json_str(&event.to_json()).unwrap())
        .collect();
    let restored =
        Session::restore(session.header().clone(), rows, crate::harness::SURFACE_ONLY).unwrap();
    let types: std::collections::HashSet<&str> = restored
        .events()
        .unwrap()
        .iter()
        .map(|event| event.event_type().as_str())
        .collect();
    assert!(types.contains("request/header"), "{types:?}");
    assert!(
        restored
            .events()
            .unwrap()
            .iter()
            .any(|event| event.event_type().as_str() == "tool/result"
                && matches!(event.surface_op(), Some(strata_core::SurfaceOp::Replace(_)))),
        "the log prunes a tool result"
    );
    // (A restore may append the end-seed marker, built in memory from its value.)
    let stored = session.events().unwrap().len();
    let parsed: Vec<(u64, &str)> = restored.events().unwrap()[..stored]
        .iter()
        .filter(|event| event.is_data_parsed())
        .map(|event| (event.seq().get(), event.event_type().as_str()))
        .collect();
    assert!(parsed.is_empty(), "parsed payloads at seqs {parsed:?}");
    assert_eq!(restored.request_header(), session.request_header());
}

/// Deriving a restored log's messages, checking their tool pairing, comparing and
/// serializing them reads every message but keeps no parsed tree in any event: a command
/// that prints or exports the messages of a log with a million live nodes held a tree per
/// node (over ten times the log's size). The messages are still the generated ones.
#[test]
fn deriving_and_reading_messages_leaves_every_stored_payload_unparsed() {
    use strata_core::synth::{
        generate, generate_conversation, parsed_seqs, reloaded, ConversationConfig, SynthConfig,
    };
    let generated = [
        generate(&SynthConfig {
            events: 3_000,
            prune_rate: 0.3,
            ..SynthConfig::default()
        })
        .unwrap(),
        generate_conversation(&ConversationConfig {
            nodes: 2_000,
            tool_every: 3,
            ..ConversationConfig::default()
        })
        .unwrap(),
    ];
    for session in &generated {
        let restored = reloaded(session).unwrap();
        // (The end-seed marker a restore appends is built from its value.)
        let before = parsed_seqs(&restored);
        let messages = restored.derive_messages();
        assert_eq!(parsed_seqs(&restored), before, "after deriving");
        let expected = session.derive_messages();
        assert_eq!(messages.len(), expected.len());
        assert!(messages
            .iter()
            .any(|message| *message.event().event_type() == EventType::ToolResult));
        strata_core::check_tool_pairing(messages.iter()).unwrap();
        let text = serde_json::to_string(&messages).unwrap();
        assert_eq!(text, serde_json::to_string(&expected).unwrap());
        assert!(messages.iter().zip(expected.iter()).all(|(a, b)| a == b));
        for (message, value) in messages.iter().zip(expected.iter()) {
            assert_eq!(*message.value_uncached(), *value.value());
        }
        assert_eq!(parsed_seqs(&restored), before, "after reading");
    }
}

/// `Event::u64_field` of a stored payload reads the number through a view: the same numbers as
/// the parsed trees give, and no tree kept (a summarizer reads every message's `turn`).
#[test]
fn u64_field_reads_a_stored_payload_without_keeping_its_tree() {
    let generated = strata_core::synth::generate(&strata_core::synth::SynthConfig {
        events: 1_000,
        ..strata_core::synth::SynthConfig::default()
    })
    .unwrap();
    let restored = strata_core::synth::reloaded(&generated).unwrap();
    let before = strata_core::synth::parsed_seqs(&restored);
    for (stored, born) in restored
        .events()
        .unwrap()
        .iter()
        .zip(generated.events().unwrap())
    {
        for key in ["turn", "step", "seq", "message"] {
            assert_eq!(
                stored.u64_field(key),
                born.u64_field(key),
                "{key} of {stored:?}"
            );
        }
    }
    assert!(restored
        .events()
        .unwrap()
        .iter()
        .any(|event| event.u64_field("step") == Some(2)));
    assert_eq!(strata_core::synth::parsed_seqs(&restored), before);
}
