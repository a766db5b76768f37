//! The second differential suite (issue 23): strata against upstream's released V3 format layer
//! (the `@deepseek-ai/dsh-session-format*` packages, driven by `check.mjs` of the
//! released-format oracle; see `strata_conformance::format_oracle`).
//!
//! Two halves:
//! - **writer paths** ([`writers`]): every strata writer — the agent loop through the `strata`
//!   binary (scripted model, real tools, retries, cancel, crash and resume), compaction (LLM-like
//!   and extractive summarizers, success and failure), pruning inside a turn, crash repair at
//!   every cut, both forks at every seq, `migrate` of `fixtures/v0`, import/export/convert, the
//!   synthetic generators and the shipped `examples/*.jsonl` — and upstream must accept every
//!   log written;
//! - **verdict agreement** ([`corpus`], [`mutate`]): valid generated V3 logs and thousands of
//!   single-mutation variants of them; strata (the store's reader and the core's restore, as
//!   `strata validate` loads a file) and upstream must give the same verdict, and for a refusal
//!   name the same event, with strata's message containing upstream's text.
//!
//! Known disagreements (strata does not have every upstream rule yet) are listed in
//! `known-disagreements.txt` beside this file, keyed coarsely ([`agree`]); a disagreement not
//! listed fails the suite, and so does a listed one whose class now fully agrees (delete it).
//! Refusals for rules of dsh-session rather than the format layer (message shapes) are reported
//! by rule id, not as disagreements.
//!
//! Environment:
//! - `STRATA_RELEASED_SEED=N` (or `A,B,C`, or a range `A-B`) — the seeds of the mutation
//!   corpus (default: one fresh seed each run, printed); the regression seeds in
//!   [`REGRESSION_SEEDS`] run every time; bless from a range of seeds so that rare classes are
//!   listed;
//! - `STRATA_RELEASED_CASES=N` — mutations per base log per seed (default 40);
//! - `STRATA_BLESS=1` — rewrite `known-disagreements.txt` from this run instead of checking it;
//! - `STRATA_REQUIRE_FORMAT_ORACLE=1` — fail, instead of skipping, without `node` or the oracle
//!   (`FORMAT_ORACLE_HOME`, default `~/.cache/strata-format-oracle`) or without the `strata`
//!   binary (built by `cargo test --workspace`; `STRATA_BIN` names another);
//! - `STRATA_RELEASED_KEEP=1` — keep the scratch folder of logs.
//!
//! This is a `harness = false` test: it prints its tables and result line itself.

mod agree;
mod cli;
mod corpus;
mod mutate;
mod rng;
mod strata;
mod writers;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use strata_conformance::format_oracle::{FormatOracle, HOME_ENV, REQUIRE_ENV};

/// Seeds every run checks besides its fresh one: their classes make stale entries of the
/// expectation file deterministic. Add a seed here when a fresh one found something.
pub const REGRESSION_SEEDS: &[u64] = &[1, 23, 4242];

/// Concurrent `node` processes for the oracle (the CI machine has 2 cores).
const ORACLE_PROCESSES: usize = 2;

/// Writes straight to stderr: test output capture never hides it.
pub fn loud(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|value| value == "1")
}

