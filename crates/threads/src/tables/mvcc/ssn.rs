//! The Serial Safety Net's commit, in parallel: what a committer announces, whom it waits
//! for, and how it computes its exclusion window (Wang et al., VLDB Journal 2017, §3 and its
//! parallel commit; ERMIA, SIGMOD 2016).
//!
//! ```text
//!   committer T (stamp c)                         what others see of T
//!   ─────────────────────                         ────────────────────
//!   Committing; lock writes (first committer wins)
//!   mark each overwritten version: sstamp = T     an overwriter in flight
//!   set T's bit in each read version's readers    a reader in flight
//!   c = clock + 1; Stamped(c)                     T's stamp
//!   phantoms: raise stamp(leaf) to c, then check every scanned leaf's version
//!   pi  = min(c, pi of each overwriter of what T read, if stamped below c: wait for its pi)
//!   eta = max(creators of what T read, readers of what T overwrites stamped below c,
//!             their pstamps, stamp(leaf) of each key T inserted anew)
//!   pi <= eta: abort (Serialization).  Else Committed(pi):
//!   install; each overwritten version's sstamp = pi          (final)
//!   each read version: pstamp = max(pstamp, c), clear T's bit (after overwriters
//!                      stamped below c have decided, so they never see c)
//! ```
//!
//! Waits only ever go from a larger stamp to a smaller one (a committer waits for the pi of an
//! overwriter stamped before it, never for anyone stamped after), or from a transaction
//! without a stamp (a reader, a read-only committer) to a committer that has one, so there is
//! no cycle of waits. Every wait is a [`Spin`], so the interleaving simulator can run the
//! awaited worker. No lock or word is shared by all committers except the clock, which each
//! update transaction increments once.
//!
//! ## Read-only transactions
//! A transaction that wrote nothing commits at its snapshot: it is serialized just after the
//! last commit it sees (stamp `S + 1/2`), so every version it read was written before it and
//! every overwriter of one comes after it. It takes no stamp, marks or bits: at commit it
//! raises the pstamp of every version it read to `S` and then checks each of them (each
//! scanned leaf's stamp it raised to `S` when it looked). An overwriter that computes its eta
//! after that raise sees `S` and aborts itself if `pi <= S`; one that computed it before
//! cannot have missed the reader and gone unnoticed, because the reader's check follows its
//! raise (store then load on both sides): it waits for an overwriter in flight to decide, and
//! aborts if any overwriter committed with `pi <= S`. Its leaves it validates like any
//! scanner.
//!
//! An update transaction raises the pstamps of what it read only after it installs, to its
//! own stamp, as SSN prescribes. Reads themselves write nothing shared: raising a version's
//! pstamp at every read (as this engine did before) made each read of a hot version a write
//! to a line the other workers read too, and told overwriters about readers that account for
//! them at their own commit anyway (through pi, from the overwriter's sstamp).

use std::sync::atomic::{Ordering, fence};

use ordo_harness::AbortCause;

use super::chain::{StampWords, stamp_words};
use super::slots::Phase;
use super::{MvccTables, MvccWorker};
use crate::protocol::Spin;

/// The sstamp bit that makes the word name an overwriter in flight (its slot below).
pub const MARK: u64 = 1 << 63;
/// The slot bits of a mark.
const MARK_SLOT: u64 = 0xFFFF;
/// Largest number of workers under SSN: a version's readers are one word of bits.
pub const SSN_WORKERS_MAX: usize = 64;

/// The SSN words of an update transaction's reads and writes, looked up once when it announces
/// and used again by its exclusion window, its install and its post-commit (looking a
/// version's words up in each pass went through the version arena every time: 7% of an SSN
/// transaction's instructions on ycsb at θ = 0.99).
#[derive(Debug)]
pub struct CommitWords<'a> {
    /// The reads' words (`None` for a read of a version the attempt overwrites itself), then
    /// the writes' (`None` for a write that takes no lock).
    words: Vec<Option<StampWords<'a>>>,
    reads: usize,
}

impl<'a> CommitWords<'a> {
    /// The words of read `index`, unless the attempt overwrites that version itself.
    #[inline]
    fn read(&self, index: usize) -> Option<StampWords<'a>> {
        self.words[index]
    }

    /// The words of the version write `index` overwrites, if the write takes a lock.
    #[inline]
    pub(super) fn write(&self, index: usize) -> Option<StampWords<'a>> {
        self.words[self.reads + index]
    }
}

/// The overwriter of a version, as a committer sees it.
enum Overwriter {
    /// Nobody, or someone stamped after the bound (it accounts for us), or someone who gave up.
    NoneBefore,
    /// Someone committed, with this pi.
    Committed(u64),
}

impl MvccTables {
    /// Raises `word` to at least `stamp` (a pstamp or a leaf stamp).
    #[inline]
    pub(super) fn raise(word: &std::sync::atomic::AtomicU64, stamp: u64) {
        if word.load(Ordering::SeqCst) < stamp {
            word.fetch_max(stamp, Ordering::SeqCst);
        }
    }

