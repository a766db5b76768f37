//! Test support: a few random byte edits of a text (insert, remove, overwrite), for the
//! property tests that hold a fast reading to the general one on inputs near valid ones.

use proptest::prelude::*;
use proptest::sample::Index;

/// One edit: where, which kind (0 insert, 1 remove, else overwrite), which byte of the alphabet.
pub(crate) type Edit = (Index, u8, Index);

/// One to three edits.
pub(crate) fn edits() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec((any::<Index>(), 0u8..3, any::<Index>()), 1..4)
}

/// `text` with `edits` applied, each byte drawn from `alphabet`.
pub(crate) fn apply(text: &str, edits: Vec<Edit>, alphabet: &[u8]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for (at, op, byte) in edits {
        let byte = *byte.get(alphabet);
        let at = at.index(bytes.len() + 1);
        match op {
            0 => bytes.insert(at, byte),
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            _ if at < bytes.len() => bytes[at] = byte,
            _ => bytes.push(byte),
        }
    }
    bytes
}
