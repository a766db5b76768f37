//! Every strata writer path, and the logs each wrote. Library paths (the generators, the
//! compactor with an LLM summarizer on a scripted model, the extractive summarizer and a failing
//! one, the pruner inside a turn, crash repair at every cut, both forks at every seq, migration
//! of `fixtures/v0`, the shipped examples) always run; command-line paths (the agent loop with
//! scripted models and real tools, retries, Ctrl-C, crash and `--resume`, `demo`, `compact`,
//! `fork`, `repair`, `import`/`export`/`convert`, `migrate`) run when the binary is found.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use strata_agent::agent::{LlmSummarizer, ReasoningReplay};
use strata_agent::llm::{RetryPolicy, ScriptedModel};
use strata_compact::deadline::block_on;
use strata_compact::IdGenerator;
use strata_compact::{
    restore_resumed, CompactionConfig, Compactor, ExtractiveSummarizer, MemoryHost, Pruner,
    PrunerConfig, SummarizeError, Summarizer, Summary, SummaryRequest, Trigger,
};
use strata_core::synth::{generate, generate_conversation, ConversationConfig, SynthConfig};
use strata_core::{
    fork_session, payload, Candidate, ForkMode, RawEvent, SeedOptions, Session, SessionHeader,
};
use strata_format::{encode_event_line, encode_header_line};

use crate::cli;

/// The writer paths, in the order the summary lists them.
pub const PATHS: &[&str] = &[
    "synth",
    "synth-conversation",
    "store-synth-turns",
    "compaction-llm",
    "agent-loop-compaction",
    "compaction-extractive",
    "compaction-failed",
    "prune-in-turn",
    "crash-repair-every-cut",
    "fork-any-prefix-every-seq",
    "fork-closed-turn-every-seq",
    "migrate-fixtures-v0",
    "examples",
    "cli-demo",
    "cli-run",
    "cli-chat",
    "cli-cancel",
    "cli-crash-resume",
    "cli-repair",
    "cli-compact-offline",
    "cli-fork",
    "cli-import-export",
    "cli-convert",
    "cli-migrate",
];

/// One log a writer wrote.
pub struct WriterLog {
    /// The writer path (one of [`PATHS`]).
    pub path: &'static str,
    /// The file.
    pub file: PathBuf,
    /// What was written.
    pub what: String,
}

/// The logs, and the writer runs that failed outright (a command that did not succeed).
#[derive(Default)]
pub struct Written {
    /// Every log written.
    pub logs: Vec<WriterLog>,
    /// Failures to write.
    pub errors: Vec<String>,
}

struct Out<'a> {
    dir: &'a Path,
    written: Written,
    n: usize,
}

impl Out<'_> {
    fn session(&mut self, path: &'static str, what: &str, session: &Session) {
        self.n += 1;
        let file = self.dir.join(format!("{path}/{:05}.v3.jsonl", self.n));
        match write_session(&file, session) {
            Ok(()) => self.file(path, what, file),
            Err(error) => self.error(path, &format!("{what}: {error}")),
        }
    }

    fn file(&mut self, path: &'static str, what: &str, file: PathBuf) {
        self.written.logs.push(WriterLog {
            path,
            file,
            what: what.to_owned(),
        });
    }

    fn error(&mut self, path: &'static str, error: &str) {
        self.written.errors.push(format!("{path}: {error}"));
    }

    fn try_run<T>(&mut self, path: &'static str, result: Result<T, String>) -> Option<T> {
        result.map_err(|error| self.error(path, &error)).ok()
    }
}

fn write_session(file: &Path, session: &Session) -> Result<(), String> {
    let mut bytes = Vec::new();
    encode_header_line(session.header(), &mut bytes).map_err(|error| error.to_string())?;
    for event in session.events().unwrap() {
        encode_event_line(event, &mut bytes);
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|error| error.to_string())?;
    }
    std::fs::write(file, bytes).map_err(|error| format!("{}: {error}", file.display()))
}

/// Runs every writer path into `dir`.
pub fn run(dir: &Path, binary: Option<&PathBuf>) -> Written {
    let mut out = Out {
        dir,
        written: Written::default(),
        n: 0,
    };
    library(&mut out);
    if let Some(binary) = binary {
        command_line(&mut out, binary);
    }
    out.written
}

fn synth(
    events: u64,
    seed: u64,
    compact_every: u64,
    prune_rate: f64,
    content: usize,
) -> Result<Session, String> {
    generate(&SynthConfig {
        events,
        seed,
        content_bytes: content,
        compact_every,
        prune_rate,
        id: format!("synth-{seed}"),
    })
    .map_err(|error| format!("synth seed {seed}: {error}"))
}

