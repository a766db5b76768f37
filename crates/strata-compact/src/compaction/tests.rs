//! Unit tests of id generation and span checks.

use super::*;

#[test]
fn uuids_are_v4_and_deterministic() {
    let mut ids = IdGenerator::seeded(42);
    let uuid = ids.uuid();
    assert_eq!(uuid.len(), 36);
    let groups: Vec<&str> = uuid.split('-').collect();
    assert_eq!(
        groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
        [8, 4, 4, 4, 12]
    );
    assert!(groups[2].starts_with('4'), "{uuid}");
    assert!(
        matches!(groups[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'),
        "{uuid}"
    );
    assert_eq!(IdGenerator::seeded(42).uuid(), uuid);
    assert_ne!(ids.uuid(), uuid);
}

#[test]
fn span_present_needs_the_same_contiguous_seqs() {
    let seqs = |values: &[u64]| {
        values
            .iter()
            .map(|v| Seq::new(*v).unwrap())
            .collect::<Vec<_>>()
    };
    let nodes = seqs(&[0, 5, 6, 7, 9]);
    assert!(span_present(&nodes, &seqs(&[5, 6, 7])));
    assert!(!span_present(&nodes, &seqs(&[5, 7])));
    assert!(!span_present(&nodes, &seqs(&[9, 10])));
    assert!(!span_present(&nodes, &[]));
}
