//! Migration identity against upstream's released chain (issue 23): for every log, upstream's
//! own v0/v1/v2 → V3 chain (the released-format oracle's `migrate.mjs`) and `strata migrate`
//! (`strata_migrate::migrate::migrate_file`) must agree.
//!
//! - When upstream migrates, strata must migrate too and write the same V3 file line for line:
//!   the same header (keys in dsh's order), the same events with the same seqs, data, ids and
//!   key order, in the same JSON spelling.
//! - When upstream refuses, strata must refuse, and its message must contain upstream's rule
//!   text (the refusal without the protocol's wrapping, see
//!   `strata_conformance::format_oracle::migrate::refusal_detail`).
//!
//! Logs: every `fixtures/v0` log (a fixture without a header line gets the oracle's synthetic
//! v0 header; an event without `seq` or `time` gets its index and the fixture time), `N`
//! generated v0 logs in dsh's turn shape (`gen.py --released`, fresh seed per run, printed;
//! `STRATA_MIGRATION_SEED` reproduces a run, `STRATA_MIGRATION_LOGS` sets N, default 12), and
//! the same logs read as v1 (a v0 log's rows under a `"version":1` header, which upstream
//! decodes and audits at version 1), and the v2 log of upstream's intermediate hop for every
//! log upstream migrates (so the v2→v3 edge is compared on its own too).
//!
//! Known disagreements on fixtures are listed in `tests/released_migration.expected`
//! (`name<TAB>kind`), each a documented divergence (docs/migration.md, docs/divergences.md);
//! an entry that no longer disagrees fails the run, so the list only shrinks. Generated logs
//! have no expectations: every one must agree.
//!
//! Without `node` or the oracle this prints a loud SKIP and succeeds, unless
//! `STRATA_REQUIRE_FORMAT_ORACLE=1`. Generated logs need `python3` and the v0 oracle's
//! `gen.py` (`STRATA_GEN_PY`, else `$ORACLE_HOME/gen.py`, else the oracle folder beside the
//! repository, `../shared/oracle/gen.py`); without them only the fixtures run (said so loudly).

use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use strata_conformance::format_oracle::migrate::Migration;
use strata_conformance::format_oracle::{FormatOracle, REQUIRE_ENV};
use strata_migrate::migrate::migrate_file;

/// The fixture time the v0 oracle gives events without one.
const FIXTURE_TIME: i64 = 1_700_000_000_000;

/// How one log came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// Both migrated, to the same file.
    Same,
    /// Both refused, strata naming upstream's reason.
    SameRefusal,
    /// Both migrated, to different files.
    Diff,
    /// Upstream migrated, strata refused.
    StrataRefuses,
    /// Upstream refused, strata migrated.
    StrataMigrates,
    /// Both refused, strata for another reason.
    OtherReason,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Same => "same",
            Kind::SameRefusal => "same-refusal",
            Kind::Diff => "diff",
            Kind::StrataRefuses => "strata-refuses",
            Kind::StrataMigrates => "strata-migrates",
            Kind::OtherReason => "other-reason",
        }
    }

    fn agrees(self) -> bool {
        matches!(self, Kind::Same | Kind::SameRefusal)
    }
}

struct Outcome {
    kind: Kind,
    detail: String,
}

