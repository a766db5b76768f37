//! dsh's own session folder as a store (issue 27 item 1), end to end on a folder the test
//! makes: both encodings, two generations of one session, a titled session, a crashed one and
//! a v0 one. Reading commands take an id or a unique prefix and leave the folder byte for byte
//! as it was; compact, repair, fork and migrate write there as dsh would (its lock, no strata
//! sidecars, a successor generation beside an untouched source), and upstream's released V3
//! format layer accepts what they wrote. `DSH_HOME` and `HOME` always point into a temp dir.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use strata_core::synth::{generate, SynthConfig};
use strata_core::Session;
use strata_format::{encode_segment, project_key, session_file_name};
use strata_store::{write_log, SessionLock};

use super::*;

/// A dsh home made by the test, and a scratch dir outside it for outputs.
pub(super) struct DshHome {
    pub(super) dir: tempfile::TempDir,
}

impl DshHome {
    pub(super) fn home(&self) -> PathBuf {
        self.dir.path().join("dsh")
    }

    pub(super) fn sessions(&self) -> PathBuf {
        self.home().join("sessions")
    }

    /// A scratch directory outside dsh's folder.
    pub(super) fn scratch(&self) -> PathBuf {
        let dir = self.dir.path().join("scratch");
        std::fs::create_dir_all(&dir).expect("scratch dir");
        dir
    }

    /// `strata` with `DSH_HOME` (and `HOME`, `STRATA_HOME`) inside the temp dir and no store
    /// from the environment.
    pub(super) fn strata(&self) -> Command {
        let mut command = strata();
        command
            .env("DSH_HOME", self.home())
            .env("HOME", self.dir.path().join("user"))
            .env("STRATA_HOME", self.dir.path().join("strata-home"))
            .env_remove("STRATA_STORE")
            .env_remove("STRATA_DATABASE_URL");
        command
    }

    /// The directory dsh keeps session `id` of working directory `cwd` in.
    pub(super) fn session_dir(&self, cwd: Option<&str>, id: &str) -> PathBuf {
        self.sessions()
            .join(project_key(cwd))
            .join(encode_segment(id).expect("id"))
    }

    /// Writes `session`'s first `n` events as its V3 log, raw or zstd, where dsh keeps it.
    fn put_v3(&self, session: &Session, n: usize, zstd: bool) -> PathBuf {
        let dir = self.session_dir(session.header().cwd(), session.id());
        std::fs::create_dir_all(&dir).expect("session dir");
        let file = dir.join(session_file_name(3, zstd));
        write_log(&file, session.header(), &session.events().unwrap()[..n]).expect("write log");
        file
    }

    /// Every file and directory under the home, with the files' bytes.
    pub(super) fn snapshot(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        snapshot(&self.home())
    }
}

pub(super) fn snapshot(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                files.insert(path.clone(), None);
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read");
                files.insert(path, Some(bytes));
            }
        }
    }
    files
}

/// Asks upstream's released V3 format layer whether it accepts the log at `file`; a zstd log
/// is also read by strata, whose reader requires dsh's framing (the header line alone in the
/// first frame), and handed to the oracle as its plaintext (the oracle reads raw JSONL).
pub(super) fn assert_dsh_accepts(file: &Path) {
    let bytes = std::fs::read(file).expect("read");
    if !bytes.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        strata_conformance::format_oracle::assert_accepted(&[file]);
        return;
    }
    strata().arg("validate").arg(file).assert().success();
    let plain = zstd::decode_all(&bytes[..]).expect("zstd frames");
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("session.v3.jsonl");
    std::fs::write(&copy, plain).expect("write");
    strata_conformance::format_oracle::assert_accepted(&[&copy]);
}

/// The names in a directory, sorted.
pub(super) fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// A synthetic V3 session (eight-ish turns with tool calls).
pub(super) fn synth(id: &str, seed: u64) -> Session {
    generate(&SynthConfig {
        events: 300,
        seed,
        content_bytes: 120,
        compact_every: 0,
        prune_rate: 0.0,
        id: id.into(),
    })
    .expect("synthetic session")
}

