//! `strata fork`: a new session inheriting any prefix of a log (session-core §9.3).
//!
//! The child holds events `0..=SEQ` of the source, the inherited end-seed marker, and `forked`
//! closers for a turn the cut left open ([`strata_core::fork_session`] with
//! [`ForkMode::AnyPrefix`]), under a fresh id whose header names the source as its parent. With
//! `-o OUT` the child is written as a V3 JSONL file (zstd when OUT ends in `.zstd` or `.zst`; an
//! existing file is never replaced); otherwise it is created in the source's store ([`Store::fork`]),
//! which a loose file does not have. A boundary that is not a stored seq is a usage error
//! (exit 2) naming the seq and the rule.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::json;
use strata_agent::agent::new_id;
use strata_compact::host::system_clock_ms;
use strata_core::{fork_session, ForkMode, Generation, Session};
use strata_format::session_file_name;
use strata_migrate::legacy;
use strata_store::{write_log, ForkError, Store};

use super::{load_for_view, Status};
use crate::cli::Format;
use crate::input::{load_input, resolve, store_failure, LoadError};
use crate::output;
use crate::writable::{writable_session, Loose, WritableSession};

/// Forks the log `file` names at seq `at`, into `output` or the source's store.
pub(crate) fn run(
    file: &Path,
    at: u64,
    output: Option<&Path>,
    format: Format,
) -> anyhow::Result<Status> {
    match output {
        Some(out) => fork_to_file(file, at, out, format),
        None => fork_in_store(file, at, format),
    }
}

/// What a fork made, for the report.
struct Forked {
    /// The source, as the command line named it.
    source: String,
    /// The child's id.
    child_id: String,
    /// How many of the child's events are the source's.
    n_inherited: u64,
    /// All of the child's events (inherited prefix, marker, closers).
    n_events: usize,
    /// Where the child is: its file, or a store reference.
    location: String,
    /// The child's file, when it has one.
    file: Option<PathBuf>,
}

/// Writes the child as a new V3 JSONL file.
fn fork_to_file(file: &Path, at: u64, out: &Path, format: Format) -> anyhow::Result<Status> {
    if out.exists() {
        bail!(
            "{} already exists; fork never replaces a file",
            out.display()
        );
    }
    let Some(loaded) = load_for_view(file, format)? else {
        return Ok(Status::Invalid);
    };
    check_generation(&loaded.label, loaded.session.generation())?;
    check_boundary(&loaded.label, loaded.session.id(), at, loaded.n_stored)?;
    let child = fork_at(&loaded.label, &loaded.session, at)?;
    // A bare file name gets an explicit directory: publishing fsyncs the parent directory,
    // and the parent of `name.jsonl` is the empty path.
    let target = match out.parent() {
        Some(parent) if parent.as_os_str().is_empty() => Path::new(".").join(out),
        _ => out.to_path_buf(),
    };
    let events = child.events().context("reading the fork's events")?;
    write_log(&target, child.header(), events)
        .with_context(|| format!("writing the fork to {}", out.display()))?;
    report(
        &Forked {
            source: loaded.label,
            child_id: child.id().to_owned(),
            n_inherited: child.inherited_count(),
            n_events: child.len(),
            location: out.display().to_string(),
            file: Some(out.to_path_buf()),
        },
        at,
        format,
    )
}

/// Creates the child in the source's store.
fn fork_in_store(file: &Path, at: u64, format: Format) -> anyhow::Result<Status> {
    let session = writable_session(
        file,
        Loose::Refuse(
            "pass -o OUT to write the fork as a file, or `strata import` the log into a store",
        ),
    )?;
    // The log written may be the V3 successor an older generation in dsh's folder was
    // migrated to; the boundary is checked on it.
    let source = session.file.clone().unwrap_or_else(|| file.to_path_buf());
    if let Some(status) = check_stored_boundary(&source, at, format)? {
        return Ok(status);
    }
    let child_id = new_id();
    let writer = session
        .store
        .fork(&session.id, &child_id, Some(at), ForkMode::AnyPrefix)
        .map_err(|error| fork_failure(&session.label, at, error))?;
    let (n_inherited, n_events, cwd) = writer.with_session(|child| {
        (
            child.inherited_count(),
            child.len(),
            child.header().cwd().map(str::to_owned),
        )
    });
    writer
        .close()
        .with_context(|| format!("closing the fork {child_id}"))?;
    let (location, child_file) = child_location(&session, &child_id, cwd.as_deref());
    report(
        &Forked {
            source: session.label,
            child_id,
            n_inherited,
            n_events,
            location,
            file: child_file,
        },
        at,
        format,
    )
}

