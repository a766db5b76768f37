//! `run_command` (opt-in): run a shell command in the workspace with a time limit and an output
//! cap.
//!
//! The command runs as `sh -c` in its own process group with the workspace root as its working
//! directory and no stdin. On timeout or cancellation the whole group is killed (a shell's
//! children included), so no stray process keeps the output pipes open. Output beyond the cap
//! is drained and counted but not kept, so a chatty command neither blocks nor floods the log.
//! **This is not a sandbox.** The command runs with the user's full rights; the workspace only
//! sets its working directory, and a command can name, change or delete any path the user can.
//! That is why the tool is registered only on its own opt-in (`ToolsConfig::allow_commands`,
//! the CLI's `--allow-commands`) and why its description tells the model so.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::tool::{optional_u64_arg, string_arg};
use super::{Tool, ToolError, ToolFuture, ToolInput, ToolOutput};

/// How long to wait for the output pipes to close after the group was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Runs shell commands in the workspace.
#[derive(Debug, Clone)]
pub struct RunCommand {
    /// Time limit when the model gives none, and the largest it may ask for.
    pub timeout: Duration,
    /// Bytes of stdout, and separately of stderr, kept.
    pub output_cap: usize,
}

impl Default for RunCommand {
    fn default() -> RunCommand {
        RunCommand {
            timeout: Duration::from_secs(120),
            output_cap: 32 * 1024,
        }
    }
}

impl Tool for RunCommand {
    fn name(&self) -> &str {
        "run_command"
    }

    fn description(&self) -> &str {
        "Run a shell command (sh -c) with the workspace root as its working directory. This is not a sandbox: the command runs with the user's full rights and can read, change or delete anything the user can, inside the workspace or not. Returns stdout and stderr; fails on a non-zero exit or when the time limit passes."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command"},
                "timeout_ms": {"type": "integer", "description": "Time limit in milliseconds (capped by the configured limit)"}
            },
            "required": ["command"]
        })
    }

    fn run<'a>(&'a self, input: ToolInput<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let command = string_arg(self.name(), input.arguments, "command")?;
            let limit = optional_u64_arg(self.name(), input.arguments, "timeout_ms")?
                .map(Duration::from_millis)
                .map_or(self.timeout, |asked| asked.min(self.timeout));
            if input.cancel.is_cancelled() {
                return Err(ToolError::Aborted);
            }
            let mut child = Command::new("sh")
                .arg("-c")
                .arg(command)
                .current_dir(input.workspace.root())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .process_group(0)
                .spawn()
                .map_err(|error| ToolError::io("run", command, &error))?;
            let pid = child.id();
            let stdout = tokio::spawn(read_capped(child.stdout.take(), self.output_cap));
            let stderr = tokio::spawn(read_capped(child.stderr.take(), self.output_cap));
            let ended = tokio::select! {
                biased;
                _ = input.cancel.cancelled() => Err(ToolError::Aborted),
                _ = tokio::time::sleep(limit) => Err(ToolError::Timeout {
                    after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                    output: String::new(),
                }),
                status = child.wait() => status.map_err(|error| ToolError::io("wait for", command, &error)),
            };
            if ended.is_err() {
                kill_group(pid);
                let _ = child.kill().await;
            }
            let collect = |handle: tokio::task::JoinHandle<Captured>| async move {
                match tokio::time::timeout(DRAIN_GRACE, handle).await {
                    Ok(Ok(captured)) => captured,
                    _ => Captured::default(),
                }
            };
            let (stdout, stderr) = (collect(stdout).await, collect(stderr).await);
            let output = format_output(&stdout, &stderr);
            let meta = |status: Option<&ExitStatus>| {
                json!({
                    "exitCode": status.and_then(ExitStatus::code),
                    "stdoutBytes": stdout.total,
                    "stderrBytes": stderr.total,
                })
            };
            match ended {
                Ok(status) if status.success() => Ok(ToolOutput {
                    text: if output.is_empty() {
                        "(no output)".into()
                    } else {
                        output
                    },
                    meta: Some(meta(Some(&status))),
                }),
                Ok(status) => Err(ToolError::CommandFailed {
                    status: describe(&status),
                    output,
                }),
                Err(ToolError::Timeout { after_ms, .. }) => {
                    Err(ToolError::Timeout { after_ms, output })
                }
                Err(other) => Err(other),
            }
        })
    }
}

/// What one output pipe delivered.
#[derive(Debug, Default)]
struct Captured {
    /// The first `cap` bytes.
    kept: Vec<u8>,
    /// Every byte read.
    total: u64,
}

async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, cap: usize) -> Captured {
    let mut captured = Captured::default();
    let Some(mut pipe) = pipe else {
        return captured;
    };
    let mut buffer = vec![0u8; 8192];
    while let Ok(n_read) = pipe.read(&mut buffer).await {
        if n_read == 0 {
            break;
        }
        captured.total += n_read as u64;
        let room = cap.saturating_sub(captured.kept.len());
        captured.kept.extend_from_slice(&buffer[..n_read.min(room)]);
    }
    captured
}

fn format_output(stdout: &Captured, stderr: &Captured) -> String {
    let render = |captured: &Captured| {
        let mut text = String::from_utf8_lossy(&captured.kept).into_owned();
        if captured.total > captured.kept.len() as u64 {
            text.push_str(&format!(
                "\n[... truncated: {} of {} bytes shown ...]",
                captured.kept.len(),
                captured.total
            ));
        }
        text
    };
    let mut out = render(stdout);
    if stderr.total > 0 {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("[stderr]\n");
        out.push_str(&render(stderr));
    }
    out
}

fn describe(status: &ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("status {code}"),
        None => "unknown status".into(),
    }
}

/// Kills the command's process group (`kill -KILL -- -PGID`): the shell's children too.
fn kill_group(pid: Option<u32>) {
    let Some(pid) = pid else { return };
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
