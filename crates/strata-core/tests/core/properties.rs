//! Property tests of the surface algebra (§11.6 `properties.spec` and the
//! invariants of §§5–7), over random valid V3 logs.
//!
//! Logs are generated as abstract actions interpreted by a naive reference
//! model (`Model`) that keeps its own surface: turns and steps, a system node
//! 0 and its replacements, user, assistant and tool messages with tool calls,
//! compaction-style replaces over random spans citing every shadowed node,
//! tool-result prunes that change only content, log-only events, and unknown
//! `ignorable` events with garbage `surfaceOp`s. Each property drives the core
//! through its public API and compares against the model, a fold, a fresh
//! restore, or the session before a rejected write.
//!
//! Runs are reproducible (fixed RNG seed, no persistence files); case counts
//! keep the whole binary well under a minute in debug builds.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{json, Value};
use strata_core::fold::fold_surface;
use strata_core::{Candidate, EventType, Generation, RawEvent, Rule, Seq, Session};

use crate::harness::{assert_consistent, candidate, header, scratch_messages, Snapshot};

/// One step of a generated log; picks are reduced modulo what the model offers.
#[derive(Clone, Debug)]
pub(crate) enum Action {
    /// A user message.
    User,
    /// An assistant message announcing `calls` tool calls (0–2); `empty`
    /// gives empty content with usage when there are no calls.
    Assistant { calls: u8, empty: bool },
    /// `tool/call` for a pending announced call.
    StartCall { pick: usize },
    /// `tool/result` answering a pending call (citing its `tool/call` if started).
    Answer { pick: usize, failed: bool },
    /// A new prompt: replaces the system head, or appends a system node.
    System { empty: bool },
    /// A compaction: `compaction/start`, a summary replacing a random span,
    /// `compaction/end`. `as_system` makes the summary a system message.
    Compact {
        start: usize,
        len: usize,
        extra_source: bool,
        reverse_sources: bool,
        as_system: bool,
    },
    /// Rewrite a current tool result's content only.
    Prune { pick: usize },
    /// Close the step and turn, open the next turn and step.
    Turn,
    /// A known log-only event.
    LogOnly { kind: u8 },
    /// An unknown `ignorable` event with garbage surface metadata.
    Unknown { garbage: u8 },
}

pub(crate) fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => Just(Action::User),
        4 => (0u8..3, any::<bool>()).prop_map(|(calls, empty)| Action::Assistant { calls, empty }),
        2 => any::<usize>().prop_map(|pick| Action::StartCall { pick }),
        3 => (any::<usize>(), any::<bool>()).prop_map(|(pick, failed)| Action::Answer { pick, failed }),
        1 => any::<bool>().prop_map(|empty| Action::System { empty }),
        2 => (any::<usize>(), any::<usize>(), any::<bool>(), any::<bool>(), prop::bool::weighted(0.2))
            .prop_map(|(start, len, extra_source, reverse_sources, as_system)| Action::Compact {
                start, len, extra_source, reverse_sources, as_system,
            }),
        2 => any::<usize>().prop_map(|pick| Action::Prune { pick }),
        1 => Just(Action::Turn),
        2 => any::<u8>().prop_map(|kind| Action::LogOnly { kind }),
        1 => any::<u8>().prop_map(|garbage| Action::Unknown { garbage }),
    ]
}

/// A generated log: whether it opens with a system node, then the actions.
#[derive(Clone, Debug)]
pub(crate) struct Script {
    with_system: bool,
    actions: Vec<Action>,
}

pub(crate) fn script(max_actions: usize) -> impl Strategy<Value = Script> {
    (
        any::<bool>(),
        prop::collection::vec(action(), 0..max_actions),
    )
        .prop_map(|(with_system, actions)| Script {
            with_system,
            actions,
        })
}

/// The naive reference model: builds rows and keeps its own surface.
#[derive(Default)]
pub(crate) struct Model {
    pub(crate) rows: Vec<Value>,
    /// The model's surface, maintained independently of the core.
    nodes: Vec<u64>,
    replace_generation: u64,
    turn: u64,
    step: u64,
    step_open: bool,
    /// Announced calls not yet answered: (call id, tool/call seq if started).
    pending: Vec<(String, Option<u64>)>,
    next_id: u64,
}

impl Model {
    fn next_seq(&self) -> u64 {
        self.rows.len() as u64
    }

