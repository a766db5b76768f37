//! Message ids: random, UUID-v4-shaped, as dsh writes them. No dependency: std's `RandomState`
//! is randomly keyed per thread, which is all an identifier needs.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh message id such as `3f2a9c4e-1b7d-4e0a-9c51-7d2e8f6a0b13`.
pub fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let draw = |salt: u64| {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(count);
        hasher.write_u64(salt);
        hasher.finish()
    };
    let (high, low) = (draw(1), draw(2));
    // Version 4 in the third group, RFC 4122 variant in the fourth.
    let high = (high & !0xf000) | 0x4000;
    let low = (low & !(0xc000 << 48)) | (0x8000 << 48);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}
