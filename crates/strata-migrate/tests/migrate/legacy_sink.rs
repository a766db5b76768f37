//! The v0 restore's [`SessionSink`] streams rows to a restoring thread with their payloads as
//! text. It must accept and refuse exactly what restoring the rows held as values does (the
//! old sink, kept here as the reference), with the same rejection, events, surface and
//! derived messages: every rule fixture (incl. `-0`, 2^53 and other number spellings inside
//! data) and the generated logs.

use std::fs;
use std::path::Path;

use serde_json::Value;
use strata_core::{Generation, RawEvent, SeedOptions, Session, SessionHeader};
use strata_format::encode_event_line;
use strata_migrate::legacy::{
    hydrate_fixture, open_file, restore_v0, FixtureOptions, LegacyReader, OpenError, Rejection,
    RestoreSink, SessionSink,
};

/// Collects the rows as they come (payloads as values) and restores them at the end.
struct HeldRows {
    header: SessionHeader,
    rows: Vec<RawEvent>,
    lines: Vec<Option<u64>>,
}

impl RestoreSink for HeldRows {
    type Output = Session;

    fn push(&mut self, line: Option<u64>, row: RawEvent) {
        self.rows.push(row);
        self.lines.push(line);
    }

    fn finish(self) -> Result<Session, Rejection> {
        let lines = self.lines;
        Session::restore(self.header, self.rows, SeedOptions::default()).map_err(|error| {
            let line = error
                .index
                .and_then(|index| lines.get(index as usize).copied().flatten());
            Rejection::from_accept(&error).at_line(line)
        })
    }
}

/// What a restored session shows: every event as its V3 line, the surface, the messages.
fn shown(session: &Session) -> (Vec<String>, Vec<u64>, Vec<Value>) {
    let lines = session
        .events()
        .unwrap()
        .iter()
        .map(|event| {
            let mut line = Vec::new();
            encode_event_line(event, &mut line);
            String::from_utf8(line).unwrap()
        })
        .collect();
    let surface = session
        .surface()
        .nodes()
        .iter()
        .map(|seq| seq.get())
        .collect();
    let messages = session
        .derive_messages()
        .iter()
        .map(|message| message.value().clone())
        .collect();
    (lines, surface, messages)
}

/// Restores `log` through both sinks and checks they agree; whether it was accepted.
fn agree(name: &str, log: &[u8]) -> Option<bool> {
    let options = FixtureOptions {
        time: Some(1_700_000_000_000),
        ..FixtureOptions::default()
    };
    let fixture = hydrate_fixture(log, &options).ok()?;
    let streamed = restore_v0(
        Generation::V0,
        &fixture.header,
        fixture.events.clone(),
        |h| SessionSink::new(h, SeedOptions::default()),
    );
    let held = restore_v0(Generation::V0, &fixture.header, fixture.events, |header| {
        HeldRows {
            header,
            rows: Vec::new(),
            lines: Vec::new(),
        }
    });
    match (streamed, held) {
        (Ok(streamed), Ok(held)) => {
            assert_eq!(
                streamed.repair_closers, held.repair_closers,
                "{name}: closers"
            );
            assert_eq!(
                shown(&streamed.outcome),
                shown(&held.outcome),
                "{name}: restored session"
            );
            Some(true)
        }
        (Err(streamed), Err(held)) => {
            assert_eq!(streamed, held, "{name}: rejection");
            Some(false)
        }
        (streamed, held) => panic!(
            "{name}: streamed {:?}, held {:?}",
            streamed.map(|_| ()),
            held.map(|_| ())
        ),
    }
}

#[test]
fn streamed_restore_agrees_with_held_rows_on_every_rule_fixture() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/v0/rules");
    let cases = fs::read_to_string(dir.join("cases.tsv")).unwrap();
    let (mut accepted, mut refused) = (0, 0);
    for name in cases.lines().filter_map(|line| line.split('\t').next()) {
        let log = fs::read(dir.join(format!("{name}.jsonl"))).unwrap();
        match agree(name, &log) {
            Some(true) => accepted += 1,
            Some(false) => refused += 1,
            None => {}
        }
    }
    // Both verdicts are exercised, on many cases each.
    assert!(accepted >= 50, "{accepted} accepted");
    assert!(refused >= 50, "{refused} refused");
}

