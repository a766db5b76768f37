//! Following a live session from any host: `LISTEN` on the schema's channel, read the new rows
//! when an append names the session.
//!
//! A follower listens *before* its first read, so an append committed after that read always
//! notifies it. A notification only says "look again"; the rows themselves come from the table,
//! so a lost or coalesced notification costs latency, never events: every wait that times out
//! reads once more anyway.
//!
//! Invariant: `next_seq` is the seq of the next event to hand out; the follower hands out every
//! event from its starting seq on, each once, in seq order.

use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;
use strata_core::{RawEvent, SessionHeader};

use super::schema::quote_ident;
use super::{PostgresBackend, PAGE_ROWS};
use crate::backend::FollowFrom;
use crate::error::StoreError;

/// A live view of one session's new events (see [`PostgresBackend::follow`]).
pub struct Follower {
    backend: PostgresBackend,
    /// A dedicated connection listening on the channel.
    client: Client,
    id: String,
    header: SessionHeader,
    /// Invariant: the seq of the next event to hand out.
    next_seq: u64,
}

impl Follower {
    pub(super) fn start(
        backend: PostgresBackend,
        id: &str,
        from: FollowFrom,
    ) -> Result<Follower, StoreError> {
        if PostgresBackend::storable(id).is_err() {
            return Err(backend.not_found(id));
        }
        let mut client = listen(&backend)?;
        let (header, n_stored) = backend.session_on(&mut client, id)?;
        let next_seq = from.first_seq(n_stored);
        Ok(Follower {
            backend,
            client,
            id: id.to_owned(),
            header,
            next_seq,
        })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session's header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The seq of the next event [`Follower::wait`] hands out.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Returns the next events (up to a page, in seq order) as soon as there are any, waiting
    /// at most `timeout`; an empty vector means none arrived in time. A dropped connection is
    /// reopened once per call; a session deleted meanwhile is [`StoreError::NotFound`].
    pub fn wait(&mut self, timeout: Duration) -> Result<Vec<RawEvent>, StoreError> {
        let deadline = Instant::now() + timeout;
        if self.client.is_closed() {
            self.client = listen(&self.backend)?;
        }
        loop {
            let events =
                self.backend
                    .page_on(&mut self.client, &self.id, self.next_seq, Some(PAGE_ROWS))?;
            if !events.is_empty() {
                self.next_seq += events.len() as u64;
                return Ok(events);
            }
            let now = Instant::now();
            if now >= deadline {
                if self
                    .backend
                    .next_seq_on(&mut self.client, &self.id)?
                    .is_none()
                {
                    return Err(self.backend.not_found(&self.id));
                }
                return Ok(Vec::new());
            }
            self.notified(deadline - now)?;
        }
    }

    /// Blocks until a notification may concern this session's new events, or `timeout` ends.
    fn notified(&mut self, timeout: Duration) -> Result<(), StoreError> {
        let deadline = Instant::now() + timeout;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Ok(());
            }
            let notification = self
                .client
                .notifications()
                .timeout_iter(remaining)
                .next()
                .map_err(self.backend.failed("wait for notifications"))?;
            let Some(notification) = notification else {
                // Timed out, or the connection closed (the next read reports it).
                return Ok(());
            };
            let (next_seq, id) = match notification.payload().split_once(' ') {
                Some((next_seq, id)) => (next_seq, Some(id)),
                None => (notification.payload(), None),
            };
            let concerns_us = id.is_none_or(|id| id == self.id);
            let is_new = next_seq
                .parse::<u64>()
                .map_or(true, |next_seq| next_seq > self.next_seq);
            if concerns_us && is_new {
                return Ok(());
            }
        }
    }
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("id", &self.id)
            .field("next_seq", &self.next_seq)
            .finish_non_exhaustive()
    }
}

/// A dedicated connection listening on the backend's channel.
fn listen(backend: &PostgresBackend) -> Result<Client, StoreError> {
    let mut client = backend.inner.pool.dedicated()?;
    client
        .batch_execute(&format!("LISTEN {}", quote_ident(&backend.inner.channel)))
        .map_err(backend.failed("listen"))?;
    Ok(client)
}
