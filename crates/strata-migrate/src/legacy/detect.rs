//! Which generation a log file is: its name (`session.jsonl` = v0, `session.vN.jsonl` = vN,
//! persistence §2.4) and its header `version` must agree.
//!
//! The header `version` is looked at before anything else in the header, so a log written by a
//! newer harness is refused as "upgrade", naming its version, never reported as corrupt
//! (persistence §10 item 10). A file whose name is not a canonical generation name (for
//! example a copy called `log.jsonl`) is judged by its header alone.

use std::path::Path;

use serde_json::Value;
use strata_core::Generation;

use super::error::ReadError;
use super::js;
use strata_format::layout::parse_session_file_name;

/// What a file name says about a log: its generation (for canonical names) and encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameHint {
    /// The generation a canonical name implies (`None` for other names, or a generation number
    /// strata does not know, which [`detect_generation`] refuses).
    pub generation: Option<u32>,
    /// Whether the name ends in `.zstd` (dsh's) or `.zst` (the `zstd` tool's).
    pub zstd: bool,
}

/// Reads the generation and encoding hints from a path's file name.
pub fn name_hint(path: &Path) -> NameHint {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    match parse_session_file_name(&name) {
        Some((generation, zstd)) => NameHint {
            generation: Some(generation),
            zstd,
        },
        None => NameHint {
            generation: None,
            zstd: name.ends_with(".zstd") || name.ends_with(".zst"),
        },
    }
}

/// Decides a log's generation from its parsed first line and its name.
///
/// Refuses, in this order: a name or a header `version` newer than V4 (naming the version); a
/// header without a usable integer `version` (naming the generation the name implies); a name
/// and header that disagree.
pub fn detect_generation(
    file: &str,
    hint: NameHint,
    header: &Value,
) -> Result<Generation, ReadError> {
    let id = || {
        header
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("<unknown>")
            .to_owned()
    };
    let version = header.get("version");
    let numeric = version
        .and_then(js::number)
        .filter(|x| js::is_safe_integer(*x) && *x >= 0.0);
    if let Some(found) = numeric {
        if found > Generation::V4.format_version() as f64 {
            return Err(ReadError::NewerGeneration {
                file: file.to_owned(),
                id: id(),
                version: js::display_number(found),
            });
        }
    }
    let named = match hint.generation {
        Some(number) => match Generation::from_format_version(u64::from(number)) {
            Some(generation) => Some(generation),
            None => {
                return Err(ReadError::NewerGeneration {
                    file: file.to_owned(),
                    id: id(),
                    version: number.to_string(),
                })
            }
        },
        None => None,
    };
    let Some(found) = numeric.and_then(|x| Generation::from_format_version(x as u64)) else {
        return Err(ReadError::NotHeader {
            file: file.to_owned(),
            generation: named,
            detail: format!(
                "\"version\" must be a non-negative integer, got {}",
                js::display(version)
            ),
        });
    };
    match named {
        Some(named) if named != found => Err(ReadError::GenerationMismatch {
            file: file.to_owned(),
            named,
            found,
        }),
        _ => Ok(found),
    }
}

#[cfg(test)]
mod tests;
