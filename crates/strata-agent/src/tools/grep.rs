//! `grep`: search file contents under a directory with ripgrep's libraries — `ignore` walks the
//! tree honouring `.gitignore` and hidden-file rules, `grep` matches line by line and skips
//! binary files.
//!
//! The search is blocking I/O, so it runs on Tokio's blocking pool and checks the cancellation
//! token between files.

use std::path::PathBuf;

use grep::regex::RegexMatcherBuilder;
use grep::searcher::sinks::UTF8;
use grep::searcher::{BinaryDetection, SearcherBuilder};
use ignore::overrides::OverrideBuilder;
use ignore::WalkBuilder;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::tool::{optional_bool_arg, optional_string_arg, string_arg};
use super::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput, Workspace};

/// Searches files in the workspace for a regular expression.
#[derive(Debug, Clone)]
pub struct Grep {
    /// Most matching lines reported.
    pub max_matches: usize,
    /// Longest line shown, in chars; longer lines are cut.
    pub max_line_chars: usize,
}

impl Default for Grep {
    fn default() -> Grep {
        Grep {
            max_matches: 200,
            max_line_chars: 300,
        }
    }
}

struct Search {
    pattern: String,
    case_insensitive: bool,
    glob: Option<String>,
    root: PathBuf,
    workspace: Workspace,
    max_matches: usize,
    max_line_chars: usize,
    cancel: CancellationToken,
}

impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Search file contents in the workspace for a regular expression (Rust regex syntax). Honours .gitignore. Returns path:line:text for each matching line."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression"},
                "path": {"type": "string", "description": "File or directory to search, relative to the workspace root (default: the root)"},
                "glob": {"type": "string", "description": "Only search files matching this glob, e.g. *.rs"},
                "case_insensitive": {"type": "boolean", "description": "Ignore case"}
            },
            "required": ["pattern"]
        })
    }

    fn run<'a>(&'a self, input: ToolInput<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let name = self.name();
            let search = Search {
                pattern: string_arg(name, input.arguments, "pattern")?.to_owned(),
                case_insensitive: optional_bool_arg(name, input.arguments, "case_insensitive")?
                    .unwrap_or(false),
                glob: optional_string_arg(name, input.arguments, "glob")?.map(str::to_owned),
                root: input
                    .workspace
                    .resolve(optional_string_arg(name, input.arguments, "path")?.unwrap_or("."))?,
                workspace: input.workspace.clone(),
                max_matches: self.max_matches,
                max_line_chars: self.max_line_chars,
                cancel: input.cancel.clone(),
            };
            match tokio::task::spawn_blocking(move || search.run()).await {
                Ok(result) => result,
                Err(error) => Err(ToolError::Failed {
                    detail: format!("grep task failed: {error}"),
                }),
            }
        })
    }
}

impl Search {
    fn run(self) -> Result<ToolOutput, ToolError> {
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(self.case_insensitive)
            .build(&self.pattern)
            .map_err(|error| ToolError::invalid("grep", format!("bad pattern: {error}")))?;
        let mut walk = WalkBuilder::new(&self.root);
        walk.require_git(false).sort_by_file_name(|a, b| a.cmp(b));
        if let Some(glob) = &self.glob {
            let mut overrides = OverrideBuilder::new(&self.root);
            overrides
                .add(glob)
                .map_err(|error| ToolError::invalid("grep", format!("bad glob: {error}")))?;
            let overrides = overrides
                .build()
                .map_err(|error| ToolError::invalid("grep", format!("bad glob: {error}")))?;
            walk.overrides(overrides);
        }
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        let mut lines = Vec::new();
        let mut n_matches = 0usize;
        let mut n_files = 0usize;
        for entry in walk.build() {
            if self.cancel.is_cancelled() {
                return Err(ToolError::Aborted);
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                continue;
            }
            // A symlink inside the tree may point outside the workspace: skip it.
            let Ok(canonical) = std::fs::canonicalize(entry.path()) else {
                continue;
            };
            if !canonical.starts_with(self.workspace.root()) {
                continue;
            }
            let shown = self.workspace.relative(entry.path());
            let mut in_file = 0usize;
            let result = searcher.search_path(
                &matcher,
                entry.path(),
                UTF8(|line_number, line| {
                    n_matches += 1;
                    in_file += 1;
                    if lines.len() < self.max_matches {
                        let line = line.trim_end_matches(['\n', '\r']);
                        let cut: String = line.chars().take(self.max_line_chars).collect();
                        let marker = if cut.len() < line.len() { " […]" } else { "" };
                        lines.push(format!("{shown}:{line_number}:{cut}{marker}"));
                    }
                    Ok(true)
                }),
            );
            // Unreadable files are skipped, as ripgrep does (with a warning there).
            if result.is_ok() && in_file > 0 {
                n_files += 1;
            }
        }
        let mut text = lines.join("\n");
        if n_matches > lines.len() {
            text.push_str(&format!(
                "\n[... {} more matches not shown ...]",
                n_matches - lines.len()
            ));
        }
        if n_matches == 0 {
            text = "no matches".into();
        }
        Ok(ToolOutput {
            text,
            meta: Some(json!({"matches": n_matches, "files": n_files})),
        })
    }
}
