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
    populate_pages(memory.as_mut_ptr() as usize, memory.len());
}

/// Maps the whole pages of `[start, start + len)`, memory the caller holds exclusively.
#[cfg(target_os = "linux")]
fn populate_pages(start: usize, len: usize) {
    const PAGE: usize = 4096;
    let first = start.next_multiple_of(PAGE);
    let end = (start + len) & !(PAGE - 1);
    if end <= first {
        return;
    }
    // SAFETY: `[first, end)` lies inside memory the caller holds exclusively and has not
    // initialized; populating only maps (zeroed) pages, it writes no byte a reader could have
    // relied on, and changes no mapping's protection or placement.
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            end - first,
            libc::MADV_POPULATE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn populate_pages(_: usize, _: usize) {}

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

    /// Writing populated memory takes (nearly) no page fault; writing memory just mapped takes
    /// one per page. Both are fresh anonymous mappings, so neither holds pages the allocator
    /// had already touched.
    #[cfg(target_os = "linux")]
    #[test]
    fn writing_populated_memory_takes_no_page_faults() {
        const LEN: usize = 4 << 20;
        let write = |populate_first: bool| {
            let mut map = memmap2::MmapMut::map_anon(LEN).unwrap();
            // 4 KiB pages, as the copy's blocks get, even where huge pages are the default.
            map.advise(memmap2::Advice::NoHugePage).unwrap();
            if populate_first {
                populate_pages(map.as_mut_ptr() as usize, LEN);
            }
            let before = minor_faults();
            map.fill(7);
            let faults = minor_faults() - before;
            assert!(map.iter().all(|&byte| byte == 7));
            faults
        };
        let plain = write(false);
        let populated = write(true);
        assert!(
            plain >= (LEN / 4096 / 2) as i64,
            "plain memory faulted {plain} times"
        );
        assert!(populated <= 4, "populated memory faulted {populated} times");
    }
}
