//! Unit tests of the ledger's call balance.

use strata_core::synth::{generate, generate_loaded, parsed_seqs, SynthConfig};

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

/// Stored rows served by seq, for lazy sessions.
struct Rows(Vec<strata_core::RawEvent>);

impl strata_core::EventSource for Rows {
    fn load(&self, seq: Seq) -> Result<strata_core::RawEvent, strata_core::SourceError> {
        self.0
            .get(seq.get() as usize)
            .cloned()
            .ok_or_else(|| strata_core::SourceError::new(seq.get(), "no such row"))
    }
}

// Issue 9: on a lazily resumed session the meter starts from the session's state instead of
// replaying history, and agrees with a replay on everything compaction reads.
#[test]
fn a_lazy_session_is_metered_like_a_full_one() {
    for (seed, compact_every, prune_rate) in [(1, 3, 0.3), (2, 5, 0.0), (3, 0, 0.5), (4, 2, 0.1)] {
        let generated = generate(&SynthConfig {
            events: 1_500,
            seed,
            compact_every,
            prune_rate,
            ..SynthConfig::default()
        })
        .unwrap();
        let rows = generated.to_raw_events().unwrap();
        for cut in [rows.len(), rows.len() - 3, rows.len() / 2 + 5] {
            let rows = &rows[..cut];
            let header = generated.header().clone();
            let options = strata_core::SeedOptions::default();
            let cause = strata_core::CloseCause::Interrupted;
            let full =
                Session::restore(header.clone(), rows.to_vec(), options.repaired(cause)).unwrap();
            let checkpoint = full.checkpoint().unwrap();
            let stored = full.to_raw_events().unwrap();
            let lazy = Session::resume(
                header,
                checkpoint,
                Vec::new(),
                Arc::new(Rows(stored)),
                options,
            )
            .unwrap();
            assert!(lazy.is_lazy());
            let mut full_meter = TokenMeter::new();
            let mut lazy_meter = TokenMeter::new();
            let expected = full_meter.measure(&full);
            let found = lazy_meter.measure(&lazy);
            assert_eq!(found.surface_tokens, expected.surface_tokens);
            assert_eq!(found.header_tokens, expected.header_tokens);
            assert_eq!(found.n_nodes, expected.n_nodes);
            assert_eq!(found.anchor.is_some(), expected.anchor.is_some());
            let (a, b) = (full_meter.sync(&full), lazy_meter.sync(&lazy));
            assert_eq!(a.nodes, b.nodes);
            assert_eq!(a.open_turn, b.open_turn);
            assert_eq!(a.bracket, b.bracket);
            assert!(b.consistent);
            for seq in &a.nodes {
                assert_eq!(a.price_of(*seq), b.price_of(*seq), "price of {seq}");
                assert_eq!(a.delta_of(*seq), b.delta_of(*seq), "delta of {seq}");
            }
        }
    }
}

#[test]
fn metering_a_loaded_log_keeps_no_payload_trees() {
    let session = generate_loaded(&SynthConfig {
        events: 600,
        compact_every: 4,
        ..SynthConfig::default()
    })
    .unwrap();
    let before = parsed_seqs(&session);
    assert!(before.len() < session.len() / 4, "{} parsed", before.len());
    let measured = TokenMeter::new().measure(&session);
    assert!(measured.surface_tokens > 0);
    // Every event is read once; a tree kept in its event would stay for the session's life.
    assert_eq!(parsed_seqs(&session), before);
}

// Issue 22: a lazily resumed session's meter prices every surface node from its event without
// keeping the node's tree (a resumed conversation of a million nodes is held as text).
#[test]
fn metering_a_lazy_session_keeps_no_payload_trees() {
    let generated =
        strata_core::synth::generate_conversation(&strata_core::synth::ConversationConfig {
            nodes: 300,
            tool_every: 3,
            ..strata_core::synth::ConversationConfig::default()
        })
        .unwrap();
    let full = strata_core::synth::reloaded(&generated).unwrap();
    let lazy = Session::resume(
        full.header().clone(),
        full.checkpoint().unwrap(),
        Vec::new(),
        Arc::new(Rows(full.to_raw_events().unwrap())),
        strata_core::SeedOptions::default(),
    )
    .unwrap();
    assert!(lazy.is_lazy());
    let parsed = || -> Vec<u64> {
        lazy.surface()
            .nodes()
            .iter()
            .filter(|seq| {
                lazy.event(**seq)
                    .is_some_and(|event| event.is_data_parsed())
            })
            .map(|seq| seq.get())
            .collect()
    };
    // Whatever the resume itself parsed may stay; metering adds nothing.
    let before = parsed();
    let measured = TokenMeter::new().measure(&lazy);
    assert_eq!(measured, TokenMeter::new().measure(&full));
    assert_eq!(measured.n_nodes, lazy.surface().len());
    assert_eq!(parsed(), before);
}
