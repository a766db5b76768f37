//! The valid V3 logs the mutation corpus starts from: strata's generators at several seeds and
//! shapes (compactions, prunes, parallel tool calls, long conversations), the store's synthetic
//! turns, seeded logs (forks), and the agent logs the writer paths wrote (retries, real tools).
//! Each is a header and its event rows as JSON values, the rows as strata writes them.

use std::path::Path;

use serde_json::Value;
use strata_core::synth::{generate, generate_conversation, ConversationConfig, SynthConfig};
use strata_core::{fork_session, ForkMode, Session, SessionHeader};
use strata_format::{encode_event_line, encode_header_line};

/// One valid log.
#[derive(Clone, Debug)]
pub struct Base {
    /// Where it came from.
    pub name: String,
    /// The header line.
    pub header: Value,
    /// The event rows, in order.
    pub rows: Vec<Value>,
}

/// The generated bases (small: a refused log is located by re-checking its prefixes).
pub fn bases() -> Result<Vec<Base>, String> {
    let mut bases = Vec::new();
    for (seed, events, compact_every, prune_rate) in [
        (3, 90, 2, 1.0),
        (11, 120, 3, 0.5),
        (42, 70, 0, 0.0),
        (7, 140, 4, 0.3),
    ] {
        let session = generate(&SynthConfig {
            events,
            seed,
            content_bytes: 24,
            compact_every,
            prune_rate,
            id: format!("synth-{seed}"),
        })
        .map_err(|error| format!("synth {seed}: {error}"))?;
        bases.push(from_session(&format!("synth-s{seed}"), &session)?);
        if seed == 42 {
            let synth = bases.last().cloned().ok_or("no base")?;
            bases.push(with_retries_commands_titles(&synth));
        }
        if seed == 11 {
            // Seeded logs: any-prefix forks (an open turn closed with `forked` closers, a call
            // announced but not started closed with TOOL_NOT_STARTED) and a closed-turn fork.
            for at in [37, 58, 83] {
                let child = fork_session(&session, "fork", Some(at), ForkMode::AnyPrefix, 2)
                    .map_err(|error| format!("fork at {at}: {error}"))?;
                bases.push(from_session(&format!("fork-any-{at}"), &child)?);
            }
            let last = session.len() as u64 - 1;
            let child = fork_session(&session, "fork", Some(last), ForkMode::ClosedTurn, 2)
                .map_err(|error| format!("closed fork: {error}"))?;
            bases.push(from_session("fork-closed", &child)?);
        }
    }
    let conversation = generate_conversation(&ConversationConfig {
        nodes: 60,
        seed: 5,
        content_bytes: 12,
        exchanges_per_turn: 6,
        tool_every: 2,
        id: "conversation".into(),
    })
    .map_err(|error| format!("conversation: {error}"))?;
    bases.push(from_session("conversation", &conversation)?);
    let header = SessionHeader::fresh("store-synth", 1).map_err(|error| error.to_string())?;
    let mut turns = Session::create(header).map_err(|error| error.to_string())?;
    for turn in 1..=4 {
        let first_seq = turns.len() as u64;
        turns
            .append_batch(strata_store::synth::turn_candidates(turn, first_seq, 20), 1)
            .map_err(|error| format!("store synth turn {turn}: {error}"))?;
    }
    bases.push(from_session("store-synth", &turns)?);
    Ok(bases)
}

/// `base` with the event families strata's writers do not produce (upstream's own writers do):
/// a retry chain of two scheduled and started attempts after each `request/header` (in its
/// step), a `command/run` and its `command/done` between turns, and a user-sourced
/// `session/title` after the first prompt.
fn with_retries_commands_titles(base: &Base) -> Base {
    let mut rows: Vec<Value> = Vec::new();
    let mut map: Vec<u64> = Vec::new();
    let (mut turn, mut step) = (Value::Null, Value::Null);
    let mut titled = false;
    let mut n_turn_starts = 0;
    for row in &base.rows {
        let kind = row["type"].as_str().unwrap_or("");
        if kind == "turn/start" {
            n_turn_starts += 1;
            if n_turn_starts == 2 {
                rows.push(
                    serde_json::json!({"type": "command/run", "seq": 0, "time": row["time"],
                    "data": {"commandId": "command-1", "name": "compact", "args": ""}}),
                );
                rows.push(
                    serde_json::json!({"type": "command/done", "seq": 0, "time": row["time"],
                    "data": {"commandId": "command-1", "kind": "success"}}),
                );
            }
        }
        map.push(rows.len() as u64);
        rows.push(row.clone());
        if kind == "step/start" {
            turn = row["data"]["turn"].clone();
            step = row["data"]["step"].clone();
        }
        if kind == "user/message" && !titled {
            titled = true;
            rows.push(
                serde_json::json!({"type": "session/title", "seq": 0, "time": row["time"],
                "data": {"title": "A title", "source": {"kind": "user"}, "messageSeqs": []}}),
            );
        }
        if kind == "request/header" {
            let retry_id = format!("retry-{turn}-{step}");
            for retry in [1, 2] {
                rows.push(serde_json::json!({"type": "llm/retry", "seq": 0, "time": row["time"],
                    "data": {"turn": turn, "step": step, "provider": "deepseek", "policyKey": "rate-limit",
                        "retry": retry, "retryId": retry_id, "delayMs": 10,
                        "error": {"code": "RATE_LIMITED", "message": "slow down"}}}));
                rows.push(
                    serde_json::json!({"type": "llm/retry-started", "seq": 0, "time": row["time"],
                    "data": {"turn": turn, "step": step, "retry": retry, "retryId": retry_id}}),
                );
            }
        }
    }
    crate::mutate::renumber(&mut rows, |seq| map.get(seq as usize).copied());
    Base {
        name: format!("{}-retries-commands-titles", base.name),
        header: base.header.clone(),
        rows,
    }
}

/// A base from a log file a writer wrote.
pub fn from_file(name: &str, path: &Path) -> Result<Base, String> {
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let mut lines = text.lines().filter(|line| !line.trim().is_empty());
    let header = lines
        .next()
        .ok_or_else(|| format!("{}: empty", path.display()))
        .and_then(|line| parse(line, path))?;
    let rows = lines
        .map(|line| parse(line, path))
        .collect::<Result<_, _>>()?;
    Ok(Base {
        name: name.to_owned(),
        header,
        rows,
    })
}

fn parse(line: &str, path: &Path) -> Result<Value, String> {
    serde_json::from_str(line).map_err(|error| format!("{}: {error}", path.display()))
}

fn from_session(name: &str, session: &Session) -> Result<Base, String> {
    let mut bytes = Vec::new();
    encode_header_line(session.header(), &mut bytes).map_err(|error| error.to_string())?;
    let header = serde_json::from_slice(&bytes).map_err(|error| error.to_string())?;
    let rows = session
        .events()
        .unwrap()
        .iter()
        .map(|event| {
            let mut line = Vec::new();
            encode_event_line(event, &mut line);
            serde_json::from_slice(&line).map_err(|error| format!("{name}: {error}"))
        })
        .collect::<Result<_, String>>()?;
    Ok(Base {
        name: name.to_owned(),
        header,
        rows,
    })
}
