//! What upstream's relational and head rules (docs/rules.md) cost on the accept path: the same
//! log appended event by event (`Session::append`: plan + commit) and restored from raw rows
//! (`Session::restore`), with the rules on and with them off (`SeedOptions::surface_only`),
//! interleaved in one run; best of `STRATA_BENCH_RUNS` (default 3).
//!
//! Run: `cargo bench -p strata-core --bench relations`. Knobs: `STRATA_BENCH_SHAPE`
//! (`conversation`, the default: a long conversation never compacted; or `realistic`, the
//! synthetic agent log), `STRATA_BENCH_EVENTS` (default 200,000).

use std::time::{Duration, Instant};

use serde_json::Value;
use strata_core::synth::{generate, generate_conversation, ConversationConfig, SynthConfig};
use strata_core::{Candidate, Generation, RawEvent, SeedOptions, Session};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn options(rules: bool) -> SeedOptions {
    SeedOptions {
        marker_time: 0,
        surface_only: !rules,
        defer_marker: false,
        repair: None,
    }
}

fn best(runs: u64, mut f: impl FnMut() -> Duration) -> Duration {
    (0..runs).map(|_| f()).min().unwrap_or_default()
}

fn main() {
    let shape = std::env::var("STRATA_BENCH_SHAPE").unwrap_or_else(|_| "conversation".into());
    let n = env_u64("STRATA_BENCH_EVENTS", 200_000);
    let runs = env_u64("STRATA_BENCH_RUNS", 3);
    let session = match shape.as_str() {
        "realistic" => generate(&SynthConfig {
            events: n,
            ..SynthConfig::default()
        }),
        _ => generate_conversation(&ConversationConfig {
            nodes: n,
            ..ConversationConfig::default()
        }),
    }
    .expect("the generator's appends are valid");
    let header = session.header().clone();
    let events = session.events().unwrap().to_vec();
    let candidates: Vec<(Candidate, i64)> = events
        .iter()
        .map(|event| {
            let op = event
                .surface_op()
                .map(|op| op.to_value(Generation::V3.replace_spelling()));
            let sources = event.sources().map(|sources| {
                Value::Array(sources.iter().map(|seq| Value::from(seq.get())).collect())
            });
            (
                Candidate::dynamic(
                    event.event_type().as_str(),
                    event.data().clone(),
                    op,
                    sources,
                ),
                event.time(),
            )
        })
        .collect();
    let raws: Vec<RawEvent> = session.to_raw_events().unwrap();
    drop(session);
    let append = |rules: bool| {
        let batch = candidates.clone();
        let mut target = Session::create_with(header.clone(), options(rules)).expect("session");
        let start = Instant::now();
        for (candidate, time) in batch {
            target.append(candidate, time).expect("valid");
        }
        start.elapsed()
    };
    let restore = |rules: bool| {
        let rows = raws.clone();
        let start = Instant::now();
        let restored = Session::restore(header.clone(), rows, options(rules)).expect("valid");
        let elapsed = start.elapsed();
        drop(restored);
        elapsed
    };
    let mut results = Vec::new();
    for (name, f) in [
        (
            "Session::append per event",
            &append as &dyn Fn(bool) -> Duration,
        ),
        ("Session::restore", &restore),
    ] {
        let mut off = Duration::MAX;
        let mut on = Duration::MAX;
        for _ in 0..runs {
            off = off.min(best(1, || f(false)));
            on = on.min(best(1, || f(true)));
        }
        results.push((name, off, on));
    }
    println!("{shape}, {} events, best of {runs}", events.len());
    for (name, off, on) in results {
        let per = |d: Duration| d.as_nanos() as f64 / events.len() as f64;
        println!(
            "{name}: rules off {:.0} ns/event, rules on {:.0} ns/event, ratio {:.3}",
            per(off),
            per(on),
            on.as_secs_f64() / off.as_secs_f64()
        );
    }
}
