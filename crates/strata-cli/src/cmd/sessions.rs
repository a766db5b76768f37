//! `strata sessions`: the sessions of a store, newest first, read from their headers only (no
//! log is loaded, so listing stays fast however long the logs are).
//!
//! Text: one line per session (`ID  CREATED  CWD`, plus the parent of a fork). JSON: one object
//! `{"store", "sessions": [header…], "problems": [message…]}` where each session is its stored
//! header (the V3 header fields in stored order, without `type`). A header that cannot be read is
//! reported and makes the exit status 1; the others are still listed.

use serde_json::{json, Value};

use super::Status;
use crate::cli::Format;
use crate::input::open_store;
use crate::output;

pub(crate) fn run(store: Option<&str>, format: Format) -> anyhow::Result<Status> {
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
