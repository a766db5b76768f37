//! The session header: storage metadata that is not an event (session-core §2.3).
//!
//! The header is a validated JSON object. Keeping it as an object (not a
//! struct) preserves key order and unknown extension keys, so a header read
//! from disk is written back byte for byte; typed accessors read the fields
//! validation vouched for.

use serde_json::{Map, Value};

use crate::generation::Generation;
use crate::json::{is_lossless, js_non_negative_safe_integer, non_negative_safe_integer};
use crate::rule::{AcceptError, Rule};

/// A validated session header.
///
/// Invariant: every field listed in §2.3 that is present has its documented
/// type; `version` names `generation`.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionHeader {
    fields: Map<String, Value>,
    generation: Generation,
}

/// The fields a new header is built from.
#[derive(Clone, Debug, Default)]
pub struct HeaderSpec {
    /// The session id.
    pub id: String,
    /// Creation time, epoch milliseconds.
    pub created_at: u64,
    /// The working directory (absolute).
    pub cwd: Option<String>,
    /// The parent session of a fork.
    pub parent_session: Option<String>,
    /// Whether the session starts with fork-inherited history.
    pub is_seeded: bool,
    /// `Some("subagent")` for delegated sessions.
    pub origin: Option<String>,
    /// 0 for top-level sessions, parent + 1 for subagents.
    pub delegation_depth: u64,
    /// The agent preset name.
    pub agent_preset: Option<String>,
}

impl SessionHeader {
    /// Builds a V3 header in dsh's key order.
    pub fn new(spec: HeaderSpec) -> Result<SessionHeader, AcceptError> {
        SessionHeader::new_in(spec, Generation::NATIVE)
    }

