//! Format generations (v0, v1, v2, V3, V4) and the event vocabulary each one knows.
//!
//! dsh bumps one integer whenever an older reader could no longer interpret new
//! logs (session-core §2.4). Most acceptance rules are the same in every
//! generation; the differences (surface types, replace key spelling, what an
//! assistant message may cite, request-header shape) are answered here so the
//! rule engine stays one code path. strata writes V3 (the latest generation upstream
//! released); V4 (what dsh writes since 0.1.7) is read and validated natively under its
//! own rules (docs/format-v4.md); older generations are read and validated under their
//! own rules, then migrated.

/// A dsh session format generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Generation {
    /// Pre-release baseline: `assistant/chunk` events, `{op, start, end}` replaces, header `seedLength`.
    V0,
    /// Released identity re-label of v0 (same physical layout).
    V1,
    /// Embedded assistant streams, `isSeeded` header, tagged end-seed marker.
    V2,
    /// `system/message` node 0 and the canonical envelope: strata's native format.
    V3,
    /// V3's framing with `developer/message`, tool-role results and producer-owned message
    /// sources (docs/format-v4.md): what dsh writes since 0.1.7.
    V4,
}

/// How a generation spells the endpoints of a replace `surfaceOp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplaceSpelling {
    /// `{"op":"replace","start":a,"end":b}` (v0–v2).
    StartEnd,
    /// `{"op":"replace","startSeq":a,"endSeq":b}` (V3).
    StartSeqEndSeq,
}

impl Generation {
    /// strata's native generation: every log strata writes is V3.
    pub const NATIVE: Generation = Generation::V3;

    /// The header `version` number of this generation.
    pub const fn format_version(self) -> u64 {
        match self {
            Generation::V0 => 0,
            Generation::V1 => 1,
            Generation::V2 => 2,
            Generation::V3 => 3,
            Generation::V4 => 4,
        }
    }

    /// The generation a header `version` names, if strata knows it.
    pub const fn from_format_version(version: u64) -> Option<Generation> {
        match version {
            0 => Some(Generation::V0),
            1 => Some(Generation::V1),
            2 => Some(Generation::V2),
            3 => Some(Generation::V3),
            4 => Some(Generation::V4),
            _ => None,
        }
    }

    /// How replace endpoints are spelled on the wire.
    pub const fn replace_spelling(self) -> ReplaceSpelling {
        match self {
            Generation::V3 | Generation::V4 => ReplaceSpelling::StartSeqEndSeq,
            _ => ReplaceSpelling::StartEnd,
        }
    }

    /// The plugin event types this generation's vocabulary declares, sorted for binary
    /// search (`EventType::is_known_in` reads them).
    pub(crate) fn plugin_types(self) -> &'static [&'static str] {
        if self >= Generation::V3 {
            V3_PLUGIN_TYPES
        } else {
            V0_PLUGIN_TYPES
        }
    }

    /// Whether an assistant message may cite its sources (v0/v1 cite `assistant/chunk` seqs).
    pub const fn assistant_may_cite_sources(self) -> bool {
        matches!(self, Generation::V0 | Generation::V1)
    }

    /// Whether the envelope and surface rules speak upstream's released V3 texts
    /// (docs/rules.md: E7, E8, S4–S8, R56): V3 logs are judged against upstream's released format
    /// layer; older generations keep the texts of the build that wrote them. V4 borrows V3's
    /// envelope and surface layer (docs/format-v4.md §1), so it speaks the same texts.
    pub const fn words_rules_as_released(self) -> bool {
        matches!(self, Generation::V3 | Generation::V4)
    }

    /// Whether replace endpoints must reference earlier events (checked event-locally in V3).
    pub const fn checks_endpoints_earlier(self) -> bool {
        matches!(self, Generation::V3 | Generation::V4)
    }

    /// Whether seqs, times, replace endpoints and sources are judged like upstream 0.1.0-rc.8
    /// judges them: as `JSON.parse` doubles with `Number.isSafeInteger(x) && x >= 0`, so `-0`
    /// counts as 0 (docs/v0-rules.md, "Numbers"). Later generations refuse `-0` (§2.1).
    pub const fn negative_zero_is_a_seq(self) -> bool {
        matches!(self, Generation::V0 | Generation::V1)
    }

    /// Whether one event's checks run in the v0 order (docs/v0-rules.md, "Path --seed"): a
    /// retired `request/header-delta` is refused before the envelope is looked at; message and
    /// request-header shapes come before the `fallback` refusal, and both before contiguity;
    /// a replace's range (rules 6–8) is checked before its source list (rule 4). V2+ follow
    /// session-core §5.2: contiguity first, the source list before the range.
    pub const fn legacy_check_order(self) -> bool {
        matches!(self, Generation::V0 | Generation::V1)
    }

    /// Whether an unknown `ignorable` event keeps any surface metadata verbatim and opaque
    /// (V3, §5.2 rule 2a); older builds reject metadata on every log-only type.
    pub const fn keeps_opaque_metadata(self) -> bool {
        matches!(self, Generation::V3 | Generation::V4)
    }

    /// Whether request headers must name a known `reason` and a valid `startsSeries` (V2+;
    /// v0/v1 refuse only the retired `fallback` reason).
    pub const fn checks_request_reason(self) -> bool {
        matches!(self, Generation::V2 | Generation::V3 | Generation::V4)
    }

    /// Whether data rules refuse a non-object `request/header` payload or header by name
    /// (§5.3, V2+); in v0/v1 such a header fails the shape check (`lacks provider/model`).
    pub const fn checks_request_header_objects(self) -> bool {
        matches!(self, Generation::V2 | Generation::V3 | Generation::V4)
    }

    /// Whether the inherited event count is checked against the log (V2+). A v0/v1 header's
    /// `seedLength` is only type-checked, never compared with the log.
    pub const fn checks_inherited_count(self) -> bool {
        matches!(self, Generation::V2 | Generation::V3 | Generation::V4)
    }

    /// Whether the released relational rules run (docs/rules.md R1–R53, S9–S13; for V4 with
    /// the deltas of docs/format-v4.md §3): V3 and V4. Older generations are judged by the
    /// rules of the build that wrote them, which had none.
    pub const fn checks_relations(self) -> bool {
        matches!(self, Generation::V3 | Generation::V4)
    }

    /// Whether this is V4, with its vocabulary and admission deltas (docs/format-v4.md).
    pub const fn is_v4(self) -> bool {
        matches!(self, Generation::V4)
    }

    /// Whether a header's numeric fields are judged as doubles with `-0` allowed and the
    /// header is not checked for JSON losslessness on restore (v0/v1, upstream rc.8).
    pub const fn lenient_header_numbers(self) -> bool {
        matches!(self, Generation::V0 | Generation::V1)
    }
}

