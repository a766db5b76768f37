//! `strata repair`: close a turn and a compaction bracket a crash left open, durably.
//!
//! The closers are the ones a resuming writer appends (session-core §8): an open compaction
//! bracket's `compaction/end`, the open turn's closers, then the end-seed marker, computed by
//! [`strata_compact::plan_repair`] and appended under the writer lock by
//! [`strata_compact::repair_stored`]. A log with nothing open is left untouched, so repairing
//! twice writes once. `--dry-run` prints the closers and writes nothing. A real repair opens
//! the session through its store: a stored session, a file inside a JSONL store layout or
//! dsh's folder, or a loose V3 file, which is appended in place under its own writer lock
//! (`strata_store::LooseFile`).

use std::path::Path;
use std::sync::Arc;

use anyhow::bail;
use serde_json::{json, Value};
use strata_compact::host::system_clock_ms;
use strata_compact::{repair_events, repair_stored, resume_stream};
use strata_core::{json, Event, Generation, SeedOptions};
use strata_format::encode_event_line;
use strata_migrate::legacy;

use super::{report_load_error, Status};
use crate::cli::Format;
use crate::input::{resolve, resume_input, store_failure};
use crate::output;
use crate::writable::{writable_session, Loose};

/// Repairs the log `file` names, or (`dry_run`) prints what a repair would append.
pub(crate) fn run(file: &Path, dry_run: bool, format: Format) -> anyhow::Result<Status> {
    let (label, added) = if dry_run {
        refuse_older_generation(file)?;
        // Planned as the repair itself runs: the rows stream into the resumed session.
        let options = SeedOptions {
            marker_time: system_clock_ms(),
            ..SeedOptions::default()
        };
        let resumed = resolve(file, None).and_then(|input| {
            let label = input.label();
            resume_input(&input, |stream| resume_stream(stream, options))
                .map(|resumed| resumed.map(|resumed| (label, resumed)))
        });
        match resumed {
            Ok(Some((label, resumed))) => (label, repair_events(&resumed)),
            // An older generation's file, refused above.
            Ok(None) => bail!("{}: only a V3 log is repaired", file.display()),
            Err(error) => return report_load_error(error, format),
        }
    } else {
        let session = writable_session(file, Loose::Maintain)?;
        match repair_stored(&session.store, &session.id, system_clock_ms()) {
            Ok(added) => (session.label, added),
            Err(error) => return report_load_error(store_failure(&session.label, error), format),
        }
    };
    report(&label, dry_run, &added, format)?;
    Ok(Status::Ok)
}

/// Refuses a v0, v1 or v2 file: its reader closes a crashed turn on every read, and stores hold
/// only V3 logs; the way forward is `strata migrate`.
fn refuse_older_generation(file: &Path) -> anyhow::Result<()> {
    if !file.is_file() {
        return Ok(());
    }
    if let Ok((generation, _)) = legacy::sniff(file) {
        crate::writable::refuse_v4(file, generation)?;
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
        let events = added
            .iter()
            .map(|event| event_json(event))
            .collect::<anyhow::Result<Vec<Value>>>()?;
        // Events hold their strings as `json` reads them, so the label is made held too and
        // the whole is written by `json`.
        return output::line(&json::to_js_string(&json!({
            "ok": true,
            "file": json::held_from_text(label),
            "dryRun": dry_run,
            "repaired": !dry_run && !added.is_empty(),
            "events": events,
        })));
    }
    if added.is_empty() {
        return output::line(&output::visible(&format!(
            "{label}: nothing to repair (no open turn or compaction bracket)"
        )));
    }
    let verb = if dry_run { "would append" } else { "appended" };
    output::line(&output::visible(&format!(
        "{label}: {verb} {} events:",
        added.len()
    )))?;
    for event in added {
        output::line(&output::visible(&format!(
            "  {:>8}  {:<18} {}",
            event.seq().get(),
            event.event_type().as_str(),
            json::to_js_string(event.data())
        )))?;
    }
    Ok(())
}

/// An event as its V3 line reads.
pub(crate) fn event_json(event: &Event) -> anyhow::Result<Value> {
    let mut line = Vec::new();
    encode_event_line(event, &mut line);
    Ok(json::parse(std::str::from_utf8(&line)?)?)
}
