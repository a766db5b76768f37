//! Checkpoints: a session's folds after a prefix of its log, enough to resume without
//! replaying that prefix (the O(live surface) resume of DESIGN.md).
//!
//! A [`Checkpoint`] records, for the first `n_events` events of a log, every piece of state
//! a restore derives from them: the surface (nodes and replace generation), which events
//! hold the current request header and context, the last inherited end-seed marker, the
//! latest event of each type, and the open turn crash repair would close. It names events by
//! seq and holds no payloads: [`Session::resume`](crate::Session::resume) fetches the named
//! events from an [`EventSource`](crate::EventSource) and runs their event-local rules.
//!
//! A checkpoint is a *claim* about a log, not a proof: stores persist it beside the log with
//! evidence of which log prefix it describes (length and a hash of the last covered record)
//! and discard it when that evidence does not match. `resume` checks what it can cheaply
//! (bounds, distinct nodes, the named events' types) and refuses a checkpoint that does not
//! fit; a full restore is always the authority.
//!
//! Only wire types derive serde: a store defines its own versioned encoding of a checkpoint.

use crate::event::EventType;
use crate::repair::TurnState;
use crate::rule::AcceptError;
use crate::seq::Seq;

pub use crate::log::SourceError;

/// A session's folds after its first `n_events` events (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// How many events the checkpoint covers: it is the state after seqs `0..n_events`.
    pub n_events: u64,
    /// The surface nodes, in model order.
    pub nodes: Vec<Seq>,
    /// The number of replacements applied to the surface.
    pub replace_generation: u64,
    /// The `request/header` whose header is the current request header.
    pub request_header_seq: Option<Seq>,
    /// The `request/context` whose payload is the current request context.
    pub request_context_seq: Option<Seq>,
    /// The seq of the last `session/end-seed {inherited: true}`.
    pub last_inherited_marker: Option<u64>,
    /// The latest event of each type present in the covered prefix.
    pub latest: Vec<(EventType, Seq)>,
    /// The turn left open at the end of the covered prefix (what repair would close).
    pub turn: TurnState,
    /// The state of upstream's relational and head rules after the covered prefix
    /// (docs/rules.md, "Lazy sessions"). `None` in a record written before strata enforced
    /// them: [`Session::resume`](crate::Session::resume) then refuses the checkpoint as not
    /// fitting, and the store restores the whole log.
    pub relations: Option<crate::relations::Relations>,
}

impl Checkpoint {
    /// Every seq a resumed session keeps resident below the checkpoint: the surface nodes,
    /// the request header and context events, the latest event of each type and the last
    /// covered event; ascending and distinct.
    pub fn pinned_seqs(&self) -> Vec<Seq> {
        let mut seqs: Vec<Seq> = self.nodes.clone();
        seqs.extend(self.request_header_seq);
        seqs.extend(self.request_context_seq);
        seqs.extend(self.latest.iter().map(|(_, seq)| *seq));
        if let Some(last) = self.n_events.checked_sub(1).and_then(|s| Seq::new(s).ok()) {
            seqs.push(last);
        }
        seqs.sort_unstable();
        seqs.dedup();
        seqs
    }
}

/// Why [`Session::resume`](crate::Session::resume) could not build a session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// A row after the checkpoint (or a closer or marker the resume adds) broke a rule: the
    /// same error a full restore of the log reports for it.
    #[error(transparent)]
    Rejected(#[from] AcceptError),
    /// The event source failed to produce a pinned event.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The checkpoint does not describe this log (a store then falls back to a full restore).
    #[error("checkpoint does not fit the log{}: {detail}", seq.map(|seq| format!(" at seq {seq}")).unwrap_or_default())]
    Mismatch {
        /// The seq the mismatch was found at, if one.
        seq: Option<u64>,
        /// What did not fit.
        detail: String,
    },
}

impl ResumeError {
    pub(crate) fn mismatch(seq: Option<u64>, detail: impl Into<String>) -> ResumeError {
        ResumeError::Mismatch {
            seq,
            detail: detail.into(),
        }
    }
}
