//! dsh's own session folder, `$DSH_HOME/sessions` (issue 27 item 1): finding, listing and
//! naming the sessions dsh wrote there, whatever their encoding and generation.
//!
//! dsh keeps one directory per session, `--<projectKey>--/<encodeSegment(id)>/` (`layout`),
//! holding the session's log under its generation's name (`session.jsonl` for v0,
//! `session.vN.jsonl` after, `.zstd` appended when compressed) and its writer lock
//! `session.lock`. A migration publishes the next generation beside the untouched source, so a
//! directory may hold several generations of one session: the highest canonical name is the
//! session ([`current_log`]), the others are its history and are never counted.
//!
//! Invariants:
//! - **Reading writes nothing.** Listing and lookups read directory entries, a header line and
//!   (for the title) the records of the current log, streamed; no file is created, changed or
//!   locked in the folder.
//! - **Bounded.** A listing holds one summary per session and one record at a time; the title
//!   scan looks into a record only when its bytes name `session/title`, and never validates.
//! - **One session per directory.** Two encodings of the highest generation in one directory
//!   are refused as ambiguous rather than guessed between; an id found under two project
//!   directories likewise.
//! - **Writers go through the JSONL store** over this root ([`DshRoot::store_for`]) with its
//!   sidecars off, so a write leaves only what dsh itself writes: the log, appended or
//!   published beside its predecessor, and `session.lock`.

use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::legacy::ZstdSource;
use strata_format::layout::{decode_segment, parse_session_file_name};
use strata_format::lines::{LineScanner, LineScannerConfig};
use strata_store::{Compression, JsonlBackend, JsonlConfig};

/// The environment variable naming dsh's home (default `~/.dsh`).
pub const DSH_HOME_ENV: &str = "DSH_HOME";

/// The event type whose `data.title` names a session.
pub const TITLE_EVENT_TYPE: &str = "session/title";

/// Why dsh's folder, or a session in it, could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DshRootError {
    /// Neither `$DSH_HOME` nor `$HOME` is set.
    #[error("cannot find dsh's folder: set DSH_HOME (or HOME, for ~/.dsh)")]
    NoHome,
    /// A file-system operation failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// On what.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// No session id is, or starts with, the one asked for.
    #[error("no session {query:?} in {}", root.display())]
    NotFound {
        /// The id or prefix asked for.
        query: String,
        /// The sessions folder searched.
        root: PathBuf,
    },
    /// More than one session matches a prefix (or one id lies in two project directories).
    #[error(
        "{query:?} names {} sessions in {}; give more of the id: {}",
        candidates.len(),
        root.display(),
        candidates.join(", ")
    )]
    Ambiguous {
        /// The id or prefix asked for.
        query: String,
        /// The sessions folder searched.
        root: PathBuf,
        /// Each match, as `PROJECT/ID`.
        candidates: Vec<String>,
    },
    /// A session directory holds its highest generation in both encodings.
    #[error(
        "{} holds generation v{generation} both raw and zstd; dsh reads one: remove or move the other",
        dir.display()
    )]
    TwoEncodings {
        /// The session directory.
        dir: PathBuf,
        /// The generation found twice.
        generation: u32,
    },
}

impl DshRootError {
    fn io(op: &'static str, path: &Path, source: io::Error) -> DshRootError {
        DshRootError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A session's current log in dsh's folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DshSession {
    /// The project directory's name (`--<projectKey>--` or `_no-cwd`).
    pub project: String,
    /// The session id (decoded from its directory's name).
    pub id: String,
    /// The session directory.
    pub dir: PathBuf,
    /// The log: the highest canonical generation in the directory.
    pub file: PathBuf,
    /// That log's generation (0 for `session.jsonl`).
    pub generation: u32,
    /// Whether that log is zstd (from its name).
    pub zstd: bool,
    /// Its size in bytes.
    pub size: u64,
}

/// A session as `strata sessions` lists it: where it is and what its header and title say.
#[derive(Debug, Clone, PartialEq)]
pub struct DshSummary {
    /// Where the session is.
    pub session: DshSession,
    /// The header's `createdAt` (milliseconds since the epoch), when it is an integer.
    pub created_at: Option<i64>,
    /// The newest `session/title` event's `data.title`.
    pub title: Option<String>,
}

/// The sessions of dsh's folder, newest first, and what could not be read.
#[derive(Debug, Default)]
pub struct DshListing {
    /// One summary per session directory with a log.
    pub sessions: Vec<DshSummary>,
    /// Directories or logs that could not be read, each named in its message.
    pub problems: Vec<DshRootError>,
}

/// dsh's folder: a dsh home and the `sessions` folder inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DshRoot {
    home: PathBuf,
}

impl DshRoot {
    /// The folder of the dsh home `home` (what `$DSH_HOME` names): sessions in `home/sessions`.
    pub fn at_home(home: impl Into<PathBuf>) -> DshRoot {
        DshRoot { home: home.into() }
    }

