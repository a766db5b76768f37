//! What `chat` and `run` share: resolving the store, the session, the model and the tools from
//! the flags into an [`Agent`], and printing what the agent does.
//!
//! The store is opened, and the session writer created, resumed and closed, on the command's
//! own thread, never inside the runtime the turns run on: store calls block, and a blocking
//! client that drives an async runtime of its own (PostgreSQL's) refuses to start inside
//! another one. Inside the runtime the agent reaches the store only through its journal, whose
//! appends wait on Tokio's blocking pool while the writer's flusher thread writes them.
//!
//! Once the turns are over and the log is closed, the runtime is stopped without waiting for
//! its blocking threads ([`stop`]), so a stuck one cannot keep the process alive.
//!
//! Printing never fails a turn: a write to a closed stdout (`strata run … | head -1`) cancels
//! the running turn, so its end is still logged, and the command then ends with that error,
//! which `main` maps to success for a closed pipe. Notes on stderr are best effort.

use std::fmt::Display;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail, Context};
use strata_agent::agent::{
    new_id, Agent, AgentConfig, AutoCompaction, CallConfig, Clock, Observer, SystemClock,
};
use strata_agent::llm::{
    ChatModel, HttpChatModel, LlmConfig, RetryPolicy, ScriptedModel, StreamEvent,
};
use strata_agent::tools::{ToolSet, ToolsConfig, Workspace};
use strata_compact::{CompactionConfig, Compactor, Pruner, PrunerConfig};
use strata_core::{json, Event, EventType, HeaderSpec, SessionHeader};
use strata_store::Store;
use tokio_util::sync::CancellationToken;

use crate::cli::AgentArgs;

/// Opens the store named by `--store`, else `$STRATA_STORE`, else `$STRATA_DATABASE_URL`, else
/// the default SQLite store (one resolution for every command: [`crate::input::open_store`]).
pub(crate) fn open_store(spec: Option<&str>) -> anyhow::Result<Store> {
    crate::input::open_store(spec)
}

/// Builds the agent the flags describe, on a new or resumed session. Blocks on the store: call
/// it before the runtime starts, and close the agent after (see the module docs).
pub(crate) fn build(args: &AgentArgs, observer: Arc<dyn Observer>) -> anyhow::Result<Agent> {
    let store = open_store(args.store.as_deref())?;
    let workdir = match &args.workdir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("read the current directory")?,
    };
    let workspace = Workspace::new(&workdir)
        .with_context(|| format!("use {} as the workspace", workdir.display()))?;
    let (model, call, retry) = chat_model(args.model_script.as_deref(), args.model.as_deref())?;
    let writer = match (&args.session, args.resume) {
        (Some(id), true) => resume(&store, id)?,
        (None, true) => {
            let listing = store.list()?;
            let latest = listing
                .sessions
                .first()
                .ok_or_else(|| anyhow!("no stored session to resume"))?;
            resume(&store, latest.id())?
        }
        (id, false) => {
            let id = id.clone().unwrap_or_else(new_id);
            if store.backend().exists(&id)? {
                bail!("session {id:?} already exists; pass --resume to continue it");
            }
            let created_at = u64::try_from(SystemClock.now_ms()).unwrap_or(0);
            let header = SessionHeader::new(HeaderSpec {
                id,
                created_at,
                cwd: Some(workspace.root().display().to_string()),
                ..HeaderSpec::default()
            })?;
            store.create(header)?
        }
    };
    let tools = ToolSet::builtin(&ToolsConfig {
        allow_write: args.allow_write,
        allow_commands: args.allow_commands,
        ..ToolsConfig::default()
    });
    let mut config = AgentConfig::new(call);
    config.retry = retry;
    config.system_prompt = args.system.clone().unwrap_or_default();
    let compaction = AutoCompaction::new(
        Compactor::new(CompactionConfig::default())?,
        Some(Pruner::new(PrunerConfig::default())?),
        config.reasoning,
        config.retry,
    );
    Ok(Agent::new(writer, model, tools, workspace, config)
        .with_observer(observer)
        .with_hook(Arc::new(compaction)))
}

