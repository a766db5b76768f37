//! Tests of the two-pass proptest macro: the fixed pass first, the fresh seed printed and
//! reproducible on failure.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use proptest::prelude::*;

use super::*;

/// A config for a property that must fail here: nothing persisted (these tests fail on
/// purpose and must not write regression files into the repository), no shrinking (so the
/// reported input is the first case the seed generates, which tells seeds apart).
fn demo_config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        max_shrink_iters: 0,
        ..Config::default()
    }
}

/// Passes on the fixed pass, fails on the fresh pass's first case.
fn fails_in_the_fresh_pass(config: Config) {
    let fresh = config.rng_seed != RngSeed::Fixed(FIXED_SEED);
    proptest::proptest!(config, |(x in any::<u64>())| {
        prop_assert!(!fresh, "a fresh case: {}", x);
    });
}

/// The panic message of `run`.
fn failure(run: impl FnOnce()) -> String {
    let payload = panic::catch_unwind(AssertUnwindSafe(run)).expect_err("the property must fail");
    message(&*payload).to_owned()
}

/// The `x = N` line of proptest's "minimal failing input".
fn failing_input(message: &str) -> &str {
    let line = message
        .lines()
        .find(|line| line.contains("minimal failing input"))
        .unwrap_or_else(|| panic!("no failing input in {message}"));
    line.split("minimal failing input:")
        .nth(1)
        .map(str::trim)
        .unwrap_or_else(|| panic!("no failing input in {line}"))
}

#[test]
fn a_fresh_pass_failure_names_its_seed_and_the_command_that_reproduces_it() {
    let site = __site!(None);
    let run = |seed: u64| {
        failure(|| run_seeded(&site, demo_config(4).into(), seed, fails_in_the_fresh_pass))
    };
    let first = run(42);
    assert!(first.contains("fresh-seed pass failed (seed 42"), "{first}");
    let command = "STRATA_PROPTEST_SEED=42 cargo test -p strata-testkit --lib \
                   tests::a_fresh_pass_failure_names_its_seed_and_the_command_that_reproduces_it";
    assert!(first.contains(command), "{first}");
    // proptest's own report is kept above ours.
    assert!(first.contains("a fresh case:"), "{first}");
    // The same seed, the same case; another seed, another.
    assert_eq!(failing_input(&run(42)), failing_input(&first));
    assert_ne!(failing_input(&run(43)), failing_input(&first));
}

#[test]
fn a_fixed_pass_failure_says_any_run_reproduces_it() {
    let site = __site!(Some("ignored_when_the_thread_has_the_name"));
    let message = failure(|| {
        run_seeded(&site, demo_config(4).into(), 7, |config| {
            proptest::proptest!(config, |(x in any::<u64>())| {
                prop_assert!(x == u64::MAX, "any case");
            });
        })
    });
    assert!(
        message.contains("then seed 0x5eedc0de's 4 cases"),
        "{message}"
    );
    assert!(
        message.contains("cargo test -p strata-testkit --lib tests::a_fixed_pass_failure"),
        "{message}"
    );
    assert!(!message.contains(SEED_VAR), "{message}");
}

#[test]
fn the_fixed_pass_is_the_config_as_given_and_comes_first() {
    let given = Config {
        cases: 96,
        rng_seed: RngSeed::Fixed(0x1a2_7e55),
        failure_persistence: None,
        ..Config::default()
    };
    let passes = Passes::from(given.clone()).fresh_cases(16);
    let [fixed, fresh] = passes.configs(9);
    assert_eq!(fixed.cases, 96);
    assert_eq!(fixed.rng_seed, RngSeed::Fixed(0x1a2_7e55));
    assert_eq!(fresh.cases, 16);
    assert_eq!(fresh.rng_seed, RngSeed::Fixed(9));
    // Persistence is turned on in both passes, where the site had it off.
    let source_parallel = FileFailurePersistence::SourceParallel(REGRESSIONS);
    for config in [&fixed, &fresh] {
        let persistence = config
            .failure_persistence
            .as_ref()
            .expect("persistence is on");
        let file = persistence
            .as_any()
            .downcast_ref::<FileFailurePersistence>();
        assert_eq!(file, Some(&source_parallel), "{persistence:?}");
    }
    // A config that asks for a random seed gets the shared fixed one first; the fresh pass
    // keeps the fixed pass's count unless told otherwise.
    let [fixed, fresh] = Passes::from(Config::with_cases(8)).configs(9);
    assert_eq!(fixed.rng_seed, RngSeed::Fixed(FIXED_SEED));
    assert_eq!((fixed.cases, fresh.cases), (8, 8));

    let order = std::cell::RefCell::new(Vec::new());
    run_seeded(&__site!(None), Passes::from(given), 9, |config| {
        order.borrow_mut().push(config.rng_seed)
    });
    assert_eq!(
        order.into_inner(),
        [RngSeed::Fixed(0x1a2_7e55), RngSeed::Fixed(9)]
    );
}