    /// Builds a header of `generation` (V2 and later: `isSeeded` and `delegationDepth`).
    pub fn new_in(spec: HeaderSpec, generation: Generation) -> Result<SessionHeader, AcceptError> {
        let mut fields = Map::new();
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                fields.insert(key.into(), value);
            }
        };
        put("version", Some(Value::from(generation.format_version())));
        put("id", Some(Value::from(spec.id)));
        put("createdAt", Some(Value::from(spec.created_at)));
        let cwd = spec.cwd.map(Value::from);
        let parent = spec.parent_session.map(Value::from);
        let origin = spec.origin.map(Value::from);
        let preset = spec.agent_preset.map(Value::from);
        if generation.is_v4() {
            // dsh's V4 writer order (docs/format-v4.md §1.3).
            put("cwd", cwd);
            put("parentSession", parent);
            put("isSeeded", Some(Value::from(spec.is_seeded)));
            put("origin", origin);
            put("delegationDepth", Some(Value::from(spec.delegation_depth)));
            put("agentPreset", preset);
        } else {
            put("isSeeded", Some(Value::from(spec.is_seeded)));
            put("delegationDepth", Some(Value::from(spec.delegation_depth)));
            put("cwd", cwd);
            put("parentSession", parent);
            put("origin", origin);
            put("agentPreset", preset);
        }
        SessionHeader::from_fields(fields, generation)
    }

    /// The minimal header of a fresh session: current version, not seeded.
    pub fn fresh(id: &str, created_at: u64) -> Result<SessionHeader, AcceptError> {
        SessionHeader::new(HeaderSpec {
            id: id.to_owned(),
            created_at,
            ..HeaderSpec::default()
        })
    }

    /// Validates a logical header object for `generation`.
    pub fn from_value(value: Value, generation: Generation) -> Result<SessionHeader, AcceptError> {
        let Value::Object(fields) = value else {
            return Err(AcceptError::new(
                Rule::HeaderInvalid,
                "session header is not a plain JSON record",
            ));
        };
        SessionHeader::from_fields(fields, generation)
    }

    fn from_fields(
        fields: Map<String, Value>,
        generation: Generation,
    ) -> Result<SessionHeader, AcceptError> {
        let invalid = |message: String| Err(AcceptError::new(Rule::HeaderInvalid, message));
        // v0/v1 judge header numbers as upstream rc.8 does (`-0` and `1.0` pass) and do not
        // check a restored header for JSON losslessness (docs/v0-rules.md, block H).
        let lenient = generation.lenient_header_numbers();
        let number = |value: &Value| {
            if lenient {
                js_non_negative_safe_integer(value)
            } else {
                non_negative_safe_integer(value)
            }
        };
        let expected = generation.format_version();
        match fields.get("version") {
            Some(version) if number(version) == Some(expected) => {}
            other => {
                let got = other.map_or_else(|| "undefined".to_owned(), js_display);
                return Err(AcceptError::new(
                    Rule::HeaderBadVersion,
                    format!("session header version must be {expected}, got {got}"),
                ));
            }
        }
        if generation.is_v4() {
            check_v4_key_set(&fields)?;
        }
        if !lenient && !is_lossless(&Value::Object(fields.clone())) {
            return invalid("session header is not losslessly JSON-serializable".into());
        }
        if !matches!(fields.get("id"), Some(Value::String(_))) {
            return invalid("session header id must be a string".into());
        }
        if fields.get("createdAt").and_then(number).is_none() {
            return invalid("session header createdAt must be a non-negative safe integer".into());
        }
        if let Some(cwd) = fields.get("cwd") {
            match cwd {
                Value::String(path) if is_absolute(path) => {}
                // Upstream rc.8 quotes the path; the V3 text does not.
                Value::String(path) if lenient => {
                    return invalid(format!(
                        "session header cwd must be an absolute path, got \"{path}\""
                    ))
                }
                Value::String(_) => {
                    return invalid("session header cwd must be an absolute path".into())
                }
                _ => return invalid("session header cwd must be a string".into()),
            }
        }
        if let Some(parent) = fields.get("parentSession") {
            if !parent.is_string() {
                return invalid("session header parentSession must be a string".into());
            }
        }
        if generation >= Generation::V2 {
            if fields.contains_key("seedLength") {
                return invalid("session header has invalid field \"seedLength\"".into());
            }
            if !matches!(fields.get("isSeeded"), Some(Value::Bool(_))) {
                return invalid("session header isSeeded must be a boolean".into());
            }
        } else if let Some(length) = fields.get("seedLength") {
            if number(length).is_none() {
                return invalid(
                    "session header seedLength must be a non-negative safe integer".into(),
                );
            }
        }
        if let Some(origin) = fields.get("origin") {
            if origin.as_str() != Some("subagent") {
                return invalid("session header origin must be \"subagent\"".into());
            }
        }
        if let Some(depth) = fields.get("delegationDepth") {
            if number(depth).is_none() {
                return invalid(
                    "session header delegationDepth must be a non-negative safe integer".into(),
                );
            }
        }
        if let Some(preset) = fields.get("agentPreset") {
            if !preset.is_string() {
                return invalid("session header agentPreset must be a string".into());
            }
        }
        Ok(SessionHeader { fields, generation })
    }

    /// Checks that the header belongs to the session `id`.
    pub fn check_id(&self, id: &str) -> Result<(), AcceptError> {
        if self.id() == id {
            Ok(())
        } else {
            Err(AcceptError::new(
                Rule::HeaderIdMismatch,
                format!(
                    "session header id \"{}\" does not match session id \"{id}\"",
                    self.id()
                ),
            ))
        }
    }

    /// The generation whose rules this header (and its log) follow.
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// The session id.
    pub fn id(&self) -> &str {
        self.fields.get("id").and_then(Value::as_str).unwrap_or("")
    }

    /// Creation time, epoch milliseconds.
    pub fn created_at(&self) -> u64 {
        self.fields
            .get("createdAt")
            .and_then(js_non_negative_safe_integer)
            .unwrap_or(0)
    }

    /// The working directory, when recorded.
    pub fn cwd(&self) -> Option<&str> {
        self.fields.get("cwd").and_then(Value::as_str)
    }

    /// The parent session of a fork.
    pub fn parent_session(&self) -> Option<&str> {
        self.fields.get("parentSession").and_then(Value::as_str)
    }

    /// Whether the log starts with inherited history (v0/v1: `seedLength` present).
    pub fn is_seeded(&self) -> bool {
        match self.fields.get("isSeeded") {
            Some(Value::Bool(seeded)) => *seeded,
            _ => self.seed_length().is_some(),
        }
    }

    /// The inherited event count of a restored log of `log_len` events (§9.1 step 5): the seq
    /// of the last tagged end-seed marker `last_inherited_marker` (V2+, required exactly when
    /// the header says `isSeeded`), or a v0/v1 `seedLength`, which is only type-checked and
    /// never compared with the log (docs/v0-rules.md, "seedLength").
    pub fn inherited_count(
        &self,
        last_inherited_marker: Option<u64>,
        log_len: u64,
    ) -> Result<u64, AcceptError> {
        let mismatch = |message: &str| Err(AcceptError::new(Rule::SeedMismatch, message));
        // R56: a V3 log's are upstream's released codec's words.
        let released = self.generation.words_rules_as_released();
        let count = if self.generation >= Generation::V2 {
            match (self.is_seeded(), last_inherited_marker) {
                (true, None) if released => {
                    return mismatch(
                        "released v2 seeded Session lacks an inherited end-seed marker",
                    )
                }
                (true, None) => {
                    return mismatch("seeded session requires an inherited event count")
                }
                (false, Some(_)) if released => {
                    return mismatch(
                        "released v2 unseeded Session contains an inherited end-seed marker",
                    )
                }
                (false, Some(_)) => {
                    return mismatch("unseeded session inherited event count must be 0")
                }
                (_, marker) => marker.unwrap_or(0),
            }
        } else {
            self.seed_length().unwrap_or(0).min(log_len)
        };
        if count > log_len && self.generation.checks_inherited_count() {
            return mismatch("session inherited event count exceeds its event log");
        }
        Ok(count)
    }

    /// The v0/v1 numeric inherited cut.
    pub fn seed_length(&self) -> Option<u64> {
        self.fields
            .get("seedLength")
            .and_then(js_non_negative_safe_integer)
    }

    /// `Some("subagent")` for delegated sessions.
    pub fn origin(&self) -> Option<&str> {
        self.fields.get("origin").and_then(Value::as_str)
    }

    /// Delegation depth (0 when absent).
    pub fn delegation_depth(&self) -> u64 {
        self.fields
            .get("delegationDepth")
            .and_then(non_negative_safe_integer)
            .unwrap_or(0)
    }

    /// The agent preset.
    pub fn agent_preset(&self) -> Option<&str> {
        self.fields.get("agentPreset").and_then(Value::as_str)
    }

    /// The header object, in key order (unknown keys included).
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }
}

