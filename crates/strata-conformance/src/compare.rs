//! One log through strata, and strata's answer compared with the oracle's.
//!
//! The oracle prints one JSON object per run (oracle README, "oracle.mjs"). [`compare`] checks
//! exactly what the fixture README says a port must reproduce: `ok`; on acceptance `surface`,
//! `messages` (as JSON values, numbers by value), `sessionEventCount`, `firstLiveSeq`,
//! `replaceGeneration` and, for restore, `repairClosers`; on rejection `error.rule`,
//! `error.message` (and `error.cause.message`), the index or seq upstream names, and the line
//! of a malformed packed row.

use serde_json::{json, Value};
use strata_core::json::json_equal;
use strata_core::{Generation, SeedOptions};
use strata_migrate::legacy::{
    hydrate_fixture, restore_v0, seed_v0, FixtureError, FixtureOptions, Rejection, SessionSink,
    VerifierSink, Wrapping,
};

/// The oracle's `--time`, used by the recorded fixtures and the differential runs.
pub const ORACLE_TIME: i64 = 1_700_000_000_000;

/// Which upstream entry point (and, for restore, which strata sink ran the seed path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `Session.fromRestore` (`--seed`).
    Seed,
    /// The persistence coordinator's restore (`--restore`), into a session.
    Restore,
    /// The same restore, streamed through the verifier that keeps only the surface.
    RestoreStreaming,
}

impl Mode {
    /// The oracle's mode name (both restore sinks answer the oracle's `--restore`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Seed => "seed",
            Mode::Restore | Mode::RestoreStreaming => "restore",
        }
    }
}

/// strata's answer for one log in one mode, in the oracle's vocabulary.
#[derive(Debug)]
pub struct Outcome {
    /// The mode.
    pub mode: Mode,
    /// The session id (restore messages embed it).
    pub session_id: String,
    /// Input events after hydration.
    pub n_events: usize,
    /// The verdict.
    pub result: Result<Summary, Failure>,
}

/// An accepted log, reduced to what the oracle prints.
#[derive(Debug)]
pub struct Summary {
    /// Surface node seqs, in model order.
    pub surface: Vec<u64>,
    /// Derived messages.
    pub messages: Vec<Value>,
    /// Events in the session (marker and closers included).
    pub session_event_count: u64,
    /// The constructor seed's length.
    pub first_live_seq: u64,
    /// Replacements applied.
    pub replace_generation: u64,
    /// Restore-path closers, `(type, seq)`.
    pub repair_closers: Vec<(String, u64)>,
}

/// A refused log.
#[derive(Debug)]
pub enum Failure {
    /// Refused by a rule.
    Rejected(Rejection),
    /// A malformed packed row (input decoding, before any path).
    Row {
        /// 1-based physical line.
        line: u64,
        /// Upstream's text.
        message: String,
    },
    /// A line that is not JSON (the oracle refuses it as its own input error).
    Json {
        /// 1-based physical line.
        line: u64,
    },
}

/// Hydrates `log` (the oracle's input format) and runs it through strata's v0 entry point.
pub fn run_strata(log: &[u8], mode: Mode) -> Outcome {
    let options = FixtureOptions {
        time: Some(ORACLE_TIME),
        ..FixtureOptions::default()
    };
    let fixture = match hydrate_fixture(log, &options) {
        Ok(fixture) => fixture,
        Err(error) => {
            let failure = match error {
                FixtureError::MalformedRow { line, source } => Failure::Row {
                    line,
                    message: source.to_string(),
                },
                other => Failure::Json { line: other.line() },
            };
            return Outcome {
                mode,
                session_id: String::new(),
                n_events: 0,
                result: Err(failure),
            };
        }
    };
    let session_id = fixture
        .header
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let n_events = fixture.events.len();
    let header = fixture.header;
    let options = SeedOptions::default();
    let result = match mode {
        Mode::Seed => {
            let events = fixture
                .events
                .into_iter()
                .map(|record| record.event)
                .collect();
            seed_v0(Generation::V0, &header, events, options)
                .map(|restored| summarize_session(&restored.outcome, restored.repair_closers))
        }
        Mode::Restore => restore_v0(Generation::V0, &header, fixture.events, |header| {
            SessionSink::new(header, options)
        })
        .map(|restored| summarize_session(&restored.outcome, restored.repair_closers)),
        Mode::RestoreStreaming => {
            restore_v0(Generation::V0, &header, fixture.events, VerifierSink::new).map(|restored| {
                let verified = restored.outcome;
                Summary {
                    surface: verified.surface.iter().map(|seq| seq.get()).collect(),
                    messages: verified.message_values(),
                    session_event_count: verified.n_session_events,
                    first_live_seq: verified.n_events,
                    replace_generation: verified.replace_generation,
                    repair_closers: restored.repair_closers,
                }
            })
        }
    };
    Outcome {
        mode,
        session_id,
        n_events,
        result: result.map_err(Failure::Rejected),
    }
}

