//! Shared builders and checks.

use std::future::{pending, ready, Future};
use std::sync::Arc;

use serde_json::{json, Value};
use strata_compact::{SummarizeError, Summarizer, Summary, SummaryRequest};
use strata_core::synth::{generate, SynthConfig};
use strata_core::{
    payload, Candidate, Event, Message, Placement, RawEvent, SeedOptions, Seq, Session,
    SurfaceIntent,
};

/// A generated session; `compact_every` 0 means no synthetic compactions.
pub fn synth(
    events: u64,
    seed: u64,
    compact_every: u64,
    prune_rate: f64,
    content_bytes: usize,
) -> Session {
    generate(&SynthConfig {
        events,
        seed,
        content_bytes,
        compact_every,
        prune_rate,
        id: format!("synth-{seed}"),
    })
    .expect("the generator produces valid logs")
}

/// Opens the next turn (and its first step), as the agent loop does before a pre-step.
pub fn open_turn(session: &mut Session) -> u64 {
    let turn = session
        .events()
        .unwrap()
        .iter()
        .rev()
        .find_map(|event| {
            (event.event_type().as_str() == "turn/start").then(|| event.u64_field("turn"))
        })
        .flatten()
        .unwrap_or(0)
        + 1;
    let time = last_time(session);
    session
        .append(Candidate::log_only(payload::TurnStart { turn }), time)
        .expect("turn/start");
    turn
}

pub fn last_time(session: &Session) -> i64 {
    session
        .events()
        .unwrap()
        .last()
        .map_or(0, |event| event.time())
}

/// Replays the log through the store codec and a fresh restore.
pub fn replay(session: &Session) -> Session {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("session.v3.jsonl");
    strata_store::write_log(&path, session.header(), session.events().unwrap()).expect("write log");
    let stored = strata_store::read_log(&path).expect("read log");
    assert_eq!(stored.events.len(), session.len(), "every event read back");
    Session::restore(stored.header, stored.events, SeedOptions::default()).expect("restore")
}

/// The derived messages as JSON values.
pub fn messages(session: &Session) -> Vec<Value> {
    session
        .derive_messages()
        .iter()
        .map(|m| m.value().clone())
        .collect()
}

/// The messages the given nodes project to.
pub fn project(session: &Session, nodes: &[Seq]) -> Vec<Value> {
    nodes
        .iter()
        .filter_map(|seq| session.project(*seq))
        .map(|message: Message| message.value().clone())
        .collect()
}

/// Every tool result in `messages` follows an assistant message that called it, and every
/// call is answered later (pairs are never separated).
pub fn assert_pairs_together(messages: &[Value]) {
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        let content = message["content"].as_array().cloned().unwrap_or_default();
        match message["role"].as_str() {
            Some("assistant") => {
                for block in &content {
                    if block["type"] == "tool-call" {
                        open.push(block["id"].as_str().unwrap_or("").to_owned());
                    }
                }
            }
            Some("user") if message["source"]["kind"] == "tool" => {
                let call = message["source"]["callId"].as_str().unwrap_or("");
                let at = open.iter().position(|id| id == call);
                assert!(
                    at.is_some(),
                    "tool result for {call} without its call before it"
                );
                if let Some(at) = at {
                    open.remove(at);
                }
            }
            _ => {}
        }
    }
}

