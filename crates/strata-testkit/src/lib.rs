//! strata-testkit: test support shared by strata's crates. It is only ever a dev-dependency,
//! so nothing here reaches a library's non-test code (strata-core's "no I/O" holds).
//!
//! It holds the file faults the store's and the migration's tests stage alike ([`files`]), and
//! [`proptest!`](crate::proptest!): proptest's macro, run in two passes.
//!
//! 1. **The fixed pass** runs the config the test gives, on its fixed seed (or on
//!    [`FIXED_SEED`] when it asked for a random one). Its cases are the same on every run, so
//!    what passed yesterday is still checked today, and a failure there is deterministic.
//! 2. **The fresh pass** runs the same property on a seed new to this run: from
//!    `STRATA_PROPTEST_SEED` (a `u64`) when set, else from the OS's randomness. Every CI run
//!    thus explores cases no earlier run saw; when one fails, the panic names the seed and the
//!    exact command that reruns that test on it.
//!
//! Either pass saves a failure's shrunk case with proptest's
//! [`FileFailurePersistence::SourceParallel`] under `proptest-regressions/` beside the test's
//! source (`src/foo/bar.rs` -> `proptest-regressions/foo/bar.txt`), and every later run replays
//! the saved cases first. Those files are committed: a seed found once is checked forever. See
//! `docs/testing.md`.
//!
//! ```
//! use proptest::prelude::*;
//!
//! // In a test module, each function below carries `#[test]`.
//! strata_testkit::proptest! {
//!     #![proptest_config(ProptestConfig::with_cases(64))]
//!     fn addition_commutes(a in 0u32..1000, b in 0u32..1000) {
//!         prop_assert_eq!(a + b, b + a);
//!     }
//! }
//!
//! fn a_slow_property() {
//!     // A slow property keeps its fixed cases and runs fewer fresh ones.
//!     strata_testkit::proptest!(
//!         strata_testkit::Passes::from(ProptestConfig::with_cases(48)).fresh_cases(16),
//!         |(n in 0u64..12)| { prop_assert!(n < 12); }
//!     );
//! }
//! # addition_commutes();
//! # a_slow_property();
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::any::Any;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::panic::{self, AssertUnwindSafe};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};

#[doc(hidden)]
pub use proptest as __proptest;

pub mod files;

/// The fixed pass's seed for a property whose config asks for a random one. Sites with a
/// fixed seed of their own keep it (their first pass is exactly what they ran before).
pub const FIXED_SEED: u64 = 0x5eed_c0de;

/// The variable that names the fresh pass's seed, to reproduce a failure.
pub const SEED_VAR: &str = "STRATA_PROPTEST_SEED";

/// The folder, beside each test's source root, that keeps the shrunk failing cases.
pub const REGRESSIONS: &str = "proptest-regressions";

/// The two passes of a property: the fixed pass's config and the fresh pass's case count.
///
/// Built from a proptest [`Config`] (`Passes::from(config)`, which the macro does for a bare
/// config); [`Passes::fresh_cases`] lowers the fresh pass's budget for a slow property so that
/// the second pass does not double its time.
#[derive(Clone, Debug)]
pub struct Passes {
    /// The fixed pass's config; the fresh pass is the same config on another seed.
    pub fixed: Config,
    /// How many cases the fresh pass runs (by default as many as the fixed pass).
    pub fresh_cases: u32,
}

impl From<Config> for Passes {
    /// Pins a random seed to [`FIXED_SEED`] and turns failure persistence on where the config
    /// had it off (`None`): a failure found in any pass must be kept as a regression.
    fn from(mut fixed: Config) -> Self {
        if fixed.rng_seed == RngSeed::Random {
            fixed.rng_seed = RngSeed::Fixed(FIXED_SEED);
        }
        if fixed.failure_persistence.is_none() {
            fixed.failure_persistence = Some(Box::new(FileFailurePersistence::SourceParallel(
                REGRESSIONS,
            )));
        }
        Passes {
            fresh_cases: fixed.cases,
            fixed,
        }
    }
}