/// Validates the source and checks the boundary against its stored events before a store
/// fork (which would otherwise count the end-seed marker a restore adds as a seq). `Some` is
/// the status to exit with when the source is rejected.
fn check_stored_boundary(file: &Path, at: u64, format: Format) -> anyhow::Result<Option<Status>> {
    let loaded = match resolve(file, None).and_then(|input| load_input(&input)) {
        Ok(loaded) => loaded,
        Err(LoadError::Io(error)) => return Err(error),
        Err(error) => return super::report_load_error(error, format).map(Some),
    };
    check_generation(&loaded.label, loaded.session.generation())?;
    check_boundary(&loaded.label, loaded.session.id(), at, loaded.n_stored)?;
    Ok(None)
}

/// Forks a loaded source under a fresh id.
fn fork_at(label: &str, source: &Session, at: u64) -> anyhow::Result<Session> {
    let created_at = u64::try_from(system_clock_ms()).unwrap_or(0);
    fork_session(source, &new_id(), Some(at), ForkMode::AnyPrefix, created_at).map_err(|error| {
        anyhow::anyhow!(
            "{label}: fork --at {at}: {}: {}",
            error.code.as_str(),
            error.message
        )
    })
}

/// Refuses a boundary past the stored events, naming the seq and the rule.
fn check_boundary(label: &str, id: &str, at: u64, n_stored: usize) -> anyhow::Result<()> {
    if at < n_stored as u64 {
        return Ok(());
    }
    let last = n_stored
        .checked_sub(1)
        .map_or_else(|| "none".to_owned(), |last| last.to_string());
    bail!(
        "{label}: fork --at {at}: INVALID_BOUNDARY: fork boundary {at} does not exist in \
         session \"{id}\" (last seq: {last})"
    )
}

/// Refuses an older-generation source: a fork is a V3 log, and the source's events are carried
/// verbatim, so the source is migrated first.
fn check_generation(label: &str, generation: Generation) -> anyhow::Result<()> {
    if generation == Generation::V3 {
        return Ok(());
    }
    crate::writable::refuse_v4(std::path::Path::new(label), generation)?;
    bail!(
        "{label}: a {} log cannot be forked into a V3 log event for event; \
         run `strata migrate` first",
        legacy::generation_name(generation)
    )
}

/// A store's refusal or failure, naming the source, the seq and the rule.
fn fork_failure(label: &str, at: u64, error: ForkError) -> anyhow::Error {
    match error {
        ForkError::Refused(refused) => anyhow::anyhow!(
            "{label}: fork --at {at}: {}: {}",
            refused.code.as_str(),
            refused.message
        ),
        ForkError::Store(error) => match store_failure(label, error) {
            LoadError::Invalid(rejection) => anyhow::anyhow!(output::rejection_text(&rejection)),
            LoadError::Io(error) => error.context(format!("{label}: fork --at {at}")),
        },
        other => anyhow::anyhow!("{label}: fork --at {at}: {other}"),
    }
}

/// Where a child created in `session`'s store can be read: its file in a JSONL layout, else a
/// store reference the other subcommands accept.
fn child_location(
    session: &WritableSession,
    child_id: &str,
    cwd: Option<&str>,
) -> (String, Option<PathBuf>) {
    if let Some(backend) = &session.layout {
        let zstd = session.label.ends_with(".zstd");
        if let Ok(dir) = backend.session_dir(cwd, child_id) {
            let file = dir.join(session_file_name(3, zstd));
            return (file.display().to_string(), Some(file));
        }
    }
    (store_reference(&session.store, child_id), None)
}

/// `sqlite://PATH#ID` for a SQLite store, `STORE#ID` otherwise.
fn store_reference(store: &Store, id: &str) -> String {
    let describe = store.backend().describe();
    match describe.strip_prefix("sqlite:") {
        Some(path) => format!("sqlite://{path}#{id}"),
        None => format!("{describe}#{id}"),
    }
}

/// Prints the new session.
fn report(forked: &Forked, at: u64, format: Format) -> anyhow::Result<Status> {
    if format.json {
        output::line(
            &json!({
                "ok": true,
                "source": forked.source,
                "at": at,
                "id": forked.child_id,
                "inherited": forked.n_inherited,
                "events": forked.n_events,
                "location": forked.location,
                "file": forked.file.as_ref().map(|file| file.display().to_string()),
            })
            .to_string(),
        )?;
        return Ok(Status::Ok);
    }
    let n_added = (forked.n_events as u64).saturating_sub(forked.n_inherited);
    output::line(&output::visible(&format!(
        "forked {} at seq {at} into {} ({} inherited events, {n_added} added: the end-seed \
         marker and any closers)",
        forked.source, forked.child_id, forked.n_inherited
    )))?;
    output::line(&output::visible(&format!(
        "  new session: {}",
        forked.location
    )))?;
    output::line(&output::visible(&format!(
        "  next: strata inspect {}",
        forked.location
    )))?;
    Ok(Status::Ok)
}