#[test]
fn streamed_restore_agrees_with_held_rows_on_generated_logs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/v0/generated");
    for name in ["gen-e500-s11.jsonl", "gen-e700-s12-dense.jsonl"] {
        let log = fs::read(dir.join(name)).unwrap();
        assert_eq!(agree(name, &log), Some(true), "{name}");
    }
}

#[test]
fn a_refusal_far_into_a_long_log_names_its_line_and_later_rows_are_dropped() {
    // More rows than the sink has in flight, so the restoring thread stops at the failure
    // while rows are still coming; the failure is then reported with its line.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/v0/generated");
    let log = fs::read_to_string(dir.join("gen-e700-s12-dense.jsonl")).unwrap();
    let mut lines: Vec<String> = log.lines().map(str::to_owned).collect();
    let broken = lines.len() / 3;
    let mut row: Value = serde_json::from_str(&lines[broken]).unwrap();
    row["seq"] = Value::from(999_999);
    lines[broken] = row.to_string();
    let mut text = lines.join("\n");
    text.push('\n');
    // The log repeated: rows far past the failure keep arriving after it.
    let n_lines = lines.len();
    let mut longer = text.clone();
    for _ in 0..8 {
        longer.push_str(&lines[1..].join("\n"));
        longer.push('\n');
    }
    assert!(n_lines * 8 > 4 * 512, "the log outlasts the rows in flight");
    assert_eq!(agree("broken", longer.as_bytes()), Some(false));
    let options = FixtureOptions {
        time: Some(1_700_000_000_000),
        ..FixtureOptions::default()
    };
    let fixture = hydrate_fixture(longer.as_bytes(), &options).unwrap();
    let rejection = restore_v0(Generation::V0, &fixture.header, fixture.events, |h| {
        SessionSink::new(h, SeedOptions::default())
    })
    .map(|_| ())
    .unwrap_err();
    assert_eq!(rejection.line, Some(broken as u64 + 1), "{rejection:?}");
}

/// A restored v0 session's events, copied back to rows (`Session::to_raw_events`), replay
/// under the same header's rules to the same session: what `strata compact --dry-run` and
/// `strata prune --dry-run` do to plan on an older log (replace endpoints spelled `start`/`end`,
/// as v0 writes them; spelled the V3 way they were refused as invalid replace ops).
#[test]
fn a_restored_v0_session_replays_from_its_own_rows() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/v0/generated");
    for name in ["gen-e500-s11.jsonl", "gen-e700-s12-dense.jsonl"] {
        let log = fs::read(dir.join(name)).unwrap();
        let options = FixtureOptions {
            time: Some(1_700_000_000_000),
            ..FixtureOptions::default()
        };
        let fixture = hydrate_fixture(&log, &options).unwrap();
        let restored = restore_v0(Generation::V0, &fixture.header, fixture.events, |h| {
            SessionSink::new(h, SeedOptions::default())
        })
        .unwrap()
        .outcome;
        assert!(
            restored.surface().replace_generation() > 0,
            "{name} has replacements"
        );
        let replayed = Session::restore(
            restored.header().clone(),
            restored.to_raw_events().unwrap(),
            SeedOptions::default(),
        )
        .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(shown(&replayed), shown(&restored), "{name}");
    }
}

