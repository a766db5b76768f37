//! The helper reads the oracle's verdicts: an accepted log, and a refused one located at the
//! event that breaks upstream's rule (skipped, like every caller, without the oracle).

use std::path::PathBuf;

use super::{FormatOracle, Verdict};

const HEADER: &str = r#"{"type":"session","version":3,"id":"helper","createdAt":1,"isSeeded":false,"delegationDepth":0}"#;

fn log(name: &str, events: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "strata-format-oracle-helper-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    let mut text = format!("{HEADER}\n");
    for event in events {
        text.push_str(event);
        text.push('\n');
    }
    std::fs::write(&path, text).expect("write log");
    path
}

#[test]
fn verdicts_name_the_refused_event() {
    let Ok(oracle) = FormatOracle::find() else {
        // The callers' skip notice covers this; nothing here to check without the oracle.
        return;
    };
    let good = log(
        "good.v3.jsonl",
        &[
            r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
            r#"{"type":"turn/end","seq":1,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
        ],
    );
    let bad = log(
        "bad.v3.jsonl",
        &[
            r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
            r#"{"type":"turn/end","seq":1,"time":1,"data":{"turn":2,"reason":{"kind":"completed"}}}"#,
        ],
    );
    let verdicts = oracle
        .check(&[good.clone(), bad.clone()])
        .expect("the oracle runs");
    assert_eq!(
        verdicts,
        [
            Verdict {
                file: std::path::absolute(&good).expect("absolute"),
                ok: true,
                error: None,
                seq: None,
                row: None,
                event_type: None,
            },
            Verdict {
                file: std::path::absolute(&bad).expect("absolute"),
                ok: false,
                error: Some("SessionFormatError: turn/end 2 has no matching open turn".into()),
                seq: Some(1),
                row: Some(2),
                event_type: Some("turn/end".into()),
            },
        ]
    );
    // Split over processes, the verdicts keep the order of the files.
    let files = [
        bad.clone(),
        good.clone(),
        bad.clone(),
        good.clone(),
        bad.clone(),
    ];
    let many = oracle.check_many(&files, 2).expect("the oracle runs");
    let oks: Vec<bool> = many.iter().map(|verdict| verdict.ok).collect();
    assert_eq!(oks, [false, true, false, true, false]);
    assert!(many
        .iter()
        .zip(&files)
        .all(|(verdict, file)| verdict.file == std::path::absolute(file).expect("absolute")));
    if let Some(dir) = good.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}
