//! The trigger policy drivers (persistence-compaction §5.3, §5.7).

use strata_compact::deadline::block_on;
use strata_compact::IdGenerator;
use strata_compact::{
    AutoStatus, CompactionConfig, CompactionOutcome, Compactor, ExtractiveSummarizer, MemoryHost,
    Pruner, PrunerConfig, Retain, WriterHost,
};
use strata_store::{Compression, Store};

use crate::common::{
    append_prompt, append_step, end_step, fresh_session, messages, open_turn, raw_prefix, synth,
    Failing,
};

fn config(window: u64) -> CompactionConfig {
    CompactionConfig {
        context_window: Some(window),
        ..CompactionConfig::default()
    }
}

#[test]
fn below_the_threshold_nothing_is_written() {
    let mut session = synth(300, 1, 0, 0.0, 50);
    open_turn(&mut session);
    let len = session.len();
    let compactor = Compactor::new(config(10_000_000)).unwrap();
    let mut host = MemoryHost::new(session);
    let report = block_on(compactor.compact_if_needed(
        &mut host,
        &ExtractiveSummarizer,
        None,
        &mut IdGenerator::seeded(1),
    ))
    .unwrap();
    assert_eq!(report.status, AutoStatus::BelowThreshold);
    assert_eq!(host.session().len(), len);
}

#[test]
fn above_the_threshold_compaction_brings_the_request_below() {
    let mut session = synth(2_000, 2, 0, 0.0, 200);
    open_turn(&mut session);
    let compactor = Compactor::new(config(1)).unwrap();
    let tokens = compactor.measure(&session).total_tokens;
    // A window the session overflows by 50 %.
    let compactor = Compactor::new(config(tokens * 100 / 150)).unwrap();
    let mut host = MemoryHost::new(session);
    let report = block_on(compactor.compact_if_needed(
        &mut host,
        &ExtractiveSummarizer,
        None,
        &mut IdGenerator::seeded(2),
    ))
    .unwrap();
    assert_eq!(report.status, AutoStatus::Compacted);
    assert_eq!(report.attempts.len(), 1);
    assert!(report.after.total_tokens < report.budget.threshold_tokens);
    assert!(report.before.total_tokens >= report.budget.threshold_tokens);
    // The kept tail is at least the retain budget.
    let kept: u64 = report.after.surface_tokens;
    assert!(kept >= report.budget.retain_tokens);
}

#[test]
fn pruning_alone_can_relieve_pressure() {
    let mut session = fresh_session("relief", 1);
    append_prompt(&mut session, "u-1", "dump the logs");
    append_step(&mut session, 1, 2, &["dump"], 1, 60_000);
    end_step(&mut session, 1, 2);
    let compactor = Compactor::new(config(1)).unwrap();
    let tokens = compactor.measure(&session).total_tokens;
    let compactor = Compactor::new(CompactionConfig {
        context_window: Some(tokens),
        retain: Retain::Ratio(0.1),
        ..CompactionConfig::default()
    })
    .unwrap();
    let pruner = Pruner::new(PrunerConfig::default()).unwrap();
    let mut host = MemoryHost::new(session);
    let report = block_on(compactor.compact_if_needed(
        &mut host,
        &Failing,
        Some(&pruner),
        &mut IdGenerator::seeded(3),
    ))
    .unwrap();
    assert_eq!(report.status, AutoStatus::Pruned);
    assert_eq!(report.pruned.len(), 1);
    assert!(report.attempts.is_empty(), "no model call");
}

#[test]
fn a_failed_attempt_ends_the_pre_step_without_retrying() {
    let mut session = synth(1_000, 4, 0, 0.0, 200);
    open_turn(&mut session);
    let tokens = Compactor::new(config(1))
        .unwrap()
        .measure(&session)
        .total_tokens;
    let compactor = Compactor::new(config(tokens)).unwrap();
    let mut host = MemoryHost::new(session);
    let report = block_on(compactor.compact_if_needed(
        &mut host,
        &Failing,
        None,
        &mut IdGenerator::seeded(4),
    ))
    .unwrap();
    assert_eq!(report.status, AutoStatus::Failed);
    assert_eq!(report.attempts.len(), 1);
    assert!(matches!(
        report.attempts[0],
        CompactionOutcome::Failed { .. }
    ));
}

// persistence §10 item 24: retry only when the surface really changed.
#[test]
fn overflow_recovery_says_retry_only_after_a_replacement() {
    let mut session = synth(600, 6, 0, 0.0, 150);
    open_turn(&mut session);
    let compactor = Compactor::new(CompactionConfig::default()).unwrap();
    let ids = IdGenerator::seeded(6).next_ids();
    let mut host = MemoryHost::new(session);
    let failed_ids = IdGenerator::seeded(7).next_ids();
    let report =
        block_on(compactor.recover_overflow(&mut host, &Failing, None, &failed_ids)).unwrap();
    assert!(!report.retry, "a recorded failure changes nothing");
    assert!(matches!(
        report.attempt,
        Some(CompactionOutcome::Failed { .. })
    ));
    let report =
        block_on(compactor.recover_overflow(&mut host, &ExtractiveSummarizer, None, &ids)).unwrap();
    assert!(report.retry);
    // Now only the checkpoint and the newest unit remain: re-summarizing the checkpoint
    // alone could never shrink it, so there is nothing to do and no retry.
    let again = IdGenerator::seeded(8).next_ids();
    let report =
        block_on(compactor.recover_overflow(&mut host, &ExtractiveSummarizer, None, &again))
            .unwrap();
    assert!(!report.retry);
    assert_eq!(report.attempt, None);
}

#[test]
fn a_manual_compaction_through_a_store_writer_is_durable() {
    let session = synth(700, 12, 3, 0.1, 120);
    let root = tempfile::tempdir().unwrap();
    let store = Store::jsonl(root.path(), Compression::Zstd);
    store
        .import(
            session.header().clone(),
            raw_prefix(&session, session.len()),
        )
        .unwrap();
    let writer = store.open_write(session.id()).unwrap();
    let compactor = Compactor::new(CompactionConfig::default()).unwrap();
    let mut host = WriterHost::with_clock(&writer, || 1_800_000_000_000);
    let ids = IdGenerator::seeded(8).next_ids();
    let outcome = block_on(compactor.compact_now(&mut host, &ExtractiveSummarizer, &ids))
        .unwrap()
        .unwrap();
    assert!(outcome.is_compacted());
    let (nodes, derived) = writer.with_session(|s| (s.surface().nodes().to_vec(), messages(s)));
    drop(host);
    writer.close().unwrap();
    let reloaded = store.load(session.id()).unwrap();
    assert_eq!(reloaded.surface().nodes(), nodes.as_slice());
    assert_eq!(messages(&reloaded), derived);
}
