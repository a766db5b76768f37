//! Tests of embedded stream records.

use serde_json::json;

use super::*;

fn chunk(seq: u64, time: i64, chunk: Value) -> Map<String, Value> {
    json!({"type":"assistant/chunk","seq":seq,"time":time,"data":{"turn":1,"step":1,"chunk":chunk}})
        .as_object()
        .cloned()
        .unwrap()
}

#[test]
fn deltas_merge_and_other_chunks_stay_raw() {
    let chunks = vec![
        chunk(
            0,
            10,
            json!({"type":"block-start","index":0,"blockType":"text"}),
        ),
        chunk(1, 11, json!({"type":"text-delta","index":0,"text":"He"})),
        chunk(2, 14, json!({"type":"text-delta","index":0,"text":"llo"})),
        chunk(3, 13, json!({"type":"text-delta","index":0,"text":"!"})),
        chunk(
            4,
            20,
            json!({"type":"tool-call-delta","index":1,"id":"c","name":"bash","argumentsDelta":"{"}),
        ),
        chunk(
            5,
            21,
            json!({"type":"tool-call-delta","index":1,"id":"c","argumentsDelta":"}"}),
        ),
        chunk(6, 22, json!({"type":"finish","reason":{"kind":"stop"}})),
    ];
    let records = encode_stream(&chunks);
    assert_eq!(
        serde_json::to_string(&records).unwrap(),
        concat!(
            r#"[{"type":"chunk","time":10,"chunk":{"type":"block-start","index":0,"blockType":"text"}},"#,
            r#"{"type":"text-chunks","time0":11,"index":0,"dt":[3,-1],"texts":["He","llo","!"]},"#,
            r#"{"type":"tool-call-chunks","time0":20,"index":1,"dt":[],"id":"c","name":"bash","args":["{"]},"#,
            r#"{"type":"tool-call-chunks","time0":21,"index":1,"dt":[],"id":"c","args":["}"]},"#,
            r#"{"type":"chunk","time":22,"chunk":{"type":"finish","reason":{"kind":"stop"}}}]"#
        )
    );
}

#[test]
fn odd_chunk_events_are_not_embeddable() {
    let mut odd = chunk(0, 1, json!({}));
    odd.insert("ignorable".into(), json!(true));
    assert!(embeddable(&odd).is_err());
    let mut data_extra = chunk(0, 1, json!({}));
    data_extra["data"]["x"] = json!(1);
    assert!(embeddable(&data_extra).is_err());
    assert!(embeddable(&chunk(0, 1, json!(null))).is_ok());
}
