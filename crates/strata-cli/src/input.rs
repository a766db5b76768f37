//! Resolving what a command line names — a log file, a `sqlite://PATH#ID` reference or a stored
//! session id — and loading it into a validated session.
//!
//! The only place the CLI opens logs and stores. Resolution, in this order:
//! 1. an existing path is a log file, raw or zstd (told apart by content, not by name; a zstd
//!    file read without writing may be framed any way zstd allows, as the `zstd` tool writes
//!    it, while a write needs dsh's framing and refuses any other);
//! 2. `sqlite://PATH#ID` is session `ID` in the SQLite store at `PATH`, and
//!    `postgres://…#ID` (or `postgresql://…#ID`) session `ID` in that PostgreSQL store (neither
//!    is created here);
//! 3. `dsh#ID` (or `dsh:HOME#ID`) is the session in dsh's own folder whose id is, or alone starts
//!    with, `ID` ([`strata_migrate::DshRoot`]: `$DSH_HOME/sessions`, else `~/.dsh/sessions`); it
//!    resolves to that session's current log file, so everything after treats it as a file;
//! 4. an argument that looks like a path (a `/`, or a `.jsonl`/`.zstd`/`.zst` name) is a
//!    missing file;
//! 5. anything else is a session id in the default store (`--store`, else `$STRATA_STORE`, else
//!    `$STRATA_DATABASE_URL`, else the embedded SQLite store); when that store is `dsh` or
//!    `dsh:HOME`, an id or unique id prefix there, as in 3.
//!
//! Loading streams rows from the file or store straight into the core's restore (no second copy
//! of the log), with a progress bar on a terminal when it takes long. Every failure is a
//! [`LoadError`] saying whether the input was invalid (exit 1) or could not be read (exit 2),
//! with file, line and seq.
//!
//! Which store a writing command appends through is `writable`'s question.

use std::path::{Path, PathBuf};

use anyhow::Context;
use strata_core::{SeedOptions, Session};
use strata_migrate::open::{self, LogError};
use strata_migrate::DshRoot;
use strata_store::{restore_stream, scan_log, Compression, LogStream, Store, StoreError};

use crate::progress::{self, Progress};

/// A log named on the command line, resolved.
pub enum Input {
    /// A V3 JSONL log file, raw or zstd.
    File(PathBuf),
    /// A session in a store.
    Stored {
        /// The store.
        store: Store,
        /// The session id.
        id: String,
        /// How the command line named it, for messages.
        label: String,
    },
}

impl Input {
    /// How to name the input in messages: the file path, or the store reference.
    pub fn label(&self) -> String {
        match self {
            Input::File(path) => path.display().to_string(),
            Input::Stored { label, .. } => label.clone(),
        }
    }
}

/// A log that was read and accepted.
pub struct Loaded {
    /// The restored session (with the end-seed marker a restore adds).
    pub session: Session,
    /// How many events the log held (the session may hold one more: the marker).
    pub n_stored: usize,
    /// How the input is named in messages.
    pub label: String,
    /// An unterminated final record the read ignored (an unfinished write; the next writer
    /// truncates it), so a viewer can say the file holds more bytes than events.
    pub torn: Option<strata_store::TornInfo>,
}

impl Loaded {
    /// The events the log holds, without the end-seed marker a viewing restore adds: what
    /// inspect, report, export and `messages --at` describe.
    pub fn stored_events(&self) -> &[std::sync::Arc<strata_core::Event>] {
        // A viewing load restores the whole log: its resident events are all of them.
        self.session
            .resident_events()
            .get(..self.n_stored)
            .unwrap_or_default()
    }

    /// The offline fold of the stored events ([`strata_core::log_stats`]) under the log's own
    /// generation.
    pub fn stats(&self) -> anyhow::Result<strata_core::LogStats> {
        strata_core::log_stats(self.stored_events())
            .with_context(|| format!("{}: the restored log failed an offline fold", self.label))
    }
}

/// Why a log could not be loaded.
pub enum LoadError {
    /// The log breaks a format or acceptance rule.
    Invalid(Rejection),
    /// The log could not be found or read.
    Io(anyhow::Error),
}

pub use strata_migrate::open::Rejection;

