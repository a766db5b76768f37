//! Unit tests of the extractive summary on a generated session.

use strata_core::synth::{generate, SynthConfig};

use super::*;
use crate::{CompactionConfig, Compactor, Trigger};

fn request(max_tokens: u32) -> SummaryRequest {
    // Synthetic compactions every 7 turns; the last lands well before the end, so the
    // manual region holds a checkpoint and several turns after it.
    let session = generate(&SynthConfig {
        events: 650,
        compact_every: 7,
        ..SynthConfig::default()
    })
    .unwrap();
    let compactor = Compactor::new(CompactionConfig::default()).unwrap();
    let plan = compactor.plan(&session, Trigger::Manual).unwrap().unwrap();
    let mut request = plan.summary_request(&session);
    request.max_tokens = max_tokens;
    request
}

#[test]
fn the_summary_has_every_section_and_is_deterministic() {
    let request = request(8_192);
    let summary = extract(&request);
    assert_eq!(summary, extract(&request));
    let text = &summary.text[0];
    let mut from = 0;
    for section in crate::summarizer::SUMMARY_SECTIONS {
        from += text[from..]
            .find(section)
            .unwrap_or_else(|| panic!("{section} missing"));
    }
    // Turns, tool outcomes, the file argument and the earlier checkpoint are carried.
    assert!(text.contains("- turn "), "{text}");
    assert!(text.contains("[tools: read_file ok"), "{text}");
    assert!(text.contains("- src/lib.rs"), "{text}");
    assert!(text.contains("- earlier: "), "{text}");
    assert_eq!(summary.provider, EXTRACTIVE_PROVIDER);
}

#[test]
fn a_small_cap_drops_the_oldest_turns_first() {
    let full = extract(&request(8_192)).text.remove(0);
    let capped = extract(&request(250)).text.remove(0);
    assert!(ByteEstimator.text_tokens(&full) >= 250);
    assert!(ByteEstimator.text_tokens(&capped) < 250, "{}", capped.len());
    assert!(capped.contains("earlier turns omitted"), "{capped}");
    let last_turn = full
        .lines()
        .rev()
        .find(|l| l.starts_with("- turn "))
        .unwrap();
    assert!(
        capped.contains(last_turn),
        "the newest turn survives: {capped}"
    );
}

// Issue 22: planning a compaction of a loaded log and summarizing it reads every shadowed
// message once and keeps none of their trees (a manual compaction of a long conversation
// shadows nearly the whole log), and summarizes as the born-parsed session does.
#[test]
fn summarizing_a_loaded_log_keeps_no_payload_trees() {
    use strata_core::synth::{generate_conversation, parsed_seqs, reloaded, ConversationConfig};
    let generated = generate_conversation(&ConversationConfig {
        nodes: 400,
        tool_every: 3,
        exchanges_per_turn: 20,
        ..ConversationConfig::default()
    })
    .unwrap();
    let loaded = reloaded(&generated).unwrap();
    let before = parsed_seqs(&loaded);
    let summary = |session: &strata_core::Session| {
        let compactor = Compactor::new(CompactionConfig::default()).unwrap();
        let plan = compactor.plan(session, Trigger::Manual).unwrap().unwrap();
        assert!(plan.shadowed().len() > 300, "{}", plan.shadowed().len());
        extract(&plan.summary_request(session))
    };
    let found = summary(&loaded);
    assert_eq!(parsed_seqs(&loaded), before);
    assert_eq!(found, summary(&generated));
    assert!(
        found.text[0].contains("[tools: read_file ok"),
        "{}",
        found.text[0]
    );
}
