//! The physical header line of v0, v1 and v2 logs (persistence §2.2, §2.10; session-core §2.3).
//!
//! The header line is storage metadata: `{"type":"session", version, id, createdAt, ...}`. This
//! module checks what the *line format* owns and maps the line to the logical header object the
//! core validates (at seed or restore time, in upstream's order):
//!
//! - v0/v1: `type` must be `"session"`, `delegationDepth` must be present, the retired
//!   `sandboxMode`/`approvalPolicy` fields refuse the header; unknown extra keys are tolerated
//!   and dropped, exactly as upstream's line-to-header mapping drops them.
//! - v2: the exact V3 key set (`isSeeded` instead of `seedLength`), `isSeeded` and
//!   `delegationDepth` present; unknown keys refuse the header.

use serde_json::{Map, Value};
use strata_core::Generation;

use super::error::ReadError;
use strata_format::codec::{RETIRED_HEADER_KEYS, V3_HEADER_KEYS};

/// The optional logical header keys of v0/v1, in upstream's mapping order.
const V0_OPTIONAL_KEYS: [&str; 6] = [
    "cwd",
    "parentSession",
    "seedLength",
    "origin",
    "delegationDepth",
    "agentPreset",
];

/// Checks a v0/v1/v2 header line's physical shape and returns the logical header object
/// (`type` removed) for the core's header rules.
pub fn logical_header(
    file: &str,
    generation: Generation,
    line: Value,
) -> Result<Map<String, Value>, ReadError> {
    let not_header = |detail: String| ReadError::NotHeader {
        file: file.to_owned(),
        generation: Some(generation),
        detail,
    };
    let Value::Object(mut fields) = line else {
        return Err(not_header("not a JSON object".into()));
    };
    if fields.get("type").and_then(Value::as_str) != Some("session") {
        return Err(not_header("\"type\" must be \"session\"".into()));
    }
    if let Some(retired) = RETIRED_HEADER_KEYS
        .iter()
        .find(|key| fields.contains_key(**key))
    {
        return Err(not_header(format!(
            "session header uses retired policy baseline fields (\"{retired}\")"
        )));
    }
    if generation >= Generation::V2 {
        if let Some(unknown) = fields
            .keys()
            .find(|key| !V3_HEADER_KEYS.contains(&key.as_str()))
        {
            return Err(not_header(format!("unknown key \"{unknown}\"")));
        }
        for required in ["version", "id", "createdAt", "isSeeded", "delegationDepth"] {
            if !fields.contains_key(required) {
                return Err(not_header(format!("missing key \"{required}\"")));
            }
        }
        fields.shift_remove("type");
        return Ok(fields);
    }
    if !fields.contains_key("delegationDepth") {
        return Err(not_header("missing key \"delegationDepth\"".into()));
    }
    Ok(map_v0_fields(&fields))
}

/// Upstream's line-to-header mapping for v0/v1: `version`, `id`, `createdAt` (kept even when
/// absent, which the header rules then refuse), then the known optional keys that are present.
pub fn map_v0_fields(line: &Map<String, Value>) -> Map<String, Value> {
    let mut header = Map::new();
    for key in ["version", "id", "createdAt"] {
        if let Some(value) = line.get(key) {
            header.insert(key.into(), value.clone());
        }
    }
    for key in V0_OPTIONAL_KEYS {
        if let Some(value) = line.get(key) {
            header.insert(key.into(), value.clone());
        }
    }
    header
}

#[cfg(test)]
mod tests;
