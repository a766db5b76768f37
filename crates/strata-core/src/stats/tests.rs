//! Unit tests of log statistics on generated and small hand-written logs.

use serde_json::json;

use super::*;
use crate::synth::{generate, generate_loaded, parsed_seqs, SynthConfig};
use crate::{RawEvent, Seq};
use crate::{SeedOptions, Session, SessionHeader};

#[test]
fn counts_add_up_and_standing_matches_the_surface() {
    let session = generate(&SynthConfig {
        events: 400,
        compact_every: 3,
        prune_rate: 0.5,
        ..SynthConfig::default()
    })
    .unwrap();
    let stats = log_stats(session.events().unwrap()).unwrap();
    assert_eq!(stats.n_events, session.len() as u64);
    assert_eq!(
        stats.counts.iter().map(|(_, n)| n).sum::<u64>(),
        stats.n_events
    );
    assert!(stats.counts.windows(2).all(|pair| pair[0].0 < pair[1].0));
    assert_eq!(stats.fold.nodes, session.surface().nodes());
    let visible: Vec<Seq> = stats
        .standing
        .iter()
        .enumerate()
        .filter(|(_, standing)| **standing == Standing::Visible)
        .map(|(seq, _)| Seq::new(seq as u64).unwrap())
        .collect();
    assert_eq!(visible, stats.fold.nodes);
    assert!(stats.n_shadowed() > 0, "the generated log compacts");
    assert!(stats.n_turns > 0 && stats.n_steps >= stats.n_turns);
    assert_eq!(stats.open_turn, None);
}

#[test]
fn places_usage_and_an_open_turn() {
    let rows = [
        json!({"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}),
        json!({"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}),
        json!({"type":"user/message","seq":2,"time":1,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},"role":"user","id":"u1"},"surfaceOp":"append"}),
        json!({"type":"assistant/message","seq":3,"time":2,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"source":{"kind":"model","provider":"p","model":"m"},"id":"a1"},"stream":[],"usage":{"inputTokens":10,"outputTokens":5}},"surfaceOp":"append"}),
        json!({"type":"step/end","seq":4,"time":2,"data":{"turn":1,"step":1}}),
        json!({"type":"turn/end","seq":5,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}),
        json!({"type":"turn/start","seq":6,"time":3,"data":{"turn":2}}),
        json!({"type":"step/start","seq":7,"time":3,"data":{"turn":2,"step":1}}),
        json!({"type":"assistant/message","seq":8,"time":4,"data":{"turn":2,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"again"}],"source":{"kind":"model","provider":"p","model":"m"},"id":"a2"},"stream":[],"usage":{"inputTokens":20,"outputTokens":7,"cacheReadTokens":3}},"surfaceOp":"append"}),
    ];
    let session = Session::restore(
        SessionHeader::fresh("stats", 1).unwrap(),
        rows.into_iter().map(RawEvent::from_value),
        SeedOptions::default(),
    )
    .unwrap();
    let stats = log_stats(&session.events().unwrap()[..9]).unwrap();
    assert_eq!((stats.n_turns, stats.n_steps), (2, 2));
    assert_eq!(stats.open_turn, Some(2));
    assert_eq!(
        stats.usage,
        [
            ("inputTokens".to_owned(), 30),
            ("outputTokens".to_owned(), 12),
            ("cacheReadTokens".to_owned(), 3)
        ]
    );
    let place = |turn, step| Place { turn, step };
    assert_eq!(stats.places[0], place(Some(1), None));
    assert_eq!(stats.places[3], place(Some(1), Some(1)));
    assert_eq!(
        stats.places[4],
        place(Some(1), Some(1)),
        "a closing bracket is inside"
    );
    assert_eq!(stats.places[5], place(Some(1), None));
    assert_eq!(stats.places[8], place(Some(2), Some(1)));
    assert_eq!(stats.step_usage.len(), 2);
    assert_eq!(stats.step_usage[1].seq.get(), 8);
    assert_eq!(stats.standing[0], Standing::LogOnly);
    assert_eq!(stats.standing[2], Standing::Visible);
}

#[test]
fn counting_leaves_every_payload_unparsed() {
    let session = generate_loaded(&SynthConfig {
        events: 300,
        ..SynthConfig::default()
    })
    .unwrap();
    // The restore parses what it reads whole (request headers, say); that is all.
    let before = parsed_seqs(&session);
    assert!(before.len() < session.len() / 4, "{} parsed", before.len());
    let stats = log_stats(session.events().unwrap()).unwrap();
    assert!(!stats.usage.is_empty() && stats.n_steps > 0);
    // A parsed payload stays in its event for the event's life: over a whole log that was
    // gigabytes of trees nobody asked for.
    assert_eq!(parsed_seqs(&session), before);
}

/// Spellings of a usage count: plain, zero, negative, fractional, exponent, the largest `u64`,
/// one past it, and past the safe integers.
const COUNT_SPELLINGS: [&str; 8] = [
    "7",
    "0",
    "-1",
    "1.5",
    "1e3",
    "18446744073709551615",
    "18446744073709551616",
    "9007199254740993",
];