    /// The folder dsh itself uses: `$DSH_HOME`, else `$HOME/.dsh`.
    pub fn from_env() -> Result<DshRoot, DshRootError> {
        let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        if let Some(home) = var(DSH_HOME_ENV) {
            return Ok(DshRoot::at_home(home));
        }
        var("HOME")
            .map(|home| DshRoot::at_home(PathBuf::from(home).join(".dsh")))
            .ok_or(DshRootError::NoHome)
    }

    /// The dsh home.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The sessions folder, `<home>/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions")
    }

    /// `dsh:<home>`, as messages name it.
    pub fn describe(&self) -> String {
        format!("dsh:{}", self.home.display())
    }

    /// Every session directory holding a log, without reading any log.
    pub fn sessions(&self) -> Result<(Vec<DshSession>, Vec<DshRootError>), DshRootError> {
        let root = self.sessions_dir();
        let mut sessions = Vec::new();
        let mut problems = Vec::new();
        let projects = match fs::read_dir(&root) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Ok((sessions, problems))
            }
            Err(source) => return Err(DshRootError::io("list", &root, source)),
        };
        for project in projects {
            let project = project.map_err(|source| DshRootError::io("list", &root, source))?;
            let project_path = project.path();
            if !project_path.is_dir() {
                continue;
            }
            let project_name = project.file_name().to_string_lossy().into_owned();
            let entries = match fs::read_dir(&project_path) {
                Ok(entries) => entries,
                Err(source) => {
                    problems.push(DshRootError::io("list", &project_path, source));
                    continue;
                }
            };
            for entry in entries {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(source) => {
                        problems.push(DshRootError::io("list", &project_path, source));
                        break;
                    }
                };
                let dir = entry.path();
                let Some(id) = entry
                    .file_name()
                    .to_str()
                    .and_then(|name| decode_segment(name).ok())
                else {
                    continue;
                };
                if !dir.is_dir() {
                    continue;
                }
                match current_log(&dir) {
                    Ok(Some((generation, zstd, file))) => {
                        let size = fs::metadata(&file).map_or(0, |meta| meta.len());
                        sessions.push(DshSession {
                            project: project_name.clone(),
                            id,
                            dir,
                            file,
                            generation,
                            zstd,
                            size,
                        });
                    }
                    Ok(None) => {}
                    Err(problem) => problems.push(problem),
                }
            }
        }
        Ok((sessions, problems))
    }

    /// The sessions with their header's creation time and title, newest first (ties by id).
    pub fn list(&self) -> Result<DshListing, DshRootError> {
        let (found, mut problems) = self.sessions()?;
        let mut sessions = Vec::with_capacity(found.len());
        for session in found {
            let created_at = match created_at(&session.file) {
                Ok(created_at) => created_at,
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            };
            let title = match read_title(&session.file) {
                Ok(title) => title,
                Err(problem) => {
                    problems.push(problem);
                    None
                }
            };
            sessions.push(DshSummary {
                session,
                created_at,
                title,
            });
        }
        sessions.sort_by(|a, b| {
            b.created_at
                .cmp(&a.created_at)
                .then_with(|| a.session.id.cmp(&b.session.id))
        });
        Ok(DshListing { sessions, problems })
    }

    /// The session whose id is `query`, else the only one whose id starts with it.
    pub fn find(&self, query: &str) -> Result<DshSession, DshRootError> {
        let (sessions, problems) = self.sessions()?;
        let exact: Vec<&DshSession> = sessions.iter().filter(|s| s.id == query).collect();
        let matches = if exact.is_empty() {
            sessions
                .iter()
                .filter(|s| !query.is_empty() && s.id.starts_with(query))
                .collect()
        } else {
            exact
        };
        match matches.as_slice() {
            // A matching directory that could not be read says why, rather than "no session".
            [] => Err(problems
                .into_iter()
                .find(|problem| problem_matches(problem, query))
                .unwrap_or_else(|| DshRootError::NotFound {
                    query: query.to_owned(),
                    root: self.sessions_dir(),
                })),
            [one] => Ok((*one).clone()),
            many => {
                let mut candidates: Vec<String> = many
                    .iter()
                    .map(|s| format!("{}/{}", s.project, s.id))
                    .collect();
                candidates.sort();
                Err(DshRootError::Ambiguous {
                    query: query.to_owned(),
                    root: self.sessions_dir(),
                    candidates,
                })
            }
        }
    }

    /// The JSONL store over this folder for a V3 log of the given encoding, as dsh writes it:
    /// no sidecars, so a writer adds nothing but the log's bytes and `session.lock`.
    pub fn store_for(&self, compression: Compression) -> JsonlBackend {
        JsonlBackend::new(JsonlConfig::new(self.sessions_dir(), compression).without_sidecars())
    }

    /// Whether `path` lies inside this folder's sessions directory (both resolved), so a file
    /// named by its path is written as dsh would write it.
    pub fn contains(&self, path: &Path) -> bool {
        let (Ok(root), Ok(path)) = (
            fs::canonicalize(self.sessions_dir()),
            fs::canonicalize(path),
        ) else {
            return false;
        };
        path.starts_with(root)
    }
}

