//! Where a writing command (repair, fork, compact; migrate's lock) writes the session a command
//! line names, so that the result is what the session's own writer would have produced.
//!
//! [`writable_session`] opens it through a store: a stored session; a file that sits in a JSONL
//! store layout (`ROOT/--PROJECT--/ID/session.v3.jsonl[.zstd]`), found from its name and header
//! alone — in dsh's own folder without strata's sidecars, so only what dsh writes is written
//! there; or, for repair and compact, a loose V3 file as a store of its one session
//! ([`strata_store::LooseFile`]). An older generation's file is never appended to: in dsh's
//! folder its V3 successor is first published beside it under the directory's `session.lock`
//! (as dsh does when it continues a session) and written instead; elsewhere it is refused,
//! pointing at `strata migrate`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use strata_core::Generation;
use strata_format::parse_session_file_name;
use strata_migrate::{legacy, DshRoot};
use strata_store::{scan_log, Compression, JsonlBackend, JsonlConfig, LooseFile, Store};

use crate::input::{resolve, Input, LoadError};

/// A session opened through its store, so that it can be appended to.
pub(crate) struct WritableSession {
    /// The store holding the session.
    pub store: Store,
    /// The session id.
    pub id: String,
    /// How the command line named it, for messages.
    pub label: String,
    /// The JSONL store layout the named file sits in (`None` for a stored session or a loose
    /// file).
    pub layout: Option<JsonlBackend>,
    /// The V3 log file written (`None` for a stored session): in dsh's folder, the V3 successor
    /// an older generation was migrated to first.
    pub file: Option<PathBuf>,
}

/// Resolves `arg` to a session in a store: a stored session (`sqlite://PATH#ID`, a PostgreSQL
/// reference or an id in the default store), a file inside a JSONL store layout
/// (`ROOT/--PROJECT--/ID/session.v3.jsonl[.zstd]`; in dsh's folder, or named as `dsh#ID`,
/// without strata's sidecars), or — when `loose` is `Loose::Maintain` — a loose V3 file as the
/// store of its one session. A loose file is otherwise refused with the hint `Loose::Refuse`
/// carries. An older generation's file is migrated first in dsh's folder, and refused
/// elsewhere, pointing at `strata migrate`.
pub(crate) fn writable_session(arg: &Path, loose: Loose<'_>) -> anyhow::Result<WritableSession> {
    match resolve(arg, None) {
        Ok(Input::Stored { store, id, label }) => Ok(WritableSession {
            store,
            id,
            label,
            layout: None,
            file: None,
        }),
        Ok(Input::File(file)) => {
            let dsh = in_dsh_folder(arg, &file);
            let file = if dsh {
                current_v3_in_dsh_folder(&file)?
            } else {
                refuse_older_generation(&file)?;
                file
            };
            let label = file.display().to_string();
            match (store_of_file(&file, !dsh), loose) {
                (Ok((backend, id)), _) => Ok(WritableSession {
                    store: Store::new(backend.clone()),
                    id,
                    label,
                    layout: Some(backend),
                    file: Some(file),
                }),
                (Err(error), _) if dsh => Err(anyhow::anyhow!(
                    "{error:#}\n(a log in dsh's folder is written only where dsh looks for it)"
                )),
                (Err(_), Loose::Maintain) => {
                    let backend =
                        LooseFile::open(&file).with_context(|| format!("opening {label}"))?;
                    let id = backend
                        .session_id()
                        .with_context(|| format!("reading {label}"))?;
                    Ok(WritableSession {
                        store: Store::new(backend),
                        id,
                        label,
                        layout: None,
                        file: Some(file),
                    })
                }
                (Err(error), Loose::Refuse(hint)) => {
                    Err(anyhow::anyhow!("{error:#}\nhint: {hint}"))
                }
            }
        }
        Err(LoadError::Io(error)) => Err(error),
        Err(LoadError::Invalid(rejection)) => {
            anyhow::bail!("{}", crate::output::rejection_text(&rejection))
        }
    }
}

/// Whether a writing command maintains a loose file in place or refuses it.
#[derive(Clone, Copy)]
pub(crate) enum Loose<'a> {
    /// Append to the file under its own lock ([`LooseFile`]).
    Maintain,
    /// Refuse, with this hint saying what works instead.
    Refuse(&'a str),
}

/// Whether a file to be written lies in dsh's own folder: named as `dsh#ID` or through a
/// `dsh` store, or a path inside `$DSH_HOME/sessions` (else `~/.dsh/sessions`).
fn in_dsh_folder(arg: &Path, file: &Path) -> bool {
    if arg != file {
        // Resolved through dsh's folder (a file argument resolves to itself).
        return true;
    }
    DshRoot::from_env().is_ok_and(|root| root.contains(file))
}

