//! `strata chat`: an interactive session. Each input line is a turn; Ctrl-C cancels the running
//! turn (its delivered prefix is kept as an interrupted message) and ends the chat at the prompt.

use std::io::Write;
use std::sync::Arc;

use strata_agent::agent::{Agent, Observer, TurnOutcome};
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

use super::agent::{build, runtime, Console};
use super::Status;
use crate::cli::AgentArgs;

pub(crate) fn run(args: &AgentArgs) -> anyhow::Result<Status> {
    let console: Arc<dyn Observer> = Arc::new(Console::default());
    let mut agent = build(args, console)?;
    let closers = agent.journal().writer().added_on_open().len();
    eprintln!(
        "session {} (Ctrl-C cancels a turn; Ctrl-D or /quit exits){}",
        agent.journal().id(),
        if closers > 1 {
            "; an interrupted turn was closed"
        } else {
            ""
        }
    );
    let chatted = runtime()?.block_on(converse(&mut agent));
    let closed = agent.close();
    chatted?;
    closed?;
    Ok(Status::Ok)
}

/// Runs a turn per input line until end of input, `/quit` or Ctrl-C at the prompt.
async fn converse(agent: &mut Agent) -> anyhow::Result<()> {
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        eprint!("› ");
        let _ = std::io::stderr().flush();
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
            eprintln!("system prompt set; it applies from the next turn");
            continue;
        }
        let cancel = CancellationToken::new();
        let turn = agent.run_turn(line, &cancel);
        tokio::pin!(turn);
        let report = loop {
            tokio::select! {
                report = &mut turn => break report?,
                _ = tokio::signal::ctrl_c() => cancel.cancel(),
            }
        };
        match report.outcome {
            TurnOutcome::Completed => {}
            TurnOutcome::MaxTokens => eprintln!("(the answer hit the token limit)"),
            TurnOutcome::Aborted => eprintln!("(cancelled)"),
            TurnOutcome::Failed(error) => eprintln!("error: {error}"),
            TurnOutcome::StepLimit => eprintln!("(the turn hit the step limit)"),
        }
    }
}
