//! The v0/v1 → v2 hop's artifact check (docs/migration.md, "Order of refusals").
//!
//! Upstream's chain migrates an older log in two hops: v0 (or v1) → v2, then v2 → v3. The first
//! hop runs its edges over the whole log, then restores the v2 artifact they wrote — first
//! every event's envelope, then the released V2 rules (surface and relational) — and only a
//! log that passes goes on to the v2→v3 edge. So a refusal of the first hop's edges beats an
//! artifact refusal anywhere in the log, an envelope refusal beats a rule refusal, and either
//! beats a refusal of the v2→v3 edge, whatever their seqs.
//!
//! strata streams all edges at once; [`ArtifactCheck`] sits between the v1→v2 and v2→v3 edges,
//! judges every v2 event as it passes (a copy of the event goes to a core [`Verifier`], which
//! keeps the surface, not the log) and records the hop's first refusal in a [`HopVerdict`]
//! that the pipeline reads after the stream ends. After a v2→v3 refusal the pipeline keeps
//! pulling the stream to its end, so the hop's refusals are still found.
//!
//! Invariant: the verdict holds at most one refusal per tier, the first of that tier in stream
//! order; a tier's check stops once it or a stronger tier has refused.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};
use strata_core::{EventType, Generation, RawEvent, Rule, SessionHeader, Verifier};

use super::error::MigrateError;
use super::refusal::Refusal;
use super::stage::{StageContext, StageItem, Staged};
use crate::legacy::js::{is_safe_integer, number};

/// The first hop's refusals, by tier.
#[derive(Debug, Default)]
struct Tiers {
    /// Whether the hop's edges (v0→v1, v1→v2) or the source codec refused: their refusal is
    /// the stream's own error item, which outranks every later tier.
    edge: bool,
    /// An envelope refusal of the artifact restore.
    envelope: Option<MigrateError>,
    /// A released V2 rule refusal of the artifact restore.
    rule: Option<MigrateError>,
}

/// The first hop's verdict, shared by the `ArtifactCheck` inside the chain and the pipeline
/// that drives it.
#[derive(Clone, Debug, Default)]
pub struct HopVerdict(Arc<Mutex<Tiers>>);

impl HopVerdict {
    fn with<R>(&self, f: impl FnOnce(&mut Tiers) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Whether the hop's edges refused (the error item the stream just yielded is theirs).
    pub fn edges_refused(&self) -> bool {
        self.with(|tiers| tiers.edge)
    }

    /// The artifact's refusal, if any: its envelope's before its rules'.
    pub fn take(&self) -> Option<MigrateError> {
        self.with(|tiers| tiers.envelope.take().or_else(|| tiers.rule.take()))
    }
}

/// The v2 stream between the first hop's edges and the v2→v3 edge, judged as upstream judges
/// the first hop's artifact; every item passes through unchanged.
pub struct ArtifactCheck<I> {
    input: I,
    context: StageContext,
    verdict: HopVerdict,
    /// The released V2 rules' state; `None` once they (or the envelope) refused, or when the
    /// v2 header itself is not valid (the v3 header check reports that).
    verifier: Option<Verifier>,
    /// Whether the envelope check still runs.
    envelope: bool,
    /// v2 events seen so far (the next one's index).
    index: u64,
}

impl<I: Iterator<Item = StageItem>> ArtifactCheck<I> {
    /// Judges the v2 stream `input` of a log whose v2 logical header is `header`.
    pub fn new(
        input: I,
        header: &Map<String, Value>,
        context: StageContext,
    ) -> (ArtifactCheck<I>, HopVerdict) {
        let verdict = HopVerdict::default();
        let v3_header = super::v2_v3::header(header.clone());
        let verifier = SessionHeader::from_value(Value::Object(v3_header), Generation::V3)
            .ok()
            .map(Verifier::for_migration_artifact);
        let check = ArtifactCheck {
            input,
            context,
            verdict: verdict.clone(),
            verifier,
            envelope: true,
            index: 0,
        };
        (check, verdict)
    }