/// Opens the store named by `--store` (a SQLite file, `sqlite:PATH`, `jsonl:DIR`,
/// `jsonl-zstd:DIR` or a `postgres://` address), else `$STRATA_STORE`, else
/// `$STRATA_DATABASE_URL`, else the default SQLite store.
pub fn open_store(spec: Option<&str>) -> anyhow::Result<Store> {
    let Some(spec) = store_spec(spec) else {
        return Store::open_default().context("open the default store");
    };
    if let Some(root) = dsh_root(&spec) {
        let root = root?;
        anyhow::bail!(
            "{}: dsh's own folder is not a store this command uses: list it with \
             `strata sessions --store {spec}`, and name one of its sessions as `dsh#ID` (an id \
             or a unique prefix) to the commands that take a LOG; strata creates no sessions \
             there except forks",
            root.describe()
        );
    }
    if is_postgres(&spec) {
        return open_postgres_store(&spec, true);
    }
    if let Some(dir) = spec.strip_prefix("jsonl:") {
        return Ok(Store::jsonl(dir, Compression::None));
    }
    if let Some(dir) = spec.strip_prefix("jsonl-zstd:") {
        return Ok(Store::jsonl(dir, Compression::Zstd));
    }
    let path = spec
        .strip_prefix("sqlite://")
        .or_else(|| spec.strip_prefix("sqlite:"))
        .unwrap_or(&spec);
    Store::sqlite(Path::new(path)).with_context(|| format!("open the store {path}"))
}

/// The `--store` of a command that takes a LOG, set once from the command line before the
/// command runs: where a bare session id is looked up, like `$STRATA_STORE`, which it overrides.
static LOG_STORE_FLAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Records the `--store` flag of a LOG-taking command (see [`store_spec`]); only the first call
/// counts.
pub fn set_log_store_flag(flag: Option<&str>) {
    if let Some(flag) = flag {
        let _ = LOG_STORE_FLAG.set(flag.to_owned());
    }
}

/// The store the command line names: `--store`, else `$STRATA_STORE`, else
/// `$STRATA_DATABASE_URL`; `None` means the default SQLite store.
pub fn store_spec(flag: Option<&str>) -> Option<String> {
    let env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    flag.map(str::to_owned)
        .or_else(|| LOG_STORE_FLAG.get().cloned())
        .or_else(|| env("STRATA_STORE"))
        .or_else(|| env("STRATA_DATABASE_URL"))
}

/// dsh's own folder when `spec` names it: `dsh` is `$DSH_HOME` (else `~/.dsh`), `dsh:HOME`
/// the dsh home `HOME` (the folder holding `sessions/`); `None` for any other store.
pub fn dsh_root(spec: &str) -> Option<anyhow::Result<DshRoot>> {
    if spec == "dsh" {
        return Some(DshRoot::from_env().map_err(anyhow::Error::new));
    }
    let home = spec.strip_prefix("dsh:")?;
    if home.is_empty() {
        return Some(Err(anyhow::anyhow!(
            "dsh: names no folder; use `dsh` for $DSH_HOME or `dsh:HOME`"
        )));
    }
    Some(Ok(DshRoot::at_home(home)))
}

/// The current log file of the session a `dsh#ID` or `dsh:HOME#ID` argument names (`ID` an
/// id or a unique id prefix); `None` when the argument is not such a reference (or is an
/// existing file).
pub fn dsh_reference(arg: &Path) -> Option<Result<PathBuf, LoadError>> {
    if arg.exists() {
        return None;
    }
    let (spec, query) = arg.to_str()?.rsplit_once('#')?;
    let root = dsh_root(spec)?;
    Some(resolve_dsh(root, query))
}

/// The current log of the session `query` (an id or a unique id prefix) in dsh's folder.
fn resolve_dsh(root: anyhow::Result<DshRoot>, query: &str) -> Result<PathBuf, LoadError> {
    let root = root.map_err(LoadError::Io)?;
    if !root.sessions_dir().is_dir() {
        return Err(LoadError::Io(anyhow::anyhow!(
            "{query}: no dsh sessions folder at {} (`dsh:HOME` names a dsh home, the folder \
             holding sessions/; `dsh` is $DSH_HOME, else ~/.dsh)",
            root.sessions_dir().display()
        )));
    }
    let session = root
        .find(query)
        .map_err(|error| LoadError::Io(anyhow::Error::new(error)))?;
    Ok(session.file)
}

/// Whether a store spec is a PostgreSQL address.
pub fn is_postgres(spec: &str) -> bool {
    spec.starts_with("postgres://") || spec.starts_with("postgresql://")
}

/// Connects to the PostgreSQL store at `url`; `create` lets an empty schema become a store
/// (lookups pass `false`, so a typo leaves nothing behind).
#[cfg(feature = "postgres")]
pub fn open_postgres(url: &str, create: bool) -> anyhow::Result<strata_store::PostgresBackend> {
    let config = strata_store::PostgresConfig::from_url(url)?.create_schema(create);
    let store = config.describe().to_owned();
    strata_store::PostgresBackend::open(config).with_context(|| format!("open the store {store}"))
}

