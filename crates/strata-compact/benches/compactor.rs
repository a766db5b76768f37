//! Criterion benches of compaction planning and pruning on a 100,000-node surface (issue 5
//! "Performance": planning ≤ 5 ms excluding the summarizer; pruning O(new events) per turn).
//!
//! `STRATA_BENCH_NODES` sets the surface size (default 100,000). The session is a synthetic
//! V3 log of agent turns (`strata_store::synth`) without compactions, so every node is live.
//!
//! - `Compactor::plan/warm`: the meter is in step with the log; plan = O(kept tail +
//!   region) selection plus copying the shadowed seqs (and, for automatic triggers, the
//!   surface snapshot).
//! - `Compactor::plan/after-one-turn`: one agent turn (8 events) appended before each plan,
//!   so the meter catches up on new events only.
//! - `TokenMeter::measure/cold`: a fresh meter over the whole log (the one-time cost when a
//!   compactor first sees a resumed session).
//! - `CompactionPlan::summary_request`, `Compactor::finish`: the O(region) steps around
//!   the summarizer call.
//! - `Pruner::plan/after-one-turn`: one turn with an oversized tool result appended before
//!   each pass; flat across surface sizes means O(new events).
//! - `floor/clone-surface`: copying the surface node vector, the cheapest thing a plan
//!   that snapshots the surface can do.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;
use strata_compact::deadline::block_on;
use strata_compact::IdGenerator;
use strata_compact::{
    CompactionConfig, Compactor, ExtractiveSummarizer, Pruner, PrunerConfig, Retain, TokenMeter,
    Trigger,
};
use strata_core::{payload, Candidate, Session, SessionHeader, SurfaceIntent};

