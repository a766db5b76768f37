//! Unit tests of the drivers' static guarantees.

use super::*;
use crate::extractive::ExtractiveSummarizer;

fn assert_send<T: Send>(_: &T) {}

// The agent runs the drivers inside boxed `Send` hook futures.
#[test]
fn driver_futures_are_send() {
    let session = strata_core::synth::generate(&strata_core::synth::SynthConfig {
        events: 50,
        ..Default::default()
    })
    .unwrap();
    let compactor = Compactor::new(crate::CompactionConfig::default()).unwrap();
    let mut host = MemoryHost::new(session);
    let mut ids = IdGenerator::seeded(3);
    let ids_once = ids.next_ids();
    assert_send(&compactor.compact_now(&mut host, &ExtractiveSummarizer, &ids_once));
    assert_send(&compactor.compact_if_needed(&mut host, &ExtractiveSummarizer, None, &mut ids));
    assert_send(&compactor.recover_overflow(&mut host, &ExtractiveSummarizer, None, &ids_once));
}
