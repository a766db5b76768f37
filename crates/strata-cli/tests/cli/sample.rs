//! The shipped `examples/sample.v3.jsonl` (issue 23 item 3): byte for byte what strata-core's
//! synth generator writes for [`CONFIG`], and a log upstream's released V3 layer accepts.
//! `STRATA_BLESS=1` rewrites it from the generator; the golden outputs of the commands that
//! read it (`tests/golden/`, `view.rs`) are blessed the same way.

use strata_core::synth::{generate, SynthConfig};
use strata_format::{encode_event_line, encode_header_line};

use super::*;

/// The generator settings the sample is made with: eight turns, compactions at turns 4 and 8,
/// a pruned tool result, parallel tool calls, escapes and non-ASCII text.
fn config() -> SynthConfig {
    SynthConfig {
        events: 120,
        seed: 42,
        content_bytes: 120,
        compact_every: 4,
        prune_rate: 0.3,
        id: "sample-session".into(),
    }
}

fn generated_bytes() -> Vec<u8> {
    let session = generate(&config()).expect("the generator produces valid logs");
    let mut bytes = Vec::new();
    encode_header_line(session.header(), &mut bytes).expect("header");
    for event in session.events().unwrap() {
        encode_event_line(event, &mut bytes);
    }
    bytes
}

#[test]
fn the_sample_is_the_generator_output_and_upstream_accepts_it() {
    let generated = generated_bytes();
    if std::env::var_os("STRATA_BLESS").is_some_and(|value| value == "1") {
        std::fs::write(sample(), &generated).expect("bless the sample");
    }
    let shipped = std::fs::read(sample()).expect("the sample");
    assert!(
        shipped == generated,
        "examples/sample.v3.jsonl is not what the synth generator writes \
         (rerun with STRATA_BLESS=1 to regenerate it)"
    );
    strata_conformance::format_oracle::assert_accepted(&[sample()]);
}
