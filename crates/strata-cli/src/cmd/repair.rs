//! `strata repair`: close a turn and a compaction bracket a crash left open, durably.
//!
//! The closers are the ones a resuming writer appends (session-core §8): an open compaction
//! bracket's `compaction/end`, the open turn's closers, then the end-seed marker, computed by
//! [`strata_compact::plan_repair`] and appended under the writer lock by
//! [`strata_compact::repair_stored`]. A log with nothing open is left untouched, so repairing
//! twice writes once. `--dry-run` prints the closers and writes nothing (it works on any log,
//! including a loose file); a real repair needs the session's store: a stored session, or a
//! file inside a JSONL store layout (`ROOT/--PROJECT--/ID/session.v3.jsonl[.zstd]`).

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context};
use serde_json::{json, Value};
use strata_compact::{plan_repair, repair_stored, system_clock_ms};
use strata_core::{Event, Generation};
use strata_store::{
    encode_event_line, legacy, parse_session_file_name, scan_log, Compression, JsonlBackend,
    JsonlConfig, Store,
};

use super::{load_for_view, report_load_error, Status};
use crate::cli::Format;
use crate::input::{resolve, store_failure, Input, LoadError};
use crate::output;

/// Repairs the log `file` names, or (`dry_run`) prints what a repair would append.
pub(crate) fn run(file: &Path, dry_run: bool, format: Format) -> anyhow::Result<Status> {
    refuse_older_generation(file)?;
    let (label, added) = if dry_run {
        let Some(loaded) = load_for_view(file, format)? else {
            return Ok(Status::Invalid);
        };
        let header = loaded.session.header().clone();
        // The stored events, without the end-seed marker the viewing restore added.
        let mut rows = loaded.session.to_raw_events();
        rows.truncate(loaded.n_stored);
        let (_, added) = plan_repair(header, rows, system_clock_ms())
            .with_context(|| format!("{}: planning the repair", loaded.label))?;
        (loaded.label, added)
    } else {
        let session = writable_session(
            file,
            "--dry-run works on any file; to repair it, `strata import` it into a store",
        )?;
        match repair_stored(&session.store, &session.id, system_clock_ms()) {
            Ok(added) => (session.label, added),
            Err(error) => return report_load_error(store_failure(&session.label, error), format),
        }
    };
    report(&label, dry_run, &added, format)?;
    Ok(Status::Ok)
}

/// A session opened through its store, so that it can be appended to.
pub(crate) struct WritableSession {
    /// The store holding the session.
    pub store: Store,
    /// The session id.
    pub id: String,
    /// How the command line named it, for messages.
    pub label: String,
    /// The JSONL store layout the named file sits in (`None` for a stored session).
    pub layout: Option<JsonlBackend>,
}

/// Resolves `arg` to a session in a store: a stored session (`sqlite://PATH#ID`, a PostgreSQL
/// reference or an id in the default store), or a file inside a JSONL store layout
/// (`ROOT/--PROJECT--/ID/session.v3.jsonl[.zstd]`). A loose file is refused, with `hint`
/// saying what works instead.
pub(crate) fn writable_session(arg: &Path, hint: &str) -> anyhow::Result<WritableSession> {
    match resolve(arg, None) {
        Ok(Input::Stored { store, id, label }) => Ok(WritableSession {
            store,
            id,
            label,
            layout: None,
        }),
        Ok(Input::File(file)) => {
            let (backend, id) = store_of_file(&file, hint)?;
            Ok(WritableSession {
                store: Store::new(backend.clone()),
                id,
                label: file.display().to_string(),
                layout: Some(backend),
            })
        }
        Err(LoadError::Io(error)) => Err(error),
        Err(LoadError::Invalid(rejection)) => bail!("{}", output::rejection_text(&rejection)),
    }
}

/// The JSONL store a log file sits in, and its session id: the file must be the session file
/// of the directory its header's id and cwd map to, under a root two levels up.
fn store_of_file(file: &Path, hint: &str) -> anyhow::Result<(JsonlBackend, String)> {
    let not_in_layout = |why: &str| {
        anyhow::anyhow!(
            "{}: not in a session store layout (ROOT/--PROJECT--/ID/session.v3.jsonl): {why}\n\
             hint: {hint}",
            file.display()
        )
    };
    let zstd = match file
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(parse_session_file_name)
    {
        Some((3, zstd)) => zstd,
        _ => {
            return Err(not_in_layout(
                "the file is not named session.v3.jsonl[.zstd]",
            ))
        }
    };
    let header = scan_log(file)
        .with_context(|| format!("reading {}", file.display()))?
        .header()
        .clone();
    let id = header.id().to_owned();
    let root = file
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .ok_or_else(|| not_in_layout("no store root above it"))?;
    let compression = if zstd {
        Compression::Zstd
    } else {
        Compression::None
    };
    let backend = JsonlBackend::new(JsonlConfig::new(root, compression));
    let expected = backend
        .session_dir(header.cwd(), &id)
        .with_context(|| format!("{}: session id {id:?}", file.display()))?;
    let same_dir = |dir: &Path| {
        std::fs::canonicalize(dir).ok() == file.parent().and_then(|p| std::fs::canonicalize(p).ok())
    };
    if !same_dir(&expected) {
        return Err(not_in_layout(&format!(
            "session {id:?} belongs in {}",
            expected.display()
        )));
    }
    Ok((backend, id))
}

/// Refuses a v0, v1 or v2 file: its reader closes a crashed turn on every read, and stores hold
/// only V3 logs; the way forward is `strata migrate`.
fn refuse_older_generation(file: &Path) -> anyhow::Result<()> {
    if !file.is_file() {
        return Ok(());
    }
    if let Ok((generation, _)) = legacy::sniff(file) {
        if generation != Generation::V3 {
            bail!(
                "{}: a {} log is repaired as it is read and cannot be appended to; \
                 run `strata migrate` first",
                file.display(),
                legacy::generation_name(generation)
            );
        }
    }
    Ok(())
}

/// Prints what was (or would be) appended.
fn report(label: &str, dry_run: bool, added: &[Arc<Event>], format: Format) -> anyhow::Result<()> {
    if format.json {
        let events: Vec<Value> = added.iter().map(|event| event_json(event)).collect();
        return output::line(
            &json!({
                "ok": true,
                "file": label,
                "dryRun": dry_run,
                "repaired": !dry_run && !added.is_empty(),
                "events": events,
            })
            .to_string(),
        );
    }
    if added.is_empty() {
        return output::line(&format!(
            "{label}: nothing to repair (no open turn or compaction bracket)"
        ));
    }
    let verb = if dry_run { "would append" } else { "appended" };
    output::line(&format!("{label}: {verb} {} events:", added.len()))?;
    for event in added {
        output::line(&format!(
            "  {:>8}  {:<18} {}",
            event.seq().get(),
            event.event_type().as_str(),
            event.data()
        ))?;
    }
    Ok(())
}

/// An event as its V3 line reads.
pub(crate) fn event_json(event: &Event) -> Value {
    let mut line = Vec::new();
    encode_event_line(event, &mut line);
    serde_json::from_slice(&line).unwrap_or(Value::Null)
}
