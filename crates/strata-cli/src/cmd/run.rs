//! `strata run PROMPT`: one agent turn, non-interactive; `--json` prints one JSON object per
//! appended event (including the crash closers a `--resume` adds).

use std::sync::Arc;

use anyhow::bail;
use strata_agent::agent::{Observer, TurnOutcome};
use tokio_util::sync::CancellationToken;

use super::agent::{build, runtime, Console, JsonLines};
use super::Status;
use crate::cli::AgentArgs;

pub(crate) fn run(prompt: &str, args: &AgentArgs, json: bool) -> anyhow::Result<Status> {
    let observer: Arc<dyn Observer> = if json {
        Arc::new(JsonLines)
    } else {
        Arc::new(Console::default())
    };
    let mut agent = build(args, observer.clone())?;
    for event in agent.journal().writer().added_on_open() {
        observer.event(event);
    }
    let id = agent.journal().id().to_owned();
    if !json {
        eprintln!("session {id}");
    }
    let turn = runtime()?.block_on(async {
        let cancel = CancellationToken::new();
        let on_interrupt = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_interrupt.cancel();
            }
        });
        agent.run_turn(prompt, &cancel).await
    });
    let closed = agent.close();
    let report = turn?;
    closed?;
    match report.outcome {
        TurnOutcome::Completed | TurnOutcome::MaxTokens => Ok(Status::Ok),
        TurnOutcome::Aborted => bail!("turn {} of session {id} was cancelled", report.turn),
        TurnOutcome::Failed(error) => bail!("turn {} of session {id} failed: {error}", report.turn),
        TurnOutcome::StepLimit => bail!("turn {} of session {id} hit the step limit", report.turn),
    }
}
