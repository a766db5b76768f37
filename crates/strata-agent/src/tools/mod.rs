//! Tools the model may call: the [`Tool`] seam, the [`Workspace`] every tool is confined to,
//! the [`ToolSet`] the loop dispatches from, and the built-ins a local coding agent needs
//! (`read_file`, `list_dir`, `grep`, and the opt-in `write_file` and `run_command`).

mod grep;
mod list_dir;
mod read_file;
mod run_command;
mod tool;
mod toolset;
mod workspace;
mod write_file;

pub use grep::Grep;
pub use list_dir::ListDir;
pub use read_file::ReadFile;
pub use run_command::RunCommand;
pub use tool::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput};
pub use toolset::{ToolSet, ToolsConfig};
pub use workspace::Workspace;
pub use write_file::WriteFile;

#[cfg(test)]
mod tests;