/// Whether a listing problem concerns a session directory whose id matches `query`.
fn problem_matches(problem: &DshRootError, query: &str) -> bool {
    let DshRootError::TwoEncodings { dir, .. } = problem else {
        return false;
    };
    dir.file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| decode_segment(name).ok())
        .is_some_and(|id| !query.is_empty() && id.starts_with(query))
}

/// The current log of a session directory: its highest canonical generation, as
/// `(generation, zstd, path)`; `None` when it holds no log. Both encodings of that generation
/// are refused ([`DshRootError::TwoEncodings`]).
pub fn current_log(dir: &Path) -> Result<Option<(u32, bool, PathBuf)>, DshRootError> {
    let entries = fs::read_dir(dir).map_err(|source| DshRootError::io("list", dir, source))?;
    let mut best: Option<(u32, bool, PathBuf)> = None;
    let mut twice = false;
    for entry in entries {
        let entry = entry.map_err(|source| DshRootError::io("list", dir, source))?;
        let Some((generation, zstd)) = entry.file_name().to_str().and_then(parse_session_file_name)
        else {
            continue;
        };
        if !entry.path().is_file() {
            continue;
        }
        match &best {
            Some((top, _, _)) if generation < *top => {}
            Some((top, _, _)) if generation == *top => twice = true,
            _ => {
                twice = false;
                best = Some((generation, zstd, entry.path()));
            }
        }
    }
    match best {
        Some((generation, _, _)) if twice => Err(DshRootError::TwoEncodings {
            dir: dir.to_path_buf(),
            generation,
        }),
        best => Ok(best),
    }
}

/// The header's `createdAt` of any generation's log (its first line, read alone).
fn created_at(file: &Path) -> Result<Option<i64>, DshRootError> {
    let header = crate::legacy::physical_header(file).map_err(|error| DshRootError::Io {
        op: "read the header of",
        path: file.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidData, error.to_string()),
    })?;
    Ok(header.get("createdAt").and_then(Value::as_i64))
}

/// The newest `session/title` of a log of any generation, raw or zstd (told by content): the records are
/// streamed, and only one whose bytes name the type is parsed. Nothing is validated; a record
/// too long to scan or a torn tail ends the scan with what was found.
pub fn read_title(file: &Path) -> Result<Option<String>, DshRootError> {
    let zstd = strata_store::is_zstd_file(file).map_err(|error| DshRootError::Io {
        op: "read",
        path: file.to_path_buf(),
        source: io::Error::other(error.to_string()),
    })?;
    let handle = File::open(file).map_err(|source| DshRootError::io("open", file, source))?;
    let buffered = BufReader::with_capacity(256 * 1024, handle);
    let mut source: Box<dyn Read> = if zstd {
        Box::new(
            ZstdSource::new(buffered).map_err(|source| DshRootError::io("decode", file, source))?,
        )
    } else {
        Box::new(buffered)
    };
    let needle = format!("\"{TITLE_EVENT_TYPE}\"");
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let mut scanner = LineScanner::new(LineScannerConfig::default());
    let mut chunk = vec![0_u8; 256 * 1024];
    let mut title = None;
    loop {
        let read = match source.read(&mut chunk) {
            Ok(0) => return Ok(title),
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => return Err(DshRootError::io("read", file, source)),
        };
        let mut rest = &chunk[..read];
        loop {
            match scanner.next_record(&mut rest) {
                Ok(Some(record)) => {
                    if finder.find(record.bytes).is_some() {
                        if let Some(found) = title_of(record.bytes) {
                            title = Some(found);
                        }
                    }
                }
                Ok(None) => break,
                Err(_) => return Ok(title),
            }
        }
    }
}

/// `data.title` of a `session/title` record.
fn title_of(record: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(record).ok()?;
    if value.get("type").and_then(Value::as_str) != Some(TITLE_EVENT_TYPE) {
        return None;
    }
    value.get("data")?.get("title")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests;
