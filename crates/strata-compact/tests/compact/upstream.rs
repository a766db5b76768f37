//! The logs this crate and the generators below it write are accepted by upstream's released
//! V3 format layer (issue 23): the synthetic generators, compaction (success and failure),
//! pruning inside an open turn, and crash repair. Each log is checked by the released-format
//! oracle (`strata_conformance::format_oracle`), skipped loudly without it.

use strata_conformance::format_oracle::assert_session_accepted;
use strata_core::synth::{generate, generate_conversation, ConversationConfig, SynthConfig};

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
