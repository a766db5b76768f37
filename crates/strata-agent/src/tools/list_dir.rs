//! `list_dir`: the entries of one directory, sorted, directories marked with a trailing `/`.

use serde_json::{json, Value};

use super::tool::optional_string_arg;
use super::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput};

/// Lists a directory inside the workspace.
#[derive(Debug, Clone)]
pub struct ListDir {
    /// Most entries listed; the rest are counted, not shown.
    pub max_entries: usize,
}

impl Default for ListDir {
    fn default() -> ListDir {
        ListDir { max_entries: 1000 }
    }
}

impl Tool for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }

    fn description(&self) -> &str {
        "List the entries of a directory in the workspace (directories end with /)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory, relative to the workspace root (default: the root)"}
            }
        })
    }

    fn run<'a>(&'a self, input: ToolInput<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let path = optional_string_arg(self.name(), input.arguments, "path")?.unwrap_or(".");
            let resolved = input.workspace.resolve(path)?;
            let mut reader = tokio::fs::read_dir(&resolved)
                .await
                .map_err(|error| ToolError::io("list", path, &error))?;
            let mut names = Vec::new();
            loop {
                let entry = tokio::select! {
                    biased;
                    _ = input.cancel.cancelled() => return Err(ToolError::Aborted),
                    entry = reader.next_entry() => entry.map_err(|error| ToolError::io("list", path, &error))?,
                };
                let Some(entry) = entry else { break };
                let mut name = entry.file_name().to_string_lossy().into_owned();
                let is_dir = entry
                    .file_type()
                    .await
                    .map(|kind| kind.is_dir())
                    .unwrap_or(false);
                if is_dir {
                    name.push('/');
                }
                names.push(name);
            }
            names.sort();
            let n_entries = names.len();
            let mut text = names
                .iter()
                .take(self.max_entries)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n");
            if n_entries > self.max_entries {
                text.push_str(&format!(
                    "\n[... {} more entries not shown ...]",
                    n_entries - self.max_entries
                ));
            }
            if n_entries == 0 {
                text = "(empty directory)".into();
            }
            Ok(ToolOutput {
                text,
                meta: Some(json!({"entries": n_entries})),
            })
        })
    }
}
