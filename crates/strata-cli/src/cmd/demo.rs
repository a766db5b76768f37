//! `strata demo`: an offline tour on a real store, for a newcomer's first five seconds.
//!
//! One session goes through everything strata is for, each step a library call, printing the
//! surface before and after:
//!
//! 1. **agent** — the agent loop runs two turns against a scripted model (embedded in the
//!    binary) with the real read-only tools on a scratch project;
//! 2. **crash** — a third turn is written up to its `tool/call` and its writer dropped without
//!    closing, as a killed process leaves it;
//! 3. **repair** — `Store::open_write` closes the turn with `interrupted` closers;
//! 4. **compact** — the extractive summarizer replaces the oldest history with a checkpoint;
//! 5. **agent** — a fourth turn continues on the compacted surface and reads a large log;
//! 6. **prune** — before the turn's next step, the agent's pre-step middle-elides that
//!    oversized tool result, inside the open turn, where dsh prunes (a hook of the demo's own,
//!    so the step is shown; the real agent prunes there when its context nears the window);
//! 7. **fork** — a new session inherits the log up to the fourth turn's `tool/call`, closed
//!    with `forked` closers.
//!
//! Both logs are then validated from the store, and the commands to look at them are printed.
//! Every run makes fresh session ids, so the demo can run again in the same store.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{bail, Context};
use strata_agent::agent::{
    new_id, Agent, AgentConfig, CallConfig, HookError, HookFuture, PreStepHook, StepPoint,
    TurnOutcome,
};
use strata_agent::llm::ScriptedModel;
use strata_agent::tools::{ToolSet, ToolsConfig, Workspace};
use strata_compact::deadline::block_on;
use strata_compact::host::system_clock_ms;
use strata_compact::IdGenerator;
use strata_compact::{
    CompactionConfig, CompactionOutcome, Compactor, ExtractiveSummarizer, PrunedResult, Pruner,
    PrunerConfig, WriterHost,
};
use strata_core::payload::{
    assistant_message, text_block, tool_call_block, user_text_message, AssistantMessage, StepStart,
    ToolCall, TurnStart, UserMessage,
};
use strata_core::{
    Candidate, EventType, ForkMode, HeaderSpec, Placement, SessionHeader, SurfaceIntent,
};
use strata_store::{SessionWriter, Store};
use tokio_util::sync::CancellationToken;

use super::Status;
use crate::demo::{
    describe_event, surface_line, thousands, wrap, Paint, TurnPrinter, Workdir, LEAD,
};
use crate::input::{open_store, store_spec};
use crate::output;

/// The scripted model's responses, one per request, in `ScriptedModel`'s JSON format; embedded
/// so the demo needs no file, network or key.
const SCRIPT: &str = include_str!("../demo/script.json");

/// The routed provider and model the scripted session records.
const PROVIDER: &str = "scripted";
const MODEL: &str = "strata-demo";

/// The agent's system prompt.
const SYSTEM_PROMPT: &str = "You are a careful coding assistant. Use the tools to look before you answer, and answer briefly.";

/// The prompts of the turns the agent runs (1, 2, then 4 after the crash).
const PROMPTS: [&str; 3] = [
    "What is this project?",
    "How many workers does it run, and how often does it retry a failed job?",
    "Why did the server restart last night?",
];

