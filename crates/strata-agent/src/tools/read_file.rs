//! `read_file`: a text file's lines, optionally a window of them, capped in size.
//!
//! The file is streamed a chunk at a time and reading stops as soon as the window is full or
//! the byte cap is reached, so a window near the start of a file of any size costs one chunk,
//! and the result says what was shown without claiming a line count it did not make. Lines
//! before the window are skipped without being kept. The reading runs on Tokio's blocking pool
//! and checks the cancellation token between chunks; the open cannot block (see
//! [`Workspace`](super::Workspace): FIFOs, sockets and devices are refused on the open handle),
//! so a cancelled turn never waits on this tool.

use std::io::Read;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::tool::{optional_u64_arg, string_arg};
use super::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput};

/// Lines returned when the model gives no `limit`.
const DEFAULT_LIMIT: u64 = 2000;

/// Bytes read from the file per step.
const CHUNK_BYTES: usize = 64 * 1024;

/// Reads a file inside the workspace.
#[derive(Debug, Clone)]
pub struct ReadFile {
    /// Most bytes of the file shown; reading stops there and the output says the line was cut.
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
            let first = optional_u64_arg(self.name(), input.arguments, "offset")?
                .unwrap_or(1)
                .max(1);
            let limit =
                optional_u64_arg(self.name(), input.arguments, "limit")?.unwrap_or(DEFAULT_LIMIT);
            if limit == 0 {
                return Err(ToolError::invalid(self.name(), "limit must be at least 1"));
            }
            let relative = input.workspace.confine(path)?;
            let window = Window {
                first,
                limit,
                max_bytes: self.max_bytes,
            };
            let workspace = input.workspace.clone();
            let cancel = input.cancel.clone();
            let given = path.to_owned();
            let task = tokio::task::spawn_blocking(move || {
                let file = workspace.open_file(&relative, "read", &given)?;
                match read_window(file, &window, &cancel) {
                    Ok(shown) => Ok(shown),
                    Err(_) if cancel.is_cancelled() => Err(ToolError::Aborted),
                    Err(error) => Err(ToolError::io("read", &given, &error)),
                }
            });
            let shown = tokio::select! {
                biased;
                _ = input.cancel.cancelled() => return Err(ToolError::Aborted),
                joined = task => joined.map_err(|error| ToolError::Failed {
                    detail: format!("read_file task failed: {error}"),
                })??,
            };
            Ok(shown.into_output(&window))
        })
    }
}

/// The lines asked for and the byte cap.
#[derive(Debug, Clone, Copy)]
struct Window {
    /// First line, 1-based.
    first: u64,
    /// Most lines (at least one).
    limit: u64,
    /// Most bytes of line content kept.
    max_bytes: usize,
}

/// Why reading stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The file ended; it has `n_lines` lines.
    Eof { n_lines: u64 },
    /// The window was full, or the byte cap fell at the end of a shown line, and at least one
    /// more line follows.
    Limit,
    /// The byte cap was reached inside the last shown line, which continues.
    Cap,
}

/// What was read.
#[derive(Debug)]
struct Shown {
    /// The shown lines' bytes, joined by `\n`, without line terminators.
    text: Vec<u8>,
    /// Lines shown, the last one possibly cut.
    n_shown: u64,
    end: End,
    /// Bytes read from the file.
    n_read: u64,
}