strata_testkit::proptest! {
    /// Usage is summed as the `Value` of each payload reads it (`as_u64`, a repeated key's
    /// last value in its first place), whatever the counts' spellings and repeats.
    #[test]
    fn usage_sums_what_the_payload_values_hold(
        steps in proptest::collection::vec(
            proptest::collection::vec((0usize..3, 0usize..COUNT_SPELLINGS.len()), 0..5),
            1..4,
        ),
    ) {
        let keys = ["inputTokens", "outputTokens", "cacheReadTokens"];
        let mut lines = vec![r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#.to_owned()];
        let mut expected: Vec<(String, u64)> = Vec::new();
        for (index, entries) in steps.iter().enumerate() {
            let step = index + 1;
            let usage: Vec<String> = entries
                .iter()
                .map(|&(key, spelling)| format!("\"{}\":{}", keys[key], COUNT_SPELLINGS[spelling]))
                .collect();
            let data = format!(
                r#"{{"turn":1,"step":{step},"message":{{"role":"assistant","content":[{{"type":"text","text":"t"}}],"source":{{"kind":"model","provider":"p","model":"m"}},"id":"a{step}"}},"stream":[],"usage":{{{}}}}}"#,
                usage.join(",")
            );
            // The oracle: what the payload's `Value` holds.
            let value: serde_json::Value = serde_json::from_str(&data).unwrap();
            for (key, count) in value["usage"].as_object().unwrap() {
                if let Some(count) = count.as_u64() {
                    match expected.iter_mut().find(|(name, _)| name == key) {
                        Some((_, total)) => *total = total.saturating_add(count),
                        None => expected.push((key.clone(), count)),
                    }
                }
            }
            let seq = lines.len();
            lines.push(format!(r#"{{"type":"step/start","seq":{seq},"time":1,"data":{{"turn":1,"step":{step}}}}}"#));
            let seq = lines.len();
            lines.push(format!(r#"{{"type":"assistant/message","seq":{seq},"time":2,"data":{data},"surfaceOp":"append"}}"#));
            let seq = lines.len();
            lines.push(format!(r#"{{"type":"step/end","seq":{seq},"time":2,"data":{{"turn":1,"step":{step}}}}}"#));
        }
        let session = Session::restore(
            SessionHeader::fresh("usage", 1).unwrap(),
            lines.iter().map(|line| RawEvent::from_json_str(line).unwrap()),
            SeedOptions::default(),
        )
        .unwrap();
        let stats = log_stats(&session.events().unwrap()[..lines.len()]).unwrap();
        proptest::prop_assert_eq!(stats.usage, expected);
        proptest::prop_assert_eq!(stats.n_steps, steps.len() as u64);
        proptest::prop_assert_eq!(stats.places.last().map(|place| place.turn), Some(Some(1)));
    }
}

strata_testkit::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// Replaying accepted events from their placements folds to what re-accepting them does:
    /// the same nodes, replace count and replacements with what each shadowed, for any prefix
    /// of a log with compactions and prunes.
    #[test]
    fn fold_accepted_is_fold_window_on_a_sessions_own_events(
        seed in proptest::prelude::any::<u64>(),
        compact_every in 1u64..5,
        prune_rate in 0.0f64..0.8,
        cut in 0.0f64..1.0,
    ) {
        let session = generate(&SynthConfig {
            events: 300,
            seed,
            compact_every,
            prune_rate,
            ..SynthConfig::default()
        })
        .unwrap();
        let events = session.events().unwrap();
        let prefix = &events[..((events.len() as f64 * cut) as usize).min(events.len())];
        let generation = session.generation();
        let replayed = crate::fold::fold_accepted(prefix).unwrap();
        let refolded = crate::fold::fold_window(
            generation,
            Seq::ZERO,
            prefix.iter().map(|event| RawEvent::from_event_in(event, generation)),
        )
        .unwrap();
        proptest::prop_assert_eq!(&replayed.nodes, &refolded.nodes);
        proptest::prop_assert_eq!(replayed.replace_generation, refolded.replace_generation);
        proptest::prop_assert_eq!(&replayed.replacements, &refolded.replacements);
    }
}

#[test]
fn fold_accepted_refuses_events_out_of_their_places() {
    let session = generate(&SynthConfig {
        events: 200,
        compact_every: 2,
        ..SynthConfig::default()
    })
    .unwrap();
    let events = session.events().unwrap();
    // A log cut from a replacement on, and one with two events swapped.
    let replace = events
        .iter()
        .position(|event| matches!(event.surface_op(), Some(crate::SurfaceOp::Replace(_))))
        .unwrap();
    let error = crate::fold::fold_accepted(&events[replace..]).unwrap_err();
    assert!(error.to_string().contains("expected 0"), "{error}");
    let mut shuffled: Vec<Arc<Event>> = events.to_vec();
    shuffled.swap(1, 2);
    assert!(crate::fold::fold_accepted(&shuffled).is_err());
}
