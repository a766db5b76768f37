//! Acceptance rules: one stable id per rule and the error that names it.
//!
//! Every rejection carries the upstream message text (tests match on it, and
//! operators recognise it), a machine-readable [`Rule`] whose id never changes,
//! and where it happened: the candidate's seq and, on seed or restore paths, its
//! index in the input. Rule ids follow the dsh oracle's ids where it has one, so
//! differential tests compare ids directly: upstream's released V3 rules strata added with their
//! texts carry upstream's own ids (`R1`–`R53`, `S9`–`S13`, `P12`); the older kebab-case ids name
//! strata's checks under their own texts, each doc naming the upstream rule it covers.
//! `docs/rules.md` lists them all.

use std::fmt;

macro_rules! rules {
    ($( $(#[$doc:meta])* $variant:ident => $id:literal, )*) => {
        /// A stable, machine-readable name for one acceptance rule.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Rule {
            $( $(#[$doc])* $variant, )*
        }

        impl Rule {
            /// The kebab-case id, stable across releases.
            pub const fn id(self) -> &'static str {
                match self {
                    $( Rule::$variant => $id, )*
                }
            }

            /// Every rule, for documentation and exhaustive tests.
            pub const ALL: &'static [Rule] = &[ $( Rule::$variant, )* ];
        }
    };
}

rules! {
    /// §5.2 rule 1 / §2.2: seq must equal the event's index. Upstream E8 (docs/rules.md).
    SeqNotContiguous => "seq-not-contiguous",
    /// §2.1: envelope keys, types, `data` present, `ignorable` only `true`. Upstream E1–E6, E10–E20 (docs/rules.md).
    InvalidEnvelope => "invalid-envelope",
    /// §2.5: data or metadata that `JSON.stringify` cannot reproduce (`-0`, …). strata-only (docs/rules.md).
    NonJson => "non-json",
    /// §5.2 rule 2b: a surface type without `surfaceOp`. Upstream S1 (docs/rules.md).
    MissingSurfaceOp => "missing-surfaceop",
    /// §5.2 rule 2a: `surfaceOp` on a log-only type. Upstream E10 (docs/rules.md).
    SurfaceOpOnNonSurface => "surfaceop-on-non-surface",
    /// §5.2 rule 2a: `sourceEventSeqs` on a log-only type. Upstream E10 (docs/rules.md).
    SourceOnNonSurface => "source-on-non-surface",
    /// §5.2 rule 2c: `surfaceOp` neither `"append"` nor an object. Upstream S2 (docs/rules.md).
    InvalidSurfaceOp => "invalid-surfaceop",
    /// §5.2 rule 2c: a replace object with the wrong keys, op or endpoints. Upstream S2–S3 (docs/rules.md).
    ReplaceBadShape => "replace-bad-shape",
    /// §5.2 rule 3: replace endpoints at or after the event's own seq. Upstream S3 (docs/rules.md).
    ReplaceEndpointsNotEarlier => "replace-endpoints-not-earlier",
    /// §5.2 rule 4a: `assistant/message` citing sources (V2+ embed the stream). Upstream S4 (docs/rules.md).
    AssistantCitesSources => "assistant-cites-sources",
    /// §5.2 rule 4b: `sourceEventSeqs` not an array. Upstream S5 (docs/rules.md).
    SourceNotArray => "source-not-array",
    /// §5.2 rule 4c: an empty `sourceEventSeqs` (V3: on any event). Upstream S5 (docs/rules.md).
    EmptySource => "empty-source",
    /// §5.2 rule 4c, v0 wording: empty sources allowed on assistant messages only.
    EmptySourceOnNonAssistant => "empty-source-on-non-assistant",
    /// §5.2 rule 4d: a source that is not a non-negative safe integer. Upstream S6 (docs/rules.md).
    SourceInvalidSeq => "source-invalid-seq",
    /// §5.2 rule 4e: a repeated source. Upstream S6 (docs/rules.md).
    SourceDuplicate => "source-duplicate",
    /// §5.2 rule 4f: a source at or after the event's own seq. Upstream S6 (docs/rules.md).
    SourceNotEarlier => "source-not-earlier",
    /// §5.2 rule 7: the start endpoint is not a current surface node. Upstream S7 (docs/rules.md).
    ReplaceStartNotFound => "replace-bad-endpoint",
    /// §5.2 rule 7: the end endpoint is not a current surface node. Upstream S7 (docs/rules.md).
    ReplaceEndNotFound => "replace-bad-end",
    /// §5.2 rule 7: start comes after end in surface order. Upstream S7 (docs/rules.md).
    ReplaceEndpointsReversed => "replace-endpoints-reversed",
    /// §5.2 rule 8: a shadowed node missing from `sourceEventSeqs`. Upstream S8 (docs/rules.md).
    ReplaceUncoveredSource => "replace-uncovered-source",
    /// §5.2 rule 9a: a tool-result rewrite shadowing more than one node. Upstream Session-core rule 9 (docs/rules.md).
    ToolResultReplaceMulti => "tool-result-replace-multi",
    /// §5.2 rule 9b: a tool-result rewrite whose target is not a tool result. Upstream Session-core rule 9 (docs/rules.md).
    ToolResultReplaceWrongTarget => "tool-result-replace-wrong-target",
    /// §5.2 rule 9c: a tool-result rewrite changing more than the content. Upstream Session-core rule 9 (docs/rules.md).
    ToolResultReplaceChangesNonContent => "tool-result-replace-changes-non-content",
    /// §5.2 rule 10: node 0 system prompt rewritten by anything but one system message. Upstream S11–S12 (docs/rules.md).
    SystemHeadProtected => "system-head-protected",
    /// §5.3: `data` of `request/header` or `tool/result` not an object. Upstream P1, P11 (docs/rules.md).
    DataNotObject => "data-not-object",
    /// §5.3: `request/header` `header` not an object. Upstream P1 (docs/rules.md).
    HeaderNotObject => "header-not-object",
    /// §5.3: V3 forbids `header.system` (the prompt is a `system/message`). Upstream P2 (docs/rules.md).
    HeaderSystemForbidden => "header-system-forbidden",
    /// §5.3: V3 forbids `tools: []`. Upstream P3 (docs/rules.md).
    EmptyTools => "empty-tools",
    /// §5.3: V3 forbids `adapterDefaults: {}`. Upstream P3 (docs/rules.md).
    EmptyAdapterDefaults => "empty-adapter-defaults",
    /// §5.3: a tool result with `error` must be marked `isError: true`. Upstream P11 (docs/rules.md).
    ToolErrorWithoutIsError => "tool-error-without-is-error",
    /// §4.5: a surface event without an identified message.
    MessageNoId => "message-no-id",
    /// §4.5: the message role does not match the event type. Upstream P8 for system messages (docs/rules.md).
    MessageWrongRole => "message-wrong-role",
    /// §4.5: the message source is not an object with a kind.
    MessageInvalidSource => "message-invalid-source",
    /// §4.5: the message content is not an array.
    MessageInvalidContent => "message-invalid-content",
    /// §4.5: a system message without a plugin source. Upstream P9 (docs/rules.md).
    SystemNoPluginSource => "system-no-plugin-source",
    /// §4.5: an assistant message without a model source.
    AssistantNoModelSource => "assistant-no-model-source",
    /// §4.5: a tool result without a tool source.
    ToolResultNoToolSource => "tool-result-no-tool-source",
    /// §4.5: a V3 tool result without exactly one tool-result block. Upstream P11 (docs/rules.md).
    ToolResultNotOneBlock => "tool-result-not-one-block",
    /// §4.5: the tool-result block names another call than the source.
    ToolResultMismatchedCallId => "tool-result-mismatched-callid",
    /// §4.5: assistant turn/step/stream fields malformed.
    InvalidSettlementFields => "invalid-settlement-fields",
    /// §4.5: a request header without provider and model.
    RequestHeaderNoModel => "request-header-no-model",
    /// §4.5: an empty or non-string `reasoningEffort`.
    RequestHeaderBadReasoningEffort => "request-header-bad-reasoning-effort",
    /// §4.5: malformed `adapterDefaults`.
    RequestHeaderBadAdapterDefaults => "request-header-bad-adapter-defaults",
    /// §4.5: a request-header reason outside initial/resume/change/series.
    RequestHeaderBadReason => "request-header-bad-reason",
    /// §4.5: `startsSeries` present but not `true`.
    RequestHeaderBadStartsSeries => "request-header-bad-starts-series",
    /// §0.5: the retired `request/header-delta` format.
    LegacyHeaderDelta => "legacy-header-delta",
    /// §0.5: the retired `fallback` request-header reason.
    LegacyFallbackReason => "legacy-fallback-reason",
    /// §3.2: a type the generation does not know, not marked ignorable. Upstream E16 (docs/rules.md).
    UnknownType => "unknown-type",
    /// V4 N-ROW-2: a message whose source is the retired `{kind: "plugin"}` (docs/format-v4.md).
    V4RetiredSource => "N-ROW-2",
    /// V4 N-ROW-3: retired syntax — `header.system`, a released `tool-result` wrapper in an
    /// interpreted content slot (a required `tool/code-dispatch[-start]` is `unknown-type`,
    /// with V4's text) (docs/format-v4.md).
    V4RetiredSyntax => "N-ROW-3",
    /// V4 N-ROW-4: a `system/message`'s fields or content blocks (docs/format-v4.md).
    V4SystemFields => "N-ROW-4",
    /// V4 N-ROW-5: a `tool/result` that is not a tool-role message of its own call (docs/format-v4.md).
    V4ToolRole => "N-ROW-5",
    /// V4 N-ROW-6: a fork's not-started result in any but its one exact shape (docs/format-v4.md).
    V4ForkResult => "N-ROW-6",
    /// V4 N-DEV-1–N-DEV-5: a developer message's shape, its tool changes and `headerSeq`, the
    /// developer role or tool changes elsewhere, a tool's `deferLoading` (docs/format-v4.md).
    V4Developer => "N-DEV",
    /// V4 N-DEV-4 (relational half): a developer message's `headerSeq` names no earlier
    /// `request/header` defining each added tool once, with a description and parameters
    /// (docs/format-v4.md).
    V4DeveloperBinding => "N-DEV-4",
    /// V4 N-REL-3: a `developer/message` outside the open turn and step (docs/format-v4.md).
    V4StepScoped => "N-REL-3",
    /// V4 N-REL-CAT: a `subagent/catalog` that is no supported versioned fact, or names a child
    /// another of the session's own catalog facts names (docs/format-v4.md).
    V4Catalog => "N-REL-CAT",
    /// §2.3: a header of another format version. Upstream H1, H11 (docs/rules.md).
    HeaderBadVersion => "header-bad-version",
    /// §2.3: a header whose id is not the session's.
    HeaderIdMismatch => "header-id-mismatch",
    /// §2.3: a malformed header field. Upstream H1–H11 (docs/rules.md).
    HeaderInvalid => "header-invalid",
    /// §9.1: seed, header `isSeeded` and inherited count disagree. Upstream R54–R56 (docs/rules.md).
    SeedMismatch => "seed-mismatch",
    /// A lazily resumed session could not read, from its event source, an event below its
    /// checkpoint that a rule must look at (the seqs a title cites, R37): the event is not
    /// decided (docs/rules.md, "Lazy sessions").
    EventSourceFailed => "event-source-failed",
    /// v0/v1 only: a row upstream 0.1.0-rc.8 fails on with a JavaScript `TypeError` (a `null`
    /// row); reproduced with upstream's text because it decides which failure is reported.
    InternalTypeError => "internal-type-error",
    /// P4: a `system/message`'s `data` is an object. (docs/rules.md)
    SystemDataNotObject => "P4",
    /// P5: … with exactly `turn`, `step`, `message`. (docs/rules.md)
    SystemDataKeys => "P5",
    /// P6: … whose `turn` and `step` are positive counts. (docs/rules.md)
    SystemTurnStep => "P6",
    /// P7: the system message is an object with exactly `id`, `role`, `source`, `content`. (docs/rules.md)
    SystemMessageKeys => "P7",
    /// P8: … with a non-empty id and the system role. (docs/rules.md)
    SystemIdRole => "P8",
    /// P9: … and a plugin source. (docs/rules.md)
    SystemSource => "P9",
    /// P10: … audited as a user message (source members, content blocks). (docs/rules.md)
    SystemAsUserMessage => "P10",
    /// P12: an event upstream's relationship pass reads has an object `data`. (docs/rules.md)
    DataNotJsonObject => "P12",
    /// R1: `turn/start` opens the next turn, with no turn open. (docs/rules.md)
    TurnStartNumber => "R1",
    /// R2: `turn/end` closes the open turn. (docs/rules.md)
    TurnEndUnmatched => "R2",
    /// R3: `turn/end` leaves no advertised tool call unresolved. (docs/rules.md)
    TurnEndUnresolvedCall => "R3",
    /// R4: `turn/end` with a step still open. (docs/rules.md)
    TurnEndCrossesStep => "R4",
    /// R5: `step/start` opens the next step of the open turn. (docs/rules.md)
    StepStartNumber => "R5",
    /// R6: `step/end` closes the open step. (docs/rules.md)
    StepEndUnmatched => "R6",
    /// R7: `step/end` leaves no advertised tool call unresolved. (docs/rules.md)
    StepEndUnresolvedCall => "R7",
    /// R8: `assistant/message` lies in the open step. (docs/rules.md)
    AssistantOutsideStep => "R8",
    /// R9: `assistant/attempt` lies in the open step. (docs/rules.md)
    AttemptOutsideStep => "R9",
    /// R10: a `tool-call` block id is new within the step. (docs/rules.md)
    AssistantRepeatsCall => "R10",
    /// R11: `tool/call` lies in the open step. (docs/rules.md)
    ToolCallOutsideStep => "R11",
    /// R12: `tool/call` matches one advertised, unstarted call. (docs/rules.md)
    ToolCallUnadvertised => "R12",
    /// R13: a `tool/result` append lies in the open step. (docs/rules.md)
    ToolResultOutsideStep => "R13",
    /// R14: a `tool/result` settles a call advertised in the step. (docs/rules.md)
    ToolResultUnadvertised => "R14",
    /// R15: a result of a call never started is the exact TOOL_NOT_STARTED repair. (docs/rules.md)
    ToolResultNotRepair => "R15",
    /// R16: a `tool/result` replacement lies in an open turn. (docs/rules.md)
    ToolResultReplaceOutsideTurn => "R16",
    /// R17: `request/header` lies in an open turn. (docs/rules.md)
    RequestHeaderOutsideTurn => "R17",
    /// R18: `request/context` lies in an open turn. (docs/rules.md)
    RequestContextOutsideTurn => "R18",
    /// R19: `llm/retry` matches the current turn and step. (docs/rules.md)
    RetryOutsideStep => "R19",
    /// R20: `llm/retry` names the open request provider. (docs/rules.md)
    RetryProviderMismatch => "R20",
    /// R21: `llm/retry` numbers its chain 1, 2, … (docs/rules.md)
    RetryNumber => "R21",
    /// R22: a retry chain keeps its `retryId`. (docs/rules.md)
    RetryIdChanged => "R22",
    /// R23: a new chain uses a `retryId` never seen before. (docs/rules.md)
    RetryIdReused => "R23",
    /// R24: `llm/retry-started` pairs a scheduled attempt. (docs/rules.md)
    RetryStartedUnpaired => "R24",
    /// R25: … with the scheduled turn and step. (docs/rules.md)
    RetryStartedWrongStep => "R25",
    /// R26: … at most once. (docs/rules.md)
    RetryStartedRepeats => "R26",
    /// R27: a PTC dispatch lies in an open turn. (docs/rules.md)
    PtcOutsideTurn => "R27",
    /// R28: a PTC sub-call keeps its root. (docs/rules.md)
    PtcRootChanged => "R28",
    /// R29: a PTC parent belongs to the root. (docs/rules.md)
    PtcParentOutsideRoot => "R29",
    /// R30: a PTC start's sub-call id is new. (docs/rules.md)
    PtcStartRepeats => "R30",
    /// R31: a PTC dispatch has one unsettled start. (docs/rules.md)
    PtcDispatchNoStart => "R31",
    /// R32: a PTC dispatch matches its start. (docs/rules.md)
    PtcDispatchMismatch => "R32",
    /// R33: `command/run` ids are unique in the log. (docs/rules.md)
    CommandRunRepeats => "R33",
    /// R34: `command/done` follows its `command/run`. (docs/rules.md)
    CommandDoneUnmatched => "R34",
    /// R35: a `command/done` source is a success naming no command event. (docs/rules.md)
    CommandDoneBadSource => "R35",
    /// R36: a title cites messages exactly when it is not a user title. (docs/rules.md)
    TitleSeqsForUser => "R36",
    /// R37: titles cite earlier human user messages. (docs/rules.md)
    TitleCitesNonHuman => "R37",
    /// R38: a title request's messages are one plugin text message. (docs/rules.md)
    TitleRequestMessages => "R38",
    /// R39: no turn boundary inside an open compaction. (docs/rules.md)
    TurnCrossesCompaction => "R39",
    /// R40: compactions do not overlap. (docs/rules.md)
    CompactionOverlap => "R40",
    /// R41: `compaction/start` names the open turn (or `null` outside one). (docs/rules.md)
    CompactionStartTurn => "R41",
    /// R42: `compaction/summary` matches the open compaction. (docs/rules.md)
    SummaryUnmatched => "R42",
    /// R43: … whose owner turn is still open. (docs/rules.md)
    SummaryTurn => "R43",
    /// R44: one summary per compaction. (docs/rules.md)
    SummaryRepeats => "R44",
    /// R45: the summary names an exact current surface span. (docs/rules.md)
    SummarySpan => "R45",
    /// R46: `compaction/end` matches the open compaction. (docs/rules.md)
    CompactionEndUnmatched => "R46",
    /// R47: … and keeps its owner turn. (docs/rules.md)
    CompactionEndOwner => "R47",
    /// R48: … whose owner turn is still open. (docs/rules.md)
    CompactionEndTurn => "R48",
    /// R49: a successful compaction recorded its summary. (docs/rules.md)
    CompactionEndNoSummary => "R49",
    /// R50: a compaction checkpoint matches the open compaction. (docs/rules.md)
    CheckpointUnmatched => "R50",
    /// R52: a prune names an exact current surface span. (docs/rules.md)
    PruneSpan => "R52",
    /// R53: a current-generation delivery marker names this session. (docs/rules.md)
    DeliveryMarkerWrongSession => "R53",
    /// S9: a `system/message` lies in a matching open step. (docs/rules.md)
    SystemOutsideStep => "S9",
    /// S10: no `system/message` once the surface began without a system head. (docs/rules.md)
    SystemWithoutHead => "S10",
    /// S11: a system replacement touching the head replaces exactly the head. (docs/rules.md)
    SystemReplacesHeadInexactly => "S11",
    /// S12: a non-system replacement does not touch the head. (docs/rules.md)
    ReplacementShadowsHead => "S12",
    /// S13: a summary or prune does not list the head. (docs/rules.md)
    CompactionShadowsHead => "S13",
}

impl Rule {
    /// Whether the rule belongs to upstream's second pass (the relationship pass, after every
    /// event passed the event-local and head rules): the relational rules, P12, the surface
    /// fold S7–S8 (strata's rules 7–9) and the vocabulary (E16, judged by upstream's artifact
    /// pass before any relational rule). A first-pass refusal at a later seq is reported before
    /// a second-pass one at an earlier seq (docs/rules.md, "Evaluation order").
    pub fn is_second_pass(self) -> bool {
        let id = self.id();
        (id.starts_with('R') && id[1..].bytes().all(|b| b.is_ascii_digit()))
            || id.starts_with("N-REL")
            || matches!(
                self,
                Rule::DataNotJsonObject
                    | Rule::UnknownType
                    | Rule::V4DeveloperBinding
                    | Rule::ReplaceStartNotFound
                    | Rule::ReplaceEndNotFound
                    | Rule::ReplaceEndpointsReversed
                    | Rule::ReplaceUncoveredSource
                    | Rule::ToolResultReplaceMulti
                    | Rule::ToolResultReplaceWrongTarget
                    | Rule::ToolResultReplaceChangesNonContent
            )
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A rejected candidate event, seed or header.
///
/// Rejection changes nothing: the log, surface, generation counters and
/// derived messages are exactly as before the call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AcceptError {
    /// Which rule failed.
    pub rule: Rule,
    /// The seq the candidate had or would have had, when known.
    pub seq: Option<u64>,
    /// The candidate's index in a seed or restored log, when on those paths.
    pub index: Option<u64>,
    /// The upstream message text.
    pub message: String,
}

impl AcceptError {
    pub(crate) fn new(rule: Rule, message: impl Into<String>) -> AcceptError {
        AcceptError {
            rule,
            seq: None,
            index: None,
            message: message.into(),
        }
    }

    pub(crate) fn at_seq(mut self, seq: u64) -> AcceptError {
        self.seq = Some(seq);
        self
    }

    pub(crate) fn at_index(mut self, index: u64) -> AcceptError {
        self.index = Some(index);
        self
    }
}
