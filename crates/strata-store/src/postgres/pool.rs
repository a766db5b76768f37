//! A small blocking connection pool: shared connections for reads and short transactions, and
//! dedicated connections for writers and followers.
//!
//! A few lines of our own instead of r2d2 (and its scheduler thread): the backend needs only
//! "take an idle connection or open one, up to a cap; give it back when done". Every connection
//! is opened by [`connect`], which makes sure commits are durable before it is handed out.
//!
//! Invariants:
//! - `n_open` counts the shared connections that exist (idle or checked out); it never exceeds
//!   `max_size`. Dedicated connections are not counted: each belongs to one writer or follower
//!   for its whole life, so they cannot starve each other or the readers.
//! - A connection the driver reports closed is never handed out again; dropping a checked-out
//!   connection either returns it to the idle list or, when closed, frees its slot.

use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};

use crate::error::StoreError;

/// How long a caller waits for a shared connection when all `max_size` are checked out.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(30);

/// The pool of one backend.
pub(super) struct Pool {
    config: postgres::Config,
    /// The store, for messages.
    store: String,
    max_size: usize,
    state: Mutex<PoolState>,
    /// Signalled when a connection goes back to the idle list or a slot frees up.
    returned: Condvar,
}

struct PoolState {
    idle: Vec<Client>,
    /// Invariant: shared connections alive, idle or checked out; at most `max_size`.
    n_open: usize,
}

/// A shared connection, returned to the pool when dropped.
pub(super) struct Pooled<'p> {
    pool: &'p Pool,
    /// Invariant: `Some` until dropped.
    client: Option<Client>,
    /// Whether the connection was idle in the pool (it may have died while idle).
    reused: bool,
}

impl Pool {
    pub(super) fn new(config: postgres::Config, store: String, max_size: usize) -> Pool {
        Pool {
            config,
            store,
            max_size: max_size.max(1),
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                n_open: 0,
            }),
            returned: Condvar::new(),
        }
    }

    /// Takes an idle shared connection, or opens one while fewer than `max_size` exist, else
    /// waits for one to come back (up to 30 s).
    pub(super) fn get(&self) -> Result<Pooled<'_>, StoreError> {
        let deadline = Instant::now() + CHECKOUT_TIMEOUT;
        let mut state = self.lock();
        loop {
            while let Some(client) = state.idle.pop() {
                if client.is_closed() {
                    state.n_open -= 1;
                    continue;
                }
                return Ok(Pooled {
                    pool: self,
                    client: Some(client),
                    reused: true,
                });
            }
            if state.n_open < self.max_size {
                state.n_open += 1;
                drop(state);
                return match connect(&self.config, &self.store) {
                    Ok(client) => Ok(Pooled {
                        pool: self,
                        client: Some(client),
                        reused: false,
                    }),
                    Err(error) => {
                        self.lock().n_open -= 1;
                        self.returned.notify_one();
                        Err(error)
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(StoreError::io(
                    "wait for a pooled connection to",
                    &self.store,
                    std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "all {} connections stayed busy for {CHECKOUT_TIMEOUT:?}",
                            self.max_size
                        ),
                    ),
                ));
            }
            state = self
                .returned
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Opens a connection outside the cap, owned by the caller for as long as it likes.
    pub(super) fn dedicated(&self) -> Result<Client, StoreError> {
        connect(&self.config, &self.store)
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Pooled<'_> {
    /// Whether the connection had been idle in the pool (and so may have died meanwhile).
    pub(super) fn reused(&self) -> bool {
        self.reused
    }
}

impl Deref for Pooled<'_> {
    type Target = Client;

    fn deref(&self) -> &Client {
        // Invariant: `client` is `Some` until drop.
        self.client.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else {
            return;
        };
        let mut state = self.pool.lock();
        if client.is_closed() {
            state.n_open -= 1;
        } else {
            state.idle.push(client);
        }
        drop(state);
        self.pool.returned.notify_one();
    }
}

/// Opens one connection and makes its commits durable: a server (or role, or database) that
/// set `synchronous_commit = off` would acknowledge commits it can still lose, so the session
/// raises it to `on`; stronger settings (`remote_write`, `remote_apply`) are kept.
pub(super) fn connect(config: &postgres::Config, store: &str) -> Result<Client, StoreError> {
    let failed = |op: &'static str| {
        move |source| StoreError::Postgres {
            store: store.to_owned(),
            op,
            source,
        }
    };
    let mut client = config.connect(NoTls).map_err(failed("connect"))?;
    let row = client
        .query_one("SELECT current_setting('synchronous_commit')", &[])
        .map_err(failed("read synchronous_commit"))?;
    let synchronous_commit: &str = row.try_get(0).map_err(failed("read synchronous_commit"))?;
    if synchronous_commit == "off" {
        client
            .batch_execute("SET synchronous_commit = on")
            .map_err(failed("set synchronous_commit"))?;
    }
    Ok(client)
}
