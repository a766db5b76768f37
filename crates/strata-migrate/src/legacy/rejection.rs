//! How a v0 log is refused: upstream's rule id and message text, and where it applies.
//!
//! The v0 paths report failures the way upstream 0.1.0-rc.8 does, so strata and the oracle can
//! be compared byte for byte (docs/v0-rules.md): the seed path throws the core's message as
//! is; the restore path wraps most failures as `stored session "<id>" failed validation:
//! <Name>: <inner>` and throws the version and vocabulary refusals unwrapped. A
//! [`Rejection`] keeps the inner message, the inner error's class and whether it is wrapped, so
//! either spelling can be produced.

use std::fmt;

use serde_json::Value;
use strata_core::{AcceptError, Rule};

use super::js;

/// Rules only the v0 restore path (or the v0 reader) applies; their ids are the oracle's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LegacyRule {
    /// R1: the header names another format version.
    HeaderBadVersion,
    /// R2a: a retired `request/header-delta` event.
    LegacyHeaderDelta,
    /// R2b: a retired `mode/set` event.
    LegacyModeSet,
    /// R2c: a retired `fallback` request-header reason.
    LegacyFallbackReason,
    /// R3: a pre-react-loop shape that fits no known upgrade (U1–U3).
    LegacyMalformed,
    /// R4: a type outside the v0 vocabulary, not marked ignorable.
    UnknownType,
    /// R0: the stored header names another session.
    HeaderIdMismatch,
    /// A JavaScript `TypeError` upstream throws on a malformed row (`null` rows, data-less
    /// brackets); reproduced because it decides which failure is reported first.
    InternalTypeError,
    /// A packed chunk row that breaks the row rules.
    MalformedChunkRow,
}

impl LegacyRule {
    /// The oracle's rule id.
    pub fn id(self) -> &'static str {
        match self {
            LegacyRule::HeaderBadVersion => "header-bad-version",
            LegacyRule::LegacyHeaderDelta => "legacy-header-delta",
            LegacyRule::LegacyModeSet => "legacy-mode-set",
            LegacyRule::LegacyFallbackReason => "legacy-fallback-reason",
            LegacyRule::LegacyMalformed => "legacy-malformed",
            LegacyRule::UnknownType => "unknown-type",
            LegacyRule::HeaderIdMismatch => "header-id-mismatch",
            LegacyRule::InternalTypeError => "internal-type-error",
            LegacyRule::MalformedChunkRow => "malformed-chunk-row",
        }
    }
}

/// Which rule refused a log: a core acceptance rule or a restore-path rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleId {
    /// A core rule (seed path, message shapes, header fields).
    Core(Rule),
    /// A restore-path or reader rule.
    Legacy(LegacyRule),
}

impl RuleId {
    /// The stable id.
    pub fn id(self) -> &'static str {
        match self {
            RuleId::Core(rule) => rule.id(),
            RuleId::Legacy(rule) => rule.id(),
        }
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The JavaScript class of upstream's inner error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// A plain `Error`: every rule.
    Error,
    /// A `TypeError` from reading a property of `null`/`undefined`.
    TypeError,
}

impl ErrorClass {
    /// The class name as upstream prints it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Error => "Error",
            ErrorClass::TypeError => "TypeError",
        }
    }
}

/// How the failure is thrown on the restore path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrapping {
    /// Wrapped as `SessionPersistenceCorruptionError` (most failures).
    Corruption,
    /// Thrown as is (`SessionFormatUnsupportedError`: version and vocabulary refusals).
    Unsupported,
}

/// A refused v0 log: the rule, upstream's inner text and where it applies.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Rejection {
    /// The rule.
    pub rule: RuleId,
    /// The inner error's class.
    pub class: ErrorClass,
    /// How the restore path throws it.
    pub wrapping: Wrapping,
    /// Upstream's inner message.
    pub message: String,
    /// The event's index in the input, when the message names one.
    pub index: Option<u64>,
    /// The event's seq, when the message names one.
    pub seq: Option<u64>,
    /// The physical line, when known.
    pub line: Option<u64>,
}

impl Rejection {
    /// A restore-path rule, wrapped as corruption.
    pub fn wrapped(rule: LegacyRule, message: String) -> Rejection {
        Rejection {
            rule: RuleId::Legacy(rule),
            class: ErrorClass::Error,
            wrapping: Wrapping::Corruption,
            message,
            index: None,
            seq: None,
            line: None,
        }
    }

    /// A restore-path refusal thrown unwrapped (version, vocabulary).
    pub fn unsupported(rule: LegacyRule, message: String) -> Rejection {
        Rejection {
            wrapping: Wrapping::Unsupported,
            ..Rejection::wrapped(rule, message)
        }
    }

    /// A raw `TypeError` upstream throws on a malformed row.
    pub fn type_error(message: &str) -> Rejection {
        Rejection {
            class: ErrorClass::TypeError,
            ..Rejection::wrapped(LegacyRule::InternalTypeError, message.to_owned())
        }
    }

    /// A core verdict (seed path, message shapes, header fields).
    pub fn from_accept(error: &AcceptError) -> Rejection {
        Rejection {
            rule: RuleId::Core(error.rule),
            class: ErrorClass::Error,
            wrapping: Wrapping::Corruption,
            message: error.message.clone(),
            index: error.index,
            seq: error.seq,
            line: None,
        }
    }

    /// Records the seq an event carries, when it is a non-negative safe integer.
    pub fn with_seq_value(mut self, seq: Option<&Value>) -> Rejection {
        self.seq = seq
            .filter(|seq| js::is_non_negative_safe_integer(seq))
            .and_then(js::number)
            .map(|seq| seq as u64);
        self
    }

    /// Records the physical line.
    pub fn at_line(mut self, line: Option<u64>) -> Rejection {
        self.line = line;
        self
    }

    /// The text upstream's restore path throws for session `session_id`.
    pub fn restore_message(&self, session_id: &str) -> String {
        match self.wrapping {
            Wrapping::Unsupported => self.message.clone(),
            Wrapping::Corruption => format!(
                "stored session \"{session_id}\" failed validation: {}: {}",
                self.class.name(),
                self.message
            ),
        }
    }
}