/// The chat model `--model-script FILE` and `--model NAME` describe, with the call settings
/// and retry policy the agent uses: the scripted model replaying FILE, else the
/// OpenAI-compatible client configured from the environment (`STRATA_BASE_URL`,
/// `DEEPSEEK_API_KEY` or `STRATA_API_KEY`, `STRATA_MODEL`), `--model` overriding the model.
/// One construction for `chat`, `run` and `compact`, so they call the same model the same way.
pub(crate) fn chat_model(
    model_script: Option<&Path>,
    model: Option<&str>,
) -> anyhow::Result<(Arc<dyn ChatModel>, CallConfig, RetryPolicy)> {
    match model_script {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("read the model script {}", file.display()))?;
            let scripted = ScriptedModel::from_json_str(&text)
                .with_context(|| format!("model script {}", file.display()))?;
            let name = model.unwrap_or(LlmConfig::DEFAULT_MODEL).to_owned();
            let config = AgentConfig::new(CallConfig::new("scripted", name));
            Ok((Arc::new(scripted), config.call, config.retry))
        }
        None => {
            let mut config = LlmConfig::from_env()?;
            if let Some(model) = model {
                model.clone_into(&mut config.model);
            }
            let provider = if config.base_url.contains("deepseek") {
                "deepseek"
            } else {
                "openai-compatible"
            };
            let mut call = CallConfig::new(provider, config.model.clone());
            // DeepSeek's chat and reasoner models take 128K tokens; other routes are unknown,
            // which leaves automatic compaction off.
            if config.model.starts_with("deepseek") {
                call.context_window = Some(128_000);
            }
            let retry = config.retry_policy();
            Ok((Arc::new(HttpChatModel::new(config)?), call, retry))
        }
    }
}

/// Reopens a stored session for the agent (lazily, from its checkpoint when one is valid): the
/// store closes what a crash left open — a compaction bracket, recorded as interrupted, then
/// the turn — before the end-seed marker.
/// A V4 session is refused before anything is written: the agent loop writes V3 events
/// (docs/format-v4.md).
fn resume(store: &Store, id: &str) -> anyhow::Result<strata_store::SessionWriter> {
    let generation = store.scan(id)?.header().generation();
    if generation == strata_core::Generation::V4 {
        anyhow::bail!(
            "{}#{id}: a v4 session is read, not written, by this strata (the agent loop writes \
             V3 events; docs/format-v4.md)",
            store.backend().describe()
        );
    }
    Ok(store.open_write(id)?)
}

/// Standard output as the agent's observers write it. The first write that fails (a closed
/// pipe, a full disk) is kept and cancels [`Stdout::closed`], which every turn's cancellation
/// descends from; nothing more is written after it.
#[derive(Clone, Default)]
pub(crate) struct Stdout {
    closed: CancellationToken,
    error: Arc<Mutex<Option<io::Error>>>,
}

impl Stdout {
    /// Cancelled once a write to stdout failed.
    pub(crate) fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// A cancellation for one turn: cancelled when stdout fails, or through the returned token.
    pub(crate) fn turn_cancel(&self) -> CancellationToken {
        self.closed.child_token()
    }

    /// The write error that closed stdout, as the command's error (`main` treats a closed pipe
    /// as success).
    pub(crate) fn result(&self) -> anyhow::Result<()> {
        let error = self
            .error
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take();
        match error {
            Some(error) => Err(anyhow::Error::new(error).context("write to stdout")),
            None => Ok(()),
        }
    }

    /// Writes and flushes `bytes`, unless an earlier write failed.
    fn write(&self, bytes: &[u8]) {
        if self.closed.is_cancelled() {
            return;
        }
        let mut out = io::stdout().lock();
        if let Err(error) = out.write_all(bytes).and_then(|()| out.flush()) {
            let mut slot = self
                .error
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            slot.get_or_insert(error);
            self.closed.cancel();
        }
    }
}

