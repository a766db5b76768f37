//! The built-in tools on real temporary directories: confinement, each tool's output, caps,
//! timeouts and cancellation.

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
fn workspace_resolves_inside_and_refuses_escapes() {
    let (dir, workspace) = workspace();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let root = workspace.root().to_path_buf();
    assert_eq!(workspace.resolve("src").unwrap(), root.join("src"));
    assert_eq!(
        workspace.resolve("src/../src/new.rs").unwrap(),
        root.join("src/new.rs")
    );
    assert_eq!(workspace.resolve("").unwrap(), root);
    assert_eq!(
        workspace
            .resolve(&root.join("a/b").display().to_string())
            .unwrap(),
        root.join("a/b")
    );
    for escape in ["..", "../x", "src/../../x", "/etc/passwd"] {
        assert!(
            matches!(
                workspace.resolve(escape),
                Err(ToolError::OutsideWorkspace { .. })
            ),
            "{escape} was not refused"
        );
    }
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    assert!(matches!(
        workspace.resolve("link/secret"),
        Err(ToolError::OutsideWorkspace { .. })
    ));
    assert_eq!(workspace.relative(&root.join("src/a.rs")), "src/a.rs");
    assert_eq!(workspace.relative(&root), ".");
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
    assert_eq!(all.meta, Some(json!({"lines": 10, "bytes": 70})));
    let window = run(
        &ReadFile::default(),
        &workspace,
        json!({"path": "f.txt", "offset": 3, "limit": 2}),
    )
    .await
    .unwrap();
    assert_eq!(window.text, "line 3\nline 4\n[lines 3-4 of 10]");
    let capped = run(
        &ReadFile { max_bytes: 10 },
        &workspace,
        json!({"path": "f.txt"}),
    )
    .await
    .unwrap();
    assert!(
        capped
            .text
            .starts_with("line 1\nlin\n[... truncated: 10 of"),
        "{}",
        capped.text
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
