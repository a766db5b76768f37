//! Upstream's released V3 format layer as a test helper: "does dsh accept the log this test
//! wrote?".
//!
//! The oracle is `check.mjs` of the released-format oracle: upstream's MIT npm packages
//! `@deepseek-ai/dsh-session-format*` and a driver, installed outside this repository by the
//! oracle's `setup.sh` into `$FORMAT_ORACLE_HOME` (default `~/.cache/strata-format-oracle`).
//! No upstream code is part of strata; the driver calls the packages. It runs upstream's
//! released V3 codec and `restoreReleasedV3Artifact` — envelope, header, surface and the
//! relational rules (turns, steps, tool settlement, compaction brackets, prunes) — over a
//! JSONL file and prints one verdict line per file. A log it accepts may still break a
//! message-shape rule that lives in dsh-session, which was never published for V3: "accepted
//! here" is necessary for a valid V3 log, not sufficient.
//!
//! Tests of the writer crates call [`assert_accepted`] on the files they wrote (or
//! [`assert_session_accepted`] / [`assert_sessions_accepted`] on sessions they hold). Without `node` or the oracle folder the
//! check is skipped with a notice written straight to stderr (past the test harness's capture),
//! unless `STRATA_REQUIRE_FORMAT_ORACLE=1`, which makes a missing oracle a failure (CI).
//!
//! This module uses only std, serde_json and strata's JSONL codec, so any test crate can use
//! it as a dev-dependency.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use serde_json::Value;
use strata_core::Session;
use strata_format::{encode_event_line, encode_header_line};

/// Set to `1` to fail, instead of skipping, when the oracle is unavailable.
pub const REQUIRE_ENV: &str = "STRATA_REQUIRE_FORMAT_ORACLE";

/// Where the oracle is installed (default `~/.cache/strata-format-oracle`).
pub const HOME_ENV: &str = "FORMAT_ORACLE_HOME";

/// An installed oracle: `node` and the folder holding `check.mjs` and its packages.
#[derive(Clone, Debug)]
pub struct FormatOracle {
    home: PathBuf,
}

/// Upstream's answer for one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The file checked.
    pub file: PathBuf,
    /// Whether upstream's V3 layer accepted it.
    pub ok: bool,
    /// Upstream's refusal (`SessionFormatError: …`), when refused.
    pub error: Option<String>,
    /// The seq of the first event whose prefix already fails with that refusal.
    pub seq: Option<u64>,
    /// That event's row in the file (the header is row 0, so event `i` of the log is row
    /// `i + 1`): where it is even when its seq is not its position.
    pub row: Option<u64>,
    /// That event's type.
    pub event_type: Option<String>,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.ok {
            return write!(f, "{}: accepted", self.file.display());
        }
        write!(
            f,
            "{}: {}",
            self.file.display(),
            self.error.as_deref().unwrap_or("refused")
        )?;
        if let Some(seq) = self.seq {
            write!(f, " (at seq {seq}")?;
            if let Some(event_type) = &self.event_type {
                write!(f, ", {event_type}")?;
            }
            write!(f, ")")?;
        }
        Ok(())
    }
}

impl FormatOracle {
    /// The oracle this machine has, or why there is none. Looked up once per process.
    pub fn find() -> Result<&'static FormatOracle, String> {
        static FOUND: OnceLock<Result<FormatOracle, String>> = OnceLock::new();
        FOUND
            .get_or_init(find_oracle)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The folder holding `check.mjs`.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Upstream's verdict on each of `files`, in order, with refusals located (`--locate`,
    /// which re-checks prefixes of a refused log, so keep refused logs small). One `node`
    /// process for all of them.
    pub fn check(&self, files: &[PathBuf]) -> Result<Vec<Verdict>, String> {
        let mut child = Command::new("node")
            .arg(self.home.join("check.mjs"))
            .args(["--locate", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot run node: {error}"))?;
        let mut listing = String::new();
        for file in files {
            let absolute = std::path::absolute(file)
                .map_err(|error| format!("{}: {error}", file.display()))?;
            listing.push_str(&absolute.display().to_string());
            listing.push('\n');
        }
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(listing.as_bytes())
                .map_err(|error| format!("writing to check.mjs: {error}"))?;
        }
        let output = child
            .wait_with_output()
            .map_err(|error| format!("check.mjs: {error}"))?;
        let verdicts: Vec<Verdict> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(parse_verdict)
            .collect::<Result<_, _>>()?;
        if verdicts.len() != files.len() {
            return Err(format!(
                "check.mjs answered {} of {} files (exit {:?}): {}",
                verdicts.len(),
                files.len(),
                output.status.code(),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(verdicts)
    }

    /// [`check`](Self::check) split over up to `processes` concurrent `node` processes (each
    /// takes a contiguous share of `files`); the verdicts come back in the order of `files`. For
    /// corpora of thousands of logs, where one process would leave the other cores idle.
    pub fn check_many(&self, files: &[PathBuf], processes: usize) -> Result<Vec<Verdict>, String> {
        let processes = processes.clamp(1, files.len().max(1));
        let share = files.len().div_ceil(processes).max(1);
        let answers: Vec<Result<Vec<Verdict>, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = files
                .chunks(share)
                .map(|chunk| scope.spawn(move || self.check(chunk)))
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|_| Err("a check.mjs driver thread panicked".to_owned()))
                })
                .collect()
        });
        let mut verdicts = Vec::with_capacity(files.len());
        for answer in answers {
            verdicts.extend(answer?);
        }
        Ok(verdicts)
    }
}

