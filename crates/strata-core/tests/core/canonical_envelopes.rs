//! §11.2 `canonical-envelopes.spec` (V3): envelope shape, data rules and
//! surface metadata on every entry path.
//!
//! Ported as data (`data/canonical_envelopes.txt`); every case runs on append,
//! append_batch, create_seeded, restore, extend_restored and fold_surface.
//! Skipped: items 10 and 11 (`adoptSessionEvent`; JSON has no `undefined`, and
//! strata has no adopt API — events are immutable `Arc<Event>`s), item 14
//! (`sessions.prepare` is the store's; its core part is `Session::restore`,
//! covered here), item 15 is the harness's "rejected means unchanged" check,
//! run on every case.

use serde_json::json;
use strata_core::{payload, Candidate, Placement, SurfaceIntent};

use crate::harness::{header, live, rows};

data_tests! { "canonical_envelopes";
    // §11.2 item 1
    canonical_envelopes_01_request_header_data_must_be_an_object,
    // §11.2 item 2
    canonical_envelopes_02_request_header_header_must_be_an_object,
    // §11.2 item 3
    canonical_envelopes_03_tool_result_data_must_be_an_object,
    // §11.2 item 4
    canonical_envelopes_04_request_header_must_omit_empty_fields,
    // §11.2 item 5
    canonical_envelopes_05_request_header_must_omit_system,
    // §11.2 item 6
    canonical_envelopes_06_successful_tool_result_with_error,
    // §11.2 item 7
    canonical_envelopes_07_tool_error_requires_is_error,
    // §11.2 item 8
    canonical_envelopes_08_canonical_envelopes_are_accepted,
    // §11.2 item 9
    canonical_envelopes_09_nested_extras_are_preserved,
    // §11.2 item 12
    canonical_envelopes_12_restored_header_config_needs_provider_and_model,
    // §11.2 item 16
    canonical_envelopes_16_non_object_row_is_an_invalid_envelope,
    // §11.2 item 17
    canonical_envelopes_17_replace_op_keys_are_exact,
    // §11.2 item 18
    canonical_envelopes_18_surface_metadata_rules_on_every_path,
    // §11.2 item 19
    canonical_envelopes_19_unknown_ignorable_events_are_opaque,
    // §11.2 item 20
    canonical_envelopes_20_known_log_only_types_refuse_metadata_even_if_ignorable,
    // §11.2 item 21
    canonical_envelopes_21_system_head_replacement_keeps_other_fields,
    // §11.2 item 22
    canonical_envelopes_22_replace_endpoints_must_be_earlier,
    // §11.2 item 23
    canonical_envelopes_23_numerically_descending_endpoints,
}

fn header_candidate(config: serde_json::Value, reason: payload::HeaderReason) -> Candidate {
    Candidate::log_only(payload::RequestHeader {
        header: json!({ "config": config }),
        reason,
        starts_series: false,
    })
}

// §11.2 item 13: the request header fold is shared and stable: the same Arc
// until a new header is accepted; a rejected header leaves it; an accepted
// `change` replaces it; an earlier handle keeps its value.
#[test]
fn canonical_envelopes_13_request_header_cache_is_stable() {
    let mut session = live("s", &rows(r#"{"$":"H"}"#));
    let first = session.request_header().cloned().unwrap();
    assert_eq!(*first, json!({"config": {"provider": "p", "model": "m"}}));
    assert!(std::sync::Arc::ptr_eq(
        &first,
        session.request_header().unwrap()
    ));
    let bad = Candidate::log_only(payload::RequestHeader {
        header: json!({"config": {"provider": "p", "model": "m"}, "tools": []}),
        reason: payload::HeaderReason::Change,
        starts_series: false,
    });
    let error = session.append(bad, 1).unwrap_err();
    assert_eq!(
        error.message,
        "session event \"request/header\" at seq 1 must omit empty tools"
    );
    assert!(std::sync::Arc::ptr_eq(
        &first,
        session.request_header().unwrap()
    ));
    session
        .append(
            header_candidate(
                json!({"provider": "p", "model": "m2"}),
                payload::HeaderReason::Change,
            ),
            2,
        )
        .unwrap();
    let second = session.request_header().cloned().unwrap();
    assert_eq!(second["config"]["model"], "m2");
    assert_eq!(first["config"]["model"], "m");
}

// §11.2 item 14 (core part): a restored log folds its request header, and an
// invalid seed header creates nothing.
#[test]
fn canonical_envelopes_14_restore_folds_request_header() {
    let session = live(
        "s",
        &rows(r#"{"$":"H","$header":{"tools":[{"name":"t"}]}}"#),
    );
    assert_eq!(
        **session.request_header().unwrap(),
        json!({"config": {"provider": "p", "model": "m"}, "tools": [{"name": "t"}]})
    );
    let error = strata_core::Session::restore(
        header("s"),
        crate::harness::raw_events(&rows(r#"{"$":"H","$header":{"tools":[]}}"#)),
        crate::harness::SURFACE_ONLY,
    )
    .err()
    .unwrap();
    assert_eq!(
        error.message,
        "seed request/header at index 0 must omit empty tools"
    );
}

// §11.2 item 24 (type level): typed candidates cannot express the envelope
// errors. A surface payload requires its intent, an assistant message takes a
// `Placement` (no sources), a replace names `Seq` endpoints, and a log-only
// payload takes no intent at all.
#[test]
fn canonical_envelopes_24_typed_candidates_carry_only_valid_metadata() {
    let mut session = live("s", &rows(r#"{"$":"U"}"#));
    let assistant = payload::AssistantMessage {
        turn: 1,
        step: 1,
        message: payload::assistant_message("a", vec![payload::text_block("x")], "p", "m"),
        stream: vec![],
        usage: None,
        interrupted: false,
    };
    let event = session
        .append(Candidate::surface(assistant, Placement::append()), 1)
        .unwrap();
    assert_eq!(event.sources(), None);
    let intent = SurfaceIntent::replace(
        strata_core::Seq::ZERO,
        strata_core::Seq::ZERO,
        vec![strata_core::Seq::ZERO],
    );
    assert_eq!(intent.sources(), Some(&[strata_core::Seq::ZERO][..]));
    let turn = session
        .append(Candidate::log_only(payload::TurnStart { turn: 1 }), 2)
        .unwrap();
    assert_eq!(turn.surface_op(), None);
    assert_eq!(
        turn.to_json(),
        r#"{"type":"turn/start","seq":2,"time":2,"data":{"turn":1}}"#
    );
}

// §11.2 item 15: every invalid case is refused by append and by the seeded
// constructor without creating or changing anything. The harness asserts
// this on each rejection (append and batch: the session equals its snapshot
// from before the call; extend: likewise; seed and restore: no session);
// this test re-runs every case of the file under those assertions.
#[test]
fn canonical_envelopes_15_every_rejection_changes_nothing() {
    for case in crate::harness::cases(CASE_FILE) {
        let outcome = crate::harness::run_case(&case);
        assert_eq!(outcome, case.expected, "case {}", case.name);
    }
}
