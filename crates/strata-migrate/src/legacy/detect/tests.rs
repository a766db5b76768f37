//! Tests of generation detection from names and header versions.

use serde_json::json;

use super::*;

fn hint(name: &str) -> NameHint {
    name_hint(Path::new(name))
}

#[test]
fn names_and_versions_agree() {
    let header = json!({"type":"session","version":0,"id":"s"});
    assert_eq!(
        detect_generation("f", hint("session.jsonl"), &header).unwrap(),
        Generation::V0
    );
    assert_eq!(
        detect_generation("f", hint("log.jsonl"), &header).unwrap(),
        Generation::V0
    );
    let v2 = json!({"type":"session","version":2,"id":"s"});
    assert_eq!(
        detect_generation("f", hint("session.v2.jsonl.zstd"), &v2).unwrap(),
        Generation::V2
    );
    assert!(hint("session.v2.jsonl.zstd").zstd);
}

#[test]
fn newer_versions_are_refused_naming_the_version() {
    let header = json!({"type":"session","version":7,"id":"s"});
    let error = detect_generation("f", hint("session.jsonl"), &header).unwrap_err();
    assert!(error.to_string().contains("uses log format v7"), "{error}");
    let by_name =
        detect_generation("f", hint("session.v9.jsonl"), &json!({"version":0})).unwrap_err();
    assert!(matches!(by_name, ReadError::NewerGeneration { ref version, .. } if version == "9"));
}

#[test]
fn mismatch_and_missing_version_are_refused() {
    let error =
        detect_generation("f", hint("session.v1.jsonl"), &json!({"version":0})).unwrap_err();
    assert!(matches!(
        error,
        ReadError::GenerationMismatch {
            named: Generation::V1,
            found: Generation::V0,
            ..
        }
    ));
    let error = detect_generation("f", hint("session.v2.jsonl"), &json!({"id":"s"})).unwrap_err();
    assert!(matches!(
        error,
        ReadError::NotHeader {
            generation: Some(Generation::V2),
            ..
        }
    ));
}
