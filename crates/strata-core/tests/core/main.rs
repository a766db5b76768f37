//! strata-core's acceptance suite: the session-core §11 test catalogue, every
//! rejection path, and property tests of the surface algebra.
//!
//! Behaviour cases live as data in `core/data/*.txt` (an event log, a `---`
//! separator, the rendered outcome on every entry path) and run through one
//! check function in `harness`; each test is named after its catalogue entry.
//! Set `STRATA_BLESS=1` to rewrite expected outcomes, then review the diff.

#[macro_use]
mod harness;

// §11.1 surface.spec: surface rules, folds, windows and derived messages.
mod surface;
// §11.2 canonical-envelopes.spec: envelope, data rules, metadata on every path.
mod canonical_envelopes;
// §11.3 session.spec: seeds, restores, shapes, headers, plans.
mod session;
// §11.4 repair.spec: closers for an open turn.
mod repair;
// §11.5 fork.spec: closed-turn and any-prefix forks.
mod fork;
// §11.7 derived-cache.spec: the derived-message cache.
mod derived_cache;
// Every Rule: coverage of all rejection paths.
mod rejections;
// §11.6 properties.spec and the surface algebra, property-tested.
mod properties;
// Issue 9: lazy resume from a checkpoint equals a full restore.
mod lazy;
// Issue 23: upstream's released V3 relational rules.
mod relations;
// Issue 25: V4 logs restored natively (docs/format-v4.md §5).
mod v4;

/// Every data module: its case file and the tests that run its cases.
const DATA_MODULES: &[(&str, &[&str])] = &[
    (surface::CASE_FILE, surface::CASE_TESTS),
    (
        canonical_envelopes::CASE_FILE,
        canonical_envelopes::CASE_TESTS,
    ),
    (session::CASE_FILE, session::CASE_TESTS),
    (repair::CASE_FILE, repair::CASE_TESTS),
    (fork::CASE_FILE, fork::CASE_TESTS),
    (relations::CASE_FILE, relations::CASE_TESTS),
];

// STYLE "Rules from data": every case in a data file is run by exactly one
// named test, and every named test has cases (no orphans either way).
#[test]
fn every_data_case_belongs_to_one_test() {
    for (file, tests) in DATA_MODULES {
        for name in harness::case_names(file) {
            let owners: Vec<&&str> = tests
                .iter()
                .filter(|test| name == **test || name.starts_with(&format!("{test}/")))
                .collect();
            assert_eq!(
                owners.len(),
                1,
                "case {name} in {file}.txt is run by {owners:?}"
            );
        }
        for test in *tests {
            let names = harness::case_names(file);
            assert!(
                names
                    .iter()
                    .any(|name| name == test || name.starts_with(&format!("{test}/"))),
                "test {test} has no case in {file}.txt"
            );
        }
    }
}