    fn fresh_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{}", self.next_id)
    }

    fn push(
        &mut self,
        event_type: &str,
        data: Value,
        op: Option<Value>,
        sources: Option<Vec<u64>>,
    ) {
        let seq = self.next_seq();
        let mut row = serde_json::Map::new();
        row.insert("type".into(), json!(event_type));
        row.insert("seq".into(), json!(seq));
        row.insert("time".into(), json!(1_000 + seq));
        row.insert("data".into(), data);
        if let Some(sources) = &sources {
            row.insert("sourceEventSeqs".into(), json!(sources));
        }
        if let Some(op) = &op {
            row.insert("surfaceOp".into(), op.clone());
            if op == "append" {
                self.nodes.push(seq);
            } else {
                let start = op["startSeq"].as_u64().unwrap();
                let end = op["endSeq"].as_u64().unwrap();
                let i = self.position(start).unwrap();
                let j = self.position(end).unwrap();
                self.nodes.splice(i..=j, [seq]);
                self.replace_generation += 1;
            }
        }
        self.rows.push(Value::Object(row));
    }

    fn push_ignorable(&mut self, event_type: &str, op: Value, sources: Value) {
        let seq = self.next_seq();
        self.rows
            .push(json!({"type": event_type, "seq": seq, "time": 1_000 + seq,
            "data": {"n": seq}, "sourceEventSeqs": sources, "surfaceOp": op, "ignorable": true}));
    }

    fn position(&self, seq: u64) -> Option<usize> {
        self.nodes.iter().position(|node| *node == seq)
    }

    fn row_type(&self, seq: u64) -> &str {
        self.rows[seq as usize]["type"].as_str().unwrap()
    }

    fn head_is_system(&self) -> bool {
        self.nodes
            .first()
            .is_some_and(|head| self.row_type(*head) == "system/message")
    }

    fn system(&mut self, text: &str) -> Value {
        let content = if text.is_empty() {
            json!([])
        } else {
            json!([{"type": "text", "text": text}])
        };
        let id = self.fresh_id("s");
        json!({"turn": self.turn, "step": self.step, "message": {"role": "system", "content": content,
            "source": {"kind": "plugin", "plugin": "@deepseek-ai/dsh-system-prompt"}, "id": id}})
    }

    fn user(&mut self, text: &str, kind: &str) -> Value {
        let id = self.fresh_id("m");
        json!({"content": [{"type": "text", "text": text}], "source": {"kind": kind}, "role": "user", "id": id})
    }

    fn open_turn(&mut self) {
        self.turn += 1;
        self.step = 1;
        self.push("turn/start", json!({"turn": self.turn}), None, None);
        self.push(
            "step/start",
            json!({"turn": self.turn, "step": 1}),
            None,
            None,
        );
        self.step_open = true;
    }

    pub(crate) fn apply(&mut self, action: &Action) {
        match *action {
            Action::User => {
                let data = self.user("hello", "user");
                self.push("user/message", data, Some(json!("append")), None);
            }
            Action::Assistant { calls, empty } => {
                let id = self.fresh_id("a");
                let mut content = Vec::new();
                if !empty || calls > 0 {
                    content.push(json!({"type": "text", "text": "thinking"}));
                }
                for _ in 0..calls {
                    let call = self.fresh_id("call-");
                    content.push(json!({"type": "tool-call", "id": call, "name": "read", "arguments": "{}"}));
                    self.pending.push((call, None));
                }
                let data = json!({"turn": self.turn, "step": self.step, "message": {"role": "assistant",
                    "content": content, "source": {"kind": "model", "provider": "p", "model": "m"}, "id": id},
                    "stream": [], "usage": {"outputTokens": 3}});
                self.push("assistant/message", data, Some(json!("append")), None);
            }
            Action::StartCall { pick } => {
                let unstarted: Vec<usize> = (0..self.pending.len())
                    .filter(|index| self.pending[*index].1.is_none())
                    .collect();
                if unstarted.is_empty() {
                    return;
                }
                let index = unstarted[pick % unstarted.len()];
                let seq = self.next_seq();
                let call = self.pending[index].0.clone();
                self.push("tool/call", json!({"turn": self.turn, "step": self.step, "callId": call,
                    "name": "read", "arguments": "{}"}), None, None);
                self.pending[index].1 = Some(seq);
            }
            Action::Answer { pick, failed } => {
                if self.pending.is_empty() {
                    return;
                }
                let (call, started) = self.pending.remove(pick % self.pending.len());
                let id = self.fresh_id("t");
                let mut data = json!({"turn": self.turn, "step": self.step, "message": {
                    "source": {"kind": "tool", "callId": call},
                    "content": [{"type": "tool-result", "toolCallId": call,
                        "content": [{"type": "text", "text": "long tool output"}], "isError": failed}],
                    "role": "user", "id": id}});
                if failed {
                    data["error"] = json!({"name": "ToolError", "code": "E_TOOL"});
                }
                data["meta"] = json!({"bytes": [1, 2, {"x": null}]});
                self.push("tool/result", data, Some(json!("append")), started.map(|seq| vec![seq]));
            }
            Action::System { empty } => {
                let text = if empty { "" } else { "be brief" };
                let data = self.system(text);
                if self.head_is_system() {
                    let head = self.nodes[0];
                    self.push("system/message", data, Some(json!({"op": "replace", "startSeq": head, "endSeq": head})), Some(vec![head]));
                } else {
                    self.push("system/message", data, Some(json!("append")), None);
                }
            }
            Action::Compact { start, len, extra_source, reverse_sources, as_system } => {
                // Node 0 holding the prompt may only be rewritten by a system
                // message over exactly that node (§5.2 rule 10).
                let protected = usize::from(self.head_is_system());
                if self.nodes.len() <= protected {
                    return;
                }
                let i = protected + start % (self.nodes.len() - protected);
                let j = i + len % (self.nodes.len() - i).min(4);
                let shadowed: Vec<u64> = self.nodes[i..=j].to_vec();
                let mut sources = shadowed.clone();
                if reverse_sources {
                    sources.reverse();
                }
                if extra_source {
                    // Any earlier event may be cited, on the surface or not.
                    let extra = (0..self.next_seq()).find(|seq| !sources.contains(seq));
                    sources.extend(extra);
                }
                let compaction_id = self.fresh_id("k");
                self.push("compaction/start", json!({"compactionId": compaction_id, "turn": self.turn}), None, None);
                let op = json!({"op": "replace", "startSeq": shadowed[0], "endSeq": shadowed[shadowed.len() - 1]});
                let data = if as_system {
                    self.system("summary")
                } else {
                    let mut data = self.user("summary", "compact-checkpoint");
                    data["source"]["compactionId"] = json!(compaction_id);
                    data
                };
                let event_type = if as_system { "system/message" } else { "user/message" };
                self.push(event_type, data, Some(op), Some(sources));
                self.push("compaction/end", json!({"compactionId": compaction_id, "turn": self.turn}), None, None);
            }
            Action::Prune { pick } => {
                let results: Vec<u64> = self
                    .nodes
                    .iter()
                    .copied()
                    .filter(|seq| self.row_type(*seq) == "tool/result")
                    .collect();
                if results.is_empty() {
                    return;
                }
                let target = results[pick % results.len()];
                let mut data = self.rows[target as usize]["data"].clone();
                data["message"]["content"][0]["content"] = json!([{"type": "text", "text": "[pruned]"}]);
                let op = json!({"op": "replace", "startSeq": target, "endSeq": target});
                self.push("tool/result", data, Some(op), Some(vec![target]));
            }
            Action::Turn => {
                if self.step_open {
                    self.push("step/end", json!({"turn": self.turn, "step": self.step}), None, None);
                }
                self.push("turn/end", json!({"turn": self.turn, "reason": {"kind": "completed"}}), None, None);
                self.pending.clear();
                self.open_turn();
            }
            Action::LogOnly { kind } => match kind % 5 {
                0 => self.push("todo/write", json!({"todos": [{"content": "x", "status": "pending"}]}), None, None),
                1 => self.push("request/context", json!({"provider": "p", "model": "m", "contextWindow": 1000 + u64::from(kind)}), None, None),
                2 => self.push("request/header", json!({"header": {"config": {"provider": "p", "model": format!("m{kind}")}}, "reason": "change"}), None, None),
                3 => self.push("assistant/attempt", json!({"turn": self.turn, "step": self.step, "stream": []}), None, None),
                _ => {
                    if self.step_open {
                        self.push("step/end", json!({"turn": self.turn, "step": self.step}), None, None);
                    }
                    self.step += 1;
                    self.push("step/start", json!({"turn": self.turn, "step": self.step}), None, None);
                    self.step_open = true;
                }
            },
            Action::Unknown { garbage } => {
                let op = match garbage % 4 {
                    0 => json!("append"),
                    1 => json!({"op": "replace", "startSeq": -1, "endSeq": "x"}),
                    2 => json!([garbage]),
                    _ => json!(null),
                };
                // Upstream's row decoder reads every row's sources (docs/rules.md, E7): an
                // opaque event keeps any list it admits, `[start, end]` ranges included.
                let sources = if garbage % 3 == 0 && self.next_seq() > 0 {
                    json!([[0, self.next_seq() - 1]])
                } else {
                    json!([])
                };
                let event_type = if garbage % 2 == 0 { "x-plugin/event" } else { "tool/code-dispatch" };
                self.push_ignorable(event_type, op, sources);
            }
        }
    }

    pub(crate) fn build(script: &Script) -> Model {
        let mut model = Model::default();
        model.open_turn();
        model.push(
            "request/header",
            json!({"header": {"config": {"provider": "p", "model": "m"}}, "reason": "initial"}),
            None,
            None,
        );
        if script.with_system {
            model.apply(&Action::System { empty: false });
        }
        for action in &script.actions {
            model.apply(action);
        }
        model
    }
}

