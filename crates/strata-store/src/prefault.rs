//! Mapping a fresh block's memory in one call instead of one page fault per page.
//!
//! A full load copies every payload into long-lived blocks (one per decoded batch): as much
//! fresh memory as the log has bytes. Touched page by page, each 4 KiB page costs a trap into
//! the kernel besides its zeroing; a third of that memory's cost on this kind of machine was
//! the traps. `MADV_POPULATE_WRITE` (Linux 5.14) maps a range's pages in one call, and takes
//! the address-space lock shared, so the decoders still fault in parallel.
//!
//! Invariants:
//! - Only whole pages inside the given memory are advised, and only memory the caller owns
//!   and has not initialized: populating maps zeroed pages where none were, which no reader
//!   of uninitialized memory can tell from a fault, and leaves mapped pages as they are.
//! - Failure (an older kernel, pages larger than 4 KiB, another OS) changes nothing: the
//!   copy then faults the pages in as before.

use std::mem::MaybeUninit;

/// Blocks smaller than this are left to fault: one call costs about what a few faults do.
const MIN_BYTES: usize = 64 * 1024;

/// Maps the whole pages of `memory` before it is written (see the module docs).
pub(crate) fn populate(memory: &mut [MaybeUninit<u8>]) {
    if memory.len() < MIN_BYTES {
        return;
    }
    populate_pages(memory);
}

#[cfg(target_os = "linux")]
fn populate_pages(memory: &mut [MaybeUninit<u8>]) {
    const PAGE: usize = 4096;
    let start = memory.as_mut_ptr() as usize;
    let first = start.next_multiple_of(PAGE);
    let end = (start + memory.len()) & !(PAGE - 1);
    if end <= first {
        return;
    }
    // SAFETY: `[first, end)` lies inside `memory`, which the caller holds exclusively and has
    // not initialized; populating only maps (zeroed) pages, it writes no byte a reader could
    // have relied on, and changes no mapping's protection or placement.
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            end - first,
            libc::MADV_POPULATE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn populate_pages(_: &mut [MaybeUninit<u8>]) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn populated_memory_is_written_and_read_back_as_usual() {
        for len in [0, 1, 4095, MIN_BYTES - 1, MIN_BYTES, 3 * MIN_BYTES + 17] {
            let mut block: Vec<u8> = Vec::with_capacity(len);
            populate(block.spare_capacity_mut());
            block.extend((0..len).map(|index| (index % 251) as u8));
            assert!(block
                .iter()
                .enumerate()
                .all(|(index, &byte)| byte == (index % 251) as u8));
        }
    }

    /// This thread's minor page faults so far.
    #[cfg(target_os = "linux")]
    fn minor_faults() -> i64 {
        // SAFETY: `getrusage` only writes the struct it is given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer to a `rusage` this frame owns.
        let status = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
        assert_eq!(status, 0);
        usage.ru_minflt
    }

    /// Writing a populated block takes (nearly) no page fault; writing a plain one takes one
    /// per page. Both blocks are live at once and larger than anything freed before, so
    /// neither is memory the allocator had already mapped.
    #[cfg(target_os = "linux")]
    #[test]
    fn writing_populated_memory_takes_no_page_faults() {
        const LEN: usize = 8 << 20;
        let mut plain: Vec<u8> = Vec::with_capacity(LEN);
        let mut populated: Vec<u8> = Vec::with_capacity(LEN + 4096);
        let before = minor_faults();
        plain.resize(LEN, 1);
        let plain_faults = minor_faults() - before;
        populate(populated.spare_capacity_mut());
        let before = minor_faults();
        populated.resize(LEN + 4096, 2);
        let populated_faults = minor_faults() - before;
        assert!(plain.iter().all(|&byte| byte == 1) && populated.iter().all(|&byte| byte == 2));
        assert!(
            plain_faults >= (LEN / 4096 / 2) as i64,
            "a plain block faulted {plain_faults} times"
        );
        assert!(
            populated_faults <= 4,
            "a populated block faulted {populated_faults} times"
        );
    }
}
