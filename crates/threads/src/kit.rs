//! The protocol kit: the three lock-word moves Silo, TicToc and the MVCC protocols share,
//! written once.
//!
//! Every record (or version chain) has one 64-bit protocol word whose top bit is a write
//! lock; the other 63 bits belong to the protocol (Silo's TID, TicToc's `wts`/`rts`, the
//! MVCC ring's installed-version count). The kit only ever touches the lock bit.
//!
//! ```text
//!   optimistic_read   w1 = word (wait while locked) ─ copy ─ fence ─ w2 = word; retry unless w1 == w2
//!   lock_sorted       write set sorted by key; lock entry i, count it (prefix i+1), ask the
//!                     protocol's check; a failing check unlocks the prefix and aborts
//!   unlock_prefix     clear the lock bit of the first `locked` entries, in order
//! ```
//!
//! The invariant: a worker's `locked` counter is exactly the number of write-set entries,
//! from the front of the sorted write set, whose lock bit it holds. Locking in one global
//! (key) order rules out deadlock between committers, as in Silo's commit protocol (Tu et
//! al., SOSP 2013, §4.4). Every spin goes through [`Spin`], the one place a waiting worker
//! backs off.

use std::sync::atomic::{AtomicU64, Ordering, fence};

use ordo_workload::{Key, Requests};

use crate::protocol::{Abort, Recording, Spin, WriteSet};
use crate::store::{self, RecordData, Records, Table, VisitRecords};

/// The write-lock bit of every protocol word.
pub const LOCK: u64 = 1 << 63;

/// In a read-set entry's word: the transaction writes this key too. A word an optimistic read
/// returns never holds the lock bit (the read waits for an unlocked word), so the bit is free;
/// validation then knows the lock it finds on the key is its own without searching the write
/// set. Only a one-shot transaction sets it (its writes are promised, not hinted).
pub const MINE: u64 = LOCK;

/// A seqlock read: waits until `word` is unlocked, runs `copy`, and returns the word and the
/// copy once the word is unchanged across the copy (so the copy is one committed state).
#[expect(clippy::inline_always, reason = "measured: see `Record::read_data`")]
#[inline(always)]
pub fn optimistic_read<T>(word: &AtomicU64, mut copy: impl FnMut() -> T) -> (u64, T) {
    let mut spin = Spin::default();
    loop {
        let before = word.load(Ordering::Acquire);
        if before & LOCK != 0 {
            spin.wait();
            continue;
        }
        let copied = copy();
        fence(Ordering::Acquire);
        if word.load(Ordering::Relaxed) == before {
            return (before, copied);
        }
    }
}

/// A one-shot transaction's accesses for an optimistic protocol (Silo, TicToc): each request
/// that reads is read by [`optimistic_read`] into `reads` as `(key, word)`, with [`MINE`] when
/// the request also writes; each request that writes is buffered without a look-up (the keys
/// are distinct). The records are asked for ahead of their reads ([`store::records_ahead`]),
/// and the loop runs over records of a fixed shape where the table has one
/// ([`store::TableView::visit`]). What is left is the protocol's commit.
#[inline]
pub fn optimistic_requests(
    table: &Table,
    requests: Requests<'_>,
    reads: &mut Vec<(Key, u64)>,
    writes: &mut WriteSet,
    payload: &mut [u64],
    recording: &mut Recording,
) {
    // Without a history to record, a copy of the loop without the recording checks.
    if recording.enabled() {
        table.view().visit(payload, OptimisticRequests::<true> { requests, reads, writes, recording });
    } else {
        table.view().visit(payload, OptimisticRequests::<false> { requests, reads, writes, recording });
    }
}

/// The loop of [`optimistic_requests`], recording the reads when `RECORD`.
struct OptimisticRequests<'a, 'r, const RECORD: bool> {
    requests: Requests<'r>,
    reads: &'a mut Vec<(Key, u64)>,
    writes: &'a mut WriteSet,
    recording: &'a mut Recording,
}

impl<'t, const RECORD: bool> VisitRecords<'t> for OptimisticRequests<'_, 't, RECORD> {
    type Output = ();

    #[inline]
    fn visit<R: Records<'t>>(self, records: R, payload: &mut R::Payload) {
        let OptimisticRequests { requests, reads, writes, recording } = self;
        for (i, (key, record)) in store::records_ahead(records, requests.keys).enumerate() {
            let read = if requests.reads(i) {
                let (word, (value, seq)) = optimistic_read(record.meta(), || record.read_data(payload));
                reads.push((key, if requests.writes(i) { word | MINE } else { word }));
                if RECORD {
                    recording.read(key, seq);
                }
                value
            } else {
                0
            };
            if requests.writes(i) {
                writes.push_new(key, requests.written_value(i, read));
            }
        }
    }
}

/// Sorts `writes` by key and locks each entry's word in that order, counting the locked
/// prefix in `locked`. After each lock, `check(key, word before locking)` may refuse
/// the transaction: then the prefix is unlocked and the abort returned.
#[inline]
pub fn lock_sorted<'w>(
    writes: &mut WriteSet,
    locked: &mut usize,
    word_of: impl Fn(Key) -> &'w AtomicU64,
    mut check: impl FnMut(Key, u64) -> Result<(), Abort>,
) -> Result<(), Abort> {
    writes.sort();
    for i in 0..writes.entries.len() {
        let key = writes.entries[i].0;
        let word = word_of(key);
        let mut spin = Spin::default();
        let before = loop {
            let current = word.load(Ordering::Relaxed);
            if current & LOCK == 0
                && word.compare_exchange_weak(current, current | LOCK, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                break current;
            }
            spin.wait();
        };
        *locked = i + 1;
        if let Err(abort) = check(key, before) {
            unlock_prefix(writes, locked, &word_of);
            return Err(abort);
        }
    }
    Ok(())
}

/// Releases the locks of the first `locked` write-set entries and resets the counter.
#[inline]
pub fn unlock_prefix<'w>(writes: &WriteSet, locked: &mut usize, word_of: impl Fn(Key) -> &'w AtomicU64) {
    for &(key, _) in &writes.entries[..*locked] {
        let word = word_of(key);
        word.store(word.load(Ordering::Relaxed) & !LOCK, Ordering::Release);
    }
    *locked = 0;
}
