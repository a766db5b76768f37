//! The surface: the ordered seqs of the events the model sees (session-core §6).
//!
//! One ordered vector of node seqs, nothing else: an append pushes the event's
//! seq; a replace removes an inclusive span (located by surface position) and
//! puts the replacing seq in its place. Planning never mutates; applying a plan
//! is the only write, so a rejected candidate cannot disturb the surface.
//!
//! Invariants:
//! - every node is the seq of an accepted surface event of the same log;
//! - a seq appears at most once;
//! - `replace_generation` counts applied replacements and never decreases
//!   (except when a caller rolls back an uncommitted batch).

use crate::seq::Seq;

/// The current surface and its replacement counter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SurfaceState {
    /// Invariant: distinct seqs of accepted surface events, in model order.
    nodes: Vec<Seq>,
    /// Invariant: number of replacements applied to `nodes`.
    replace_generation: u64,
}

/// What accepting one event does to the surface, decided before anything changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SurfacePlan {
    /// A log-only or opaque event: no surface change.
    None,
    /// Push the seq onto the tail.
    Append(Seq),
    /// Replace `nodes[start_index..=end_index]` with `seq`.
    Replace {
        seq: Seq,
        start_index: usize,
        end_index: usize,
    },
}

/// How to undo one applied plan (batch rollback).
#[derive(Clone, Debug)]
pub(crate) enum SurfaceUndo {
    Nothing,
    Pop,
    Unreplace { index: usize, shadowed: Vec<Seq> },
}

/// One replacement seen by an offline fold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replacement {
    /// The replacing event.
    pub seq: Seq,
    /// The declared start endpoint.
    pub start: Seq,
    /// The declared end endpoint.
    pub end: Seq,
    /// The nodes actually removed, in surface order.
    pub shadowed: Vec<Seq>,
}

impl SurfaceState {
    /// An empty surface.
    pub fn new() -> SurfaceState {
        SurfaceState::default()
    }

    /// A surface restored from a checkpoint (lazy resume); the caller vouches
    /// that `nodes` came from folding the same log.
    pub fn from_parts(nodes: Vec<Seq>, replace_generation: u64) -> SurfaceState {
        SurfaceState {
            nodes,
            replace_generation,
        }
    }

    /// The node seqs in model order.
    pub fn nodes(&self) -> &[Seq] {
        &self.nodes
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the surface has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// How many replacements have been applied; tells tail growth from rewrites.
    pub fn replace_generation(&self) -> u64 {
        self.replace_generation
    }

    /// The position of a node, or `None` when the seq is not on the surface.
    pub fn position(&self, seq: Seq) -> Option<usize> {
        find(&self.nodes, seq)
    }

    pub(crate) fn apply(&mut self, plan: &SurfacePlan) -> SurfaceUndo {
        match *plan {
            SurfacePlan::None => SurfaceUndo::Nothing,
            SurfacePlan::Append(seq) => {
                self.nodes.push(seq);
                SurfaceUndo::Pop
            }
            SurfacePlan::Replace {
                seq,
                start_index,
                end_index,
            } => {
                let shadowed: Vec<Seq> = self
                    .nodes
                    .splice(start_index..=end_index, std::iter::once(seq))
                    .collect();
                self.replace_generation += 1;
                SurfaceUndo::Unreplace {
                    index: start_index,
                    shadowed,
                }
            }
        }
    }

    pub(crate) fn undo(&mut self, undo: SurfaceUndo) {
        match undo {
            SurfaceUndo::Nothing => {}
            SurfaceUndo::Pop => {
                self.nodes.pop();
            }
            SurfaceUndo::Unreplace { index, shadowed } => {
                self.nodes.splice(index..=index, shadowed);
                self.replace_generation = self.replace_generation.saturating_sub(1);
            }
        }
    }
}

/// Finds a seq by linear scan, in blocks the compiler vectorises: a replace
/// on a 100,000-node surface must stay within tens of microseconds.
pub(crate) fn find(nodes: &[Seq], target: Seq) -> Option<usize> {
    const BLOCK: usize = 16;
    let target = target.get();
    let mut chunks = nodes.chunks_exact(BLOCK);
    let mut offset = 0;
    for chunk in chunks.by_ref() {
        let hit = chunk
            .iter()
            .fold(false, |found, seq| found | (seq.get() == target));
        if hit {
            return chunk
                .iter()
                .position(|seq| seq.get() == target)
                .map(|position| offset + position);
        }
        offset += BLOCK;
    }
    chunks
        .remainder()
        .iter()
        .position(|seq| seq.get() == target)
        .map(|position| offset + position)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seqs(values: &[u64]) -> Vec<Seq> {
        values.iter().map(|&v| Seq::new(v).unwrap()).collect()
    }

    #[test]
    fn find_matches_a_plain_scan_at_every_position() {
        let nodes = seqs(&(0..100).map(|v| v * 3).collect::<Vec<_>>());
        for target in 0..310 {
            let expected = nodes.iter().position(|s| s.get() == target);
            assert_eq!(find(&nodes, Seq::new(target).unwrap()), expected);
        }
    }

    #[test]
    fn undo_reverses_apply() {
        let mut state = SurfaceState::from_parts(seqs(&[0, 1, 2, 3]), 0);
        let before = state.clone();
        let undo = state.apply(&SurfacePlan::Replace {
            seq: Seq::new(4).unwrap(),
            start_index: 1,
            end_index: 2,
        });
        assert_eq!(state.nodes(), seqs(&[0, 4, 3]).as_slice());
        assert_eq!(state.replace_generation(), 1);
        state.undo(undo);
        assert_eq!(state, before);
    }
}
