//! The tools offered to the model, by name, and which built-ins a configuration enables.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{Grep, ListDir, ReadFile, RunCommand, Tool, WriteFile};

/// Which built-ins to enable. Reading is always on; writing and running commands change the
/// machine, so each needs its own opt-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsConfig {
    /// Enable `write_file`.
    pub allow_write: bool,
    /// Enable `run_command`.
    pub allow_commands: bool,
    /// `run_command`'s time limit.
    pub command_timeout: Duration,
    /// `run_command`'s cap per output stream, in bytes.
    pub command_output_cap: usize,
}

impl Default for ToolsConfig {
    fn default() -> ToolsConfig {
        let command = RunCommand::default();
        ToolsConfig {
            allow_write: false,
            allow_commands: false,
            command_timeout: command.timeout,
            command_output_cap: command.output_cap,
        }
    }
}

/// An ordered set of tools with unique names.
///
/// Order matters: it is the order of the `tools` array in the request header, which is part of
/// header equality (session-core §7.2), so the same set always serializes the same way.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<Arc<dyn Tool>>,
}

impl ToolSet {
    /// No tools.
    pub fn new() -> ToolSet {
        ToolSet::default()
    }

    /// The built-ins `config` enables: `read_file`, `list_dir`, `grep`, then `write_file` and
    /// `run_command` when allowed.
    pub fn builtin(config: &ToolsConfig) -> ToolSet {
        let mut tools = ToolSet::new()
            .with(ReadFile::default())
            .with(ListDir::default())
            .with(Grep::default());
        if config.allow_write {
            tools = tools.with(WriteFile);
        }
        if config.allow_commands {
            tools = tools.with(RunCommand {
                timeout: config.command_timeout,
                output_cap: config.command_output_cap,
            });
        }
        tools
    }

    /// Adds `tool`, replacing a tool of the same name in place.
    pub fn with(mut self, tool: impl Tool + 'static) -> ToolSet {
        self.insert(Arc::new(tool));
        self
    }

    /// Adds a shared tool, replacing a tool of the same name in place.
    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        match self
            .tools
            .iter_mut()
            .find(|held| held.name() == tool.name())
        {
            Some(slot) => *slot = tool,
            None => self.tools.push(tool),
        }
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name)
    }

    /// The tools in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> + '_ {
        self.tools.iter()
    }

    /// The names in order, comma-separated (for error messages).
    pub fn names(&self) -> String {
        self.tools
            .iter()
            .map(|tool| tool.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The `tools` of a request header: `{name, description, parameters}` per tool, in order.
    pub fn header_schemas(&self) -> Vec<Value> {
        self.tools
            .iter()
            .map(|tool| {
                let mut schema = serde_json::Map::new();
                schema.insert("name".into(), Value::from(tool.name()));
                schema.insert("description".into(), Value::from(tool.description()));
                schema.insert("parameters".into(), tool.parameters());
                Value::Object(schema)
            })
            .collect()
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|tool| tool.name()))
            .finish()
    }
}
