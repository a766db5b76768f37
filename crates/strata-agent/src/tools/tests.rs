//! The built-in tools on real temporary directories: confinement, each tool's output, caps,
//! timeouts and cancellation.

use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::*;

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    (dir, workspace)
}

async fn run(
    tool: &dyn Tool,
    workspace: &Workspace,
    arguments: Value,
) -> Result<ToolOutput, ToolError> {
    let cancel = CancellationToken::new();
    tool.run(ToolInput {
        arguments: &arguments,
        workspace,
        cancel: &cancel,
    })
    .await
}

#[test]
fn workspace_confines_paths_lexically() {
    let (_dir, workspace) = workspace();
    let root = workspace.root().to_path_buf();
    let confined = |path: &str| {
        workspace
            .confine(path)
            .map(|path| path.display().to_string())
    };
    assert_eq!(confined("src").unwrap(), "src");
    assert_eq!(confined("./src/../src/new.rs").unwrap(), "src/new.rs");
    assert_eq!(confined("").unwrap(), ".");
    assert_eq!(confined("src/..").unwrap(), ".");
    assert_eq!(
        confined(&root.join("a/b").display().to_string()).unwrap(),
        "a/b"
    );
    assert_eq!(confined(&root.display().to_string()).unwrap(), ".");
    let outside_root = format!("{}-sibling/x", root.display());
    for escape in ["..", "../x", "src/../../x", "/etc/passwd", &outside_root] {
        assert_eq!(
            workspace.confine(escape),
            Err(ToolError::OutsideWorkspace {
                path: escape.to_owned(),
                root: root.display().to_string(),
            }),
            "{escape} was not refused"
        );
    }
}

#[tokio::test]
async fn read_file_returns_a_line_window() {
    let (dir, workspace) = workspace();
    let lines: Vec<String> = (1..=10).map(|n| format!("line {n}")).collect();
    std::fs::write(dir.path().join("f.txt"), lines.join("\n")).unwrap();
    let all = run(&ReadFile::default(), &workspace, json!({"path": "f.txt"}))
        .await
        .unwrap();
    assert_eq!(all.text, lines.join("\n"));
    assert_eq!(
        all.meta,
        Some(json!({"lines": 10, "bytesRead": 70, "eof": true, "totalLines": 10}))
    );
    let window = run(
        &ReadFile::default(),
        &workspace,
        json!({"path": "f.txt", "offset": 3, "limit": 2}),
    )
    .await
    .unwrap();
    assert_eq!(window.text, "line 3\nline 4\n[lines 3-4; more follow]");
    let tail = run(
        &ReadFile::default(),
        &workspace,
        json!({"path": "f.txt", "offset": 9, "limit": 5}),
    )
    .await
    .unwrap();
    assert_eq!(tail.text, "line 9\nline 10\n[lines 9-10 of 10]");
    let past = run(
        &ReadFile::default(),
        &workspace,
        json!({"path": "f.txt", "offset": 12}),
    )
    .await
    .unwrap();
    assert_eq!(past.text, "[no lines from line 12: the file has 10 lines]");
    let capped = run(
        &ReadFile { max_bytes: 10 },
        &workspace,
        json!({"path": "f.txt"}),
    )
    .await
    .unwrap();
    assert_eq!(
        capped.text,
        "line 1\nlin\n[lines 1-2; line 2 cut at the 10-byte limit; more follow]"
    );
    // A cap that falls at the end of a line cuts nothing.
    let whole_lines = run(
        &ReadFile { max_bytes: 13 },
        &workspace,
        json!({"path": "f.txt"}),
    )
    .await
    .unwrap();
    assert_eq!(whole_lines.text, "line 1\nline 2\n[lines 1-2; more follow]");
    let zero = run(
        &ReadFile::default(),
        &workspace,
        json!({"path": "f.txt", "limit": 0}),
    )
    .await
    .unwrap_err();
    assert_eq!(zero.code(), "INVALID_ARGUMENTS");
}

