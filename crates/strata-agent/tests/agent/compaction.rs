//! Auto-compaction through the loop: under pressure at the pre-step point, the loop's model
//! summarizes the head of the conversation (as a prefix extension of the last request), the
//! checkpoint replaces it, and the next request starts a `series`; a large tool result is
//! pruned there first, inside the open turn, and a failed summary is recorded.

use std::sync::Arc;

use strata_agent::agent::{Agent, AutoCompaction, ReasoningReplay, TurnOutcome};
use strata_agent::llm::{ChatMessage, ScriptedModel};
use strata_agent::tools::ToolSet;
use strata_compact::summarizer::instruction_text;
use strata_compact::{CompactionConfig, Compactor, Pruner, PrunerConfig};
use strata_core::SessionHeader;
use tokio_util::sync::CancellationToken;

use crate::support::{config, field, of_type, reconstructed_requests, types, Fixture, Watch};

#[tokio::test]
async fn pressure_compaction_runs_at_the_pre_step_point_with_the_llm_summarizer() {
    let fixture = Fixture::new();
    let question = "Explain the build. ".repeat(130);
    let answer = "The build has many parts. ".repeat(45);
    let script = serde_json::json!({"responses": [
        {"events": [{"type": "text_delta", "text": answer}, {"type": "finish", "reason": "stop"}]},
        {"events": [
            {"type": "text_delta", "text": "## Primary Request and Intent\\n- Explain the build.\\n## Current Work\\n- Explained it."},
            {"type": "finish", "reason": "stop"}
        ]},
        {"events": [{"type": "text_delta", "text": "ok"}, {"type": "finish", "reason": "stop"}]}
    ]});
    let model = Arc::new(ScriptedModel::from_json_str(&script.to_string()).unwrap());
    let mut config = config("deepseek-chat");
    config.call.context_window = Some(1000);
    let hook = AutoCompaction::new(
        Compactor::new(CompactionConfig::default()).unwrap(),
        None,
        config.reasoning,
        config.retry,
    );
    let writer = fixture
        .store
        .create(SessionHeader::fresh("s", 1).unwrap())
        .unwrap();
    let watch = Arc::new(Watch::default());
    let mut agent = Agent::new(
        writer,
        model.clone(),
        ToolSet::new(),
        fixture.workspace.clone(),
        config,
    )
    .with_hook(Arc::new(hook))
    .with_observer(watch.clone());
    let cancel = CancellationToken::new();
    let first = agent.run_turn(&question, &cancel).await.unwrap();
    assert_eq!(first.outcome, TurnOutcome::Completed);
    let second = agent.run_turn("And the tests?", &cancel).await.unwrap();
    assert_eq!(second.outcome, TurnOutcome::Completed);
    agent.close().unwrap();
    assert!(
        watch.warnings.lock().unwrap().is_empty(),
        "{:?}",
        watch.warnings.lock().unwrap()
    );

    let session = fixture.load("s");
    let turn2 = types(&session)
        .iter()
        .position(|kind| kind == "turn/end")
        .map(|idx| idx + 1)
        .unwrap();
    assert_eq!(
        types(&session)[turn2..],
        [
            "turn/start",
            "compaction/start",
            "compaction/summary",
            "user/message",
            "compaction/end",
            "step/start",
            "user/message",
            "request/header",
            "assistant/message",
            "step/end",
            "turn/end",
            "session/end-seed",
        ]
    );
    let checkpoint = &session.events().unwrap()[turn2 + 3];
    let shadowed: Vec<u64> = field(&session.events().unwrap()[turn2 + 2], &["shadowedSeqs"])
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|seq| seq.as_u64())
        .collect();
    assert_eq!(shadowed, [3], "the first user message, not the system node");
    assert_eq!(
        field(&session.events().unwrap()[turn2 + 7], &["reason"]),
        "series"
    );
    assert_eq!(
        of_type(&session, "compaction/end")[0].data().get("error"),
        None
    );

    // The summary request extends the last conversation request and ends with the directive.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let summary = &requests[1];
    assert_eq!(
        summary.messages[..requests[0].messages.len()],
        requests[0].messages[..]
    );
    assert_eq!(
        summary.messages.last(),
        Some(&ChatMessage::user(instruction_text()))
    );
    assert_eq!(summary.max_tokens, Some(8192));
    // The conversation requests are still what the log rebuilds; the third starts with the
    // checkpoint in place of the question.
    let rebuilt = reconstructed_requests(&fixture, "s", ReasoningReplay::default());
    assert_eq!(rebuilt, [requests[0].clone(), requests[2].clone()]);
    let ChatMessage::User { content } = &requests[2].messages[0] else {
        panic!("{:?}", requests[2].messages[0]);
    };
    assert!(content.contains("<compacted-summary>"), "{content}");
    assert!(content.contains("Explained it."), "{content}");
    assert_eq!(checkpoint.sources().map(|s| s.len()), Some(3));
    fixture.assert_logs_accepted();
}