/// A session built by appending every row as a dynamic candidate.
fn appended(rows: &[Value]) -> Session {
    let mut session = crate::harness::create(header("prop")).unwrap();
    for (index, row) in rows.iter().enumerate() {
        let (candidate, time) = candidate(row, index).unwrap();
        session
            .append(candidate, time)
            .unwrap_or_else(|error| panic!("row {index} rejected: {error}\n{row}"));
    }
    session
}

pub(crate) fn raws(rows: &[Value]) -> Vec<RawEvent> {
    rows.iter().cloned().map(RawEvent::from_value).collect()
}

fn message_values(messages: &[strata_core::Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|message| message.value().clone())
        .collect()
}

fn derived(session: &Session) -> Vec<Value> {
    message_values(&session.derive_messages().to_vec())
}

/// The messages of a freshly restored copy of `rows`, projected node by node.
fn scratch(rows: &[Value]) -> Vec<Value> {
    let fresh =
        Session::restore(header("scratch"), raws(rows), crate::harness::SURFACE_ONLY).unwrap();
    message_values(&scratch_messages(&fresh))
}

/// The fixed pass of these properties (strata-testkit then runs a fresh pass on a new seed).
/// Failures are kept under `tests/proptest-regressions/` and replayed first.
pub(crate) fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x5eed_c0de),
        ..Config::default()
    }
}

