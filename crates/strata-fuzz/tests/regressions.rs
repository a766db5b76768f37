//! Every input under `fuzz/regressions/<target>/` (each crash the fuzzers ever found, and
//! hand-picked nasty inputs) and `fuzz/corpus/<target>/` (the seed corpus) through its
//! harness: a plain test, so `cargo test --workspace` keeps every crash fixed without a fuzz
//! engine. A panic names the file.

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn replay(kind: &str) -> usize {
    let mut n = 0;
    for (target, harness) in strata_fuzz::TARGETS {
        let dir = repo_root().join("fuzz").join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.map(|entry| entry.unwrap().path()).collect();
        paths.sort();
        for path in paths.iter().filter(|path| path.is_file()) {
            let bytes = std::fs::read(path).unwrap();
            let outcome = std::panic::catch_unwind(|| harness(&bytes));
            assert!(outcome.is_ok(), "{target} panics on {}", path.display());
            n += 1;
        }
    }
    n
}

#[test]
fn every_regression_input_passes() {
    replay("regressions");
}

#[test]
fn every_seed_passes() {
    assert!(replay("corpus") > 0, "the seed corpus is missing");
}

#[test]
fn every_target_has_seeds() {
    for (target, _) in strata_fuzz::TARGETS {
        let seeds = strata_fuzz::seeds::corpus(target, &repo_root());
        assert!(!seeds.is_empty(), "{target} has no seeds");
        for (name, seed) in &seeds {
            let harness = strata_fuzz::TARGETS
                .iter()
                .find(|(t, _)| t == target)
                .unwrap()
                .1;
            let outcome = std::panic::catch_unwind(|| harness(seed));
            assert!(outcome.is_ok(), "{target} panics on its seed {name}");
        }
    }
}