/// The index of an event inside a turn (a `tool/call`): a log cut there has a crashed turn.
pub(super) fn crash_point(session: &Session) -> usize {
    session
        .events()
        .unwrap()
        .iter()
        .position(|event| event.event_type().as_str() == "tool/call")
        .expect("a tool call")
}

const TITLE: &str = "Fix the parser";

/// The folder: `alpha-1111` (raw, titled), `alpha-2222` (zstd), `gen-3333` (raw V3 beside an
/// older `session.v2.jsonl.zstd` that is never read), `crash-4444` (zstd, a turn left open) and
/// `gen-11` (v0 only).
pub(super) fn dsh_home() -> DshHome {
    let home = DshHome {
        dir: tempfile::tempdir().expect("temp dir"),
    };
    let titled = synth("alpha-1111", 1);
    let file = home.put_v3(&titled, titled.len(), false);
    // A user-sourced title between turns, as dsh's title plugin writes one.
    let mut text = std::fs::read_to_string(&file).expect("read");
    text.push_str(&format!(
        "{{\"type\":\"session/title\",\"seq\":{},\"time\":1700000999000,\"data\":{{\"title\":\"{TITLE}\",\"source\":{{\"kind\":\"user\"}},\"messageSeqs\":[]}}}}\n",
        titled.len()
    ));
    std::fs::write(&file, text).expect("write");
    let zstd = synth("alpha-2222", 2);
    home.put_v3(&zstd, zstd.len(), true);
    let two = synth("gen-3333", 3);
    let file = home.put_v3(&two, two.len(), false);
    // An older generation beside it: never the session (it is not even a valid log).
    std::fs::write(
        file.with_file_name("session.v2.jsonl.zstd"),
        b"not read: the V3 log beside it is the session",
    )
    .expect("write");
    let crashed = synth("crash-4444", 4);
    home.put_v3(&crashed, crash_point(&crashed), true);
    let v0 = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/v0/generated/released-e500-s11.jsonl");
    let dir = home.session_dir(Some("/home/user/project"), "gen-11");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::copy(v0, dir.join("session.jsonl")).expect("copy v0");
    home
}

fn json_of(command: &mut Command) -> Value {
    let output = command.output().expect("run strata");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("json")
}

fn listed(home: &DshHome) -> Vec<Value> {
    let value = json_of(home.strata().args(["sessions", "--store", "dsh", "--json"]));
    assert_eq!(value["problems"], serde_json::json!([]));
    value["sessions"].as_array().expect("sessions").clone()
}

fn entry<'a>(sessions: &'a [Value], id: &str) -> &'a Value {
    sessions
        .iter()
        .find(|session| session["id"] == id)
        .unwrap_or_else(|| panic!("{id} listed in {sessions:?}"))
}

#[test]
fn sessions_lists_each_session_once_with_generation_size_created_and_title() {
    let home = dsh_home();
    let before = home.snapshot();
    let sessions = listed(&home);
    let mut ids: Vec<&str> = sessions
        .iter()
        .map(|session| session["id"].as_str().expect("id"))
        .collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        [
            "alpha-1111",
            "alpha-2222",
            "crash-4444",
            "gen-11",
            "gen-3333"
        ]
    );
    let titled = entry(&sessions, "alpha-1111");
    assert_eq!(titled["title"], TITLE);
    assert_eq!(titled["generation"], "v3");
    assert_eq!(titled["encoding"], "raw");
    assert_eq!(titled["project"], "--home-user-project--");
    let file = PathBuf::from(titled["file"].as_str().expect("file"));
    assert_eq!(
        titled["size"],
        std::fs::metadata(&file).expect("stat").len()
    );
    assert!(titled["createdAt"].as_i64().is_some());
    assert_eq!(entry(&sessions, "alpha-2222")["encoding"], "zstd");
    assert_eq!(entry(&sessions, "alpha-2222")["title"], Value::Null);
    // Two generations in one directory: the higher one is the session.
    let two = entry(&sessions, "gen-3333");
    assert_eq!(two["generation"], "v3");
    assert!(two["file"]
        .as_str()
        .expect("file")
        .ends_with("session.v3.jsonl"));
    assert_eq!(entry(&sessions, "gen-11")["generation"], "v0");
    // Text: one line per session, the title on it; `dsh:HOME` names the same folder.
    let output = home
        .strata()
        .args(["sessions", "--store"])
        .arg(format!("dsh:{}", home.home().display()))
        .env("DSH_HOME", "/nonexistent")
        .output()
        .expect("run");
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("utf8");
    assert_eq!(text.lines().count(), 5, "{text}");
    let line = text
        .lines()
        .find(|line| line.contains("alpha-1111"))
        .expect("listed");
    assert!(
        line.starts_with("--home-user-project--  alpha-1111  v3 raw  "),
        "{line}"
    );
    assert!(line.ends_with(TITLE), "{line}");
    assert_eq!(home.snapshot(), before, "listing wrote into dsh's folder");
}

