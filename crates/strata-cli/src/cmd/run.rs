//! `strata run PROMPT`: one agent turn, non-interactive; `--json` prints one JSON object per
//! appended event (including the crash closers a `--resume` adds). A closed stdout ends the
//! turn as cancelled and the command quietly (exit 0).

use std::sync::Arc;

use anyhow::bail;
use strata_agent::agent::{Observer, TurnOutcome};

use super::agent::{build, note, runtime, stop, Console, JsonLines, Stdout};
use super::Status;
use crate::cli::AgentArgs;

pub(crate) fn run(prompt: &str, args: &AgentArgs, json: bool) -> anyhow::Result<Status> {
    let stdout = Stdout::default();
    let observer: Arc<dyn Observer> = if json {
        Arc::new(JsonLines::new(stdout.clone()))
    } else {
        Arc::new(Console::new(stdout.clone()))
    };
    let mut agent = build(args, observer.clone())?;
    for event in agent.journal().writer().added_on_open() {
        observer.event(event);
    }
    let id = agent.journal().id().to_owned();
    if !json {
        note(format_args!("session {}", crate::output::visible(&id)));
    }
    let runtime = runtime()?;
    let turn = if stdout.closed().is_cancelled() {
        // stdout closed while the closers were printed: nobody reads the turn, so none starts.
        None
    } else {
        let cancel = stdout.turn_cancel();
        Some(runtime.block_on(async {
            let on_interrupt = cancel.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    on_interrupt.cancel();
                }
            });
            agent.run_turn(prompt, &cancel).await
        }))
    };
    let closed = agent.close();
    stop(runtime);
    let report = turn.transpose()?;
    closed?;
    // A closed stdout cancels the turn; it, not the cancellation, is how the command ended.
    stdout.result()?;
    let Some(report) = report else {
        return Ok(Status::Ok);
    };
    match report.outcome {
        TurnOutcome::Completed | TurnOutcome::MaxTokens => Ok(Status::Ok),
        TurnOutcome::Aborted => bail!("turn {} of session {id} was cancelled", report.turn),
        TurnOutcome::Failed(error) => bail!("turn {} of session {id} failed: {error}", report.turn),
        TurnOutcome::StepLimit => bail!("turn {} of session {id} hit the step limit", report.turn),
    }
}
