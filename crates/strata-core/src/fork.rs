//! Forks: a child session that inherits a prefix of its parent (session-core §9.2, §9.3).
//!
//! Two cuts are offered. [`closed_turn_seed`] is the V3 store fork: the
//! boundary must not end inside an open turn. [`any_prefix_seed`] is the V4
//! behaviour strata adopts as an extension: any exact prefix, closed after the
//! inherited marker by `forked` closers, so the child is still a valid V3 log.
//! Boundaries are integer event seqs; anything else is refused.

use std::sync::Arc;

use serde_json::Value;

use crate::event::{Event, EventType};
use crate::header::{HeaderSpec, SessionHeader};
use crate::json::non_negative_safe_integer;
use crate::payload::EndSeed;
use crate::repair::{open_turn_closers, CloseCause};
use crate::rule::AcceptError;
use crate::seq::{Seq, MAX_SAFE_INTEGER};
use crate::session::{SeedOptions, Session};
use crate::wire::RawEvent;

/// Machine-readable fork failure codes (upstream's `SessionForkError.code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ForkErrorCode {
    /// The child id is already a session.
    SessionAlreadyExists,
    /// The source session does not exist.
    SessionNotFound,
    /// The source object is not the store's live instance.
    SessionNotLive,
    /// The boundary is not an event seq of the source.
    InvalidBoundary,
    /// The boundary ends inside an open turn (closed-turn forks only).
    OpenTurn,
    /// The child seed was rejected (cannot happen for a valid source).
    InvalidSeed,
}

impl ForkErrorCode {
    /// The upstream code string.
    pub fn as_str(self) -> &'static str {
        match self {
            ForkErrorCode::SessionAlreadyExists => "SESSION_ALREADY_EXISTS",
            ForkErrorCode::SessionNotFound => "SESSION_NOT_FOUND",
            ForkErrorCode::SessionNotLive => "SESSION_NOT_LIVE",
            ForkErrorCode::InvalidBoundary => "INVALID_BOUNDARY",
            ForkErrorCode::OpenTurn => "OPEN_TURN",
            ForkErrorCode::InvalidSeed => "INVALID_SEED",
        }
    }
}

/// A refused fork.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ForkError {
    /// What went wrong.
    pub code: ForkErrorCode,
    /// The upstream message text.
    pub message: String,
}

impl ForkError {
    /// A fork error with `code` (stores report existence checks with it).
    pub fn new(code: ForkErrorCode, message: impl Into<String>) -> ForkError {
        ForkError {
            code,
            message: message.into(),
        }
    }
}

impl From<AcceptError> for ForkError {
    fn from(error: AcceptError) -> ForkError {
        ForkError::new(ForkErrorCode::InvalidSeed, error.message)
    }
}

/// The history a child starts from.
#[derive(Clone, Debug)]
pub struct ForkSeed {
    /// The events of the child's constructor seed.
    pub events: Vec<RawEvent>,
    /// How many of them are the parent's (the inherited marker's seq).
    pub inherited_count: u64,
}

/// Reads a boundary given as JSON (wire and CLI inputs), refusing anything
/// that is not a non-negative safe integer.
pub fn parse_boundary(source_id: &str, value: &Value) -> Result<u64, ForkError> {
    non_negative_safe_integer(value).ok_or_else(|| {
        ForkError::new(
            ForkErrorCode::InvalidBoundary,
            format!(
                "fork boundary for session \"{source_id}\" must be a non-negative safe integer, got {value}"
            ),
        )
    })
}

/// Resolves the boundary: `None` means the last event (or an empty seed).
fn resolve_boundary(
    source_id: &str,
    events: &[Arc<Event>],
    boundary: Option<u64>,
) -> Result<Option<usize>, ForkError> {
    let Some(boundary) = boundary.or_else(|| events.last().map(|_| events.len() as u64 - 1)) else {
        return Ok(None);
    };
    if boundary > MAX_SAFE_INTEGER {
        return Err(ForkError::new(
            ForkErrorCode::InvalidBoundary,
            format!(
                "fork boundary for session \"{source_id}\" must be a non-negative safe integer, got {boundary}"
            ),
        ));
    }
    if boundary >= events.len() as u64 {
        let last = events
            .len()
            .checked_sub(1)
            .map_or_else(|| "none".to_owned(), |last| last.to_string());
        return Err(ForkError::new(
            ForkErrorCode::InvalidBoundary,
            format!("fork boundary {boundary} does not exist in session \"{source_id}\" (last seq: {last})"),
        ));
    }
    let index = boundary as usize;
    if events[index].seq().get() != boundary {
        return Err(ForkError::new(
            ForkErrorCode::InvalidBoundary,
            format!(
                "fork boundary {boundary} does not match a contiguous event seq in session \"{source_id}\""
            ),
        ));
    }
    Ok(Some(index))
}

