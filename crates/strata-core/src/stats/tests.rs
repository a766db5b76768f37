//! Unit tests of log statistics on generated and small hand-written logs.

use serde_json::json;

use super::*;
use crate::synth::{generate, SynthConfig};
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
    let stats = log_stats(session.events(), session.generation()).unwrap();
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
    let stats = log_stats(&session.events()[..9], session.generation()).unwrap();
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
