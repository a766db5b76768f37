//! Packed chunk rows: expansion of the worked example of persistence §2.3, and each strict
//! validation rule with upstream's message.

use serde_json::{json, Value};

use super::*;

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn worked_example_expands_to_exact_events() {
    let row = parse(
        r#"{"type":"text-chunks","seq0":40,"time0":1000,"data":{"turn":2,"step":1,"index":1,"dt":[0,3,0,7],"texts":["He","llo",","," wor","ld"]}}"#,
    );
    let events = expand_record(row).unwrap();
    let times: Vec<i64> = events.iter().map(|e| e["time"].as_i64().unwrap()).collect();
    assert_eq!(times, [1000, 1000, 1003, 1003, 1010]);
    assert_eq!(
        serde_json::to_string(&events[1]).unwrap(),
        r#"{"type":"assistant/chunk","seq":41,"time":1000,"data":{"turn":2,"step":1,"chunk":{"type":"text-delta","index":1,"text":"llo"}}}"#
    );
}

#[test]
fn tool_rows_carry_name_only_when_present() {
    let with_name = parse(
        r#"{"type":"tool-call-chunks","seq0":0,"time0":5,"data":{"turn":1,"step":1,"index":0,"id":"c","name":"bash","dt":[-2],"args":["{","}"]}}"#,
    );
    let events = expand_record(with_name).unwrap();
    assert_eq!(
        events[0]["data"]["chunk"],
        json!({"type":"tool-call-delta","index":0,"id":"c","name":"bash","argumentsDelta":"{"})
    );
    assert_eq!(events[1]["time"], json!(3));
    let without = parse(
        r#"{"type":"tool-call-chunks","seq0":0,"time0":5,"data":{"turn":1,"step":1,"index":0,"id":"c","dt":[],"args":["x"]}}"#,
    );
    let events = expand_record(without).unwrap();
    assert_eq!(
        events[0]["data"]["chunk"],
        json!({"type":"tool-call-delta","index":0,"id":"c","argumentsDelta":"x"})
    );
}

#[test]
fn other_records_pass_through() {
    let event = json!({"type":"turn/start","seq":0,"time":0,"data":{"turn":1}});
    assert_eq!(expand_record(event.clone()).unwrap(), vec![event]);
}

#[test]
fn each_rule_reports_upstream_text_in_order() {
    let cases = [
        (
            r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{},"x":1}"#,
            "envelope must be exactly {type, seq0, time0, data}",
        ),
        (
            r#"{"type":"text-chunks","seq0":-1,"time0":0,"data":{}}"#,
            "seq0 must be a non-negative safe integer",
        ),
        (
            r#"{"type":"text-chunks","seq0":0,"time0":1.5,"data":{}}"#,
            "time0 must be a safe integer",
        ),
        (
            r#"{"type":"text-chunks","seq0":0,"time0":0,"data":null}"#,
            "data must be an object",
        ),
        (
            r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1}}"#,
            "data must be exactly {turn, step, index, dt, texts}",
        ),
        (
            r#"{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"id":"c","name":5,"dt":[],"args":["a"]}}"#,
            "id (and name when present) must be strings",
        ),
        (
            r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":"1","step":1,"index":0,"dt":[],"texts":["a"]}}"#,
            "turn/step/index must be numbers",
        ),
        (
            r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[]}}"#,
            "texts must be a non-empty string array",
        ),
        (
            r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0.5],"texts":["a","b"]}}"#,
            "dt must be an array of safe integers",
        ),
        (
            r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[2],"texts":["o","k","!"]}}"#,
            "dt length 1 does not match 3 members",
        ),
        (
            r#"{"type":"text-chunks","seq0":9007199254740991,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0,0],"texts":["a","b","c"]}}"#,
            "member seqs must stay safe integers",
        ),
        (
            r#"{"type":"text-chunks","seq0":0,"time0":9007199254740991,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"]}}"#,
            "member times must stay safe integers",
        ),
    ];
    for (line, detail) in cases {
        let error = expand_record(parse(line)).unwrap_err();
        assert_eq!(error.detail, detail, "{line}");
    }
    let error = expand_record(parse(cases[9].0)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "malformed text-chunks storage row: dt length 1 does not match 3 members"
    );
}

#[test]
fn member_seqs_are_computed_in_doubles() {
    // seq0 = 2^53 - 2 with three members: (seq0 + 3) - 1 rounds back into the safe range.
    let row = parse(
        r#"{"type":"text-chunks","seq0":9007199254740990,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0,0],"texts":["a","b","c"]}}"#,
    );
    assert_eq!(expand_record(row).unwrap().len(), 3);
}

#[test]
fn packing_round_trips_and_keeps_short_runs_plain() {
    let chunk = |seq: u64, time: i64, chunk: Value| json!({"type":"assistant/chunk","seq":seq,"time":time,"data":{"turn":1,"step":1,"chunk":chunk}});
    let events = vec![
        chunk(
            0,
            5,
            json!({"type":"block-start","index":0,"blockType":"text"}),
        ),
        chunk(1, 6, json!({"type":"text-delta","index":0,"text":"a"})),
        chunk(2, 6, json!({"type":"text-delta","index":0,"text":"b"})),
        chunk(3, 4, json!({"type":"text-delta","index":0,"text":"c"})),
        chunk(
            4,
            7,
            json!({"type":"tool-call-delta","index":1,"id":"x","name":"n","argumentsDelta":"{"}),
        ),
        chunk(
            5,
            7,
            json!({"type":"tool-call-delta","index":1,"id":"x","argumentsDelta":"}"}),
        ),
    ];
    let packed = pack_records(&events);
    assert_eq!(packed.len(), 4);
    assert_eq!(
        serde_json::to_string(&packed[1]).unwrap(),
        r#"{"type":"text-chunks","seq0":1,"time0":6,"data":{"turn":1,"step":1,"index":0,"dt":[0,-2],"texts":["a","b","c"]}}"#
    );
    let expanded: Vec<Value> = packed
        .into_iter()
        .flat_map(|record| expand_record(record).unwrap())
        .collect();
    assert_eq!(expanded, events);
}
