//! `strata report`: write a self-contained HTML report of a session (see `crate::report`).
//!
//! An existing output file is never replaced unless `--force` is given: a report is cheap to
//! regenerate, but `-o` pointed at the wrong file (a log, say) must not destroy it. Without
//! `--force` the file is created exclusively, so a file that appears meanwhile is not clobbered
//! either; with `--force` the page is written beside the target and renamed over it, so a failed
//! write never leaves half a report in place of the old one.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use strata_migrate::legacy;

use super::{report_load_error, Status};
use crate::cli::Format;
use crate::input::load;
use crate::output;
use crate::report::{render, Report};

/// Loads `file`, renders its report and writes it to `output_path` (replacing an existing
/// file only when `force`); a rejected log is reported and writes nothing (exit 1).
pub(crate) fn run(file: &Path, output_path: &Path, force: bool) -> anyhow::Result<Status> {
    // Refuse before the (possibly long) load, and again atomically when creating the file.
    if !force && output_path.exists() {
        anyhow::bail!(refusal(output_path));
    }
    let loaded = match load(file) {
        Ok(loaded) => loaded,
        Err(error) => return report_load_error(error, Format { json: false }),
    };
    let generation = loaded.session.generation();
    // The stored events, not the end-seed marker a restore adds.
    let events = loaded.stored_events();
    let stats = loaded.stats()?;
    let page = render(&Report {
        label: &loaded.label,
        header: loaded.session.header(),
        generation: legacy::generation_name(generation),
        events,
        stats: &stats,
    });
    if force {
        replace_file(output_path, page.as_bytes())?;
    } else {
        create_file(output_path, page.as_bytes())?;
    }
    output::line(&output::visible(&format!(
        "wrote {} ({} events, {} surface nodes, {} shadowed, {} replacements; {} KiB)",
        output_path.display(),
        stats.n_events,
        stats.fold.nodes.len(),
        stats.n_shadowed(),
        stats.fold.replacements.len(),
        page.len().div_ceil(1024)
    )))?;
    Ok(Status::Ok)
}

/// The error for an output that exists, naming the flag that would replace it.
fn refusal(path: &Path) -> String {
    format!(
        "{} already exists; pass --force to replace it",
        path.display()
    )
}

/// Writes a new file, failing if `path` exists.
fn create_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            anyhow::bail!(refusal(path))
        }
        Err(error) => {
            return Err(error).with_context(|| format!("cannot create {}", path.display()))
        }
    };
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`.
fn replace_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let mut temporary_name = std::ffi::OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(format!(".strata-report-{}.tmp", std::process::id()));
    let temporary: PathBuf = path.with_file_name(temporary_name);
    let written = std::fs::write(&temporary, bytes)
        .with_context(|| format!("cannot write {}", temporary.display()))
        .and_then(|()| {
            std::fs::rename(&temporary, path)
                .with_context(|| format!("cannot replace {}", path.display()))
        });
    if written.is_err() {
        // Best effort: the error being returned is the one that matters.
        let _ = std::fs::remove_file(&temporary);
    }
    written
}
