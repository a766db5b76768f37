//! `strata tail REF`: prints a session's events as they are appended, like `tail -f`, until
//! interrupted (or the session is deleted).
//!
//! On PostgreSQL (`postgres://…#ID`, or an id in a `postgres://` store) the events come from a
//! [`Follower`] woken by the appending transaction's `NOTIFY`, so a session written on another
//! host shows up as it commits. Any other store is polled (`read_from` every quarter second).
//! Events are printed in seq order, each once: the last `-n` stored events (or from `--from`),
//! then every new one. `--json` prints each event as one V3 JSON line. A V3 log file (a session
//! of dsh's folder, `dsh#ID`, included) is polled the same way, read only.

use std::time::Duration;

use strata_core::{json, RawEvent};
#[cfg(feature = "postgres")]
use strata_store::Follower;
use strata_store::{FollowFrom, Store};

use super::Status;
use crate::cli::Format;
use crate::input::{is_postgres, postgres_reference, resolve, store_spec, Input, LoadError};
use crate::output;

/// How long one wait for new events lasts before it looks again (PostgreSQL).
#[cfg(feature = "postgres")]
const WAIT: Duration = Duration::from_secs(1);

/// How often a store without notifications is read again.
const POLL: Duration = Duration::from_millis(250);

/// Where the events come from.
enum Source {
    /// A PostgreSQL follower: woken by notifications.
    #[cfg(feature = "postgres")]
    Live(Box<Follower>),
    /// Any other store, read again every [`POLL`].
    Poll {
        store: Store,
        id: String,
        /// Invariant: the seq of the next event to print.
        next_seq: u64,
    },
}

impl Source {
    fn open(reference: &str, store: Option<&str>, from: FollowFrom) -> anyhow::Result<Source> {
        if let Some((url, id)) = postgres_session(reference, store)? {
            #[cfg(feature = "postgres")]
            {
                let follower = crate::input::open_postgres(&url, false)?.follow(&id, from)?;
                return Ok(Source::Live(Box::new(follower)));
            }
            #[cfg(not(feature = "postgres"))]
            {
                let _ = id;
                return Err(crate::input::postgres_left_out(&url));
            }
        }
        let input =
            resolve(std::path::Path::new(reference), store).map_err(|error| match error {
                LoadError::Io(error) => error,
                LoadError::Invalid(rejection) => {
                    anyhow::anyhow!(output::rejection_text(&rejection))
                }
            })?;
        let (store, id) = match input {
            Input::Stored { store, id, .. } => (store, id),
            // A V3 file (dsh's folder included) is followed as a store of its one session,
            // read only: nothing is written beside it.
            Input::File(file) => {
                if let Ok((generation, _)) = strata_migrate::legacy::sniff(&file) {
                    if generation != strata_core::Generation::V3 {
                        anyhow::bail!(
                            "{reference}: tail follows V3 logs; this is a {} log",
                            strata_migrate::legacy::generation_name(generation)
                        );
                    }
                }
                let backend = strata_store::LooseFile::open(&file)?;
                let id = backend.session_id()?;
                (strata_store::Store::new(backend), id)
            }
        };
        let next_seq = match from {
            FollowFrom::Seq(seq) => seq,
            FollowFrom::Last(_) => from.first_seq(store.read_from(&id, 0)?.len() as u64),
        };
        Ok(Source::Poll {
            store,
            id,
            next_seq,
        })
    }

    /// The next events, possibly none after a wait.
    fn next_events(&mut self) -> anyhow::Result<Vec<RawEvent>> {
        match self {
            #[cfg(feature = "postgres")]
            Source::Live(follower) => Ok(follower.wait(WAIT)?),
            Source::Poll {
                store,
                id,
                next_seq,
            } => {
                let events = store.read_from(id, *next_seq)?;
                if events.is_empty() {
                    std::thread::sleep(POLL);
                }
                *next_seq += events.len() as u64;
                Ok(events)
            }
        }
    }
}

/// The PostgreSQL address and session id `reference` names, if it names one: a
/// `postgres://…#ID`, or a bare id (no file of that name) in a `postgres://` store.
fn postgres_session(
    reference: &str,
    store: Option<&str>,
) -> anyhow::Result<Option<(String, String)>> {
    if is_postgres(reference) {
        let (url, id) = postgres_reference(reference)?;
        return Ok(Some((url.to_owned(), id.to_owned())));
    }
    let bare_id = !reference.contains('#') && !std::path::Path::new(reference).exists();
    Ok(store_spec(store)
        .filter(|spec| bare_id && is_postgres(spec))
        .map(|url| (url, reference.to_owned())))
}

pub(crate) fn run(
    reference: &str,
    store: Option<&str>,
    from: Option<u64>,
    n_last: u64,
    format: Format,
) -> anyhow::Result<Status> {
    let from = from.map_or(FollowFrom::Last(n_last), FollowFrom::Seq);
    let mut source = Source::open(reference, store, from)?;
    loop {
        for event in source.next_events()? {
            if format.json {
                output::line(&json::to_js_string(&event.to_value()))?;
            } else {
                output::line(&output::visible(&event_text(&event)))?;
            }
        }
    }
}

/// `SEQ  TIME  TYPE[  surfaceOp]` for people.
fn event_text(event: &RawEvent) -> String {
    let seq = event
        .seq_number()
        .map_or_else(|| "?".to_owned(), |seq| seq.to_string());
    let time = event
        .time_number()
        .and_then(|time| u64::try_from(time).ok())
        .map_or_else(|| "?".to_owned(), output::utc_time);
    let mut text = format!(
        "{seq:>6}  {time}  {}",
        event.type_tag().unwrap_or("(no type)")
    );
    match event.surface_op() {
        Some(serde_json::Value::String(op)) => {
            text.push_str("  ");
            text.push_str(op);
        }
        Some(op) => {
            text.push_str("  ");
            text.push_str(&op.to_string());
        }
        None => {}
    }
    text
}