/// A candidate that must be rejected against `session`, and the rule it
/// must be rejected with. `kind` picks the mutation; the first applicable
/// one from there on is used.
pub(crate) fn bad_candidate(session: &Session, kind: usize, pick: usize) -> (Candidate, Rule) {
    let nodes = session.surface().nodes();
    let next = session.next_seq().get();
    let user = || json!({"content": [{"type": "text", "text": "bad"}], "source": {"kind": "user"}, "role": "user", "id": "bad"});
    let replace = |start: Seq, end: Seq| json!({"op": "replace", "startSeq": start.get(), "endSeq": end.get()});
    let head_is_system = nodes
        .first()
        .and_then(|head| session.event(*head))
        .is_some_and(|head| *head.event_type() == EventType::SystemMessage);
    for offset in 0..12 {
        match (kind + offset) % 12 {
            // Break coverage: leave one shadowed node uncited.
            0 if nodes.len() >= 2 => {
                let i = pick % (nodes.len() - 1);
                let sources: Vec<u64> = vec![nodes[i].get()];
                let op = replace(nodes[i], nodes[i + 1]);
                return (
                    Candidate::dynamic("user/message", user(), Some(op), Some(json!(sources))),
                    Rule::ReplaceUncoveredSource,
                );
            }
            // An endpoint that is an earlier event but not a node.
            1 => {
                if let Some(off) = (0..next)
                    .map(|seq| Seq::new(seq).unwrap())
                    .find(|seq| !nodes.contains(seq))
                {
                    let op = replace(off, off);
                    return (
                        Candidate::dynamic(
                            "user/message",
                            user(),
                            Some(op),
                            Some(json!([off.get()])),
                        ),
                        Rule::ReplaceStartNotFound,
                    );
                }
            }
            // Endpoints in the wrong surface order.
            2 if nodes.len() >= 2 => {
                let i = pick % (nodes.len() - 1);
                let op = replace(nodes[i + 1], nodes[i]);
                let sources = json!([nodes[i].get(), nodes[i + 1].get()]);
                return (
                    Candidate::dynamic("user/message", user(), Some(op), Some(sources)),
                    Rule::ReplaceEndpointsReversed,
                );
            }
            // Endpoints at or after the candidate itself.
            3 => {
                let op = json!({"op": "replace", "startSeq": next, "endSeq": next});
                // Sources below the candidate: a later one is refused first (E7).
                let sources = if next == 0 { json!([]) } else { json!([0]) };
                return (
                    Candidate::dynamic("user/message", user(), Some(op), Some(sources)),
                    Rule::ReplaceEndpointsNotEarlier,
                );
            }
            // Wrong type for the metadata: surfaceOp on a log-only event.
            4 => {
                return (
                    Candidate::dynamic(
                        "turn/start",
                        json!({"turn": 9}),
                        Some(json!("append")),
                        None,
                    ),
                    Rule::SurfaceOpOnNonSurface,
                )
            }
            // A surface event without its marker.
            5 => {
                return (
                    Candidate::dynamic("user/message", user(), None, None),
                    Rule::MissingSurfaceOp,
                )
            }
            // Sources that are not earlier, or that an assistant may not carry.
            6 => {
                return (
                    Candidate::dynamic(
                        "user/message",
                        user(),
                        Some(json!("append")),
                        Some(json!([next])),
                    ),
                    Rule::SourceNotEarlier,
                )
            }
            7 => {
                let data = json!({"turn": 1, "step": 1, "message": {"role": "assistant", "content": [], "source": {"kind": "model", "provider": "p", "model": "m"}, "id": "bad"}, "stream": []});
                return (
                    Candidate::dynamic(
                        "assistant/message",
                        data,
                        Some(json!("append")),
                        // Not even `[]`; a later seq would be refused first (E7).
                        Some(if next == 0 { json!([]) } else { json!([0]) }),
                    ),
                    Rule::AssistantCitesSources,
                );
            }
            // The system head rewritten by a user message.
            8 if head_is_system => {
                let op = replace(nodes[0], nodes[0]);
                return (
                    Candidate::dynamic(
                        "user/message",
                        user(),
                        Some(op),
                        Some(json!([nodes[0].get()])),
                    ),
                    Rule::SystemHeadProtected,
                );
            }
            // A prune that changes the message id, not only the content.
            9 => {
                let target = nodes.iter().copied().find(|seq| {
                    session
                        .event(*seq)
                        .is_some_and(|event| *event.event_type() == EventType::ToolResult)
                });
                if let Some(target) = target {
                    let mut data = session.event(target).unwrap().data().clone();
                    data["message"]["id"] = json!("renamed");
                    let op = replace(target, target);
                    return (
                        Candidate::dynamic(
                            "tool/result",
                            data,
                            Some(op),
                            Some(json!([target.get()])),
                        ),
                        Rule::ToolResultReplaceChangesNonContent,
                    );
                }
            }
            // A data rule and the lossless-JSON rule.
            10 => {
                let data = json!({"header": {"config": {"provider": "p", "model": "m"}, "tools": []}, "reason": "change"});
                return (
                    Candidate::dynamic("request/header", data, None, None),
                    Rule::EmptyTools,
                );
            }
            11 => {
                let data: Value = serde_json::from_str(r#"{"turn":-0}"#).unwrap();
                return (
                    Candidate::dynamic("turn/start", data, None, None),
                    Rule::NonJson,
                );
            }
            _ => {}
        }
    }
    unreachable!("mutations 3–7 always apply")
}

// §6.3 / §6.5 (property S1, docs/testing.md): the incremental surface equals the reference
// model and an offline fold of the same log, nodes and replace generation.
#[test]
fn properties_incremental_surface_equals_fold_and_model() {
    strata_testkit::proptest!(config(96), |(script in script(40))| {
        let model = Model::build(&script);
        let session = appended(&model.rows);
        let nodes: Vec<u64> = session.surface().nodes().iter().map(|seq| seq.get()).collect();
        prop_assert_eq!(&nodes, &model.nodes);
        prop_assert_eq!(session.surface().replace_generation(), model.replace_generation);
        let fold = fold_surface(raws(&model.rows)).unwrap();
        prop_assert_eq!(fold.nodes.as_slice(), session.surface().nodes());
        prop_assert_eq!(fold.replace_generation, model.replace_generation);
        prop_assert_eq!(fold.replacements.len() as u64, model.replace_generation);
        // Seed, restore and extend agree with append.
        let restored = Session::restore(header("r"), raws(&model.rows), crate::harness::SURFACE_ONLY).unwrap();
        prop_assert_eq!(restored.surface(), session.surface());
        assert_consistent(&session);
    });
}

// §7.1 (property S2, docs/testing.md): derive_messages, called at random points while the
// log grows, equals a from-scratch projection of a freshly restored session.
#[test]
fn properties_cached_messages_equal_scratch_derivation() {
    strata_testkit::proptest!(config(48), |(script in script(30), checkpoints in prop::collection::vec(any::<bool>(), 80))| {
        let model = Model::build(&script);
        let mut session = crate::harness::create(header("prop")).unwrap();
        for (index, row) in model.rows.iter().enumerate() {
            let (candidate, time) = candidate(row, index).unwrap();
            session.append(candidate, time).unwrap();
            if checkpoints[index % checkpoints.len()] {
                prop_assert_eq!(derived(&session), scratch(&model.rows[..=index]), "after seq {}", index);
            }
        }
        prop_assert_eq!(derived(&session), scratch(&model.rows));
    });
}

// §1.5 / §6.3 (property S3, docs/testing.md): a rejected append — a valid log's candidate
// mutated to break coverage, endpoints, type, sources, the system head, a
// prune, a data rule or JSON losslessness — is refused with the expected rule
// and leaves events, surface, generation, messages and header unchanged.
#[test]
fn properties_rejected_append_changes_nothing() {
    strata_testkit::proptest!(config(96), |(script in script(30), cut in any::<usize>(), kind in 0usize..12, pick in any::<usize>())| {
        let model = Model::build(&script);
        let cut = cut % (model.rows.len() + 1);
        let mut session = appended(&model.rows[..cut]);
        let _ = session.derive_messages();
        let before = Snapshot::of(&session);
        let (bad, rule) = bad_candidate(&session, kind, pick);
        let error = session.append(bad, 5).unwrap_err();
        prop_assert_eq!(error.rule, rule, "{}", error.message);
        prop_assert_eq!(error.seq, Some(cut as u64));
        prop_assert_eq!(Snapshot::of(&session), before);
        // The session is still usable: the rest of the log appends.
        for (index, row) in model.rows.iter().enumerate().skip(cut) {
            let (candidate, time) = candidate(row, index).unwrap();
            session.append(candidate, time).unwrap();
        }
        prop_assert_eq!(derived(&session), scratch(&model.rows));
    });
}

// DESIGN "byte-identical" (property S4, docs/testing.md): write → read → restore → write
// is byte-identical for every event.
#[test]
fn properties_write_read_restore_round_trip_is_byte_identical() {
    strata_testkit::proptest!(config(64), |(script in script(40))| {
        let model = Model::build(&script);
        let session = appended(&model.rows);
        let lines: Vec<String> = session.events().unwrap().iter().map(|event| event.to_json()).collect();
        let reread: Vec<RawEvent> = lines.iter().map(|line| RawEvent::from_json_str(line).unwrap()).collect();
        let restored = Session::restore(session.header().clone(), reread, crate::harness::SURFACE_ONLY).unwrap();
        for (line, event) in lines.iter().zip(restored.events().unwrap()) {
            prop_assert_eq!(line, &event.to_json());
        }
        prop_assert_eq!(restored.len(), lines.len() + 1, "restore adds one end-seed marker");
        // The generated rows themselves are written back verbatim.
        for (row, line) in model.rows.iter().zip(&lines) {
            prop_assert_eq!(&serde_json::to_string(row).unwrap(), line);
        }
    });
}

// §6.3 (property S5, docs/testing.md): append_batch with a bad candidate in the middle
// is refused as a whole and leaves everything unchanged.
#[test]
fn properties_batch_with_a_bad_candidate_changes_nothing() {
    strata_testkit::proptest!(config(64), |(script in script(30), cut in any::<usize>(), middle in any::<usize>(), kind in 0usize..12, pick in any::<usize>())| {
        let model = Model::build(&script);
        let cut = cut % (model.rows.len() + 1);
        let middle = cut + middle % (model.rows.len() - cut + 1);
        let mut session = appended(&model.rows[..cut]);
        let _ = session.derive_messages();
        let before = Snapshot::of(&session);
        // The bad candidate is judged against the state the batch reaches.
        let probe = appended(&model.rows[..middle]);
        let (bad, rule) = bad_candidate(&probe, kind, pick);
        let mut batch: Vec<Candidate> = model.rows[cut..middle]
            .iter()
            .enumerate()
            .map(|(offset, row)| candidate(row, cut + offset).unwrap().0)
            .collect();
        batch.push(bad);
        batch.extend(model.rows[middle..].iter().enumerate().map(|(offset, row)| candidate(row, middle + offset).unwrap().0));
        let error = session.append_batch(batch, 7).unwrap_err();
        prop_assert_eq!(error.rule, rule, "{}", error.message);
        prop_assert_eq!(error.seq, Some(middle as u64));
        prop_assert_eq!(Snapshot::of(&session), before);
    });
}

// §11.6 items 1, 2 and 6: derivation is deterministic; seq equals index and
// the final seq equals the event count; every message has a V3 role
// (tool results are user messages in V3); deriving leaves the log unchanged.
#[test]
fn properties_01_02_06_deterministic_dense_and_well_roled() {
    strata_testkit::proptest!(config(48), |(script in script(25))| {
        let model = Model::build(&script);
        let session = appended(&model.rows);
        let other = appended(&model.rows);
        let before = Snapshot::of(&session);
        prop_assert_eq!(derived(&session), derived(&session));
        prop_assert_eq!(derived(&session), derived(&other));
        for (index, event) in session.events().unwrap().iter().enumerate() {
            prop_assert_eq!(event.seq().get(), index as u64);
        }
        prop_assert_eq!(session.next_seq().get(), session.len() as u64);
        for message in session.derive_messages().iter() {
            prop_assert!(["user", "assistant", "system"].contains(&message.role()), "role {}", message.role());
        }
        prop_assert_eq!(Snapshot::of(&session), before);
    });
}

// §11.6 items 3 and 4: replay from a seed reproduces the messages and adds
// exactly one end-seed; replaying a log that ends in one adds nothing.
#[test]
fn properties_03_04_seed_replay_reproduces_and_is_idempotent() {
    strata_testkit::proptest!(config(48), |(script in script(25))| {
        let model = Model::build(&script);
        let original = appended(&model.rows);
        let replay = Session::create_seeded(header("replay"), original.to_raw_events().unwrap(), None, crate::harness::SURFACE_ONLY).unwrap();
        prop_assert_eq!(derived(&replay), derived(&original));
        prop_assert_eq!(replay.len(), original.len() + 1);
        prop_assert_eq!(replay.events().unwrap().last().unwrap().event_type(), &EventType::SessionEndSeed);
        let again = Session::create_seeded(header("again"), replay.to_raw_events().unwrap(), None, crate::harness::SURFACE_ONLY).unwrap();
        prop_assert_eq!(again.len(), replay.len());
        prop_assert_eq!(derived(&again), derived(&original));
    });
}

// §11.6 item 5: interleaving non-message events (brackets, attempts, plugin
// and unknown ignorable events) does not change the derived messages.
#[test]
fn properties_05_non_message_events_do_not_change_messages() {
    let noise = prop_oneof![
        any::<u8>().prop_map(|kind| Action::LogOnly { kind }),
        any::<u8>().prop_map(|garbage| Action::Unknown { garbage }),
    ];
    strata_testkit::proptest!(config(48), |(script in script(25), inserts in prop::collection::vec((any::<usize>(), noise.clone()), 0..10))| {
        let mut noisy = script.clone();
        for (at, action) in inserts {
            let at = at % (noisy.actions.len() + 1);
            noisy.actions.insert(at, action);
        }
        let plain = appended(&Model::build(&script).rows);
        let noisy = appended(&Model::build(&noisy).rows);
        prop_assert_eq!(derived(&noisy), derived(&plain));
    });
}

// The generator itself: over a sample of scripts, every shape the properties
// rely on occurs (so a generator bug cannot quietly weaken them).
#[test]
fn properties_generator_covers_every_shape() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::new(config(1));
    let strategy = script(40);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        let script = strategy.new_tree(&mut runner).unwrap().current();
        let model = Model::build(&script);
        for (index, row) in model.rows.iter().enumerate() {
            let event_type = row["type"].as_str().unwrap();
            let op = &row["surfaceOp"];
            let shape = match (event_type, op.get("op").is_some()) {
                ("system/message", true)
                    if row["sourceEventSeqs"]
                        .as_array()
                        .is_some_and(|s| s.len() == 1) =>
                {
                    "system head replaced"
                }
                ("system/message", true) => "system summary",
                ("user/message", true) => "compaction summary",
                ("tool/result", true) => "tool result pruned",
                ("tool/result", false) if row.get("sourceEventSeqs").is_some() => {
                    "started call answered"
                }
                (_, _) if row.get("ignorable").is_some() => "unknown ignorable",
                ("assistant/message", _) if row["data"]["message"]["content"] == json!([]) => {
                    "empty assistant"
                }
                _ => "",
            };
            seen.insert(shape);
            if index == 3 && event_type == "system/message" {
                seen.insert("system node 0");
            }
        }
        if model.replace_generation >= 3 {
            seen.insert("three replacements");
        }
    }
    for shape in [
        "system head replaced",
        "system summary",
        "compaction summary",
        "tool result pruned",
        "started call answered",
        "unknown ignorable",
        "empty assistant",
        "system node 0",
        "three replacements",
    ] {
        assert!(
            seen.contains(shape),
            "the generator never produced: {shape}"
        );
    }
}

