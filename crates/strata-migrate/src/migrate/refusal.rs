//! The refusals the migration edges share with upstream's released chain: each has a stable id
//! (listed with upstream's text in docs/migration.md) and its message contains upstream's text
//! exactly.

/// One refusal of upstream's chain that strata reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// v0/v1 codec: a physical header key outside the released set, or a required one missing.
    HeaderMember,
    /// v0/v1 codec: a row breaks a released row rule (object, packed-row shape, source
    /// ranges, seq gap).
    CodecRow,
    /// v0→v1: a retired event (`request/header-delta`, `mode/set`, a `fallback` request
    /// reason).
    RetiredEvent,
    /// v0→v1 payload audit: a `subagent/descriptor` of another version than 3.
    DescriptorVersion,
    /// v0→v1 payload audit: a type outside the frozen v0 inventory (even when ignorable).
    UnknownHistoricalType,
    /// v0→v1 payload audit: data without its type's exact members, or a member that breaks
    /// its value rule.
    PayloadShape,
    /// v0→v1 payload audit: a known event whose `data` is not an object.
    DataNotObject,
    /// v0→v1: an `llm/retry-started` without `retryId` (never minted).
    RetryStartedWithoutId,
    /// v0→v1: `request/header.header.messagePrefix` that is not an array.
    MessagePrefixNotArray,
    /// v1→v2: a `turn/start` while a turn is open (not the legacy interrupted restart).
    TurnStartWithoutClose,
    /// v1→v2: an `assistant/message` without sources while an attempt of its step is pending.
    MessageOmitsAttempt,
    /// v1→v2: an `assistant/message` whose sources are not the pending attempt, in order.
    MessageProvenanceNotAttempt,
    /// v1→v2: an attempt whose chunks lie on both sides of the inherited cut.
    CutSplitsAttempt,
    /// v1→v2: a reference the edge cannot map (a consumed chunk, a later event, not a seq).
    UnmappedReference,
    /// v0/v1→v2 hop: the v2 artifact's envelope (type, vocabulary, keys, density, time).
    ArtifactEnvelope,
    /// v0/v1→v2 hop: the v2 artifact breaks a released V2 surface or relational rule.
    ArtifactRule,
    /// v2→v3: a type outside the v2 inventory (even when ignorable).
    UnclassifiedEvent,
    /// v2→v3: an `assistant/message` that still carries `sourceEventSeqs`.
    ObsoleteChunkProvenance,
    /// v2→v3: a `request/header` reason outside initial, resume, change, series.
    RequestReason,
    /// v2→v3: a source message id equal to a generated system message id.
    SourceIdCollision,
    /// v2→v3: a generated system message id already used by the source.
    GeneratedIdCollision,
    /// v2→v3: a surface event before the first `step/start` (no system head yet).
    SurfaceBeforeFirstStep,
    /// v2→v3: a prompt change while no step is open.
    PromptChangeOutsideStep,
    /// v2→v3: a `tool/result` with `error` whose result block is not marked `isError`.
    ErrorWithoutIsError,
    /// v2→v3: a message source kind upstream does not classify.
    UnclassifiedSource,
}

impl Refusal {
    /// The stable id (docs/migration.md).
    pub const fn id(self) -> &'static str {
        match self {
            Refusal::HeaderMember => "m0-header-member",
            Refusal::CodecRow => "m0-row",
            Refusal::DataNotObject => "m1-data-not-object",
            Refusal::RetiredEvent => "m1-retired-event",
            Refusal::DescriptorVersion => "m1-descriptor-version",
            Refusal::PayloadShape => "m1-payload-shape",
            Refusal::UnknownHistoricalType => "m1-unknown-historical-type",
            Refusal::RetryStartedWithoutId => "m1-retry-started-without-id",
            Refusal::MessagePrefixNotArray => "m1-message-prefix",
            Refusal::TurnStartWithoutClose => "m2-turn-start-without-close",
            Refusal::MessageOmitsAttempt => "m2-message-omits-attempt",
            Refusal::MessageProvenanceNotAttempt => "m2-provenance-not-attempt",
            Refusal::CutSplitsAttempt => "m2-cut-splits-attempt",
            Refusal::UnmappedReference => "m2-unmapped-reference",
            Refusal::ArtifactEnvelope => "m2-artifact-envelope",
            Refusal::ArtifactRule => "m2-artifact-rule",
            Refusal::UnclassifiedEvent => "m3-unclassified-event",
            Refusal::ObsoleteChunkProvenance => "m3-obsolete-chunk-provenance",
            Refusal::RequestReason => "m3-request-reason",
            Refusal::SourceIdCollision => "m3-source-id-collision",
            Refusal::GeneratedIdCollision => "m3-generated-id-collision",
            Refusal::SurfaceBeforeFirstStep => "m3-surface-before-first-step",
            Refusal::PromptChangeOutsideStep => "m3-prompt-change-outside-step",
            Refusal::ErrorWithoutIsError => "m3-error-without-is-error",
            Refusal::UnclassifiedSource => "m3-unclassified-source",
        }
    }

    /// The edge that refuses.
    pub const fn edge(self) -> &'static str {
        match self {
            Refusal::HeaderMember | Refusal::CodecRow => "v0/v1 codec",
            Refusal::RetryStartedWithoutId
            | Refusal::MessagePrefixNotArray
            | Refusal::DataNotObject
            | Refusal::RetiredEvent
            | Refusal::DescriptorVersion
            | Refusal::PayloadShape
            | Refusal::UnknownHistoricalType => "v0→v1",
            Refusal::TurnStartWithoutClose
            | Refusal::MessageOmitsAttempt
            | Refusal::MessageProvenanceNotAttempt
            | Refusal::CutSplitsAttempt
            | Refusal::UnmappedReference => "v1→v2",
            Refusal::ArtifactEnvelope | Refusal::ArtifactRule => "v0/v1→v2",
            _ => "v2→v3",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}