/// Opens the next turn, as the agent loop does before its pre-step.
fn open_turn(session: &mut Session) -> Result<(), String> {
    let turn = session
        .events()
        .unwrap()
        .iter()
        .rev()
        .find_map(|event| {
            (event.event_type().as_str() == "turn/start").then(|| event.u64_field("turn"))
        })
        .flatten()
        .unwrap_or(0)
        + 1;
    let time = session
        .events()
        .unwrap()
        .last()
        .map_or(0, |event| event.time());
    session
        .append(Candidate::log_only(payload::TurnStart { turn }), time)
        .map(|_| ())
        .map_err(|error| error.to_string())
}

/// A summarizer that always fails, as a provider outage does.
struct Failing;

impl Summarizer for Failing {
    fn summarize(
        &self,
        _: &SummaryRequest,
    ) -> impl std::future::Future<Output = Result<Summary, SummarizeError>> + Send {
        std::future::ready(Err(SummarizeError::Failed {
            code: "SERVER_ERROR".into(),
            message: "upstream 503".into(),
        }))
    }
}

fn library(out: &mut Out<'_>) {
    for (seed, events, compact_every, prune_rate, content) in [
        (1, 400, 2, 1.0, 40),
        (2, 300, 4, 0.3, 400),
        (3, 600, 8, 0.05, 120),
        (4, 200, 0, 0.0, 60),
        (5, 500, 3, 0.5, 20),
    ] {
        if let Some(session) = out.try_run(
            "synth",
            synth(events, seed, compact_every, prune_rate, content),
        ) {
            out.session("synth", &format!("seed {seed}, {events} events, compact every {compact_every}, prune {prune_rate}"), &session);
        }
    }
    for (seed, nodes, tool_every) in [(1, 300, 3), (2, 120, 0)] {
        let made = generate_conversation(&ConversationConfig {
            nodes,
            seed,
            content_bytes: 16,
            exchanges_per_turn: 10,
            tool_every,
            id: format!("conversation-{seed}"),
        })
        .map_err(|error| error.to_string());
        if let Some(session) = out.try_run("synth-conversation", made) {
            out.session("synth-conversation", &format!("seed {seed}"), &session);
        }
    }
    let turns = (|| {
        let header = SessionHeader::fresh("store-synth", 1).map_err(|error| error.to_string())?;
        let mut session = Session::create(header).map_err(|error| error.to_string())?;
        for turn in 1..=5 {
            let first_seq = session.len() as u64;
            session
                .append_batch(strata_store::synth::turn_candidates(turn, first_seq, 40), 1)
                .map_err(|error| error.to_string())?;
        }
        Ok::<_, String>(session)
    })();
    if let Some(session) = out.try_run("store-synth-turns", turns) {
        out.session("store-synth-turns", "5 turns", &session);
    }
    compactions(out);
    agent_loop_compaction(out);
    crash_repair(out);
    forks(out);
    migrate_fixtures(out);
    // The shipped V3 examples: the V4 one is judged by strata's V4 rules (no V4 oracle runs).
    let examples = cli::logs_under(&crate::repo_root().join("examples"));
    for file in examples.into_iter().filter(|file| !is_v4(file)) {
        let what = file.display().to_string();
        out.file("examples", &what, file);
    }
}

/// Whether a log's header says version 4.
fn is_v4(file: &std::path::Path) -> bool {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| {
            let first = text.lines().next()?.to_owned();
            serde_json::from_str::<serde_json::Value>(&first).ok()
        })
        .is_some_and(|header| header["version"] == 4)
}

/// A session whose tool results are over the pruner's threshold.
fn oversized(seed: u64) -> Result<Session, String> {
    synth(120, seed, 0, 0.0, 5_000)
}

fn window(tokens: u64) -> CompactionConfig {
    CompactionConfig {
        context_window: Some(tokens.max(1)),
        ..CompactionConfig::default()
    }
}