// §8 / §9.3: at any cut of a valid log, crash repair and an any-prefix fork
// give valid, closed, consistent logs: the closers restore, a second repair
// adds nothing, a child inherits the exact prefix, and a closed-turn fork
// either refuses with OPEN_TURN or agrees with the any-prefix child.
#[test]
fn properties_repair_and_fork_at_any_cut_are_valid() {
    use strata_core::fork::ForkErrorCode;
    use strata_core::repair::open_turn_closers;
    use strata_core::{fork_session, CloseCause, ForkMode};
    strata_testkit::proptest!(config(48), |(script in script(30), cut in any::<usize>())| {
        let model = Model::build(&script);
        let cut = cut % model.rows.len();
        let prefix = &model.rows[..=cut];
        for cause in [CloseCause::Interrupted, CloseCause::Forked] {
            let repaired = Session::restore(header("r"), raws(prefix), crate::harness::SURFACE_ONLY.repaired(cause)).unwrap();
            assert_consistent(&repaired);
            // Rows checked ahead (as a store's decoding threads do) repair the same way.
            let ahead = raws(prefix)
                .into_iter()
                .enumerate()
                .map(|(index, raw)| strata_core::ingest::PrecheckedRow::check(Generation::NATIVE, index as u64, raw));
            let ahead = Session::restore(header("r"), ahead, crate::harness::SURFACE_ONLY.repaired(cause)).unwrap();
            prop_assert_eq!(ahead.events().unwrap(), repaired.events().unwrap());
            prop_assert_eq!(ahead.surface(), repaired.surface());
            prop_assert!(open_turn_closers(repaired.events().unwrap(), cause).is_empty());
            let again = Session::restore(header("r"), repaired.to_raw_events().unwrap(), crate::harness::SURFACE_ONLY.repaired(cause)).unwrap();
            prop_assert_eq!(again.len(), repaired.len());
        }
        let parent = appended(&model.rows);
        let any = fork_session(&parent, "child", Some(cut as u64), ForkMode::AnyPrefix, 0).unwrap();
        assert_consistent(&any);
        prop_assert_eq!(any.inherited_count(), cut as u64 + 1);
        for (a, b) in parent.events().unwrap()[..=cut].iter().zip(any.events().unwrap()) {
            prop_assert_eq!(a.to_json(), b.to_json());
        }
        prop_assert!(open_turn_closers(any.events().unwrap(), CloseCause::Forked).is_empty());
        match fork_session(&parent, "child", Some(cut as u64), ForkMode::ClosedTurn, 0) {
            Ok(closed) => {
                assert_consistent(&closed);
                prop_assert_eq!(closed.len(), cut + 2, "prefix and marker only");
                prop_assert_eq!(derived(&closed), derived(&any));
            }
            Err(error) => {
                prop_assert_eq!(error.code, ForkErrorCode::OpenTurn);
                prop_assert!(any.len() > cut + 2, "an open turn gets closers");
            }
        }
    });
}

