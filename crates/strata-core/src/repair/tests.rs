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
        let events = session.events();
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
    let events = session.events();
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
    let events = session.events();
    // Cut inside a turn, so there is something to close.
    let inside = events
        .iter()
        .rposition(|event| *event.event_type() == EventType::ToolCall)
        .unwrap();
    let closers = open_turn_closers(&events[..=inside], CloseCause::Interrupted);
    assert!(!closers.candidates.is_empty());
    assert_eq!(parsed_seqs(&session), before);
}
