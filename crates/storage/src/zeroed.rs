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
//! `Box<[AtomicU64]>` cannot hold memory of another allocator on stable Rust, so this module
//! owns the allocation itself; it is the storage crate's only `unsafe` code, and `cargo miri
//! test -p ordo-storage zeroed` checks it.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

/// A fixed-length array of `AtomicU64`, zero when allocated, freed on drop. Dereferences to a
/// slice, like the `Box<[AtomicU64]>` it stands for.
#[derive(Debug)]
pub(crate) struct ZeroedWords {
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
    pub(crate) fn new(len: usize) -> ZeroedWords {
        let layout = Self::layout(len);
        // SAFETY: `layout` has a non-zero size (at least one word, see `layout`).
        let raw = unsafe { System.alloc_zeroed(layout) };
        // The allocator returns memory aligned to `layout.align()`, `AtomicU64`'s alignment.
        #[allow(clippy::cast_ptr_alignment)]
        let Some(ptr) = NonNull::new(raw.cast::<AtomicU64>()) else {
            std::alloc::handle_alloc_error(layout);
        };
        ZeroedWords { ptr, len }
    }

    /// The allocation's layout: `len` words, at least one so the size is never zero. The
    /// alignment is `AtomicU64`'s (8), which keeps `System` on `calloc`.
    fn layout(len: usize) -> Layout {
        Layout::array::<AtomicU64>(len.max(1)).expect("arena chunk larger than the address space")
    }
}

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
