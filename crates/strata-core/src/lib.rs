//! strata-core: the session log, its surface and the messages derived from it.
//!
//! This crate owns the rules of an event-sourced LLM session (the DeepSeek
//! Harness V3 format): which events a log may hold, how surface events join
//! or replace nodes of the model-visible *surface*, and how the surface
//! projects to the messages of the next request. It is the bottom layer of
//! strata: it never opens a file, reads a clock or touches the network —
//! time is a parameter, and stores do the I/O between planning an append and
//! committing it. See `ARCHITECTURE.md` at the repository root.
//!
//! ```
//! use strata_core::{payload, Candidate, SessionHeader, Session, SurfaceIntent};
//!
//! let header = SessionHeader::fresh("demo", 1_700_000_000_000).unwrap();
//! let mut session = Session::create(header).unwrap();
//! let hello = payload::UserMessage { message: payload::user_text_message("m1", "hello") };
//! session.append(Candidate::surface(hello, SurfaceIntent::append()), 1_700_000_000_001).unwrap();
//! let messages = session.derive_messages();
//! assert_eq!(messages.len(), 1);
//! assert_eq!(messages[0].role(), "user");
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub use accept::{check_stored_message, EventLookup, Window};
pub use candidate::{Candidate, Intent, LogOnlyPayload, Placement, SurfaceIntent, SurfacePayload};
pub use checkpoint::{Checkpoint, ResumeError};
pub use derive::DerivedMessages;
pub use event::{Event, EventType, ReplaceRange, SurfaceMeta, SurfaceOp};
pub use fork::{fork_session, ForkError, ForkMode};
pub use generation::{Generation, ReplaceSpelling};
pub use header::{HeaderSpec, SessionHeader};
pub use log::{EventSource, SourceError};
pub use message::Message;
pub use pairing::{check_tool_pairing, PairingError};
pub use relations::Relations;
pub use repair::CloseCause;
pub use rule::{AcceptError, Rule};
pub use seq::Seq;
pub use session::{AppendPlan, BatchMark, RestoreRow, SeedOptions, Session, StalePlanError};
pub use stats::{log_stats, LogStats};
pub use surface::{Replacement, SurfaceState};
pub use verify::{Verified, Verifier};
pub use wire::RawEvent;

/// For store implementers: the machinery a store's decoders use to load a log fast — the
/// one-pass row scanner and its arena ([`ScannedRow`](ingest::ScannedRow),
/// [`ScanArena`](ingest::ScanArena)) and rows whose event-local rules already ran
/// ([`PrecheckedRow`](ingest::PrecheckedRow)), which a restore takes instead of raw rows. An
/// agent builder never needs it: `Session` and `RawEvent` are the API.
pub mod ingest {
    pub use crate::precheck::PrecheckedRow;
    pub use crate::scan::{ScanArena, ScannedRow};
}
pub mod json;
pub mod payload;
pub mod synth;

// The root names what an agent builder uses; these modules hold the parts of one concept a
// tool or a store reaches for (a fork's seeds, a crash repair's closers, request headers at a
// seq, offline folds, per-turn statistics) under their own names.
pub mod fold;
pub mod fork;
pub mod message;
pub mod repair;
pub mod request;
pub mod seq;
pub mod stats;

mod accept;
#[cfg(test)]
mod byte_edits;
mod candidate;
mod checkpoint;
mod data;
mod derive;
mod event;
mod generation;
mod header;
mod latest;
mod log;
mod pairing;
mod precheck;
mod read_depth;
mod relations;
mod rule;
mod scan;
mod session;
mod surface;
mod verify;
mod view;
mod wire;
