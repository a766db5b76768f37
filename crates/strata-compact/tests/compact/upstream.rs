//! The logs this crate and the generators below it write are accepted by upstream's released
//! V3 format layer (issue 23): the synthetic generators (strata-core's and the store's),
//! compaction (success and failure), pruning inside an open turn, crash repair (more in
//! `crash.rs`) and both forks. Each log is checked by the released-format
//! oracle (`strata_conformance::format_oracle`), skipped loudly without it.

use strata_compact::deadline::block_on;
use strata_compact::IdGenerator;
use strata_compact::{
    restore_resumed, CompactionConfig, Compactor, ExtractiveSummarizer, MemoryHost, PruneError,
    Pruner, PrunerConfig, Trigger,
};
use strata_conformance::format_oracle::{
    assert_session_accepted, assert_sessions_accepted, write_log, FormatOracle,
};
use strata_core::repair::TOOL_NOT_STARTED_TEXT;
use strata_core::synth::{generate, generate_conversation, ConversationConfig, SynthConfig};
use strata_core::{fork_session, ForkMode, SeedOptions, Session, SessionHeader};
use strata_store::synth::turn_candidates;

use crate::common::{last_time, open_turn, Failing};

/// The generator's compactions write `compaction/summary` before the checkpoint, and its
/// prunes land inside an open turn.
#[test]
fn generated_logs_with_compactions_and_prunes_are_accepted() {
    for (seed, compact_every, prune_rate) in [(42, 4, 0.3), (7, 8, 0.05), (3, 2, 1.0)] {
        let session = generate(&SynthConfig {
            events: 600,
            seed,
            content_bytes: 80,
            compact_every,
            prune_rate,
            id: format!("synth-{seed}"),
        })
        .expect("the generator produces valid logs");
        let types: Vec<&str> = session
            .events()
            .unwrap()
            .iter()
            .map(|event| event.event_type().as_str())
            .collect();
        let summary = types
            .iter()
            .position(|kind| *kind == "compaction/summary")
            .expect("a compaction");
        assert_eq!(types[summary - 1], "compaction/start");
        assert_eq!(types[summary + 1], "user/message", "the checkpoint follows");
        assert!(types.contains(&"compaction/prune"), "a prune");
        assert_session_accepted(&format!("synth-{seed}"), &session);
    }
    let conversation = generate_conversation(&ConversationConfig::default())
        .expect("the generator produces valid logs");
    assert_session_accepted("conversation", &conversation);
}

/// The store's synthetic turns (the crash harness's writer), cut anywhere and reopened as a
/// crashed writer would be: every repaired log is accepted.
#[test]
fn the_store_synth_turns_cut_anywhere_and_repaired_are_accepted() {
    let header = SessionHeader::fresh("store-synth", 1).unwrap();
    let mut session = Session::create(header.clone()).unwrap();
    for turn in 1..=3 {
        let first_seq = session.len() as u64;
        session
            .append_batch(turn_candidates(turn, first_seq, 40), 1)
            .unwrap();
    }
    let rows = session.to_raw_events().unwrap();
    let repaired: Vec<(String, Session)> = (1..=rows.len())
        .map(|cut| {
            let resumed =
                restore_resumed(header.clone(), rows[..cut].to_vec(), SeedOptions::default())
                    .unwrap();
            (format!("cut-{cut}"), resumed.session)
        })
        .collect();
    let labelled: Vec<(&str, &Session)> = repaired
        .iter()
        .map(|(label, session)| (label.as_str(), session))
        .collect();
    assert_sessions_accepted(&labelled);
}

/// Both forks at every seq of a generated log (parallel tool calls, compaction brackets,
/// prunes): the closed-turn fork wherever the cut is outside a turn, the any-prefix fork
/// everywhere. A call the cut leaves announced but never started is closed with V3's exact
/// `TOOL_NOT_STARTED` repair, the only result upstream accepts for it.
#[test]
fn forks_at_every_seq_are_accepted() {
    let parent = generate(&SynthConfig {
        events: 240,
        seed: 11,
        content_bytes: 40,
        compact_every: 3,
        prune_rate: 0.5,
        id: "parent".into(),
    })
    .expect("the generator produces valid logs");
    let mut children: Vec<(String, Session)> = Vec::new();
    let mut n_not_started = 0;
    for at in 0..parent.len() as u64 {
        let any = fork_session(&parent, "child", Some(at), ForkMode::AnyPrefix, 1)
            .expect("an any-prefix fork takes any seq");
        for event in any.own_events().unwrap() {
            if event.data()["error"]["code"] == "TOOL_NOT_STARTED" {
                n_not_started += 1;
                let message = &event.data()["message"];
                let call_id = message["source"]["callId"].as_str().unwrap_or("");
                assert_eq!(
                    message["id"],
                    format!("interrupted-tool-result-{call_id}-{}", event.seq().get())
                );
                assert_eq!(
                    message["content"][0]["content"][0]["text"],
                    TOOL_NOT_STARTED_TEXT
                );
            }
        }
        children.push((format!("any-{at}"), any));
        if let Ok(closed) = fork_session(&parent, "child", Some(at), ForkMode::ClosedTurn, 1) {
            children.push((format!("closed-{at}"), closed));
        }
    }
    assert!(n_not_started > 0, "some cut leaves a call not started");
    assert!(children
        .iter()
        .any(|(label, _)| label.starts_with("closed-")));
    let labelled: Vec<(&str, &Session)> = children
        .iter()
        .map(|(label, session)| (label.as_str(), session))
        .collect();
    assert_sessions_accepted(&labelled);
}