fn compactions(out: &mut Out<'_>) {
    let result = (|| {
        let pruner = Pruner::new(PrunerConfig::default()).map_err(|error| error.to_string())?;
        let mut logs: Vec<(&'static str, String, Session)> = Vec::new();
        for seed in [5, 6] {
            // Manual compaction of a finished session (turn: null), extractive.
            let compactor =
                Compactor::new(CompactionConfig::default()).map_err(|e| e.to_string())?;
            let mut host = MemoryHost::new(oversized(seed)?);
            let ids = IdGenerator::seeded(seed).next_ids();
            block_on(compactor.compact_now(&mut host, &ExtractiveSummarizer, &ids))
                .map_err(|error| error.to_string())?;
            logs.push((
                "compaction-extractive",
                format!("manual, seed {seed}"),
                host.into_session(),
            ));

            // Pressure inside an open turn: prune, then compact.
            let mut session = oversized(seed)?;
            open_turn(&mut session)?;
            let tokens = Compactor::new(window(1))
                .map_err(|e| e.to_string())?
                .measure(&session)
                .total_tokens;
            let compactor = Compactor::new(window(tokens / 10)).map_err(|e| e.to_string())?;
            let mut host = MemoryHost::new(session);
            block_on(compactor.compact_if_needed(
                &mut host,
                &ExtractiveSummarizer,
                Some(&pruner),
                &mut IdGenerator::seeded(seed + 10),
            ))
            .map_err(|error| error.to_string())?;
            logs.push((
                "compaction-extractive",
                format!("pressure in a turn, seed {seed}"),
                host.into_session(),
            ));

            // Overflow recovery.
            let mut session = oversized(seed)?;
            open_turn(&mut session)?;
            let mut host = MemoryHost::new(session);
            let ids = IdGenerator::seeded(seed + 20).next_ids();
            block_on(compactor.recover_overflow(
                &mut host,
                &ExtractiveSummarizer,
                Some(&pruner),
                &ids,
            ))
            .map_err(|error| error.to_string())?;
            logs.push((
                "compaction-extractive",
                format!("overflow, seed {seed}"),
                host.into_session(),
            ));

            // A failed attempt: start and end {error}.
            for in_turn in [true, false] {
                let mut session = oversized(seed)?;
                if in_turn {
                    open_turn(&mut session)?;
                }
                let mut host = MemoryHost::new(session);
                let ids = IdGenerator::seeded(seed + 30).next_ids();
                let trigger = if in_turn {
                    Trigger::Overflow
                } else {
                    Trigger::Manual
                };
                block_on(compactor.attempt(&mut host, trigger, &Failing, &ids))
                    .map_err(|error| error.to_string())?;
                logs.push((
                    "compaction-failed",
                    format!("in turn {in_turn}, seed {seed}"),
                    host.into_session(),
                ));
            }

            // The LLM summarizer on a scripted model: a success, then a stream that fails.
            for (label, script) in [
                (
                    "answers",
                    json!({"responses": [{"events": [
                    {"type": "reasoning_delta", "text": "Summarizing."},
                    {"type": "text_delta", "text": "## Goal\nKeep going.\n## Progress\nRead files."},
                    {"type": "usage", "prompt_tokens": 900, "completion_tokens": 40},
                    {"type": "finish", "reason": "stop"}]}]}),
                ),
                (
                    "fails",
                    json!({"responses": [{"events": [], "error": {"code": "AUTH", "message": "bad key"}}]}),
                ),
            ] {
                for in_turn in [true, false] {
                    let model = ScriptedModel::from_json_str(&script.to_string())
                        .map_err(|error| error.to_string())?;
                    let mut session = oversized(seed)?;
                    if in_turn {
                        open_turn(&mut session)?;
                    }
                    let summarizer = LlmSummarizer::new(
                        &model,
                        session.id().to_owned(),
                        ReasoningReplay::default(),
                        RetryPolicy::default(),
                        tokio_util::sync::CancellationToken::new(),
                    );
                    let mut host = MemoryHost::new(session);
                    let ids = IdGenerator::seeded(seed + 40).next_ids();
                    let trigger = if in_turn {
                        Trigger::Overflow
                    } else {
                        Trigger::Manual
                    };
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_time()
                        .build()
                        .map_err(|error| error.to_string())?;
                    runtime
                        .block_on(compactor.attempt(&mut host, trigger, &summarizer, &ids))
                        .map_err(|error| error.to_string())?;
                    let path = if label == "answers" {
                        "compaction-llm"
                    } else {
                        "compaction-failed"
                    };
                    logs.push((
                        path,
                        format!("LLM summarizer {label}, in turn {in_turn}, seed {seed}"),
                        host.into_session(),
                    ));
                }
            }

            // Pruning inside an open turn (the agent's pre-step).
            let mut session = oversized(seed)?;
            open_turn(&mut session)?;
            let plan = pruner
                .plan_in_turn(&session)
                .map_err(|error| error.to_string())?;
            let time = session
                .events()
                .unwrap()
                .last()
                .map_or(0, |event| event.time());
            session
                .append_batch(plan.candidates, time)
                .map_err(|error| error.to_string())?;
            logs.push(("prune-in-turn", format!("seed {seed}"), session));
        }
        Ok::<_, String>(logs)
    })();
    match result {
        Ok(logs) => {
            for (path, what, session) in logs {
                out.session(path, &what, &session);
            }
        }
        Err(error) => out.error("compaction", &error),
    }
}

/// The agent loop's own pre-step (the library `Agent` with `AutoCompaction`, on a JSONL store,
/// a scripted model and the real tools) under a small context window: a large tool result
/// pruned inside the turn, then compactions with the loop's model as summarizer — one that
/// answers and one that fails.
fn agent_loop_compaction(out: &mut Out<'_>) {
    use std::sync::Arc;
    use strata_agent::agent::{Agent, AgentConfig, AutoCompaction, CallConfig};
    use strata_agent::tools::{ToolSet, ToolsConfig, Workspace};

    let root = out.dir.join("agent-loop");
    let work = root.join("work");
    let big = "all work and no play makes a long tool result\n".repeat(600);
    if std::fs::create_dir_all(&work).is_err() || std::fs::write(work.join("big.txt"), big).is_err()
    {
        out.error("agent-loop-compaction", "cannot create the workspace");
        return;
    }
    let store = strata_store::Store::jsonl(root.join("store"), strata_store::Compression::None);
    let question = "Explain the build. ".repeat(130);
    let long = "The build has many parts. ".repeat(45);
    let summary =
        "## Primary Request and Intent\n- Explain the build.\n## Current Work\n- Explained it.";
    let read_big = json!({"events": [
        {"type": "tool_call_delta", "index": 0, "id": "call_big", "name": "read_file", "arguments_delta": "{\"path\": \"big.txt\"}"},
        {"type": "finish", "reason": "tool_calls"}]});
    let scenarios: Vec<(&str, Value)> = vec![
        (
            "summary-answers",
            json!({"responses": [answer(&long), answer(summary), answer("ok"), answer("ok"), answer("ok")]}),
        ),
        (
            "summary-fails",
            json!({"responses": [answer(&long),
            {"events": [], "error": {"code": "AUTH", "message": "bad key"}}, answer("ok"), answer("ok"), answer("ok")]}),
        ),
        (
            "prune-then-compact",
            json!({"responses": [read_big, answer(&long), answer(summary), answer("ok"), answer("ok"), answer("ok")]}),
        ),
    ];
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            out.error("agent-loop-compaction", &error.to_string());
            return;
        }
    };
    for (name, script) in scenarios {
        let ran = (|| {
            let model = Arc::new(
                ScriptedModel::from_json_str(&script.to_string()).map_err(|e| e.to_string())?,
            );
            let mut config = AgentConfig::new(CallConfig::new("deepseek", "deepseek-chat"));
            config.call.context_window = Some(1500);
            config.retry.backoff.initial = Duration::from_millis(1);
            config.retry.backoff.jitter = 0.0;
            let hook = AutoCompaction::new(
                Compactor::new(CompactionConfig::default()).map_err(|e| e.to_string())?,
                Some(Pruner::new(PrunerConfig::default()).map_err(|e| e.to_string())?),
                config.reasoning,
                config.retry,
            );
            let header = SessionHeader::fresh(name, 1).map_err(|e| e.to_string())?;
            let writer = store.create(header).map_err(|e| e.to_string())?;
            let workspace = Workspace::new(&work).map_err(|e| e.to_string())?;
            let mut agent = Agent::new(
                writer,
                model,
                ToolSet::builtin(&ToolsConfig::default()),
                workspace,
                config,
            )
            .with_hook(Arc::new(hook));
            let cancel = tokio_util::sync::CancellationToken::new();
            let prompts = [question.as_str(), "And the tests?", "And the docs?"];
            runtime.block_on(async {
                for prompt in prompts {
                    agent
                        .run_turn(prompt, &cancel)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Ok::<_, String>(())
            })?;
            agent.close().map_err(|e| e.to_string())?;
            let log = store.read(name).map_err(|e| e.to_string())?;
            let count = |kind: &str| {
                log.events
                    .iter()
                    .filter(|event| event.type_tag() == Some(kind))
                    .count()
            };
            let wanted = if name == "prune-then-compact" {
                "compaction/prune"
            } else {
                "compaction/start"
            };
            if count(wanted) == 0 {
                return Err(format!("{name}: the loop wrote no {wanted}"));
            }
            Ok(PathBuf::from(log.location))
        })();
        if let Some(file) = out.try_run("agent-loop-compaction", ran) {
            out.file("agent-loop-compaction", name, file);
        }
    }
}

