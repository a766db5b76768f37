//! Properties on random realistic sessions (`strata_core::synth`), issue 5 "Tests".

use proptest::prelude::*;
use strata_compact::deadline::block_on;
use strata_compact::IdGenerator;
use strata_compact::{
    CompactionConfig, CompactionOutcome, Compactor, ExtractiveSummarizer, Pruner, PrunerConfig,
    Retain, Trigger,
};
use strata_core::Session;

use crate::common::{
    assert_pairs_together, last_time, messages, open_turn, project, replay, synth,
};

fn trigger(choice: u8) -> Trigger {
    match choice % 3 {
        0 => Trigger::Manual,
        1 => Trigger::Pressure,
        _ => Trigger::Overflow,
    }
}

/// One compaction round with every check of issue 5; returns whether it compacted.
fn compact_and_check(
    session: &mut Session,
    compactor: &Compactor,
    trigger: Trigger,
    seed: u64,
) -> bool {
    let old_nodes = session.surface().nodes().to_vec();
    let old_messages = messages(session);
    let old_generation = session.surface().replace_generation();
    let Some(plan) = compactor.plan(session, trigger).expect("a plan or nothing") else {
        return false;
    };
    let region = plan.region().clone();
    assert_eq!(
        plan.shadowed(),
        &old_nodes[region.start_index..=region.end_index]
    );
    // §5.9: the summary request is the exact head of the derived messages.
    let request = plan.summary_request(session);
    let head = project(session, &old_nodes[..=region.end_index]);
    let sent: Vec<_> = request.messages.iter().map(|m| m.value().clone()).collect();
    assert_eq!(sent, head);
    assert_eq!(sent[..], old_messages[..sent.len()]);
    assert_eq!(
        request.shadowed_from,
        project(session, &old_nodes[..region.start_index]).len()
    );

    let result = block_on(compactor.summarize(&request, &ExtractiveSummarizer));
    let ids = IdGenerator::seeded(seed).next_ids();
    let batch = compactor
        .finish(&plan, session, result, &ids)
        .expect("finish");
    let first = session.len();
    assert_eq!(batch.first_seq.get(), first as u64);
    session
        .append_batch(batch.candidates, last_time(session))
        .expect("the core accepts every batch the compactor builds");
    let types: Vec<&str> = session.events().unwrap()[first..]
        .iter()
        .map(|e| e.event_type().as_str())
        .collect();
    match batch.outcome {
        CompactionOutcome::Compacted {
            checkpoint_seq,
            n_shadowed,
            ..
        } => {
            assert_eq!(
                types,
                [
                    "compaction/start",
                    "compaction/summary",
                    "user/message",
                    "compaction/end"
                ]
            );
            assert!(session.events().unwrap()[first + 3]
                .data()
                .get("error")
                .is_none());
            assert_eq!(n_shadowed, region.end_index - region.start_index + 1);
            // The checkpoint takes exactly the span's place on the surface…
            let mut expected_nodes = old_nodes[..region.start_index].to_vec();
            expected_nodes.push(checkpoint_seq);
            expected_nodes.extend_from_slice(&old_nodes[region.end_index + 1..]);
            assert_eq!(session.surface().nodes(), expected_nodes.as_slice());
            assert_eq!(session.surface().replace_generation(), old_generation + 1);
            // …and in the derived messages.
            let mut expected = project(session, &old_nodes[..region.start_index]);
            expected.extend(project(session, &[checkpoint_seq]));
            expected.extend(project(session, &old_nodes[region.end_index + 1..]));
            assert_eq!(messages(session), expected);
            // It cites its bracket, its summary and every shadowed node.
            let cited = session.events().unwrap()[first + 2]
                .sources()
                .expect("sources")
                .to_vec();
            assert_eq!(cited[0].get(), first as u64);
            assert_eq!(cited[1].get(), first as u64 + 1);
            assert_eq!(&cited[2..], plan.shadowed());
            assert_pairs_together(&messages(session));
            true
        }
        CompactionOutcome::Failed { error } => {
            assert_eq!(types, ["compaction/start", "compaction/end"]);
            assert_eq!(
                session.events().unwrap()[first + 1].data()["error"],
                error.as_str()
            );
            assert_eq!(session.surface().nodes(), old_nodes.as_slice());
            assert_eq!(messages(session), old_messages);
            false
        }
    }
}

fn assert_replays(session: &Session) {
    let replayed = replay(session);
    assert_eq!(replayed.surface().nodes(), session.surface().nodes());
    assert_eq!(
        replayed.surface().replace_generation(),
        session.surface().replace_generation()
    );
    assert_eq!(messages(&replayed), messages(session));
}

strata_testkit::proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn compaction_is_accepted_exact_and_replays(
        events in 30_u64..500,
        seed in any::<u64>(),
        compact_every in 0_u64..6,
        prune_rate in 0.0_f64..0.4,
        content_bytes in 8_usize..300,
        choice in any::<u8>(),
        retain in 0_u64..4_000,
        rounds in 1_usize..3,
    ) {
        let mut session = synth(events, seed, compact_every, prune_rate, content_bytes);
        let trigger = trigger(choice);
        if trigger != Trigger::Manual {
            open_turn(&mut session);
        }
        let config = CompactionConfig {
            context_window: Some(1_000_000),
            retain: Retain::Tokens(retain),
            ..CompactionConfig::default()
        };
        let compactor = Compactor::new(config).unwrap();
        for round in 0..rounds {
            compact_and_check(&mut session, &compactor, trigger, seed ^ round as u64);
        }
        assert_replays(&session);
    }

    #[test]
    fn pruning_is_accepted_keeps_ids_and_replays(
        events in 30_u64..400,
        seed in any::<u64>(),
        compact_every in 0_u64..6,
        content_bytes in 50_usize..1_500,
        threshold in 100_usize..1_000,
    ) {
        let mut session = synth(events, seed, compact_every, 0.0, content_bytes);
        // Pruning runs inside an open turn, as the agent loop's pre-step does (R16).
        open_turn(&mut session);
        let config = PrunerConfig { threshold_chars: threshold, head_chars: threshold / 3, tail_chars: threshold / 4 };
        let pruner = Pruner::new(config).unwrap();
        let old_nodes = session.surface().nodes().to_vec();
        let old_messages = messages(&session);
        let plan = pruner.plan(&session);
        let first = session.len();
        let n = plan.results.len();
        session.append_batch(plan.candidates.clone(), last_time(&session)).expect("the core accepts every prune");
        prop_assert_eq!(session.len(), first + 2 * n);
        prop_assert_eq!(session.surface().len(), old_nodes.len());
        let new_messages = messages(&session);
        prop_assert_eq!(new_messages.len(), old_messages.len());
        for result in &plan.results {
            let position = old_nodes.iter().position(|seq| *seq == result.seq).unwrap();
            let rewritten = session.surface().nodes()[position];
            prop_assert_ne!(rewritten, result.seq);
            let before = session.project(result.seq).unwrap();
            let after = session.project(rewritten).unwrap();
            prop_assert_eq!(before.id(), after.id());
            prop_assert!(result.chars_after <= threshold && result.chars_after < result.chars_before);
            prop_assert!(result.tokens_after < result.tokens_before);
        }
        // Everything else is untouched, and a second pass finds nothing new.
        for (old, new) in old_nodes.iter().zip(session.surface().nodes()) {
            if !plan.results.iter().any(|r| r.seq == *old) {
                prop_assert_eq!(old, new);
            }
        }
        prop_assert!(pruner.plan(&session).is_empty());
        assert_replays(&session);
    }
}
