//! Unit tests of region selection on hand-priced surfaces.

use std::collections::HashMap;

use strata_core::Seq;

use super::*;

struct Surface {
    nodes: Vec<Seq>,
    price: HashMap<u64, u64>,
    delta: HashMap<u64, i64>,
}

/// `(price, delta)` per node; node `i` has seq `i`.
fn surface(spec: &[(u64, i64)]) -> Surface {
    Surface {
        nodes: (0..spec.len() as u64)
            .map(|s| Seq::new(s).unwrap())
            .collect(),
        price: spec
            .iter()
            .enumerate()
            .map(|(i, (p, _))| (i as u64, *p))
            .collect(),
        delta: spec
            .iter()
            .enumerate()
            .map(|(i, (_, d))| (i as u64, *d))
            .collect(),
    }
}

fn select(surface: &Surface, protect_head: bool, retain: u64) -> Option<Region> {
    select_region(
        &surface.nodes,
        |seq| surface.price[&seq.get()],
        |seq| surface.delta[&seq.get()],
        protect_head,
        retain,
        |_| false,
    )
}

// persistence-compaction §5.4, the worked example: the cut moves left past the
// parallel call's first result to before the assistant message that issued both calls.
#[test]
fn worked_example_moves_the_cut_before_the_calling_message() {
    let s = surface(&[(300, 0), (200, 2), (50, -1), (900, -1), (100, 0), (400, 0)]);
    let region = select(&s, false, 1000).unwrap();
    assert_eq!((region.start_index, region.end_index), (0, 0));
    assert_eq!(region.shadowed_tokens, 300);
}

#[test]
fn a_system_head_is_never_shadowed() {
    let s = surface(&[(50, 0), (300, 0), (300, 0), (300, 0)]);
    let region = select(&s, true, 300).unwrap();
    assert_eq!((region.start_index, region.end_index), (1, 2));
}

#[test]
fn zero_retain_keeps_only_the_newest_unit() {
    let s = surface(&[(50, 0), (10, 0), (10, 1), (10, -1)]);
    // The newest node is a result; its call is one node earlier, so both stay.
    let region = select(&s, true, 0).unwrap();
    assert_eq!((region.start_index, region.end_index), (1, 1));
}

#[test]
fn nothing_to_compact_when_the_tail_needs_everything() {
    let s = surface(&[(50, 0), (10, 0), (10, 0)]);
    assert_eq!(select(&s, true, 1_000), None);
    // An open call at the head of the region blocks every cut after it.
    let s = surface(&[(50, 0), (10, 1), (10, 0), (10, 0)]);
    assert_eq!(select(&s, true, 0), None);
}

#[test]
fn a_region_of_only_checkpoints_is_refused() {
    let s = surface(&[(50, 0), (500, 0), (10, 0)]);
    let region = select_region(
        &s.nodes,
        |seq| s.price[&seq.get()],
        |seq| s.delta[&seq.get()],
        true,
        0,
        |seq| seq.get() == 1,
    );
    assert_eq!(region, None);
}
