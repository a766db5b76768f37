//! `list_dir`: the entries of one directory, sorted, directories marked with a trailing `/`.
//!
//! The directory is opened beneath the workspace root and read through its handle on Tokio's
//! blocking pool, checking the cancellation token between entries.

use std::path::Path;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::tool::optional_string_arg;
use super::workspace::{Access, Opened};
use super::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput, Workspace};

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
            let relative = input.workspace.confine(path)?;
            let workspace = input.workspace.clone();
            let cancel = input.cancel.clone();
            let given = path.to_owned();
            let task =
                tokio::task::spawn_blocking(move || list(&workspace, &relative, &given, &cancel));
            let mut names = tokio::select! {
                biased;
                _ = input.cancel.cancelled() => return Err(ToolError::Aborted),
                joined = task => joined.map_err(|error| ToolError::Failed {
                    detail: format!("list_dir task failed: {error}"),
                })??,
            };
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

/// The names in `relative`, directories marked. An entry's type comes from the directory
/// listing (or an `fstatat` beneath the directory that does not follow symlinks), so a symlink
/// is listed as itself and nothing it points to is touched.
fn list(
    workspace: &Workspace,
    relative: &Path,
    given: &str,
    cancel: &CancellationToken,
) -> Result<Vec<String>, ToolError> {
    let dir = match workspace.open(relative, Access::Read, "list", given)? {
        Opened::Dir(dir) => dir,
        Opened::File(_) => {
            return Err(ToolError::Io {
                op: "list".into(),
                path: given.to_owned(),
                detail: "not a directory".into(),
            })
        }
    };
    let entries = dir
        .entries()
        .map_err(|error| workspace.error("list", given, &error))?;
    let mut names = Vec::new();
    for entry in entries {
        if cancel.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let entry = entry.map_err(|error| workspace.error("list", given, &error))?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            name.push('/');
        }
        names.push(name);
    }
    Ok(names)
}
