//! What the store benches share: knobs from the environment, the PostgreSQL server and a schema
//! made for one run, and a process's peak RSS. Each bench uses part of it.
#![allow(dead_code)]

use postgres::{Client, NoTls};

/// A numeric knob from the environment, `default` when unset or not a number.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The bench server: `STRATA_TEST_DATABASE_URL`, else `DATABASE_URL`, else the local one.
pub fn database_url() -> String {
    ["STRATA_TEST_DATABASE_URL", "DATABASE_URL"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|url| !url.is_empty()))
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// Peak resident set of this process, from /proc (kB → bytes).
pub fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// A PostgreSQL schema made for this run (`strata_bench_<label>_<pid>`), dropped when the guard
/// goes, so benches never touch real sessions and leave nothing behind.
pub struct Schema {
    pub url: String,
    pub name: String,
}

impl Schema {
    pub fn create(url: &str, label: &str) -> Schema {
        let name = format!("strata_bench_{label}_{}", std::process::id());
        let mut client = Client::connect(url, NoTls).expect("connect to the bench server");
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
            .unwrap();
        Schema {
            url: url.to_owned(),
            name,
        }
    }

    /// The store address of this schema.
    pub fn store_url(&self) -> String {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{separator}schema={}", self.url, self.name)
    }

    /// Bytes of the schema's tables, with their indexes and TOAST.
    pub fn size(&self) -> u64 {
        let mut client = Client::connect(&self.url, NoTls).expect("connect to the bench server");
        let bytes: i64 = client
            .query_one(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relkind = 'r'",
                &[&self.name],
            )
            .unwrap()
            .get(0);
        u64::try_from(bytes).unwrap_or(0)
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Ok(mut client) = Client::connect(&self.url, NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

/// CPU seconds this process has used so far in user mode and in the kernel (every thread),
/// from `/proc/self/stat`: with wall time, how many cores a phase kept busy. The kernel's share of a load is mostly mapping fresh pages, whose
/// cost on a VM depends on the host (see `store.rs`).
pub fn cpu_times() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after its closing `)`:
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after it.
    let ticks: Vec<u64> = stat
        .rsplit_once(')')
        .map(|(_, rest)| {
            rest.split_whitespace()
                .skip(11)
                .take(2)
                .filter_map(|field| field.parse::<u64>().ok())
                .collect()
        })
        .unwrap_or_default();
    // SAFETY: sysconf reads a constant of the system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let at = |index: usize| ticks.get(index).copied().unwrap_or(0) as f64 / per_second;
    (at(0), at(1))
}
