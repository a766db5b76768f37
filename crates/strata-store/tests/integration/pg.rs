//! The PostgreSQL server the tests run against, found once per test binary:
//!
//! 1. `STRATA_TEST_DATABASE_URL`, else `DATABASE_URL`, when set (it must answer);
//! 2. else the local server at `postgres://postgres@127.0.0.1:5432/test` (trust auth), if it
//!    answers;
//! 3. else a throw-away server started with `initdb` + `pg_ctl` in a temp dir, on a free port,
//!    stopped and removed by a watchdog once this test process ends
//!    (`STRATA_TEST_POSTGRES_THROWAWAY=1` skips 1 and 2, to exercise this path);
//! 4. else a loud SKIP notice, written straight to the terminal (past the test harness's output
//!    capture) — or a failure when `STRATA_REQUIRE_POSTGRES=1`, as CI sets.
//!
//! Isolation: every test store lives in a schema of its own (`t_<pid>_<n>_<label>`), created
//! when the store opens and dropped when the last handle on it goes, so parallel tests and
//! re-runs never see each other's rows.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use strata_core::{Event, RawEvent, SessionHeader};
use strata_store::backend::{LoadFn, LogAppender};
use strata_store::{
    Backend, Listing, LogStream, PostgresBackend, PostgresConfig, ReadFrom, Store, StoreError,
    StoredLog,
};

const LOCAL_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A server the tests can use.
pub struct Server {
    /// A base address (no `schema=`).
    pub url: String,
}

static SERVER: OnceLock<Option<Server>> = OnceLock::new();

/// The server, or `None` (after the SKIP notice) when there is none and none is required.
pub fn server() -> Option<&'static Server> {
    SERVER.get_or_init(find_server).as_ref()
}

fn required() -> bool {
    std::env::var("STRATA_REQUIRE_POSTGRES").is_ok_and(|value| value == "1")
}

fn find_server() -> Option<Server> {
    let throwaway_only =
        std::env::var("STRATA_TEST_POSTGRES_THROWAWAY").is_ok_and(|value| value == "1");
    if !throwaway_only {
        let explicit = ["STRATA_TEST_DATABASE_URL", "DATABASE_URL"]
            .iter()
            .find_map(|name| std::env::var(name).ok().filter(|url| !url.is_empty()));
        if let Some(url) = explicit {
            if let Err(error) = try_connect(&url) {
                panic!("the PostgreSQL server named by the environment does not answer: {error}");
            }
            return Some(Server { url });
        }
        if try_connect(LOCAL_URL).is_ok() {
            return Some(Server {
                url: LOCAL_URL.to_owned(),
            });
        }
    }
    match start_throwaway() {
        Ok(url) => return Some(Server { url }),
        Err(why) if required() => {
            panic!("STRATA_REQUIRE_POSTGRES=1 but no PostgreSQL server is available: {why}")
        }
        Err(why) => {
            let _ = writeln!(
                std::io::stderr(),
                "\n\
                 ************************************************************************\n\
                 ** SKIP: PostgreSQL tests did not run: {why}\n\
                 ** Set DATABASE_URL, run a server at {LOCAL_URL},\n\
                 ** or install initdb/pg_ctl. CI sets STRATA_REQUIRE_POSTGRES=1.\n\
                 ************************************************************************\n"
            );
        }
    }
    None
}

fn try_connect(url: &str) -> Result<(), postgres::Error> {
    let mut config: postgres::Config = url.parse()?;
    config.connect_timeout(Duration::from_secs(3));
    config.connect(NoTls)?.simple_query("SELECT 1")?;
    Ok(())
}

