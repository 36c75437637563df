//! Arena chunks come from the system allocator, never from the process's global allocator
//! (module `zeroed`): a global allocator that reuses freed memory clears a zeroed request with
//! a `memset`, which for a chunk of gigabytes allocated under a record's lock stalled every
//! worker for seconds. This test binary counts what goes through its global allocator.

use std::alloc::System;
use std::sync::atomic::Ordering;

use ordo_storage::Records;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn a_large_chunk_bypasses_the_global_allocator() {
    const RECORDS: u64 = 1 << 20;
    let region = Region::new(GLOBAL);
    // A first chunk of 2^20 records of one 64-byte line: 64 MiB.
    let records = Records::new(8, RECORDS);
    let id = records.alloc();
    records.words(id)[0].store(7, Ordering::Relaxed);
    let last = RECORDS - 1;
    assert!(records.get(last).is_some(), "the first chunk holds {RECORDS} records");
    let through_global = region.change().bytes_allocated;
    assert!(through_global < 1 << 20, "{through_global} bytes went through the global allocator for a 64 MiB chunk");
    assert_eq!(records.words(id)[0].load(Ordering::Relaxed), 7);
}
