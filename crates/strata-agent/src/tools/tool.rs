//! The tool seam: a named function with a JSON schema, run asynchronously and cancellably.
//!
//! `run` returns a boxed future rather than being an `async fn` so the trait stays object-safe
//! (`Arc<dyn Tool>` in a [`ToolSet`](super::ToolSet)) without a macro crate. A tool never
//! panics on bad arguments or I/O failure: it returns a [`ToolError`], whose stable code and
//! name the loop writes into the `tool/result` (`error: {name, code}`), so the model and a log
//! reader both see what went wrong.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Workspace;

/// The future a tool run returns.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;

/// A function the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by (unique within a [`ToolSet`](super::ToolSet)).
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// JSON schema of the arguments object.
    fn parameters(&self) -> Value;

    /// Runs the tool. `input.arguments` is the parsed arguments object. Implementations watch
    /// `input.cancel` and return [`ToolError::Aborted`] promptly when it fires; the loop waits
    /// for every started tool to return before it closes the step.
    fn run<'a>(&'a self, input: ToolInput<'a>) -> ToolFuture<'a>;
}

/// What a tool run gets.
#[derive(Clone, Copy)]
pub struct ToolInput<'a> {
    /// The arguments object, parsed from the model's JSON text.
    pub arguments: &'a Value,
    /// The directory the tool is confined to.
    pub workspace: &'a Workspace,
    /// Fires when the user cancels the turn.
    pub cancel: &'a CancellationToken,
}

/// A successful tool run.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The result text the model sees.
    pub text: String,
    /// Tool-specific metadata for log readers (`tool/result.meta`), never sent to the model.
    pub meta: Option<Value>,
}

impl ToolOutput {
    /// A result with text only.
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            meta: None,
        }
    }
}

/// Why a tool call failed. The model sees `Error: <message>`; the log also records
/// [`ToolError::name`] and [`ToolError::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool of that name is registered (`UNKNOWN_TOOL`).
    #[error("unknown tool {name:?}; available tools: {available}")]
    UnknownTool {
        /// The name the model used.
        name: String,
        /// The registered names, comma-separated.
        available: String,
    },
    /// The arguments are not a JSON object of the tool's schema (`INVALID_ARGUMENTS`).
    #[error("invalid arguments for {tool}: {detail}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What is wrong.
        detail: String,
    },
    /// The path leaves the workspace (`OUTSIDE_WORKSPACE`).
    #[error("path {path:?} is outside the workspace {root}")]
    OutsideWorkspace {
        /// The path as given.
        path: String,
        /// The workspace root.
        root: String,
    },
    /// A file-system operation failed (`IO`).
    #[error("cannot {op} {path:?}: {detail}")]
    Io {
        /// What was attempted (`read`, `list`, `write`, …).
        op: String,
        /// The path as given.
        path: String,
        /// The OS error.
        detail: String,
    },
    /// A command ran past its time limit and was killed (`TIMEOUT`).
    #[error("command timed out after {after_ms} ms and was killed\n{output}")]
    Timeout {
        /// The limit.
        after_ms: u64,
        /// What it printed before it was killed.
        output: String,
    },
    /// A command exited unsuccessfully (`COMMAND_FAILED`).
    #[error("command exited with {status}\n{output}")]
    CommandFailed {
        /// `status N` or `signal N`.
        status: String,
        /// What it printed.
        output: String,
    },
    /// The turn was cancelled while the tool ran (`ABORTED`).
    #[error("tool call aborted")]
    Aborted,
    /// The turn was cancelled after the call was recorded but before its body started
    /// (`ABORTED_BEFORE_DISPATCH`).
    #[error("tool call aborted before dispatch")]
    AbortedBeforeDispatch,
    /// The model's output was cut by its token limit, so the call's arguments may be truncated;
    /// it was not run (`NOT_RUN_TRUNCATED`).
    #[error("tool call not run: the model's output was cut by its token limit")]
    Truncated,
    /// Any other failure (`TOOL_FAILED`).
    #[error("{detail}")]
    Failed {
        /// What went wrong.
        detail: String,
    },
}

impl ToolError {
    /// The stable code written to `tool/result.error.code`.
    pub fn code(&self) -> &'static str {
        match self {
            ToolError::UnknownTool { .. } => "UNKNOWN_TOOL",
            ToolError::InvalidArguments { .. } => "INVALID_ARGUMENTS",
            ToolError::OutsideWorkspace { .. } => "OUTSIDE_WORKSPACE",
            ToolError::Io { .. } => "IO",
            ToolError::Timeout { .. } => "TIMEOUT",
            ToolError::CommandFailed { .. } => "COMMAND_FAILED",
            ToolError::Aborted => "ABORTED",
            ToolError::AbortedBeforeDispatch => "ABORTED_BEFORE_DISPATCH",
            ToolError::Truncated => "NOT_RUN_TRUNCATED",
            ToolError::Failed { .. } => "TOOL_FAILED",
        }
    }

    /// The error class name written to `tool/result.error.name` (dsh spells cancellation
    /// `AbortError`).
    pub fn name(&self) -> &'static str {
        match self {
            ToolError::Aborted | ToolError::AbortedBeforeDispatch => "AbortError",
            _ => "ToolError",
        }
    }

    /// An I/O failure on `path`.
    pub fn io(op: &str, path: &str, error: &std::io::Error) -> ToolError {
        ToolError::Io {
            op: op.to_owned(),
            path: path.to_owned(),
            detail: error.to_string(),
        }
    }

    /// Invalid arguments for `tool`.
    pub fn invalid(tool: &str, detail: impl Into<String>) -> ToolError {
        ToolError::InvalidArguments {
            tool: tool.to_owned(),
            detail: detail.into(),
        }
    }
}

/// Reads a required string argument.
pub(crate) fn string_arg<'a>(
    tool: &str,
    arguments: &'a Value,
    key: &str,
) -> Result<&'a str, ToolError> {
    match arguments.get(key) {
        Some(Value::String(text)) => Ok(text),
        Some(_) => Err(ToolError::invalid(tool, format!("{key} must be a string"))),
        None => Err(ToolError::invalid(tool, format!("missing required {key}"))),
    }
}

/// Reads an optional string argument (`null` counts as absent).
pub(crate) fn optional_string_arg<'a>(
    tool: &str,
    arguments: &'a Value,
    key: &str,
) -> Result<Option<&'a str>, ToolError> {
    match arguments.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ToolError::invalid(tool, format!("{key} must be a string"))),
    }
}

/// Reads an optional non-negative integer argument (`null` counts as absent).
pub(crate) fn optional_u64_arg(
    tool: &str,
    arguments: &Value,
    key: &str,
) -> Result<Option<u64>, ToolError> {
    match arguments.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or_else(|| {
            ToolError::invalid(tool, format!("{key} must be a non-negative integer"))
        }),
    }
}

/// Reads an optional boolean argument (`null` counts as absent).
pub(crate) fn optional_bool_arg(
    tool: &str,
    arguments: &Value,
    key: &str,
) -> Result<Option<bool>, ToolError> {
    match arguments.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(_) => Err(ToolError::invalid(tool, format!("{key} must be a boolean"))),
    }
}
