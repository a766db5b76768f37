//! The `strata` binary, for the writer paths that only the command line drives (the agent loop
//! with a scripted model, Ctrl-C, `--resume`, and the file commands). Cargo builds it for
//! strata-cli's own tests, so under `cargo test --workspace` it sits beside this test's
//! executable (`target/debug/strata`); `STRATA_BIN` names another.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary, or why there is none.
pub fn find() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("STRATA_BIN") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("STRATA_BIN={} is not a file", path.display()))
        };
    }
    let exe = std::env::current_exe().map_err(|error| error.to_string())?;
    // target/debug/deps/released-HASH → target/debug/strata
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("the test executable has no target folder")?;
    let path = dir.join(format!("strata{}", std::env::consts::EXE_SUFFIX));
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("{} is missing", path.display()))
    }
}

/// `strata` with a private home (its default store) and no store from the environment.
pub fn command(binary: &Path, home: &Path) -> Command {
    let mut command = Command::new(binary);
    command
        .env("STRATA_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("STRATA_STORE")
        .env_remove("STRATA_DATABASE_URL")
        .env_remove("DEEPSEEK_API_KEY")
        .stdin(Stdio::null());
    command
}

/// Runs `command`; an error naming it unless it exited with one of `codes`.
pub fn run(command: &mut Command, codes: &[i32]) -> Result<Output, String> {
    let output = command
        .output()
        .map_err(|error| format!("{command:?}: {error}"))?;
    match output.status.code() {
        Some(code) if codes.contains(&code) => Ok(output),
        code => Err(format!(
            "{command:?} exited {code:?}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

/// Every `*.jsonl` file under `root`, sorted.
pub fn logs_under(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "jsonl") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
