//! Synthetic V3 sessions: deterministic, realistic logs for benches, demos and tests.
//!
//! A generated log looks like an agent's work: turns of steps, a system prompt
//! at node 0, user prompts, assistant messages with embedded streams and tool
//! calls, tool calls and their results, request headers, periodic compactions
//! (a `compaction/start`, `compaction/summary`, checkpoint replace,
//! `compaction/end` bracket over a span of whole turns) and tool-result prunes,
//! both inside an open turn, in the order upstream's format layer holds its
//! compactor and pruner to. Every event is appended through
//! [`Session::append`], so a generated log is valid by construction.
//! The same config and seed always give the same bytes (time is synthetic).

use serde_json::{json, Value};

use crate::candidate::{Candidate, Placement, SurfaceIntent};
use crate::header::SessionHeader;
use crate::payload::{self, HeaderReason};
use crate::rule::AcceptError;
use crate::seq::Seq;
use crate::session::{SeedOptions, Session};
use crate::wire::RawEvent;

/// What to generate.
#[derive(Clone, Debug)]
pub struct SynthConfig {
    /// Stop at the first turn boundary at or after this many events.
    pub events: u64,
    /// PRNG seed.
    pub seed: u64,
    /// Bytes of text per user/assistant message (approximate).
    pub content_bytes: usize,
    /// Compact every this many turns (0 = never).
    pub compact_every: u64,
    /// Per-turn probability (0..=1) of pruning one older tool result.
    pub prune_rate: f64,
    /// Session id.
    pub id: String,
}

impl Default for SynthConfig {
    fn default() -> SynthConfig {
        SynthConfig {
            events: 1_000,
            seed: 7,
            content_bytes: 120,
            compact_every: 8,
            prune_rate: 0.05,
            id: "synthetic".into(),
        }
    }
}

/// A small, fast, deterministic PRNG (xorshift64*); good enough for shapes.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

const WORDS: &[&str] = &[
    "the",
    "surface",
    "session",
    "log",
    "event",
    "tool",
    "result",
    "compaction",
    "model",
    "request",
    "replay",
    "file",
    "grep",
    "read",
    "build",
    "test",
    "error",
    "fix",
    "step",
    "turn",
    "déjà",
    "naïve",
    "数据",
    "ok",
    "\"quoted\"",
    "path/to/src",
    "line\nbreak",
    "tab\there",
];

fn text(rng: &mut Rng, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 16);
    while out.len() < bytes {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    out
}

/// [`generate`]d, then restored from its events' texts: the session as a load holds it, every
/// payload text until something asks for its tree (generated events are born parsed). For
/// tests and benches of code that reads a loaded log's payloads.
pub fn generate_loaded(config: &SynthConfig) -> Result<Session, AcceptError> {
    reloaded(&generate(config)?)
}

/// `generated` restored from its events' texts, as [`generate_loaded`] does (for the other
/// generators, such as [`generate_conversation`]). A generated session holds its whole log,
/// so its resident events are all of them.
pub fn reloaded(generated: &Session) -> Result<Session, AcceptError> {
    let generation = generated.generation();
    Session::restore(
        generated.header().clone(),
        generated
            .resident_events()
            .iter()
            .map(|event| RawEvent::from_event_in(event, generation)),
        SeedOptions::default(),
    )
}

/// The seqs of `session`'s events whose payload tree is parsed and kept: what a test of code
/// that passes over a [`generate_loaded`] log checks it did not leave behind.
/// Only resident events can hold a tree, so those are the ones looked at.
pub fn parsed_seqs(session: &Session) -> Vec<u64> {
    session
        .resident_events()
        .iter()
        .filter(|event| event.is_data_parsed())
        .map(|event| event.seq().get())
        .collect()
}