/// Starts a private server; returns its address.
fn start_throwaway() -> Result<String, String> {
    let bin = postgres_bin_dir().ok_or("initdb/pg_ctl not found")?;
    let dir = std::env::temp_dir().join(format!("strata-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|error| format!("create {}: {error}", dir.display()))?;
    // initdb refuses to run as root: run the server as the `postgres` user then.
    let as_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.starts_with(b"0\n"));
    let run_as = |program: &Path, args: &[&str]| {
        let mut command = if as_root {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        command
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command
    };
    if as_root {
        let status = Command::new("chown")
            .args(["-R", "postgres"])
            .arg(&dir)
            .status()
            .map_err(|error| format!("chown: {error}"))?;
        if !status.success() {
            return Err("chown of the temp dir to postgres failed".into());
        }
    }
    let data = dir.join("data");
    let data_arg = data.to_str().ok_or("temp dir is not UTF-8")?;
    let out = run_as(
        &bin.join("initdb"),
        &[
            "-D",
            data_arg,
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
        ],
    )
    .output()
    .map_err(|error| format!("initdb: {error}"))?;
    if !out.status.success() {
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|error| format!("pick a port: {error}"))?
        .port();
    let options = format!(
        "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200",
        dir.display()
    );
    let log = dir.join("server.log");
    let out = run_as(
        &bin.join("pg_ctl"),
        &[
            "-D",
            data_arg,
            "-l",
            log.to_str().ok_or("temp dir is not UTF-8")?,
            "-o",
            &options,
            "-w",
            "start",
        ],
    )
    .output()
    .map_err(|error| format!("pg_ctl: {error}"))?;
    if !out.status.success() {
        return Err(format!(
            "pg_ctl start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // The watchdog outlives us: once this process is gone it stops the server and cleans up.
    let stop = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {prefix}{pg_ctl} -D {data} -m immediate stop >/dev/null 2>&1; rm -rf {dir}",
        pid = std::process::id(),
        prefix = if as_root { "runuser -u postgres -- " } else { "" },
        pg_ctl = bin.join("pg_ctl").display(),
        data = data.display(),
        dir = dir.display(),
    );
    Command::new("setsid")
        .args(["sh", "-c", &stop])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("start the watchdog: {error}"))?;
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match try_connect(&url) {
            Ok(()) => return Ok(url),
            Err(error) if Instant::now() > deadline => {
                return Err(format!("the throw-away server does not answer: {error}"))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// Where `initdb` and `pg_ctl` live: on `PATH`, else Debian's `/usr/lib/postgresql/*/bin`.
fn postgres_bin_dir() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
    });
    on_path.or_else(|| {
        let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|entry| entry.ok().map(|entry| entry.path().join("bin")))
            .filter(|bin| bin.join("initdb").is_file())
            .collect();
        versions.sort();
        versions.pop()
    })
}

/// A fresh schema name for one test store.
pub fn schema_name(label: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let label: String = label
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(24)
        .collect();
    format!(
        "t_{}_{}_{label}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
    .to_ascii_lowercase()
}

/// A schema dropped (with everything in it) when the guard goes.
pub struct SchemaGuard {
    url: String,
    name: String,
}

impl SchemaGuard {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The base address with this schema, as a store address.
    pub fn store_url(&self) -> String {
        format!("{}?schema={}", self.url, self.name)
    }
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        if let Ok(mut client) = Client::connect(&self.url, NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

/// A guard for a fresh schema on the test server (nothing is created until a backend opens it).
pub fn schema(label: &str) -> Option<SchemaGuard> {
    let server = server()?;
    Some(SchemaGuard {
        url: server.url.clone(),
        name: schema_name(label),
    })
}

/// A backend on a fresh schema, configured by `configure`, and the schema's guard.
pub fn backend_with(
    label: &str,
    configure: impl FnOnce(PostgresConfig) -> PostgresConfig,
) -> Option<(PostgresBackend, SchemaGuard)> {
    let guard = schema(label)?;
    let config = PostgresConfig::from_url(&guard.store_url()).expect("test address");
    let backend = PostgresBackend::open(configure(config)).expect("open the test schema");
    Some((backend, guard))
}

/// A store on a fresh schema that drops the schema when the store's last handle goes.
pub fn store(label: &str) -> Option<Store> {
    let (backend, guard) = backend_with(label, |config| config)?;
    Some(Store::new(Dropping {
        backend,
        _guard: Arc::new(guard),
    }))
}

/// A plain connection to the test server (for inspecting and sabotaging).
pub fn client() -> Client {
    let server = server().expect("a server");
    Client::connect(&server.url, NoTls).expect("connect to the test server")
}

/// A [`PostgresBackend`] that drops its test schema when dropped, so the contract suite can
/// treat it like any other store.
struct Dropping {
    backend: PostgresBackend,
    _guard: Arc<SchemaGuard>,
}

impl Backend for Dropping {
    fn describe(&self) -> String {
        self.backend.describe()
    }

    fn max_record_len(&self) -> usize {
        self.backend.max_record_len()
    }

    fn create(
        &self,
        header: &SessionHeader,
        events: &[Arc<Event>],
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        self.backend.create(header, events)
    }

    fn create_fork(
        &self,
        parent: &SessionHeader,
        n_shared: u64,
        header: &SessionHeader,
        events: &[Arc<Event>],
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        self.backend.create_fork(parent, n_shared, header, events)
    }

    fn open_append(
        &self,
        id: &str,
        from: ReadFrom,
        load: &mut LoadFn<'_>,
    ) -> Result<Box<dyn LogAppender>, StoreError> {
        self.backend.open_append(id, from, load)
    }

    fn scan(&self, id: &str, from: ReadFrom) -> Result<LogStream<'_>, StoreError> {
        self.backend.scan(id, from)
    }

    fn read(&self, id: &str) -> Result<StoredLog, StoreError> {
        self.backend.read(id)
    }

    fn read_from(&self, id: &str, from_seq: u64) -> Result<Vec<RawEvent>, StoreError> {
        self.backend.read_from(id, from_seq)
    }

    fn exists(&self, id: &str) -> Result<bool, StoreError> {
        self.backend.exists(id)
    }

    fn list(&self) -> Result<Listing, StoreError> {
        self.backend.list()
    }

    fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.backend.delete(id)
    }
}