#[tokio::test]
async fn read_file_splits_crlf_lines_and_cuts_on_a_char_boundary() {
    let (dir, workspace) = workspace();
    std::fs::write(dir.path().join("crlf.txt"), "one\r\ntwo\r\n").unwrap();
    let crlf = run(
        &ReadFile::default(),
        &workspace,
        json!({"path": "crlf.txt"}),
    )
    .await
    .unwrap();
    assert_eq!(crlf.text, "one\ntwo");
    // "é" is two bytes; a 4-byte cap falls inside the second one.
    std::fs::write(dir.path().join("utf8.txt"), "aéé\n").unwrap();
    let cut = run(
        &ReadFile { max_bytes: 4 },
        &workspace,
        json!({"path": "utf8.txt"}),
    )
    .await
    .unwrap();
    assert_eq!(
        cut.text,
        "aé\n[lines 1-1; line 1 cut at the 4-byte limit; more follow]"
    );
}

#[tokio::test]
async fn read_file_errors_carry_codes() {
    let (_dir, workspace) = workspace();
    let missing = run(&ReadFile::default(), &workspace, json!({"path": "nope"}))
        .await
        .unwrap_err();
    assert_eq!(missing.code(), "IO");
    assert!(
        missing.to_string().starts_with("cannot read \"nope\": "),
        "{missing}"
    );
    let outside = run(&ReadFile::default(), &workspace, json!({"path": "../x"}))
        .await
        .unwrap_err();
    assert_eq!(outside.code(), "OUTSIDE_WORKSPACE");
    let bad = run(&ReadFile::default(), &workspace, json!({"path": 3}))
        .await
        .unwrap_err();
    assert_eq!(
        bad,
        ToolError::invalid("read_file", "path must be a string")
    );
}

#[tokio::test]
async fn list_dir_sorts_and_marks_directories() {
    let (dir, workspace) = workspace();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("b.txt"), "").unwrap();
    std::fs::write(dir.path().join("a.txt"), "").unwrap();
    let listing = run(&ListDir::default(), &workspace, json!({}))
        .await
        .unwrap();
    assert_eq!(listing.text, "a.txt\nb.txt\nsrc/");
    let capped = run(
        &ListDir { max_entries: 1 },
        &workspace,
        json!({"path": "."}),
    )
    .await
    .unwrap();
    assert_eq!(capped.text, "a.txt\n[... 2 more entries not shown ...]");
    let empty = run(&ListDir::default(), &workspace, json!({"path": "src"}))
        .await
        .unwrap();
    assert_eq!(empty.text, "(empty directory)");
}

#[tokio::test]
async fn grep_honours_gitignore_globs_and_case() {
    let (dir, workspace) = workspace();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "fn main() {}\n// TODO: fix\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.md"), "todo later\n").unwrap();
    std::fs::write(dir.path().join("ignored.rs"), "TODO hidden\n").unwrap();
    std::fs::write(dir.path().join(".gitignore"), "ignored.rs\n").unwrap();
    std::fs::write(dir.path().join("blob.bin"), b"TODO\0binary").unwrap();
    let found = run(&Grep::default(), &workspace, json!({"pattern": "TODO"}))
        .await
        .unwrap();
    assert_eq!(found.text, "src/lib.rs:2:// TODO: fix");
    let any_case = run(
        &Grep::default(),
        &workspace,
        json!({"pattern": "todo", "case_insensitive": true}),
    )
    .await
    .unwrap();
    assert_eq!(
        any_case.text,
        "notes.md:1:todo later\nsrc/lib.rs:2:// TODO: fix"
    );
    assert_eq!(any_case.meta, Some(json!({"matches": 2, "files": 2})));
    let only_md = run(
        &Grep::default(),
        &workspace,
        json!({"pattern": "(?i)todo", "glob": "*.md"}),
    )
    .await
    .unwrap();
    assert_eq!(only_md.text, "notes.md:1:todo later");
    let none = run(&Grep::default(), &workspace, json!({"pattern": "absent"}))
        .await
        .unwrap();
    assert_eq!(none.text, "no matches");
    let bad = run(&Grep::default(), &workspace, json!({"pattern": "("}))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), "INVALID_ARGUMENTS");
}

