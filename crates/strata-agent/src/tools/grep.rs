//! `grep`: search file contents under a directory with ripgrep's libraries — `grep` matches
//! line by line and skips binary files, `ignore` supplies the `.gitignore` and glob matchers.
//!
//! The walk is our own rather than `ignore`'s, because `ignore` walks by path: between listing
//! a directory and opening what it listed, a directory can be swapped for a symlink to outside
//! the workspace, and a path-based walk would follow it. Here every directory and file is
//! opened beneath the workspace root's handle (see [`Workspace`]), symlinks met in the walk
//! are not followed, and FIFOs, sockets and devices are skipped by their type on the listing
//! and again on the open handle. Ignore rules come from the workspace alone (`.gitignore`,
//! `.ignore` and `.git/info/exclude` in the searched directory and every directory above it up
//! to the root, hidden names skipped), never from files outside it, so a search depends on
//! nothing outside the workspace.
//!
//! The search is blocking I/O, so it runs on Tokio's blocking pool; it checks the cancellation
//! token between entries and on every read, so it stops inside a long file too. Memory stays
//! bounded on a huge file: lines longer than [`MAX_LINE_BYTES`] make the searcher skip the file.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, FileType};
use grep::regex::{RegexMatcher, RegexMatcherBuilder};
use grep::searcher::sinks::UTF8;
use grep::searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::{Override, OverrideBuilder};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::tool::{optional_bool_arg, optional_string_arg, string_arg};
use super::workspace::{Access, Opened};
use super::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput, Workspace};

