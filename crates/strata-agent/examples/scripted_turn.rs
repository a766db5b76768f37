//! One agent turn on the embedded SQLite store, offline: a scripted model answers, the turn is
//! written to the session log, and the model's message list is derived from the log again.
//!
//! Run: `cargo run -p strata-agent --example scripted_turn`. Swap [`ScriptedModel`] for an
//! [`strata_agent::HttpChatModel`] (built from an [`strata_agent::LlmConfig`]) to talk to a
//! real endpoint; nothing else changes.

use std::sync::Arc;

use strata_agent::{
    Agent, AgentConfig, CallConfig, ScriptedModel, ToolSet, ToolsConfig, Workspace,
};
use strata_core::SessionHeader;
use strata_store::Store;
use tokio_util::sync::CancellationToken;

/// The model's canned reply: one text answer, then the end of its turn.
const SCRIPT: &str = r#"{"responses": [{"events": [
    {"type": "text_delta", "text": "Hello from the scripted model."},
    {"type": "finish", "reason": "stop"}
]}]}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::sqlite(&dir.path().join("strata.db"))?;
    // The store's calls block (the writer fsyncs on its own thread): open the writer before
    // the async runtime starts and close it after, as the CLI does.
    let writer = store.create(SessionHeader::fresh("example", 1)?)?;
    let model = Arc::new(ScriptedModel::from_json_str(SCRIPT)?);
    let workspace = Workspace::new(dir.path())?;
    let tools = ToolSet::builtin(&ToolsConfig::default());
    let config = AgentConfig::new(CallConfig::new("deepseek", "deepseek-chat"));
    let mut agent = Agent::new(writer, model, tools, workspace, config);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let report = runtime.block_on(agent.run_turn("Say hello.", &CancellationToken::new()))?;
    drop(runtime);
    agent.close()?;
    println!("turn {} ended: {:?}", report.turn, report.outcome);

    // The log is the source of truth: load it back and derive what the model sees.
    let session = store.load("example")?;
    println!("{} events in the log", session.len());
    for message in session.derive_messages().iter() {
        println!("{}: {}", message.role(), message.value()["content"]);
    }
    Ok(())
}
