//! `read_file`: a text file's lines, optionally a window of them, capped in size.
//!
//! The file is opened beneath the workspace root without blocking (see
//! [`Workspace`](super::Workspace): FIFOs, sockets and devices are refused on the open handle)
//! and read on Tokio's blocking pool.

use std::io::Read;

use serde_json::{json, Value};

use super::tool::{cap_text, optional_u64_arg, string_arg};
use super::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput};

/// Lines returned when the model gives no `limit`.
const DEFAULT_LIMIT: u64 = 2000;

/// Reads a file inside the workspace.
#[derive(Debug, Clone)]
pub struct ReadFile {
    /// Largest output in bytes; longer output is cut with a marker.
    pub max_bytes: usize,
}

impl Default for ReadFile {
    fn default() -> ReadFile {
        ReadFile {
            max_bytes: 256 * 1024,
        }
    }
}

impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        "Read a text file in the workspace. Optionally give `offset` (first line, 1-based) and `limit` (number of lines)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root"},
                "offset": {"type": "integer", "description": "First line to return, 1-based"},
                "limit": {"type": "integer", "description": "Number of lines to return"}
            },
            "required": ["path"]
        })
    }

    fn run<'a>(&'a self, input: ToolInput<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let path = string_arg(self.name(), input.arguments, "path")?;
            let offset = optional_u64_arg(self.name(), input.arguments, "offset")?
                .unwrap_or(1)
                .max(1);
            let limit =
                optional_u64_arg(self.name(), input.arguments, "limit")?.unwrap_or(DEFAULT_LIMIT);
            let relative = input.workspace.confine(path)?;
            let workspace = input.workspace.clone();
            let given = path.to_owned();
            let task = tokio::task::spawn_blocking(move || {
                let mut file = workspace.open_file(&relative, "read", &given)?;
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes)
                    .map_err(|error| ToolError::io("read", &given, &error))?;
                Ok::<_, ToolError>(bytes)
            });
            let bytes = tokio::select! {
                biased;
                _ = input.cancel.cancelled() => return Err(ToolError::Aborted),
                joined = task => joined.map_err(|error| ToolError::Failed {
                    detail: format!("read_file task failed: {error}"),
                })??,
            };
            let text = String::from_utf8_lossy(&bytes);
            let n_lines = text.lines().count() as u64;
            let first = offset - 1;
            let window: Vec<&str> = text
                .lines()
                .skip(usize::try_from(first).unwrap_or(usize::MAX))
                .take(usize::try_from(limit).unwrap_or(usize::MAX))
                .collect();
            let mut out = window.join("\n");
            let shown_end = first + window.len() as u64;
            if first > 0 || shown_end < n_lines {
                out.push_str(&format!(
                    "\n[lines {}-{} of {n_lines}]",
                    first + 1,
                    shown_end
                ));
            }
            Ok(ToolOutput {
                text: cap_text(&out, self.max_bytes),
                meta: Some(json!({"lines": n_lines, "bytes": bytes.len()})),
            })
        })
    }
}
