//! Every rejection path: each `Rule` reachable in V3 has a case asserting the
//! rule id, the seq/index fields and the exact message, on every entry path
//! the rule applies to.
//!
//! Event rules are proved by the data cases of the other modules (each
//! rendered line names the paths, the rule id, `seq=`/`index=` and the exact
//! text); this module checks that together they cover `Rule::ALL` on the
//! right paths, and adds the rules raised outside event paths (headers, seed
//! counts) and those only older generations raise.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};
use strata_core::{AcceptError, Generation, RawEvent, Rule, Session, SessionHeader};

use crate::harness::{cases, header, raw_events, rows};

/// Rules only the v0/v1 readers raise (strata reads those generations to
/// migrate them; V3 never raises these).
const OLDER_GENERATIONS_ONLY: &[Rule] = &[
    Rule::EmptySourceOnNonAssistant,
    Rule::LegacyHeaderDelta,
    Rule::LegacyFallbackReason,
    Rule::InternalTypeError,
];

/// Rules the core declares but V3 cases never reach.
const NOT_RAISED_BY_CORE: &[Rule] = &[
    // Upstream's P9 (`system message requires plugin source`) is checked first (docs/rules.md).
    Rule::SystemNoPluginSource,
    // R48 follows a turn boundary inside the bracket, whose R39 the bracket's own
    // `compaction/end` makes final (no stale start): R39 is reported (relations_66).
    Rule::CompactionEndTurn,
];

/// Rules only a V4 log raises; each has a case in `v4.rs`, which checks they are all covered.
pub(crate) const V4_ONLY: &[Rule] = &[
    Rule::V4RetiredSource,
    Rule::V4RetiredSyntax,
    Rule::V4SystemFields,
    Rule::V4ToolRole,
    Rule::V4ForkResult,
    Rule::V4Developer,
    Rule::V4DeveloperBinding,
    Rule::V4StepScoped,
    Rule::V4Catalog,
];

/// Rules only a lazily resumed session raises, when its event source fails; each has a case
/// in `lazy.rs`.
const LAZY_ONLY: &[Rule] = &[Rule::EventSourceFailed];

/// Rules raised by header and seed constructors rather than per event; each
/// has a case in `api_rejections`.
const API_RULES: &[Rule] = &[
    Rule::HeaderBadVersion,
    Rule::HeaderIdMismatch,
    Rule::HeaderInvalid,
    Rule::SeedMismatch,
];

/// The entry paths on which an event rule must be seen rejecting (§5.4, and
/// strata's V3 append shape checks).
fn required_paths(rule: Rule) -> &'static [&'static str] {
    const ALL: &[&str] = &["append", "batch", "seed", "restore", "extend", "fold"];
    const CHECKED: &[&str] = &["append", "batch", "seed", "restore", "extend"];
    match rule {
        // Appends assign seqs; only rows carry one.
        Rule::SeqNotContiguous => &["seed", "restore", "extend", "fold"],
        // Rows may be non-objects; appends only carry a time to check.
        Rule::InvalidEnvelope => &["append", "batch", "seed", "restore", "extend", "fold"],
        // Only paths that take a JSON snapshot.
        Rule::NonJson => &["append", "batch", "seed"],
        Rule::MissingSurfaceOp
        | Rule::SurfaceOpOnNonSurface
        | Rule::SourceOnNonSurface
        | Rule::InvalidSurfaceOp
        | Rule::ReplaceBadShape
        | Rule::ReplaceEndpointsNotEarlier
        | Rule::AssistantCitesSources
        | Rule::SourceNotArray
        | Rule::EmptySource
        | Rule::SourceInvalidSeq
        | Rule::SourceDuplicate
        | Rule::SourceNotEarlier
        | Rule::ReplaceStartNotFound
        | Rule::ReplaceEndNotFound
        | Rule::ReplaceEndpointsReversed
        | Rule::ReplaceUncoveredSource
        | Rule::ToolResultReplaceMulti
        | Rule::ToolResultReplaceWrongTarget
        | Rule::ToolResultReplaceChangesNonContent
        | Rule::SystemHeadProtected
        | Rule::UnknownType => ALL,
        // Reachable only behind R39's stale-start exception, which needs the rows after
        // the event (relations_64): stored logs read whole, not appends or a store's tail.
        Rule::SummaryTurn => &["seed", "restore"],
        // Data (§5.3) and shape (§4.5) rules: every path but the fold.
        _ => CHECKED,
    }
}

/// Rule id → the paths some data case shows rejecting with it.
fn rules_seen_in_data() -> BTreeMap<String, BTreeSet<String>> {
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, _) in crate::DATA_MODULES {
        for case in cases(file) {
            for line in case.expected.lines() {
                let Some((paths, outcome)) = line.split_once(": ") else {
                    continue;
                };
                let Some(rest) = outcome.strip_prefix("reject ") else {
                    continue;
                };
                let id: String = rest
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != ':')
                    .collect();
                let entry = seen.entry(id).or_default();
                for path in paths.split_whitespace() {
                    entry.insert(path.to_owned());
                }
            }
        }
    }
    seen
}

