//! The verifier agrees with `Session::restore` on the same rows, and keeps only surface events.

use serde_json::json;

use super::*;
use crate::session::Session;
use crate::synth;
use crate::SeedOptions;

#[test]
fn verifier_agrees_with_a_full_restore_and_holds_only_the_surface() {
    let generated = synth::generate(&synth::SynthConfig {
        events: 3000,
        ..synth::SynthConfig::default()
    })
    .unwrap();
    let header = generated.header().clone();
    let rows = generated.to_raw_events().unwrap();
    let session = Session::restore(header.clone(), rows.clone(), SeedOptions::default()).unwrap();
    let mut verifier = Verifier::new(header);
    for row in rows {
        verifier.push(row).unwrap();
        assert_eq!(verifier.on_surface.len(), verifier.surface().len());
    }
    let verified = verifier.finish().unwrap();
    assert_eq!(verified.surface, session.surface().nodes());
    assert_eq!(verified.n_session_events, session.len() as u64);
    assert_eq!(
        verified.message_values(),
        session
            .derive_messages()
            .iter()
            .map(|m| m.value().clone())
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_rejected_row_is_reported_with_restore_text_and_changes_nothing() {
    let header = SessionHeader::fresh("s", 0).unwrap();
    let mut verifier = Verifier::new(header);
    let bad = RawEvent::from_value(
        json!({"type": "turn/start", "seq": 5, "time": 0, "data": {"turn": 1}}),
    );
    let error = verifier.push(bad).unwrap_err();
    // A V3 log's restore text is upstream's released row decoder's (docs/rules.md, E8).
    assert_eq!(
        error.message,
        "released v2 row 0 has seq gap (expected 0, got 5)"
    );
    assert_eq!(verifier.n_events(), 0);
}
