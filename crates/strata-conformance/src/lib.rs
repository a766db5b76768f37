//! strata-conformance: differential tests of strata's v0 reading path against upstream.
//!
//! The reference is upstream's own implementation, `@deepseek-ai/dsh-session@0.1.0-rc.8`, driven
//! by the oracle in `../shared/oracle` (see its README). This crate holds the comparison: given
//! a v0 log, it runs strata's two v0 entry points (`--seed`, `--restore`), and checks them
//! against the oracle's JSON answer for the same log — accept or reject, the first failing
//! index or seq, the rule id and upstream's message; for accepted logs the surface seqs, the
//! derived messages, the event counts and the crash-repair closers. Two test binaries use it:
//! `tests/fixtures.rs` (the recorded oracle answers in `fixtures/v0/rules`, no Node needed) and
//! `tests/differential.rs` (generated logs against a live oracle; skipped loudly when Node or
//! the oracle is missing, unless `STRATA_REQUIRE_ORACLE=1`).
//!
//! [`format_oracle`] is the second reference, upstream's released V3 format layer (the
//! `@deepseek-ai/dsh-session-format*` packages), as a test helper: the tests of the writer
//! crates (strata-compact, strata-agent, strata-cli) ask it whether the logs they wrote are
//! accepted, through this crate as a dev-dependency. `tests/released` (harness-free, like
//! `tests/differential.rs`) is the second differential suite, against that layer: every strata
//! writer path's logs must be accepted, and strata's verdict must equal upstream's on
//! single-mutation corpora of generated V3 logs, up to the known disagreements listed in
//! `tests/released/known-disagreements.txt` (which may only shrink).
//!
//! It is a test crate: it writes no logs but the temporary files it hands the oracle, and is
//! left out of the workspace's default members so that a plain `cargo test` stays fast;
//! `cargo test --workspace` (CI) runs it. It sits above strata-store (cli → … → store → core)
//! and only other crates' tests depend on it. See ARCHITECTURE.md at the repository root.
//!
//! ```
//! use serde_json::json;
//! use strata_conformance::{compare, run_strata, Mode};
//!
//! let log = b"{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"turn\":1}}\n";
//! let outcome = run_strata(log, Mode::Seed);
//! let oracle = json!({"ok": true, "mode": "seed", "surface": [], "messages": [],
//!     "eventCount": 1, "sessionEventCount": 2, "endSeedAppended": true, "firstLiveSeq": 1,
//!     "replaceGeneration": 0});
//! assert_eq!(compare(&oracle, &outcome), Vec::<String>::new());
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub use compare::{compare, run_strata, Failure, Mode, Outcome, Summary, ORACLE_TIME};

pub mod format_oracle;

mod compare;