fn error<T>(result: Result<T, AcceptError>) -> AcceptError {
    match result {
        Ok(_) => panic!("expected a rejection"),
        Err(error) => error,
    }
}

/// One case for each rule raised outside the event paths, with its exact text.
fn api_rejections() -> Vec<AcceptError> {
    let v3 = |value: Value| SessionHeader::from_value(value, Generation::V3);
    let cases = vec![
        (
            error(v3(
                json!({"version": 2, "id": "s", "createdAt": 0, "isSeeded": false}),
            )),
            Rule::HeaderBadVersion,
            "session header version must be 3, got 2",
        ),
        (
            error(header("s").check_id("t")),
            Rule::HeaderIdMismatch,
            "session header id \"s\" does not match session id \"t\"",
        ),
        (
            error(v3(
                json!({"version": 3, "id": "s", "createdAt": -1, "isSeeded": false}),
            )),
            Rule::HeaderInvalid,
            "session header createdAt must be a non-negative safe integer",
        ),
        (
            error(Session::create_seeded(
                header("s"),
                raw_events(&rows("{\"$\":\"TS\"}")),
                Some(1),
                crate::harness::SURFACE_ONLY,
            )),
            Rule::SeedMismatch,
            "unseeded session inherited event count must be 0",
        ),
    ];
    cases
        .into_iter()
        .map(|(error, rule, message)| {
            assert_eq!((error.rule, error.message.as_str()), (rule, message));
            assert_eq!((error.seq, error.index), (None, None), "{message}");
            error
        })
        .collect()
}