/// Longest line searched, in bytes; a file with a longer line is skipped, so memory stays
/// bounded on a huge file without line breaks.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Largest ignore file read.
const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

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
    /// The path as the model gave it, for errors.
    path: String,
    /// The file or directory searched, relative to the workspace root.
    relative: PathBuf,
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
            let path = optional_string_arg(name, input.arguments, "path")?.unwrap_or(".");
            let search = Search {
                pattern: string_arg(name, input.arguments, "pattern")?.to_owned(),
                case_insensitive: optional_bool_arg(name, input.arguments, "case_insensitive")?
                    .unwrap_or(false),
                glob: optional_string_arg(name, input.arguments, "glob")?.map(str::to_owned),
                path: path.to_owned(),
                relative: input.workspace.confine(path)?,
                workspace: input.workspace.clone(),
                max_matches: self.max_matches,
                max_line_chars: self.max_line_chars,
                cancel: input.cancel.clone(),
            };
            let task = tokio::task::spawn_blocking(move || search.run());
            tokio::select! {
                biased;
                _ = input.cancel.cancelled() => Err(ToolError::Aborted),
                joined = task => joined.unwrap_or_else(|error| Err(ToolError::Failed {
                    detail: format!("grep task failed: {error}"),
                })),
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
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .heap_limit(Some(MAX_LINE_BYTES))
            .build();
        let mut found = Found::default();
        match self
            .workspace
            .open(&self.relative, Access::Read, "search", &self.path)?
        {
            // A file named explicitly is searched whatever the ignore rules say, as ripgrep does.
            Opened::File(file) => {
                self.search(&mut searcher, &matcher, file, &self.relative, &mut found)
            }
            Opened::Dir(dir) => self.walk(&mut searcher, &matcher, dir, &mut found)?,
        }
        if self.cancel.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let mut text = found.lines.join("\n");
        if found.n_matches > found.lines.len() {
            text.push_str(&format!(
                "\n[... {} more matches not shown ...]",
                found.n_matches - found.lines.len()
            ));
        }
        if found.n_matches == 0 {
            text = "no matches".into();
        }
        Ok(ToolOutput {
            text,
            meta: Some(json!({"matches": found.n_matches, "files": found.n_files})),
        })
    }

    /// Searches the tree under the directory `self.relative`, depth first, siblings by name.
    /// Every directory and file is opened by its path from the workspace root, beneath the
    /// root's handle, so a directory swapped for a symlink mid-walk leads nowhere outside.
    fn walk(
        &self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        dir: Dir,
        found: &mut Found,
    ) -> Result<(), ToolError> {
        let base = if self.relative == Path::new(".") {
            PathBuf::new()
        } else {
            self.relative.clone()
        };
        let glob_root = self.workspace.root().join(&base);
        let overrides = match &self.glob {
            Some(glob) => {
                let mut overrides = OverrideBuilder::new(&glob_root);
                overrides
                    .add(glob)
                    .map_err(|error| ToolError::invalid("grep", format!("bad glob: {error}")))?;
                overrides
                    .build()
                    .map_err(|error| ToolError::invalid("grep", format!("bad glob: {error}")))?
            }
            None => Override::empty(),
        };
        // The rules of every directory from the workspace root down to the one being read; a
        // directory's rules apply to everything under it, the deepest deciding.
        let mut rules: Vec<Gitignore> = base
            .ancestors()
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .map(|ancestor| self.ignore_rules(ancestor))
            .collect();
        let mut stack = vec![Frame::read(&dir, base)];
        while let Some(frame) = stack.last_mut() {
            if self.cancel.is_cancelled() {
                return Err(ToolError::Aborted);
            }
            let Some((name, kind)) = frame.entries.next() else {
                stack.pop();
                rules.pop();
                continue;
            };
            // Symlinks are not followed, and FIFOs, sockets and devices are not opened.
            let is_dir = kind.is_dir();
            if !is_dir && !kind.is_file() {
                continue;
            }
            let relative = frame.relative.join(&name);
            if !self.included(&relative, &name, is_dir, &rules, &overrides) {
                continue;
            }
            if is_dir {
                // Opened again from the root: whatever is at this path now, not what the
                // listing saw; a symlink there now is followed only within the workspace.
                if let Ok(Opened::Dir(dir)) =
                    self.workspace
                        .open(&relative, Access::Read, "search", &self.path)
                {
                    rules.push(self.ignore_rules(&relative));
                    stack.push(Frame::read(&dir, relative));
                }
            } else if let Ok(file) = self.workspace.open_file(&relative, "search", &self.path) {
                self.search(searcher, matcher, file, &relative, found);
            }
        }
        Ok(())
    }

    /// Whether the walk searches `relative` (named `name`): a `glob` decides first, then the
    /// deepest ignore rule that matches, then hidden names (a leading `.`) are skipped.
    fn included(
        &self,
        relative: &Path,
        name: &OsStr,
        is_dir: bool,
        rules: &[Gitignore],
        overrides: &Override,
    ) -> bool {
        let path = self.workspace.root().join(relative);
        let by_glob = overrides.matched(&path, is_dir);
        if by_glob.is_ignore() {
            return false;
        }
        if by_glob.is_whitelist() {
            return true;
        }
        for rule in rules.iter().rev() {
            let by_rule = rule.matched(&path, is_dir);
            if by_rule.is_ignore() {
                return false;
            }
            if by_rule.is_whitelist() {
                return true;
            }
        }
        !name.as_encoded_bytes().starts_with(b".")
    }

    /// The ignore rules of the directory `relative`: its `.git/info/exclude`, `.gitignore` and
    /// `.ignore`, in rising precedence (a later line wins). Each is read beneath the root, a
    /// regular file of at most [`MAX_IGNORE_FILE_BYTES`]; one that is missing or unreadable
    /// adds nothing, and so does a line that does not parse.
    fn ignore_rules(&self, relative: &Path) -> Gitignore {
        let mut builder = GitignoreBuilder::new(self.workspace.root().join(relative));
        for name in [".git/info/exclude", ".gitignore", ".ignore"] {
            let Ok(file) = self.workspace.open_file(&relative.join(name), "read", name) else {
                continue;
            };
            let mut text = Vec::new();
            if file
                .take(MAX_IGNORE_FILE_BYTES)
                .read_to_end(&mut text)
                .is_err()
            {
                continue;
            }
            for line in String::from_utf8_lossy(&text).lines() {
                let _ = builder.add_line(None, line);
            }
        }
        builder.build().unwrap_or_else(|_| Gitignore::empty())
    }

    /// Searches one open file, shown as `relative`. A file that cannot be searched (binary,
    /// not UTF-8, a line past [`MAX_LINE_BYTES`], a read error) is skipped, as ripgrep skips it
    /// with a warning; matches found before the failure stay.
    fn search(
        &self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        file: File,
        relative: &Path,
        found: &mut Found,
    ) {
        let shown = relative.display().to_string();
        let mut in_file = 0usize;
        let reader = Cancellable {
            inner: file,
            cancel: &self.cancel,
        };
        let result = searcher.search_reader(
            matcher,
            reader,
            UTF8(|line_number, line| {
                found.n_matches += 1;
                in_file += 1;
                if found.lines.len() < self.max_matches {
                    let line = line.trim_end_matches(['\n', '\r']);
                    let cut: String = line.chars().take(self.max_line_chars).collect();
                    let marker = if cut.len() < line.len() { " […]" } else { "" };
                    found
                        .lines
                        .push(format!("{shown}:{line_number}:{cut}{marker}"));
                }
                Ok(true)
            }),
        );
        if result.is_ok() && in_file > 0 {
            found.n_files += 1;
        }
    }
}

/// Matches found so far.
#[derive(Debug, Default)]
struct Found {
    /// The first `max_matches` matching lines, formatted.
    lines: Vec<String>,
    n_matches: usize,
    n_files: usize,
}

/// A directory being walked: its path from the workspace root and its entries not yet visited.
struct Frame {
    relative: PathBuf,
    entries: std::vec::IntoIter<(OsString, FileType)>,
}

impl Frame {
    /// The entries of `dir`, by name, with their types as the listing gives them (a symlink is
    /// a symlink). An entry that cannot be read is left out.
    fn read(dir: &Dir, relative: PathBuf) -> Frame {
        let mut entries: Vec<(OsString, FileType)> = dir
            .entries()
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|entry| Some((entry.file_name(), entry.file_type().ok()?)))
                    .collect()
            })
            .unwrap_or_default();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Frame {
            relative,
            entries: entries.into_iter(),
        }
    }
}

/// A reader that fails once the turn is cancelled, so a search stops inside a long file.
struct Cancellable<'a, R> {
    inner: R,
    cancel: &'a CancellationToken,
}

impl<R: Read> Read for Cancellable<'_, R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(std::io::Error::other("search cancelled"));
        }
        self.inner.read(buffer)
    }
}
