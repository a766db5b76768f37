//! Benches for `Session`: seed/restore throughput, derived messages, JSONL decode.
//!
//! `STRATA_BENCH_EVENTS` sets the size of the big log (default 1,000,000).
//!
//! - `Session::restore/in-memory`: seed + validate + fold of events already in
//!   memory (target ≥ 5 M events/s).
//! - `Session::derive_messages/after-append/N`: one append then
//!   `derive_messages()` on an N-node surface; flat across N means O(1).
//! - `RawEvent::from_json_slice+Session::restore` vs `serde_json IgnoredAny`:
//!   parse + validate of V3 JSONL bytes against the bare tokenizer floor.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use strata_core::synth::{generate, SynthConfig};
use strata_core::{
    payload, Candidate, RawEvent, SeedOptions, Session, SessionHeader, SurfaceIntent,
};

fn big_events() -> u64 {
    std::env::var("STRATA_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn restore(c: &mut Criterion) {
    let config = SynthConfig {
        events: big_events(),
        ..SynthConfig::default()
    };
    let session = generate(&config).expect("generator produces valid logs");
    let header = session.header().clone();
    let raws = session.to_raw_events().unwrap();
    let n = raws.len() as u64;
    let mut group = c.benchmark_group("Session::restore");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(n));
    // Events already in memory as accepted events (a live session's log):
    // every rule runs again, the events are shared.
    let events: Vec<_> = session.events().unwrap().to_vec();
    group.bench_function(BenchmarkId::new("accepted-events", n), |b| {
        b.iter_batched(
            || events.clone(),
            |events| {
                Session::restore(header.clone(), events, SeedOptions::default()).expect("valid")
            },
            BatchSize::PerIteration,
        )
    });
    // Events in memory as raw rows (stored text, not yet accepted).
    group.bench_function(BenchmarkId::new("raw-rows", n), |b| {
        b.iter_batched(
            || raws.clone(),
            |raws| Session::restore(header.clone(), raws, SeedOptions::default()).expect("valid"),
            BatchSize::PerIteration,
        )
    });
    group.finish();

    // The same log as V3 JSONL text: parse + validate vs the bare tokenizer.
    let mut text = Vec::new();
    for event in session.events().unwrap() {
        text.extend_from_slice(event.to_json().as_bytes());
        text.push(b'\n');
    }
    let mut group = c.benchmark_group("jsonl-decode");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function(BenchmarkId::new("floor/serde_json-IgnoredAny", n), |b| {
        b.iter(|| {
            for line in text.split(|&byte| byte == b'\n').filter(|l| !l.is_empty()) {
                let _: serde::de::IgnoredAny = serde_json::from_slice(line).expect("json");
            }
        })
    });
    group.bench_function(BenchmarkId::new("RawEvent+Session::restore", n), |b| {
        b.iter(|| {
            let rows = text
                .split(|&byte| byte == b'\n')
                .filter(|l| !l.is_empty())
                .map(|line| RawEvent::from_json_slice(line).expect("json"));
            let restored =
                Session::restore(header.clone(), rows, SeedOptions::default()).expect("valid");
            black_box(restored.len())
        })
    });
    group.finish();
}

fn derive_after_append(c: &mut Criterion) {
    let mut group = c.benchmark_group("Session::derive_messages/after-append");
    for nodes in [12_500_u64, 25_000, 50_000, 100_000] {
        let header = SessionHeader::fresh("bench", 0).expect("header");
        let mut session = Session::create(header).expect("session");
        let append = |session: &mut Session, k: u64| {
            let message = payload::user_text_message(&format!("m{k}"), "hello");
            session
                .append(
                    Candidate::surface(payload::UserMessage { message }, SurfaceIntent::append()),
                    0,
                )
                .expect("append");
        };
        for k in 0..nodes {
            append(&mut session, k);
        }
        black_box(session.derive_messages());
        let mut k = nodes;
        group.bench_function(BenchmarkId::from_parameter(nodes), |b| {
            b.iter(|| {
                k += 1;
                append(&mut session, k);
                black_box(session.derive_messages().len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, restore, derive_after_append);
criterion_main!(benches);