/// Cuts `header` + `rows` after every event and repairs each cut as a resume does.
fn repair_every_cut(out: &mut Out<'_>, label: &str, header: &SessionHeader, rows: &[RawEvent]) {
    for cut in 1..=rows.len() {
        match restore_resumed(header.clone(), rows[..cut].to_vec(), SeedOptions::default()) {
            Ok(resumed) => out.session(
                "crash-repair-every-cut",
                &format!("{label} cut at {cut}"),
                &resumed.session,
            ),
            Err(error) => out.error(
                "crash-repair-every-cut",
                &format!("{label} cut at {cut}: {error}"),
            ),
        }
    }
}

fn crash_repair(out: &mut Out<'_>) {
    if let Some(session) = out.try_run("crash-repair-every-cut", synth(150, 21, 3, 0.5, 30)) {
        repair_every_cut(
            out,
            "synth seed 21",
            session.header(),
            &session.to_raw_events().unwrap(),
        );
    }
}

fn forks(out: &mut Out<'_>) {
    let Some(parent) = out.try_run("fork-any-prefix-every-seq", synth(160, 11, 3, 0.5, 30)) else {
        return;
    };
    for at in 0..parent.len() as u64 {
        match fork_session(&parent, "child", Some(at), ForkMode::AnyPrefix, 1) {
            Ok(child) => out.session("fork-any-prefix-every-seq", &format!("at {at}"), &child),
            Err(error) => out.error("fork-any-prefix-every-seq", &format!("at {at}: {error}")),
        }
        // A closed-turn fork exists only where the cut is outside a turn.
        if let Ok(child) = fork_session(&parent, "child", Some(at), ForkMode::ClosedTurn, 1) {
            out.session("fork-closed-turn-every-seq", &format!("at {at}"), &child);
        }
    }
}