fn skip(reason: &str) -> ExitCode {
    loud(&format!(
        "\n==================== SKIP ====================\n\
         strata-conformance released suite NOT RUN: {reason}\n\
         install the released-format oracle with its setup.sh (needs node and npm) or set\n\
         {HOME_ENV}; {REQUIRE_ENV}=1 turns this skip into a failure\n\
         ==============================================\n"
    ));
    if required() {
        loud(&format!(
            "{REQUIRE_ENV}=1: failing because the oracle is unavailable\n"
        ));
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `N`, `A,B,C` or `A-B`.
fn parse_seeds(text: &str) -> Option<Vec<u64>> {
    let text = text.trim();
    if let Some((from, to)) = text.split_once('-') {
        let (from, to) = (
            from.trim().parse::<u64>().ok()?,
            to.trim().parse::<u64>().ok()?,
        );
        return (from <= to && to - from < 10_000).then(|| (from..=to).collect());
    }
    text.split(',')
        .map(|seed| seed.trim().parse::<u64>().ok())
        .collect()
}

fn main() -> ExitCode {
    let broken = agree::self_check();
    if !broken.is_empty() {
        loud(&format!(
            "released: FAIL the suite's classifier: {}\n",
            broken.join("\n  ")
        ));
        return ExitCode::FAILURE;
    }
    let oracle = match FormatOracle::find() {
        Ok(oracle) => oracle,
        Err(reason) => return skip(&reason),
    };
    let started = Instant::now();
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("released-suite");
    let _ = std::fs::remove_dir_all(&scratch);
    if let Err(error) = std::fs::create_dir_all(&scratch) {
        loud(&format!(
            "released: FAIL cannot create {}: {error}\n",
            scratch.display()
        ));
        return ExitCode::FAILURE;
    }
    let mut failures: Vec<String> = Vec::new();

    // Writer paths.
    let binary = cli::find();
    if let Err(why) = &binary {
        loud(&format!(
            "\n** SKIP (writer paths of the strata binary): {why}\n\
             ** `cargo test --workspace` builds it; {REQUIRE_ENV}=1 makes this a failure\n\n"
        ));
        if required() {
            failures.push(format!("the strata binary is missing: {why}"));
        }
    }
    let written = writers::run(&scratch.join("writers"), binary.as_ref().ok());
    failures.extend(
        written
            .errors
            .iter()
            .map(|error| format!("writer: {error}")),
    );
    let writer_started = Instant::now();
    let files: Vec<PathBuf> = written.logs.iter().map(|log| log.file.clone()).collect();
    let writer_verdicts = match oracle.check_many(&files, ORACLE_PROCESSES) {
        Ok(verdicts) => verdicts,
        Err(error) => {
            loud(&format!(
                "released: FAIL the oracle failed on the writer logs: {error}\n"
            ));
            return ExitCode::FAILURE;
        }
    };
    let writer_time = writer_started.elapsed();

    // Verdict agreement.
    let fresh: Vec<u64> = match std::env::var("STRATA_RELEASED_SEED") {
        Ok(text) => match parse_seeds(&text) {
            Some(seeds) => seeds,
            None => {
                loud(&format!(
                    "released: FAIL STRATA_RELEASED_SEED={text:?} is not a seed, a list \
                     (1,5,9) or a range (1-20)\n"
                ));
                return ExitCode::FAILURE;
            }
        },
        Err(_) => vec![rng::fresh_seed()],
    };
    let per_base = std::env::var("STRATA_RELEASED_CASES")
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok())
        .unwrap_or(40);
    loud(&format!(
        "released: mutation seeds {fresh:?} (STRATA_RELEASED_SEED=N reproduces seed N), \
         regression seeds {REGRESSION_SEEDS:?}\n"
    ));
    let mut bases = match corpus::bases() {
        Ok(bases) => bases,
        Err(error) => {
            loud(&format!("released: FAIL building the base logs: {error}\n"));
            return ExitCode::FAILURE;
        }
    };
    // The agent loop's logs (retries, real tools, Ctrl-C) that upstream accepted are bases too.
    for (log, verdict) in written.logs.iter().zip(&writer_verdicts) {
        if verdict.ok && matches!(log.path, "cli-run" | "cli-chat" | "cli-cancel") {
            match corpus::from_file(&format!("{}-{}", log.path, bases.len()), &log.file) {
                Ok(base) => bases.push(base),
                Err(error) => failures.push(format!("base {}: {error}", log.file.display())),
            }
        }
    }
    let mut seeds: Vec<(u64, bool)> = REGRESSION_SEEDS.iter().map(|&seed| (seed, true)).collect();
    for &seed in &fresh {
        if !REGRESSION_SEEDS.contains(&seed) {
            seeds.push((seed, false));
        }
    }
    let cases = mutate::corpus(&bases, &seeds, per_base);
    let case_dir = scratch.join("cases");
    let mut case_files = Vec::with_capacity(cases.len());
    for (index, case) in cases.iter().enumerate() {
        let path = case_dir.join(format!("{index:05}-{}.v3.jsonl", case.kind));
        if let Err(error) = case.write(&path) {
            loud(&format!(
                "released: FAIL writing {}: {error}\n",
                path.display()
            ));
            return ExitCode::FAILURE;
        }
        case_files.push(path);
    }
    let strata_started = Instant::now();
    let strata_verdicts: Vec<strata::StrataVerdict> = case_files
        .iter()
        .map(|path| strata::verdict(path))
        .collect();
    let strata_time = strata_started.elapsed();
    let oracle_started = Instant::now();
    let upstream = match oracle.check_many(&case_files, ORACLE_PROCESSES) {
        Ok(verdicts) => verdicts,
        Err(error) => {
            loud(&format!(
                "released: FAIL the oracle failed on the corpus: {error}\n"
            ));
            return ExitCode::FAILURE;
        }
    };
    let oracle_time = oracle_started.elapsed();

    for ((case, verdict), file) in cases.iter().zip(&upstream).zip(&case_files) {
        if case.kind == "unchanged" && !verdict.ok {
            failures.push(format!(
                "base log {} is refused by upstream, so its mutations test nothing: {verdict} ({})",
                case.base,
                file.display()
            ));
        }
    }
    let expectations_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/released/known-disagreements.txt");
    let report = agree::Report::build(
        &written.logs,
        &writer_verdicts,
        &cases,
        &case_files,
        &strata_verdicts,
        &upstream,
    );
    loud(&report.tables());
    let bless = std::env::var("STRATA_BLESS").is_ok_and(|value| value == "1");
    if bless {
        match std::fs::write(&expectations_path, report.expectation_file()) {
            Ok(()) => loud(&format!(
                "released: STRATA_BLESS=1 wrote {} ({} entries)\n",
                expectations_path.display(),
                report.keys().len()
            )),
            Err(error) => failures.push(format!("{}: {error}", expectations_path.display())),
        }
    } else {
        let known = match std::fs::read_to_string(&expectations_path) {
            Ok(text) => agree::parse_expectations(&text),
            Err(error) => {
                failures.push(format!("{}: {error}", expectations_path.display()));
                Default::default()
            }
        };
        failures.extend(report.check(&known));
    }
    let keep = std::env::var("STRATA_RELEASED_KEEP").is_ok_and(|value| value == "1");
    if keep || !failures.is_empty() {
        loud(&format!("released: logs kept in {}\n", scratch.display()));
    } else {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    for failure in failures.iter().take(60) {
        loud(&format!("FAIL {failure}\n"));
    }
    if failures.len() > 60 {
        loud(&format!("… and {} more failures\n", failures.len() - 60));
    }
    loud(&format!(
        "released: {} writer logs, {} cases ({} seeds) in {:.1?} (writers checked in {:.1?}, \
         strata {:.1?}, oracle {:.1?}); mutation seeds {fresh:?}\n{} failed\n",
        written.logs.len(),
        cases.len(),
        seeds.len(),
        started.elapsed(),
        writer_time,
        strata_time,
        oracle_time,
        failures.len()
    ));
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
