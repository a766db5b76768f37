//! Tests of seq maps and reference remapping.

use serde_json::json;

use super::*;

#[test]
fn kept_dropped_and_inserted_runs_map_densely() {
    let mut map = SeqMap::default();
    // input 0,1 kept as 0,1; 2..=4 dropped; an insert takes output 2; 5 → 3; 6 → 4.
    map.keep(0, 0);
    map.keep(1, 1);
    for input in 2..=4 {
        map.drop_seq(input);
    }
    map.keep(5, 3);
    map.keep(6, 4);
    assert_eq!(map.map(1), Ok(1));
    assert_eq!(map.map(3), Err(Unmapped::Consumed));
    assert_eq!(map.map(5), Ok(3));
    assert_eq!(map.map(6), Ok(4));
    assert_eq!(map.map(7), Err(Unmapped::NotEarlier));
    assert_eq!(map.n_runs(), 3);
}

#[test]
fn every_declared_reference_is_remapped() {
    let mut map = SeqMap::default();
    map.keep(0, 0);
    map.drop_seq(1);
    for input in 2..10 {
        map.keep(input, input - 1);
    }
    let mut event = json!({"type":"compaction/summary","seq":9,"data":{"shadowedRange":{"start":2,"end":4},"shadowedSeqs":[2,3,4]},"sourceEventSeqs":[0,2],"surfaceOp":{"op":"replace","start":2,"end":4}});
    remap_references(event.as_object_mut().unwrap(), &map, ("start", "end")).unwrap();
    assert_eq!(event["data"]["shadowedRange"], json!({"start":1,"end":3}));
    assert_eq!(event["data"]["shadowedSeqs"], json!([1, 2, 3]));
    assert_eq!(event["sourceEventSeqs"], json!([0, 1]));
    assert_eq!(
        event["surfaceOp"],
        json!({"op":"replace","start":1,"end":3})
    );
    let mut bad = json!({"type":"command/done","data":{"sourceEventSeq":1}});
    let error = remap_references(bad.as_object_mut().unwrap(), &map, ("start", "end")).unwrap_err();
    assert_eq!(error.reason, Unmapped::Consumed);
}