/// Copies of the v0 fixtures (generated and rule fixtures) migrated with the library's
/// `migrate_file`; the sources it refuses write nothing and are not counted.
fn migrate_fixtures(out: &mut Out<'_>) {
    let root = crate::repo_root().join("fixtures/v0");
    let dir = out.dir.join("migrate-fixtures-v0");
    if std::fs::create_dir_all(&dir).is_err() {
        out.error("migrate-fixtures-v0", "cannot create its folder");
        return;
    }
    for source in cli::logs_under(&root) {
        let Some(name) = source.file_name() else {
            continue;
        };
        // `migrate_file` writes `session.v3.jsonl` beside its source: one folder per source.
        let folder = dir.join(name.to_string_lossy().replace('.', "-"));
        let copy = folder.join("session.jsonl");
        let Some(text) = v0_log(&source) else {
            continue;
        };
        if std::fs::create_dir_all(&folder).is_err() || std::fs::write(&copy, text).is_err() {
            out.error(
                "migrate-fixtures-v0",
                &format!("cannot copy {}", source.display()),
            );
            continue;
        }
        if strata_migrate::migrate::migrate_file(&copy).is_ok() {
            let target = strata_migrate::migrate::target_path(&copy, false);
            out.file("migrate-fixtures-v0", &source.display().to_string(), target);
        }
    }
}

/// A v0 fixture as a whole log: the generated ones as they are, a rule fixture (events only,
/// see `fixtures/v0/README.md`) that upstream rc.8 restores under a v0 header of its own;
/// `None` for a rule fixture rc.8 refuses (nothing to migrate).
fn v0_log(source: &Path) -> Option<String> {
    let text = std::fs::read_to_string(source).ok()?;
    if text.starts_with("{\"type\":\"session\"") {
        return Some(text);
    }
    let name = source.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let expected = source.with_file_name(format!("{name}.expected.json"));
    let expected: Value = serde_json::from_str(&std::fs::read_to_string(expected).ok()?).ok()?;
    if expected["restore"]["ok"] != Value::Bool(true) {
        return None;
    }
    let header = json!({"type": "session", "version": 0, "id": name, "createdAt": 1000,
        "cwd": "/home/user/project", "delegationDepth": 0});
    Some(format!("{header}\n{text}"))
}

// ---------------------------------------------------------------------------------------------
// The command line.

fn script(dir: &Path, name: &str, value: &Value) -> Result<PathBuf, String> {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).map_err(|error| error.to_string())?;
    Ok(path)
}

fn answer(text: &str) -> Value {
    json!({"events": [{"type": "text_delta", "text": text}, {"type": "finish", "reason": "stop"}]})
}

