//! The prefetch hint: ask the CPU to start loading a cache line that will be read soon.
//!
//! Records and index nodes of a large table are rarely in cache, and a transaction that
//! reads them one after another waits for one miss at a time. Where the next addresses are
//! known early (the keys of a step, the children a group of index descents will take next),
//! asking for their lines first lets the misses overlap: the core keeps about a dozen in
//! flight. Safe Rust has no prefetch instruction; plain loads would do the same but stall the
//! core once its load queue fills with waiting loads, where a prefetch retires at once.
//!
//! A prefetch reads and writes no memory, cannot fault, and has no effect a program can
//! observe other than time, so each use here is sound for any address of a live reference.
//! This is the crate's second and last `unsafe` module (the other is [`crate::zeroed`]);
//! `cargo miri test -p ordo-storage prefetch` runs its tests (Miri skips the instruction).
#![allow(unsafe_code)]

use std::sync::atomic::AtomicU64;

use crate::records::LINE_WORDS;

/// Asks the CPU to start loading the cache line holding `item` into every cache level (a
/// hint; a no-op on targets without a prefetch instruction, and under Miri).
#[inline]
pub fn line<T>(item: &T) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has. A prefetch reads and
    // writes no memory and never faults; the address is that of a live reference.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(item).cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = item;
}

/// Asks for every cache line of `words` (which should start on a line boundary, as records
/// and index nodes do), first line first.
#[inline]
pub fn lines(words: &[AtomicU64]) {
    words.iter().step_by(LINE_WORDS).for_each(line);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_prefetch_changes_nothing_it_touches() {
        let words: Vec<AtomicU64> = (0..40).map(AtomicU64::new).collect();
        lines(&words);
        lines(&words[3..17]);
        lines(&[]);
        line(&words[39]);
        let value = 5_u8;
        line(&value);
        assert!(words.iter().enumerate().all(|(index, word)| word.load(Ordering::Relaxed) == index as u64));
        assert_eq!(value, 5);
    }
}
