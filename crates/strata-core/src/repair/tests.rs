//! Unit tests of the open-turn scan.

use proptest::prelude::*;

use super::*;
use crate::synth::{generate_loaded, parsed_seqs, SynthConfig};

/// The closers a lenient scan of every event from seq 0 finds, following the compaction
/// bracket forward: what `open_turn_closers` computes from the last turn boundary and the
/// newest bracket event.
fn scanned_from_the_start(events: &[Arc<Event>], cause: CloseCause) -> Closers {
    let mut scan = TurnScan::new(ScanMode::Lenient);
    let mut bracket: Option<&Event> = None;
    for event in events {
        observe_event(&mut scan, event);
        if is_bracket_event(event) {
            bracket = is_compaction_start(event).then_some(&**event);
        }
    }
    let (first_seq, time) = match events.last() {
        Some(last) => (last.seq.next(), last.time),
        None => (Seq::ZERO, 0),
    };
    closers_of(bracket, scan, first_seq, time, cause)
}

strata_testkit::proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Starting at the last turn boundary finds the closers a scan from seq 0 finds, wherever
    /// the log is cut (inside a step, between a call and its result, at a boundary).
    #[test]
    fn closers_from_the_last_boundary_are_the_closers_from_the_start(
        seed in any::<u64>(),
        cut in 0.0f64..1.0,
        forked in any::<bool>(),
    ) {
        let session = generate_loaded(&SynthConfig {
            events: 160,
            seed,
            ..SynthConfig::default()
        })
        .unwrap();
        let events = session.events().unwrap();
        let end = ((events.len() as f64 * cut) as usize).min(events.len());
        let prefix = &events[..end];
        let cause = if forked { CloseCause::Forked } else { CloseCause::Interrupted };
        prop_assert_eq!(
            open_turn_closers(prefix, cause),
            scanned_from_the_start(prefix, cause)
        );
    }
}

/// A cut inside a compaction bracket closes the bracket first, with the start's id and owner
/// turn, then the turn; the closers' seqs follow on.
#[test]
fn a_cut_inside_a_compaction_bracket_closes_it_before_the_turn() {
    let session = generate_loaded(&SynthConfig {
        events: 400,
        compact_every: 2,
        ..SynthConfig::default()
    })
    .unwrap();
    let events = session.events().unwrap();
    let start = events
        .iter()
        .position(|event| is_compaction_start(event))
        .unwrap();
    for cut in [start + 1, start + 2, start + 3] {
        let closers = open_turn_closers(&events[..cut], CloseCause::Interrupted);
        let kinds: Vec<&str> = closers
            .candidates
            .iter()
            .map(|candidate| candidate.event_type.as_str())
            .collect();
        assert_eq!(kinds, [COMPACTION_END, "turn/end"], "cut {cut}");
        let start_data = events[start].data();
        let end = &closers.candidates[0].data;
        assert_eq!(end["compactionId"], start_data["compactionId"]);
        assert_eq!(end["turn"], start_data["turn"]);
        assert_eq!(end["error"], "interrupted");
        assert_eq!(closers.candidates[1].data["turn"], start_data["turn"]);
    }
    // Past the bracket's end nothing of it is closed.
    let end = start + 4;
    assert_eq!(events[end - 1].event_type().as_str(), COMPACTION_END);
    assert!(open_turn_closers(&events[..end], CloseCause::Interrupted)
        .candidates
        .iter()
        .all(|candidate| candidate.event_type.as_str() != COMPACTION_END));
}

#[test]
fn the_closers_of_a_loaded_log_leave_its_payloads_unparsed() {
    let session = generate_loaded(&SynthConfig {
        events: 300,
        ..SynthConfig::default()
    })
    .unwrap();
    let before = parsed_seqs(&session);
    let events = session.events().unwrap();
    // Cut inside a turn, so there is something to close.
    let inside = events
        .iter()
        .rposition(|event| *event.event_type() == EventType::ToolCall)
        .unwrap();
    let closers = open_turn_closers(&events[..=inside], CloseCause::Interrupted);
    assert!(!closers.candidates.is_empty());
    assert_eq!(parsed_seqs(&session), before);
}

/// A stored row scanned as a tree and as a row kept as text: the same closers (open turn,
/// step and pending calls, numbered after the last row and carrying its time), and the same
/// `TypeError` for a bracket payload that is `null`.
#[test]
fn a_stored_row_scan_reads_rows_kept_as_text_as_it_reads_trees() {
    let rows = [
        r#"{"type":"turn/start","seq":0,"time":10,"data":{"turn":1}}"#,
        r#"{"type":"step/start","seq":1,"time":11,"data":{"turn":1,"step":1}}"#,
        r#"{"type":"assistant/chunk","seq":2,"time":12,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}}"#,
        r#"{"type":"assistant/message","seq":3,"time":13,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[{"type":"tool-call","id":"c1","name":"bash","input":{}},{"type":"tool-call","id":"c2","name":"bash","input":{}}],"source":{"kind":"model"}}}}"#,
        r#"{"type":"tool/call","seq":4,"time":14,"data":{"turn":1,"step":1,"callId":"c1"}}"#,
        r#"{"type":"tool/result","seq":5,"time":15,"data":{"turn":1,"step":1,"message":{"id":"r","role":"user","content":[],"source":{"kind":"tool","callId":"c2"}}}}"#,
        r#"{"type":"assistant/chunk","seq":6,"time":1.6e1,"data":{}}"#,
    ];
    let mut trees = StoredTurnScan::new();
    let mut texts = StoredTurnScan::new();
    for row in rows {
        trees.observe(&crate::json::parse(row).unwrap()).unwrap();
        texts
            .observe_raw(&RawEvent::from_json_str(row).unwrap())
            .unwrap();
    }
    let closers = trees.closer_rows(CloseCause::Interrupted);
    assert!(closers.len() >= 3, "{closers:?}");
    let as_rows = |closers: Vec<Value>| -> Vec<RawEvent> {
        closers.into_iter().map(RawEvent::from_value).collect()
    };
    assert_eq!(
        as_rows(closers),
        as_rows(texts.closer_rows(CloseCause::Interrupted))
    );

    let null = r#"{"type":"tool/call","seq":0,"time":1,"data":null}"#;
    let tree = StoredTurnScan::new().observe(&crate::json::parse(null).unwrap());
    let text = StoredTurnScan::new().observe_raw(&RawEvent::from_json_str(null).unwrap());
    assert_eq!(
        tree.unwrap_err().message,
        text.unwrap_err().message,
        "a null payload"
    );
}
