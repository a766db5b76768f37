//! Running a step's tool calls (persistence-compaction §7.1, §7.3, §4.1 barrier 3).
//!
//! Every call is recorded as `tool/call` and made durable before its body runs, so a crash
//! during the body leaves evidence that repair turns into `TOOL_OUTCOME_UNKNOWN`. In parallel
//! mode the answer and all its calls are one durable batch and the bodies run concurrently;
//! results are committed strictly in the model's order, each as soon as it and every earlier
//! result are done. In sequential mode each call is recorded just before its own body.
//!
//! On cancellation, running bodies see the token and return `ABORTED`; a call whose body had not
//! started gets `ABORTED_BEFORE_DISPATCH` (with a synthetic `tool/call` first if it had not been
//! recorded), so the surface never holds an unanswered call.

use futures_util::stream::FuturesOrdered;
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use strata_core::payload::{text_block, tool_result_message, ToolCall, ToolResult};
use strata_core::{Candidate, Seq, SurfaceIntent};
use tokio_util::sync::CancellationToken;

use super::{new_id, AgentError, CallBlock, Journal};
use crate::tools::{ToolError, ToolInput, ToolOutput, ToolSet, Workspace};

/// Records and runs `calls`, committing `answer` (the assistant message) first.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_tools(
    journal: &Journal,
    tools: &ToolSet,
    workspace: &Workspace,
    parallel: bool,
    turn: u64,
    step: u64,
    answer: Candidate,
    calls: &[CallBlock],
    cancel: &CancellationToken,
) -> Result<(), AgentError> {
    if parallel {
        let mut batch = vec![answer];
        batch.extend(calls.iter().map(|call| call_candidate(turn, step, call)));
        let events = journal.append(batch).await?;
        let call_seqs: Vec<Seq> = events.iter().skip(1).map(|event| event.seq()).collect();
        journal.checkpoint()?;
        // All bodies start together, so the dispatch barrier is checked once for all of them.
        let dispatch = !cancel.is_cancelled();
        let mut running: FuturesOrdered<_> = calls
            .iter()
            .map(|call| async move {
                if dispatch {
                    execute(tools, workspace, call, cancel).await
                } else {
                    Err(ToolError::AbortedBeforeDispatch)
                }
            })
            .collect();
        let mut call_idx = 0;
        while let Some(outcome) = running.next().await {
            let (Some(call), Some(call_seq)) = (calls.get(call_idx), call_seqs.get(call_idx))
            else {
                break;
            };
            journal
                .append(vec![result_candidate(turn, step, call, *call_seq, outcome)])
                .await?;
            call_idx += 1;
        }
        return Ok(());
    }
    journal.append(vec![answer]).await?;
    for call in calls {
        if cancel.is_cancelled() {
            let recorded = journal
                .append(vec![call_candidate(turn, step, call)])
                .await?;
            let call_seq = recorded.first().map(|event| event.seq());
            if let Some(call_seq) = call_seq {
                let outcome = Err(ToolError::AbortedBeforeDispatch);
                journal
                    .append(vec![result_candidate(turn, step, call, call_seq, outcome)])
                    .await?;
            }
            continue;
        }
        let recorded = journal
            .append(vec![call_candidate(turn, step, call)])
            .await?;
        journal.checkpoint()?;
        let Some(call_seq) = recorded.first().map(|event| event.seq()) else {
            continue;
        };
        let outcome = execute(tools, workspace, call, cancel).await;
        journal
            .append(vec![result_candidate(turn, step, call, call_seq, outcome)])
            .await?;
    }
    Ok(())
}

/// Answers calls the model emitted before its output was cut by the token limit: a `tool/call`
/// and an error `tool/result` each, without running anything. The caller appends them in one
/// batch right after the assistant message at `message_seq`, so call `k` gets seq
/// `message_seq + 1 + 2k`, which its result cites (the loop is the session's only writer).
pub(crate) fn truncated_pairs(
    turn: u64,
    step: u64,
    calls: &[CallBlock],
    message_seq: Seq,
) -> Vec<Candidate> {
    let mut out = Vec::with_capacity(calls.len() * 2);
    let mut call_seq = message_seq.next();
    for call in calls {
        out.push(call_candidate(turn, step, call));
        out.push(result_candidate(
            turn,
            step,
            call,
            call_seq,
            Err(ToolError::Truncated),
        ));
        call_seq = call_seq.next().next();
    }
    out
}

fn call_candidate(turn: u64, step: u64, call: &CallBlock) -> Candidate {
    Candidate::log_only(ToolCall {
        turn,
        step,
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
    })
}

/// Runs one call's body; unknown tools and unparsable arguments fail without running.
async fn execute(
    tools: &ToolSet,
    workspace: &Workspace,
    call: &CallBlock,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let tool = tools
        .get(&call.name)
        .ok_or_else(|| ToolError::UnknownTool {
            name: call.name.clone(),
            available: tools.names(),
        })?;
    let arguments = parse_arguments(&call.name, &call.arguments)?;
    tool.run(ToolInput {
        arguments: &arguments,
        workspace,
        cancel,
    })
    .await
}

/// The model's argument text as a JSON object (blank text is `{}`), read as `JSON.parse`
/// reads it and handed to the tool as text (a lone surrogate as U+FFFD, as Node writes one to
/// a file or a path).
fn parse_arguments(tool: &str, text: &str) -> Result<Value, ToolError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match strata_core::json::parse_held(text) {
        Ok(value @ Value::Object(_)) => Ok(strata_core::json::text_value_from_held(value)),
        Ok(_) => Err(ToolError::invalid(tool, "arguments are not a JSON object")),
        Err(error) => Err(ToolError::invalid(
            tool,
            format!("arguments are not valid JSON: {error}"),
        )),
    }
}

fn result_payload(
    turn: u64,
    step: u64,
    call: &CallBlock,
    outcome: Result<ToolOutput, ToolError>,
) -> ToolResult {
    // A tool's output is text (a file, a command's output), held like everything read from
    // JSON; an error's message may quote the model's strings, which are held already.
    let (text, error, meta) = match outcome {
        Ok(output) => (
            strata_core::json::held_from_text(&output.text).into_owned(),
            None,
            output.meta.map(strata_core::json::held_value_from_text),
        ),
        Err(error) => (
            format!("Error: {error}"),
            Some(json!({"name": error.name(), "code": error.code()})),
            None,
        ),
    };
    ToolResult {
        turn,
        step,
        message: tool_result_message(
            &new_id(),
            &call.id,
            vec![text_block(&text)],
            error.is_some(),
        ),
        error,
        meta,
    }
}

fn result_candidate(
    turn: u64,
    step: u64,
    call: &CallBlock,
    call_seq: Seq,
    outcome: Result<ToolOutput, ToolError>,
) -> Candidate {
    Candidate::surface(
        result_payload(turn, step, call, outcome),
        SurfaceIntent::append_citing(vec![call_seq]),
    )
}
