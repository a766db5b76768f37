//! §11.4 `repair.spec`: crash repair closers (V3 cause `interrupted`; the
//! `forked` cause serves strata's any-prefix fork, §9.3).
//!
//! Data cases in `data/repair.txt` render the closers of both causes. Below:
//! `Session::restore` with `SeedOptions::repair`, which stores use on resume.

use strata_core::{CloseCause, EventType, SeedOptions, Session};

use crate::harness::{header, raw_events, rows};

data_tests! { "repair";
    // §11.4 item 1
    repair_01_balanced_log_needs_no_closers,
    // §11.4 item 2
    repair_02_empty_log_needs_no_closers,
    // §11.4 item 3
    repair_03_open_turn_without_step,
    // §11.4 item 4
    repair_04_open_step,
    // §11.4 item 5
    repair_05_call_not_started,
    // §11.4 item 6
    repair_06_answered_call_needs_only_brackets,
    // §11.4 item 7
    repair_07_call_of_an_ended_step_is_not_answered,
    // §11.4 item 8
    repair_08_earlier_turns_calls_are_ignored,
    // §11.4 item 9
    repair_09_only_unanswered_calls_get_results,
    // §11.4 item 10
    repair_10_started_call_has_unknown_outcome,
    // §11.4 item 11
    repair_11_tool_call_without_announcement_is_ignored,
    // §11.4 items 12–13
    repair_12_exact_texts_for_each_cause,
    // §8, docs/v0-rules.md "Crash repair"
    repair_13_malformed_brackets,
}

// §8 / persistence §1.1 step 3: a resumed crashed log gets its closers, then
// the end-seed marker; the closers belong to the constructor seed, so
// first_live_seq counts them; reopening the repaired log adds nothing.
#[test]
fn repair_restore_with_repair_closes_then_marks() {
    let log = rows(
        r#"
{"$":"TS"}
{"$":"SS"}
{"$":"A","$calls":["c1"],"time":4}
"#,
    );
    let session = Session::restore(
        header("s"),
        raw_events(&log),
        SeedOptions {
            marker_time: 99,
            ..crate::harness::SURFACE_ONLY
        }
        .repaired(CloseCause::Interrupted),
    )
    .unwrap();
    let types: Vec<&str> = session.events().unwrap()[3..]
        .iter()
        .map(|event| event.event_type().as_str())
        .collect();
    assert_eq!(
        types,
        ["tool/result", "step/end", "turn/end", "session/end-seed"]
    );
    assert!(session.events().unwrap()[3..6]
        .iter()
        .all(|event| event.time() == 4));
    assert_eq!(session.events().unwrap()[6].time(), 99);
    assert_eq!(session.first_live_seq(), 6, "closers are part of the seed");
    let reopened = Session::restore(
        header("s"),
        session.to_raw_events().unwrap(),
        crate::harness::SURFACE_ONLY.repaired(CloseCause::Interrupted),
    )
    .unwrap();
    assert_eq!(
        reopened.len(),
        session.len(),
        "a repaired log needs nothing more"
    );
    // A balanced log only gets the marker.
    let balanced = Session::restore(
        header("s"),
        raw_events(&rows("{\"$\":\"TS\"}\n{\"$\":\"TE\"}")),
        crate::harness::SURFACE_ONLY.repaired(CloseCause::Interrupted),
    )
    .unwrap();
    assert_eq!(balanced.len(), 3);
    assert_eq!(
        balanced.events().unwrap()[2].event_type(),
        &EventType::SessionEndSeed
    );
}
