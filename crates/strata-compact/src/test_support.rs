//! Sessions as a load holds them, for unit tests of code that reads every event's payload.

use strata_core::synth::{generate, SynthConfig};
use strata_core::{RawEvent, SeedOptions, Session};

/// A generated session restored from its events' texts: generated events are born parsed,
/// loaded ones hold their payload as text until something asks for its tree.
pub(crate) fn loaded_session(config: &SynthConfig) -> Session {
    let generated = generate(config).unwrap();
    let generation = generated.generation();
    Session::restore(
        generated.header().clone(),
        generated
            .events()
            .iter()
            .map(|event| RawEvent::from_event_in(event, generation)),
        SeedOptions::default(),
    )
    .unwrap()
}

/// The seqs of the events whose payload tree is parsed and kept.
pub(crate) fn parsed_seqs(session: &Session) -> Vec<u64> {
    session
        .events()
        .iter()
        .filter(|event| event.is_data_parsed())
        .map(|event| event.seq().get())
        .collect()
}
