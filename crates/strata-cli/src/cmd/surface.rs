//! `strata surface`: the model-visible events in order, and every replacement.

use std::io::Write as _;

use anyhow::Context;
use strata_core::fold::fold_accepted;

use super::{load_for_view, Status};
use crate::cli::Format;
use crate::output;

pub(crate) fn run(file: &std::path::Path, format: Format) -> anyhow::Result<Status> {
    let Some(loaded) = load_for_view(file, format)? else {
        return Ok(Status::Invalid);
    };
    // The stored events (not the end-seed marker the restore added), replayed from their
    // placements for the replacement history.
    let fold =
        fold_accepted(loaded.stored_events()).context("the restored log failed an offline fold")?;
    // Written as it is produced: a line per node, each message read once and dropped.
    let mut out = output::Stdout::new();
    if format.json {
        output::write_fold_json(out.writer(), &fold)?;
        out.writer().write_all(b"\n")?;
        out.finish()?;
        return Ok(Status::Ok);
    }
    out.line(&output::visible(&format!(
        "{} surface nodes, {} replacements ({} events)",
        fold.nodes.len(),
        fold.replacements.len(),
        loaded.n_stored
    )))?;
    for seq in &fold.nodes {
        let event = loaded
            .session
            .event(*seq)
            .context("surface node outside the log")?;
        let shown = match loaded.session.project(*seq) {
            Some(message) => output::message_preview(&message, 72),
            None => "(no message: empty content)".to_owned(),
        };
        out.line(&output::visible(&format!(
            "{:>8}  {:<18} {}",
            seq.get(),
            event.event_type().as_str(),
            shown
        )))?;
    }
    for replacement in &fold.replacements {
        let shadowed: Vec<String> = replacement
            .shadowed
            .iter()
            .map(|s| s.get().to_string())
            .collect();
        out.line(&output::visible(&format!(
            "replace @{}: {}..{} shadowed [{}]",
            replacement.seq.get(),
            replacement.start.get(),
            replacement.end.get(),
            shadowed.join(", ")
        )))?;
    }
    out.finish()?;
    Ok(Status::Ok)
}