// Rule::ALL coverage: every V3-reachable rule has a case on every path it
// applies to; the exempt lists are explicit and disjoint from what V3 raises.
#[test]
fn rejections_every_v3_rule_has_a_case_on_every_path() {
    let seen = rules_seen_in_data();
    let api: BTreeSet<&str> = api_rejections().iter().map(|e| e.rule.id()).collect();
    let mut missing = Vec::new();
    for rule in Rule::ALL {
        if OLDER_GENERATIONS_ONLY.contains(rule)
            || NOT_RAISED_BY_CORE.contains(rule)
            || LAZY_ONLY.contains(rule)
            || V4_ONLY.contains(rule)
        {
            assert!(
                !seen.contains_key(rule.id()),
                "{} is listed as not raised in V3, but a V3 case raises it",
                rule.id()
            );
            continue;
        }
        if API_RULES.contains(rule) {
            if !api.contains(rule.id()) {
                missing.push(format!("{}: no API case", rule.id()));
            }
            continue;
        }
        let Some(paths) = seen.get(rule.id()) else {
            missing.push(format!("{}: no data case", rule.id()));
            continue;
        };
        for path in required_paths(*rule) {
            if !paths.contains(*path) {
                missing.push(format!("{}: no case on the {path} path", rule.id()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "uncovered rules:\n{}",
        missing.join("\n")
    );
    // Every id the data shows is a real rule id.
    let ids: BTreeSet<&str> = Rule::ALL.iter().map(|rule| rule.id()).collect();
    for id in seen.keys() {
        assert!(ids.contains(id.as_str()), "unknown rule id {id} in data");
    }
}

// Header and seed-count rules: rule, location fields and exact text.
#[test]
fn rejections_header_and_seed_rules() {
    assert_eq!(api_rejections().len(), API_RULES.len());
}

fn v0_restore(rows: &[Value]) -> AcceptError {
    let header = SessionHeader::from_value(
        json!({"version": 0, "id": "old", "createdAt": 0}),
        Generation::V0,
    )
    .unwrap();
    let raws = rows.iter().cloned().map(RawEvent::from_value);
    error(Session::restore(header, raws, crate::harness::SURFACE_ONLY))
}

// The older-generation rules still fire when reading v0 logs (docs/v0-rules.md),
// and only there.
#[test]
fn rejections_older_generation_rules_fire_in_v0() {
    let user = json!({"type": "user/message", "seq": 0, "time": 0,
        "data": {"content": [], "source": {"kind": "user"}, "role": "user", "id": "m0"},
        "surfaceOp": "append", "sourceEventSeqs": []});
    let empty = v0_restore(&[user]);
    assert_eq!(
        (empty.rule, empty.seq, empty.index, empty.message.as_str()),
        (
            Rule::EmptySourceOnNonAssistant,
            Some(0),
            Some(0),
            "invalid seed event at index 0: sourceEventSeqs must not be empty except on assistant/message"
        )
    );
    let delta =
        v0_restore(&[json!({"type": "request/header-delta", "seq": 0, "time": 0, "data": {}})]);
    assert_eq!(
        (delta.rule, delta.message.as_str()),
        (
            Rule::LegacyHeaderDelta,
            "seed event at index 0 uses unsupported legacy request/header-delta format"
        )
    );
    let fallback = v0_restore(&[json!({"type": "request/header", "seq": 0, "time": 0,
        "data": {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "fallback"}})]);
    assert_eq!(
        (fallback.rule, fallback.message.as_str()),
        (
            Rule::LegacyFallbackReason,
            "seed event at index 0 uses unsupported legacy request/header reason \"fallback\""
        )
    );
    // A `null` row fails the way upstream's JavaScript does (fixtures/v0 env-row-null).
    let null_row = v0_restore(&[Value::Null]);
    assert_eq!(
        (null_row.rule, null_row.index, null_row.message.as_str()),
        (
            Rule::InternalTypeError,
            None,
            "Cannot read properties of null (reading 'type')"
        )
    );
}

fn v0_accepts(rows: &[Value]) -> Session {
    let header = SessionHeader::from_value(
        json!({"version": 0, "id": "old", "createdAt": 0}),
        Generation::V0,
    )
    .unwrap();
    Session::restore(
        header,
        rows.iter().cloned().map(RawEvent::from_value),
        crate::harness::SURFACE_ONLY,
    )
    .unwrap()
}

// v0 checks one event in upstream rc.8's order (docs/v0-rules.md, "Path --seed"): shapes
// before contiguity, the replace range before the source list; V3 keeps §5.2's order.
#[test]
fn rejections_v0_check_order_differs_from_v3() {
    let no_id = json!({"type": "user/message", "seq": 3, "time": 0, "data": {"role": "user"},
        "surfaceOp": "append"});
    let shape_first = v0_restore(&[no_id]);
    assert_eq!(
        (shape_first.rule, shape_first.message.as_str()),
        (
            Rule::MessageNoId,
            "seed user/message at index 0 lacks an identified message"
        )
    );
    let user = |seq: u64| {
        json!({"type": "user/message", "seq": seq, "time": 0, "surfaceOp": "append",
            "data": {"id": format!("m{seq}"), "role": "user", "source": {"kind": "user"}, "content": []}})
    };
    let mut replace = user(2);
    replace["surfaceOp"] = json!({"op": "replace", "start": 9, "end": 9});
    replace["sourceEventSeqs"] = json!([0, 0]);
    let range_first = v0_restore(&[user(0), user(1), replace]);
    assert_eq!(
        (range_first.rule, range_first.message.as_str()),
        (
            Rule::ReplaceStartNotFound,
            "invalid seed event at index 2: surface replace: start seq 9 not found in surface"
        )
    );
}

// v0 reads numbers as upstream's doubles: `-0` is a seq (and a duplicate of 0), `1.0` an
// integer; an unknown ignorable type may not carry surface metadata; `seedLength` is only
// type-checked (fixtures/v0 env-negative-zero-ok, src-duplicate-negzero,
// sf-unknown-ignorable-with-surfaceop, hdr-seedlength-unchecked-ok).
#[test]
fn rejections_v0_number_and_metadata_semantics() {
    let rows: Vec<Value> = [
        r#"{"type":"turn/start","seq":-0,"time":-0,"data":{"turn":1}}"#,
        r#"{"type":"user/message","seq":1.0,"time":1e3,"data":{"id":"u","role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":"append","sourceEventSeqs":[-0]}"#,
    ]
    .iter()
    .map(|line| serde_json::from_str(line).unwrap())
    .collect();
    let session = v0_accepts(&rows);
    assert_eq!(
        session.surface().nodes(),
        [strata_core::Seq::new(1).unwrap()]
    );
    let mut duplicate = rows[1].clone();
    duplicate["seq"] = json!(2);
    duplicate["sourceEventSeqs"] = serde_json::from_str("[0,-0]").unwrap();
    let error = v0_restore(&[rows[0].clone(), rows[1].clone(), duplicate]);
    assert_eq!(error.rule, Rule::SourceDuplicate);
    let opaque = json!({"type": "x/unknown", "seq": 0, "time": 0, "data": null,
        "ignorable": true, "surfaceOp": "append"});
    assert_eq!(v0_restore(&[opaque]).rule, Rule::SurfaceOpOnNonSurface);
    let seeded = SessionHeader::from_value(
        json!({"version": 0, "id": "old", "createdAt": 0, "seedLength": 99}),
        Generation::V0,
    )
    .unwrap();
    let restored = Session::restore(
        seeded,
        Vec::<strata_core::RawEvent>::new(),
        crate::harness::SURFACE_ONLY,
    )
    .unwrap();
    assert_eq!(restored.inherited_count(), 0);
    let relative = SessionHeader::from_value(
        json!({"version": 0, "id": "old", "createdAt": 0, "cwd": "rel"}),
        Generation::V0,
    )
    .unwrap_err();
    assert_eq!(
        relative.message,
        "session header cwd must be an absolute path, got \"rel\""
    );
}