/// Asserts that upstream's released V3 layer accepts every one of `files` (JSONL logs, raw);
/// skips loudly when the oracle is unavailable and not required (see the module docs).
///
/// # Panics
///
/// When a file is refused (naming each refusal and where it is), when the oracle cannot be
/// run, or when it is missing and `STRATA_REQUIRE_FORMAT_ORACLE=1`.
pub fn assert_accepted<P: AsRef<Path>>(files: &[P]) {
    let Some(oracle) = oracle_or_skip() else {
        return;
    };
    let files: Vec<PathBuf> = files.iter().map(|file| file.as_ref().to_owned()).collect();
    let verdicts = oracle
        .check(&files)
        .unwrap_or_else(|error| panic!("the format oracle failed: {error}"));
    let refused: Vec<String> = verdicts
        .iter()
        .filter(|verdict| !verdict.ok)
        .map(ToString::to_string)
        .collect();
    assert!(
        refused.is_empty(),
        "upstream's released V3 format layer refuses {} of {} logs:\n  {}",
        refused.len(),
        verdicts.len(),
        refused.join("\n  ")
    );
}

/// [`assert_accepted`] for a session held in memory: its header and events are written as a
/// JSONL log (strata's codec, as a store writes them) to a temporary file named after `label`,
/// which is removed once accepted and kept (its path in the panic message) when refused.
///
/// # Panics
///
/// As [`assert_accepted`], and when the temporary file cannot be written.
pub fn assert_session_accepted(label: &str, session: &Session) {
    assert_sessions_accepted(&[(label, session)]);
}

/// [`assert_session_accepted`] for many sessions, checked by one `node` process.
///
/// # Panics
///
/// As [`assert_session_accepted`].
pub fn assert_sessions_accepted(sessions: &[(&str, &Session)]) {
    if oracle_or_skip().is_none() {
        return;
    }
    let paths: Vec<PathBuf> = sessions
        .iter()
        .map(|(label, session)| {
            write_log(label, session)
                .unwrap_or_else(|error| panic!("writing {label} for the format oracle: {error}"))
        })
        .collect();
    assert_accepted(&paths);
    for path in paths {
        let _ = std::fs::remove_file(path);
    }
}

/// Writes `session` as a raw JSONL log in a fresh temporary file; returns its path.
pub fn write_log(label: &str, session: &Session) -> Result<PathBuf, String> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut bytes = Vec::new();
    encode_header_line(session.header(), &mut bytes).map_err(|error| error.to_string())?;
    for event in session.events().map_err(|error| error.to_string())? {
        encode_event_line(event, &mut bytes);
    }
    let name: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let path = std::env::temp_dir().join(format!(
        "strata-format-oracle-{}-{}-{name}.v3.jsonl",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, bytes).map_err(|error| format!("{}: {error}", path.display()))?;
    Ok(path)
}

/// The oracle, or `None` after the skip notice; panics when the oracle is required.
fn oracle_or_skip() -> Option<&'static FormatOracle> {
    match FormatOracle::find() {
        Ok(oracle) => Some(oracle),
        Err(why) if std::env::var(REQUIRE_ENV).is_ok_and(|value| value == "1") => {
            panic!("{REQUIRE_ENV}=1 but the released-format oracle is unavailable: {why}")
        }
        Err(why) => {
            static NOTICE: OnceLock<()> = OnceLock::new();
            NOTICE.get_or_init(|| {
                // Written to stderr itself, not through `eprintln!`, which the test harness
                // captures: a skip must be seen without `--nocapture`.
                let _ = writeln!(
                    std::io::stderr(),
                    "\n\
                     ************************************************************************\n\
                     ** SKIP: upstream's released V3 format layer did not check these logs:\n\
                     ** {why}\n\
                     ** Install the released-format oracle with its setup.sh (needs node and\n\
                     ** npm), or set {HOME_ENV}; {REQUIRE_ENV}=1 makes this a failure.\n\
                     ************************************************************************\n"
                );
            });
            None
        }
    }
}

fn find_oracle() -> Result<FormatOracle, String> {
    let home = match std::env::var_os(HOME_ENV) {
        Some(home) => PathBuf::from(home),
        None => PathBuf::from(std::env::var_os("HOME").ok_or("HOME is not set")?)
            .join(".cache/strata-format-oracle"),
    };
    for file in [
        "check.mjs",
        "node_modules/@deepseek-ai/dsh-session-format-v2-to-v3/package.json",
    ] {
        if !home.join(file).exists() {
            return Err(format!("{} is missing", home.join(file).display()));
        }
    }
    let ran = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !ran.is_ok_and(|status| status.success()) {
        return Err("`node` is not available".to_owned());
    }
    Ok(FormatOracle { home })
}

/// One line of `check.mjs` output.
fn parse_verdict(line: &str) -> Result<Verdict, String> {
    let value: Value = serde_json::from_str(line)
        .map_err(|error| format!("check.mjs printed {line:?}: {error}"))?;
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    Ok(Verdict {
        file: PathBuf::from(text("file").unwrap_or_default()),
        ok: value.get("ok").and_then(Value::as_bool) == Some(true),
        error: text("error"),
        seq: value.get("seq").and_then(Value::as_u64),
        row: value.get("row").and_then(Value::as_u64),
        event_type: text("type"),
    })
}

pub mod migrate;

#[cfg(test)]
mod tests;
