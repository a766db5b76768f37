//! `strata convert IN OUT`: copies sessions between any two stores — JSONL (raw or zstd),
//! SQLite, PostgreSQL — in either direction, event for event, validated as they stream in.
//!
//! IN is one session (a log file, `STORE#ID`: `sqlite://PATH#ID`, `postgres://…#ID`,
//! `jsonl:DIR#ID`, …) or a whole store (a SQLite file, `sqlite:PATH`, `jsonl:DIR`,
//! `jsonl-zstd:DIR`, `postgres://…`), whose every session is copied; `dsh#ID` is one session of
//! dsh's own folder and `dsh` (or `dsh:HOME`) all of them, each at its current generation's log
//! (an older generation is refused, pointing at `strata migrate`). OUT is a store (created when
//! missing); sessions keep their ids and nothing is added (no repair, no end-seed marker). IN is
//! never modified, and no store is created on the IN side.
//!
//! Each session streams from IN into the core's restore with a progress bar, then is written to
//! OUT in one durable create. A torn tail is left out with a warning, as `strata import` does. Every session is tried; each failure is reported, and the exit
//! status says whether any was rejected (1) or could not be copied (2).

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use serde_json::json;
use strata_store::{scan_log, LogStream, Store, StoreError, TornInfo};

use super::import::{torn_tail_json, torn_tail_warning};
use super::Status;
use crate::cli::Format;
use crate::input::{
    dsh_root, is_postgres, open_postgres_store, open_store, store_failure, LoadError,
};
use crate::output;
use crate::progress::{self, Progress};

/// What IN names.
enum Source {
    /// V3 JSONL log files (one, or the sessions of dsh's folder).
    Files(Vec<std::path::PathBuf>),
    /// Sessions of a store: one, or (`None`) all of them.
    Store { store: Store, id: Option<String> },
}

pub(crate) fn run(input: &str, output_spec: &str, format: Format) -> anyhow::Result<Status> {
    let source = open_source(input)?;
    if output_spec.contains('#') && !Path::new(output_spec).exists() {
        anyhow::bail!("OUT is a store, not a session ({output_spec:?}): sessions keep their ids");
    }
    let target = open_store(Some(output_spec))?;
    let mut tally = Tally {
        to: target.backend().describe(),
        format,
        n_ok: 0,
        n_invalid: 0,
        n_failed: 0,
    };
    match source {
        Source::Files(paths) => {
            for path in paths {
                let from = path.display().to_string();
                let mut id = String::new();
                let result = copy(&target, &format!("converting {from}"), || {
                    let stream = scan_log(&path)?;
                    id = stream.header().id().to_owned();
                    Ok(stream)
                });
                tally.report(&id, &from, result)?;
            }
        }
        Source::Store { store, id } => {
            let ids = match id {
                Some(id) => vec![id],
                None => {
                    let listing = store.list()?;
                    for problem in &listing.problems {
                        tally.n_failed += 1;
                        eprintln!("{}", output::visible(&format!("strata: {problem}")));
                    }
                    listing
                        .sessions
                        .iter()
                        .map(|header| header.id().to_owned())
                        .collect()
                }
            };
            let describe = store.backend().describe();
            for id in ids {
                let from = format!("{describe}#{id}");
                let result = copy(&target, &format!("converting {id}"), || store.scan(&id));
                tally.report(&id, &from, result)?;
            }
        }
    }
    let Tally {
        n_ok,
        n_invalid,
        n_failed,
        ..
    } = tally;
    if n_failed > 0 {
        eprintln!(
            "strata: {n_failed} of {} sessions could not be converted",
            n_ok + n_invalid + n_failed
        );
        return Ok(Status::Failed);
    }
    Ok(if n_invalid > 0 {
        Status::Invalid
    } else {
        Status::Ok
    })
}

/// What was copied, rejected and failed, reported as it happens.
struct Tally {
    /// OUT, for messages.
    to: String,
    format: Format,
    n_ok: u64,
    n_invalid: u64,
    n_failed: u64,
}