#[test]
fn seeds_parse_as_decimal_or_hex() {
    assert_eq!(parse_seed("12345"), Some(12345));
    assert_eq!(parse_seed(" 18446744073709551615\n"), Some(u64::MAX));
    assert_eq!(parse_seed("0x5eed_c0de"), Some(0x5eed_c0de));
    assert_eq!(parse_seed("-1"), None);
    assert_eq!(parse_seed("random"), None);
    assert_eq!(parse_seed("18446744073709551616"), None);
}

#[test]
fn the_command_names_the_target_and_the_test() {
    let site = |crate_name, bin| Site {
        package: "strata-store",
        crate_name,
        bin,
        module_path: "integration::resume",
        test_fn: None,
    };
    assert_eq!(site("strata_store", None).target(), "--lib");
    assert_eq!(site("integration", None).target(), "--test integration");
    assert_eq!(
        site("strata_crash_writer", Some("strata-crash-writer")).target(),
        "--bin strata-crash-writer"
    );
    // Off libtest's named threads, the name is rebuilt from the module path.
    let off_libtest = |site: Site| {
        std::thread::Builder::new()
            .name("main".to_owned())
            .spawn(move || site.reproduce(3))
            .expect("a thread")
            .join()
            .expect("no panic")
    };
    assert_eq!(
        off_libtest(site("integration", None)),
        "STRATA_PROPTEST_SEED=3 cargo test -p strata-store --test integration resume"
    );
    let with_fn = Site {
        module_path: "strata_store::codec::tests",
        test_fn: Some("random_bytes_never_panic"),
        ..site("strata_store", None)
    };
    assert_eq!(
        off_libtest(with_fn),
        "STRATA_PROPTEST_SEED=3 cargo test -p strata-store --lib \
         codec::tests::random_bytes_never_panic"
    );
}

/// Set for the child process of `the_seed_variable_reproduces_a_fresh_failure`.
const CHILD_VAR: &str = "STRATA_TESTKIT_CHILD";

/// Body calls so far in this process (the child runs this one test alone).
static CALLS: AtomicU32 = AtomicU32::new(0);

// The child of the test below: through the macro, a property that passes its 4 fixed cases
// and fails on the first fresh one. A no-op unless the parent runs it.
crate::proptest! {
    #![proptest_config(demo_config(4))]
    #[test]
    fn child_fails_in_its_fresh_pass(x in any::<u64>()) {
        if std::env::var_os(CHILD_VAR).is_some() {
            let call = CALLS.fetch_add(1, Ordering::SeqCst);
            prop_assert!(call < 4, "a fresh case: {}", x);
        }
    }
}

/// The failure output of the child test run with the fresh seed `seed`.
fn child_output(seed: &str) -> String {
    let exe = std::env::current_exe().expect("the test binary");
    let output = Command::new(exe)
        .args([
            "tests::child_fails_in_its_fresh_pass",
            "--exact",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, "1")
        .env(SEED_VAR, seed)
        .env_remove("PROPTEST_RNG_SEED")
        .env_remove("PROPTEST_CASES")
        .output()
        .expect("the child runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "the child must fail:\n{text}");
    text
}

#[test]
fn the_seed_variable_reproduces_a_fresh_failure() {
    let first = child_output("12345");
    let command = "STRATA_PROPTEST_SEED=12345 cargo test -p strata-testkit --lib \
                   tests::child_fails_in_its_fresh_pass";
    assert!(first.contains(command), "{first}");
    assert!(
        first.contains("fresh-seed pass failed (seed 12345"),
        "{first}"
    );
    // The variable is what seeds the fresh pass: the same value fails on the same case as
    // before, and as an in-process run of that seed's first case does; another value does not.
    let case = failing_input(&first).to_owned();
    assert_eq!(failing_input(&child_output("12345")), case);
    assert_ne!(failing_input(&child_output("0x3039_0")), case);
    let in_process = failure(|| {
        let [_, fresh] = Passes::from(demo_config(4)).configs(12345);
        proptest::proptest!(fresh, |(x in any::<u64>())| {
            prop_assert!(false, "{}", x);
        });
    });
    assert_eq!(failing_input(&in_process), case);
}