/// The PostgreSQL store at `url` as a [`Store`] (see `open_postgres`); in a strata built
/// without the `postgres` feature, an error that says so.
pub fn open_postgres_store(url: &str, create: bool) -> anyhow::Result<Store> {
    #[cfg(feature = "postgres")]
    return Ok(Store::new(open_postgres(url, create)?));
    #[cfg(not(feature = "postgres"))]
    {
        let _ = create;
        Err(postgres_left_out(url))
    }
}

/// Why a `postgres://` address cannot be used by a strata built without PostgreSQL.
#[cfg(not(feature = "postgres"))]
pub fn postgres_left_out(url: &str) -> anyhow::Error {
    let url = url.split_once('@').map_or(url, |(_, host)| host);
    anyhow::anyhow!(
        "{url}: this strata was built without PostgreSQL stores; rebuild it with the `postgres` \
         feature (on by default): cargo install --path crates/strata-cli"
    )
}

/// Splits `postgres://…#ID` into the address and the id.
pub fn postgres_reference(text: &str) -> anyhow::Result<(&str, &str)> {
    text.rsplit_once('#')
        .filter(|(url, id)| !url.is_empty() && !id.is_empty())
        .ok_or_else(|| anyhow::anyhow!("a PostgreSQL session reference is postgres://…#ID"))
}

/// Resolves a command-line argument to a log (see the module docs for the order). `store` is
/// the `--store` flag, used for a bare session id.
pub fn resolve(arg: &Path, store: Option<&str>) -> Result<Input, LoadError> {
    if arg.exists() {
        return Ok(Input::File(arg.to_path_buf()));
    }
    let text = arg.to_str().unwrap_or_default();
    if let Some(reference) = text.strip_prefix("sqlite://") {
        let Some((path, id)) = reference
            .rsplit_once('#')
            .filter(|(path, id)| !path.is_empty() && !id.is_empty())
        else {
            return Err(LoadError::Io(anyhow::anyhow!(
                "{text}: a store reference is sqlite://PATH#ID"
            )));
        };
        if !Path::new(path).is_file() {
            return Err(LoadError::Io(anyhow::anyhow!(
                "{text}: no SQLite store at {path}"
            )));
        }
        let store = Store::sqlite(Path::new(path))
            .map_err(|error| LoadError::Io(anyhow::Error::new(error)))?;
        return Ok(Input::Stored {
            store,
            id: id.to_owned(),
            label: text.to_owned(),
        });
    }
    if let Some(found) = dsh_reference(arg) {
        return found.map(Input::File);
    }
    if is_postgres(text) {
        let (url, id) = postgres_reference(text).map_err(LoadError::Io)?;
        let store = open_postgres_store(url, false).map_err(LoadError::Io)?;
        let label = format!("{}#{id}", store.backend().describe());
        return Ok(Input::Stored {
            store,
            id: id.to_owned(),
            label,
        });
    }
    let looks_like_path = text.is_empty()
        || text.contains(std::path::MAIN_SEPARATOR)
        || text.ends_with(".jsonl")
        || text.ends_with(".zstd")
        || text.ends_with(".zst");
    if looks_like_path {
        return Err(LoadError::Io(anyhow::anyhow!(
            "cannot open {}: no such file",
            arg.display()
        )));
    }
    if let Some(root) = store_spec(store).as_deref().and_then(dsh_root) {
        return resolve_dsh(root, text).map(Input::File);
    }
    let explicit = store_spec(store).is_some();
    if !explicit {
        // A typo must not create the default store as a side effect of looking in it.
        match strata_store::default_sqlite_path() {
            Some(path) if path.is_file() => {}
            Some(path) => {
                return Err(LoadError::Io(anyhow::anyhow!(
                    "{text}: no such file, and no default store at {} to look it up in",
                    path.display()
                )))
            }
            None => {
                return Err(LoadError::Io(anyhow::anyhow!(
                    "{text}: no such file, and no default store (set STRATA_HOME or HOME)"
                )))
            }
        }
    }
    let store = open_store(store).map_err(LoadError::Io)?;
    let label = format!("{}#{text}", store.backend().describe());
    Ok(Input::Stored {
        store,
        id: text.to_owned(),
        label,
    })
}