#[test]
fn reading_commands_take_an_id_or_a_prefix_and_never_write_into_the_folder() {
    let home = dsh_home();
    let scratch = home.scratch();
    let before = home.snapshot();
    let report = scratch.join("report.html");
    let fork = scratch.join("fork.session.v3.jsonl");
    let runs: Vec<Vec<String>> = vec![
        vec!["validate".into(), "dsh#alpha-1".into()],
        vec![
            "validate".into(),
            "gen-11".into(),
            "--store".into(),
            "dsh".into(),
        ],
        vec!["inspect".into(), "dsh#alpha-2222".into()],
        vec![
            "surface".into(),
            "alpha-2".into(),
            "--store".into(),
            "dsh".into(),
        ],
        vec![
            "messages".into(),
            "dsh#gen-3".into(),
            "--format".into(),
            "openai".into(),
        ],
        vec![
            "report".into(),
            "dsh#alpha-1111".into(),
            "-o".into(),
            report.display().to_string(),
        ],
        vec![
            "compact".into(),
            "dsh#alpha-2".into(),
            "--offline".into(),
            "--dry-run".into(),
        ],
        vec!["prune".into(), "dsh#alpha-1".into(), "--dry-run".into()],
        vec!["repair".into(), "dsh#crash".into(), "--dry-run".into()],
        vec![
            "fork".into(),
            "dsh#alpha-1".into(),
            "--at".into(),
            "20".into(),
            "-o".into(),
            fork.display().to_string(),
        ],
    ];
    for args in &runs {
        let output = home.strata().args(args).output().expect("run");
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(home.snapshot(), before, "{args:?} wrote into dsh's folder");
    }
    // `$STRATA_STORE=dsh` makes dsh's folder where a bare id is looked up.
    home.strata()
        .env("STRATA_STORE", "dsh")
        .args(["inspect", "gen-3333"])
        .assert()
        .success()
        .stdout(predicate::str::contains("gen-3333"));
    // The dry run sees the crashed turn's closers.
    home.strata()
        .args(["repair", "dsh#crash-4444", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("would append"));
    assert!(report.is_file() && fork.is_file());
    assert_eq!(home.snapshot(), before);
}

#[test]
fn an_ambiguous_prefix_or_an_unknown_id_is_a_clear_error() {
    let home = dsh_home();
    home.strata()
        .args(["inspect", "dsh#alpha"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("\"alpha\" names 2 sessions in "))
        .stderr(predicate::str::contains(
            "--home-user-project--/alpha-1111, --home-user-project--/alpha-2222",
        ));
    home.strata()
        .args(["inspect", "nope", "--store", "dsh"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no session \"nope\" in "));
    home.strata()
        .args(["inspect", "dsh:/nonexistent/dsh-home#alpha"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no dsh sessions folder at"));
}

/// Nothing but what dsh itself keeps in a session directory: its logs and `session.lock`.
fn assert_only_dsh_files(dir: &Path, logs: &[&str]) {
    let mut expected: Vec<String> = logs.iter().map(|name| (*name).to_owned()).collect();
    expected.push("session.lock".into());
    expected.sort();
    assert_eq!(names_in(dir), expected, "in {}", dir.display());
}

#[test]
fn compact_appends_in_place_as_dsh_would_in_either_encoding() {
    let home = dsh_home();
    for (id, name) in [
        ("alpha-1111", "session.v3.jsonl"),
        ("alpha-2222", "session.v3.jsonl.zstd"),
    ] {
        let dir = home.session_dir(Some("/home/user/project"), id);
        let file = dir.join(name);
        let before = std::fs::read(&file).expect("read");
        // Named by its path in dsh's folder, or as `dsh#ID`: written the same way.
        let target = if name.ends_with(".zstd") {
            format!("dsh#{id}")
        } else {
            file.display().to_string()
        };
        let output = home
            .strata()
            .args(["compact", "--offline", &target])
            .output()
            .expect("run");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(text.contains(": appended seqs "), "{text}");
        assert!(text.contains("into a checkpoint at seq "), "{text}");
        let after = std::fs::read(&file).expect("read");
        assert!(after.len() > before.len());
        // Appended, never rewritten: the old bytes are a prefix of the new.
        assert_eq!(&after[..before.len()], &before[..]);
        assert_only_dsh_files(&dir, &[name]);
        home.strata()
            .args(["validate"])
            .arg(&file)
            .assert()
            .success()
            .stdout(predicate::str::contains("1 replacements"));
        assert_dsh_accepts(&file);
    }
    // The title is still found after the append.
    assert_eq!(entry(&listed(&home), "alpha-1111")["title"], TITLE);
}

#[test]
fn repair_closes_the_crashed_turn_and_a_second_repair_writes_nothing() {
    let home = dsh_home();
    let dir = home.session_dir(Some("/home/user/project"), "crash-4444");
    let file = dir.join("session.v3.jsonl.zstd");
    let value = json_of(
        home.strata()
            .args(["repair", "crash-4", "--store", "dsh", "--json"]),
    );
    assert_eq!(value["repaired"], true);
    let events = value["events"].as_array().expect("events");
    assert_eq!(events.last().expect("closers")["type"], "session/end-seed");
    assert_only_dsh_files(&dir, &["session.v3.jsonl.zstd"]);
    assert_dsh_accepts(&file);
    let bytes = std::fs::read(&file).expect("read");
    let again = json_of(home.strata().args(["repair", "dsh#crash-4444", "--json"]));
    assert_eq!(again["repaired"], false);
    assert_eq!(std::fs::read(&file).expect("read"), bytes);
}

#[test]
fn fork_creates_the_child_in_the_folder_in_the_parent_s_encoding() {
    let home = dsh_home();
    let value = json_of(
        home.strata()
            .args(["fork", "dsh#alpha-2", "--at", "40", "--json"]),
    );
    let child = value["id"].as_str().expect("child id").to_owned();
    let file = PathBuf::from(value["file"].as_str().expect("child file"));
    assert_eq!(
        file,
        home.session_dir(Some("/home/user/project"), &child)
            .join("session.v3.jsonl.zstd")
    );
    assert_only_dsh_files(file.parent().expect("dir"), &["session.v3.jsonl.zstd"]);
    assert_dsh_accepts(&file);
    let listed = listed(&home);
    assert_eq!(entry(&listed, &child)["encoding"], "zstd");
    // The child is a session like the others: found by its id.
    home.strata()
        .arg("validate")
        .arg(format!("dsh#{child}"))
        .assert()
        .success();
}

#[test]
fn migrate_publishes_the_successor_beside_the_untouched_source_which_then_is_the_session() {
    let home = dsh_home();
    let dir = home.session_dir(Some("/home/user/project"), "gen-11");
    let source = dir.join("session.jsonl");
    let before = std::fs::read(&source).expect("read");
    let value = json_of(home.strata().args(["migrate", "dsh#gen-11", "--json"]));
    assert_eq!(value["sourceGeneration"], "v0");
    let target = dir.join("session.v3.jsonl");
    assert_eq!(
        PathBuf::from(value["target"].as_str().expect("target")),
        target
    );
    assert_eq!(std::fs::read(&source).expect("read"), before);
    assert_only_dsh_files(&dir, &["session.jsonl", "session.v3.jsonl"]);
    assert_dsh_accepts(&target);
    let sessions = listed(&home);
    assert_eq!(
        sessions
            .iter()
            .filter(|session| session["id"] == "gen-11")
            .count(),
        1
    );
    assert_eq!(entry(&sessions, "gen-11")["generation"], "v3");
    // Now the V3 log is the session: migrating again is refused, compacting appends to it.
    home.strata()
        .args(["migrate", "dsh#gen-11"])
        .assert()
        .code(2);
    home.strata()
        .args(["compact", "--offline", "dsh#gen-11"])
        .assert()
        .success();
    assert_eq!(std::fs::read(&source).expect("read"), before);
    assert_dsh_accepts(&target);
}

/// As dsh continues an older session: its V3 successor is published beside the untouched
/// source first, and the write goes there.
#[test]
fn writing_an_older_generation_publishes_its_successor_first_then_writes_there() {
    for args in [
        vec!["compact", "--offline", "dsh#gen-11"],
        vec!["repair", "gen-1", "--store", "dsh"],
        vec!["fork", "dsh#gen-11", "--at", "30"],
    ] {
        let home = dsh_home();
        let dir = home.session_dir(Some("/home/user/project"), "gen-11");
        let source = dir.join("session.jsonl");
        let before = std::fs::read(&source).expect("read");
        let output = home.strata().args(&args).output().expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{args:?}: {stderr}");
        assert!(
            stderr.contains("v0 → v3: published ") && stderr.contains("session.v3.jsonl beside"),
            "{args:?}: {stderr}"
        );
        assert_eq!(std::fs::read(&source).expect("read"), before);
        assert_only_dsh_files(&dir, &["session.jsonl", "session.v3.jsonl"]);
        assert_dsh_accepts(&dir.join("session.v3.jsonl"));
        let sessions = listed(&home);
        assert_eq!(entry(&sessions, "gen-11")["generation"], "v3", "{args:?}");
    }
}

#[test]
fn only_a_session_s_current_log_is_written() {
    let home = dsh_home();
    let dir = home.session_dir(Some("/home/user/project"), "gen-3333");
    let before = home.snapshot();
    home.strata()
        .args(["compact", "--offline"])
        .arg(dir.join("session.v2.jsonl.zstd"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not the session's current log"))
        .stderr(predicate::str::contains("session.v3.jsonl is)"));
    assert_eq!(home.snapshot(), before);
    // The current log named relative to its own directory is written.
    home.strata()
        .current_dir(&dir)
        .args(["compact", "--offline", "session.v3.jsonl"])
        .assert()
        .success()
        .stdout(predicate::str::contains("appended seqs"));
    assert_only_dsh_files(&dir, &["session.v2.jsonl.zstd", "session.v3.jsonl"]);
}

#[test]
fn a_second_writer_is_refused_by_dsh_s_lock_and_nothing_is_written() {
    let home = dsh_home();
    let dir = home.session_dir(Some("/home/user/project"), "crash-4444");
    // This test process stands in for a dsh writer holding the session.
    let held = SessionLock::acquire(&dir.join("session.lock"), "crash-4444").expect("lock");
    let before = home.snapshot();
    for args in [
        vec!["compact", "--offline", "dsh#crash-4444"],
        vec!["repair", "dsh#crash-4444"],
    ] {
        home.strata()
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!(
                "is open for writing by pid {}",
                std::process::id()
            )));
    }
    let v0_dir = home.session_dir(Some("/home/user/project"), "gen-11");
    let v0_held = SessionLock::acquire(&v0_dir.join("session.lock"), "gen-11").expect("lock");
    let before_v0 = home.snapshot();
    home.strata()
        .args(["migrate", "dsh#gen-11"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("open for writing by pid"));
    assert_eq!(home.snapshot(), before_v0);
    drop((held, v0_held));
    // The lock file existed before (the holder made it); only the logs are compared.
    let logs = |snapshot: &BTreeMap<PathBuf, Option<Vec<u8>>>| {
        snapshot
            .iter()
            .filter(|(path, _)| !path.ends_with("session.lock"))
            .map(|(path, bytes)| (path.clone(), bytes.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(logs(&home.snapshot()), logs(&before));
    home.strata()
        .args(["repair", "dsh#crash-4444"])
        .assert()
        .success();
}

#[test]
fn commands_that_create_sessions_refuse_dsh_s_folder_as_their_store() {
    let home = dsh_home();
    let scratch = home.scratch();
    home.strata()
        .args(["import", "--store", "dsh"])
        .arg(sample())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "dsh's own folder is not a store this command uses",
        ));
    home.strata()
        .args(["export", "alpha-1111", "--store", "dsh", "-o"])
        .arg(scratch.join("out.jsonl"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("dsh#ID"));
}

#[test]
fn import_and_convert_copy_sessions_out_of_the_folder_without_writing_there() {
    let home = dsh_home();
    let scratch = home.scratch();
    let before = home.snapshot();
    let one = scratch.join("one.db");
    home.strata()
        .args(["import", "dsh#alpha-1", "--store"])
        .arg(&one)
        .assert()
        .success()
        .stdout(predicate::str::contains("alpha-1111"));
    home.strata()
        .arg("validate")
        .arg(format!("sqlite://{}#alpha-1111", one.display()))
        .assert()
        .success();
    // The whole folder: every V3 session copied; the v0 one refused, pointing at migrate.
    let all = scratch.join("all.db");
    let output = home
        .strata()
        .args(["convert", "dsh"])
        .arg(&all)
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    for id in ["alpha-1111", "alpha-2222", "gen-3333", "crash-4444"] {
        assert!(stdout.contains(&format!("converted {id} (")), "{stdout}");
    }
    assert!(stderr.contains("strata migrate"), "{stderr}");
    assert_eq!(home.snapshot(), before);
}

/// `strata tail` follows a session of dsh's folder as it is appended (here by compact, standing
/// in for dsh), reading only.
#[test]
fn tail_follows_a_session_in_the_folder_as_it_grows() {
    use std::io::{BufRead as _, BufReader};
    use std::time::{Duration, Instant};

    let home = dsh_home();
    let n_before = strata_store::read_log(
        &home
            .session_dir(Some("/home/user/project"), "alpha-2222")
            .join("session.v3.jsonl.zstd"),
    )
    .expect("read")
    .events
    .len() as u64;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["tail", "dsh#alpha-2", "-n", "2", "--json"])
        .env("DSH_HOME", home.home())
        .env("HOME", home.dir.path().join("user"))
        .env_remove("STRATA_STORE")
        .env_remove("STRATA_DATABASE_URL")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn strata tail");
    let stdout = child.stdout.take().expect("stdout");
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let take = |n: usize| -> Vec<u64> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seqs = Vec::new();
        while seqs.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = lines.recv_timeout(left).expect("a tailed line in time");
            let value: Value = serde_json::from_str(&line).expect("json line");
            seqs.push(value["seq"].as_u64().expect("seq"));
        }
        seqs
    };
    assert_eq!(take(2), [n_before - 2, n_before - 1]);
    home.strata()
        .args(["compact", "--offline", "dsh#alpha-2222"])
        .assert()
        .success();
    assert_eq!(take(5), (n_before..n_before + 5).collect::<Vec<_>>());
    let _ = child.kill();
    let _ = child.wait();
    // Tailing left nothing: the directory holds the log and the lock compact took.
    assert_only_dsh_files(
        &home.session_dir(Some("/home/user/project"), "alpha-2222"),
        &["session.v3.jsonl.zstd"],
    );
}