/// Opens `log` as a file both ways: `open_file`, whose reader keeps the rows no legacy step
/// looks into as text, and the reader's trees restored by `restore_v0` (every row a tree).
/// Both must give the same verdict, rejection, closers and session.
fn file_paths_agree(name: &str, log: &[u8]) -> Option<bool> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    fs::write(&path, log).unwrap();
    let sink = |h| SessionSink::new(h, SeedOptions::default());
    let opened = open_file(&path, sink);
    let trees = LegacyReader::open(&path).map(|mut reader| {
        let generation = reader.generation();
        let header = reader.header().clone();
        let records: Vec<_> = reader.by_ref().map_while(Result::ok).collect();
        (restore_v0(generation, &header, records, sink), reader)
    });
    match (opened, trees) {
        (Ok(opened), Ok((Ok(trees), _))) => {
            let rows = opened.restored;
            assert_eq!(rows.repair_closers, trees.repair_closers, "{name}: closers");
            assert_eq!(
                shown(&rows.outcome),
                shown(&trees.outcome),
                "{name}: restored session"
            );
            Some(true)
        }
        (Err(OpenError::Rejected { rejection, .. }), Ok((Err(trees), _))) => {
            assert_eq!(rejection, trees, "{name}: rejection");
            Some(false)
        }
        (Err(OpenError::Read(_)), _) | (_, Err(_)) => None,
        (opened, trees) => panic!(
            "{name}: rows kept as text {:?}, trees {:?}",
            opened.map(|_| ()),
            trees.map(|(verdict, _)| verdict.map(|_| ()))
        ),
    }
}

#[test]
fn rows_kept_as_text_agree_with_trees_on_every_rule_fixture() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/v0/rules");
    let cases = fs::read_to_string(dir.join("cases.tsv")).unwrap();
    let options = FixtureOptions {
        time: Some(1_700_000_000_000),
        ..FixtureOptions::default()
    };
    let (mut accepted, mut refused) = (0, 0);
    for name in cases.lines().filter_map(|line| line.split('\t').next()) {
        let log = fs::read(dir.join(format!("{name}.jsonl"))).unwrap();
        // As a log file: the fixture's header and rows with the seqs and times it implies.
        let Ok(fixture) = hydrate_fixture(&log, &options) else {
            continue;
        };
        let mut header = serde_json::Map::new();
        header.insert("type".into(), Value::from("session"));
        header.extend(fixture.header.clone());
        // The file form of a v0 header (the fixtures' logical headers may leave it out).
        header
            .entry("delegationDepth")
            .or_insert_with(|| Value::from(0));
        let mut file = strata_core::json::to_js_string(&Value::Object(header)) + "\n";
        for record in &fixture.events {
            file.push_str(&strata_core::json::to_js_string(&record.event));
            file.push('\n');
        }
        match file_paths_agree(name, file.as_bytes()) {
            Some(true) => accepted += 1,
            Some(false) => refused += 1,
            None => {}
        }
    }
    assert!(accepted >= 50, "{accepted} accepted");
    assert!(refused >= 50, "{refused} refused");
}

#[test]
fn rows_kept_as_text_agree_with_trees_on_generated_and_respelled_logs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/v0/generated");
    for name in ["gen-e500-s11.jsonl", "gen-e700-s12-dense.jsonl"] {
        let log = fs::read_to_string(dir.join(name)).unwrap();
        assert_eq!(file_paths_agree(name, log.as_bytes()), Some(true), "{name}");
        // Chunk texts a tree would write back differently (escapes `JSON.stringify` does not
        // write, a held code point), a chunk naming `message`, a `-0` and an exponent: those
        // rows take the tree path, the rest stay text, and the session is the same.
        let respelled: Vec<String> = log
            .lines()
            .enumerate()
            .map(|(at, line)| match at % 7 {
                1 => line.replacen("\"text\":\"", "\"text\":\"\\/\\u0041\\n", 1),
                2 => line.replacen("\"text\":\"", "\"text\":\"\u{10F800}", 1),
                3 => line.replacen("\"index\":0", "\"index\":-0", 1),
                4 => line.replacen("\"index\":0", "\"index\":0e0,\"message\":{\"id\":7}", 1),
                _ => line.to_owned(),
            })
            .collect();
        let respelled = respelled.join("\n") + "\n";
        assert_eq!(
            file_paths_agree(name, respelled.as_bytes()),
            Some(true),
            "{name} respelled"
        );
    }
}
