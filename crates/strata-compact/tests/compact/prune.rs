//! The tool-result pruner (persistence-compaction §6; peers (c) item 12).

use serde_json::json;
use strata_compact::prune::MARKER;
use strata_compact::{Pruner, PrunerConfig};
use strata_core::{payload, Candidate, SeedOptions, Session, SurfaceIntent};

use crate::common::{
    append_prompt, append_step, end_step, fresh_session, last_time, messages, open_turn, synth,
};

#[test]
fn an_oversized_result_is_rewritten_in_place_with_an_audit_event() {
    let mut session = fresh_session("prune", 100_000);
    append_prompt(&mut session, "u-1", "read it");
    // "small" is answered by the step; "big" gets its one result below (a second result
    // for a settled call has no lifecycle, R14).
    append_step(&mut session, 1, 2, &["small", "big"], 1, 0);
    // One 20,000-character failed result with meta beside the small one.
    let time = last_time(&session);
    let call = session
        .events()
        .unwrap()
        .iter()
        .find(|e| e.event_type().as_str() == "tool/call" && e.data()["callId"] == "big")
        .unwrap()
        .seq();
    let body: String = (0..20_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let big = session
        .append(
            Candidate::surface(
                payload::ToolResult {
                    turn: 1,
                    step: 2,
                    message: payload::tool_result_message(
                        "res-big-2",
                        "big",
                        vec![payload::text_block(&body)],
                        true,
                    ),
                    error: Some(json!({"name": "ToolError", "code": "TOO_BIG"})),
                    meta: Some(json!({"exit": 1})),
                },
                SurfaceIntent::append_citing(vec![call]),
            ),
            time,
        )
        .unwrap();
    end_step(&mut session, 1, 2);
    let before = messages(&session);
    let pruner = Pruner::new(PrunerConfig::default()).unwrap();
    let plan = pruner.plan(&session);
    assert_eq!(plan.results.len(), 1);
    assert_eq!(plan.results[0].seq, big.seq());
    assert_eq!(plan.results[0].chars_before, 20_000);
    assert_eq!(plan.results[0].chars_after, 4_096 + 39 + 1_024);
    let first = session.len();
    session.append_batch(plan.candidates, time).unwrap();

    let trace = &session.events().unwrap()[first];
    assert_eq!(trace.event_type().as_str(), "compaction/prune");
    assert_eq!(
        trace.data()["shadowedRange"],
        json!({"start": big.seq().get(), "end": big.seq().get()})
    );
    assert_eq!(trace.data()["shadowedSeqs"], json!([big.seq().get()]));
    assert_eq!(
        trace.data()["shadowedTokenCount"],
        json!(plan.results[0].tokens_before)
    );
    let rewritten = &session.events().unwrap()[first + 1];
    assert_eq!(rewritten.sources().unwrap(), &[big.seq()]);
    // Every field but the inner content is the original's.
    let mut original = big.data().clone();
    let mut copy = rewritten.data().clone();
    let text = copy["message"]["content"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        text,
        format!("{}{MARKER}{}", &body[..4_096], &body[20_000 - 1_024..])
    );
    original["message"]["content"][0]["content"] = json!(null);
    copy["message"]["content"][0]["content"] = json!(null);
    assert_eq!(original, copy);
    // Same number of messages, same ids, one node rewritten in place.
    let after = messages(&session);
    assert_eq!(after.len(), before.len());
    let ids = |m: &[serde_json::Value]| m.iter().map(|m| m["id"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&after), ids(&before));
    assert!(pruner.plan(&session).is_empty());
}

#[test]
fn later_passes_see_only_new_results() {
    let mut session = fresh_session("prune-incremental", 100_000);
    append_prompt(&mut session, "u-1", "go");
    append_step(&mut session, 1, 2, &["a"], 1, 10_000);
    end_step(&mut session, 1, 2);
    let pruner = Pruner::new(PrunerConfig::default()).unwrap();
    let first = pruner.plan(&session);
    assert_eq!(first.results.len(), 1);
    // Not appended: the same result is offered again (a dry run changes nothing).
    assert_eq!(pruner.plan(&session).results, first.results);
    let time = last_time(&session);
    session.append_batch(first.candidates, time).unwrap();
    append_step(&mut session, 1, 3, &["b"], 1, 9_000);
    end_step(&mut session, 1, 3);
    let second = pruner.plan(&session);
    assert_eq!(second.results.len(), 1);
    assert_ne!(second.results[0].seq, first.results[0].seq);
}

/// Issue 22 (defects found by hostile probes): text a lone UTF-16 surrogate is part of, in the
/// head a pruned result keeps, is copied into the rewrite spelled as `JSON.stringify` does (it
/// was read as `null` and dropped).
#[test]
fn a_pruned_result_keeps_a_lone_surrogate_in_its_head() {
    let generated = synth(600, 3, 0, 0.0, 5_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.v3.jsonl");
    strata_store::write_log(&path, generated.header(), generated.events().unwrap()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut edited = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if !edited && line.contains(r#""type":"tool/result""#) {
                edited = true;
                line.replacen(r#""text":""#, r#""text":"A\ud800B "#, 1)
            } else {
                line.to_owned()
            }
        })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let stored = strata_store::read_log(&path).unwrap();
    let mut session =
        Session::restore(stored.header, stored.events, SeedOptions::default()).unwrap();
    open_turn(&mut session);
    let first = session.len();
    let pruner = Pruner::new(PrunerConfig::default()).unwrap();
    let plan = pruner.plan_in_turn(&session).unwrap();
    let time = last_time(&session);
    session.append_batch(plan.candidates, time).unwrap();
    let mut written = Vec::new();
    for event in &session.events().unwrap()[first..] {
        strata_format::encode_event_line(event, &mut written);
    }
    let written = String::from_utf8(written).unwrap();
    assert!(written.contains(r#""text":"A\ud800B "#), "{written}");
}
