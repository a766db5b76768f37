//! `strata import FILE`: copies a V3 JSONL log (raw or zstd; `dsh#ID` names one in dsh's own
//! folder) into a store — the default SQLite store unless `--store` says otherwise — validated as it streams in and stored event for
//! event; nothing is added (no repair, no end-seed marker). The file is never modified.
//!
//! A torn tail — the unfinished last write a crash leaves: an unterminated final line, or a
//! torn final zstd frame, whose complete records are kept — was never acknowledged to its
//! writer, so it is not part of the log: the complete events before it are imported, with a
//! warning on stderr naming the file, the events kept and the bytes left out (and `tornTail`
//! in the `--json` object). A complete record that does not decode, anywhere, refuses the
//! import: it is never skipped.

use std::path::Path;

use serde_json::{json, Value};
use strata_store::{scan_log, StoreError, TornInfo};

use super::Status;
use crate::cli::Format;
use crate::input::{dsh_reference, open_store, store_failure, LoadError};
use crate::output;
use crate::progress::{self, Progress};

pub(crate) fn run(arg: &Path, store: Option<&str>, format: Format) -> anyhow::Result<Status> {
    let store = open_store(store)?;
    // `dsh#ID`: that session's log in dsh's own folder.
    let resolved = match dsh_reference(arg) {
        Some(found) => found.map_err(|error| match error {
            LoadError::Io(error) => error,
            LoadError::Invalid(rejection) => {
                anyhow::anyhow!("{}", output::rejection_text(&rejection))
            }
        })?,
        None => arg.to_path_buf(),
    };
    let file = resolved.as_path();
    let label = file.display().to_string();
    let progress = Progress::new(&format!("importing {label}"));
    let imported = scan_log(file).and_then(|stream| {
        let id = stream.header().id().to_owned();
        let mut stream = progress::observe(stream, &progress);
        let n_events = store.import_stream(&mut stream)?;
        Ok((id, n_events, stream.torn()))
    });
    progress.finish();
    let (id, n_events, torn) = match imported {
        Ok(imported) => imported,
        Err(error @ StoreError::AlreadyExists { .. }) => return Err(error.into()),
        Err(error) => return super::report_load_error(store_failure(&label, error), format),
    };
    if let Some(torn) = torn {
        eprintln!(
            "{}",
            output::visible(&torn_tail_warning(&label, n_events, torn))
        );
    }
    if format.json {
        output::line(
            &json!({
                "ok": true,
                "file": label,
                "id": id,
                "events": n_events,
                "store": store.backend().describe(),
                "tornTail": torn.map(torn_tail_json),
            })
            .to_string(),
        )?;
    } else {
        output::line(&output::visible(&format!(
            "imported {id} ({n_events} events) from {label} into {}",
            store.backend().describe()
        )))?;
    }
    Ok(Status::Ok)
}

/// The stderr warning for a copy that left a torn tail out (import, convert).
pub(crate) fn torn_tail_warning(label: &str, n_events: u64, torn: TornInfo) -> String {
    let recovered = match torn.n_recovered {
        0 => String::new(),
        n => format!(", {n} of them recovered from the torn zstd frame"),
    };
    let events = if n_events == 1 { "event" } else { "events" };
    format!(
        "strata: warning: {label}: the log ends in a torn write ({} bytes from byte {}, never \
         completed): kept the {n_events} complete {events} before it{recovered} and left the \
         torn tail out",
        torn.len, torn.offset
    )
}

/// `{"offset", "bytes", "recovered"}`: the torn tail a copy left out, for `--json`.
pub(crate) fn torn_tail_json(torn: TornInfo) -> Value {
    json!({"offset": torn.offset, "bytes": torn.len, "recovered": torn.n_recovered})
}
