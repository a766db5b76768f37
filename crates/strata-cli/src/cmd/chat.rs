//! `strata chat`: an interactive session. Each input line is a turn; Ctrl-C cancels the running
//! turn (its delivered prefix is kept as an interrupted message) and ends the chat at the prompt.
//! A closed stdout cancels the running turn and ends the chat quietly (exit 0).

use std::io::Write;
use std::sync::Arc;

use strata_agent::agent::{Agent, Observer, TurnOutcome};
use tokio::io::AsyncBufReadExt;

use super::agent::{build, note, runtime, stop, Console, Stdout};
use super::Status;
use crate::cli::AgentArgs;

pub(crate) fn run(args: &AgentArgs) -> anyhow::Result<Status> {
    let stdout = Stdout::default();
    let console: Arc<dyn Observer> = Arc::new(Console::new(stdout.clone()));
    let mut agent = build(args, console)?;
    let closers = agent.journal().writer().added_on_open().len();
    note(format_args!(
        "session {} (Ctrl-C cancels a turn; Ctrl-D or /quit exits){}",
        crate::output::visible(agent.journal().id()),
        if closers > 1 {
            "; an interrupted turn was closed"
        } else {
            ""
        }
    ));
    let runtime = runtime()?;
    let chatted = runtime.block_on(converse(&mut agent, &stdout));
    let closed = agent.close();
    stop(runtime);
    chatted?;
    closed?;
    stdout.result()?;
    Ok(Status::Ok)
}

/// Runs a turn per input line until end of input, `/quit`, Ctrl-C at the prompt, or a closed
/// stdout.
async fn converse(agent: &mut Agent, stdout: &Stdout) -> anyhow::Result<()> {
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "› ").and_then(|()| err.flush());
        drop(err);
        let line = tokio::select! {
            line = lines.next_line() => line?,
            _ = tokio::signal::ctrl_c() => None,
        };
        let Some(line) = line else { return Ok(()) };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "/quit" {
            return Ok(());
        }
        if let Some(prompt) = line.strip_prefix("/system") {
            agent.set_system_prompt(prompt.trim());
            note("system prompt set; it applies from the next turn");
            continue;
        }
        let cancel = stdout.turn_cancel();
        let turn = agent.run_turn(line, &cancel);
        tokio::pin!(turn);
        let report = loop {
            tokio::select! {
                report = &mut turn => break report?,
                _ = tokio::signal::ctrl_c() => cancel.cancel(),
            }
        };
        if stdout.closed().is_cancelled() {
            return Ok(());
        }
        match report.outcome {
            TurnOutcome::Completed => {}
            TurnOutcome::MaxTokens => note("(the answer hit the token limit)"),
            TurnOutcome::Aborted => note("(cancelled)"),
            TurnOutcome::Failed(error) => note(format_args!("error: {error}")),
            TurnOutcome::StepLimit => note("(the turn hit the step limit)"),
        }
    }
}
