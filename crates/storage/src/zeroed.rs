//! Zeroed arrays of atomic words taken from the system allocator, for arena chunks.
//!
//! An arena's chunk is large (a 10M-record table's first chunk is about 2 GB) and must start
//! zeroed. The C library's `calloc` serves such a request with fresh pages from the kernel,
//! which are zero already: nothing is written, and a page is mapped only when a record on it
//! is first touched. A process's global allocator need not do that. ordo's binary runs on
//! mimalloc, which keeps the memory of a dropped arena and clears it with a `memset` when a
//! later arena asks for zeroed memory of that size. In one process that loads a database after
//! dropping another (every sweep of `ordo bench` and `ordo figures`), the first version a
//! multi-version table allocated during a run cleared 1.9 GB under a record's lock, and the
//! other worker waited on that lock: `mvcc_si` on 10M ycsb records committed nothing for 3.8 s
//! (BENCHMARKS.md, "mvcc_si's stalls"). So chunks bypass the global allocator and come from
//! [`System`], whose zeroed allocation is `calloc` for every alignment up to 16 bytes.
//!
//! An array of at least [`HUGE_PAGE_BYTES`] is also advised onto transparent huge pages
//! (`madvise(MADV_HUGEPAGE)` on Linux), which many kernels, this machine's included, grant only
//! to memory that asks. A B+tree leaf or a record of a table of millions is then one TLB entry
//! among a few hundred instead of one page walk per access: on 10M ycsb records behind the
//! ordered index, huge pages made Silo and no_wait 1.17-1.44x faster at θ = 0 and 1.01-1.20x
//! at θ = 0.99 (medians of three interleaved runs; BENCHMARKS.md, "The index's cost: huge
//! pages and group prefetching"). The advice is a hint: a kernel without
//! transparent huge pages refuses it, and the memory stays on small pages, zeroed as before.
//!
//! `Box<[AtomicU64]>` cannot hold memory of another allocator on stable Rust, so this module
//! owns the allocation itself; it is one of the storage crate's two `unsafe` modules (the
//! other is [`crate::prefetch`]), and `cargo miri test -p ordo-storage zeroed` checks it
//! (Miri skips the advice, a system call it does not model).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

/// Smallest array advised onto huge pages: one x86-64 huge page (2 MiB). A smaller array
/// cannot hold an aligned huge page whole.
pub const HUGE_PAGE_BYTES: usize = 2 << 20;

/// A fixed-length array of `AtomicU64`, zero when allocated, freed on drop. Dereferences to a
/// slice, like the `Box<[AtomicU64]>` it stands for. Arrays of [`HUGE_PAGE_BYTES`] or more
/// are advised onto transparent huge pages (see the module docs).
#[derive(Debug)]
pub struct ZeroedWords {
    ptr: NonNull<AtomicU64>,
    len: usize,
}

// SAFETY: `ZeroedWords` owns its allocation exactly as `Box<[AtomicU64]>` does, and
// `AtomicU64` is `Send` and `Sync`: moving the owner to another thread or sharing `&[AtomicU64]`
// between threads is what atomics are for.
unsafe impl Send for ZeroedWords {}
// SAFETY: as for `Send`: the only access through `&ZeroedWords` is `&[AtomicU64]`.
unsafe impl Sync for ZeroedWords {}

impl ZeroedWords {
    /// `len` zeroed words. Aborts through [`std::alloc::handle_alloc_error`] if the system has
    /// no memory for them, as `Box` does.
    ///
    /// # Panics
    /// If `len` words exceed `isize::MAX` bytes.
    pub fn new(len: usize) -> ZeroedWords {
        let layout = Self::layout(len);
        // SAFETY: `layout` has a non-zero size (at least one word, see `layout`).
        let raw = unsafe { System.alloc_zeroed(layout) };
        // The allocator returns memory aligned to `layout.align()`, `AtomicU64`'s alignment.
        #[allow(clippy::cast_ptr_alignment)]
        let Some(ptr) = NonNull::new(raw.cast::<AtomicU64>()) else {
            std::alloc::handle_alloc_error(layout);
        };
        advise_huge_pages(raw, layout.size());
        ZeroedWords { ptr, len }
    }

    /// The index of the first word that starts a block of `align_bytes` (a power of two, at
    /// least a word: a cache line, for arrays whose records must not share one). Callers that
    /// need `n` aligned words allocate `n` plus the words of one block less one.
    ///
    /// # Panics
    /// If `align_bytes` is not a power of two of at least a word.
    pub fn first_aligned_word(&self, align_bytes: usize) -> usize {
        let word = std::mem::size_of::<AtomicU64>();
        assert!(align_bytes.is_power_of_two() && align_bytes >= word, "alignment {align_bytes} bytes");
        let start = self.ptr.as_ptr().addr();
        (start.next_multiple_of(align_bytes) - start) / word
    }

    /// The allocation's layout: `len` words, at least one so the size is never zero. The
    /// alignment is `AtomicU64`'s (8), which keeps `System` on `calloc`.
    fn layout(len: usize) -> Layout {
        Layout::array::<AtomicU64>(len.max(1)).expect("arena chunk larger than the address space")
    }
}