    fn refusal(&self, staged: Option<&Staged>, refusal: Refusal, text: String) -> MigrateError {
        let at = match staged {
            Some(staged) => self.context.at(staged),
            None => crate::legacy::At {
                file: self.context.file.to_string(),
                generation: self.context.source_generation,
                line: 0,
                seq: None,
            },
        };
        MigrateError::Refused { at, refusal, text }
    }

    fn judge(&mut self, staged: &Staged) {
        let index = self.index;
        self.index += 1;
        if self.envelope {
            if let Err(text) = envelope(&staged.event, index) {
                let error = self.refusal(Some(staged), Refusal::ArtifactEnvelope, text);
                self.verdict.with(|tiers| tiers.envelope = Some(error));
                self.envelope = false;
                self.verifier = None;
                return;
            }
        }
        if let Some(verifier) = self.verifier.as_mut() {
            if let Err(error) = verifier.push(RawEvent::from_value(in_v3_spelling(&staged.event))) {
                // Only the second pass judges the artifact; an event-local V3 rule is the
                // v2→v3 edge's and the V3 restore's to refuse (the check stops here).
                if artifact_rule(error.rule) {
                    // The V2 validator names a missing marker in fewer words than V3's restore.
                    let text = match error.rule {
                        Rule::MissingSurfaceOp => {
                            format!("{} requires a surfaceOp marker", staged.event_type())
                        }
                        _ => error.message,
                    };
                    let error = self.refusal(Some(staged), Refusal::ArtifactRule, text);
                    self.verdict.with(|tiers| tiers.rule = Some(error));
                }
                self.verifier = None;
            }
        }
    }

    fn finish(&mut self) {
        if let Some(verifier) = self.verifier.take() {
            if let Err(error) = verifier.finish() {
                let error = self.refusal(None, Refusal::ArtifactRule, error.message);
                self.verdict.with(|tiers| tiers.rule = Some(error));
            }
        }
    }
}

impl<I: Iterator<Item = StageItem>> Iterator for ArtifactCheck<I> {
    type Item = StageItem;

