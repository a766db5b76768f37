//! What the CLI benches share: knobs, the synthetic log they measure, and a child process's
//! wall time and peak RSS.

#![allow(dead_code)] // each bench binary uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use strata_core::synth::{generate, generate_conversation, ConversationConfig, SynthConfig};
use strata_store::{Backend, Compression, JsonlBackend, JsonlConfig};

/// The id of the generated session.
pub const ID: &str = "bench";

/// Events per append batch (and per decode batch on read), as dsh writes.
const BATCH: usize = 512;

/// A numeric knob from the environment.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Child process entry: writes the synthetic log of `shape` and `size` (events of the
/// realistic log, live nodes of the conversation) as a raw V3 JSONL file under `root`.
pub fn generate_log(root: &Path, shape: &str, size: u64) {
    let session = match shape {
        "conversation" => generate_conversation(&ConversationConfig {
            nodes: size,
            id: ID.to_owned(),
            ..ConversationConfig::default()
        }),
        _ => generate(&SynthConfig {
            events: size,
            id: ID.to_owned(),
            ..SynthConfig::default()
        }),
    }
    .expect("the generator's appends are valid");
    let backend = JsonlBackend::new(JsonlConfig::new(root.to_path_buf(), Compression::None));
    let mut appender = backend
        .create(session.header(), &[])
        .expect("create the log");
    // One append (and one zstd frame) per batch, as dsh writes.
    for batch in session.events().unwrap().chunks(BATCH) {
        appender.append_events(batch).expect("append a batch");
    }
    drop(appender);
}

/// Generates the log in a child process (`this --child-generate ROOT SHAPE SIZE`): a
/// process's peak RSS counts the memory of the process it was forked from, so the bench
/// process stays small. Returns the log's path.
pub fn generate_in_child(this: &Path, root: &Path, shape: &str, size: u64) -> PathBuf {
    let status = Command::new(this)
        .args([
            "--child-generate",
            &root.display().to_string(),
            shape,
            &size.to_string(),
        ])
        .status()
        .expect("spawn the generator");
    assert!(status.success(), "generating the log failed");
    find_log(root).expect("the generated log")
}

/// Serves `--child-generate ROOT SHAPE SIZE` when this process was started as that child.
pub fn serve_child_generate(args: &[String]) -> bool {
    let Some(index) = args.iter().position(|arg| arg == "--child-generate") else {
        return false;
    };
    let size = args[index + 3].parse().expect("a size");
    generate_log(Path::new(&args[index + 1]), &args[index + 2], size);
    true
}

/// The number of newlines in `bytes`.
pub fn count_lines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|byte| **byte == b'\n').count()
}

/// The one `session.v3.jsonl` under `root`.
pub fn find_log(root: &Path) -> Option<PathBuf> {
    find_file(root, "session.v3.jsonl")
}

/// The first file named `name` under `root`, depth first.
pub fn find_file(root: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|found| found == name) {
            return Some(path);
        }
    }
    None
}

/// Runs `command` to its end with its output discarded: `(wall seconds, peak RSS bytes)`.
/// The peak is the child's own (`wait4`), not the largest of all children so far; it also
/// counts this process's RSS when it forked (Linux carries it over), which the bench keeps to
/// a few MB.
pub fn measure(mut command: Command) -> (f64, u64) {
    let start = Instant::now();
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is valid; `wait4` writes it and the status of our own
    // child, which `Child` has not waited for (it never waits on drop).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{command:?} failed with status {status}"
    );
    drop(child);
    // `ru_maxrss` is in KiB on Linux.
    (seconds, u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024)
}