/// A session whose tool results are over the pruner's threshold (10,000 code points each).
fn oversized() -> Session {
    generate(&SynthConfig {
        events: 120,
        seed: 5,
        content_bytes: 5_000,
        compact_every: 0,
        prune_rate: 0.0,
        id: "oversized".into(),
    })
    .expect("the generator produces valid logs")
}

/// Upstream refuses a `tool/result` rewrite after `turn/end`, so the pruner refuses to plan one
/// for appending there; inside the next open turn (the agent's pre-step) the same pass lands and
/// upstream accepts it.
#[test]
fn pruning_lands_only_inside_an_open_turn() {
    let finished = oversized();
    let pruner = Pruner::new(PrunerConfig::default()).unwrap();
    let plan = pruner.plan(&finished);
    assert!(!plan.is_empty());
    assert_eq!(
        pruner.plan_in_turn(&finished).unwrap_err(),
        PruneError::NoOpenTurn {
            n_results: plan.results.len()
        }
    );
    // What `strata prune` used to append after the session's last turn/end: the core refuses
    // it with upstream's rule and text (docs/rules.md R16) ...
    let refused = oversized()
        .append_batch(plan.candidates.clone(), 0)
        .unwrap_err();
    assert_eq!(
        refused.rule,
        strata_core::Rule::ToolResultReplaceOutsideTurn
    );
    assert_eq!(
        refused.message,
        "tool/result replacement is outside an open turn"
    );
    // ... and so does upstream, on a surface-only copy that holds it anyway.
    if let Ok(oracle) = FormatOracle::find() {
        let finished = oversized();
        let options = strata_core::SeedOptions {
            surface_only: true,
            ..strata_core::SeedOptions::default()
        };
        let mut after_turn = Session::create_with(finished.header().clone(), options).unwrap();
        after_turn
            .extend_restored(finished.to_raw_events().unwrap())
            .unwrap();
        after_turn.append_batch(plan.candidates, 0).unwrap();
        let path = write_log("prune-after-turn-end", &after_turn).unwrap();
        let verdict = oracle.check(std::slice::from_ref(&path)).unwrap().remove(0);
        assert_eq!(
            verdict.error.as_deref(),
            Some("SessionFormatError: tool/result replacement is outside an open turn"),
            "{verdict}"
        );
        let _ = std::fs::remove_file(path);
    }
    let mut session = finished;
    open_turn(&mut session);
    let plan = pruner.plan_in_turn(&session).expect("a turn is open");
    assert!(!plan.is_empty());
    let time = last_time(&session);
    session.append_batch(plan.candidates, time).unwrap();
    assert_session_accepted("pruned-in-turn", &session);
}

/// The pre-step drivers inside an open turn: pruning, then compaction with the extractive
/// summarizer; overflow recovery; a failed attempt (start and `end {error}`, no summary); and
/// a manual compaction outside any turn (`turn: null`).
#[test]
fn compactions_and_prunes_through_the_drivers_are_accepted() {
    let pruner = Pruner::new(PrunerConfig::default()).unwrap();
    let mut logs: Vec<(&str, Session)> = Vec::new();

    let mut session = oversized();
    open_turn(&mut session);
    let tokens = Compactor::new(window(1))
        .unwrap()
        .measure(&session)
        .total_tokens;
    // A window the session overflows by half, even after pruning.
    let compactor = Compactor::new(window(tokens / 10)).unwrap();
    let mut host = MemoryHost::new(session);
    let report = block_on(compactor.compact_if_needed(
        &mut host,
        &ExtractiveSummarizer,
        Some(&pruner),
        &mut IdGenerator::seeded(3),
    ))
    .unwrap();
    assert!(!report.pruned.is_empty(), "{report:?}");
    assert!(report.attempts.iter().any(|attempt| attempt.is_compacted()));
    logs.push(("pressure", host.into_session()));

    let mut session = oversized();
    open_turn(&mut session);
    let mut host = MemoryHost::new(session);
    let ids = IdGenerator::seeded(4).next_ids();
    let report =
        block_on(compactor.recover_overflow(&mut host, &ExtractiveSummarizer, Some(&pruner), &ids))
            .unwrap();
    assert!(report.retry);
    logs.push(("overflow", host.into_session()));

    let mut session = oversized();
    open_turn(&mut session);
    let mut host = MemoryHost::new(session);
    let ids = IdGenerator::seeded(5).next_ids();
    let failed = block_on(compactor.attempt(&mut host, Trigger::Overflow, &Failing, &ids))
        .unwrap()
        .unwrap();
    assert!(!failed.is_compacted());
    logs.push(("failed", host.into_session()));

    let mut host = MemoryHost::new(oversized());
    let ids = IdGenerator::seeded(6).next_ids();
    let manual = block_on(compactor.compact_now(&mut host, &ExtractiveSummarizer, &ids))
        .unwrap()
        .unwrap();
    assert!(manual.is_compacted());
    logs.push(("manual", host.into_session()));

    let labelled: Vec<(&str, &Session)> = logs
        .iter()
        .map(|(label, session)| (*label, session))
        .collect();
    assert_sessions_accepted(&labelled);
}

fn window(tokens: u64) -> CompactionConfig {
    CompactionConfig {
        context_window: Some(tokens.max(1)),
        ..CompactionConfig::default()
    }
}
