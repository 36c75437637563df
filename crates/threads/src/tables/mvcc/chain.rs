//! Version chains: finding the version a snapshot sees, and cutting off versions no snapshot
//! can see any more.
//!
//! ```text
//!   head ── newest ──> [c 40 | tombstone] ── older ──> [c 25 | row] ── older ──> [c 0 | row] ── none
//!
//!   snapshot 30 reads c 25; snapshot 50 reads the tombstone (absent); snapshot 45 with the
//!   head locked by a committer stamped 48 reads past the lock, with a committer unstamped or
//!   stamped 44 waits for it.
//! ```
//!
//! A version is immutable once linked except for its SSN words and its `older` link, which
//! only a holder of the head's lock changes (to cut the chain). Linking is one release store
//! of the head's `newest` word after the version is written, so a reader that sees the link
//! sees the whole version. Cut-off versions and dead records are retired through the epoch
//! guard, and every attempt is pinned, so an id a reader holds is not reused under it.

use std::sync::atomic::{AtomicU64, Ordering};

use ordo_harness::AbortCause;
use ordo_storage::epoch::Guard;

use super::super::database::versioned::{
    ABSENT_PSTAMP, ABSENT_READERS, ABSENT_SSTAMP, COUNT, CSTAMP, INLINE, INLINE_BUSY, NEWEST, NO_VERSION, OLDER,
    PSTAMP, READERS, SEQ, SSTAMP, TRUNCATED, VERSION_HEADER_WORDS,
};
use super::super::database::{ABSENT, META_WORD, Table};
use super::slots::Slots;
use crate::protocol::Spin;

/// The lock bit of a head's meta word.
pub const LOCK: u64 = 1 << 63;
/// The dead bit: the record left its index and will be recycled.
pub const DEAD: u64 = 1 << 62;
/// The lock holder's worker slot, below the flag bits.
pub const OWNER_MASK: u64 = 0xFFFF;

/// What an SSN read or write is about: a version, or a record's absent pseudo-version (the
/// key as it was before the record's first version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Version(u64),
    Absent,
}

/// The SSN words of a [`Target`].
#[derive(Debug, Clone, Copy)]
pub struct StampWords<'a> {
    pub pstamp: &'a AtomicU64,
    pub sstamp: &'a AtomicU64,
    pub readers: &'a AtomicU64,
}

/// The SSN words of `target` in record `rid` of `table`.
#[inline]
pub fn stamp_words(table: &Table, rid: u64, target: Target) -> StampWords<'_> {
    match target {
        Target::Version(id) => {
            let words = table.version(id);
            StampWords { pstamp: &words[PSTAMP], sstamp: &words[SSTAMP], readers: &words[READERS] }
        }
        Target::Absent => {
            let words = table.record(rid);
            StampWords { pstamp: &words[ABSENT_PSTAMP], sstamp: &words[ABSENT_SSTAMP], readers: &words[ABSENT_READERS] }
        }
    }
}

/// The version of a record a snapshot sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Visible {
    pub target: Target,
    /// `[absent | version]` of the version (`ABSENT` alone for the pseudo-version).
    pub seq: u64,
    /// Its commit stamp (0 for the pseudo-version).
    pub cstamp: u64,
    /// Whether it is the newest committed state of the record (no newer version exists).
    pub newest: bool,
}

impl Visible {
    /// Whether the row is present in this version.
    #[inline]
    pub fn present(&self) -> bool {
        self.seq & ABSENT == 0
    }
}

/// The version of record `rid` that a snapshot at `snapshot` sees, its row copied into `row`
/// if present and asked for; `Ok(None)` if the record is dead (look the key up again). Waits
/// while a committer that may be stamped at or below `snapshot` holds the record.
///
/// # Errors
/// [`AbortCause::SnapshotTooOld`] if the version the snapshot needs was cut off.
pub fn visible(
    slots: &Slots,
    table: &Table,
    rid: u64,
    snapshot: u64,
    mut row: Option<&mut [u64]>,
) -> Result<Option<Visible>, AbortCause> {
    let head = table.record(rid);
    let mut spin = Spin::default();
    loop {
        let meta = head[META_WORD].load(Ordering::SeqCst);
        if meta & DEAD != 0 {
            return Ok(None);
        }
        if meta & LOCK != 0 && !slots.stamped_after((meta & OWNER_MASK) as usize, snapshot) {
            spin.wait();
            continue;
        }
        let mut id = head[NEWEST].load(Ordering::Acquire);
        let mut newest = true;
        loop {
            if id == NO_VERSION {
                return Ok(Some(Visible { target: Target::Absent, seq: ABSENT, cstamp: 0, newest }));
            }
            if id == TRUNCATED {
                return Err(AbortCause::SnapshotTooOld);
            }
            let version = table.version(id);
            let cstamp = version[CSTAMP].load(Ordering::Acquire);
            if cstamp <= snapshot {
                let seq = version[SEQ].load(Ordering::Acquire);
                if seq & ABSENT == 0
                    && let Some(row) = row.as_deref_mut()
                {
                    for (out, word) in row.iter_mut().zip(&version[VERSION_HEADER_WORDS..]) {
                        *out = word.load(Ordering::Relaxed);
                    }
                }
                return Ok(Some(Visible { target: Target::Version(id), seq, cstamp, newest }));
            }
            newest = false;
            id = version[OLDER].load(Ordering::Acquire);
        }
    }
}