impl Passes {
    /// The fresh pass runs `cases` cases instead of the fixed pass's count.
    pub fn fresh_cases(mut self, cases: u32) -> Self {
        self.fresh_cases = cases;
        self
    }

    /// The fixed pass's seed.
    pub fn fixed_seed(&self) -> u64 {
        match self.fixed.rng_seed {
            RngSeed::Fixed(seed) => seed,
            // `From<Config>` pins it; a hand-built `Passes` may not have.
            RngSeed::Random => FIXED_SEED,
        }
    }

    /// The configs of the two passes, in order: the fixed one, then one on `fresh_seed`.
    pub fn configs(&self, fresh_seed: u64) -> [Config; 2] {
        let mut fixed = self.fixed.clone();
        fixed.rng_seed = RngSeed::Fixed(self.fixed_seed());
        let mut fresh = fixed.clone();
        fresh.rng_seed = RngSeed::Fixed(fresh_seed);
        fresh.cases = self.fresh_cases;
        [fixed, fresh]
    }
}

/// Where a property lives, to name the command that reruns it. The macro fills it in from the
/// calling crate's compile-time environment.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Site {
    /// `CARGO_PKG_NAME`: the `-p` argument.
    pub package: &'static str,
    /// `CARGO_CRATE_NAME`: the lib's name for unit tests, else the test target's.
    pub crate_name: &'static str,
    /// `CARGO_BIN_NAME`, set when the test is a binary's unit test.
    pub bin: Option<&'static str>,
    /// `module_path!()` at the property.
    pub module_path: &'static str,
    /// The test function's name, where the macro defines it.
    pub test_fn: Option<&'static str>,
}

/// The [`Site`] of the property the macro is expanded in.
#[doc(hidden)]
#[macro_export]
macro_rules! __site {
    ($test_fn:expr) => {
        $crate::Site {
            package: ::core::env!("CARGO_PKG_NAME"),
            crate_name: ::core::env!("CARGO_CRATE_NAME"),
            bin: ::core::option_env!("CARGO_BIN_NAME"),
            module_path: ::core::module_path!(),
            test_fn: $test_fn,
        }
    };
}

impl Site {
    /// The cargo argument that selects the test binary: `--lib`, `--bin NAME` or `--test NAME`.
    pub fn target(&self) -> String {
        if let Some(bin) = self.bin {
            format!("--bin {bin}")
        } else if self.crate_name == self.package.replace('-', "_") {
            "--lib".to_owned()
        } else {
            format!("--test {}", self.crate_name)
        }
    }

    /// The test's name as libtest filters it (`scan::tests::name`). libtest runs each test on
    /// a thread named so; without one (a test run on the main thread) it is rebuilt from the
    /// module path, less the crate's own name.
    pub fn test_name(&self) -> String {
        if let Some(name) = std::thread::current().name() {
            if name != "main" {
                return name.to_owned();
            }
        }
        let module = self
            .module_path
            .split_once("::")
            .map_or("", |(_, rest)| rest);
        match (module, self.test_fn) {
            ("", Some(test_fn)) => test_fn.to_owned(),
            ("", None) => self.module_path.to_owned(),
            (module, Some(test_fn)) => format!("{module}::{test_fn}"),
            (module, None) => module.to_owned(),
        }
    }

    /// The command that reruns this property with its fresh pass on `seed`.
    pub fn reproduce(&self, seed: u64) -> String {
        format!(
            "{SEED_VAR}={seed} cargo test -p {} {} {}",
            self.package,
            self.target(),
            self.test_name()
        )
    }
}

/// Reads a seed as `STRATA_PROPTEST_SEED` spells it: a decimal `u64`, or hex after `0x`.
pub fn parse_seed(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16).ok(),
        None => text.replace('_', "").parse().ok(),
    }
}

/// The fresh pass's seed, one per test process: `STRATA_PROPTEST_SEED` when it is set, else
/// drawn from the OS's randomness (std's `RandomState` keys, so no extra dependency).
///
/// # Panics
///
/// When `STRATA_PROPTEST_SEED` is set but is no `u64`: silently drawing a random seed instead
/// would look like a reproduction that is not one.
pub fn fresh_seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| match std::env::var(SEED_VAR) {
        Ok(text) => parse_seed(&text)
            .unwrap_or_else(|| panic!("{SEED_VAR}={text:?} is not a u64 (decimal or 0x hex)")),
        Err(_) => random_seed(),
    })
}

