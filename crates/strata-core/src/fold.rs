//! Offline folds: a log's surface replayed without a session — the final nodes and every
//! replacement with what it shadowed (session-core §6.5). `fold_window` re-accepts the rows it
//! is given under a generation's surface rules; `fold_accepted` replays events a session
//! already accepted from their placements alone. Statistics, reports and `request_at` read a
//! log through these, holding only the surface.

use std::sync::Arc;

use crate::accept::{accept_envelope, Context, Path, Window};
use crate::event::{Event, SurfaceMeta};
use crate::generation::Generation;
use crate::rule::{AcceptError, Rule};
use crate::seq::Seq;
use crate::surface::{Replacement, SurfacePlan, SurfaceState, SurfaceUndo};
use crate::wire::RawEvent;

/// The result of an offline fold (`fold_surface`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fold {
    /// The final surface nodes.
    pub nodes: Vec<Seq>,
    /// The final replacement count.
    pub replace_generation: u64,
    /// Every replacement in log order, with the nodes it shadowed.
    pub replacements: Vec<Replacement>,
}

/// Replays `events` (base seq 0) through the surface rules only and reports
/// the final nodes and every replacement (session-core §6.5).
pub fn fold_surface(events: impl IntoIterator<Item = RawEvent>) -> Result<Fold, AcceptError> {
    fold_window(Generation::NATIVE, Seq::ZERO, events)
}

/// [`fold_surface`] over a window whose first event has seq `base`, under
/// `generation`'s rules.
pub fn fold_window(
    generation: Generation,
    base: Seq,
    events: impl IntoIterator<Item = RawEvent>,
) -> Result<Fold, AcceptError> {
    let mut surface = SurfaceState::new();
    let mut accepted: Vec<Arc<Event>> = Vec::new();
    let mut replacements = Vec::new();
    for (offset, raw) in events.into_iter().enumerate() {
        let expected_seq = Seq::new(base.get() + offset as u64)
            .map_err(|error| AcceptError::new(Rule::SeqNotContiguous, error.to_string()))?;
        let (event, plan, _) = {
            let lookup = Window {
                base,
                events: &accepted,
            };
            let context = Context {
                generation,
                path: Path::Fold,
                surface: &surface,
                lookup: &lookup,
                expected_seq,
                index: offset as u64,
                head: None,
            };
            match crate::accept::decode_envelope(raw, generation) {
                Some(envelope) => accept_envelope(&context, envelope)?,
                None => {
                    return Err(AcceptError::new(
                        Rule::InvalidEnvelope,
                        format!("session event at index {offset} has an invalid event envelope"),
                    )
                    .at_index(offset as u64))
                }
            }
        };
        let undo = surface.apply(&plan);
        if let (
            SurfaceUndo::Unreplace { shadowed, .. },
            SurfaceMeta::Surface {
                op: crate::event::SurfaceOp::Replace(range),
                ..
            },
        ) = (undo, event.meta())
        {
            replacements.push(Replacement {
                seq: event.seq,
                start: range.start,
                end: range.end,
                shadowed,
            });
        }
        accepted.push(Arc::new(event));
    }
    Ok(Fold {
        nodes: surface.nodes().to_vec(),
        replace_generation: surface.replace_generation(),
        replacements,
    })
}

/// [`fold_window`] over events a session accepted together, from seq 0 (its own log): the
/// surface replayed from each event's placement alone, holding only the surface. Every rule
/// already held for these events, so none runs again and no event is rebuilt (a fold window
/// re-accepts each event and keeps a second copy of the log); a placement the surface cannot
/// take, or a gap in the seqs, fails as the fold would.
pub fn fold_accepted(events: &[Arc<Event>]) -> Result<Fold, AcceptError> {
    let mut surface = SurfaceState::new();
    let mut replacements = Vec::new();
    for (index, event) in events.iter().enumerate() {
        if event.seq.get() != index as u64 {
            return Err(AcceptError::new(
                Rule::SeqNotContiguous,
                format!(
                    "session event at index {index} has seq {} (expected {index})",
                    event.seq
                ),
            )
            .at_index(index as u64));
        }
        let plan = match event.meta() {
            SurfaceMeta::Surface {
                op: crate::event::SurfaceOp::Append,
                ..
            } => SurfacePlan::Append(event.seq),
            SurfaceMeta::Surface {
                op: crate::event::SurfaceOp::Replace(range),
                ..
            } => {
                let (start_index, end_index) =
                    crate::accept::locate_span_in(surface.nodes(), *range)
                        .map_err(|error| error.at_seq(event.seq.get()))?;
                SurfacePlan::Replace {
                    seq: event.seq,
                    start_index,
                    end_index,
                }
            }
            SurfaceMeta::LogOnly | SurfaceMeta::Opaque { .. } => SurfacePlan::None,
        };
        if let (
            SurfaceUndo::Unreplace { shadowed, .. },
            SurfaceMeta::Surface {
                op: crate::event::SurfaceOp::Replace(range),
                ..
            },
        ) = (surface.apply(&plan), event.meta())
        {
            replacements.push(Replacement {
                seq: event.seq,
                start: range.start,
                end: range.end,
                shadowed,
            });
        }
    }
    Ok(Fold {
        nodes: surface.nodes().to_vec(),
        replace_generation: surface.replace_generation(),
        replacements,
    })
}
