//! `strata sessions`: the sessions of a store, newest first, read from their headers only (no
//! log is loaded, so listing stays fast however long the logs are).
//!
//! Text: one line per session (`ID  CREATED  CWD`, plus the parent of a fork). JSON: one object
//! `{"store", "sessions": [header…], "problems": [message…]}` where each session is its stored
//! header (the V3 header fields in stored order, without `type`). A header that cannot be read is
//! reported and makes the exit status 1; the others are still listed.
//!
//! dsh's own folder (`--store dsh`, `dsh:HOME`) is listed by [`strata_migrate::DshRoot`]: one
//! line per session directory (its highest generation only), with project, id, generation and
//! encoding, size, created and the newest `session/title`; nothing is validated or written.

use serde_json::{json, Value};

use super::Status;
use crate::cli::Format;
use crate::input::{dsh_root, open_store, store_spec};
use crate::output;

pub(crate) fn run(store: Option<&str>, format: Format) -> anyhow::Result<Status> {
    if let Some(root) = store_spec(store).as_deref().and_then(dsh_root) {
        return list_dsh(&root?, format);
    }
    let store = open_store(store)?;
    let listing = store.list()?;
    let problems: Vec<String> = listing.problems.iter().map(ToString::to_string).collect();
    if format.json {
        let sessions: Vec<Value> = listing
            .sessions
            .iter()
            .map(|header| Value::Object(header.fields().clone()))
            .collect();
        output::line(
            &json!({
                "store": store.backend().describe(),
                "sessions": sessions,
                "problems": problems,
            })
            .to_string(),
        )?;
    } else {
        for header in &listing.sessions {
            let mut line = format!(
                "{}  {}  {}",
                header.id(),
                output::utc_time(header.created_at()),
                header.cwd().unwrap_or("-")
            );
            if let Some(parent) = header.parent_session() {
                line.push_str(&format!("  (fork of {parent})"));
            }
            output::line(&output::visible(&line))?;
        }
        for problem in &problems {
            eprintln!("{}", output::visible(&format!("strata: {problem}")));
        }
    }
    Ok(if problems.is_empty() {
        Status::Ok
    } else {
        Status::Invalid
    })
}

/// Lists dsh's folder: `PROJECT  ID  GENERATION  SIZE  CREATED  TITLE` per session (text), or
/// `{"store", "sessions": [{project, id, generation, encoding, file, size, createdAt, title}],
/// "problems"}`.
fn list_dsh(root: &strata_migrate::DshRoot, format: Format) -> anyhow::Result<Status> {
    if !root.sessions_dir().is_dir() {
        // Not an error (dsh may not have run yet), but a typo in DSH_HOME should be visible.
        eprintln!(
            "{}",
            output::visible(&format!(
                "strata: no dsh sessions folder at {} (`dsh:HOME` names a dsh home, the folder \
                 holding sessions/)",
                root.sessions_dir().display()
            ))
        );
    }
    let listing = root.list()?;
    let problems: Vec<String> = listing.problems.iter().map(ToString::to_string).collect();
    let generation =
        |summary: &strata_migrate::DshSummary| format!("v{}", summary.session.generation);
    let encoding = |summary: &strata_migrate::DshSummary| {
        if summary.session.zstd {
            "zstd"
        } else {
            "raw"
        }
    };
    if format.json {
        let sessions: Vec<Value> = listing
            .sessions
            .iter()
            .map(|summary| {
                json!({
                    "project": summary.session.project,
                    "id": summary.session.id,
                    "generation": generation(summary),
                    "encoding": encoding(summary),
                    "file": summary.session.file.display().to_string(),
                    "size": summary.session.size,
                    "createdAt": summary.created_at,
                    "title": summary.title,
                })
            })
            .collect();
        output::line(
            &json!({
                "store": root.describe(),
                "sessions": sessions,
                "problems": problems,
            })
            .to_string(),
        )?;
    } else {
        for summary in &listing.sessions {
            let created = summary
                .created_at
                .and_then(|ms| u64::try_from(ms).ok())
                .map_or_else(|| "-".to_owned(), output::utc_time);
            let line = format!(
                "{}  {}  {} {}  {}  {}  {}",
                summary.session.project,
                summary.session.id,
                generation(summary),
                encoding(summary),
                summary.session.size,
                created,
                summary.title.as_deref().unwrap_or("-")
            );
            output::line(&output::visible(&line))?;
        }
        for problem in &problems {
            eprintln!("{}", output::visible(&format!("strata: {problem}")));
        }
    }
    Ok(if problems.is_empty() {
        Status::Ok
    } else {
        Status::Invalid
    })
}
