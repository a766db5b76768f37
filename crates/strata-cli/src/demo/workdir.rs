//! The scratch project the demo's tools work on: a tiny job queue with a config file, two
//! sources with TODOs and last night's server log — large enough (over 8,192 code points) that
//! reading it gives the pruner something to do, with the interesting line near its end so it
//! survives the middle elision.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// A temporary directory holding the project; removed when dropped (the session log keeps
/// everything the tools read from it).
#[derive(Debug)]
pub struct Workdir {
    root: PathBuf,
}

impl Workdir {
    /// Creates a fresh directory under the system temp dir and writes the project into it.
    pub fn create() -> anyhow::Result<Workdir> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        let root =
            std::env::temp_dir().join(format!("strata-demo-{}-{nanos:09}", std::process::id()));
        std::fs::create_dir_all(root.join("src"))
            .and_then(|()| std::fs::create_dir_all(root.join("logs")))
            .with_context(|| format!("create the demo project in {}", root.display()))?;
        let workdir = Workdir { root };
        for (name, text) in FILES {
            workdir.write(name, text)?;
        }
        workdir.write("logs/server.log", &server_log())?;
        Ok(workdir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The project's files, relative to the root, for the intro line.
    pub fn file_names(&self) -> Vec<&'static str> {
        FILES
            .iter()
            .map(|(name, _)| *name)
            .chain(["logs/server.log"])
            .collect()
    }

    fn write(&self, name: &str, text: &str) -> anyhow::Result<()> {
        let path = self.root.join(name);
        std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        // Best effort: a leftover scratch directory in the temp dir harms nobody.
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The small files, relative path and text.
const FILES: [(&str, &str); 4] = [
    (
        "README.md",
        "# tinyq\n\nA tiny job queue: a pool of workers pulls jobs and retries the ones that fail.\n",
    ),
    (
        "config.toml",
        "[workers]\ncount = 4\nmemory_limit_mb = 256\n\n[retry]\nmax_retries = 3\nbackoff_ms = 200\n",
    ),
    (
        "src/main.rs",
        "//! tinyq: start the workers and feed them jobs.\nmod queue;\n\nfn main() {\n    let config = queue::Config::load(\"config.toml\");\n    queue::run(config);\n}\n",
    ),
    (
        "src/queue.rs",
        "//! The job queue and its workers.\npub struct Config {\n    pub workers: usize,\n    pub max_retries: u32,\n}\n\nimpl Config {\n    pub fn load(path: &str) -> Config {\n        // TODO: read the file instead of using the defaults.\n        let _ = path;\n        Config { workers: 4, max_retries: 3 }\n    }\n}\n\npub fn run(config: Config) {\n    // TODO: restart a worker that dies instead of leaving its slot empty.\n    for worker in 0..config.workers {\n        println!(\"worker {worker} started\");\n    }\n}\n",
    ),
];

/// About 16 KB of routine log lines, then the out-of-memory kill and a few lines after it.
fn server_log() -> String {
    const KINDS: [&str; 4] = ["send-email", "resize-image", "build-report", "sync-feed"];
    let line = |tenths: u64, level: &str, rest: &str| {
        let seconds = tenths / 10;
        format!(
            "2024-05-14T02:{:02}:{:02}.{}00Z {level:<5} {rest}\n",
            seconds / 60,
            seconds % 60,
            tenths % 10
        )
    };
    let routine = |index: u64| {
        format!(
            "worker={} job={} kind={} status=ok duration_ms={}",
            index % 4 + 1,
            7500 + index,
            KINDS[(index * 7 % 4) as usize],
            20 + index * 37 % 180
        )
    };
    let mut log = String::new();
    for index in 0..180 {
        log.push_str(&line(index * 46, "INFO", &routine(index)));
    }
    log.push_str(&line(
        8470,
        "ERROR",
        "worker=3 job=7719 kind=resize-image memory_mb=301 limit_mb=256: out of memory, worker killed",
    ));
    log.push_str(&line(8471, "WARN", "supervisor: restarting worker 3"));
    log.push_str(&line(8480, "INFO", "worker=3 started"));
    for index in 180..184 {
        log.push_str(&line(8480 + (index - 179) * 46, "INFO", &routine(index)));
    }
    log
}