/// The prompt of the turn that crashes, and the tool call it dies in.
const CRASH_PROMPT: &str = "Fix the first TODO in src/queue.rs.";
const CRASH_CALL: (&str, &str, &str) = ("call_fix", "read_file", r#"{"path":"src/queue.rs"}"#);

pub(crate) fn run(store_flag: Option<&str>) -> anyhow::Result<Status> {
    let started = Instant::now();
    let paint = Paint::detect();
    let store = open_store(store_flag)?;
    let workdir = Workdir::create()?;
    let workspace = Workspace::new(workdir.path())
        .with_context(|| format!("use {} as the workspace", workdir.path().display()))?;
    let demo = Demo::new(paint, workspace)?;
    let id = new_id();
    let header = SessionHeader::new(HeaderSpec {
        id: id.clone(),
        created_at: u64::try_from(system_clock_ms()).unwrap_or(0),
        cwd: Some(demo.workspace.root().display().to_string()),
        ..HeaderSpec::default()
    })?;
    let writer = store
        .create(header)
        .with_context(|| format!("create a session in {}", store.backend().describe()))?;

    say(&paint.bold("strata demo — an agent session log, end to end, offline"))?;
    say(&format!("  store    {}", store.backend().describe()))?;
    say(&format!("  session  {id}"))?;
    say(&wrap(
        "  project  ",
        11,
        &format!(
            "{} ({})",
            workdir.path().display(),
            workdir.file_names().join(", ")
        ),
    ))?;
    say(&paint.dim(&wrap(
        "  legend  ",
        LEAD,
        "one glyph per node the model sees: S system, U user, A assistant, T tool result, \
         E error result, C checkpoint, P pruned result",
    )))?;

    // 1. agent
    heading(
        paint,
        1,
        "agent",
        "a scripted model answers two prompts with real tools",
    )?;
    let mut agent = demo.agent(writer);
    for prompt in &PROMPTS[..2] {
        demo.turn(&mut agent, prompt)?;
    }
    let writer = agent.journal().writer();
    say(&writer.with_session(|session| surface_line("surface", session, paint)))?;

    // 2. crash
    heading(
        paint,
        2,
        "crash",
        "turn 3 is written up to its tool call, then the process dies",
    )?;
    say(&prompt_line(paint, CRASH_PROMPT, next_turn(writer)))?;
    let written = writer
        .append(crash_candidates(writer), system_clock_ms())
        .context("append the turn that crashes")?;
    for event in &written {
        say(&format!("  {}", describe_event(event)))?;
    }
    // Dropping the agent drops its writer without `close`: no tool/result, step/end or turn/end.
    drop(agent);
    say(&paint
        .red("  ✗ killed: no tool/result, step/end or turn/end was written — the turn is open"))?;

    // 3. repair
    heading(
        paint,
        3,
        "repair",
        "opening the session for writing closes the crashed turn",
    )?;
    let writer = store
        .open_write(&id)
        .with_context(|| format!("reopen session {id}"))?;
    for event in writer.added_on_open() {
        say(&paint.red(&format!("  + {}", describe_event(event))))?;
    }
    say(&writer.with_session(|session| surface_line("after", session, paint)))?;

    // 4. compact
    heading(
        paint,
        4,
        "compact",
        "the oldest history becomes one checkpoint summary (extractive, offline)",
    )?;
    compact(&writer, paint)?;

    // 5. agent, and 6. prune: the pre-step hook prints step 6 inside the running turn.
    heading(
        paint,
        5,
        "agent",
        "the conversation goes on from the checkpoint; a tool reads a large log",
    )?;
    let prune = Arc::new(PreStepPrune::new(paint)?);
    let mut agent = demo.agent(writer).with_hook(prune.clone());
    demo.turn(&mut agent, PROMPTS[2])?;
    if prune.pruned().is_empty() {
        bail!("the demo's fourth turn had no tool result to prune");
    }
    let writer = agent.journal().writer();
    // The fork below cuts this turn right after its tool call, before the large result.
    let fork_at = writer
        .with_session(|session| session.latest(&EventType::ToolCall).map(|e| e.seq().get()))
        .context("the fourth turn recorded no tool call")?;
    say(&writer.with_session(|session| surface_line("surface", session, paint)))?;
    agent.close().context("close the session")?;

    // 7. fork
    heading(
        paint,
        7,
        "fork",
        "a new session from any prefix: here, inside turn 4 after its tool call",
    )?;
    let child_id = new_id();
    let child = store
        .fork(&id, &child_id, Some(fork_at), ForkMode::AnyPrefix)
        .with_context(|| format!("fork session {id} at seq {fork_at}"))?;
    say(&format!(
        "  session  {child_id} (fork of {id} at seq {fork_at})"
    ))?;
    let own = child
        .with_session(|session| session.own_events().map(<[_]>::to_vec))
        .with_context(|| format!("reading the events of fork {child_id}"))?;
    for event in &own {
        say(&paint.red(&format!("  + {}", describe_event(event))))?;
    }
    say(&child.with_session(|session| surface_line("surface", session, paint)))?;
    child.close().context("close the fork")?;

    // Check both logs from the store, the whole way through, as `strata validate` does.
    for session_id in [&id, &child_id] {
        store
            .load(session_id)
            .with_context(|| format!("validate session {session_id}"))?;
    }
    say("")?;
    say(&format!(
        "{} in {:.1} s: 2 sessions written, both logs validate, nothing was deleted",
        paint.green("✓ done"),
        started.elapsed().as_secs_f64()
    ))?;
    next_steps(&store, store_flag, &id, &child_id, paint)?;
    Ok(Status::Ok)
}

/// What every agent of the demo shares: the scripted model (one script across both agent
/// instances, as one conversation), the tools, the scratch project, the printer and the async
/// runtime the turns run on.
struct Demo {
    paint: Paint,
    model: Arc<ScriptedModel>,
    tools: ToolSet,
    workspace: Workspace,
    config: AgentConfig,
    printer: Arc<TurnPrinter>,
    runtime: tokio::runtime::Runtime,
}

impl Demo {
    fn new(paint: Paint, workspace: Workspace) -> anyhow::Result<Demo> {
        let model =
            ScriptedModel::from_json_str(SCRIPT).context("the demo's embedded model script")?;
        let mut config = AgentConfig::new(CallConfig::new(PROVIDER, MODEL));
        config.system_prompt = SYSTEM_PROMPT.into();
        Ok(Demo {
            paint,
            model: Arc::new(model),
            tools: ToolSet::builtin(&ToolsConfig::default()),
            workspace,
            config,
            printer: Arc::new(TurnPrinter::new(paint)),
            runtime: super::agent::runtime()?,
        })
    }

    /// An agent on `writer`. No automatic compaction hook: the demo compacts by hand and
    /// prunes through a pre-step hook of its own, to show each step.
    fn agent(&self, writer: SessionWriter) -> Agent {
        Agent::new(
            writer,
            self.model.clone(),
            self.tools.clone(),
            self.workspace.clone(),
            self.config.clone(),
        )
        .with_observer(self.printer.clone())
    }

    /// Runs one turn for `prompt`; anything but a completed turn is a bug in the script.
    fn turn(&self, agent: &mut Agent, prompt: &str) -> anyhow::Result<()> {
        let turn = next_turn(agent.journal().writer());
        say(&prompt_line(self.paint, prompt, turn))?;
        let report = self
            .runtime
            .block_on(agent.run_turn(prompt, &CancellationToken::new()))
            .context("run an agent turn")?;
        if report.outcome != TurnOutcome::Completed {
            bail!(
                "the demo's turn {} ended {:?} instead of completing",
                report.turn,
                report.outcome
            );
        }
        Ok(())
    }
}

/// The events of a turn the process dies in: it opens, the user asks, the model calls a tool,
/// the call is recorded as started — and nothing more.
fn crash_candidates(writer: &SessionWriter) -> Vec<Candidate> {
    let turn = next_turn(writer);
    let (call_id, name, arguments) = CRASH_CALL;
    vec![
        Candidate::log_only(TurnStart { turn }),
        Candidate::log_only(StepStart { turn, step: 1 }),
        Candidate::surface(
            UserMessage {
                message: user_text_message(&new_id(), CRASH_PROMPT),
            },
            SurfaceIntent::append(),
        ),
        Candidate::surface(
            AssistantMessage {
                turn,
                step: 1,
                message: assistant_message(
                    &new_id(),
                    vec![
                        text_block("I'll read src/queue.rs first."),
                        tool_call_block(call_id, name, arguments),
                    ],
                    PROVIDER,
                    MODEL,
                ),
                stream: Vec::new(),
                usage: None,
                interrupted: false,
            },
            Placement::append(),
        ),
        Candidate::log_only(ToolCall {
            turn,
            step: 1,
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }),
    ]
}

/// Step 4: a manual compaction through the writer, with the surface before and after.
fn compact(writer: &SessionWriter, paint: Paint) -> anyhow::Result<()> {
    let compactor = Compactor::new(CompactionConfig::default())?;
    say(&writer.with_session(|session| surface_line("before", session, paint)))?;
    let ids = IdGenerator::seeded(u64::try_from(system_clock_ms()).unwrap_or(0)).next_ids();
    let outcome =
        block_on(compactor.compact_now(&mut WriterHost::new(writer), &ExtractiveSummarizer, &ids))
            .context("compact the session")?;
    match outcome {
        Some(CompactionOutcome::Compacted {
            checkpoint_seq,
            n_shadowed,
            shadowed_tokens,
            checkpoint_tokens,
        }) => say(&format!(
            "  {n_shadowed} nodes (~{} tokens) → a checkpoint at seq {} (~{} tokens); \
             the shadowed events stay in the log",
            thousands(shadowed_tokens),
            checkpoint_seq.get(),
            thousands(checkpoint_tokens)
        ))?,
        Some(CompactionOutcome::Failed { error }) => bail!("the demo's compaction failed: {error}"),
        None => bail!("the demo's session had no compactable history"),
    }
    say(&writer.with_session(|session| surface_line("after", session, paint)))
}

/// Step 6 as the agent runs it: before each step of the open turn, oversized tool results are
/// middle-elided through the turn's journal — the `compaction/prune` + `tool/result` pairs land
/// between two steps, inside the turn, where dsh's pruner runs and where its format layer
/// accepts them — with the surface before and after.
struct PreStepPrune {
    pruner: Pruner,
    paint: Paint,
    /// What it pruned, in order.
    pruned: Mutex<Vec<PrunedResult>>,
}

impl PreStepPrune {
    fn new(paint: Paint) -> anyhow::Result<PreStepPrune> {
        Ok(PreStepPrune {
            pruner: Pruner::new(PrunerConfig::default())?,
            paint,
            pruned: Mutex::new(Vec::new()),
        })
    }

    fn pruned(&self) -> Vec<PrunedResult> {
        self.pruned
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }

    /// Writes to stdout directly, as the turn printer does: a hook cannot fail the turn over a
    /// closed pipe, which the demo's next checked write notices.
    fn print(&self, text: &str) {
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    }
}

impl PreStepHook for PreStepPrune {
    fn before_step<'a>(&'a self, point: StepPoint<'a>) -> HookFuture<'a, Result<(), HookError>> {
        Box::pin(async move {
            let failed = |error: &dyn std::fmt::Display| HookError {
                message: format!("pruning: {error}"),
            };
            let plan = point
                .journal
                .with_session(|session| self.pruner.plan_in_turn(session))
                .map_err(|error| failed(&error))?;
            if plan.is_empty() {
                return Ok(());
            }
            let paint = self.paint;
            self.print(&heading_text(
                paint,
                6,
                "prune",
                "the agent's pre-step middle-elides tool results over 8,192 code points",
            ));
            self.print(
                &point
                    .journal
                    .with_session(|session| surface_line("before", session, paint)),
            );
            point
                .journal
                .append(plan.candidates)
                .await
                .map_err(|error| failed(&error))?;
            for result in &plan.results {
                self.print(&format!(
                    "  seq {}: {} → {} code points (~{} → ~{} tokens); the original stays in \
                     the log",
                    result.seq.get(),
                    thousands(result.chars_before as u64),
                    thousands(result.chars_after as u64),
                    thousands(result.tokens_before),
                    thousands(result.tokens_after)
                ));
            }
            self.print(
                &point
                    .journal
                    .with_session(|session| surface_line("after", session, paint)),
            );
            self.pruned
                .lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .extend(plan.results);
            Ok(())
        })
    }
}

/// The closing lines: commands to look at what the demo wrote.
fn next_steps(
    store: &Store,
    store_flag: Option<&str>,
    id: &str,
    child_id: &str,
    paint: Paint,
) -> anyhow::Result<()> {
    let session = shell_word(&reference(store, id)?);
    let fork = shell_word(&reference(store, child_id)?);
    let sessions = match store_spec(store_flag) {
        Some(spec) if store_flag.is_some() => {
            format!("strata sessions --store {}", shell_word(&spec))
        }
        _ => "strata sessions".to_owned(),
    };
    say("")?;
    say(&format!(
        "{} {}",
        paint.bold("look next"),
        paint.dim("(paste into a shell: S is the session, F the fork)")
    ))?;
    say(&format!("  S={session}"))?;
    say(&format!("  F={fork}"))?;
    let commands = [
        (
            "strata inspect \"$S\"".to_owned(),
            "counts, turns, every replacement",
        ),
        (
            "strata surface \"$S\"".to_owned(),
            "the events the model sees",
        ),
        (
            "strata messages \"$S\" --format openai".to_owned(),
            "the next request, as OpenAI JSON",
        ),
        (
            "strata report \"$S\" -o report.html".to_owned(),
            "a timeline to open in a browser",
        ),
        ("strata surface \"$F\"".to_owned(), "the fork"),
        (sessions, "every session in the store"),
    ];
    for (command, what) in commands {
        say(&format!(
            "  {}{}  {}",
            paint.cyan(&command),
            " ".repeat(38_usize.saturating_sub(command.chars().count())),
            paint.dim(&format!("# {what}"))
        ))?;
    }
    Ok(())
}

/// How the other commands name a stored session: `sqlite://PATH#ID`, `postgres://…#ID`, or
/// the log file of a JSONL store.
fn reference(store: &Store, id: &str) -> anyhow::Result<String> {
    let described = store.backend().describe();
    if let Some(path) = described.strip_prefix("sqlite:") {
        return Ok(format!("sqlite://{path}#{id}"));
    }
    if crate::input::is_postgres(&described) {
        return Ok(format!("{described}#{id}"));
    }
    Ok(store
        .read(id)
        .with_context(|| format!("read session {id}"))?
        .location)
}

/// `text` quoted for a POSIX shell when it holds anything but plain word characters.
fn shell_word(text: &str) -> String {
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-:#@+=,%".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The number the next turn of `writer`'s session gets.
fn next_turn(writer: &SessionWriter) -> u64 {
    writer.with_session(|session| {
        session
            .latest(&EventType::TurnStart)
            .and_then(|event| event.u64_field("turn"))
            .unwrap_or(0)
            + 1
    })
}

/// `  you     PROMPT  (turn N)`.
fn prompt_line(paint: Paint, prompt: &str, turn: u64) -> String {
    let lead = format!("  {}  ", paint.cyan("you   "));
    format!(
        "{}  {}",
        wrap(&lead, LEAD, prompt),
        paint.dim(&format!("turn {turn}"))
    )
}

/// A numbered phase heading.
fn heading(paint: Paint, number: u32, name: &str, what: &str) -> anyhow::Result<()> {
    say(&heading_text(paint, number, name, what))
}

/// A numbered phase heading's text, after a blank line.
fn heading_text(paint: Paint, number: u32, name: &str, what: &str) -> String {
    format!(
        "\n{} {}",
        paint.bold(&format!("{number}. {name}")),
        paint.dim(&format!("— {what}"))
    )
}

/// One line to stdout (a closed pipe ends the demo quietly, see `output::line`).
fn say(text: &str) -> anyhow::Result<()> {
    output::line(text)
}
