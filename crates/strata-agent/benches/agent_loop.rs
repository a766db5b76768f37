//! The agent loop's per-event overhead against the raw SSE decoding floor.
//!
//! Both sides consume the same DeepSeek-shaped body as `benches/sse.rs` (20,000 content
//! deltas — reasoning, text and two interleaved tool calls — then finish, usage, `[DONE]`),
//! read in 4 KiB pieces:
//!
//! - **floor**: `decode_sse_stream` alone, counting events;
//! - **loop**: `Agent::run_turn` with a model that decodes that body: every event goes to the
//!   observer and the stream recorder, the answer (with its compact embedded stream) and the
//!   tool calls are validated and appended through a `SessionWriter`, the unknown tool calls
//!   are answered, and a second tiny step ends the turn. Run on the in-memory store (loop
//!   bookkeeping only) and on a raw JSONL store in a temporary directory (with its fsyncs).
//!
//! Prints events/s for each, the loop/floor time ratio, the loop's own cost per event, and
//! how much of one core the loop would use at 2,000 streamed tokens per second.
//!
//! Run: `cargo bench -p strata-agent --bench agent_loop`

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{stream, StreamExt};
use strata_agent::agent::{Agent, AgentConfig, CallConfig, TurnOutcome};
use strata_agent::llm::{
    decode_sse_stream, ChatModel, ChatRequest, EventStream, LlmError, StreamEvent,
};
use strata_agent::tools::{ToolSet, Workspace};
use strata_core::SessionHeader;
use strata_store::{Compression, Store};
use tokio_util::sync::CancellationToken;

/// Content deltas in the synthetic stream (as in `benches/sse.rs`).
const N_DELTAS: usize = 20_000;
/// Timed runs per measurement; the best is reported.
const N_RUNS: usize = 7;