/// The V3 store-fork seed: events `0..=boundary`, refused when the boundary
/// ends inside an open turn.
pub fn closed_turn_seed(
    source_id: &str,
    events: &[Arc<Event>],
    boundary: Option<u64>,
) -> Result<ForkSeed, ForkError> {
    let Some(index) = resolve_boundary(source_id, events, boundary)? else {
        return Ok(ForkSeed {
            events: Vec::new(),
            inherited_count: 0,
        });
    };
    let prefix = &events[..=index];
    let last_bracket = prefix.iter().rev().find(|event| {
        matches!(
            event.event_type(),
            EventType::TurnStart | EventType::TurnEnd
        )
    });
    if let Some(turn_start) =
        last_bracket.filter(|event| *event.event_type() == EventType::TurnStart)
    {
        let turn = turn_start
            .field("turn")
            .map_or_else(|| "?".to_owned(), ToString::to_string);
        return Err(ForkError::new(
            ForkErrorCode::OpenTurn,
            format!(
                "fork boundary {index} in session \"{source_id}\" ends inside open turn {turn}"
            ),
        ));
    }
    Ok(ForkSeed {
        events: prefix
            .iter()
            .map(|event| RawEvent::from_event(event))
            .collect(),
        inherited_count: index as u64 + 1,
    })
}

/// The any-prefix seed (§9.3): events `0..=boundary`, the inherited marker at
/// `boundary + 1` (the boundary event's time), then `forked` closers for a
/// turn the cut left open.
pub fn any_prefix_seed(
    source_id: &str,
    events: &[Arc<Event>],
    boundary: Option<u64>,
) -> Result<ForkSeed, ForkError> {
    let Some(index) = resolve_boundary(source_id, events, boundary)? else {
        return Ok(ForkSeed {
            events: Vec::new(),
            inherited_count: 0,
        });
    };
    let prefix = &events[..=index];
    let time = prefix[index].time();
    // Build prefix + marker as a scratch session so closers see real events.
    let mut scratch: Vec<Arc<Event>> = prefix.to_vec();
    let marker_seq = Seq::new(index as u64 + 1)
        .map_err(|error| ForkError::new(ForkErrorCode::InvalidBoundary, error.to_string()))?;
    let marker = crate::session::standalone_event(
        crate::candidate::Candidate::log_only(EndSeed { inherited: true }),
        marker_seq,
        time,
    );
    scratch.push(Arc::new(marker));
    let closers = open_turn_closers(&scratch, CloseCause::Forked);
    let mut seed: Vec<RawEvent> = scratch
        .iter()
        .map(|event| RawEvent::from_event(event))
        .collect();
    let mut seq = closers.first_seq;
    for candidate in closers.candidates {
        let event = crate::session::standalone_event(candidate, seq, closers.time);
        seed.push(RawEvent::from_event(&event));
        seq = seq.next();
    }
    Ok(ForkSeed {
        events: seed,
        inherited_count: index as u64 + 1,
    })
}

/// How a fork cuts its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkMode {
    /// V3: refuse a boundary inside an open turn.
    ClosedTurn,
    /// V4 extension: any prefix, closed with `forked` closers.
    AnyPrefix,
}

/// Forks `source` into a new session `child_id` created at `created_at`.
pub fn fork_session(
    source: &Session,
    child_id: &str,
    boundary: Option<u64>,
    mode: ForkMode,
    created_at: u64,
) -> Result<Session, ForkError> {
    let events = source.events().map_err(|error| {
        ForkError::new(
            ForkErrorCode::InvalidSeed,
            format!(
                "could not read the events of session {}: {error}",
                source.id()
            ),
        )
    })?;
    let seed = match mode {
        ForkMode::ClosedTurn => closed_turn_seed(source.id(), events, boundary)?,
        ForkMode::AnyPrefix => any_prefix_seed(source.id(), events, boundary)?,
    };
    let header = SessionHeader::new(HeaderSpec {
        id: child_id.to_owned(),
        created_at,
        cwd: source.header().cwd().map(str::to_owned),
        parent_session: Some(source.id().to_owned()),
        is_seeded: true,
        ..HeaderSpec::default()
    })?;
    let marker_time = seed
        .events
        .last()
        .and_then(RawEvent::time_number)
        .unwrap_or(0);
    Ok(Session::create_seeded(
        header,
        seed.events,
        Some(seed.inherited_count),
        SeedOptions {
            marker_time,
            surface_only: source.is_surface_only(),
            defer_marker: false,
            repair: None,
        },
    )?)
}