fn command_line(out: &mut Out<'_>, binary: &Path) {
    let dir = out.dir.join("cli");
    let home = dir.join("home");
    let work = dir.join("work");
    for folder in [&home, &work] {
        if std::fs::create_dir_all(folder).is_err() {
            out.error("cli-run", "cannot create the scratch folders");
            return;
        }
    }
    let _ = std::fs::write(
        work.join("notes.txt"),
        "TODO: the released suite\nFIXME: nothing\n",
    );
    let demo_script = crate::repo_root().join("crates/strata-agent/scripts/demo.json");

    // demo
    let root = dir.join("demo");
    let ran = cli::run(
        cli::command(binary, &home)
            .arg("demo")
            .arg("--store")
            .arg(format!("jsonl:{}", root.display())),
        &[0],
    );
    if out.try_run("cli-demo", ran).is_some() {
        for file in cli::logs_under(&root) {
            out.file("cli-demo", "strata demo", file);
        }
    }

    // run: the demo script (a rate-limited first request, then two tools), a disconnected
    // stream retried, a request that fails outright, two steps of tool calls.
    let scripts: Vec<(&str, Value, &[i32])> = vec![
        (
            "disconnect",
            json!({"responses": [
                {"events": [{"type": "text_delta", "text": "Half"}], "error": {"code": "STREAM_DISCONNECTED", "message": "peer reset"}},
                {"events": [{"type": "text_delta", "text": "Whole answer."}, {"type": "finish", "reason": "stop"}]}
            ]}),
            &[0],
        ),
        (
            "fails",
            json!({"responses": [
                {"events": [], "error": {"code": "AUTH", "message": "bad key"}}
            ]}),
            &[2],
        ),
        (
            "two-steps",
            json!({"responses": [
                {"events": [
                    {"type": "tool_call_delta", "index": 0, "id": "call_read", "name": "read_file", "arguments_delta": "{\"path\": \"notes.txt\"}"},
                    {"type": "finish", "reason": "tool_calls"}]},
                {"events": [
                    {"type": "tool_call_delta", "index": 0, "id": "call_missing", "name": "read_file", "arguments_delta": "{\"path\": \"missing.txt\"}"},
                    {"type": "tool_call_delta", "index": 1, "id": "call_list", "name": "list_dir", "arguments_delta": "{\"path\": \".\"}"},
                    {"type": "finish", "reason": "tool_calls"}]},
                answer("Done reading.")
            ]}),
            &[0],
        ),
    ];
    let run_root = dir.join("run");
    let store = format!("jsonl:{}", run_root.display());
    let mut runs = vec![("demo".to_owned(), demo_script.clone(), vec![0])];
    for (name, value, codes) in scripts {
        match script(&dir, &format!("{name}.json"), &value) {
            Ok(path) => runs.push((name.to_owned(), path, codes.to_vec())),
            Err(error) => out.error("cli-run", &error),
        }
    }
    for (name, path, codes) in &runs {
        let ran = cli::run(
            cli::command(binary, &home)
                .args(["run", "What is in this directory?", "--json", "--session"])
                .arg(format!("run-{name}"))
                .arg("--store")
                .arg(&store)
                .arg("--model-script")
                .arg(path)
                .arg("--workdir")
                .arg(&work),
            codes,
        );
        out.try_run("cli-run", ran);
    }
    // A second turn on the demo session (resume of a closed session).
    let second = script(
        &dir,
        "second.json",
        &json!({"responses": [answer("Nothing else.")]}),
    );
    if let Some(second) = out.try_run("cli-run", second) {
        let ran = cli::run(
            cli::command(binary, &home)
                .args([
                    "run",
                    "Anything else?",
                    "--resume",
                    "--session",
                    "run-demo",
                    "--store",
                ])
                .arg(&store)
                .arg("--model-script")
                .arg(&second)
                .arg("--workdir")
                .arg(&work),
            &[0],
        );
        out.try_run("cli-run", ran);
        let run_logs = cli::logs_under(&run_root);
        for file in &run_logs {
            out.file("cli-run", "strata run", file.clone());
        }
        crash_resume(out, binary, &home, &work, &run_root, &second);
    }

    // chat: two prompts and a system prompt change.
    let chat = script(
        &dir,
        "chat.json",
        &json!({"responses": [answer("Hello."), answer("Brief.")]}),
    );
    if let Some(chat) = out.try_run("cli-chat", chat) {
        let chat_root = dir.join("chat");
        let ran = chat_session(binary, &home, &work, &chat_root, &chat);
        if out.try_run("cli-chat", ran).is_some() {
            for file in cli::logs_under(&chat_root) {
                out.file("cli-chat", "strata chat", file);
            }
        }
    }

    // Ctrl-C during a stuck tool.
    let cancel_root = dir.join("cancel");
    let ran = cancel(binary, &home, &dir, &cancel_root);
    if out.try_run("cli-cancel", ran).is_some() {
        for file in cli::logs_under(&cancel_root) {
            out.file("cli-cancel", "Ctrl-C during a tool", file);
        }
    }

    file_commands(out, binary, &home, &dir);
}

fn chat_session(
    binary: &Path,
    home: &Path,
    work: &Path,
    root: &Path,
    script: &Path,
) -> Result<(), String> {
    use std::io::Write as _;
    let mut child = cli::command(binary, home)
        .args(["chat", "--session", "chat", "--store"])
        .arg(format!("jsonl:{}", root.display()))
        .arg("--model-script")
        .arg(script)
        .arg("--workdir")
        .arg(work)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|error| error.to_string())?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(b"Hi there\n/system Be brief.\nAnd now?\n/quit\n")
            .map_err(|error| error.to_string())?;
    }
    let output = child
        .wait_with_output()
        .map_err(|error| error.to_string())?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "strata chat exited {:?}: {}",
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

