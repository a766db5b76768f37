//! `write_file` (opt-in): create or overwrite a file inside the workspace.
//!
//! Parent directories are created and the file is opened beneath the workspace root's handle
//! (see [`Workspace`]), so a path through a symlink that leads outside, dangling or not, is
//! refused rather than followed; a FIFO, socket or device at the path is refused, not written.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

use super::tool::string_arg;
use super::workspace::{Access, Opened};
use super::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput, Workspace};

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
            let relative = input.workspace.confine(path)?;
            if relative == Path::new(".") {
                return Err(ToolError::invalid(
                    self.name(),
                    "path names the workspace root",
                ));
            }
            if input.cancel.is_cancelled() {
                return Err(ToolError::Aborted);
            }
            let workspace = input.workspace.clone();
            let given = path.to_owned();
            let bytes = content.as_bytes().to_vec();
            let shown = relative.display().to_string();
            let task =
                tokio::task::spawn_blocking(move || write(&workspace, &relative, &given, &bytes));
            // The write is not interrupted once it started: a cancelled turn waits for a bounded
            // write to a regular file rather than leaving it half done.
            task.await.map_err(|error| ToolError::Failed {
                detail: format!("write_file task failed: {error}"),
            })??;
            Ok(ToolOutput {
                text: format!("wrote {} bytes to {shown}", content.len()),
                meta: Some(json!({"bytes": content.len()})),
            })
        })
    }
}

/// Creates `relative`'s missing parent directories, then replaces its content with `bytes`. The
/// open creates the file when missing but does not truncate: only once `fstat` on the handle
/// says it is a regular file is it truncated and written.
fn write(
    workspace: &Workspace,
    relative: &Path,
    given: &str,
    bytes: &[u8],
) -> Result<(), ToolError> {
    if let Some(parent) = relative
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        workspace.create_dir_all(parent, "create the directory of", given)?;
    }
    let Opened::File(mut file) = workspace.open(relative, Access::Write, "write", given)? else {
        return Err(ToolError::Io {
            op: "write".into(),
            path: given.to_owned(),
            detail: "is a directory".into(),
        });
    };
    file.set_len(0)
        .and_then(|()| file.write_all(bytes))
        .map_err(|error| ToolError::io("write", given, &error))
}
