//! Synthetic, valid V3 turns for tests, benches and the crash harness.
//!
//! One turn is eight events in the agent loop's order (persistence §7.1): `turn/start`,
//! `step/start`, a user message, an assistant message announcing one tool call, `tool/call`,
//! the tool result citing it, `step/end`, `turn/end`. Cut anywhere, such a log exercises crash
//! repair: an open turn, an open step, a call announced but not started, or started without a
//! result.
//!
//! Invariant: appending [`turn_candidates`]`(turn, first_seq, _)` to a session whose next seq
//! is `first_seq` and whose last turn is closed is accepted by strata-core.

use strata_core::payload::{
    assistant_message, text_block, tool_call_block, tool_result_message, user_text_message,
    AssistantMessage, StepEnd, StepStart, ToolCall, ToolResult, TurnEnd, TurnStart, UserMessage,
};
use strata_core::{Candidate, Placement, Seq, SurfaceIntent};

/// Events per synthetic turn.
pub const EVENTS_PER_TURN: u64 = 8;

/// The candidates of turn `turn` (numbered from 1) starting at seq `first_seq`, with user and
/// tool texts of about `text_len` bytes.
pub fn turn_candidates(turn: u64, first_seq: u64, text_len: usize) -> Vec<Candidate> {
    let call_id = format!("call-{turn}");
    let arguments = format!("{{\"path\":\"/tmp/file-{turn}.txt\"}}");
    let filler = |label: &str| {
        let mut text = format!("{label} {turn}: ");
        while text.len() < text_len {
            text.push_str("lorem ipsum dolor sit amet — ünïcode ");
        }
        text
    };
    let tool_call_seq = Seq::new(first_seq + 4).unwrap_or(Seq::ZERO);
    vec![
        Candidate::log_only(TurnStart { turn }),
        Candidate::log_only(StepStart { turn, step: 1 }),
        Candidate::surface(
            UserMessage {
                message: user_text_message(&format!("u-{turn}"), &filler("question")),
            },
            SurfaceIntent::append(),
        ),
        Candidate::surface(
            AssistantMessage {
                turn,
                step: 1,
                message: assistant_message(
                    &format!("a-{turn}"),
                    vec![
                        text_block("Reading the file."),
                        tool_call_block(&call_id, "read", &arguments),
                    ],
                    "deepseek",
                    "deepseek-chat",
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
            call_id: call_id.clone(),
            name: "read".into(),
            arguments,
        }),
        Candidate::surface(
            ToolResult {
                turn,
                step: 1,
                message: tool_result_message(
                    &format!("t-{turn}"),
                    &call_id,
                    vec![text_block(&filler("contents"))],
                    false,
                ),
                error: None,
                meta: None,
            },
            SurfaceIntent::append_citing(vec![tool_call_seq]),
        ),
        Candidate::log_only(StepEnd { turn, step: 1 }),
        Candidate::log_only(TurnEnd {
            turn,
            reason: serde_json::json!({"kind": "completed"}),
        }),
    ]
}