fn cancel(binary: &Path, home: &Path, dir: &Path, root: &Path) -> Result<(), String> {
    let work = dir.join("cancel-work");
    std::fs::create_dir_all(&work).map_err(|error| error.to_string())?;
    let arguments = json!({"command": "touch started && while [ ! -e go ]; do sleep 0.05; done"});
    let stuck = script(
        dir,
        "stuck.json",
        &json!({"responses": [
            {"events": [
                {"type": "tool_call_delta", "index": 0, "id": "call_stuck", "name": "run_command",
                 "arguments_delta": arguments.to_string()},
                {"type": "finish", "reason": "tool_calls"}]},
            answer("unused")
        ]}),
    )?;
    let mut child = cli::command(binary, home)
        .args([
            "run",
            "Run the stuck command",
            "--allow-commands",
            "--session",
            "cancel",
            "--store",
        ])
        .arg(format!("jsonl:{}", root.display()))
        .arg("--model-script")
        .arg(&stuck)
        .arg("--workdir")
        .arg(&work)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|error| error.to_string())?;
    let started = Instant::now();
    while !work.join("started").exists() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the stuck tool never started".to_owned());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .map_err(|error| error.to_string())?;
    let status = child.wait().map_err(|error| error.to_string())?;
    let _ = std::fs::write(work.join("go"), "");
    if !signalled.success() {
        return Err("kill -INT failed".to_owned());
    }
    match status.code() {
        Some(0 | 2 | 130) => Ok(()),
        code => Err(format!("strata run after Ctrl-C exited {code:?}")),
    }
}

/// The demo run's log cut after every event (a crash), each cut resumed by `strata run
/// --resume` (which repairs the crashed turn first) in a copy of the store, and repaired by
/// `strata repair` in another; plus the library's repair of every cut of every agent log.
fn crash_resume(
    out: &mut Out<'_>,
    binary: &Path,
    home: &Path,
    work: &Path,
    run_root: &Path,
    second: &Path,
) {
    let logs = cli::logs_under(run_root);
    for log in &logs {
        match strata_store::read_log(log) {
            Ok(stored) => repair_every_cut(
                out,
                &log.display().to_string(),
                &stored.header,
                &stored.events,
            ),
            Err(error) => out.error(
                "crash-repair-every-cut",
                &format!("{}: {error}", log.display()),
            ),
        }
    }
    let Some(demo) = logs
        .iter()
        .find(|log| log.to_string_lossy().contains("run-demo"))
    else {
        out.error("cli-crash-resume", "the demo run wrote no log");
        return;
    };
    let Ok(relative) = demo.strip_prefix(run_root) else {
        return;
    };
    let Ok(text) = std::fs::read_to_string(demo) else {
        out.error("cli-crash-resume", "cannot read the demo run's log");
        return;
    };
    let lines: Vec<&str> = text.lines().collect();
    // The first turn only (the second run's turn follows it).
    let n_first = lines
        .iter()
        .position(|line| line.contains("\"turn/end\""))
        .unwrap_or(lines.len() - 1);
    for cut in 1..n_first {
        let cut_text: String = lines[..=cut]
            .iter()
            .map(|line| format!("{line}\n"))
            .collect();
        for (path, kind) in [("cli-crash-resume", "resume"), ("cli-repair", "repair")] {
            let root = out.dir.join(format!("cli/{kind}-{cut}"));
            let file = root.join(relative);
            if let Some(parent) = file.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            if std::fs::write(&file, &cut_text).is_err() {
                out.error(path, "cannot write a cut");
                continue;
            }
            let mut command = cli::command(binary, home);
            if kind == "resume" {
                command
                    .args([
                        "run",
                        "Where were we?",
                        "--resume",
                        "--session",
                        "run-demo",
                        "--store",
                    ])
                    .arg(format!("jsonl:{}", root.display()))
                    .arg("--model-script")
                    .arg(second)
                    .arg("--workdir")
                    .arg(work);
            } else {
                command.arg("repair").arg(&file);
            }
            if out.try_run(path, cli::run(&mut command, &[0])).is_some() {
                out.file(
                    path,
                    &format!("{kind} after a crash after {cut} events"),
                    file,
                );
            }
        }
    }
}

