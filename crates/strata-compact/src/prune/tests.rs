//! Unit tests of middle elision.

use serde_json::json;

use super::*;

fn config(threshold: usize, head: usize, tail: usize) -> PrunerConfig {
    PrunerConfig {
        threshold_chars: threshold,
        head_chars: head,
        tail_chars: tail,
    }
}

fn texts(blocks: &[Value]) -> Vec<String> {
    blocks
        .iter()
        .map(|block| match block_text(block) {
            Some(text) => text.to_owned(),
            None => format!("<{}>", block["type"].as_str().unwrap_or("?")),
        })
        .collect()
}

#[test]
fn marker_is_39_code_points() {
    assert_eq!(MARKER.chars().count(), MARKER_CHARS);
}

#[test]
fn within_threshold_is_untouched() {
    let blocks = vec![json!({"type": "text", "text": "x".repeat(100)})];
    assert_eq!(prune_blocks(&blocks, &config(100, 30, 30)), None);
}

#[test]
fn one_block_keeps_head_marker_tail() {
    let text: String = ('a'..='z').cycle().take(200).collect();
    let blocks = vec![json!({"type": "text", "text": text})];
    let pruned = prune_blocks(&blocks, &config(100, 10, 5)).unwrap();
    let expected = format!("{}{MARKER}{}", &text[..10], &text[195..]);
    assert_eq!(texts(&pruned), vec![expected]);
    assert!(text_chars(&pruned) <= 100);
}

#[test]
fn span_across_blocks_drops_emptied_blocks_and_keeps_images_in_place() {
    let blocks = vec![
        json!({"type": "text", "text": "a".repeat(60)}),
        json!({"type": "image", "attachment": {"id": "i1"}}),
        json!({"type": "text", "text": "b".repeat(60)}),
        json!({"type": "text", "text": "c".repeat(60)}),
    ];
    // total 180; cut [50, 170).
    let pruned = prune_blocks(&blocks, &config(100, 50, 10)).unwrap();
    assert_eq!(
        texts(&pruned),
        vec![
            format!("{}{MARKER}", "a".repeat(50)),
            "<image>".to_owned(),
            "c".repeat(10),
        ]
    );
}

#[test]
fn slicing_is_by_code_point() {
    let text = "数".repeat(50);
    let blocks = vec![json!({"type": "text", "text": text})];
    let pruned = prune_blocks(&blocks, &config(45, 3, 2)).unwrap();
    assert_eq!(texts(&pruned), vec![format!("数数数{MARKER}数数")]);
}

#[test]
fn scanning_a_loaded_log_for_oversized_results_keeps_no_payload_trees() {
    use strata_core::synth::{generate_loaded, parsed_seqs, SynthConfig};

    let session = generate_loaded(&SynthConfig {
        events: 600,
        ..SynthConfig::default()
    })
    .unwrap();
    let before = parsed_seqs(&session);
    // A threshold no result reaches: the scan reads every result, rewrites none.
    let pruner = Pruner::new(config(1 << 30, 1, 1)).unwrap();
    let plan = pruner.plan(&session);
    assert!(plan.results.is_empty());
    assert_eq!(parsed_seqs(&session), before);
}