fn summarize_session(
    session: &strata_core::Session,
    repair_closers: Vec<(String, u64)>,
) -> Summary {
    Summary {
        surface: session
            .surface()
            .nodes()
            .iter()
            .map(|seq| seq.get())
            .collect(),
        messages: session
            .derive_messages()
            .iter()
            .map(|message| message.value().clone())
            .collect(),
        session_event_count: session.len() as u64,
        first_live_seq: session.first_live_seq(),
        replace_generation: session.surface().replace_generation(),
        repair_closers,
    }
}

/// The differences between the oracle's answer and strata's (empty when they agree).
pub fn compare(oracle: &Value, outcome: &Outcome) -> Vec<String> {
    let mut differences = Vec::new();
    let mut check = |what: &str, expected: &Value, actual: &Value| {
        if !json_equal(expected, actual) {
            differences.push(format!(
                "{}: {what}: oracle {}, strata {}",
                outcome.mode.name(),
                clip(expected),
                clip(actual)
            ));
        }
    };
    let ok = &oracle["ok"];
    match &outcome.result {
        Ok(summary) => {
            check("ok", ok, &json!(true));
            if ok != &json!(true) {
                check("error", &oracle["error"], &Value::Null);
                return differences;
            }
            check("surface", &oracle["surface"], &json!(summary.surface));
            check("messages", &oracle["messages"], &json!(summary.messages));
            check(
                "sessionEventCount",
                &oracle["sessionEventCount"],
                &json!(summary.session_event_count),
            );
            check(
                "firstLiveSeq",
                &oracle["firstLiveSeq"],
                &json!(summary.first_live_seq),
            );
            check(
                "replaceGeneration",
                &oracle["replaceGeneration"],
                &json!(summary.replace_generation),
            );
            if outcome.mode != Mode::Seed {
                let closers: Vec<Value> = summary
                    .repair_closers
                    .iter()
                    .map(|(kind, seq)| json!({"type": kind, "seq": seq}))
                    .collect();
                check("repairClosers", &oracle["repairClosers"], &json!(closers));
            }
        }
        Err(failure) => {
            check("ok", ok, &json!(false));
            if ok != &json!(false) {
                return differences;
            }
            let error = &oracle["error"];
            match failure {
                Failure::Rejected(rejection) => {
                    let (message, cause) = match (outcome.mode, rejection.wrapping) {
                        (Mode::Restore | Mode::RestoreStreaming, Wrapping::Corruption) => (
                            rejection.restore_message(&outcome.session_id),
                            Some(rejection.message.clone()),
                        ),
                        _ => (rejection.message.clone(), None),
                    };
                    check("rule", &error["rule"], &json!(rejection.rule.id()));
                    check("message", &error["message"], &json!(message));
                    if let Some(cause) = &cause {
                        check("cause", &error["cause"]["message"], &json!(cause));
                    }
                    let full = match &cause {
                        Some(cause) => format!("{message} | cause: {cause}"),
                        None => message.clone(),
                    };
                    let index = rejection.index.or_else(|| number_after(&full, "at index "));
                    check(
                        "index",
                        &error["index"],
                        &index.map_or(Value::Null, Value::from),
                    );
                    let seq =
                        number_after(&full, "at seq ").or_else(|| number_after(&full, "(seq "));
                    check("seq", &error["seq"], &seq.map_or(Value::Null, Value::from));
                }
                Failure::Row { line, message } => {
                    check("rule", &error["rule"], &json!("malformed-chunk-row"));
                    check("message", &error["message"], &json!(message));
                    check("line", &oracle["line"], &json!(line));
                }
                Failure::Json { line } => {
                    check("line", &oracle["line"], &json!(line));
                }
            }
        }
    }
    differences
}

/// The first decimal number right after `marker` in `text` (as the oracle's regexes read it).
fn number_after(text: &str, marker: &str) -> Option<u64> {
    let start = text.find(marker)? + marker.len();
    let digits: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn clip(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 300 {
        format!(
            "{}…",
            &text[..text.char_indices().nth(300).map_or(text.len(), |(i, _)| i)]
        )
    } else {
        text
    }
}
