//! Region selection: which surface span a compaction replaces (persistence-compaction §5.4).
//!
//! The region is head-anchored: it starts at the first node after a `system/message` at
//! node 0 (core rule 10 lets only a system message rewrite node 0) and ends before the
//! *kept tail*, the newest nodes whose prices add up to at least the retain budget. The
//! end moves left until the cut is *balanced*: no tool call issued before it is answered
//! after it, so a `tool/result` is never separated from the assistant message that
//! called it, whatever turn or step the cut falls in.
//!
//! Everything here works on surface positions, never on numeric seq order: after a
//! replacement a checkpoint with a high seq sits at the head (upstream bug, persistence §10
//! item 20).
//!
//! Cost: O(kept tail) for the tail walk plus O(region) for the prefix balance, all on
//! flat integer arrays (well under a millisecond for 100,000 nodes).

use strata_core::Seq;

/// A span of surface positions chosen for compaction, with its price.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Position of the first shadowed node. Invariant: `start_index <= end_index`.
    pub start_index: usize,
    /// Position of the last shadowed node.
    pub end_index: usize,
    /// The sum of the shadowed nodes' prices.
    pub shadowed_tokens: u64,
    /// The sum of the kept tail's prices.
    pub retained_tokens: u64,
}

/// Chooses the region for `retain_tokens` over `nodes` (see the module docs).
///
/// `price` and `delta` give each node's token price and call balance delta;
/// `protect_head` is true when node 0 is a `system/message`; `is_checkpoint` tells a
/// previous compaction summary, so a region made only of checkpoints is refused (it
/// could never shrink, and retrying it every step would loop). Returns `None` when
/// nothing can be compacted.
pub fn select_region(
    nodes: &[Seq],
    price: impl Fn(Seq) -> u64,
    delta: impl Fn(Seq) -> i64,
    protect_head: bool,
    retain_tokens: u64,
    is_checkpoint: impl Fn(Seq) -> bool,
) -> Option<Region> {
    let first = usize::from(protect_head);
    // Tail walk: the first position (from the end) where the kept sum reaches the budget.
    let mut keep_from = nodes.len();
    let mut retained = 0_u64;
    while keep_from > first {
        keep_from -= 1;
        retained += price(nodes[keep_from]);
        if retained >= retain_tokens {
            break;
        }
    }
    if retained < retain_tokens || keep_from <= first {
        return None;
    }
    // Balance before the head edge must be zero (a system message issues no calls).
    let head_balance: i64 = nodes[..first].iter().map(|seq| delta(*seq)).sum();
    if head_balance != 0 {
        return None;
    }
    // Balance of the cut before `keep_from`; move left until it is zero.
    let mut balance: i64 = nodes[first..keep_from].iter().map(|seq| delta(*seq)).sum();
    while balance != 0 && keep_from > first {
        keep_from -= 1;
        let seq = nodes[keep_from];
        balance -= delta(seq);
        retained += price(seq);
    }
    if keep_from <= first {
        return None;
    }
    let span = &nodes[first..keep_from];
    if span.iter().all(|seq| is_checkpoint(*seq)) {
        return None;
    }
    Some(Region {
        start_index: first,
        end_index: keep_from - 1,
        shadowed_tokens: span.iter().map(|seq| price(*seq)).sum(),
        retained_tokens: retained,
    })
}

#[cfg(test)]
mod tests;