/// Locks head `words` for worker `owner` unless the record is dead (then `None`); returns the
/// meta word it had.
pub fn lock_live(words: &[AtomicU64], owner: usize) -> Option<u64> {
    let mut spin = Spin::default();
    loop {
        let meta = words[META_WORD].load(Ordering::Relaxed);
        if meta & DEAD != 0 {
            return None;
        }
        if meta & LOCK == 0
            && words[META_WORD]
                .compare_exchange_weak(meta, LOCK | owner as u64, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
        {
            return Some(meta);
        }
        spin.wait();
    }
}

/// Unlocks a head.
#[inline]
pub fn unlock(words: &[AtomicU64]) {
    words[META_WORD].store(0, Ordering::Release);
}

/// Versions cut off a chain, and where they go.
#[derive(Debug)]
pub struct Cuttings<'a> {
    /// Versions no snapshot can reach: below a version every snapshot from the low-water
    /// mark on reads, so no reader walks to them. Reused at once.
    pub unreachable: &'a mut Vec<u64>,
    /// Versions an old snapshot may still be reading: retired through this guard.
    pub guard: &'a Guard,
    /// How many were retired through the guard (the caller flushes now and then).
    pub deferred: &'a mut usize,
}

/// Cuts the chain of the locked head `head` below the newest version every snapshot from
/// `low_water` on can read, or, if that is further down, below its `keep_max`-th version
/// whatever the snapshots (a reader that needs a version cut that way gets
/// `SnapshotTooOld`). Returns how many versions were cut.
pub fn cut(table: &Table, head: &[AtomicU64], low_water: u64, keep_max: u64, cuttings: &mut Cuttings<'_>) -> u64 {
    let mut id = head[NEWEST].load(Ordering::Relaxed);
    let mut kept = 0;
    while id != NO_VERSION && id != TRUNCATED {
        let version = table.version(id);
        kept += 1;
        let older = version[OLDER].load(Ordering::Relaxed);
        let unreachable = version[CSTAMP].load(Ordering::Relaxed) <= low_water;
        if unreachable || kept >= keep_max {
            if older == NO_VERSION || older == TRUNCATED {
                return 0;
            }
            version[OLDER].store(TRUNCATED, Ordering::Release);
            let mut inline_busy = head[COUNT].load(Ordering::Relaxed) & INLINE_BUSY;
            let mut cut = 0;
            let mut id = older;
            while id != NO_VERSION && id != TRUNCATED {
                let older = table.version(id)[OLDER].load(Ordering::Relaxed);
                match (id & INLINE != 0, unreachable) {
                    // The inline slot is free again once nobody can reach it; cut off from a
                    // snapshot that may still read it, it stays busy for the record's life.
                    (true, true) => inline_busy = 0,
                    (true, false) => {}
                    (false, true) => cuttings.unreachable.push(id),
                    (false, false) => {
                        table.versions().retire(id, cuttings.guard);
                        *cuttings.deferred += 1;
                    }
                }
                cut += 1;
                id = older;
            }
            head[COUNT].store(kept | inline_busy, Ordering::Relaxed);
            return cut;
        }
        id = older;
    }
    0
}

/// Retires version `id` and every older version linked from it (but the inline slot, which
/// goes with its record); returns how many.
pub fn retire_chain(table: &Table, mut id: u64, guard: &Guard) -> u64 {
    let mut retired = 0;
    while id != NO_VERSION && id != TRUNCATED {
        let older = table.version(id)[OLDER].load(Ordering::Relaxed);
        if id & INLINE == 0 {
            table.versions().retire(id, guard);
            retired += 1;
        }
        id = older;
    }
    retired
}

/// The version id a new version of record `rid` (locked) gets: its inline slot if free
/// (then marked busy), else a spare or a fresh side version.
pub fn new_version(table: &Table, rid: u64, head: &[AtomicU64], spare: &mut Vec<u64>) -> u64 {
    let count = head[COUNT].load(Ordering::Relaxed);
    if count & INLINE_BUSY == 0 {
        head[COUNT].store(count | INLINE_BUSY, Ordering::Relaxed);
        return INLINE | rid;
    }
    spare.pop().unwrap_or_else(|| table.versions().alloc())
}