/// Asks the kernel to back the whole pages of the `bytes` bytes at `start` with transparent
/// huge pages, if they span at least one huge page. Ignores a refusal (the advice is a hint).
#[cfg(all(target_os = "linux", not(miri)))]
fn advise_huge_pages(start: *mut u8, bytes: usize) {
    if bytes < HUGE_PAGE_BYTES {
        return;
    }
    // SAFETY: `sysconf` only reads a configuration value.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(0);
    if page == 0 || !page.is_power_of_two() {
        return;
    }
    let first = start.addr().next_multiple_of(page);
    let end = (start.addr() + bytes) & !(page - 1);
    if end.saturating_sub(first) < HUGE_PAGE_BYTES {
        return;
    }
    // SAFETY: `[first, end)` is whole pages inside the live allocation that starts at `start`
    // and spans `bytes` bytes, which this module owns. `MADV_HUGEPAGE` changes only how the
    // kernel backs those pages, never their contents (zero until written) nor their mapping's
    // lifetime, so no Rust reference can observe it.
    let _refused = unsafe { libc::madvise(start.with_addr(first).cast(), end - first, libc::MADV_HUGEPAGE) };
}

/// Huge pages are a Linux advice; elsewhere (and under Miri) arrays keep the system's pages.
#[cfg(not(all(target_os = "linux", not(miri))))]
fn advise_huge_pages(_start: *mut u8, _bytes: usize) {}

impl Deref for ZeroedWords {
    type Target = [AtomicU64];

    #[inline]
    fn deref(&self) -> &[AtomicU64] {
        // SAFETY: `ptr` is the start of a live allocation of at least `len` words, aligned for
        // `AtomicU64` (its layout's alignment), that this value owns until it drops. Every word
        // is initialized: it was zeroed, and all-zero bytes are a valid `AtomicU64`. Through
        // `&[AtomicU64]` the words change only by atomic operations, which is sound to share.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for ZeroedWords {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `System.alloc_zeroed` with exactly this layout (`len` never
        // changes), and it is freed once: here, when its only owner drops.
        unsafe { System.dealloc(self.ptr.as_ptr().cast::<u8>(), Self::layout(self.len)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn words_start_zero_and_keep_what_is_stored() {
        let words = ZeroedWords::new(1000);
        assert_eq!(words.len(), 1000);
        assert!(words.iter().all(|word| word.load(Ordering::Relaxed) == 0));
        for (index, word) in words.iter().enumerate() {
            word.store(index as u64 * 3, Ordering::Relaxed);
        }
        assert!(words.iter().enumerate().all(|(index, word)| word.load(Ordering::Relaxed) == index as u64 * 3));
        assert_eq!(words.as_ptr().addr() % std::mem::align_of::<AtomicU64>(), 0);
    }

    #[test]
    fn the_first_aligned_word_starts_a_block_within_the_first_block() {
        for len in [1, 7, 8, 100, 4096] {
            let words = ZeroedWords::new(len);
            for align_bytes in [8, 16, 64, 128, 4096] {
                let first = words.first_aligned_word(align_bytes);
                let addr = words.as_ptr().addr() + first * 8;
                assert_eq!(addr % align_bytes, 0, "{len} words, {align_bytes}-byte blocks");
                assert!(first < align_bytes / 8, "{len} words, {align_bytes}-byte blocks: word {first}");
            }
        }
    }

    /// The kernel's flags of the mapping that holds `addr`, from `/proc/self/smaps`.
    #[cfg(all(target_os = "linux", not(miri)))]
    fn mapping_flags(addr: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("Linux has /proc/self/smaps");
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((low, high)) = range.split_once('-')
                && let (Ok(low), Ok(high)) = (usize::from_str_radix(low, 16), usize::from_str_radix(high, 16))
            {
                inside = (low..high).contains(&addr);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.trim().to_owned();
            }
        }
        panic!("no mapping holds {addr:#x}");
    }

    #[test]
    #[cfg(all(target_os = "linux", not(miri)))]
    fn a_large_array_is_advised_onto_huge_pages() {
        // Whether the kernel grants huge pages depends on its settings; the advice itself shows
        // as the mapping's `hg` flag whatever they are.
        let large = ZeroedWords::new(4 * HUGE_PAGE_BYTES / 8);
        let middle = large.as_ptr().addr() + 2 * HUGE_PAGE_BYTES;
        assert!(mapping_flags(middle).split(' ').any(|flag| flag == "hg"), "{}", mapping_flags(middle));
        large[2 * HUGE_PAGE_BYTES / 8].store(7, Ordering::Relaxed);
        assert!(
            large
                .iter()
                .enumerate()
                .all(|(index, word)| word.load(Ordering::Relaxed) == u64::from(index == HUGE_PAGE_BYTES / 4) * 7)
        );
    }

    #[test]
    fn an_empty_array_allocates_one_word_and_frees_it() {
        let words = ZeroedWords::new(0);
        assert!(words.is_empty());
    }

    #[test]
    fn threads_share_the_words_and_the_array_moves_between_threads() {
        let words = std::sync::Arc::new(ZeroedWords::new(64));
        std::thread::scope(|scope| {
            for _ in 0..2 {
                let words = &words;
                scope.spawn(move || {
                    for word in words.iter() {
                        word.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert!(words.iter().all(|word| word.load(Ordering::Relaxed) == 2));
        let owned = std::sync::Arc::into_inner(words).expect("the threads are done");
        let back = std::thread::spawn(move || owned.iter().map(|word| word.load(Ordering::Relaxed)).sum::<u64>());
        assert_eq!(back.join().unwrap(), 128);
    }
}
