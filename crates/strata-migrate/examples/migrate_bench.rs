//! Migration throughput and memory: migrates one older-generation log to V3 and prints the
//! wall time of each pass and the process's peak RSS (issue 4, "Performance"; compare with
//! upstream's figures in persistence §8).
//!
//! ```sh
//! python3 ../shared/oracle/gen.py --released --events 1000000 --seed 1 -q -o /tmp/m/session.jsonl
//! cargo run --release -p strata-migrate --example migrate_bench -- /tmp/m/session.jsonl
//! ```
//!
//! The target `session.v3.jsonl[.zstd]` is written beside the source; the bench removes it
//! afterwards so it can be rerun. Peak RSS is the kernel's high-water mark (`VmHWM`), which
//! covers all three passes (validate source, migrate + write, verify target).

use std::path::PathBuf;
use std::time::Instant;

use strata_migrate::migrate::{migrate_file, validate_source, verify_target};

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() {
    let Some(source) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: migrate_bench SOURCE (a v0/v1/v2 session log)");
        std::process::exit(2);
    };
    let size = std::fs::metadata(&source).map_or(0, |meta| meta.len());
    let started = Instant::now();
    let checked = match validate_source(&source) {
        Ok(checked) => checked,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    };
    let validate = started.elapsed();
    let started = Instant::now();
    let report = match migrate_file(&source) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    };
    let migrate = started.elapsed();
    let target_size = std::fs::metadata(&report.target).map_or(0, |meta| meta.len());
    let zstd = report.target.extension().is_some_and(|ext| ext == "zstd");
    let started = Instant::now();
    let verified = verify_target(&report.target, zstd);
    let verify = started.elapsed();
    let _ = std::fs::remove_file(&report.target);
    println!(
        "source {} ({:.1} MB, {} events, {} messages) -> v3 {} events ({:.1} MB)",
        source.display(),
        size as f64 / 1e6,
        report.n_source_events,
        checked.messages.len(),
        report.n_target_events,
        target_size as f64 / 1e6,
    );
    println!(
        "validate source alone {:.2} s; migrate_file (validate + migrate/write + verify + publish) {:.2} s; verify target alone {:.2} s ({})",
        validate.as_secs_f64(),
        migrate.as_secs_f64(),
        verify.as_secs_f64(),
        if verified.is_ok() { "ok" } else { "FAILED" }
    );
    match peak_rss_mib() {
        Some(mib) => println!("peak RSS {mib:.1} MiB"),
        None => println!("peak RSS unavailable (no /proc/self/status)"),
    }
}
