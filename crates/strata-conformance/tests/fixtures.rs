//! Every recorded v0 case (`fixtures/v0/rules`, 222 oracle-verified logs) through strata in
//! `--seed` and `--restore` mode: accept/reject, rule, index or seq, and upstream's message
//! must match the recorded oracle answers (docs/v0-rules.md is the prose for these cases).

use std::fs;
use std::path::Path;

use serde_json::Value;
use strata_conformance::{compare, run_strata, Mode};

#[test]
fn every_v0_rule_case_agrees_with_the_recorded_oracle() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/v0/rules");
    let cases = fs::read_to_string(dir.join("cases.tsv")).unwrap();
    let mut n_passed = 0;
    let mut failures = Vec::new();
    for line in cases.lines().filter(|line| !line.trim().is_empty()) {
        let name = line.split('\t').next().unwrap_or_default();
        let log = fs::read(dir.join(format!("{name}.jsonl"))).unwrap();
        // Read as JSON.parse reads the oracle's answers: lone surrogates are kept.
        let expected: Value = strata_core::json::parse(
            &fs::read_to_string(dir.join(format!("{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        for mode in [Mode::Seed, Mode::Restore, Mode::RestoreStreaming] {
            let outcome = run_strata(&log, mode);
            let differences = compare(&expected[mode.name()], &outcome);
            if differences.is_empty() {
                n_passed += 1;
            } else {
                failures.push(format!("{name}: {}", differences.join("; ")));
            }
        }
    }
    for failure in &failures {
        eprintln!("FAIL {failure}");
    }
    eprintln!("{n_passed} passed, {} failed", failures.len());
    assert!(
        failures.is_empty(),
        "{} of the v0 rule cases disagree",
        failures.len()
    );
    assert_eq!(n_passed, 3 * 222);
}
