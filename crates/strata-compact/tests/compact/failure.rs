//! Failure is non-destructive (persistence-compaction §5.8; peers (c) items 10–11).

use std::time::Duration;

use serde_json::json;
use strata_compact::deadline::block_on;
use strata_compact::IdGenerator;
use strata_compact::{
    CompactError, CompactionConfig, CompactionOutcome, Compactor, ExtractiveSummarizer, MemoryHost,
    Summarizer, Trigger,
};
use strata_core::{payload, Candidate, Session, SurfaceIntent};

use crate::common::{last_time, messages, open_turn, synth, Failing, Fixed, Hanging};

/// Runs one overflow attempt through a memory host and checks that nothing but the
/// bracket was written; returns the recorded error.
fn failed_attempt<S: Summarizer>(config: CompactionConfig, summarizer: &S) -> String {
    let mut session = synth(400, 11, 0, 0.0, 120);
    let turn = open_turn(&mut session);
    let nodes = session.surface().nodes().to_vec();
    let before = messages(&session);
    let generation = session.surface().replace_generation();
    let first = session.len();
    let compactor = Compactor::new(config).unwrap();
    let mut host = MemoryHost::new(session);
    let ids = IdGenerator::seeded(5).next_ids();
    let outcome = block_on(compactor.attempt(&mut host, Trigger::Overflow, summarizer, &ids))
        .unwrap()
        .expect("a region");
    let session = host.into_session();
    let CompactionOutcome::Failed { error } = outcome else {
        panic!("expected a failed attempt, got {outcome:?}");
    };
    // The attempt is on record: start and end with the same id and owner, end with the error.
    let written = &session.events().unwrap()[first..];
    assert_eq!(written.len(), 2);
    assert_eq!(written[0].event_type().as_str(), "compaction/start");
    assert_eq!(written[1].event_type().as_str(), "compaction/end");
    assert_eq!(
        written[0].data()["compactionId"],
        ids.compaction_id.as_str()
    );
    assert_eq!(
        written[1].data()["compactionId"],
        ids.compaction_id.as_str()
    );
    assert_eq!(written[0].data()["turn"], json!(turn));
    assert_eq!(written[1].data()["turn"], json!(turn));
    assert_eq!(written[1].data()["error"], error.as_str());
    // The surface is untouched.
    assert_eq!(session.surface().nodes(), nodes.as_slice());
    assert_eq!(session.surface().replace_generation(), generation);
    assert_eq!(messages(&session), before);
    error
}

// Issue 5: "A summarizer that fails or times out leaves the surface unchanged and records
// the failure."
#[test]
fn a_failing_summarizer_records_the_failure() {
    let error = failed_attempt(CompactionConfig::default(), &Failing);
    assert_eq!(error, "summarizer failed (SERVER_ERROR): upstream 503");
}

#[test]
fn a_summarizer_that_times_out_records_the_failure() {
    let config = CompactionConfig {
        summary_timeout: Some(Duration::from_millis(50)),
        ..CompactionConfig::default()
    };
    let error = failed_attempt(config, &Hanging);
    assert_eq!(error, "summarizer timed out after 50 ms");
}

// §5.5 shrink rule: a checkpoint must be smaller than what it replaces.
#[test]
fn a_summary_that_does_not_shrink_is_refused() {
    let huge: &'static str = Box::leak("x".repeat(400_000).into_boxed_str());
    let error = failed_attempt(CompactionConfig::default(), &Fixed(huge));
    assert!(
        error.starts_with("summary is not smaller than the shadowed content ("),
        "{error}"
    );
}

#[test]
fn a_blank_summary_is_refused() {
    assert_eq!(
        failed_attempt(CompactionConfig::default(), &Fixed(" \n ")),
        "summary is empty"
    );
}