fn main() -> ExitCode {
    let required = env::var(REQUIRE_ENV).is_ok_and(|value| value == "1");
    let oracle = match FormatOracle::find() {
        Ok(oracle) => oracle,
        Err(why) => {
            loud(&format!(
                "\n==================== SKIP ====================\n\
                 released_migration NOT RUN: {why}\n\
                 install the released-format oracle (its setup.sh); {REQUIRE_ENV}=1 makes this a failure\n\
                 ==============================================\n"
            ));
            return if required {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let started = Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("released_migration");
    let _ = fs::remove_dir_all(&scratch);
    if let Err(error) = fs::create_dir_all(&scratch) {
        loud(&format!("cannot create {}: {error}\n", scratch.display()));
        return ExitCode::FAILURE;
    }
    let expected = match read_expectations(&expected_path()) {
        Ok(expected) => expected,
        Err(error) => {
            loud(&format!("{error}\n"));
            return ExitCode::FAILURE;
        }
    };

    // The logs: (name, source file, whether an expectation may cover it).
    let mut logs: Vec<(String, PathBuf, bool)> = Vec::new();
    let mut fixtures = Vec::new();
    collect_jsonl(&root.join("fixtures/v0"), &mut fixtures);
    fixtures.sort();
    let hydrated = scratch.join("fixtures");
    let _ = fs::create_dir_all(&hydrated);
    for fixture in fixtures {
        let name = fixture
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let target = hydrated.join(&name);
        match fs::read_to_string(&fixture).map(|text| hydrate(&text)) {
            Ok(text) => {
                if let Err(error) = fs::write(&target, text) {
                    loud(&format!("{}: {error}\n", target.display()));
                    return ExitCode::FAILURE;
                }
            }
            Err(error) => {
                loud(&format!("{}: {error}\n", fixture.display()));
                return ExitCode::FAILURE;
            }
        }
        logs.push((name, target, true));
    }
    let seed = env::var("STRATA_MIGRATION_SEED")
        .ok()
        .and_then(|seed| seed.parse::<u64>().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(1, |elapsed| elapsed.as_secs() % 1_000_000)
        });
    let n_generated = env::var("STRATA_MIGRATION_LOGS")
        .ok()
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(12);
    println!("released_migration: seed {seed} (STRATA_MIGRATION_SEED={seed} reproduces this run)");
    match generate(&scratch.join("generated"), seed, n_generated) {
        Ok(generated) => logs.extend(
            generated
                .into_iter()
                .map(|(name, path)| (name, path, false)),
        ),
        Err(why) => loud(&format!(
            "\n** released_migration: no generated logs this run ({why}); fixtures only **\n"
        )),
    }

    let mut failures: Vec<String> = Vec::new();
    let mut tally: BTreeMap<(&'static str, Kind), u64> = BTreeMap::new();
    let mut seen_expected: BTreeMap<String, Kind> = BTreeMap::new();
    let mut disagreeing: Vec<(String, Kind)> = Vec::new();
    let mut v2_logs: Vec<(String, PathBuf, bool)> = Vec::new();
    // Every v0 log whose header says `"version":0` is read once more as a v1 log (the same
    // rows: v1 is v0's physical layout), which upstream's chain decodes and audits at version 1.
    let v1_dir = scratch.join("v1-sources");
    let _ = fs::create_dir_all(&v1_dir);
    let v1_logs: Vec<(String, PathBuf, bool)> = logs
        .iter()
        .filter_map(|(name, path, expectable)| {
            let text = fs::read_to_string(path).ok()?;
            let (header, rest) = text.split_once('\n')?;
            let header = header
                .contains("\"version\":0")
                .then(|| header.replacen("\"version\":0", "\"version\":1", 1))?;
            let target = v1_dir.join(name);
            fs::write(&target, format!("{header}\n{rest}")).ok()?;
            Some((name.clone(), target, *expectable))
        })
        .collect();
    for (pass, list) in [
        ("v0", std::mem::take(&mut logs)),
        ("v1", v1_logs),
        ("v2", Vec::new()),
    ] {
        let list = if pass == "v2" {
            std::mem::take(&mut v2_logs)
        } else {
            list
        };
        for (name, source, expectable) in list {
            let dir = scratch.join(pass).join(&name);
            let outcome = match run_one(oracle, &source, &dir, pass) {
                Ok((outcome, v2)) => {
                    if let Some(v2) = v2 {
                        v2_logs.push((name.clone(), v2, expectable));
                    }
                    outcome
                }
                Err(error) => {
                    failures.push(format!("{pass} {name}: harness error: {error}"));
                    continue;
                }
            };
            *tally.entry((pass, outcome.kind)).or_default() += 1;
            let key = format!("{pass}/{name}");
            if expectable && !outcome.kind.agrees() {
                disagreeing.push((key.clone(), outcome.kind));
            }
            match expected.get(&key) {
                Some(kind) if expectable => {
                    seen_expected.insert(key.clone(), outcome.kind);
                    if outcome.kind.agrees() {
                        failures.push(format!(
                            "{key}: listed as {kind} in released_migration.expected but now agrees ({}): remove the entry",
                            outcome.kind.name()
                        ));
                    } else if kind != outcome.kind.name() {
                        failures.push(format!(
                            "{key}: listed as {kind} but is {}: {}",
                            outcome.kind.name(),
                            outcome.detail
                        ));
                    }
                }
                _ if !outcome.kind.agrees() => failures.push(format!(
                    "{key}: {}: {}",
                    outcome.kind.name(),
                    outcome.detail
                )),
                _ => {}
            }
        }
    }
    for key in expected.keys() {
        if !seen_expected.contains_key(key) {
            failures.push(format!(
                "{key}: listed in released_migration.expected but no such log ran: remove the entry"
            ));
        }
    }

    if env::var("STRATA_MIGRATION_WRITE_EXPECTED").is_ok_and(|value| value == "1") {
        // Rewrites the expectation file from this run's fixture disagreements (a developer
        // aid; generated logs still have to agree).
        let mut text = String::from(EXPECTED_PREAMBLE);
        for (key, kind) in &disagreeing {
            text.push_str(&format!("{key}\t{}\n", kind.name()));
        }
        if let Err(error) = fs::write(expected_path(), text) {
            failures.push(format!("writing the expectation file: {error}"));
        }
        failures.retain(|failure| failure.contains("/gen-") || failure.contains("harness"));
    }
    for ((pass, kind), count) in &tally {
        println!("  {pass} {:<16} {count}", kind.name());
    }
    for pass in ["v0", "v1", "v2"] {
        let count = |kind: Kind| tally.get(&(pass, kind)).copied().unwrap_or(0);
        let upstream_migrated = count(Kind::Same) + count(Kind::Diff) + count(Kind::StrataRefuses);
        let upstream_refused =
            count(Kind::SameRefusal) + count(Kind::StrataMigrates) + count(Kind::OtherReason);
        println!(
            "released_migration {pass}: identical migrations {}/{upstream_migrated}, same refusals {}/{upstream_refused}",
            count(Kind::Same),
            count(Kind::SameRefusal)
        );
    }
    for failure in &failures {
        println!("FAIL {failure}");
    }
    println!(
        "released_migration: {} failures in {:.1}s (seed {seed})",
        failures.len(),
        started.elapsed().as_secs_f64()
    );
    if failures.is_empty() {
        let _ = fs::remove_dir_all(&scratch);
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Migrates `source` (a log of generation `pass`) with both chains in `dir`; for a v0 pass
/// also returns upstream's v2 log when upstream migrated.
fn run_one(
    oracle: &FormatOracle,
    source: &Path,
    dir: &Path,
    pass: &str,
) -> Result<(Outcome, Option<PathBuf>), String> {
    fs::create_dir_all(dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let keep_v2 = pass == "v0";
    let input = dir.join(match pass {
        "v0" => "session.jsonl",
        "v1" => "session.v1.jsonl",
        _ => "session.v2.jsonl",
    });
    fs::copy(source, &input).map_err(|error| format!("{}: {error}", source.display()))?;
    let upstream_out = dir.join("upstream.v3.jsonl");
    let upstream_v2 = dir.join("upstream.v2.jsonl");
    let upstream: Migration = oracle.migrate(
        &input,
        &upstream_out,
        keep_v2.then_some(upstream_v2.as_path()),
    )?;
    let strata = migrate_file(&input).map_err(|error| error.to_string());
    let kind_detail = match (&upstream.output, strata) {
        (Some(upstream_file), Ok(report)) => {
            let theirs = fs::read_to_string(upstream_file).map_err(|error| error.to_string())?;
            let ours = fs::read_to_string(&report.target).map_err(|error| error.to_string())?;
            match first_difference(&theirs, &ours) {
                None => (Kind::Same, String::new()),
                Some(detail) => (Kind::Diff, detail),
            }
        }
        (Some(_), Err(error)) => (Kind::StrataRefuses, error),
        (None, Ok(_)) => (
            Kind::StrataMigrates,
            upstream.error.clone().unwrap_or_default(),
        ),
        (None, Err(error)) => {
            let reason = upstream.reason().unwrap_or_default();
            if error.contains(reason) {
                (Kind::SameRefusal, String::new())
            } else {
                (
                    Kind::OtherReason,
                    format!("upstream: {reason}\n      strata: {error}"),
                )
            }
        }
    };
    // Upstream writes its v2 log once its first hop passed, also when its v2→v3 hop refuses.
    let v2 = (keep_v2 && upstream_v2.exists()).then_some(upstream_v2);
    Ok((
        Outcome {
            kind: kind_detail.0,
            detail: kind_detail.1,
        },
        v2,
    ))
}

/// The first line where two JSONL files differ, described.
fn first_difference(theirs: &str, ours: &str) -> Option<String> {
    let a: Vec<&str> = theirs.lines().collect();
    let b: Vec<&str> = ours.lines().collect();
    for (index, (x, y)) in a.iter().zip(&b).enumerate() {
        if x != y {
            return Some(format!(
                "line {}:\n      upstream: {}\n      strata:   {}",
                index + 1,
                clip(x),
                clip(y)
            ));
        }
    }
    (a.len() != b.len()).then(|| {
        format!(
            "upstream wrote {} lines, strata {} (first extra: {})",
            a.len(),
            b.len(),
            clip(a.get(b.len()).or(b.get(a.len())).copied().unwrap_or(""))
        )
    })
}

fn clip(text: &str) -> String {
    let mut clipped: String = text.chars().take(400).collect();
    if clipped.len() < text.len() {
        clipped.push('…');
    }
    clipped
}

/// A fixture as a physical v0 log: the oracle's synthetic header when it has none, and the
/// oracle's `seq`/`time` for events without them (packed rows and non-objects unchanged).
fn hydrate(text: &str) -> String {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .filter(|line| !line.trim().is_empty())
        .collect();
    let mut out = String::new();
    let has_header = lines
        .first()
        .and_then(|line| serde_json::from_str::<Value>(line).ok())
        .is_some_and(|value| value.get("type").and_then(Value::as_str) == Some("session"));
    let events = if has_header {
        out.push_str(lines[0]);
        out.push('\n');
        &lines[1..]
    } else {
        out.push_str(&format!(
            "{{\"type\":\"session\",\"version\":0,\"id\":\"oracle-session\",\"createdAt\":{FIXTURE_TIME},\"delegationDepth\":0}}\n"
        ));
        &lines[..]
    };
    for (index, line) in events.iter().enumerate() {
        let parsed: Option<Map<String, Value>> = serde_json::from_str(line).ok();
        match parsed {
            Some(event)
                if !matches!(
                    event.get("type").and_then(Value::as_str),
                    Some("text-chunks" | "reasoning-chunks" | "tool-call-chunks")
                ) && (!event.contains_key("seq") || !event.contains_key("time")) =>
            {
                let mut filled = Map::new();
                for (key, value) in &event {
                    filled.insert(key.clone(), value.clone());
                    if key == "type" {
                        if !event.contains_key("seq") {
                            filled.insert("seq".into(), Value::from(index));
                        }
                        if !event.contains_key("time") {
                            filled.insert("time".into(), Value::from(FIXTURE_TIME));
                        }
                    }
                }
                out.push_str(&Value::Object(filled).to_string());
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// `N` generated v0 logs of mixed options, seeded from `seed`.
fn generate(dir: &Path, seed: u64, n: u64) -> Result<Vec<(String, PathBuf)>, String> {
    let gen = env::var_os("STRATA_GEN_PY")
        .map(PathBuf::from)
        .or_else(|| {
            env::var_os("ORACLE_HOME")
                .map(|home| PathBuf::from(home).join("gen.py"))
                .filter(|path| path.exists())
        })
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/oracle/gen.py")
        });
    if !gen.exists() {
        return Err(format!("{} is missing (set STRATA_GEN_PY)", gen.display()));
    }
    fs::create_dir_all(dir).map_err(|error| error.to_string())?;
    let mut logs = Vec::new();
    for index in 0..n {
        let case_seed = seed.wrapping_mul(1000).wrapping_add(index);
        let events = 60 + (case_seed * 37) % 400;
        let mut args = vec![
            "--released".to_owned(),
            "-q".to_owned(),
            "--events".to_owned(),
            events.to_string(),
            "--seed".to_owned(),
            case_seed.to_string(),
        ];
        match index % 4 {
            1 => args.extend(["--compact-every", "3", "--prune-rate", "0.6"].map(String::from)),
            2 => args.extend(["--chunk-chars", "4"].map(String::from)),
            3 => args.extend(["--compact-every", "2", "--content-bytes", "40"].map(String::from)),
            _ => {}
        }
        let name = format!("gen-{index}-s{case_seed}.jsonl");
        let path = dir.join(&name);
        let ran = Command::new("python3")
            .arg(&gen)
            .args(&args)
            .arg("-o")
            .arg(&path)
            .output()
            .map_err(|error| format!("cannot run python3: {error}"))?;
        if !ran.status.success() {
            return Err(format!(
                "gen.py {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&ran.stderr)
            ));
        }
        logs.push((name, path));
    }
    Ok(logs)
}

fn collect_jsonl(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_jsonl(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "jsonl") {
            out.push(path);
        }
    }
}

const EXPECTED_PREAMBLE: &str = "\
# Known disagreements of `strata migrate` with upstream's released migration chain, one per
# line: pass/fixture<TAB>kind (diff, strata-refuses, strata-migrates, other-reason).
# Each is a documented divergence (docs/migration.md). An entry that agrees again fails the
# run: this list only shrinks. STRATA_MIGRATION_WRITE_EXPECTED=1 rewrites it.
";

fn expected_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/released_migration.expected")
}

/// `pass/name<TAB>kind` lines; `#` comments.
fn read_expectations(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let text = fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let mut expected = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, kind)) = line.split_once('\t') else {
            return Err(format!(
                "{}:{}: expected name<TAB>kind",
                path.display(),
                number + 1
            ));
        };
        expected.insert(key.trim().to_owned(), kind.trim().to_owned());
    }
    Ok(expected)
}

fn loud(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}
