//! `write_file` (opt-in): create or overwrite a file inside the workspace.

use serde_json::{json, Value};

use super::tool::string_arg;
use super::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput};

/// Writes a file inside the workspace, creating parent directories.
#[derive(Debug, Clone, Default)]
pub struct WriteFile;

impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        "Create or overwrite a file in the workspace with the given content."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root"},
                "content": {"type": "string", "description": "The complete new file content"}
            },
            "required": ["path", "content"]
        })
    }

    fn run<'a>(&'a self, input: ToolInput<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let path = string_arg(self.name(), input.arguments, "path")?;
            let content = string_arg(self.name(), input.arguments, "content")?;
            let resolved = input.workspace.resolve(path)?;
            if resolved == input.workspace.root() {
                return Err(ToolError::invalid(
                    self.name(),
                    "path names the workspace root",
                ));
            }
            if input.cancel.is_cancelled() {
                return Err(ToolError::Aborted);
            }
            if let Some(parent) = resolved.parent() {
                tokio::fs::create_dir_all(parent)
                    .await
                    .map_err(|error| ToolError::io("create the directory of", path, &error))?;
            }
            tokio::fs::write(&resolved, content.as_bytes())
                .await
                .map_err(|error| ToolError::io("write", path, &error))?;
            Ok(ToolOutput {
                text: format!(
                    "wrote {} bytes to {}",
                    content.len(),
                    input.workspace.relative(&resolved)
                ),
                meta: Some(json!({"bytes": content.len()})),
            })
        })
    }
}
