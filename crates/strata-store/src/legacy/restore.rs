//! The two v0 entry points upstream 0.1.0-rc.8 offers, reproduced step by step
//! (docs/v0-rules.md, "Path --seed" and "Path --restore").
//!
//! - [`seed_v0`] is `Session.fromRestore(id, events, header)`: the header rules, then every
//!   event through the core's seed path under the generation's rules, then the end-seed marker.
//! - [`restore_v0`] is the persistence coordinator's `prepare(id)`: R1 the version (refused
//!   unwrapped), R2 the whole-log legacy refusals, R3 the legacy upgrades and message shapes per
//!   event, R4 the vocabulary, R5 crash-repair closers for an open last turn, R6 the seed path
//!   over the log plus closers, R7 the closers re-checked as stored events. Failures in R2–R7
//!   are wrapped (`stored session "<id>" failed validation: …`), see [`Rejection`].
//!
//! Both return the accepted [`Session`] in the log's own generation and numbering, so its
//! surface seqs and derived messages are v0-native and compare directly with upstream's.

use serde_json::{Map, Value};
use strata_core::{
    check_stored_message, CloseCause, EventType, Generation, RawEvent, SeedOptions, Session,
    SessionHeader, StoredTurnScan,
};

use super::js;
use super::normalize::{RefusalScan, Upgrader};
use super::rejection::{LegacyRule, Rejection};

/// A log accepted by a v0 entry point.
pub struct Restored {
    /// The session, with the constructor's end-seed marker (and any repair closers).
    pub session: Session,
    /// The crash-repair closers the restore path appended, as `(type, seq)`.
    pub repair_closers: Vec<(String, u64)>,
}

/// `Session.fromRestore` under `generation`'s rules (v0 or v1): the oracle's `--seed`.
pub fn seed_v0(
    generation: Generation,
    header: &Map<String, Value>,
    events: Vec<Value>,
    options: SeedOptions,
) -> Result<Restored, Rejection> {
    let header = SessionHeader::from_value(Value::Object(header.clone()), generation)
        .map_err(|error| Rejection::from_accept(&error))?;
    let rows = events.into_iter().map(RawEvent::from_value);
    let session =
        Session::restore(header, rows, options).map_err(|error| Rejection::from_accept(&error))?;
    Ok(Restored {
        session,
        repair_closers: Vec::new(),
    })
}

/// The persistence coordinator's restore under `generation`'s rules: the oracle's `--restore`.
pub fn restore_v0(
    generation: Generation,
    header: &Map<String, Value>,
    mut events: Vec<Value>,
    options: SeedOptions,
) -> Result<Restored, Rejection> {
    let id = js::display(header.get("id"));
    check_version(generation, header, &id)?;
    // R2: three whole-log scans.
    let mut scan = RefusalScan::default();
    for event in &events {
        scan.observe(&id, event);
        if scan.decided() {
            break;
        }
    }
    if let Some(refusal) = scan.verdict() {
        return Err(refusal.clone());
    }
    // R3: upgrades and message shapes, event by event.
    let mut upgrader = Upgrader::new(&id);
    for event in &mut events {
        upgrader.upgrade(event)?;
        check_message(generation, event)?;
    }
    // R4: the vocabulary.
    for event in &events {
        check_vocabulary(generation, &id, event)?;
    }
    // R5: closers for a turn the log leaves open, themselves shape-checked.
    let mut scan = StoredTurnScan::new();
    for event in &events {
        scan.observe(event)
            .map_err(|error| Rejection::type_error(&error.message))?;
    }
    let closers = scan.closer_rows(CloseCause::Interrupted);
    for closer in &closers {
        check_message(generation, closer)?;
    }
    let repair_closers: Vec<(String, u64)> = closers
        .iter()
        .map(|closer| {
            (
                closer["type"].as_str().unwrap_or_default().to_owned(),
                closer["seq"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    // R6: the seed path over the (upgraded) log and the closers.
    let header_value = SessionHeader::from_value(Value::Object(header.clone()), generation)
        .map_err(|error| Rejection::from_accept(&error))?;
    let mut closer_rows = closers.clone();
    events.extend(closers);
    let rows = events.into_iter().map(RawEvent::from_value);
    let session = Session::restore(header_value, rows, options)
        .map_err(|error| Rejection::from_accept(&error))?;
    // R7: the committed closers are re-read as stored events; only their own upgrade checks
    // can fail now (a `turn/end` closing a turn numbered 0 or missing).
    for closer in &mut closer_rows {
        upgrader.upgrade(closer)?;
    }
    Ok(Restored {
        session,
        repair_closers,
    })
}

/// R3's message shapes (core §4.5 rules with the stored seq as subject).
fn check_message(generation: Generation, event: &Value) -> Result<(), Rejection> {
    let raw = RawEvent::from_value(event.clone());
    check_stored_message(generation, &raw).map_err(|error| Rejection::from_accept(&error))
}

/// R1: `version` must name the generation exactly; refused unwrapped, direction-aware.
fn check_version(
    generation: Generation,
    header: &Map<String, Value>,
    id: &str,
) -> Result<(), Rejection> {
    let expected = generation.format_version();
    let version = header.get("version");
    let exact = version
        .and_then(js::number)
        .is_some_and(|x| x == expected as f64);
    if exact {
        return Ok(());
    }
    let shown = js::display(version);
    let message = if js_greater(version, expected as f64) {
        format!(
            "session \"{id}\" uses log format v{shown}, but this harness reads only v{expected}: the log was written by a newer harness — upgrade the harness to open it"
        )
    } else {
        format!(
            "session \"{id}\" uses log format v{shown}, older than the supported v{expected}, and this build ships no upgrade path for it"
        )
    };
    Err(Rejection::unsupported(
        LegacyRule::HeaderBadVersion,
        message,
    ))
}

/// JavaScript's `value > bound` for the values a header can hold.
fn js_greater(value: Option<&Value>, bound: f64) -> bool {
    match value {
        Some(Value::Number(_)) => value.and_then(js::number).is_some_and(|x| x > bound),
        Some(Value::String(text)) => {
            let trimmed = text.trim();
            let parsed = if trimmed.is_empty() {
                Some(0.0)
            } else {
                trimmed.parse::<f64>().ok()
            };
            parsed.is_some_and(|x| x > bound)
        }
        Some(Value::Bool(flag)) => f64::from(u8::from(*flag)) > bound,
        _ => false,
    }
}

/// R4: a type the generation does not know must be marked `ignorable: true`.
fn check_vocabulary(generation: Generation, id: &str, event: &Value) -> Result<(), Rejection> {
    let tag = event.get("type");
    let known = tag
        .and_then(Value::as_str)
        .is_some_and(|tag| generation.is_known_type(&EventType::parse(tag)));
    if known || event.get("ignorable") == Some(&Value::Bool(true)) {
        return Ok(());
    }
    let seq = event.get("seq");
    Err(Rejection::unsupported(
        LegacyRule::UnknownType,
        format!(
            "session \"{id}\" contains event type \"{}\" (seq {}) unknown to this harness and not marked ignorable; refusing to interpret the log — it was likely written by a newer harness",
            js::display(tag),
            js::display(seq)
        ),
    )
    .with_seq_value(seq))
}