fn random_seed() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    // The keys are random per process; the clock only spreads seeds drawn in one process.
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    hasher.write_u128(nanos);
    hasher.finish()
}

/// Runs `pass` on the fixed pass's config, then on the fresh pass's (seeded by
/// [`fresh_seed`]). `pass` runs one proptest and panics on its failure, as `proptest!` does;
/// the panic is re-raised with the pass, its seed and the command that reproduces it.
#[doc(hidden)]
pub fn run(site: &Site, passes: Passes, pass: impl FnMut(Config)) {
    run_seeded(site, passes, fresh_seed(), pass);
}

/// [`run`] with the fresh pass on `fresh_seed`.
#[doc(hidden)]
pub fn run_seeded(site: &Site, passes: Passes, fresh_seed: u64, mut pass: impl FnMut(Config)) {
    let [fixed, fresh] = passes.configs(fresh_seed);
    let fixed_seed = passes.fixed_seed();
    let fixed_cases = fixed.cases;
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| pass(fixed))) {
        panic!(
            "{}\n\nproptest: the fixed-seed pass failed (the saved regressions, then seed \
             {fixed_seed:#x}'s {fixed_cases} cases: the same on every run), so any run \
             reproduces it:\n    \
             cargo test -p {} {} {}\nThe shrunk case is saved under {REGRESSIONS}/ beside its \
             source root; commit it so every run replays it first.",
            message(&*payload),
            site.package,
            site.target(),
            site.test_name(),
        );
    }
    let fresh_cases = fresh.cases;
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| pass(fresh))) {
        panic!(
            "{}\n\nproptest: the fresh-seed pass failed (seed {fresh_seed}, {fresh_cases} cases; \
             the fixed-seed pass before it passed). Reproduce it with:\n    {}\nThe shrunk case \
             is saved under {REGRESSIONS}/ beside its source root; commit it so every run \
             replays it first.",
            message(&*payload),
            site.reproduce(fresh_seed),
        );
    }
}

/// A panic payload's message (`panic!` with arguments carries a `String`, without a `&str`).
fn message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else if let Some(text) = payload.downcast_ref::<&'static str>() {
        text
    } else {
        "(a panic without a message)"
    }
}

/// proptest's [`proptest!`](proptest::proptest!) in two passes, a fixed seed then a fresh one
/// (see the [crate] docs). It takes the same forms: a block of test functions, with or without
/// `#![proptest_config(CONFIG)]`, or `proptest!(CONFIG, |(ARGS)| BODY)` inside a test. `CONFIG`
/// is a proptest `Config` or a [`Passes`].
#[macro_export]
macro_rules! proptest {
    (#![proptest_config($config:expr)]
     $(
        $(#[$meta:meta])*
        fn $test_name:ident($($arg:tt)+) $body:block
     )*) => {
        $(
            $(#[$meta])*
            fn $test_name() {
                $crate::run(
                    &$crate::__site!(::core::option::Option::Some(::core::stringify!($test_name))),
                    $crate::Passes::from($config),
                    |config| $crate::__proptest::proptest!(config, |($($arg)+)| $body),
                );
            }
        )*
    };
    ($(
        $(#[$meta:meta])*
        fn $test_name:ident($($arg:tt)+) $body:block
     )*) => {
        $crate::proptest! {
            #![proptest_config($crate::__proptest::test_runner::Config::default())]
            $($(#[$meta])* fn $test_name($($arg)+) $body)*
        }
    };
    ($config:expr, |($($arg:tt)+)| $body:expr) => {
        $crate::run(
            &$crate::__site!(::core::option::Option::None),
            $crate::Passes::from($config),
            |config| $crate::__proptest::proptest!(config, |($($arg)+)| $body),
        )
    };
}

#[cfg(test)]
mod tests;