impl Tally {
    fn report(
        &mut self,
        id: &str,
        from: &str,
        result: Result<(u64, Option<TornInfo>), StoreError>,
    ) -> anyhow::Result<()> {
        let json = self.format.json;
        match result.map_err(|error| store_failure(from, error)) {
            Ok((n_events, torn)) => {
                self.n_ok += 1;
                let to = &self.to;
                if let Some(torn) = torn {
                    eprintln!(
                        "{}",
                        output::visible(&torn_tail_warning(from, n_events, torn))
                    );
                }
                if json {
                    let line = json!({
                        "ok": true,
                        "id": id,
                        "events": n_events,
                        "from": from,
                        "to": to,
                        "tornTail": torn.map(torn_tail_json),
                    });
                    output::line(&line.to_string())
                } else {
                    output::line(&output::visible(&format!(
                        "converted {id} ({n_events} events) from {from} to {to}"
                    )))
                }
            }
            Err(LoadError::Invalid(rejection)) => {
                self.n_invalid += 1;
                if json {
                    output::line(&output::rejection_json(&rejection).to_string())
                } else {
                    eprintln!("{}", output::rejection_text(&rejection));
                    Ok(())
                }
            }
            Err(LoadError::Io(error)) => {
                self.n_failed += 1;
                let message = output::error_text(&error);
                if json {
                    let error = json!({"kind": "io", "message": message});
                    let line = json!({"ok": false, "id": id, "from": from, "error": error});
                    output::line(&line.to_string())?;
                }
                eprintln!(
                    "{}",
                    output::visible_lines(&format!("strata: {id}: {message}"))
                );
                Ok(())
            }
        }
    }
}

/// Streams one session from `open` into `target`, with a progress bar; the number of events,
/// and the torn tail the read ended before (left out).
fn copy<'s>(
    target: &Store,
    message: &str,
    open: impl FnOnce() -> Result<LogStream<'s>, StoreError>,
) -> Result<(u64, Option<TornInfo>), StoreError> {
    let progress = Progress::new(message);
    let copied = open().and_then(|stream| {
        let mut stream = progress::observe(stream, &progress);
        let n_events = target.import_stream(&mut stream)?;
        Ok((n_events, stream.torn()))
    });
    progress.finish();
    copied
}

/// Resolves IN without creating anything.
fn open_source(input: &str) -> anyhow::Result<Source> {
    let path = Path::new(input);
    if path.is_file() && !is_sqlite_file(path)? {
        return Ok(Source::Files(vec![path.to_path_buf()]));
    }
    let (spec, id) = match input.rsplit_once('#') {
        Some((spec, id)) if !path.exists() && !spec.is_empty() && !id.is_empty() => {
            (spec, Some(id.to_owned()))
        }
        _ => (input, None),
    };
    if let Some(root) = dsh_root(spec) {
        let root = root?;
        let files = match &id {
            Some(query) => vec![root.find(query)?.file],
            None => {
                let (sessions, problems) = root.sessions()?;
                if let Some(problem) = problems.first() {
                    anyhow::bail!("{input}: {problem}");
                }
                sessions.into_iter().map(|session| session.file).collect()
            }
        };
        return Ok(Source::Files(files));
    }
    if is_postgres(spec) {
        let store = open_postgres_store(spec, false)?;
        return Ok(Source::Store { store, id });
    }
    let location = spec
        .strip_prefix("jsonl:")
        .or_else(|| spec.strip_prefix("jsonl-zstd:"))
        .or_else(|| spec.strip_prefix("sqlite://"))
        .or_else(|| spec.strip_prefix("sqlite:"))
        .unwrap_or(spec);
    if !Path::new(location).exists() {
        anyhow::bail!("{input}: no such store or file");
    }
    let store = open_store(Some(spec))?;
    Ok(Source::Store { store, id })
}

/// Whether `path` is a SQLite database (by its header, not its name).
fn is_sqlite_file(path: &Path) -> anyhow::Result<bool> {
    let mut magic = [0_u8; 16];
    let mut file = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let n = file
        .read(&mut magic)
        .with_context(|| format!("read {}", path.display()))?;
    Ok(n == 16 && &magic == b"SQLite format 3\0")
}