/// Every plugin type name any generation knows (for interning).
pub(crate) fn all_plugin_types() -> impl Iterator<Item = &'static str> {
    V3_PLUGIN_TYPES.iter().chain(V0_PLUGIN_TYPES).copied()
}

/// Plugin event types known to the V3 build (session-core §3.2, with `image/offload`, which
/// upstream's released V3 vocabulary lists: docs/format-v4.md §2.1), sorted for binary search.
/// zDSH's `slots/dispatch` stays readable in V3 logs (docs/divergences.md); V4 knows the same
/// list without it (`EventType::is_known_in`), and `developer/message` as a core type.
const V3_PLUGIN_TYPES: &[&str] = &[
    "agent-preset/selected",
    "agent/inbox/spliced",
    "approval/asked",
    "approval/decided",
    "approval/policy",
    "command/done",
    "command/run",
    "compaction/end",
    "compaction/prune",
    "compaction/start",
    "compaction/summary",
    "deliverables/presented",
    "feedback/message-delete",
    "feedback/message-put",
    "feedback/record",
    "goal/change",
    "hook/invoked",
    "hook/result",
    "image/offload",
    "llm/retry",
    "llm/retry-started",
    "model/selection",
    "permission/preset",
    "plan/mode",
    "sandbox/mode",
    "schedule/change",
    "session-log-deepseek/delivery-accepted",
    "session/title",
    "session/title-llm-request",
    "slots/dispatch",
    "subagent/catalog",
    "subagent/descriptor",
    "subagent/model-selection-policy",
    "team/member",
    "team/message/delivered",
    "team/message/queued",
    "team/task",
    "tool-workflow/agent-end",
    "tool-workflow/agent-start",
    "tool-workflow/run-end",
    "tool-workflow/run-start",
    "tool/ptc-dispatch",
    "tool/ptc-dispatch-start",
    "web/deepseek-search-llm-request",
    "workspace/changes",
];

/// Plugin event types known to the v0 build (persistence-compaction §0.4), sorted.
const V0_PLUGIN_TYPES: &[&str] = &[
    "agent-preset/selected",
    "agent/inbox/spliced",
    "approval/asked",
    "approval/decided",
    "approval/policy",
    "command/done",
    "command/run",
    "compaction/end",
    "compaction/prune",
    "compaction/start",
    "compaction/summary",
    "feedback/record",
    "goal/change",
    "hook/invoked",
    "hook/result",
    "llm/retry",
    "llm/retry-started",
    "permission/preset",
    "plan/mode",
    "sandbox/mode",
    "schedule/change",
    "session/title",
    "session/title-llm-request",
    "subagent/descriptor",
    "team/member",
    "team/message/delivered",
    "team/message/queued",
    "team/task",
    "tool-workflow/agent-end",
    "tool-workflow/agent-start",
    "tool-workflow/run-end",
    "tool-workflow/run-start",
    "tool/code-dispatch",
    "tool/code-dispatch-start",
    "web/deepseek-search-llm-request",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_lists_are_sorted_for_binary_search() {
        for list in [V3_PLUGIN_TYPES, V0_PLUGIN_TYPES] {
            assert!(list.windows(2).all(|pair| pair[0] < pair[1]));
        }
    }
}