/// The `benches/sse.rs` body: role chunk, reasoning, text and two interleaved tool calls
/// (3:5:2), finish, usage, `[DONE]`, a keep-alive every 500 events.
fn deepseek_body() -> (Vec<u8>, u64) {
    let frame = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"2f8a\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"deepseek-reasoner\",\"system_fingerprint\":\"fp_1\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let mut body = frame(
        r#"{"role":"assistant","content":null,"reasoning_content":""}"#,
        "null",
    );
    for idx in 0..N_DELTAS {
        let delta = match idx % 10 {
            0..=2 => format!(r#"{{"content":null,"reasoning_content":" thought {idx}"}}"#),
            3..=7 => format!(r#"{{"content":" word{idx}","reasoning_content":null}}"#),
            slot => {
                let call = slot - 8;
                if idx < 10 {
                    format!(
                        r#"{{"tool_calls":[{{"index":{call},"id":"call_{call}","type":"function","function":{{"name":"read_file","arguments":""}}}}]}}"#
                    )
                } else {
                    format!(
                        r#"{{"tool_calls":[{{"index":{call},"function":{{"arguments":"\"p{idx}\","}}}}]}}"#
                    )
                }
            }
        };
        body.push_str(&frame(&delta, "null"));
        if idx % 500 == 499 {
            body.push_str(": keep-alive\n\n");
        }
    }
    body.push_str(&frame(r#"{"content":""}"#, "\"tool_calls\""));
    body.push_str("data: {\"id\":\"2f8a\",\"choices\":[],\"usage\":{\"prompt_tokens\":64,\"completion_tokens\":20000,\"total_tokens\":20064,\"prompt_cache_hit_tokens\":0,\"prompt_cache_miss_tokens\":64}}\n\n");
    body.push_str("data: [DONE]\n\n");
    (body.into_bytes(), N_DELTAS as u64 + 2)
}

/// A short final answer for the turn's second step.
fn short_body() -> Vec<u8> {
    concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n"
    )
    .as_bytes()
    .to_vec()
}

fn reads(body: &[u8]) -> Vec<Result<Bytes, LlmError>> {
    body.chunks(4096)
        .map(|read| Ok(Bytes::copy_from_slice(read)))
        .collect()
}

/// A model whose first answer is the big body and whose later answers are short, decoded by
/// the same SSE decoder the HTTP client uses.
struct SseReplay {
    big: Vec<Result<Bytes, LlmError>>,
    short: Vec<Result<Bytes, LlmError>>,
}

impl ChatModel for SseReplay {
    fn stream(&self, request: &ChatRequest) -> EventStream {
        // The first request of a turn has no tool results yet.
        let first = !request
            .messages
            .iter()
            .any(|message| matches!(message, strata_agent::llm::ChatMessage::Tool { .. }));
        let reads = if first { &self.big } else { &self.short };
        decode_sse_stream(stream::iter(reads.clone()), None)
    }
}

fn floor(runtime: &tokio::runtime::Runtime, reads: &[Result<Bytes, LlmError>]) -> (Duration, u64) {
    let started = Instant::now();
    let n_events = runtime.block_on(async {
        let mut events = decode_sse_stream(stream::iter(reads.to_vec()), None);
        let mut n_events = 0u64;
        while let Some(event) = events.next().await {
            match event {
                Ok(StreamEvent::Finish { .. }) => return n_events + 1,
                Ok(_) => n_events += 1,
                Err(error) => panic!("bench stream failed: {error}"),
            }
        }
        n_events
    });
    (started.elapsed(), n_events)
}

fn one_turn(
    runtime: &tokio::runtime::Runtime,
    store: &Store,
    model: &Arc<SseReplay>,
    workspace: &Workspace,
    run: usize,
) -> Duration {
    let writer = store
        .create(SessionHeader::fresh(&format!("bench-{run}"), 1).unwrap())
        .unwrap();
    let mut agent = Agent::new(
        writer,
        model.clone(),
        ToolSet::new(),
        workspace.clone(),
        AgentConfig::new(CallConfig::new("deepseek", "deepseek-reasoner")),
    );
    let started = Instant::now();
    let report = runtime
        .block_on(agent.run_turn("Go", &CancellationToken::new()))
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(
        (report.outcome, report.n_steps),
        (TurnOutcome::Completed, 2)
    );
    agent.close().unwrap();
    elapsed
}

fn best(mut runs: impl FnMut(usize) -> Duration) -> Duration {
    (0..N_RUNS).map(&mut runs).min().unwrap_or_default()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (body, n_events) = deepseek_body();
    let big = reads(&body);
    let model = Arc::new(SseReplay {
        big: big.clone(),
        short: reads(&short_body()),
    });
    let work = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(work.path()).unwrap();

    let floor_time = best(|_| {
        let (elapsed, n) = floor(&runtime, &big);
        assert_eq!(n, n_events);
        elapsed
    });
    let memory = Store::memory();
    let memory_time = best(|run| one_turn(&runtime, &memory, &model, &workspace, run));
    let logs = tempfile::tempdir().unwrap();
    let jsonl = Store::jsonl(logs.path(), Compression::None);
    let jsonl_time = best(|run| one_turn(&runtime, &jsonl, &model, &workspace, run));

    let rate = |elapsed: Duration| n_events as f64 / elapsed.as_secs_f64();
    println!("agent loop vs SSE decoding, {n_events} stream events per turn (best of {N_RUNS})");
    println!(
        "  floor  decode_sse_stream        {:>10.0} events/s  ({:.1} ms)",
        rate(floor_time),
        floor_time.as_secs_f64() * 1e3
    );
    for (name, elapsed) in [("memory store", memory_time), ("jsonl store ", jsonl_time)] {
        let overhead = elapsed.saturating_sub(floor_time);
        let per_event_us = overhead.as_secs_f64() * 1e6 / n_events as f64;
        println!(
            "  loop   run_turn, {name}   {:>10.0} events/s  ({:.1} ms)  ratio {:.2}×  loop cost {:.3} µs/event  = {:.3}% of a core at 2,000 tokens/s",
            rate(elapsed),
            elapsed.as_secs_f64() * 1e3,
            elapsed.as_secs_f64() / floor_time.as_secs_f64(),
            per_event_us,
            per_event_us * 2_000.0 / 1e6 * 100.0,
        );
    }
}