    fn next(&mut self) -> Option<StageItem> {
        match self.input.next() {
            Some(Ok(staged)) => {
                self.judge(&staged);
                Some(Ok(staged))
            }
            Some(Err(error)) => {
                // The hop's edges stop at their first refusal; it outranks every later tier.
                self.envelope = false;
                self.verifier = None;
                self.verdict.with(|tiers| tiers.edge = true);
                Some(Err(error))
            }
            None => {
                self.finish();
                None
            }
        }
    }
}

/// Whether upstream's artifact restore has `rule`: the second pass of its V2 validator (the
/// relational rules and the surface fold), without the tool-result rewrite rules, which are
/// dsh-session's, not the format layer's (docs/rules.md).
fn artifact_rule(rule: Rule) -> bool {
    // The validator's own surface checks: a surface event without `surfaceOp` (S1) and a
    // source that is not an earlier seq (E7's text; it judges duplicates by coverage).
    let surface = matches!(rule, Rule::MissingSurfaceOp | Rule::SourceNotEarlier);
    surface
        || rule.is_second_pass()
            && !matches!(
                rule,
                Rule::ToolResultReplaceMulti
                    | Rule::ToolResultReplaceWrongTarget
                    | Rule::ToolResultReplaceChangesNonContent
            )
}

/// A v2 event as the V3 rules read it: renamed as the v2→v3 edge renames it, its replace
/// endpoints spelled `startSeq`/`endSeq`; seqs and references stay the artifact's.
fn in_v3_spelling(event: &Map<String, Value>) -> Value {
    let mut event = event.clone();
    let tag = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    super::v2_v3::rename_and_canonicalize(&tag, &mut event);
    if let Some(Value::Object(op)) = event.get_mut("surfaceOp") {
        for (from, to) in [("start", "startSeq"), ("end", "endSeq")] {
            if let Some(value) = op.shift_remove(from) {
                op.insert(to.into(), value);
            }
        }
    }
    Value::Object(event)
}

/// The artifact restore's envelope rules on v2 event `index` (E15–E20 of docs/rules.md), with
/// upstream's texts: type, vocabulary, exact keys, density, time, `ignorable`.
fn envelope(event: &Map<String, Value>, index: u64) -> Result<(), String> {
    let Some(tag) = event.get("type").and_then(Value::as_str) else {
        return Err(format!("format v2 event {index} type must be a string"));
    };
    let event_type = EventType::parse(tag);
    let ignorable = event.get("ignorable") == Some(&Value::Bool(true));
    let known = event_type.is_known_in(Generation::V2)
        || matches!(tag, "feedback/message-put" | "feedback/message-delete");
    if !known && !ignorable {
        return Err(format!(
            "format v2 contains unknown event type {} at seq {index}",
            strata_core::json::to_js_string(&Value::from(tag))
        ));
    }
    for key in ["type", "seq", "time", "data"] {
        if !event.contains_key(key) {
            return Err(format!(
                "format v2 event {index} lacks required field {key}"
            ));
        }
    }
    let surface_metadata = !known || event_type.is_surface_in(Generation::V2);
    let allowed = |key: &str| {
        matches!(key, "type" | "seq" | "time" | "data" | "ignorable")
            || (surface_metadata && matches!(key, "surfaceOp" | "sourceEventSeqs"))
    };
    if let Some(key) = event.keys().find(|key| !allowed(key)) {
        return Err(format!(
            "format v2 event {index} has unexpected field {key}"
        ));
    }
    let dense = event
        .get("seq")
        .and_then(number)
        .is_some_and(|seq| seq == index as f64);
    if !dense {
        return Err(format!("format v2 event {index} is not dense"));
    }
    let time_ok = event
        .get("time")
        .and_then(number)
        .is_some_and(|time| is_safe_integer(time) && !(time == 0.0 && time.is_sign_negative()));
    if !time_ok {
        return Err(format!(
            "format v2 event {index} time must be a safe integer"
        ));
    }
    if event
        .get("ignorable")
        .is_some_and(|value| *value != Value::Bool(true))
    {
        return Err(format!(
            "format v2 event {index} ignorable must be true when present"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::envelope;

    fn judge(event: Value, index: u64) -> Result<(), String> {
        match event {
            Value::Object(map) => envelope(&map, index),
            _ => Err("not an object".into()),
        }
    }

    #[test]
    fn the_envelope_rules_speak_upstreams_texts_in_its_order() {
        let ok = json!({"type": "turn/start", "seq": 3, "time": 5, "data": {"turn": 1}});
        assert_eq!(judge(ok.clone(), 3), Ok(()));
        assert_eq!(
            judge(ok.clone(), 4),
            Err("format v2 event 4 is not dense".into())
        );
        let mut log_only_sources = ok.clone();
        log_only_sources["sourceEventSeqs"] = json!([]);
        assert_eq!(
            judge(log_only_sources, 3),
            Err("format v2 event 3 has unexpected field sourceEventSeqs".into())
        );
        let mut no_data = ok.clone();
        no_data.as_object_mut().map(|map| map.shift_remove("data"));
        no_data["extra"] = json!(1);
        assert_eq!(
            judge(no_data, 3),
            Err("format v2 event 3 lacks required field data".into())
        );
        let mut fraction = ok.clone();
        fraction["time"] = json!(1.5);
        assert_eq!(
            judge(fraction, 3),
            Err("format v2 event 3 time must be a safe integer".into())
        );
        let mut not_ignorable = ok;
        not_ignorable["ignorable"] = json!(false);
        assert_eq!(
            judge(not_ignorable, 3),
            Err("format v2 event 3 ignorable must be true when present".into())
        );
        assert_eq!(
            judge(
                json!({"type": "x/unknown", "seq": 0, "time": 0, "data": {}}),
                0
            ),
            Err("format v2 contains unknown event type \"x/unknown\" at seq 0".into())
        );
        // An unknown ignorable event is opaque: it may carry surface metadata.
        let opaque = json!({"type": "x/unknown", "seq": 0, "time": 0, "data": {},
            "ignorable": true, "surfaceOp": "append"});
        assert_eq!(judge(opaque, 0), Ok(()));
        let user = json!({"type": "user/message", "seq": 0, "time": 0, "data": {},
            "surfaceOp": "append", "sourceEventSeqs": []});
        assert_eq!(judge(user, 0), Ok(()));
    }
}