#[test]
fn an_open_bracket_makes_compaction_busy_until_a_newer_end_seed() {
    let mut session = synth(200, 3, 0, 0.0, 80);
    let time = last_time(&session);
    let start = session
        .append(
            Candidate::log_only(payload::PluginEvent {
                event_type: "compaction/start".into(),
                data: json!({"compactionId": "other", "turn": null}),
            }),
            time,
        )
        .unwrap();
    let compactor = Compactor::new(CompactionConfig::default()).unwrap();
    let busy = compactor.plan(&session, Trigger::Manual).unwrap_err();
    assert!(matches!(busy, CompactError::Busy { start_seq } if start_seq == start.seq().get()));
    assert_eq!(
        busy.to_string(),
        format!(
            "compaction is busy: compaction/start at seq {} has no compaction/end",
            start.seq()
        )
    );
    // A newer session/end-seed makes the orphan stale (persistence §10 item 21).
    session
        .append(
            Candidate::log_only(payload::EndSeed { inherited: false }),
            time,
        )
        .unwrap();
    assert!(compactor.plan(&session, Trigger::Manual).unwrap().is_some());
}

#[test]
fn owners_are_checked_before_anything_is_written() {
    let mut session = synth(200, 4, 0, 0.0, 80);
    let compactor = Compactor::new(CompactionConfig::default()).unwrap();
    // Automatic triggers need an open turn; manual needs none.
    assert!(matches!(
        compactor.plan(&session, Trigger::Overflow),
        Err(CompactError::NoOpenTurn)
    ));
    let turn = open_turn(&mut session);
    assert!(matches!(
        compactor.plan(&session, Trigger::Manual),
        Err(CompactError::TurnOpen { turn: ref t }) if *t == turn.to_string()
    ));
    // A turn that ends while the summarizer runs invalidates the attempt: nothing written.
    let plan = compactor
        .plan(&session, Trigger::Overflow)
        .unwrap()
        .unwrap();
    let time = last_time(&session);
    session
        .append(
            Candidate::log_only(payload::TurnEnd {
                turn,
                reason: json!({"kind": "completed"}),
            }),
            time,
        )
        .unwrap();
    let len = session.len();
    let result =
        block_on(compactor.summarize(&plan.summary_request(&session), &ExtractiveSummarizer));
    let ids = IdGenerator::seeded(1).next_ids();
    assert!(compactor.finish(&plan, &session, result, &ids).is_err());
    assert_eq!(session.len(), len);
}

fn append_user(session: &mut Session, id: &str) {
    let time = last_time(session);
    session
        .append(
            Candidate::surface(
                payload::UserMessage {
                    message: payload::user_text_message(id, "meanwhile"),
                },
                SurfaceIntent::append(),
            ),
            time,
        )
        .unwrap();
}

// §5.6 stability: automatic attempts need the whole surface unchanged; manual ones only
// their span.
#[test]
fn a_surface_that_moved_during_summarization_is_recorded_not_replaced() {
    let mut session = synth(300, 8, 0, 0.0, 80);
    open_turn(&mut session);
    let compactor = Compactor::new(CompactionConfig::default()).unwrap();
    let plan = compactor
        .plan(&session, Trigger::Overflow)
        .unwrap()
        .unwrap();
    let result =
        block_on(compactor.summarize(&plan.summary_request(&session), &ExtractiveSummarizer));
    append_user(&mut session, "late");
    let batch = compactor
        .finish(&plan, &session, result, &IdGenerator::seeded(2).next_ids())
        .unwrap();
    assert_eq!(
        batch.outcome,
        CompactionOutcome::Failed {
            error: "surface changed during summarization".into()
        }
    );

    let mut session = synth(300, 8, 0, 0.0, 80);
    let plan = compactor.plan(&session, Trigger::Manual).unwrap().unwrap();
    let result =
        block_on(compactor.summarize(&plan.summary_request(&session), &ExtractiveSummarizer));
    append_user(&mut session, "late");
    let batch = compactor
        .finish(&plan, &session, result, &IdGenerator::seeded(2).next_ids())
        .unwrap();
    assert!(batch.outcome.is_compacted());
    let time = last_time(&session);
    session.append_batch(batch.candidates, time).unwrap();
    // The late message follows the checkpoint.
    assert_eq!(messages(&session).last().unwrap()["id"], "late");
}
