//! `strata import FILE`: copies a V3 JSONL log (raw or zstd) into a store — the default SQLite
//! store unless `--store` says otherwise — validated as it streams in and stored event for
//! event; nothing is added (no repair, no end-seed marker). The file is never modified.

use std::path::Path;

use serde_json::json;
use strata_store::{scan_log, StoreError};

use super::Status;
use crate::cli::Format;
use crate::input::{open_store, store_failure};
use crate::output;
use crate::progress::{self, Progress};

pub(crate) fn run(file: &Path, store: Option<&str>, format: Format) -> anyhow::Result<Status> {
    let store = open_store(store)?;
    let label = file.display().to_string();
    let progress = Progress::new(&format!("importing {label}"));
    let imported = scan_log(file).and_then(|stream| {
        let id = stream.header().id().to_owned();
        let stream = progress::observe(stream, &progress);
        store.import_stream(stream).map(|n_events| (id, n_events))
    });
    progress.finish();
    let (id, n_events) = match imported {
        Ok(imported) => imported,
        Err(error @ StoreError::AlreadyExists { .. }) => return Err(error.into()),
        Err(error) => return super::report_load_error(store_failure(&label, error), format),
    };
    if format.json {
        output::line(
            &json!({
                "ok": true,
                "file": label,
                "id": id,
                "events": n_events,
                "store": store.backend().describe(),
            })
            .to_string(),
        )?;
    } else {
        output::line(&format!(
            "imported {id} ({n_events} events) from {label} into {}",
            store.backend().describe()
        ))?;
    }
    Ok(Status::Ok)
}
