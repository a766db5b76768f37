//! Raw SSE decoding throughput of [`decode_sse_stream`], in events per second, over a large
//! in-memory DeepSeek-shaped stream. This is the floor the agent loop's per-event overhead is
//! compared with: the loop cannot consume events faster than the client produces them.
//!
//! Run: `cargo bench -p strata-agent --bench sse` (criterion prints `thrpt` in elem/s, one
//! element = one decoded [`StreamEvent`]).

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use futures_util::{stream, StreamExt};
use strata_agent::llm::{decode_sse_stream, LlmError, StreamEvent};

/// Content deltas in the synthetic stream.
const N_DELTAS: usize = 20_000;

/// A DeepSeek-shaped body: role chunk, reasoning, text and two interleaved tool calls (in the
/// proportions 3:5:2), finish, usage, `[DONE]`, with a keep-alive comment every 500 events.
/// Returns the SSE events, one string each, and how many [`StreamEvent`]s they decode to.
fn deepseek_stream() -> (Vec<String>, u64) {
    let frame = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"2f8a\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"deepseek-reasoner\",\"system_fingerprint\":\"fp_1\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let mut events = vec![frame(
        r#"{"role":"assistant","content":null,"reasoning_content":""}"#,
        "null",
    )];
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
        events.push(frame(&delta, "null"));
        if idx % 500 == 499 {
            events.push(": keep-alive\n\n".into());
        }
    }
    events.push(frame(r#"{"content":""}"#, "\"tool_calls\""));
    events.push("data: {\"id\":\"2f8a\",\"choices\":[],\"usage\":{\"prompt_tokens\":64,\"completion_tokens\":20000,\"total_tokens\":20064,\"prompt_cache_hit_tokens\":0,\"prompt_cache_miss_tokens\":64}}\n\n".into());
    events.push("data: [DONE]\n\n".into());
    // Every delta decodes to one event, plus usage and finish.
    (events, N_DELTAS as u64 + 2)
}

/// Re-cuts the body into reads of `read_len` bytes, as a socket would deliver them.
fn reads_of(body: &[u8], read_len: usize) -> Vec<Bytes> {
    body.chunks(read_len).map(Bytes::copy_from_slice).collect()
}

fn decode_all(runtime: &tokio::runtime::Runtime, reads: &[Bytes]) -> u64 {
    let reads: Vec<Result<Bytes, LlmError>> = reads.iter().cloned().map(Ok).collect();
    runtime.block_on(async {
        let mut events = decode_sse_stream(stream::iter(reads), None);
        let mut n_events = 0;
        while let Some(event) = events.next().await {
            match event {
                Ok(StreamEvent::Finish { .. }) => return n_events + 1,
                Ok(_) => n_events += 1,
                Err(error) => panic!("bench stream failed: {error}"),
            }
        }
        panic!("bench stream ended without finish");
    })
}

fn bench_decode_sse_stream(c: &mut Criterion) {
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(error) => panic!("no tokio runtime: {error}"),
    };
    let (events, n_events) = deepseek_stream();
    let body = events.concat().into_bytes();
    let per_event: Vec<Bytes> = events.into_iter().map(Bytes::from).collect();
    let mut group = c.benchmark_group("decode_sse_stream");
    group.throughput(Throughput::Elements(n_events));
    group.sample_size(20);
    for (name, reads) in [
        ("read_per_event", per_event),
        ("read_4KiB", reads_of(&body, 4096)),
        ("read_16KiB", reads_of(&body, 16 * 1024)),
    ] {
        assert_eq!(decode_all(&runtime, &reads), n_events);
        group.bench_with_input(BenchmarkId::from_parameter(name), &reads, |b, reads| {
            b.iter(|| decode_all(&runtime, reads))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_decode_sse_stream);
criterion_main!(benches);