fn file_commands(out: &mut Out<'_>, binary: &Path, home: &Path, dir: &Path) {
    // Sources: two generated logs written as loose files.
    let mut sources = Vec::new();
    for (seed, compact_every) in [(31, 3), (32, 0)] {
        if let Some(session) = out.try_run(
            "cli-import-export",
            synth(240, seed, compact_every, 0.4, 40),
        ) {
            let file = dir.join(format!("source-{seed}.v3.jsonl"));
            if out
                .try_run("cli-import-export", write_session(&file, &session))
                .is_some()
            {
                sources.push((session.id().to_owned(), file));
            }
        }
    }
    let sqlite = dir.join("stores/strata.db");
    let jsonl = dir.join("stores/jsonl");
    let _ = std::fs::create_dir_all(dir.join("stores"));
    for (id, file) in &sources {
        let imported = cli::run(
            cli::command(binary, home)
                .arg("import")
                .arg(file)
                .arg("--store")
                .arg(&sqlite),
            &[0],
        );
        out.try_run("cli-import-export", imported);
        let exported = dir.join(format!("exported-{id}.v3.jsonl"));
        let ran = cli::run(
            cli::command(binary, home)
                .args(["export", id, "-o"])
                .arg(&exported)
                .arg("--store")
                .arg(&sqlite),
            &[0],
        );
        if out.try_run("cli-import-export", ran).is_some() {
            // A round trip: the exported log is the imported one, byte for byte.
            if std::fs::read(&exported).ok() != std::fs::read(file).ok() {
                out.error(
                    "cli-import-export",
                    &format!("{} differs from {}", exported.display(), file.display()),
                );
            }
            out.file(
                "cli-import-export",
                &format!("import then export of {id}"),
                exported,
            );
        }
        let imported = cli::run(
            cli::command(binary, home)
                .arg("import")
                .arg(file)
                .arg("--store")
                .arg(format!("jsonl:{}", jsonl.display())),
            &[0],
        );
        out.try_run("cli-import-export", imported);
    }
    let converted = dir.join("stores/converted");
    let ran = cli::run(
        cli::command(binary, home)
            .arg("convert")
            .arg(&sqlite)
            .arg(format!("jsonl:{}", converted.display())),
        &[0],
    );
    if out.try_run("cli-convert", ran).is_some() {
        let originals: Vec<Vec<u8>> = sources
            .iter()
            .filter_map(|(_, file)| std::fs::read(file).ok())
            .collect();
        let copies = cli::logs_under(&converted);
        if copies.len() != sources.len() {
            out.error(
                "cli-convert",
                &format!("{} sessions converted of {}", copies.len(), sources.len()),
            );
        }
        for file in copies {
            // Every copy is one of the sources, byte for byte.
            if !std::fs::read(&file).is_ok_and(|bytes| originals.contains(&bytes)) {
                out.error(
                    "cli-convert",
                    &format!("{} is none of the sources, byte for byte", file.display()),
                );
            }
            out.file("cli-convert", "sqlite → jsonl", file);
        }
    }
    // compact --offline on the JSONL store's sessions (appended in place).
    for file in cli::logs_under(&jsonl) {
        let ran = cli::run(
            cli::command(binary, home)
                .args(["compact", "--offline"])
                .arg(&file),
            &[0, 1],
        );
        if out.try_run("cli-compact-offline", ran).is_some() {
            out.file("cli-compact-offline", "compact --offline", file.clone());
        }
    }
    // fork at every 7th seq of the first source, to loose files.
    if let Some((_, file)) = sources.first() {
        let n =
            std::fs::read_to_string(file).map_or(0, |text| text.lines().count().saturating_sub(1));
        for at in (0..n).step_by(7) {
            let forked = dir.join(format!("fork-{at}.v3.jsonl"));
            let ran = cli::run(
                cli::command(binary, home)
                    .arg("fork")
                    .arg(file)
                    .args(["--at", &at.to_string(), "-o"])
                    .arg(&forked),
                &[0],
            );
            if out.try_run("cli-fork", ran).is_some() {
                out.file("cli-fork", &format!("fork --at {at}"), forked);
            }
        }
    }
    // migrate the generated v0 fixtures.
    let generated = crate::repo_root().join("fixtures/v0/generated");
    for source in cli::logs_under(&generated) {
        let Some(name) = source.file_name() else {
            continue;
        };
        let folder = dir
            .join("migrate")
            .join(name.to_string_lossy().replace('.', "-"));
        let copy = folder.join("session.jsonl");
        if std::fs::create_dir_all(&folder).is_err() || std::fs::copy(&source, &copy).is_err() {
            out.error("cli-migrate", "cannot copy a fixture");
            continue;
        }
        let ran = cli::run(
            cli::command(binary, home).arg("migrate").arg(&copy),
            &[0, 1],
        );
        if let Some(output) = out.try_run("cli-migrate", ran) {
            let target = folder.join("session.v3.jsonl");
            if output.status.success() && target.is_file() {
                out.file("cli-migrate", &source.display().to_string(), target);
            }
        }
    }
}