/// Writes one line to stderr, ignoring failure: notes for people must not end a turn.
pub(crate) fn note(text: impl Display) {
    let _ = writeln!(io::stderr().lock(), "{text}");
}

/// Prints one JSON object per appended event (`strata run --json`).
pub(crate) struct JsonLines {
    stdout: Stdout,
}

impl JsonLines {
    pub(crate) fn new(stdout: Stdout) -> JsonLines {
        JsonLines { stdout }
    }
}

impl Observer for JsonLines {
    fn event(&self, event: &Arc<Event>) {
        let mut line = event.to_json();
        line.push('\n');
        self.stdout.write(line.as_bytes());
    }
}

/// Prints for people: answer text on stdout as it streams; reasoning, tool calls, results and
/// warnings on stderr. The model's strings are held (`strata_core::json`), shown with a lone
/// surrogate as U+FFFD.
pub(crate) struct Console {
    stdout: Stdout,
    /// Whether stdout (answer text) and stderr (reasoning) are in the middle of a line.
    open: Mutex<(bool, bool)>,
}

impl Console {
    pub(crate) fn new(stdout: Stdout) -> Console {
        Console {
            stdout,
            open: Mutex::new((false, false)),
        }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, (bool, bool)> {
        self.open
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Ends any line a stream left open, so the next output starts on its own line.
    fn end_lines(&self) {
        let mut open = self.open();
        if open.0 {
            self.stdout.write(b"\n");
        }
        if open.1 {
            note("");
        }
        *open = (false, false);
    }
}

impl Observer for Console {
    fn stream(&self, event: &StreamEvent) {
        let mut open = self.open();
        match event {
            StreamEvent::TextDelta { text } => {
                if open.1 {
                    note("");
                    open.1 = false;
                }
                self.stdout.write(json::text_from_held(text).as_bytes());
                open.0 = true;
            }
            StreamEvent::ReasoningDelta { text } => {
                let _ = io::stderr()
                    .lock()
                    .write_all(json::text_from_held(text).as_bytes());
                open.1 = true;
            }
            _ => {}
        }
    }

    fn event(&self, event: &Arc<Event>) {
        let data = event.data();
        match event.event_type() {
            EventType::AssistantMessage | EventType::AssistantAttempt => self.end_lines(),
            EventType::ToolCall => {
                self.end_lines();
                let line = format!(
                    "→ {} {}",
                    data["name"].as_str().unwrap_or(""),
                    data["arguments"].as_str().unwrap_or("")
                );
                note(json::text_from_held(&line));
            }
            EventType::ToolResult => {
                let block = &data["message"]["content"][0];
                let text = json::text_from_held(block["content"][0]["text"].as_str().unwrap_or(""));
                let first = text.lines().next().unwrap_or("");
                match data.get("error") {
                    Some(error) => note(format_args!(
                        "← {} {first}",
                        error["code"].as_str().unwrap_or("error")
                    )),
                    None => note(format_args!(
                        "← ok ({} lines) {first}",
                        text.lines().count()
                    )),
                }
            }
            _ => {}
        }
    }

    fn warning(&self, message: &str) {
        self.end_lines();
        note(format_args!("warning: {message}"));
    }
}

/// A tokio runtime for one command.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("start the async runtime")
}

/// Stops the runtime without waiting for its blocking threads; call it once the turns are over
/// and the log is closed. Every append they made has returned by then, so what may still run
/// there is work nobody waits for — a tool body that ignored its cancellation, the read of a
/// stdin line nobody will type — and dropping the runtime would wait for it forever. Those
/// threads end with the process.
pub(crate) fn stop(runtime: tokio::runtime::Runtime) {
    runtime.shutdown_background();
}