    /// Who overwrote the version whose sstamp word is `sstamp`: waits for an overwriter
    /// stamped at or below `bound` to decide.
    fn overwriter(&self, sstamp: &std::sync::atomic::AtomicU64, own: usize, bound: u64) -> Overwriter {
        let mut spin = Spin::default();
        loop {
            let seen = sstamp.load(Ordering::SeqCst);
            if seen == super::NO_SUCCESSOR {
                return Overwriter::NoneBefore;
            }
            if seen & MARK == 0 {
                // Final: that overwriter committed (maybe stamped after us: using its pi
                // anyway only makes our window smaller, never wrong).
                return Overwriter::Committed(seen);
            }
            let slot = (seen & MARK_SLOT) as usize;
            if slot == own {
                return Overwriter::NoneBefore;
            }
            let status = self.slots.observe(slot);
            if sstamp.load(Ordering::SeqCst) != seen {
                continue;
            }
            match status.phase {
                Phase::Stamped | Phase::Committed if status.cstamp > bound => return Overwriter::NoneBefore,
                Phase::Committed => return Overwriter::Committed(status.sstamp),
                // Its stamp is being drawn and may be below ours, or it is deciding.
                Phase::Committing | Phase::Stamped => spin.wait(),
                // The mark is older than the status (that attempt gave up, or a later one of
                // the same worker has not announced yet: it will be stamped after us).
                Phase::Idle | Phase::Active | Phase::Aborted => return Overwriter::NoneBefore,
            }
        }
    }

    /// The largest stamp below `cstamp` of a reader registered in `readers` (other than
    /// `own`); readers that finished raised the pstamp before leaving, readers stamped after
    /// `cstamp` account for us themselves.
    fn committing_readers(&self, readers: &std::sync::atomic::AtomicU64, own: usize, cstamp: u64) -> u64 {
        let mut bits = readers.load(Ordering::SeqCst) & !(1 << own);
        let mut eta = 0;
        while bits != 0 {
            let reader = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let mut spin = Spin::default();
            loop {
                let status = self.slots.observe(reader);
                if readers.load(Ordering::SeqCst) & (1 << reader) == 0 {
                    break;
                }
                match status.phase {
                    Phase::Committing => spin.wait(),
                    Phase::Stamped | Phase::Committed if status.cstamp < cstamp => {
                        eta = eta.max(status.cstamp);
                        break;
                    }
                    _ => break,
                }
            }
        }
        eta
    }

    /// Whether the read at `index` of `worker` is of a record the attempt overwrites itself
    /// (first committer wins then guarantees it read the version it overwrites). Known once
    /// [`MvccTables::announce`] has run, which looks each read up in the sorted write set once
    /// for the three passes that ask (looking it up in every pass cost a tenth of an SSN
    /// transaction's instructions on ycsb).
    fn read_overwritten(worker: &MvccWorker, index: usize) -> bool {
        debug_assert!(worker.announced, "asked before announce");
        worker.reads[index].overwritten
    }