/// The pre-step between two steps of a turn prunes a large tool result, and then, still over
/// the threshold, attempts a compaction whose summary request fails: the pruned pair lands
/// inside the open turn, the failed attempt is `compaction/start` and `compaction/end {error}`
/// with no summary, and the turn goes on. Upstream's released V3 layer accepts the log.
#[tokio::test]
async fn the_pre_step_prunes_inside_the_turn_and_records_a_failed_summary() {
    let fixture = Fixture::new();
    let line = "2024-05-14T02:00:00.000Z INFO worker=1 job=7500 status=ok duration_ms=20\n";
    std::fs::write(fixture.work_dir.path().join("big.log"), line.repeat(600)).unwrap();
    let script = serde_json::json!({"responses": [
        {"events": [
            {"type": "tool_call_delta", "index": 0, "id": "call_big", "name": "read_file",
             "arguments_delta": "{\"path\":\"big.log\"}"},
            {"type": "finish", "reason": "tool_calls"}
        ]},
        {"events": [], "error": {"code": "BAD_REQUEST", "message": "summary refused"}},
        {"events": [{"type": "text_delta", "text": "done"}, {"type": "finish", "reason": "stop"}]}
    ]});
    let model = Arc::new(ScriptedModel::from_json_str(&script.to_string()).unwrap());
    let mut config = config("deepseek-chat");
    config.call.context_window = Some(1000);
    let hook = AutoCompaction::new(
        Compactor::new(CompactionConfig::default()).unwrap(),
        Some(Pruner::new(PrunerConfig::default()).unwrap()),
        config.reasoning,
        config.retry,
    );
    let writer = fixture
        .store
        .create(SessionHeader::fresh("s", 1).unwrap())
        .unwrap();
    let watch = Arc::new(Watch::default());
    let mut agent = Agent::new(
        writer,
        model,
        fixture.tools(),
        fixture.workspace.clone(),
        config,
    )
    .with_hook(Arc::new(hook))
    .with_observer(watch.clone());
    let report = agent
        .run_turn("Why did it restart?", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.outcome, TurnOutcome::Completed);
    agent.close().unwrap();
    let warnings = watch.warnings.lock().unwrap().clone();
    assert!(
        warnings
            .iter()
            .any(|warning| warning.contains("compaction attempt failed")),
        "{warnings:?}"
    );

    let session = fixture.load("s");
    let kinds = types(&session);
    let prune = kinds
        .iter()
        .position(|kind| kind == "compaction/prune")
        .unwrap();
    assert_eq!(
        kinds[prune - 1..prune + 5],
        [
            "step/end",
            "compaction/prune",
            "tool/result",
            "compaction/start",
            "compaction/end",
            "step/start"
        ]
    );
    assert!(field(&session.events().unwrap()[prune + 3], &["error"]).is_string());
    assert!(!kinds.contains(&"compaction/summary".to_owned()));
    fixture.assert_logs_accepted();
}
