//! Unit tests of the open-turn scan.

use proptest::prelude::*;

use super::*;
use crate::synth::{generate_loaded, parsed_seqs, SynthConfig};

/// The closers a lenient scan of every event from seq 0 finds: what `open_turn_closers`
/// computed before it started at the last turn boundary.
fn scanned_from_the_start(events: &[Arc<Event>], cause: CloseCause) -> Closers {
    let mut scan = TurnScan::new(ScanMode::Lenient);
    for event in events {
        observe_event(&mut scan, event);
    }
    let (first_seq, time) = match events.last() {
        Some(last) => (last.seq.next(), last.time),
        None => (Seq::ZERO, 0),
    };
    Closers {
        candidates: scan.closers(first_seq, cause),
        first_seq,
        time,
    }
}

proptest! {
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
