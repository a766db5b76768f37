//! Tests of the physical header line of v0, v1 and v2 logs.

use serde_json::json;

use super::*;

#[test]
fn v0_drops_unknown_keys_and_requires_delegation_depth() {
    let line = json!({"type":"session","version":0,"id":"s","createdAt":1,"extra":true,"delegationDepth":0,"seedLength":3});
    let header = logical_header("f", Generation::V0, line).unwrap();
    assert_eq!(
        serde_json::to_string(&header).unwrap(),
        r#"{"version":0,"id":"s","createdAt":1,"seedLength":3,"delegationDepth":0}"#
    );
    let missing = logical_header(
        "f",
        Generation::V0,
        json!({"type":"session","version":0,"id":"s","createdAt":1}),
    );
    assert!(missing.unwrap_err().to_string().contains("delegationDepth"));
}

#[test]
fn retired_fields_and_wrong_type_refuse() {
    let retired = logical_header(
        "f",
        Generation::V1,
        json!({"type":"session","version":1,"id":"s","createdAt":1,"delegationDepth":0,"sandboxMode":"x"}),
    );
    assert!(retired.unwrap_err().to_string().contains("retired"));
    let wrong = logical_header(
        "f",
        Generation::V0,
        json!({"type":"turn/start","version":0}),
    );
    assert!(matches!(wrong, Err(ReadError::NotHeader { .. })));
}

#[test]
fn v2_is_strict() {
    let ok = json!({"type":"session","version":2,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0});
    assert!(logical_header("f", Generation::V2, ok).is_ok());
    let extra = json!({"type":"session","version":2,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0,"seedLength":1});
    assert!(logical_header("f", Generation::V2, extra)
        .unwrap_err()
        .to_string()
        .contains("seedLength"));
}