    /// The SSN words of read `index`.
    fn read_words(&self, worker: &MvccWorker, index: usize) -> StampWords<'_> {
        let read = &worker.reads[index];
        stamp_words(self.db.table(read.table), read.rid, read.target)
    }

    /// The SSN words of the version write `index` overwrites.
    fn write_words(&self, worker: &MvccWorker, index: usize) -> StampWords<'_> {
        let write = &worker.writes[index];
        stamp_words(self.db.table(write.table), write.rid, write.target)
    }

    /// Marks every version the attempt overwrites and registers it among the readers of
    /// every version it read (before it draws its stamp); returns the words it looked up, for
    /// the rest of the commit.
    pub(super) fn announce(&self, worker: &mut MvccWorker) -> CommitWords<'_> {
        let mut words = Vec::with_capacity(worker.reads.len() + worker.writes.len());
        let bit = 1u64 << worker.slot;
        for index in 0..worker.reads.len() {
            let read = worker.reads[index];
            let overwritten =
                worker.locked_write(read.table, read.key).is_some_and(|w| worker.writes[w].rid == read.rid);
            worker.reads[index].overwritten = overwritten;
            words.push((!overwritten).then(|| self.read_words(worker, index)));
        }
        let mark = MARK | worker.slot as u64;
        for index in 0..worker.writes.len() {
            let write = worker.writes[index].locks().then(|| self.write_words(worker, index));
            if let Some(write) = write {
                debug_assert_eq!(write.sstamp.load(Ordering::Relaxed), super::NO_SUCCESSOR);
                write.sstamp.store(mark, Ordering::SeqCst);
            }
            words.push(write);
        }
        for read in words[..worker.reads.len()].iter().flatten() {
            read.readers.fetch_or(bit, Ordering::SeqCst);
        }
        worker.announced = true;
        CommitWords { words, reads: worker.reads.len() }
    }

    /// Withdraws what [`MvccTables::announce`] did (the attempt aborts).
    pub(super) fn withdraw(&self, worker: &mut MvccWorker) {
        if !worker.announced {
            return;
        }
        let mark = MARK | worker.slot as u64;
        for index in 0..worker.writes.len() {
            if worker.writes[index].locks() {
                let words = self.write_words(worker, index);
                let _ = words.sstamp.compare_exchange(mark, super::NO_SUCCESSOR, Ordering::SeqCst, Ordering::SeqCst);
            }
        }
        let bit = 1u64 << worker.slot;
        for index in 0..worker.reads.len() {
            if !Self::read_overwritten(worker, index) {
                self.read_words(worker, index).readers.fetch_and(!bit, Ordering::SeqCst);
            }
        }
        worker.announced = false;
    }

    /// The exclusion window of an update transaction stamped `cstamp`: its pi, if `pi > eta`.
    pub(super) fn exclusion_window(
        &self,
        worker: &MvccWorker,
        words: &CommitWords<'_>,
        cstamp: u64,
    ) -> Result<u64, AbortCause> {
        let own = worker.slot;
        // Phantoms first: raise every scanned leaf's stamp, then check nobody changed it.
        for &(table, leaf) in &worker.nodes {
            Self::raise(self.db.table(table).index.stamp(leaf.leaf), cstamp);
        }
        fence(Ordering::SeqCst);
        for &(table, leaf) in &worker.nodes {
            if self.db.table(table).index.version(leaf.leaf) != leaf.version {
                return Err(AbortCause::Conflict);
            }
        }
        let mut eta = worker.eta_reads;
        let mut pi = cstamp;
        for index in 0..worker.reads.len() {
            let Some(read) = words.read(index) else { continue };
            if let Overwriter::Committed(successor) = self.overwriter(read.sstamp, own, cstamp) {
                pi = pi.min(successor);
                if pi <= eta {
                    return Err(AbortCause::Serialization);
                }
            }
        }
        for index in 0..worker.writes.len() {
            let Some(overwritten) = words.write(index) else { continue };
            let write = &worker.writes[index];
            eta = eta.max(self.committing_readers(overwritten.readers, own, cstamp));
            let pstamp = overwritten.pstamp.load(Ordering::SeqCst);
            debug_assert!(pstamp < cstamp, "pstamp {pstamp} of a version overwritten at {cstamp}");
            eta = eta.max(pstamp.min(cstamp - 1));
            if write.new_entry {
                // A scanner that missed this key raised its leaf's stamp before validating.
                fence(Ordering::SeqCst);
                let index = &self.db.table(write.table).index;
                let stamp = index.stamp(index.leaf_of(write.key).leaf).load(Ordering::SeqCst);
                eta = eta.max(stamp.min(cstamp - 1));
            }
            if pi <= eta {
                return Err(AbortCause::Serialization);
            }
        }
        Ok(pi)
    }

    /// After installing: stamps every version the attempt read with `cstamp` and leaves its
    /// readers, once overwriters stamped before it have decided (they never see `cstamp`).
    pub(super) fn post_commit(&self, worker: &mut MvccWorker, words: &CommitWords<'_>, cstamp: u64) {
        let own = worker.slot;
        let bit = 1u64 << own;
        for index in 0..worker.reads.len() {
            let Some(words) = words.read(index) else { continue };
            let mut spin = Spin::default();
            loop {
                let seen = words.sstamp.load(Ordering::SeqCst);
                if seen == super::NO_SUCCESSOR || seen & MARK == 0 || (seen & MARK_SLOT) as usize == own {
                    break;
                }
                let status = self.slots.observe((seen & MARK_SLOT) as usize);
                if words.sstamp.load(Ordering::SeqCst) != seen {
                    continue;
                }
                let deciding =
                    status.phase == Phase::Committing || (status.phase == Phase::Stamped && status.cstamp < cstamp);
                if !deciding {
                    break;
                }
                spin.wait();
            }
            Self::raise(words.pstamp, cstamp);
            words.readers.fetch_and(!bit, Ordering::SeqCst);
        }
        worker.announced = false;
    }

    /// The commit check of a read-only transaction serialized at its snapshot (see the module
    /// docs): raises the pstamp of every version it read to its snapshot, then checks.
    pub(super) fn check_read_only(&self, worker: &MvccWorker) -> Result<(), AbortCause> {
        for index in 0..worker.reads.len() {
            Self::raise(self.read_words(worker, index).pstamp, worker.snapshot);
        }
        fence(Ordering::SeqCst);
        for &(table, leaf) in &worker.nodes {
            if self.db.table(table).index.version(leaf.leaf) != leaf.version {
                return Err(AbortCause::Conflict);
            }
        }
        for index in 0..worker.reads.len() {
            let words = self.read_words(worker, index);
            if let Overwriter::Committed(successor) = self.overwriter(words.sstamp, worker.slot, u64::MAX)
                && successor <= worker.snapshot
            {
                return Err(AbortCause::Serialization);
            }
        }
        Ok(())
    }
}
