//! `strata export ID -o FILE`: writes a stored session as a V3 JSONL log, zstd when FILE ends in
//! `.zstd` or `.zst` (dsh's framing: a header frame, then ~1 MiB frames). The log is validated as it streams out of the
//! store; the lines written are byte-identical to what dsh writes for the same events, and only
//! the stored events are written (not the end-seed marker a load adds). An existing FILE is
//! never replaced; the file appears only complete (temp file, fsync, link).

use std::path::Path;

use serde_json::json;
use strata_store::write_log;

use super::Status;
use crate::cli::Format;
use crate::input::{load_with, open_store, Input};
use crate::output;
use crate::progress::Progress;

pub(crate) fn run(
    id: &str,
    file: &Path,
    store: Option<&str>,
    format: Format,
) -> anyhow::Result<Status> {
    if file.exists() {
        anyhow::bail!(
            "{} already exists; export never replaces a file",
            file.display()
        );
    }
    let store = open_store(store)?;
    let label = format!("{}#{id}", store.backend().describe());
    let input = Input::Stored {
        store,
        id: id.to_owned(),
        label: label.clone(),
    };
    let progress = Progress::new(&format!("exporting {id}"));
    let loaded = load_with(&input, &progress);
    let loaded = match loaded {
        Ok(loaded) => loaded,
        Err(error) => {
            progress.finish();
            return super::report_load_error(error, format);
        }
    };
    progress.phase(&format!("writing {}", file.display()));
    let events = loaded.stored_events();
    let written = write_log(file, loaded.session.header(), events);
    progress.finish();
    written?;
    if format.json {
        output::line(
            &json!({
                "ok": true,
                "id": id,
                "events": loaded.n_stored,
                "file": file.display().to_string(),
            })
            .to_string(),
        )?;
    } else {
        output::line(&output::visible(&format!(
            "exported {id} ({} events) from {label} to {}",
            loaded.n_stored,
            file.display()
        )))?;
    }
    Ok(Status::Ok)
}