#[tokio::test]
async fn grep_applies_the_ignore_rules_of_every_directory_down_from_the_root() {
    let (dir, workspace) = workspace();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/gen")).unwrap();
    std::fs::create_dir_all(root.join(".git/info")).unwrap();
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(root.join(".git/info/exclude"), "excluded.rs\n").unwrap();
    std::fs::write(root.join("src/.gitignore"), "gen/\n!keep.log\n").unwrap();
    std::fs::write(root.join("src/.ignore"), "ignored.rs\n").unwrap();
    for name in [
        "src/a.rs",
        "src/b.log",
        "src/keep.log",
        "src/gen/c.rs",
        "src/ignored.rs",
        "src/excluded.rs",
        "src/.hidden.rs",
        "top.log",
    ] {
        std::fs::write(root.join(name), "hit\n").unwrap();
    }
    let everywhere = run(&Grep::default(), &workspace, json!({"pattern": "hit"}))
        .await
        .unwrap();
    assert_eq!(everywhere.text, "src/a.rs:1:hit\nsrc/keep.log:1:hit");
    // Searching a subdirectory still applies the rules above it.
    let under_src = run(
        &Grep::default(),
        &workspace,
        json!({"pattern": "hit", "path": "src"}),
    )
    .await
    .unwrap();
    assert_eq!(under_src.text, everywhere.text);
    let globbed = run(
        &Grep::default(),
        &workspace,
        json!({"pattern": "hit", "glob": "*.log"}),
    )
    .await
    .unwrap();
    assert_eq!(
        globbed.text,
        "src/b.log:1:hit\nsrc/keep.log:1:hit\ntop.log:1:hit"
    );
    // A file named explicitly is searched whatever the rules say.
    let named = run(
        &Grep::default(),
        &workspace,
        json!({"pattern": "hit", "path": "src/gen/c.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(named.text, "src/gen/c.rs:1:hit");
}

#[tokio::test]
async fn grep_skips_a_file_whose_line_is_longer_than_the_searcher_may_hold() {
    let (dir, workspace) = workspace();
    let mut long = vec![b'a'; 17 * 1024 * 1024];
    long.extend_from_slice(b"\nhit\n");
    std::fs::write(dir.path().join("long.txt"), long).unwrap();
    std::fs::write(dir.path().join("short.txt"), "hit\n").unwrap();
    let found = run(&Grep::default(), &workspace, json!({"pattern": "hit"}))
        .await
        .unwrap();
    assert_eq!(found.text, "short.txt:1:hit");
}

#[tokio::test]
async fn write_file_creates_parents_inside_the_workspace_only() {
    let (dir, workspace) = workspace();
    let wrote = run(
        &WriteFile,
        &workspace,
        json!({"path": "a/b/c.txt", "content": "hey"}),
    )
    .await
    .unwrap();
    assert_eq!(wrote.text, "wrote 3 bytes to a/b/c.txt");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "hey"
    );
    let escape = run(
        &WriteFile,
        &workspace,
        json!({"path": "../evil", "content": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(escape.code(), "OUTSIDE_WORKSPACE");
}

#[tokio::test]
async fn run_command_reports_output_status_and_caps() {
    let (_dir, workspace) = workspace();
    let tool = RunCommand {
        timeout: Duration::from_secs(10),
        output_cap: 8,
    };
    let ok = run(
        &tool,
        &workspace,
        json!({"command": "printf hello; pwd >/dev/null"}),
    )
    .await
    .unwrap();
    assert_eq!(ok.text, "hello");
    assert_eq!(
        ok.meta,
        Some(json!({"exitCode": 0, "stdoutBytes": 5, "stderrBytes": 0}))
    );
    let long = run(
        &tool,
        &workspace,
        json!({"command": "printf 0123456789abcdef"}),
    )
    .await
    .unwrap();
    assert_eq!(
        long.text,
        "01234567\n[... truncated: 8 of 16 bytes shown ...]"
    );
    let failed = run(
        &tool,
        &workspace,
        json!({"command": "echo oops >&2; exit 3"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        failed,
        ToolError::CommandFailed {
            status: "status 3".into(),
            output: "[stderr]\noops\n".into()
        }
    );
    let here = run(
        &RunCommand::default(),
        &workspace,
        json!({"command": "pwd"}),
    )
    .await
    .unwrap();
    assert_eq!(here.text.trim_end(), workspace.root().display().to_string());
}

#[tokio::test]
async fn run_command_kills_the_group_on_timeout() {
    let (_dir, workspace) = workspace();
    let tool = RunCommand {
        timeout: Duration::from_secs(10),
        output_cap: 1024,
    };
    let started = std::time::Instant::now();
    let timed_out = run(
        &tool,
        &workspace,
        json!({"command": "echo before; sleep 30 & wait", "timeout_ms": 200}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        timed_out,
        ToolError::Timeout {
            after_ms: 200,
            output: "before\n".into()
        }
    );
    // The background sleep was killed with its group, so the pipes closed at once.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn run_command_stops_when_cancelled() {
    let (dir, workspace) = workspace();
    let cancel = CancellationToken::new();
    let marker = dir.path().join("started");
    let arguments = json!({"command": format!("touch {}; sleep 30", marker.display())});
    let tool = RunCommand::default();
    let running = tool.run(ToolInput {
        arguments: &arguments,
        workspace: &workspace,
        cancel: &cancel,
    });
    let canceller = async {
        // Cancel once the command has demonstrably started.
        while !marker.exists() {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cancel.cancel();
    };
    let (outcome, ()) = tokio::join!(running, canceller);
    assert_eq!(outcome, Err(ToolError::Aborted));
}

#[test]
fn toolset_builtins_follow_the_opt_ins_and_schemas_keep_order() {
    let read_only = ToolSet::builtin(&ToolsConfig::default());
    assert_eq!(read_only.names(), "read_file, list_dir, grep");
    assert!(read_only.get("run_command").is_none());
    let write_only = ToolSet::builtin(&ToolsConfig {
        allow_write: true,
        ..ToolsConfig::default()
    });
    assert_eq!(write_only.names(), "read_file, list_dir, grep, write_file");
    let commands = ToolSet::builtin(&ToolsConfig {
        allow_commands: true,
        ..ToolsConfig::default()
    });
    assert_eq!(commands.names(), "read_file, list_dir, grep, run_command");
    let run_command = commands.get("run_command").unwrap();
    assert!(
        run_command.description().contains("This is not a sandbox"),
        "{}",
        run_command.description()
    );
    let all = ToolSet::builtin(&ToolsConfig {
        allow_write: true,
        allow_commands: true,
        ..ToolsConfig::default()
    });
    assert_eq!(
        all.names(),
        "read_file, list_dir, grep, write_file, run_command"
    );
    let schemas = all.header_schemas();
    assert_eq!(schemas[0]["name"], "read_file");
    let keys: Vec<&String> = schemas[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["name", "description", "parameters"]);
    let replaced = all.with(ReadFile { max_bytes: 1 });
    assert_eq!(
        replaced.names(),
        "read_file, list_dir, grep, write_file, run_command"
    );
}

// Confinement (issue 22): no path, `..`, absolute path, symlink or rename race lets a tool read,
// list, stat, create or overwrite anything outside the workspace.

/// A workspace `ws` and a sibling directory `outside` holding `secret.txt`, under one temporary
/// directory, so a `../outside` symlink target leads out of the workspace.
struct Escape {
    _parent: tempfile::TempDir,
    ws: std::path::PathBuf,
    outside: std::path::PathBuf,
    workspace: Workspace,
}

const SECRET: &str = "SECRET outside the workspace\n";

fn escape_fixture() -> Escape {
    let parent = tempfile::tempdir().unwrap();
    let ws = parent.path().join("ws");
    let outside = parent.path().join("outside");
    std::fs::create_dir(&ws).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    let workspace = Workspace::new(&ws).unwrap();
    Escape {
        _parent: parent,
        ws,
        outside,
        workspace,
    }
}

/// The names in `dir`, sorted.
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn assert_outside(outcome: Result<ToolOutput, ToolError>, what: &str) {
    match outcome {
        Err(error) => assert_eq!(error.code(), "OUTSIDE_WORKSPACE", "{what}: {error}"),
        Ok(output) => panic!("{what} was not refused: {}", output.text),
    }
}

/// Every tool of `tools` given `path` (grep searching for the secret, write_file overwriting)
/// is refused as outside the workspace.
async fn assert_refused_by(workspace: &Workspace, path: &str, tools: &[&str]) {
    for &tool in tools {
        let outcome = match tool {
            "read_file" => run(&ReadFile::default(), workspace, json!({"path": path})).await,
            "list_dir" => run(&ListDir::default(), workspace, json!({"path": path})).await,
            "grep" => {
                let arguments = json!({"pattern": "SECRET", "path": path});
                run(&Grep::default(), workspace, arguments).await
            }
            "write_file" => {
                let arguments = json!({"path": path, "content": "overwritten"});
                run(&WriteFile, workspace, arguments).await
            }
            other => panic!("no tool {other}"),
        };
        assert_outside(outcome, &format!("{tool} {path}"));
    }
}

/// The four file tools.
const FILE_TOOLS: [&str; 4] = ["read_file", "list_dir", "grep", "write_file"];

#[tokio::test]
async fn write_file_never_creates_a_file_through_a_dangling_symlink_out_of_the_workspace() {
    let fixture = escape_fixture();
    let ws = &fixture.ws;
    let absolute_target = fixture.outside.join("created-absolute");
    std::os::unix::fs::symlink(&absolute_target, ws.join("absolute")).unwrap();
    std::os::unix::fs::symlink("../outside/created-relative", ws.join("relative")).unwrap();
    std::os::unix::fs::symlink("../outside/secret.txt", ws.join("live")).unwrap();
    std::os::unix::fs::symlink("../outside", ws.join("out-dir")).unwrap();
    std::os::unix::fs::symlink(&fixture.outside, ws.join("out-dir-absolute")).unwrap();
    for path in [
        "absolute",
        "relative",
        "live",
        "out-dir/created",
        "out-dir/new-sub/created",
        "out-dir-absolute/created",
        "out-dir-absolute/new-sub/created",
    ] {
        let outcome = run(
            &WriteFile,
            &fixture.workspace,
            json!({"path": path, "content": "written"}),
        )
        .await;
        assert_outside(outcome, path);
    }
    assert_eq!(names_in(&fixture.outside), ["secret.txt"]);
    assert_eq!(
        std::fs::read_to_string(fixture.outside.join("secret.txt")).unwrap(),
        SECRET
    );
    // A dangling symlink whose target stays inside is followed: it creates its target.
    std::os::unix::fs::symlink("made-through-link.txt", ws.join("inside-link")).unwrap();
    let wrote = run(
        &WriteFile,
        &fixture.workspace,
        json!({"path": "inside-link", "content": "hi"}),
    )
    .await
    .unwrap();
    assert_eq!(wrote.text, "wrote 2 bytes to inside-link");
    assert_eq!(
        std::fs::read_to_string(ws.join("made-through-link.txt")).unwrap(),
        "hi"
    );
}

#[tokio::test]
async fn every_tool_refuses_a_symlinked_directory_component_that_leads_outside() {
    let fixture = escape_fixture();
    let ws = &fixture.ws;
    std::os::unix::fs::symlink("../outside", ws.join("relative")).unwrap();
    std::os::unix::fs::symlink(&fixture.outside, ws.join("absolute")).unwrap();
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::os::unix::fs::symlink("../../outside", ws.join("sub/deeper")).unwrap();
    for link in ["relative", "absolute", "sub/deeper"] {
        let file = format!("{link}/secret.txt");
        assert_refused_by(&fixture.workspace, &file, &FILE_TOOLS).await;
        assert_refused_by(&fixture.workspace, link, &["list_dir", "grep"]).await;
    }
    // The walk from the root does not follow the links either.
    let everywhere = run(
        &Grep::default(),
        &fixture.workspace,
        json!({"pattern": "SECRET"}),
    )
    .await
    .unwrap();
    assert_eq!(everywhere.text, "no matches");
    assert_eq!(names_in(&fixture.outside), ["secret.txt"]);
    assert_eq!(
        std::fs::read_to_string(fixture.outside.join("secret.txt")).unwrap(),
        SECRET
    );
}

#[tokio::test]
async fn read_tools_refuse_a_live_symlink_to_a_file_outside() {
    let fixture = escape_fixture();
    let ws = &fixture.ws;
    std::os::unix::fs::symlink("../outside/secret.txt", ws.join("relative")).unwrap();
    std::os::unix::fs::symlink(fixture.outside.join("secret.txt"), ws.join("absolute")).unwrap();
    let workspace = &fixture.workspace;
    for link in ["relative", "absolute"] {
        assert_refused_by(workspace, link, &["read_file", "grep", "list_dir"]).await;
    }
    // Listing the directory shows the links as names; nothing they point to is touched.
    let listing = run(&ListDir::default(), workspace, json!({}))
        .await
        .unwrap();
    assert_eq!(listing.text, "absolute\nrelative");
    let everywhere = run(&Grep::default(), workspace, json!({"pattern": "SECRET"}))
        .await
        .unwrap();
    assert_eq!(everywhere.text, "no matches");
}

#[tokio::test]
async fn symlinks_that_stay_inside_the_workspace_are_followed() {
    let fixture = escape_fixture();
    let ws = &fixture.ws;
    std::fs::create_dir(ws.join("book")).unwrap();
    std::fs::write(ws.join("book/page.md"), "hello\n").unwrap();
    std::os::unix::fs::symlink("book", ws.join("docs")).unwrap();
    std::os::unix::fs::symlink(ws.join("book/page.md"), ws.join("page")).unwrap();
    let workspace = &fixture.workspace;
    let read = run(
        &ReadFile::default(),
        workspace,
        json!({"path": "docs/page.md"}),
    )
    .await
    .unwrap();
    assert_eq!(read.text, "hello");
    // An absolute target is refused even when it names a place inside (see the workspace's
    // module docs): beneath the root's handle, `/` is outside.
    let absolute = run(&ReadFile::default(), workspace, json!({"path": "page"})).await;
    assert_outside(absolute, "an absolute link to a file inside");
    let list = run(&ListDir::default(), workspace, json!({"path": "docs"}))
        .await
        .unwrap();
    assert_eq!(list.text, "page.md");
    let grep = run(
        &Grep::default(),
        workspace,
        json!({"pattern": "hello", "path": "docs"}),
    )
    .await
    .unwrap();
    assert_eq!(grep.text, "docs/page.md:1:hello");
}

#[tokio::test]
async fn every_tool_refuses_dotdot_and_absolute_paths_outside() {
    let fixture = escape_fixture();
    let workspace = &fixture.workspace;
    let absolute = fixture.outside.join("secret.txt").display().to_string();
    let absolute_dir = fixture.outside.display().to_string();
    for path in [
        "../outside/secret.txt",
        "a/../../outside/secret.txt",
        absolute.as_str(),
    ] {
        assert_refused_by(workspace, path, &["read_file", "grep", "write_file"]).await;
    }
    for path in ["..", "../outside", absolute_dir.as_str(), "/"] {
        assert_refused_by(workspace, path, &["list_dir"]).await;
    }
    // An absolute path under the root is the same as the relative one.
    std::fs::write(fixture.ws.join("in.txt"), "inside\n").unwrap();
    let inside = fixture.ws.join("in.txt").display().to_string();
    let read = run(&ReadFile::default(), workspace, json!({"path": inside}))
        .await
        .unwrap();
    assert_eq!(read.text, "inside");
    assert_eq!(
        std::fs::read_to_string(fixture.outside.join("secret.txt")).unwrap(),
        SECRET
    );
}

/// While a thread keeps exchanging the workspace directory `d` with a symlink to outside
/// (`renameat2(RENAME_EXCHANGE)`, so `d` is always one or the other), every tool call sees
/// either the real directory or a refusal: nothing outside is ever read, listed or written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_stay_inside_while_a_directory_is_swapped_for_a_symlink_to_outside() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;

    let fixture = escape_fixture();
    let ws = fixture.ws.clone();
    std::fs::create_dir(ws.join("d")).unwrap();
    std::fs::write(ws.join("d/secret.txt"), "inside\n").unwrap();
    std::fs::write(fixture.outside.join("only-outside.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink(&fixture.outside, ws.join("d-swap")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let n_swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, n_swaps, ws) = (stop.clone(), n_swaps.clone(), ws.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    ws.join("d"),
                    rustix::fs::CWD,
                    ws.join("d-swap"),
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                n_swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let workspace = &fixture.workspace;
    let mut n_inside_reads = 0;
    for call in 0..300 {
        // Wait for the swapper to move between calls, so calls meet both states.
        let seen = n_swaps.load(Ordering::Relaxed);
        while n_swaps.load(Ordering::Relaxed) == seen {
            std::thread::yield_now();
        }
        if let Ok(read) = run(
            &ReadFile::default(),
            workspace,
            json!({"path": "d/secret.txt"}),
        )
        .await
        {
            assert_eq!(read.text, "inside", "call {call}");
            n_inside_reads += 1;
        }
        if let Ok(list) = run(&ListDir::default(), workspace, json!({"path": "d"})).await {
            assert!(
                !list.text.contains("only-outside"),
                "call {call}: {}",
                list.text
            );
        }
        for path in [".", "d"] {
            if let Ok(grep) = run(
                &Grep::default(),
                workspace,
                json!({"pattern": "SECRET", "path": path}),
            )
            .await
            {
                assert_eq!(grep.text, "no matches", "call {call}");
            }
        }
        let _ = run(
            &WriteFile,
            workspace,
            json!({"path": format!("d/written-{call}.txt"), "content": "x"}),
        )
        .await;
        let _ = run(
            &WriteFile,
            workspace,
            json!({"path": "d/secret.txt", "content": "inside\n"}),
        )
        .await;
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(
        names_in(&fixture.outside),
        ["only-outside.txt", "secret.txt"]
    );
    assert_eq!(
        std::fs::read_to_string(fixture.outside.join("secret.txt")).unwrap(),
        SECRET
    );
    assert!(n_inside_reads > 0, "no call ever saw the real directory");
}

// Special and huge files (issue 22): no tool blocks on a FIFO, socket or device, and a window
// near the start of a huge file reads a bounded amount of it.

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

#[tokio::test]
async fn read_file_refuses_fifos_and_sockets_at_once() {
    let (dir, workspace) = workspace();
    mkfifo(&dir.path().join("pipe"));
    let _listener = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
    let pipe = run(&ReadFile::default(), &workspace, json!({"path": "pipe"}))
        .await
        .unwrap_err();
    assert_eq!(
        pipe,
        ToolError::Io {
            op: "read".into(),
            path: "pipe".into(),
            detail: "not a regular file: a named pipe (FIFO)".into(),
        }
    );
    let sock = run(&ReadFile::default(), &workspace, json!({"path": "sock"}))
        .await
        .unwrap_err();
    assert_eq!(
        sock,
        ToolError::Io {
            op: "read".into(),
            path: "sock".into(),
            detail: "not a regular file: a socket".into(),
        }
    );
    let directory = run(&ReadFile::default(), &workspace, json!({"path": "."}))
        .await
        .unwrap_err();
    assert_eq!(directory.to_string(), "cannot read \".\": is a directory");
    // Nor does write_file open them for writing, with or without a reader.
    let write_pipe = run(
        &WriteFile,
        &workspace,
        json!({"path": "pipe", "content": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        write_pipe.to_string(),
        "cannot write \"pipe\": not a regular file: a named pipe (FIFO)"
    );
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(dir.path().join("pipe"))
        .unwrap();
    let write_read_pipe = run(
        &WriteFile,
        &workspace,
        json!({"path": "pipe", "content": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(write_pipe, write_read_pipe);
    drop(reader);
    // list_dir names them without opening them.
    let listing = run(&ListDir::default(), &workspace, json!({}))
        .await
        .unwrap();
    assert_eq!(listing.text, "pipe\nsock");
}

#[tokio::test]
async fn grep_skips_fifos_and_sockets() {
    let (dir, workspace) = workspace();
    mkfifo(&dir.path().join("pipe"));
    let _listener = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
    std::fs::write(dir.path().join("text.txt"), "needle\n").unwrap();
    let found = run(&Grep::default(), &workspace, json!({"pattern": "needle"}))
        .await
        .unwrap();
    assert_eq!(found.text, "text.txt:1:needle");
    assert_eq!(found.meta, Some(json!({"matches": 1, "files": 1})));
    let named = run(
        &Grep::default(),
        &workspace,
        json!({"pattern": "needle", "path": "pipe"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        named.to_string(),
        "cannot search \"pipe\": not a regular file: a named pipe (FIFO)"
    );
}

#[tokio::test]
async fn read_file_limit_one_reads_a_bounded_prefix_of_a_huge_sparse_file() {
    const SIZE: u64 = 4 << 30;
    let (dir, workspace) = workspace();
    let file = std::fs::File::create(dir.path().join("huge")).unwrap();
    std::io::Write::write_all(&mut &file, b"first line\nsecond line\n").unwrap();
    file.set_len(SIZE).unwrap();
    drop(file);
    let first = run(
        &ReadFile::default(),
        &workspace,
        json!({"path": "huge", "limit": 1}),
    )
    .await
    .unwrap();
    assert_eq!(first.text, "first line\n[lines 1-1; more follow]");
    let meta = first.meta.unwrap();
    assert_eq!(meta["lines"], 1);
    assert_eq!(meta["eof"], false);
    let n_read = meta["bytesRead"].as_u64().unwrap();
    assert!(n_read <= 64 * 1024, "read {n_read} bytes for one line");
    let second = run(
        &ReadFile::default(),
        &workspace,
        json!({"path": "huge", "offset": 2, "limit": 1}),
    )
    .await
    .unwrap();
    assert_eq!(second.text, "second line\n[lines 2-2; more follow]");
    // Line 3 is the rest of the file, four gigabytes of NULs: the byte cap stops the read.
    let third = run(
        &ReadFile { max_bytes: 1000 },
        &workspace,
        json!({"path": "huge", "offset": 3}),
    )
    .await
    .unwrap();
    assert!(
        third
            .text
            .ends_with("\n[lines 3-3; line 3 cut at the 1000-byte limit; more follow]"),
        "{}",
        third.text
    );
    let n_read = third.meta.unwrap()["bytesRead"].as_u64().unwrap();
    assert!(n_read <= 64 * 1024, "read {n_read} bytes for 1000");
    // grep sees the NULs as binary and stops at once.
    let grep = run(&Grep::default(), &workspace, json!({"pattern": "first"}))
        .await
        .unwrap();
    assert_eq!(grep.text, "no matches");
}
