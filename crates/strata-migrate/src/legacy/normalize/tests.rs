//! The R2 refusal scans and the U1–U4 upgrades (persistence §0.5, docs/v0-rules.md R2–R3).

use serde_json::{json, Value};

use super::*;
use crate::legacy::ErrorClass;

fn upgraded(event: Value) -> Result<Value, Rejection> {
    let mut upgrader = Upgrader::new("s");
    let mut event = event;
    upgrader.upgrade(&mut event).map(|()| event)
}

#[test]
fn scans_report_delta_before_mode_set_before_fallback() {
    let events = [
        json!({"type":"request/header","seq":0,"data":{"reason":"fallback"}}),
        json!({"type":"mode/set","seq":1,"data":{}}),
        json!({"type":"request/header-delta","seq":2,"data":{}}),
    ];
    let mut scan = RefusalScan::default();
    for event in &events {
        scan.observe("s", event);
    }
    let verdict = scan.verdict().unwrap();
    assert_eq!(verdict.rule.id(), "legacy-header-delta");
    assert_eq!(verdict.seq, Some(2));
    assert_eq!(
        verdict.restore_message("s"),
        "stored session \"s\" failed validation: Error: session \"s\" contains unsupported legacy request/header-delta event at seq 2"
    );
    let mut scan = RefusalScan::default();
    scan.observe("s", &events[0]);
    scan.observe("s", &events[1]);
    assert_eq!(scan.verdict().unwrap().rule.id(), "legacy-mode-set");
}

#[test]
fn null_rows_and_dataless_headers_are_type_errors() {
    let mut scan = RefusalScan::default();
    scan.observe("s", &json!({"type":"request/header","seq":0}));
    assert_eq!(
        scan.verdict().unwrap().message,
        "Cannot read properties of undefined (reading 'reason')"
    );
    scan.observe("s", &Value::Null);
    let verdict = scan.verdict().unwrap();
    assert_eq!(verdict.class, ErrorClass::TypeError);
    assert_eq!(
        verdict.message,
        "Cannot read properties of null (reading 'type')"
    );
}

#[test]
fn turn_end_reasons_map_and_malformed_shapes_refuse() {
    let disposed =
        upgraded(json!({"type":"turn/end","seq":1,"data":{"turn":1,"reason":{"kind":"disposed"}}}))
            .unwrap();
    assert_eq!(
        disposed["data"]["reason"],
        json!({"kind":"aborted","reason":{"kind":"disposed"}})
    );
    let aborted =
        upgraded(json!({"type":"turn/end","seq":1,"data":{"turn":1,"reason":{"kind":"aborted"}}}))
            .unwrap();
    assert_eq!(
        aborted["data"]["reason"],
        json!({"kind":"aborted","reason":{"kind":"legacy"}})
    );
    let error = upgraded(json!({"type":"turn/end","seq":1,"data":{"turn":1,"reason":{"kind":"error","step":1,"message":"boom"}}})).unwrap();
    assert_eq!(
        error["data"]["reason"],
        json!({"kind":"error","error":{"message":"boom","code":"UNKNOWN"}})
    );
    let custom =
        json!({"type":"turn/end","seq":1,"data":{"turn":4,"reason":{"kind":"custom","x":1}}});
    assert_eq!(upgraded(custom.clone()).unwrap(), custom);
    for bad in [
        json!({"turn":0,"reason":{"kind":"completed"}}),
        json!({"turn":1,"reason":{"kind":"completed"},"x":1}),
        json!({"turn":1,"reason":{"kind":"completed","x":1}}),
        json!({"turn":1}),
    ] {
        let rejection = upgraded(json!({"type":"turn/end","seq":3,"data":bad})).unwrap_err();
        assert_eq!(rejection.rule.id(), "legacy-malformed");
        assert_eq!(
            rejection.message,
            "session \"s\" contains malformed pre-react-loop turn/end at seq 3"
        );
    }
}

#[test]
fn steering_and_pre_identity_messages_are_wrapped() {
    let steering = upgraded(json!({"type":"steering/message","seq":2,"data":{"turn":1,"content":[],"source":{"kind":"user"}},"surfaceOp":"append"})).unwrap();
    assert_eq!(
        serde_json::to_string(&steering).unwrap(),
        r#"{"type":"user/message","seq":2,"data":{"content":[],"source":{"kind":"user"},"id":"legacy-message:s:2","role":"user"},"surfaceOp":"append"}"#
    );
    let assistant = upgraded(json!({"type":"assistant/message","seq":2,"data":{"turn":1,"step":1,"content":[],"provenance":{"provider":"p","model":"m"}}})).unwrap();
    assert_eq!(
        serde_json::to_string(&assistant["data"]).unwrap(),
        r#"{"turn":1,"step":1,"message":{"id":"legacy-message:s:2","role":"assistant","content":[],"source":{"provider":"p","model":"m","kind":"model"}}}"#
    );
}

#[test]
fn a_legacy_tool_result_rewrite_inherits_its_target_id() {
    let mut upgrader = Upgrader::new("s");
    let mut original = json!({"type":"tool/result","seq":3,"data":{"turn":1,"step":1,"callId":"c1","content":[],"isError":false},"surfaceOp":"append"});
    upgrader.upgrade(&mut original).unwrap();
    let mut rewrite = json!({"type":"tool/result","seq":4,"data":{"turn":1,"step":1,"callId":"c1","content":[],"isError":false},"surfaceOp":{"op":"replace","start":3,"end":3}});
    upgrader.upgrade(&mut rewrite).unwrap();
    assert_eq!(
        rewrite["data"]["message"]["id"],
        json!("legacy-message:s:3")
    );
    let mut orphan = json!({"type":"tool/result","seq":5,"data":{"callId":"c","content":[],"isError":false},"surfaceOp":{"op":"replace","start":1,"end":1}});
    upgrader.upgrade(&mut orphan).unwrap();
    assert!(orphan["data"]["message"].get("id").is_none());
}
