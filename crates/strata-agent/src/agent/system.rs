//! The system prompt lifecycle (session-core §7.3): node 0 from the first step on, replaced in
//! place when the prompt changes.

use serde_json::Value;
use strata_core::{EventType, Seq, Session};

/// The `source.plugin` of system messages the loop writes (dsh's system-prompt plugin name).
pub const SYSTEM_PROMPT_PLUGIN: &str = "@deepseek-ai/dsh-system-prompt";

/// What the step must do about the system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemPlan {
    /// No system node on the surface yet: append one (node 0 of a fresh session), even for an
    /// empty prompt.
    Append,
    /// The latest surviving system node holds another prompt: replace that node.
    Replace(Seq),
    /// The latest system node already holds the prompt.
    Unchanged,
}

/// Decides the system-prompt action for `prompt` against the current surface.
pub fn plan_system(session: &Session, prompt: &str) -> SystemPlan {
    let latest = session.surface().nodes().iter().rev().find_map(|seq| {
        session
            .event(*seq)
            .filter(|event| *event.event_type() == EventType::SystemMessage)
    });
    let Some(event) = latest else {
        return SystemPlan::Append;
    };
    let held: Vec<&str> = event
        .data()
        .get("message")
        .and_then(|message| message.get("content"))
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if held.concat() == prompt {
        SystemPlan::Unchanged
    } else {
        SystemPlan::Replace(event.seq())
    }
}
