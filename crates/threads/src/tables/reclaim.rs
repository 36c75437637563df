//! Reclamation of absent records, shared by the single-version protocols over tables (Silo,
//! TicToc, 2PL, serial): tombstones left by committed deletes and placeholders left by
//! aborted inserts leave the index, and their ids return to the arena, an epoch after they
//! were left.
//!
//! ```text
//!   attempt inserts k (no record)  ──> created += placeholder
//!   attempt aborts                 ──> pending += created (left absent at version 0)
//!   commit installs a tombstone    ──> pending += (record, its absent seq word, epoch)
//!   a later begin, epoch passed    ──> claim the record (the protocol's lock), check it still
//!        holds the key and the seq word it was left with, raise retired_version_max,
//!        index.remove, mark it dead (the protocol's dead bit), retire its id via the epoch
//! ```
//!
//! Only the worker that left a record absent reclaims it, so each candidate has one owner; a
//! record that was reused (an insert made it present again, its seq word moved) or already
//! reclaimed by another owner (dead) is dropped. Workers pin the epoch for the whole of each
//! attempt, so a record id found in the index is not recycled while an attempt can look at
//! it; the table's `retired_version_max`, raised before the record leaves the index, keeps a
//! key's versions increasing across its lives.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use ordo_storage::TableId;
use ordo_storage::epoch::Guard;

use super::database::{Database, KEY_WORD, SEQ_WORD, VERSION_MASK};

/// Most reclamation candidates a worker looks at when a transaction begins.
pub const RECLAIM_PER_BEGIN_MAX: usize = 16;

/// A reclamation candidate: a record a worker left absent.
#[derive(Debug, Clone, Copy)]
pub struct Pending {
    pub table: TableId,
    pub key: u64,
    pub rid: u64,
    /// The record's seq word when it was left absent: a candidate whose record has changed
    /// since (reused by an insert, or reclaimed by another worker and recycled) is dropped.
    pub seq: u64,
    /// The epoch it was left in.
    pub epoch: u64,
}

/// What the protocol's lock said about a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Locked; the meta word it had.
    Locked(u64),
    /// Already dead (reclaimed by another worker): never touch it again.
    Dead,
    /// Held by a transaction: try again later.
    Busy,
}

/// One worker's reclamation state.
#[derive(Debug, Default)]
pub struct Reclaimer {
    /// Placeholders the current attempt put into an index.
    created: Vec<Pending>,
    /// Candidates, oldest first.
    pending: VecDeque<Pending>,
}

impl Reclaimer {
    /// The current attempt put a placeholder (absent, version 0) into an index.
    #[inline]
    pub fn created(&mut self, table: TableId, key: u64, rid: u64, seq: u64) {
        self.created.push(Pending { table, key, rid, seq, epoch: 0 });
    }

    /// A commit left `rid` absent with seq word `seq` in `epoch`.
    #[inline]
    pub fn left_absent(&mut self, table: TableId, key: u64, rid: u64, seq: u64, epoch: u64) {
        self.pending.push_back(Pending { table, key, rid, seq, epoch });
    }

    /// The attempt ended without installing: its placeholders become candidates.
    pub fn abandon_created(&mut self, epoch: u64) {
        for mut placeholder in self.created.drain(..) {
            placeholder.epoch = epoch;
            self.pending.push_back(placeholder);
        }
    }

    /// The attempt committed: its placeholders were installed (or left absent by the commit,
    /// which made them candidates itself).
    #[inline]
    pub fn forget_created(&mut self) {
        self.created.clear();
    }

    /// The attempt committed: its placeholders that are still absent as it made them (an own
    /// insert deleted again) become candidates left in `epoch`; the others were installed.
    pub fn settle_created(&mut self, db: &Database, epoch: u64) {
        for mut placeholder in self.created.drain(..) {
            let words = db.table(placeholder.table).record(placeholder.rid);
            if words[SEQ_WORD].load(Ordering::Relaxed) == placeholder.seq {
                placeholder.epoch = epoch;
                self.pending.push_back(placeholder);
            }
        }
    }

    /// Candidates waiting.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Reclaims up to [`RECLAIM_PER_BEGIN_MAX`] candidates at least one epoch old (every one,
    /// whatever its epoch, when `everything`). `claim` locks a record the protocol's way;
    /// `release(words, meta, dead)` unlocks it, restoring `meta`, marked dead if `dead`.
    pub fn reclaim(
        &mut self,
        db: &Database,
        guard: &Guard,
        everything: bool,
        mut claim: impl FnMut(&[AtomicU64]) -> Claim,
        mut release: impl FnMut(&[AtomicU64], u64, bool),
    ) {
        let epoch = db.epoch();
        let mut budget = if everything { self.pending.len() } else { RECLAIM_PER_BEGIN_MAX };
        while budget > 0 {
            let Some(&candidate) = self.pending.front() else { break };
            if !everything && candidate.epoch + 1 >= epoch {
                break;
            }
            self.pending.pop_front();
            budget -= 1;
            let table = db.table(candidate.table);
            let words = table.record(candidate.rid);
            // A dead record was reclaimed by another worker that also left it absent; it may
            // be recycled at any time, so it is never locked here.
            let meta = match claim(words) {
                Claim::Locked(meta) => meta,
                Claim::Dead => continue,
                Claim::Busy => {
                    self.pending.push_back(candidate);
                    continue;
                }
            };
            let reclaimable = words[SEQ_WORD].load(Ordering::Relaxed) == candidate.seq
                && words[KEY_WORD].load(Ordering::Relaxed) == candidate.key
                && {
                    table.raise_retired_version(candidate.seq & VERSION_MASK);
                    table.index.remove(candidate.key, candidate.rid)
                };
            release(words, meta, reclaimable);
            if reclaimable {
                table.records.retire(candidate.rid, guard);
            }
        }
    }
}