/// The V3 log to write for a log file in dsh's folder, as dsh continues a session: the file
/// must be its directory's current log (the highest generation, which dsh opens); an older
/// generation is first migrated to `session.v3.jsonl[.zstd]` beside the untouched source,
/// under the directory's `session.lock` ([`publish_successor`]), and the successor returned.
fn current_v3_in_dsh_folder(file: &Path) -> anyhow::Result<PathBuf> {
    let dir = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let current = strata_migrate::current_log(dir)?.map(|(_, _, path)| path);
    // Both name entries of `dir`: their names tell them apart (`./x` and `x` are one file).
    if current.as_deref().and_then(Path::file_name) != file.file_name() {
        anyhow::bail!(
            "{}: not the session's current log{}; dsh opens the highest generation, so only \
             that one is written",
            file.display(),
            current.map_or_else(String::new, |path| format!(" ({} is)", path.display()))
        );
    }
    let (generation, _) = legacy::sniff(file).map_err(anyhow::Error::new)?;
    if generation == Generation::V3 {
        return Ok(file.to_path_buf());
    }
    refuse_v4(file, generation)?;
    let report = publish_successor(file)?;
    eprintln!(
        "{}",
        crate::output::visible(&format!(
            "strata: {}: {} → v3: published {} beside the untouched source, as dsh does when \
             it continues a session; writing there",
            file.display(),
            legacy::generation_name(generation),
            report.target.display()
        ))
    );
    Ok(report.target)
}

/// Migrates an older generation's log to V3 beside it ([`strata_migrate::migrate::migrate_file`])
/// holding its directory's writer lock when the file is named as a dsh session file.
pub(crate) fn publish_successor(
    file: &Path,
) -> anyhow::Result<strata_migrate::migrate::MigrateReport> {
    let _lock = lock_session_dir(file)?;
    strata_migrate::migrate::migrate_file(file)
        .with_context(|| format!("publishing the V3 successor of {}", file.display()))
}

/// Takes dsh's writer lock of the session directory a canonically named file sits in; `None`
/// for any other name (a loose copy, which no dsh writer appends to).
pub(crate) fn lock_session_dir(file: &Path) -> anyhow::Result<Option<strata_store::SessionLock>> {
    let canonical = file
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(parse_session_file_name)
        .is_some();
    if !canonical || !file.is_file() {
        return Ok(None);
    }
    let dir = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let label = file.display().to_string();
    strata_store::SessionLock::acquire(&dir.join(strata_store::sidecars::LOCK_FILE_NAME), &label)
        .map(Some)
        .with_context(|| format!("taking the writer lock of {label}"))
}

/// Refuses a v0, v1 or v2 file: its generation is not appended to (strata writes V3 only);
/// `strata migrate` publishes a V3 successor beside it, which dsh opens instead.
pub(crate) fn refuse_older_generation(file: &Path) -> anyhow::Result<()> {
    if !file.is_file() {
        return Ok(());
    }
    if let Ok((generation, _)) = legacy::sniff(file) {
        refuse_v4(file, generation)?;
        if generation != Generation::V3 {
            anyhow::bail!(
                "{}: a {} log is not appended to (strata writes V3 only); run `strata migrate {}` \
                 first: it publishes session.v3.jsonl[.zstd] beside it, untouched, which dsh \
                 and strata then open",
                file.display(),
                legacy::generation_name(generation),
                file.display()
            );
        }
    }
    Ok(())
}

/// Refuses to write to a V4 log: strata reads V4 and does not write it yet (docs/format-v4.md).
pub(crate) fn refuse_v4(file: &Path, generation: Generation) -> anyhow::Result<()> {
    if generation == Generation::V4 {
        anyhow::bail!(
            "{}: a v4 log is read, not written, by this strata (writing V4 is not built yet, \
             docs/format-v4.md); `validate`, `inspect`, `surface` and `messages` read it",
            file.display()
        );
    }
    Ok(())
}

/// The JSONL store a log file sits in, and its session id: the file must be the session file
/// of the directory its header's id and cwd map to, under a root two levels up.
/// `sidecars` keeps strata's lazy-resume sidecars beside the log (off in dsh's folder).
fn store_of_file(file: &Path, sidecars: bool) -> anyhow::Result<(JsonlBackend, String)> {
    let not_in_layout = |why: &str| {
        anyhow::anyhow!(
            "{}: not in a session store layout (ROOT/--PROJECT--/ID/session.v3.jsonl): {why}",
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
    // The root is two directories above the file's own: found from its canonical directory,
    // since a bare or relative name (`session.v3.jsonl` run in the session directory) has no
    // parents to walk.
    let session_dir = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let session_dir = std::fs::canonicalize(session_dir)
        .with_context(|| format!("resolving the directory of {}", file.display()))?;
    let root = session_dir
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| not_in_layout("no store root above it"))?;
    let compression = if zstd {
        Compression::Zstd
    } else {
        Compression::None
    };
    let config = JsonlConfig::new(root, compression);
    let backend = JsonlBackend::new(if sidecars {
        config
    } else {
        config.without_sidecars()
    });
    let expected = backend
        .session_dir(header.cwd(), &id)
        .with_context(|| format!("{}: session id {id:?}", file.display()))?;
    let same_dir = |dir: &Path| std::fs::canonicalize(dir).ok().as_ref() == Some(&session_dir);
    if !same_dir(&expected) {
        return Err(not_in_layout(&format!(
            "session {id:?} belongs in {}",
            expected.display()
        )));
    }
    Ok((backend, id))
}