impl Shown {
    fn into_output(self, window: &Window) -> ToolOutput {
        let last = window.first + self.n_shown.saturating_sub(1);
        let range = format!("{}-{last}", window.first);
        let marker = match self.end {
            End::Eof { n_lines } if window.first == 1 && self.n_shown == n_lines => None,
            End::Eof { n_lines } if self.n_shown == 0 => Some(format!(
                "[no lines from line {}: the file has {n_lines} lines]",
                window.first
            )),
            End::Eof { n_lines } => Some(format!("[lines {range} of {n_lines}]")),
            End::Limit => Some(format!("[lines {range}; more follow]")),
            End::Cap => Some(format!(
                "[lines {range}; line {last} cut at the {}-byte limit; more follow]",
                window.max_bytes
            )),
        };
        let mut text = String::from_utf8_lossy(&self.text).into_owned();
        if let Some(marker) = marker {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&marker);
        }
        let mut meta = json!({
            "lines": self.n_shown,
            "bytesRead": self.n_read,
            "eof": matches!(self.end, End::Eof { .. }),
        });
        if let End::Eof { n_lines } = self.end {
            meta["totalLines"] = json!(n_lines);
        }
        ToolOutput {
            text,
            meta: Some(meta),
        }
    }
}

/// Reads `file` until `window` is shown: lines split at `\n` (a `\r` before it dropped, as
/// `str::lines` does), the lines before the window skipped without being kept.
fn read_window(
    mut file: impl Read,
    window: &Window,
    cancel: &CancellationToken,
) -> std::io::Result<Shown> {
    let mut buffer = vec![0u8; CHUNK_BYTES];
    let mut text = Vec::new();
    let mut n_read = 0u64;
    let mut n_shown = 0u64;
    // The line the next byte belongs to, and whether a byte of it was seen.
    let mut line = 1u64;
    let mut in_line = false;
    // Where the current line's bytes start in `text`.
    let mut line_start = 0usize;
    loop {
        if cancel.is_cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        let n_chunk = match file.read(&mut buffer) {
            Ok(0) => {
                if in_line && line >= window.first {
                    n_shown += 1;
                }
                let n_lines = if in_line { line } else { line - 1 };
                let end = End::Eof { n_lines };
                return Ok(Shown {
                    text,
                    n_shown,
                    end,
                    n_read,
                });
            }
            Ok(n_chunk) => n_chunk,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        n_read += n_chunk as u64;
        let mut rest = &buffer[..n_chunk];
        while !rest.is_empty() {
            let shown = line >= window.first;
            if !in_line {
                if shown && n_shown == window.limit {
                    return Ok(Shown {
                        text,
                        n_shown,
                        end: End::Limit,
                        n_read,
                    });
                }
                in_line = true;
                if shown && n_shown > 0 {
                    // The cap fell exactly at the end of a shown line: the lines shown are
                    // whole, and more follow.
                    if text.len() == window.max_bytes {
                        return Ok(Shown {
                            text,
                            n_shown,
                            end: End::Limit,
                            n_read,
                        });
                    }
                    text.push(b'\n');
                }
                line_start = text.len();
            }
            let newline = memchr::memchr(b'\n', rest);
            let piece = &rest[..newline.unwrap_or(rest.len())];
            if shown {
                let room = window.max_bytes - text.len();
                if piece.len() > room {
                    text.extend_from_slice(&piece[..room]);
                    drop_partial_char(&mut text, line_start);
                    return Ok(Shown {
                        text,
                        n_shown: n_shown + 1,
                        end: End::Cap,
                        n_read,
                    });
                }
                text.extend_from_slice(piece);
            }
            match newline {
                Some(at) => {
                    if shown {
                        if text.len() > line_start && text.last() == Some(&b'\r') {
                            text.pop();
                        }
                        n_shown += 1;
                    }
                    line += 1;
                    in_line = false;
                    rest = &rest[at + 1..];
                }
                None => rest = &[],
            }
        }
    }
}

/// Drops a UTF-8 sequence the byte cap cut in two at the end of `text` (not before `floor`), so
/// the output ends on a whole character rather than a replacement character.
fn drop_partial_char(text: &mut Vec<u8>, floor: usize) {
    let tail_start = text.len().saturating_sub(3).max(floor);
    let Some(lead) = (tail_start..text.len())
        .rev()
        .find(|&at| text[at] & 0xC0 != 0x80)
    else {
        return;
    };
    if let Err(error) = std::str::from_utf8(&text[lead..]) {
        if error.error_len().is_none() {
            text.truncate(lead);
        }
    }
}