fn target_nodes() -> usize {
    std::env::var("STRATA_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// A session with a system prompt, a request header and at least `nodes` surface nodes,
/// built from `strata_store::synth` agent turns (user prompt, assistant message with a tool
/// call, tool result: three nodes per turn), its last turn closed. (`strata_core::synth`
/// re-checks every earlier tool result each turn, which is quadratic at this size.)
fn session_with_nodes(nodes: usize) -> Session {
    let header = SessionHeader::fresh("bench", 1_700_000_000_000).expect("header");
    let mut session = Session::create(header).expect("session");
    let time = 1_700_000_000_000;
    let prologue = vec![
        Candidate::surface(
            payload::SystemMessage {
                turn: 0,
                step: 0,
                message: payload::system_message(
                    "system-0",
                    "You are a careful coding agent.",
                    "@deepseek-ai/dsh-system-prompt",
                ),
            },
            SurfaceIntent::append(),
        ),
        Candidate::log_only(payload::RequestHeader {
            header: json!({"config": {"provider": "deepseek", "model": "deepseek-chat"},
                "tools": [{"name": "read", "description": "Read a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]}),
            reason: payload::HeaderReason::Initial,
            starts_series: false,
        }),
        Candidate::log_only(payload::RequestContext {
            provider: "deepseek".into(),
            model: "deepseek-chat".into(),
            context_window: Some(128_000),
            system_prompt_update: None,
        }),
    ];
    session.append_batch(prologue, time).expect("prologue");
    let mut turn = 0;
    while session.surface().len() < nodes {
        turn += 1;
        let first = session.len() as u64;
        let text_len = 100 + (turn as usize * 37) % 400;
        session
            .append_batch(
                strata_store::synth::turn_candidates(turn, first, text_len),
                time,
            )
            .expect("a synthetic turn is valid");
    }
    session
}

fn last_turn(session: &Session) -> u64 {
    session
        .events()
        .unwrap()
        .iter()
        .rev()
        .find_map(|event| {
            (event.event_type().as_str() == "turn/start")
                .then(|| event.u64_field("turn"))
                .flatten()
        })
        .unwrap_or(0)
}

/// Appends one closed agent turn whose tool result is `result_len` bytes.
fn append_turn(session: &mut Session, result_len: usize) {
    let turn = last_turn(session) + 1;
    let first = session.len() as u64;
    let time = session
        .events()
        .unwrap()
        .last()
        .map_or(0, |event| event.time());
    session
        .append_batch(
            strata_store::synth::turn_candidates(turn, first, result_len),
            time,
        )
        .expect("a synthetic turn is valid");
}

/// Opens a turn so automatic triggers have an owner.
fn open_turn(session: &mut Session) {
    let turn = last_turn(session) + 1;
    let time = session
        .events()
        .unwrap()
        .last()
        .map_or(0, |event| event.time());
    session
        .append(Candidate::log_only(payload::TurnStart { turn }), time)
        .expect("turn/start");
}

fn config() -> CompactionConfig {
    CompactionConfig {
        context_window: Some(128_000),
        retain: Retain::Ratio(0.16),
        ..CompactionConfig::default()
    }
}

fn plan(c: &mut Criterion) {
    let mut session = session_with_nodes(target_nodes());
    let n_nodes = session.surface().len();
    eprintln!(
        "bench session: {} events, {} surface nodes",
        session.len(),
        n_nodes
    );
    let mut group = c.benchmark_group("Compactor::plan");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));

    let compactor = Compactor::new(config()).expect("valid config");
    compactor.measure(&session);
    group.bench_function(BenchmarkId::new("warm/manual", n_nodes), |b| {
        b.iter(|| {
            compactor
                .plan(black_box(&session), Trigger::Manual)
                .expect("plan")
        })
    });
    open_turn(&mut session);
    compactor.measure(&session);
    group.bench_function(BenchmarkId::new("warm/pressure", n_nodes), |b| {
        b.iter(|| {
            compactor
                .plan(black_box(&session), Trigger::Pressure)
                .expect("plan")
        })
    });
    group.bench_function(BenchmarkId::new("floor/clone-surface", n_nodes), |b| {
        b.iter(|| black_box(session.surface().nodes().to_vec()))
    });

    // Planning right after a turn lands: the meter reads the new events only.
    let mut grown = session_with_nodes(target_nodes());
    let compactor = Compactor::new(config()).expect("valid config");
    compactor.measure(&grown);
    group.bench_function(BenchmarkId::new("after-one-turn/manual", n_nodes), |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                append_turn(&mut grown, 200);
                let started = Instant::now();
                black_box(compactor.plan(&grown, Trigger::Manual).expect("plan"));
                total += started.elapsed();
            }
            total
        })
    });
    group.finish();

    let mut group = c.benchmark_group("TokenMeter::measure");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function(BenchmarkId::new("cold", session.len()), |b| {
        b.iter(|| TokenMeter::new().measure(black_box(&session)))
    });
    group.finish();

    let compactor = Compactor::new(config()).expect("valid config");
    let planned = compactor
        .plan(&session, Trigger::Pressure)
        .expect("plan")
        .expect("a region");
    eprintln!(
        "pressure plan: {} of {} nodes shadowed ({} tokens), {} tokens kept",
        planned.shadowed().len(),
        n_nodes,
        planned.region().shadowed_tokens,
        planned.region().retained_tokens
    );
    let mut group = c.benchmark_group("CompactionPlan::summary_request");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    group.bench_function(
        BenchmarkId::new("pressure", planned.shadowed().len()),
        |b| b.iter(|| black_box(planned.summary_request(&session))),
    );
    group.finish();

    let request = planned.summary_request(&session);
    let summary = block_on(compactor.summarize(&request, &ExtractiveSummarizer));
    let ids = IdGenerator::seeded(1).next_ids();
    let mut group = c.benchmark_group("Compactor::finish");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    group.bench_function(
        BenchmarkId::new("pressure", planned.shadowed().len()),
        |b| {
            b.iter(|| {
                compactor
                    .finish(&planned, &session, summary.clone(), &ids)
                    .expect("finish")
            })
        },
    );
    group.finish();
}

fn prune(c: &mut Criterion) {
    let mut group = c.benchmark_group("Pruner::plan");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));
    for nodes in [10_000, target_nodes()] {
        let mut session = session_with_nodes(nodes);
        let pruner = Pruner::new(PrunerConfig::default()).expect("valid config");
        pruner.plan(&session);
        group.bench_function(BenchmarkId::new("after-one-turn", nodes), |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    append_turn(&mut session, 10_000);
                    let started = Instant::now();
                    let plan = pruner.plan(&session);
                    total += started.elapsed();
                    // Land the rewrite so the next pass sees only the next turn's result.
                    let time = session
                        .events()
                        .unwrap()
                        .last()
                        .map_or(0, |event| event.time());
                    session
                        .append_batch(plan.candidates, time)
                        .expect("a prune is valid");
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, plan, prune);
criterion_main!(benches);