/// A summarizer that always returns `text`.
pub struct Fixed(pub &'static str);

impl Summarizer for Fixed {
    fn summarize(
        &self,
        _: &SummaryRequest,
    ) -> impl Future<Output = Result<Summary, SummarizeError>> + Send {
        ready(Ok(Summary {
            text: vec![self.0.to_owned()],
            provider: "test".into(),
            model: "fixed".into(),
            usage: Some(json!({"inputTokens": 10, "outputTokens": 5})),
            raw_output: None,
        }))
    }
}

/// A summarizer that fails like a provider.
pub struct Failing;

impl Summarizer for Failing {
    fn summarize(
        &self,
        _: &SummaryRequest,
    ) -> impl Future<Output = Result<Summary, SummarizeError>> + Send {
        ready(Err(SummarizeError::Failed {
            code: "SERVER_ERROR".into(),
            message: "upstream 503".into(),
        }))
    }
}

/// A summarizer that never answers.
pub struct Hanging;

impl Summarizer for Hanging {
    fn summarize(
        &self,
        _: &SummaryRequest,
    ) -> impl Future<Output = Result<Summary, SummarizeError>> + Send {
        pending()
    }
}

/// Appends an assistant message calling `calls` tools in parallel, and (for
/// `answered` of them) results, all in one open step.
pub fn append_step(
    session: &mut Session,
    turn: u64,
    step: u64,
    calls: &[&str],
    answered: usize,
    result_bytes: usize,
) {
    let time = last_time(session);
    let mut batch = vec![Candidate::log_only(payload::StepStart { turn, step })];
    let mut content = vec![payload::text_block(&format!("working on {turn}.{step}"))];
    for id in calls {
        content.push(payload::tool_call_block(
            id,
            "read_file",
            "{\"path\":\"src/main.rs\"}",
        ));
    }
    batch.push(Candidate::surface(
        payload::AssistantMessage {
            turn,
            step,
            message: payload::assistant_message(
                &format!("a-{turn}-{step}"),
                content,
                "deepseek",
                "deepseek-chat",
            ),
            stream: Vec::new(),
            usage: None,
            interrupted: false,
        },
        Placement::append(),
    ));
    session.append_batch(batch, time).expect("step opening");
    let mut call_seqs = Vec::new();
    for id in calls {
        let event = session
            .append(
                Candidate::log_only(payload::ToolCall {
                    turn,
                    step,
                    call_id: (*id).to_owned(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"src/main.rs\"}".into(),
                }),
                time,
            )
            .expect("tool/call");
        call_seqs.push(event.seq());
    }
    for (id, call_seq) in calls.iter().zip(call_seqs).take(answered) {
        let body = "r".repeat(result_bytes);
        session
            .append(
                Candidate::surface(
                    payload::ToolResult {
                        turn,
                        step,
                        message: payload::tool_result_message(
                            &format!("res-{id}"),
                            id,
                            vec![payload::text_block(&body)],
                            false,
                        ),
                        error: None,
                        meta: Some(json!({"bytes": result_bytes})),
                    },
                    SurfaceIntent::append_citing(vec![call_seq]),
                ),
                time,
            )
            .expect("tool/result");
    }
}

/// Appends a user prompt (a message a person typed).
pub fn append_prompt(session: &mut Session, id: &str, text: &str) {
    let time = last_time(session);
    session
        .append(
            Candidate::surface(
                payload::UserMessage {
                    message: payload::user_text_message(id, text),
                },
                SurfaceIntent::append(),
            ),
            time,
        )
        .expect("user/message");
}

/// A fresh session with a system prompt, a request header and context.
pub fn fresh_session(id: &str, window: u64) -> Session {
    fresh_session_with(id, window, strata_core::SeedOptions::default())
}

/// [`fresh_session`] created with `options` (e.g. surface-only, docs/rules.md).
pub fn fresh_session_with(id: &str, window: u64, options: strata_core::SeedOptions) -> Session {
    let header = strata_core::SessionHeader::fresh(id, 1_700_000_000_000).expect("header");
    let mut session = Session::create_with(header, options).expect("session");
    let time = 1_700_000_000_000;
    let batch = vec![
        Candidate::log_only(payload::TurnStart { turn: 1 }),
        Candidate::log_only(payload::StepStart { turn: 1, step: 1 }),
        Candidate::surface(
            payload::SystemMessage {
                turn: 1,
                step: 1,
                message: payload::system_message(
                    "sys",
                    "You are careful.",
                    "@deepseek-ai/dsh-system-prompt",
                ),
            },
            SurfaceIntent::append(),
        ),
        Candidate::log_only(payload::RequestHeader {
            header: json!({"config": {"provider": "deepseek", "model": "deepseek-chat"}}),
            reason: payload::HeaderReason::Initial,
            starts_series: false,
        }),
        Candidate::log_only(payload::RequestContext {
            provider: "deepseek".into(),
            model: "deepseek-chat".into(),
            context_window: Some(window),
            system_prompt_update: None,
        }),
        Candidate::log_only(payload::StepEnd { turn: 1, step: 1 }),
    ];
    session.append_batch(batch, time).expect("prologue");
    session
}

/// Ends step `step` of `turn`.
pub fn end_step(session: &mut Session, turn: u64, step: u64) {
    let time = last_time(session);
    session
        .append(Candidate::log_only(payload::StepEnd { turn, step }), time)
        .expect("step/end");
}

/// The events of `session` from `from` on, by type.
pub fn types_from(session: &Session, from: usize) -> Vec<String> {
    session.events().unwrap()[from..]
        .iter()
        .map(|event: &Arc<Event>| event.event_type().as_str().to_owned())
        .collect()
}

/// Raw copies of the first `n` events.
pub fn raw_prefix(session: &Session, n: usize) -> Vec<RawEvent> {
    session.events().unwrap()[..n]
        .iter()
        .map(|event| RawEvent::from_event(event))
        .collect()
}
