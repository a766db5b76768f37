//! The token meter (persistence-compaction §5.2).

use serde_json::json;
use strata_compact::deadline::block_on;
use strata_compact::estimate::message_tokens;
use strata_compact::IdGenerator;
use strata_compact::{
    ByteEstimator, CompactionConfig, Compactor, ExtractiveSummarizer, TokenMeter, Trigger,
};
use strata_core::{payload, Candidate, Placement, Session, SurfaceIntent};

use crate::common::{fresh_session, last_time, synth};

/// One answer in a step of its own (docs/rules.md R5, R8: a settlement lies in an open step).
fn answer(session: &mut Session, id: &str, text: &str, usage: Option<serde_json::Value>) {
    let time = last_time(session);
    let step = session
        .latest(&strata_core::EventType::StepStart)
        .and_then(|event| event.u64_field("step"))
        .unwrap_or(0)
        + 1;
    session
        .append(
            Candidate::log_only(payload::StepStart { turn: 1, step }),
            time,
        )
        .unwrap();
    session
        .append(
            Candidate::surface(
                payload::AssistantMessage {
                    turn: 1,
                    step,
                    message: payload::assistant_message(
                        id,
                        vec![payload::text_block(text)],
                        "deepseek",
                        "deepseek-chat",
                    ),
                    stream: Vec::new(),
                    usage,
                    interrupted: false,
                },
                Placement::append(),
            ),
            time,
        )
        .unwrap();
    session
        .append(
            Candidate::log_only(payload::StepEnd { turn: 1, step }),
            time,
        )
        .unwrap();
}

fn prompt(session: &mut Session, id: &str, text: &str) -> u64 {
    let message = payload::user_text_message(id, text);
    let price = message_tokens(&message, &ByteEstimator);
    let time = last_time(session);
    session
        .append(
            Candidate::surface(payload::UserMessage { message }, SurfaceIntent::append()),
            time,
        )
        .unwrap();
    price
}

#[test]
fn the_total_projects_the_provider_sample_by_what_changed_since() {
    let mut session = fresh_session("anchor", 100_000);
    prompt(&mut session, "u1", "hello there");
    let mut meter = TokenMeter::new();
    let estimate_only = meter.measure(&session);
    assert_eq!(estimate_only.anchor, None);
    assert_eq!(estimate_only.total_tokens, estimate_only.estimated_tokens);

    // The provider says the request plus answer cost 5,000 tokens (more than we estimate).
    answer(
        &mut session,
        "a1",
        "hi",
        Some(json!({"inputTokens": 4_000, "cacheReadTokens": 900, "outputTokens": 100})),
    );
    let at_anchor = meter.measure(&session);
    assert_eq!(at_anchor.anchor.as_ref().unwrap().provider_tokens, 5_000);
    assert_eq!(at_anchor.total_tokens, 5_000);
    // A new prompt adds its estimate on top of the provider's count.
    let added = prompt(&mut session, "u2", "and now a longer follow-up question");
    let after = meter.measure(&session);
    assert_eq!(after.total_tokens, 5_000 + added);

    // A provider count below our own estimate is not trusted.
    answer(
        &mut session,
        "a2",
        "ok",
        Some(json!({"inputTokens": 1, "outputTokens": 1})),
    );
    let low = meter.measure(&session);
    assert_eq!(low.total_tokens, low.estimated_tokens);
}

#[test]
fn a_changed_header_falls_back_to_the_estimate() {
    let mut session = fresh_session("header", 100_000);
    prompt(&mut session, "u1", "hello");
    answer(
        &mut session,
        "a1",
        "hi",
        Some(json!({"inputTokens": 9_000, "outputTokens": 10})),
    );
    let mut meter = TokenMeter::new();
    assert_eq!(meter.measure(&session).total_tokens, 9_010);
    let time = last_time(&session);
    session
        .append(
            Candidate::log_only(payload::RequestHeader {
                header: json!({"config": {"provider": "deepseek", "model": "deepseek-chat"},
                    "tools": [{"name": "grep", "description": "search", "parameters": {"type": "object"}}]}),
                reason: payload::HeaderReason::Change,
                starts_series: false,
            }),
            time,
        )
        .unwrap();
    let changed = meter.measure(&session);
    assert!(changed.header_tokens > 0);
    assert_eq!(changed.anchor, None);
    assert_eq!(changed.total_tokens, changed.estimated_tokens);
}

// persistence §10 item 22: the meter must move after a compaction although the summary
// call reports no usage to the session.
#[test]
fn compaction_lowers_the_measured_total() {
    let mut session = synth(800, 2, 0, 0.0, 200);
    crate::common::open_turn(&mut session);
    let compactor = Compactor::new(CompactionConfig::default()).unwrap();
    let before = compactor.measure(&session);
    let batch = block_on(compactor.compact(
        &session,
        Trigger::Overflow,
        &ExtractiveSummarizer,
        &IdGenerator::seeded(4).next_ids(),
    ))
    .unwrap()
    .unwrap();
    let strata_compact::CompactionOutcome::Compacted {
        shadowed_tokens,
        checkpoint_tokens,
        ..
    } = batch.outcome
    else {
        panic!("expected a compaction");
    };
    let time = last_time(&session);
    session.append_batch(batch.candidates, time).unwrap();
    let after = compactor.measure(&session);
    assert_eq!(
        after.surface_tokens,
        before.surface_tokens - shadowed_tokens + checkpoint_tokens
    );
    assert_eq!(
        after.total_tokens,
        before.total_tokens - shadowed_tokens + checkpoint_tokens
    );
}

#[test]
fn incremental_measurement_equals_a_fresh_replay() {
    let session = synth(1_500, 9, 4, 0.3, 120);
    let mut incremental = TokenMeter::new();
    let raws: Vec<_> = session
        .events()
        .unwrap()
        .iter()
        .map(|e| strata_core::RawEvent::from_event(e))
        .collect();
    let header = session.header().clone();
    for cut in [10, 100, 400, 401, 900, raws.len()] {
        let prefix =
            Session::restore(header.clone(), raws[..cut].to_vec(), Default::default()).unwrap();
        // A different session object each time: the meter notices and replays.
        let measured = incremental.measure(&prefix);
        let fresh = TokenMeter::new().measure(&prefix);
        assert_eq!(measured, fresh, "cut {cut}");
        assert_eq!(measured.n_nodes, prefix.surface().len());
    }
}

#[test]
fn a_rolled_back_batch_is_noticed() {
    let mut session = fresh_session("rollback", 100_000);
    prompt(&mut session, "u1", "first");
    let mut meter = TokenMeter::new();
    let mark = session.begin_batch();
    prompt(
        &mut session,
        "u2",
        "a long message that will be rolled back soon enough",
    );
    let with_u2 = meter.measure(&session);
    session.rollback(mark);
    prompt(&mut session, "u3", "x");
    let after = meter.measure(&session);
    assert_eq!(after, TokenMeter::new().measure(&session));
    assert!(after.surface_tokens < with_u2.surface_tokens);
}
