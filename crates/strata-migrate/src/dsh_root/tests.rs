//! dsh's folder: which file is a session's log, prefix lookups, titles, and that a listing
//! leaves the folder byte for byte as it was.

use std::collections::BTreeMap;

use super::*;

const V3_HEADER: &str = r#"{"type":"session","version":3,"id":"ID","createdAt":CREATED,"isSeeded":false,"delegationDepth":0}"#;

fn header(id: &str, created: u64) -> String {
    V3_HEADER
        .replace("ID", id)
        .replace("CREATED", &created.to_string())
        + "\n"
}

fn title_line(seq: u64, title: &str) -> String {
    format!(
        r#"{{"type":"session/title","seq":{seq},"time":1,"data":{{"title":"{title}","source":{{"kind":"user"}},"messageSeqs":[]}}}}"#
    ) + "\n"
}

fn session_dir(home: &Path, project: &str, id: &str) -> PathBuf {
    let dir = home.join("sessions").join(project).join(id);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.insert(path.clone(), Vec::new());
                stack.push(path);
            } else {
                files.insert(path.clone(), fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn the_highest_canonical_generation_is_the_session() {
    let home = tempfile::tempdir().unwrap();
    let dir = session_dir(home.path(), "--p--", "s");
    fs::write(dir.join("session.jsonl"), "{}\n").unwrap();
    fs::write(dir.join("session.v2.jsonl.zstd"), "x").unwrap();
    fs::write(dir.join("session.v3.jsonl"), header("s", 5)).unwrap();
    // Not canonical names: never the session.
    fs::write(dir.join("session.v03.jsonl"), "x").unwrap();
    fs::write(dir.join("session.v9.jsonl.bak"), "x").unwrap();
    let (generation, zstd, file) = current_log(&dir).unwrap().unwrap();
    assert_eq!((generation, zstd), (3, false));
    assert_eq!(file, dir.join("session.v3.jsonl"));
    let (sessions, problems) = DshRoot::at_home(home.path()).sessions().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(sessions.len(), 1, "one session, however many generations");
}

#[test]
fn both_encodings_of_the_top_generation_are_refused() {
    let home = tempfile::tempdir().unwrap();
    let dir = session_dir(home.path(), "--p--", "s");
    fs::write(dir.join("session.v3.jsonl"), header("s", 5)).unwrap();
    fs::write(dir.join("session.v3.jsonl.zstd"), "x").unwrap();
    let error = current_log(&dir).unwrap_err();
    assert!(error.to_string().contains("both raw and zstd"), "{error}");
    let (sessions, problems) = DshRoot::at_home(home.path()).sessions().unwrap();
    assert!(sessions.is_empty());
    assert_eq!(problems.len(), 1);
    // A lookup of it says why, not "no session".
    let error = DshRoot::at_home(home.path()).find("s").unwrap_err();
    assert!(
        matches!(error, DshRootError::TwoEncodings { .. }),
        "{error}"
    );
}

#[test]
fn ids_and_prefixes_resolve_and_an_ambiguous_prefix_names_the_candidates() {
    let home = tempfile::tempdir().unwrap();
    for id in ["abc1", "abc2", "xyz"] {
        let dir = session_dir(home.path(), "--p--", id);
        fs::write(dir.join("session.v3.jsonl"), header(id, 5)).unwrap();
    }
    // A directory whose name is not an encoded id is not a session.
    let foreign = session_dir(home.path(), "--p--", "not~zz");
    fs::write(foreign.join("session.v3.jsonl"), header("q", 5)).unwrap();
    let root = DshRoot::at_home(home.path());
    assert_eq!(root.find("xyz").unwrap().id, "xyz");
    assert_eq!(root.find("x").unwrap().id, "xyz");
    assert_eq!(root.find("abc2").unwrap().id, "abc2");
    let error = root.find("abc").unwrap_err().to_string();
    assert!(error.contains("--p--/abc1, --p--/abc2"), "{error}");
    assert!(matches!(
        root.find("nope"),
        Err(DshRootError::NotFound { .. })
    ));
    assert!(matches!(root.find(""), Err(DshRootError::NotFound { .. })));
}

#[test]
fn a_listing_has_created_and_the_newest_title_and_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let dir = session_dir(home.path(), "--p--", "t");
    let mut log = header("t", 7);
    log.push_str(&title_line(0, "first"));
    log.push_str(r#"{"type":"user/message","seq":1,"time":1,"data":{"note":"session/title"}}"#);
    log.push('\n');
    log.push_str(&title_line(2, "second"));
    fs::write(dir.join("session.v3.jsonl"), &log).unwrap();
    let plain = session_dir(home.path(), "_no-cwd", "u");
    let mut compressed = zstd::encode_all(header("u", 9).as_bytes(), 3).unwrap();
    compressed.extend(zstd::encode_all(title_line(0, "zipped").as_bytes(), 3).unwrap());
    fs::write(plain.join("session.v3.jsonl.zstd"), compressed).unwrap();
    let before = snapshot(home.path());
    let listing = DshRoot::at_home(home.path()).list().unwrap();
    assert!(listing.problems.is_empty(), "{:?}", listing.problems);
    let summary: Vec<(&str, Option<i64>, Option<&str>, bool)> = listing
        .sessions
        .iter()
        .map(|s| {
            (
                s.session.id.as_str(),
                s.created_at,
                s.title.as_deref(),
                s.session.zstd,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("u", Some(9), Some("zipped"), true),
            ("t", Some(7), Some("second"), false)
        ]
    );
    assert_eq!(snapshot(home.path()), before);
}

#[test]
fn a_missing_sessions_folder_lists_nothing() {
    let home = tempfile::tempdir().unwrap();
    let listing = DshRoot::at_home(home.path().join("absent")).list().unwrap();
    assert!(listing.sessions.is_empty() && listing.problems.is_empty());
}

#[test]
fn a_torn_final_zstd_frame_keeps_the_titles_before_it() {
    let home = tempfile::tempdir().unwrap();
    let dir = session_dir(home.path(), "--p--", "z");
    let mut bytes = zstd::encode_all(header("z", 1).as_bytes(), 3).unwrap();
    bytes.extend(zstd::encode_all(title_line(0, "kept").as_bytes(), 3).unwrap());
    let second = zstd::encode_all(title_line(1, "torn").as_bytes(), 3).unwrap();
    bytes.extend(&second[..second.len() / 2]);
    let file = dir.join("session.v3.jsonl.zstd");
    fs::write(&file, bytes).unwrap();
    assert_eq!(read_title(&file).unwrap().as_deref(), Some("kept"));
    let listing = DshRoot::at_home(home.path()).list().unwrap();
    assert!(listing.problems.is_empty(), "{:?}", listing.problems);
    assert_eq!(listing.sessions[0].title.as_deref(), Some("kept"));
}