/// The logical V4 header's exact key set (docs/format-v4.md §1.2): the required keys present,
/// no key but the optional ones beside them. This also refuses the retired `seedLength`,
/// `sandboxMode` and `approvalPolicy`.
fn check_v4_key_set(fields: &Map<String, Value>) -> Result<(), AcceptError> {
    const REQUIRED: [&str; 5] = ["version", "id", "createdAt", "isSeeded", "delegationDepth"];
    const OPTIONAL: [&str; 4] = ["cwd", "parentSession", "origin", "agentPreset"];
    if let Some(key) = fields
        .keys()
        .find(|key| !REQUIRED.contains(&key.as_str()) && !OPTIONAL.contains(&key.as_str()))
    {
        return Err(AcceptError::new(
            Rule::HeaderInvalid,
            format!("format v4 header has unexpected field {key}"),
        ));
    }
    if let Some(key) = REQUIRED.iter().find(|key| !fields.contains_key(**key)) {
        return Err(AcceptError::new(
            Rule::HeaderInvalid,
            format!("format v4 header lacks required field {key}"),
        ));
    }
    Ok(())
}

fn is_absolute(path: &str) -> bool {
    path.starts_with('/')
        || path.starts_with("\\\\")
        || (path.len() >= 3
            && path.as_bytes()[0].is_ascii_alphabetic()
            && path.as_bytes()[1] == b':'
            && matches!(path.as_bytes()[2], b'\\' | b'/'))
}

/// How JavaScript's template strings print a JSON value in error messages.
fn js_display(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}
