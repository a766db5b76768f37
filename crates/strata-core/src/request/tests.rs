//! Unit tests of the request implied at a seq.

use super::*;
use crate::synth::{generate, SynthConfig};
use crate::{RawEvent, Session};

#[test]
fn the_request_at_the_last_seq_is_the_sessions_own() {
    let session = generate(&SynthConfig {
        events: 300,
        compact_every: 2,
        ..SynthConfig::default()
    })
    .unwrap();
    let last = Seq::new(session.len() as u64 - 1).unwrap();
    let request = request_at(session.events().unwrap(), session.generation(), last).unwrap();
    assert_eq!(request.messages, session.derive_messages().to_vec());
    assert_eq!(
        request.header.as_deref(),
        session.request_header().map(|h| &**h)
    );
    assert_eq!(
        request.context.as_deref(),
        session.request_context().map(|c| &**c)
    );
}

#[test]
fn an_earlier_seq_ignores_later_replacements() {
    let session = generate(&SynthConfig {
        events: 300,
        compact_every: 2,
        ..SynthConfig::default()
    })
    .unwrap();
    let replace = session
        .events()
        .unwrap()
        .iter()
        .find(|event| matches!(event.surface_op(), Some(crate::SurfaceOp::Replace(_))))
        .expect("the generated log compacts");
    let before = Seq::new(replace.seq().get() - 1).unwrap();
    let request = request_at(session.events().unwrap(), session.generation(), before).unwrap();
    let prefix = Session::restore(
        session.header().clone(),
        session.events().unwrap()[..=before.get() as usize]
            .iter()
            .map(|event| RawEvent::from_event(event)),
        crate::SeedOptions::default(),
    )
    .unwrap();
    assert_eq!(request.messages, prefix.derive_messages().to_vec());
    let after = request_at(
        session.events().unwrap(),
        session.generation(),
        replace.seq(),
    )
    .unwrap();
    assert_ne!(
        after.messages, request.messages,
        "the replacement changes the request"
    );
}

#[test]
fn a_seq_past_the_end_is_out_of_range() {
    let session = generate(&SynthConfig {
        events: 50,
        ..SynthConfig::default()
    })
    .unwrap();
    let past = Seq::new(session.len() as u64).unwrap();
    assert_eq!(
        request_at(session.events().unwrap(), session.generation(), past).unwrap_err(),
        RequestAtError::OutOfRange {
            seq: session.len() as u64,
            n_events: session.len() as u64
        }
    );
}