/// Mutates the log's own next row so it must be refused; `None` when the
/// mutation does not apply to that row. Returns the row and the rules it may
/// be refused with.
fn mutate_row(row: &Value, next: u64, kind: usize) -> Option<(Value, Vec<Rule>)> {
    let mut row = row.clone();
    let event_type = row["type"].as_str()?.to_owned();
    let surface = [
        "user/message",
        "assistant/message",
        "tool/result",
        "system/message",
    ]
    .contains(&event_type.as_str());
    let map = row.as_object_mut()?;
    if map.contains_key("ignorable") {
        return None;
    }
    let op = map.get("surfaceOp").cloned();
    let replace = op.as_ref().and_then(|op| op.get("op")).is_some();
    match kind % 5 {
        // Drop the marker of a surface event.
        0 if surface => {
            map.shift_remove("surfaceOp");
            Some((row, vec![Rule::MissingSurfaceOp]))
        }
        // Give a log-only event a marker, or turn a surface event's type into a log-only one.
        1 => {
            if surface {
                map.insert("type".into(), json!("turn/start"));
            } else {
                map.insert("surfaceOp".into(), json!("append"));
            }
            Some((row, vec![Rule::SurfaceOpOnNonSurface]))
        }
        // Break coverage: drop the first cited shadowed endpoint.
        2 if replace => {
            let start = op.as_ref()?.get("startSeq")?.clone();
            let sources: Vec<Value> = map
                .get("sourceEventSeqs")?
                .as_array()?
                .iter()
                .filter(|s| **s != start)
                .cloned()
                .collect();
            map.insert("sourceEventSeqs".into(), json!(sources));
            Some((row, vec![Rule::ReplaceUncoveredSource, Rule::EmptySource]))
        }
        // Swap the endpoints of a multi-node replace.
        3 if replace && op.as_ref()?["startSeq"] != op.as_ref()?["endSeq"] => {
            let op = op?;
            map.insert(
                "surfaceOp".into(),
                json!({"op": "replace", "startSeq": op["endSeq"], "endSeq": op["startSeq"]}),
            );
            Some((row, vec![Rule::ReplaceEndpointsReversed]))
        }
        // Cite the candidate itself.
        4 if surface => {
            let mut sources = map
                .get("sourceEventSeqs")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            sources.push(json!(next));
            map.insert("sourceEventSeqs".into(), json!(sources));
            // The row decoder reads the list before the assistant rule (docs/rules.md, E7).
            Some((row, vec![Rule::SourceNotEarlier]))
        }
        _ => None,
    }
}

// §1.5 / §6.3 (property S3, second form): the log's own next candidate,
// mutated (marker dropped or added, type changed, coverage broken, endpoints
// swapped, itself cited), is refused and changes nothing; the original
// candidate is then accepted.
#[test]
fn properties_mutated_next_candidate_is_refused_and_changes_nothing() {
    strata_testkit::proptest!(config(96), |(script in script(30), cut in any::<usize>(), kind in 0usize..5)| {
        let model = Model::build(&script);
        let cut = cut % model.rows.len();
        let Some((bad, rules)) = mutate_row(&model.rows[cut], cut as u64, kind) else {
            return Ok(());
        };
        let mut session = appended(&model.rows[..cut]);
        let _ = session.derive_messages();
        let before = Snapshot::of(&session);
        let (bad, time) = candidate(&bad, cut).unwrap();
        let error = session.append(bad, time).unwrap_err();
        prop_assert!(rules.contains(&error.rule), "{:?}: {}", error.rule, error.message);
        prop_assert_eq!(Snapshot::of(&session), before);
        let (good, time) = candidate(&model.rows[cut], cut).unwrap();
        session.append(good, time).unwrap();
    });
}
