//! Unit tests of the ledger's call balance.

use strata_core::synth::{generate, SynthConfig};

use super::*;

#[test]
fn the_balance_of_a_whole_closed_session_is_zero_and_nodes_match() {
    let session = generate(&SynthConfig {
        events: 2_000,
        compact_every: 5,
        prune_rate: 0.3,
        ..SynthConfig::default()
    })
    .unwrap();
    let mut meter = TokenMeter::new();
    let ledger = meter.sync(&session);
    assert!(ledger.consistent);
    assert_eq!(ledger.nodes, session.surface().nodes());
    let balance: i64 = ledger.nodes.iter().map(|seq| ledger.delta_of(*seq)).sum();
    assert_eq!(balance, 0);
    let priced: u64 = ledger.nodes.iter().map(|seq| ledger.price_of(*seq)).sum();
    assert_eq!(priced, meter.measure(&session).surface_tokens);
}

#[test]
fn anchor_baseline_is_the_larger_count() {
    let anchor = Anchor {
        seq: strata_core::Seq::ZERO,
        provider_tokens: 10,
        estimated_tokens: 12,
        surface_tokens: 0,
    };
    assert_eq!(anchor.baseline(), 12);
}