/// The generators' empty session `id` and the time it was created at.
fn new_session(id: &str) -> Result<(Session, i64), AcceptError> {
    let created_at = 1_700_000_000_000_u64;
    let header = SessionHeader::new(crate::header::HeaderSpec {
        id: id.to_owned(),
        created_at,
        cwd: Some("/home/user/project".into()),
        ..Default::default()
    })?;
    Ok((Session::create(header)?, created_at as i64))
}

/// Generates a session under `config`. Fails only if the generator itself is
/// wrong (every append is validated).
pub fn generate(config: &SynthConfig) -> Result<Session, AcceptError> {
    let (mut session, mut time) = new_session(&config.id)?;
    let mut rng = Rng(config.seed.max(1));
    let mut turn = 0_u64;
    let mut tool_results: Vec<Seq> = Vec::new();
    let provider = "deepseek";
    let model = "deepseek-chat";
    while (session.len() as u64) < config.events {
        turn += 1;
        time += 1_000;
        session.append(Candidate::log_only(payload::TurnStart { turn }), time)?;
        if config.compact_every > 0 && turn > 1 && turn % config.compact_every == 0 {
            compact(&mut session, &mut rng, config, turn, time)?;
        }
        tool_results.retain(|seq| session.surface().position(*seq).is_some());
        if config.prune_rate > 0.0 && !tool_results.is_empty() && rng.chance(config.prune_rate) {
            let pick = tool_results.remove(rng.below(tool_results.len() as u64) as usize);
            prune(&mut session, pick, time)?;
        }
        let steps = 1 + rng.below(3);
        for step in 1..=steps {
            time += 10;
            session.append(Candidate::log_only(payload::StepStart { turn, step }), time)?;
            if session.surface().is_empty() {
                let message = payload::system_message(
                    "system-0",
                    "You are a careful coding agent.",
                    "@deepseek-ai/dsh-system-prompt",
                );
                session.append(
                    Candidate::surface(
                        payload::SystemMessage {
                            turn,
                            step,
                            message,
                        },
                        SurfaceIntent::append(),
                    ),
                    time,
                )?;
            }
            if step == 1 {
                let prompt = text(&mut rng, config.content_bytes);
                let message = payload::user_text_message(&format!("user-{turn}"), &prompt);
                session.append(
                    Candidate::surface(payload::UserMessage { message }, SurfaceIntent::append()),
                    time,
                )?;
                let reason = if session.request_header().is_none() {
                    Some(HeaderReason::Initial)
                } else if rng.chance(0.01) {
                    Some(HeaderReason::Change)
                } else {
                    None
                };
                if let Some(reason) = reason {
                    let header = json!({"config": {"provider": provider, "model": model, "maxTokens": 8192},
                        "tools": [{"name": "read_file", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]});
                    session.append(
                        Candidate::log_only(payload::RequestHeader {
                            header,
                            reason,
                            starts_series: false,
                        }),
                        time,
                    )?;
                    session.append(
                        Candidate::log_only(payload::RequestContext {
                            provider: provider.into(),
                            model: model.into(),
                            context_window: Some(128_000),
                            system_prompt_update: None,
                        }),
                        time,
                    )?;
                }
            }
            let calls = if step < steps { 1 + rng.below(2) } else { 0 };
            let answer = text(&mut rng, config.content_bytes);
            let mut content = vec![
                json!({"type": "reasoning", "text": text(&mut rng, config.content_bytes / 2)}),
                payload::text_block(&answer),
            ];
            let call_ids: Vec<String> = (0..calls)
                .map(|k| format!("call-{turn}-{step}-{k}"))
                .collect();
            for id in &call_ids {
                content.push(payload::tool_call_block(
                    id,
                    "read_file",
                    "{\"path\":\"src/lib.rs\"}",
                ));
            }
            let stream = vec![
                json!({"type": "text-chunks", "time0": time, "index": 1, "dt": [3, 4], "texts": [answer.get(..answer.len().min(4)).unwrap_or(""), "…", "."]}),
                json!({"type": "chunk", "time": time + 9, "chunk": {"type": "finish", "reason": {"kind": if calls > 0 { "tool-calls" } else { "stop" }}}}),
            ];
            time += 50;
            let usage = json!({"inputTokens": 1000 + session.len() as u64, "outputTokens": 50 + rng.below(200)});
            session.append(
                Candidate::surface(
                    payload::AssistantMessage {
                        turn,
                        step,
                        message: payload::assistant_message(
                            &format!("assistant-{turn}-{step}"),
                            content,
                            provider,
                            model,
                        ),
                        stream,
                        usage: Some(usage),
                        interrupted: false,
                    },
                    Placement::append(),
                ),
                time,
            )?;
            let mut call_seqs = Vec::new();
            for id in &call_ids {
                let event = session.append(
                    Candidate::log_only(payload::ToolCall {
                        turn,
                        step,
                        call_id: id.clone(),
                        name: "read_file".into(),
                        arguments: "{\"path\":\"src/lib.rs\"}".into(),
                    }),
                    time,
                )?;
                call_seqs.push(event.seq());
            }
            for (id, call_seq) in call_ids.iter().zip(call_seqs) {
                time += 5;
                let is_error = rng.chance(0.05);
                let body = text(&mut rng, config.content_bytes * 2);
                let event = session.append(
                    Candidate::surface(
                        payload::ToolResult {
                            turn,
                            step,
                            message: payload::tool_result_message(
                                &format!("result-{id}"),
                                id,
                                vec![payload::text_block(&body)],
                                is_error,
                            ),
                            error: is_error
                                .then(|| json!({"name": "ToolError", "code": "TOOL_FAILED"})),
                            meta: None,
                        },
                        SurfaceIntent::append_citing(vec![call_seq]),
                    ),
                    time,
                )?;
                tool_results.push(event.seq());
            }
            session.append(Candidate::log_only(payload::StepEnd { turn, step }), time)?;
        }
        if rng.chance(0.1) {
            session.append(
                Candidate::log_only(payload::PluginEvent {
                    event_type: "todo/write".into(),
                    data: json!({"todos": [{"content": "keep going", "status": "in_progress"}]}),
                }),
                time,
            )?;
        }
        session.append(
            Candidate::log_only(payload::TurnEnd {
                turn,
                reason: json!({"kind": "completed"}),
            }),
            time,
        )?;
    }
    Ok(session)
}

/// What [`generate_conversation`] generates.
#[derive(Clone, Debug)]
pub struct ConversationConfig {
    /// Stop at the first turn boundary at or after this many live surface nodes.
    pub nodes: u64,
    /// PRNG seed.
    pub seed: u64,
    /// Bytes of text per message (approximate).
    pub content_bytes: usize,
    /// User/assistant exchanges per turn.
    pub exchanges_per_turn: u64,
    /// Every this many exchanges the assistant calls a tool first (0 = never).
    pub tool_every: u64,
    /// Session id.
    pub id: String,
}

impl Default for ConversationConfig {
    fn default() -> ConversationConfig {
        ConversationConfig {
            nodes: 1_000,
            seed: 7,
            content_bytes: 12,
            exchanges_per_turn: 50,
            tool_every: 8,
            id: "conversation".into(),
        }
    }
}

/// Generates a long conversation that was never compacted or pruned: short user and
/// assistant messages (now and then a tool call and its result), nearly every event a live
/// surface node. The shape [`generate`] does not reach, whose compactions keep the surface
/// small: here the surface is as large as the log, and so is whatever a reader keeps per
/// node. Fails only if the generator itself is wrong (every append is validated).
pub fn generate_conversation(config: &ConversationConfig) -> Result<Session, AcceptError> {
    let (mut session, mut time) = new_session(&config.id)?;
    let mut rng = Rng(config.seed.max(1));
    let (provider, model) = ("deepseek", "deepseek-chat");
    let mut turn = 0_u64;
    let mut exchange = 0_u64;
    while (session.surface().len() as u64) < config.nodes {
        turn += 1;
        time += 1_000;
        session.append(Candidate::log_only(payload::TurnStart { turn }), time)?;
        session.append(
            Candidate::log_only(payload::StepStart { turn, step: 1 }),
            time,
        )?;
        if session.surface().is_empty() {
            let message = payload::system_message(
                "system-0",
                "You are a helpful assistant.",
                "@deepseek-ai/dsh-system-prompt",
            );
            session.append(
                Candidate::surface(
                    payload::SystemMessage {
                        turn,
                        step: 1,
                        message,
                    },
                    SurfaceIntent::append(),
                ),
                time,
            )?;
            let header = json!({"config": {"provider": provider, "model": model, "maxTokens": 8192},
                "tools": [{"name": "read_file", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]});
            session.append(
                Candidate::log_only(payload::RequestHeader {
                    header,
                    reason: HeaderReason::Initial,
                    starts_series: false,
                }),
                time,
            )?;
        }
        for _ in 0..config.exchanges_per_turn.max(1) {
            exchange += 1;
            time += 10;
            let prompt = text(&mut rng, config.content_bytes);
            let message = payload::user_text_message(&format!("u{exchange}"), &prompt);
            session.append(
                Candidate::surface(payload::UserMessage { message }, SurfaceIntent::append()),
                time,
            )?;
            if config.tool_every > 0 && exchange % config.tool_every == 0 {
                let call_id = format!("c{exchange}");
                let call = payload::tool_call_block(&call_id, "read_file", "{\"path\":\"a\"}");
                let message = payload::assistant_message(
                    &format!("a{exchange}t"),
                    vec![call],
                    provider,
                    model,
                );
                session.append(
                    Candidate::surface(
                        payload::AssistantMessage {
                            turn,
                            step: 1,
                            message,
                            stream: Vec::new(),
                            usage: None,
                            interrupted: false,
                        },
                        Placement::append(),
                    ),
                    time,
                )?;
                let call_seq = session
                    .append(
                        Candidate::log_only(payload::ToolCall {
                            turn,
                            step: 1,
                            call_id: call_id.clone(),
                            name: "read_file".into(),
                            arguments: "{\"path\":\"a\"}".into(),
                        }),
                        time,
                    )?
                    .seq();
                let body = text(&mut rng, config.content_bytes);
                session.append(
                    Candidate::surface(
                        payload::ToolResult {
                            turn,
                            step: 1,
                            message: payload::tool_result_message(
                                &format!("r{exchange}"),
                                &call_id,
                                vec![payload::text_block(&body)],
                                false,
                            ),
                            error: None,
                            meta: None,
                        },
                        SurfaceIntent::append_citing(vec![call_seq]),
                    ),
                    time,
                )?;
            }
            let answer = text(&mut rng, config.content_bytes);
            let message = payload::assistant_message(
                &format!("a{exchange}"),
                vec![payload::text_block(&answer)],
                provider,
                model,
            );
            // Provider usage on a turn's last answer: the sample a token meter anchors on.
            let usage = (exchange % config.exchanges_per_turn.max(1) == 0).then(|| {
                json!({"inputTokens": 1000 + session.len() as u64, "outputTokens": 20 + rng.below(80)})
            });
            session.append(
                Candidate::surface(
                    payload::AssistantMessage {
                        turn,
                        step: 1,
                        message,
                        stream: Vec::new(),
                        usage,
                        interrupted: false,
                    },
                    Placement::append(),
                ),
                time,
            )?;
        }
        session.append(
            Candidate::log_only(payload::StepEnd { turn, step: 1 }),
            time,
        )?;
        session.append(
            Candidate::log_only(payload::TurnEnd {
                turn,
                reason: json!({"kind": "completed"}),
            }),
            time,
        )?;
    }
    Ok(session)
}

/// Replaces the surface from node 1 (after the system prompt) through the last node before
/// the current turn with a summary, as one compaction bracket in upstream's order (the order
/// dsh's format layer holds a compaction to): `compaction/start {turn}`, `compaction/summary`
/// naming the exact shadowed span while it is still on the surface, the checkpoint
/// `user/message` replacing it (citing the start, the summary and every shadowed node), then
/// `compaction/end` with the same owner turn.
fn compact(
    session: &mut Session,
    rng: &mut Rng,
    config: &SynthConfig,
    turn: u64,
    time: i64,
) -> Result<(), AcceptError> {
    let nodes = session.surface().nodes().to_vec();
    if nodes.len() < 4 {
        return Ok(());
    }
    let start = nodes[1];
    let end = nodes[nodes.len() - 1];
    let compaction_id = format!("compaction-{turn}");
    let start_seq = session
        .append(
            Candidate::log_only(payload::PluginEvent {
                event_type: "compaction/start".into(),
                data: json!({"compactionId": compaction_id, "turn": turn}),
            }),
            time,
        )?
        .seq();
    let shadowed: Vec<Seq> = nodes[1..].to_vec();
    let summary = text(rng, config.content_bytes);
    // A stand-in for a tokenizer's count: a quarter of the shadowed payloads' bytes.
    let shadowed_tokens: usize = shadowed
        .iter()
        .filter_map(|seq| session.event(*seq))
        .map(|event| event.data_json().len().div_ceil(4))
        .sum();
    let summary_seq = session
        .append(
            Candidate::log_only(payload::PluginEvent {
                event_type: "compaction/summary".into(),
                data: json!({
                    "compactionId": compaction_id,
                    "summary": [payload::text_block(&summary)],
                    "shadowedRange": {"start": start.get(), "end": end.get()},
                    "shadowedSeqs": shadowed.iter().map(|seq| seq.get()).collect::<Vec<_>>(),
                    "shadowedTokenCount": shadowed_tokens,
                    "provider": "deepseek",
                    "model": "deepseek-chat",
                }),
            }),
            time,
        )?
        .seq();
    let framed = format!(
        "This is an automatically generated checkpoint.\n\n<compacted-summary>{summary}</compacted-summary>"
    );
    let message = payload::user_message(
        &format!("summary-{turn}"),
        vec![payload::text_block(&framed)],
        json!({"kind": "plugin", "plugin": "compact", "compactionId": compaction_id}),
    );
    let mut sources = vec![start_seq, summary_seq];
    sources.extend_from_slice(&shadowed);
    session.append(
        Candidate::surface(
            payload::UserMessage { message },
            SurfaceIntent::replace(start, end, sources),
        ),
        time,
    )?;
    session.append(
        Candidate::log_only(payload::PluginEvent {
            event_type: "compaction/end".into(),
            data: json!({"compactionId": compaction_id, "turn": turn}),
        }),
        time,
    )?;
    Ok(())
}

/// Rewrites one tool result's content (same id and fields), as the pruner does.
fn prune(session: &mut Session, target: Seq, time: i64) -> Result<(), AcceptError> {
    let Some(original) = session.event(target).cloned() else {
        return Ok(());
    };
    let mut data: Value = original.data().clone();
    if let Some(inner) = data
        .get_mut("message")
        .and_then(|message| message.get_mut("content"))
        .and_then(|content| content.get_mut(0))
        .and_then(|block| block.get_mut("content"))
    {
        *inner = json!([{"type": "text", "text": "[... tool result middle pruned ...]"}]);
    }
    session.append(
        Candidate::log_only(payload::PluginEvent {
            event_type: "compaction/prune".into(),
            data: json!({"shadowedRange": {"start": target.get(), "end": target.get()}, "shadowedSeqs": [target.get()], "shadowedTokenCount": 100}),
        }),
        time,
    )?;
    session.append(
        Candidate::dynamic(
            "tool/result",
            data,
            Some(json!({"op": "replace", "startSeq": target.get(), "endSeq": target.get()})),
            Some(json!([target.get()])),
        ),
        time,
    )?;
    Ok(())
}
