//! The logs this crate and the generators below it write are accepted by upstream's released
//! V3 format layer (issue 23): the synthetic generators, compaction (success and failure),
//! pruning inside an open turn, and crash repair. Each log is checked by the released-format
//! oracle (`strata_conformance::format_oracle`), skipped loudly without it.

use strata_conformance::format_oracle::{assert_session_accepted, assert_sessions_accepted};
use strata_core::synth::{generate, generate_conversation, ConversationConfig, SynthConfig};
use strata_core::{fork_session, ForkMode, Session, TOOL_NOT_STARTED_TEXT};

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
        for event in any.own_events() {
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
