//! Upstream's released migration chain (v0/v1/v2 → V3) as a test helper: "what does dsh's own
//! chain write for this log, or why does it refuse?".
//!
//! The driver is `migrate.mjs` of the released-format oracle (see the parent module): it
//! composes upstream's published edges `dsh-session-format-v0-to-v1`, `-v1-to-v2` and
//! `-v2-to-v3` the way upstream's catalog does and writes the V3 log, optionally the v2 log
//! of the intermediate hop. One `node` process per log.
//!
//! Caveat (the oracle's README): the v1→v2 edge needs a stream accumulator upstream never
//! published; the oracle installs a stand-in, so the `stream` of a migrated assistant message
//! is the stand-in's, not upstream's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::FormatOracle;

/// What upstream's chain did with one log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    /// The source file.
    pub file: PathBuf,
    /// The V3 log it wrote, when it migrated.
    pub output: Option<PathBuf>,
    /// Its refusal (`SessionFormatError: …` or `SessionFormatUnsupportedMigrationError: …`).
    pub error: Option<String>,
}

impl Migration {
    /// Whether upstream migrated the log.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// The refusal without its error-class name and without the protocol's wrapping texts
    /// (`<edge> refuses this format vN Session: `, `Session migration from vX to vY refuses
    /// the transformed artifact: `): the rule's own text, which strata's refusal must contain.
    pub fn reason(&self) -> Option<&str> {
        self.error.as_deref().map(refusal_detail)
    }
}

/// The innermost text of an upstream refusal (see [`Migration::reason`]).
pub fn refusal_detail(error: &str) -> &str {
    let mut text = error;
    for class in [
        "SessionFormatUnsupportedMigrationError: ",
        "SessionFormatError: ",
        "TypeError: ",
        "Error: ",
    ] {
        if let Some(rest) = text.strip_prefix(class) {
            text = rest;
            break;
        }
    }
    loop {
        let before = text;
        if let Some(position) = text.find(" refuses the transformed artifact: ") {
            if text.starts_with("Session migration from v") {
                text = &text[position + " refuses the transformed artifact: ".len()..];
            }
        }
        if text.starts_with("@deepseek-ai/dsh-session-format-") {
            if let Some(position) = text.find(" Session: ") {
                text = &text[position + " Session: ".len()..];
            } else if let Some(position) = text.find(" Session header: ") {
                text = &text[position + " Session header: ".len()..];
            }
        }
        if text == before {
            return text;
        }
    }
}

impl FormatOracle {
    /// Runs upstream's chain on `input`, writing the V3 log to `output` (and the v2 log of the
    /// intermediate hop to `v2_output` for a v0/v1 source, when given).
    pub fn migrate(
        &self,
        input: &Path,
        output: &Path,
        v2_output: Option<&Path>,
    ) -> Result<Migration, String> {
        let mut command = Command::new("node");
        command
            .arg(self.home().join("migrate.mjs"))
            .arg(input)
            .arg(output);
        if let Some(v2) = v2_output {
            command.arg(v2);
        }
        let ran = command
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|error| format!("cannot run node: {error}"))?;
        let stdout = String::from_utf8_lossy(&ran.stdout);
        let line = stdout
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .ok_or_else(|| {
                format!(
                    "migrate.mjs printed nothing for {} (exit {:?}): {}",
                    input.display(),
                    ran.status.code(),
                    String::from_utf8_lossy(&ran.stderr)
                )
            })?;
        let value: Value = serde_json::from_str(line)
            .map_err(|error| format!("migrate.mjs printed {line:?}: {error}"))?;
        let ok = value.get("ok").and_then(Value::as_bool) == Some(true);
        Ok(Migration {
            file: input.to_path_buf(),
            output: ok.then(|| output.to_path_buf()),
            error: (!ok).then(|| {
                value
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("refused without a message")
                    .to_owned()
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::refusal_detail;

    #[test]
    fn the_protocol_wrapping_is_taken_off_refusals() {
        assert_eq!(
            refusal_detail(
                "SessionFormatUnsupportedMigrationError: Session migration from v0 to v2 refuses \
                 the transformed artifact: tool/result replacement is outside an open turn"
            ),
            "tool/result replacement is outside an open turn"
        );
        assert_eq!(
            refusal_detail(
                "SessionFormatUnsupportedMigrationError: @deepseek-ai/dsh-session-format-v0-to-v1 \
                 refuses this format v0 Session: user/message 0 data lacks required member \"id\""
            ),
            "user/message 0 data lacks required member \"id\""
        );
        assert_eq!(
            refusal_detail(
                "SessionFormatError: released Session row 2 has seq gap (expected 1, got 2)"
            ),
            "released Session row 2 has seq gap (expected 1, got 2)"
        );
    }
}