/// Resolves and loads one log named on the command line.
pub fn load(arg: &Path) -> Result<Loaded, LoadError> {
    load_input(&resolve(arg, None)?)
}

/// Streams a resolved log into a validated session.
pub fn load_input(input: &Input) -> Result<Loaded, LoadError> {
    let progress = Progress::new(&format!("loading {}", input.label()));
    let loaded = load_with(input, &progress);
    progress.finish();
    loaded
}

/// [`load_input`] reporting to `progress` (which the caller finishes).
pub fn load_with(input: &Input, progress: &Progress) -> Result<Loaded, LoadError> {
    let label = input.label();
    if let Input::File(path) = input {
        if let Some(loaded) = load_older_generation(path, &label)? {
            return Ok(loaded);
        }
    }
    with_stream(input, |stream| {
        let mut stream = progress::observe(stream, progress);
        let session = restore_stream(&mut stream, SeedOptions::default())
            .map_err(|error| store_failure(&label, error))?;
        let n_stored = usize::try_from(stream.n_read()).unwrap_or(usize::MAX);
        Ok(Loaded {
            session,
            n_stored,
            label: label.clone(),
            torn: stream.torn(),
        })
    })
}

/// Streams a resolved log into `resume` (a writer's resume of it, crash repair included) with
/// the progress a load shows, so the rows go from the reader to the session as in a load;
/// `None` for a v0–v2 file, which only [`load_input`] reads (in its own numbering).
pub fn resume_input<T>(
    input: &Input,
    resume: impl FnOnce(&mut LogStream<'_>) -> Result<T, StoreError>,
) -> Result<Option<T>, LoadError> {
    if let Input::File(path) = input {
        if open::is_older_generation(path) {
            return Ok(None);
        }
    }
    let label = input.label();
    let progress = Progress::new(&format!("loading {label}"));
    let resumed = with_stream(input, |stream| {
        let mut stream = progress::observe(stream, &progress);
        resume(&mut stream).map_err(|error| store_failure(&label, error))
    });
    progress.finish();
    resumed.map(Some)
}

/// A v0, v1 or v2 log file, loaded in its own numbering (`strata_migrate::open`); `None` for a
/// V3 (or unreadable) file, which the V3 reader then handles and reports.
fn load_older_generation(path: &Path, label: &str) -> Result<Option<Loaded>, LoadError> {
    let older = open::open_older_generation(path, label).map_err(LoadError::from)?;
    Ok(older.map(|older| Loaded {
        session: older.session,
        n_stored: older.n_stored,
        label: label.to_owned(),
        torn: None,
    }))
}

/// Opens the stream of a resolved log and hands it to `consume`.
pub fn with_stream<T>(
    input: &Input,
    consume: impl FnOnce(LogStream<'_>) -> Result<T, LoadError>,
) -> Result<T, LoadError> {
    let label = input.label();
    match input {
        Input::File(path) => consume(scan_log(path).map_err(|error| store_failure(&label, error))?),
        Input::Stored { store, id, .. } => consume(
            store
                .scan(id)
                .map_err(|error| store_failure(&label, error))?,
        ),
    }
}

/// Sorts a store error into invalid input (exit 1) or a failure to read (exit 2).
pub fn store_failure(label: &str, error: StoreError) -> LoadError {
    LoadError::from(open::store_rejection(label, error))
}

impl From<LogError> for LoadError {
    fn from(error: LogError) -> LoadError {
        match error {
            LogError::Invalid(rejection) => LoadError::Invalid(rejection),
            LogError::Unreadable(error) => LoadError::Io(anyhow::Error::new(error)),
        }
    }
}

/// A strata built without the `postgres` feature (CI builds and tests it so): every way of
/// naming a PostgreSQL store gets the same plain refusal, which never echoes a password.
#[cfg(all(test, not(feature = "postgres")))]
mod without_postgres {
    use super::*;

    #[test]
    fn a_postgres_address_names_the_missing_feature() {
        let url = "postgres://agent:secret@db.internal/strata";
        let errors = [
            open_store(Some(url)).err().map(|error| error.to_string()),
            resolve(Path::new(&format!("{url}#run-42")), None)
                .err()
                .map(|error| match error {
                    LoadError::Io(error) => error.to_string(),
                    LoadError::Invalid(rejection) => format!("{rejection:?}"),
                }),
        ];
        for error in errors {
            let error = error.unwrap_or_default();
            assert!(error.contains("without PostgreSQL stores"), "{error}");
            assert!(error.contains("`postgres`"), "{error}");
            assert!(!error.contains("secret"), "{error}");
        }
    }
}
