//! Peak memory of the commands that read every surface node, on a log whose surface is as large
//! as the log: a long conversation never compacted (issue 22). Each command's own peak RSS
//! (`wait4`) is held to what loading the same file takes (`strata validate`) plus the file's
//! size once more. Keeping a parsed tree per node (ten times the payload text) took ten files'
//! worth; `cargo bench -p strata-cli --bench commands` measures the same on a million nodes.
//!
//! A binary of its own, not a module of `tests/cli.rs`: a child's peak RSS also counts the
//! memory of the process that spawned it (Linux carries it over an exec), and the other CLI
//! tests running beside this one would lend it theirs. For the same reason the log is written
//! line by line, never held as a session here.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Stdio;

/// User/assistant exchanges in the generated log (about 17 MB).
const N_EXCHANGES: u64 = 30_000;

/// Writes a V3 log of one turn of `n_exchanges` user/assistant exchanges, every tenth answer
/// after a tool call and its result; returns the number of events.
fn write_conversation(path: &Path, n_exchanges: u64) -> u64 {
    let mut out = BufWriter::new(File::create(path).expect("create the log"));
    writeln!(
        out,
        r#"{{"type":"session","version":3,"id":"long","createdAt":1700000000000,"isSeeded":false,"delegationDepth":0,"cwd":"/home/user/project"}}"#
    )
    .expect("write");
    let mut seq = 0_u64;
    let mut event = |out: &mut BufWriter<File>, kind: &str, data: &str, surface: &str| {
        writeln!(
            out,
            r#"{{"type":"{kind}","seq":{seq},"time":{},"data":{data}{surface}}}"#,
            1_700_000_001_000 + seq
        )
        .expect("write");
        seq += 1;
        seq - 1
    };
    let append = r#","surfaceOp":"append""#;
    event(&mut out, "turn/start", r#"{"turn":1}"#, "");
    event(&mut out, "step/start", r#"{"turn":1,"step":1}"#, "");
    event(
        &mut out,
        "system/message",
        r#"{"turn":1,"step":1,"message":{"role":"system","content":[{"type":"text","text":"You are a helpful assistant."}],"source":{"kind":"plugin","plugin":"@deepseek-ai/dsh-system-prompt"},"id":"system-0"}}"#,
        append,
    );
    event(
        &mut out,
        "request/header",
        r#"{"header":{"config":{"provider":"deepseek","model":"deepseek-chat","maxTokens":8192}},"reason":"initial"}"#,
        "",
    );
    let assistant = |id: &str, content: &str| {
        format!(
            r#"{{"turn":1,"step":1,"message":{{"role":"assistant","content":[{content}],"source":{{"kind":"model","provider":"deepseek","model":"deepseek-chat"}},"id":"{id}"}},"stream":[]}}"#
        )
    };
    for exchange in 1..=n_exchanges {
        event(
            &mut out,
            "user/message",
            &format!(
                r#"{{"content":[{{"type":"text","text":"question {exchange}: déjà \"vu\""}}],"source":{{"kind":"user"}},"role":"user","id":"u{exchange}"}}"#
            ),
            append,
        );
        if exchange % 10 == 0 {
            let call = format!(
                r#"{{"type":"tool-call","id":"c{exchange}","name":"read_file","arguments":"{{\"path\":\"a\"}}"}}"#
            );
            event(
                &mut out,
                "assistant/message",
                &assistant(&format!("a{exchange}t"), &call),
                append,
            );
            let call_seq = event(
                &mut out,
                "tool/call",
                &format!(
                    r#"{{"turn":1,"step":1,"callId":"c{exchange}","name":"read_file","arguments":"{{\"path\":\"a\"}}"}}"#
                ),
                "",
            );
            event(
                &mut out,
                "tool/result",
                &format!(
                    r#"{{"turn":1,"step":1,"message":{{"source":{{"kind":"tool","callId":"c{exchange}"}},"content":[{{"type":"tool-result","toolCallId":"c{exchange}","content":[{{"type":"text","text":"line\nbreak"}}],"isError":false}}],"role":"user","id":"r{exchange}"}}}}"#
                ),
                &format!(r#","sourceEventSeqs":[{call_seq}],"surfaceOp":"append""#),
            );
        }
        event(
            &mut out,
            "assistant/message",
            &assistant(
                &format!("a{exchange}"),
                &format!(r#"{{"type":"text","text":"answer {exchange}"}}"#),
            ),
            append,
        );
    }
    event(&mut out, "step/end", r#"{"turn":1,"step":1}"#, "");
    event(
        &mut out,
        "turn/end",
        r#"{"turn":1,"reason":{"kind":"completed"}}"#,
        "",
    );
    out.flush().expect("flush");
    seq
}

/// Runs `strata args` to its end, output discarded, and returns its own peak RSS in bytes.
fn peak_rss(args: &[&str]) -> u64 {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("strata"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn strata");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is valid; `wait4` writes it and the status of our own
    // child, which `Child` has not waited for (it never waits on drop).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "strata {args:?} failed with status {status}"
    );
    drop(child);
    // `ru_maxrss` is in KiB on Linux.
    u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024
}

// Issue 22: "`strata surface`, `strata messages` and `strata compact --dry-run` peak at
// 15–20× a log whose surface has a million live nodes".
#[test]
fn reading_every_surface_node_takes_a_load_plus_at_most_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("long.v3.jsonl");
    let n_events = write_conversation(&log, N_EXCHANGES);
    let log_bytes = std::fs::metadata(&log).expect("the log").len();
    let file = log.to_str().expect("a UTF-8 temp path");
    let at = (n_events * 9 / 10).to_string();
    let load = peak_rss(&["validate", file]);
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let commands: &[&[&str]] = &[
        &["surface", file],
        &["surface", file, "--json"],
        &["messages", file],
        &["messages", file, "--json"],
        &["messages", file, "--format", "openai"],
        &["messages", file, "--format", "anthropic"],
        &["messages", file, "--at", &at],
        &["compact", file, "--dry-run"],
        &["compact", file, "--dry-run", "--offline"],
    ];
    for args in commands {
        let peak = peak_rss(args);
        assert!(
            peak <= load + log_bytes,
            "strata {}: peak RSS {:.1} MB, over the load's {:.1} MB plus the {:.1} MB file \
             ({:.2}x the file, the load {:.2}x)",
            args.join(" "),
            mb(peak),
            mb(load),
            mb(log_bytes),
            peak as f64 / log_bytes as f64,
            load as f64 / log_bytes as f64,
        );
    }
}

/// Runs `strata args` to its end and returns its exit code and its own peak RSS in bytes.
fn exit_and_peak_rss(args: &[&str]) -> (i32, u64) {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("strata"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn strata");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: as in `peak_rss`.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status),
        "strata {args:?} did not exit: {status}"
    );
    drop(child);
    (
        libc::WEXITSTATUS(status),
        u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
    )
}

// Issue 27: any zstd framing is read, streaming. A log compressed as one frame (what the
// `zstd` tool writes) loads in what the raw log takes, and a decompression bomb (a few
// kilobytes that expand to a gibibyte of one unterminated record) is refused at the record
// limit, in bounded memory, without inflating the gibibyte.
#[test]
fn a_one_frame_zstd_log_and_a_decompression_bomb_read_in_bounded_memory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let raw = dir.path().join("long.v3.jsonl");
    write_conversation(&raw, N_EXCHANGES);
    let zst = dir.path().join("long.v3.jsonl.zst");
    let mut encoder =
        zstd::stream::Encoder::new(File::create(&zst).expect("create"), 3).expect("encoder");
    std::io::copy(&mut File::open(&raw).expect("open"), &mut encoder).expect("compress");
    encoder.finish().expect("finish");
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let load = peak_rss(&["validate", raw.to_str().expect("utf-8")]);
    let zst_load = peak_rss(&["validate", zst.to_str().expect("utf-8")]);
    eprintln!(
        "validate peak RSS: raw {:.1} MB, one-frame zstd {:.1} MB ({:.1} MB log)",
        mb(load),
        mb(zst_load),
        mb(std::fs::metadata(&raw).expect("log").len())
    );
    // The decoder's window and buffers, a few MB, and nothing in proportion to the log.
    assert!(
        zst_load <= load + 16_000_000,
        "one-frame zstd validate: {:.1} MB, raw {:.1} MB",
        mb(zst_load),
        mb(load)
    );

    let bomb = dir.path().join("bomb.v3.jsonl.zst");
    let mut encoder =
        zstd::stream::Encoder::new(File::create(&bomb).expect("create"), 1).expect("encoder");
    writeln!(
        encoder,
        r#"{{"type":"session","version":3,"id":"bomb","createdAt":1700000000000,"isSeeded":false,"delegationDepth":0}}"#
    )
    .expect("write");
    let block = vec![b'x'; 1 << 20];
    for _ in 0..1024 {
        encoder.write_all(&block).expect("compress");
    }
    encoder.finish().expect("finish");
    let compressed = std::fs::metadata(&bomb).expect("bomb").len();
    assert!(compressed < 1 << 20, "the bomb is {compressed} bytes");
    let (code, peak) = exit_and_peak_rss(&["validate", bomb.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "a record over the limit is a rejection");
    eprintln!(
        "bomb: {compressed} bytes expanding to 1 GiB, validate peak RSS {:.1} MB",
        mb(peak)
    );
    // The 64 MiB record limit, the decoder's window and the process: far from the 1 GiB.
    assert!(peak < 256_000_000, "bomb: peak RSS {:.1} MB", mb(peak));
}
