//! Simulated crashes against a naive model (STYLE "simulate crashes first"; persistence §2.7,
//! §10 items 5–6): written bytes are kept apart from durable bytes, a crash at sync N leaves
//! the durable image plus any prefix of the append that was in flight, and the image is
//! reopened. Random sequences of appends (whole turns, turns left open) and crashes run on raw
//! and zstd JSONL logs.
//!
//! The model is the list of acknowledged event lines. After every crash and reopen:
//! - every acknowledged event is present, byte for byte, in order (nothing acknowledged lost);
//! - anything after them is complete records of the interrupted batch, in order (a torn write
//!   may persist some of what was never acknowledged, never anything else), then what crash
//!   repair added (closers for an open turn, the end-seed marker);
//! - the log validates, and a second reopen adds nothing.
//!
//! The crash is modelled on the real file: each append is acknowledged by the store (write +
//! fsync), then — when the step crashes — the file is cut back to the durable size before the
//! append plus a random prefix of the bytes the append wrote, which is exactly the image a
//! power cut during that append's write leaves on a file system that persists writes in order.

use std::fs;
use std::path::{Path, PathBuf};

use strata_core::Event;
use strata_store::synth::turn_candidates;
use strata_store::{Compression, JsonlBackend, JsonlConfig, Store};

use crate::common::header;

const ID: &str = "sim";

/// xorshift64*: deterministic, so a failing sequence reproduces from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn store(root: &Path, compression: Compression) -> Store {
    Store::new(JsonlBackend::new(JsonlConfig::new(root, compression)))
}

fn log_path(root: &Path, compression: Compression) -> PathBuf {
    let name = match compression {
        Compression::None => "session.v3.jsonl",
        Compression::Zstd => "session.v3.jsonl.zstd",
    };
    JsonlBackend::new(JsonlConfig::new(root, compression))
        .session_dir(Some("/home/user/project"), ID)
        .expect("dir")
        .join(name)
}

/// The event lines of the stored log (reading the file itself, not through the store).
fn stored_lines(path: &Path, compression: Compression) -> Vec<String> {
    let bytes = fs::read(path).expect("read log");
    let plain = match compression {
        Compression::None => bytes,
        Compression::Zstd => zstd::stream::decode_all(&bytes[..]).expect("decode log"),
    };
    let text = String::from_utf8(plain).expect("utf8");
    text.lines().skip(1).map(str::to_owned).collect()
}

fn lines_of(events: &[std::sync::Arc<Event>]) -> Vec<String> {
    events.iter().map(|event| event.to_json()).collect()
}

/// The next batch: a whole turn, or the first few events of one (leaving it open), continuing
/// from the writer's state. An open turn is closed by repair at the next reopen, so a batch
/// after an open turn starts a new turn only once the log says the previous one ended.
fn next_batch(writer: &strata_store::SessionWriter, rng: &mut Rng) -> Vec<strata_core::Candidate> {
    let (turn, next, open) = writer.with_session(|session| {
        let events = session.events().unwrap();
        let turns = events
            .iter()
            .filter(|event| event.event_type().as_str() == "turn/start")
            .count() as u64;
        let open = events
            .iter()
            .rev()
            .find(|event| {
                matches!(
                    event.event_type().as_str(),
                    "turn/start" | "turn/end" | "session/end-seed"
                )
            })
            .is_some_and(|event| event.event_type().as_str() == "turn/start");
        (turns + 1, session.len() as u64, open)
    });
    if open {
        return Vec::new();
    }
    let text_len = 20 + rng.below(400) as usize;
    let candidates = turn_candidates(turn, next, text_len);
    if rng.below(4) == 0 {
        let keep = 1 + rng.below(7) as usize;
        candidates.into_iter().take(keep).collect()
    } else {
        candidates
    }
}

fn run_sequence(compression: Compression, seed: u64, n_steps: usize) {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path();
    let path = log_path(root, compression);
    let mut rng = Rng(seed);
    let mut writer = store(root, compression)
        .create(header(ID, 1))
        .expect("create");
    // The naive model: every acknowledged event line, in order.
    let mut acknowledged: Vec<String> = Vec::new();
    let mut n_crashes = 0;
    for step in 0..n_steps {
        let batch = next_batch(&writer, &mut rng);
        if batch.is_empty() {
            // The last turn is open: a crash-and-reopen closes it (as an agent would resume).
            drop(writer);
            writer = store(root, compression).open_write(ID).expect("reopen");
            acknowledged = stored_lines(&path, compression);
            continue;
        }
        let durable = fs::metadata(&path).expect("stat").len();
        let appended = writer.append(batch, 1_000 + step as i64).expect("append");
        let written = fs::metadata(&path).expect("stat").len();
        let batch_lines = lines_of(&appended);
        if rng.below(3) != 0 {
            acknowledged.extend(batch_lines);
            assert_eq!(
                stored_lines(&path, compression),
                acknowledged,
                "step {step}"
            );
            continue;
        }
        // Crash during this append: the batch was never acknowledged; any prefix of its
        // bytes may have reached the disk.
        n_crashes += 1;
        drop(writer);
        let cut = durable + rng.below(written - durable + 1);
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|file| file.set_len(cut))
            .expect("cut");
        writer = store(root, compression)
            .open_write(ID)
            .unwrap_or_else(|error| {
                panic!("seed {seed} step {step}: reopen after a crash at byte {cut}: {error}")
            });
        let reopened = stored_lines(&path, compression);
        assert!(
            reopened.len() >= acknowledged.len() && reopened[..acknowledged.len()] == acknowledged,
            "seed {seed} step {step}: an acknowledged event was lost or changed"
        );
        let extra = &reopened[acknowledged.len()..];
        let survived = extra
            .iter()
            .zip(&batch_lines)
            .take_while(|(stored, written)| stored == written)
            .count();
        for line in &extra[survived..] {
            // After the surviving prefix of the batch, only repair's own events.
            let event: serde_json::Value = serde_json::from_str(line).expect("json");
            let kind = event["type"].as_str().unwrap_or_default().to_owned();
            assert!(
                matches!(
                    kind.as_str(),
                    "session/end-seed" | "step/end" | "turn/end" | "tool/result"
                ),
                "seed {seed} step {step}: unexpected {kind} after a crash"
            );
        }
        // The repaired log is the new durable state; a second reopen adds nothing.
        acknowledged = reopened;
        drop(writer);
        writer = store(root, compression)
            .open_write(ID)
            .expect("second reopen");
        assert_eq!(
            stored_lines(&path, compression),
            acknowledged,
            "seed {seed} step {step}: a second reopen changed the log"
        );
    }
    writer.close().expect("close");
    let session = store(root, compression)
        .load(ID)
        .expect("the final log validates");
    assert!(session.len() >= acknowledged.len());
    assert!(
        n_crashes > 0,
        "seed {seed}: the sequence crashed at least once"
    );
}

#[test]
fn random_appends_and_crashes_on_raw_jsonl_keep_every_acknowledged_event() {
    for seed in 1..=6 {
        run_sequence(Compression::None, seed, 60);
    }
}

#[test]
fn random_appends_and_crashes_on_zstd_jsonl_keep_every_acknowledged_event() {
    for seed in 1..=6 {
        run_sequence(Compression::Zstd, seed * 7919, 60);
    }
}
