//! Thread-aware assignment (§4.2, last part): split a batch over worker threads so that
//! conflicting transactions run on the same thread, one after another, instead of aborting
//! each other on different threads.
//!
//! Two transactions *conflict* when one writes a key the other reads or writes. Threads are
//! filled one at a time:
//!
//! ```text
//! first pick : the unassigned transaction with the most conflicts among the unassigned
//! next picks : the unassigned transaction with, in order of precedence,
//!              1. the most conflicts with this thread's transactions,
//!              2. the most keys shared with this thread's transactions,
//!              3. the most conflicts with the other unassigned transactions
//! ```
//!
//! Ties go to the earlier batch position. All three counters are maintained incrementally, so
//! a pick is one `O(n)` scan and filling all threads costs `O(n² + Σ accessors per key²)`.
//!
//! ## Sticky assignment: conflicts across batches
//!
//! The paper assigns each batch on its own, with exact capacities. An engine whose threads
//! run batch after batch loses two things that way. A conflict cluster that outlives a batch
//! (TPC-C's warehouse: every NewOrder and Payment of it conflicts with every other) lands on
//! whichever thread is filled first, so from one batch to the next it changes threads, and
//! the tail of the old share races the head of the new one on the other thread. And an exact
//! split cannot follow the clusters' sizes, which vary from batch to batch: with two
//! warehouses of random transactions, three batches of ten in four put at least one
//! transaction of a warehouse on the other warehouse's thread.
//!
//! [`ThreadAssigner::assign_sticky`] takes, per thread, the keys of the shares it was given
//! lately, each weighed by how many of their transactions access it, the latest share
//! counting most (its *recent keys*, kept by [`ThreadAssigner::remember`]), and a *slack*: a thread may take from `(1 - slack)` to
//! `(1 + slack)` times an even share. A thread's *claim* on a transaction is the weight of
//! its recent keys the transaction conflicts with, and it *owns* the transaction when that
//! claim is at least [`OWNERSHIP_RATIO`] times every other thread's, so that the one
//! transaction of a cluster that crossed over last time does not make the cluster two
//! threads'. Claims count as conflicts with the thread in the ranking above, and a thread
//! picks the transactions it owns before any other. Within the slack, a thread stops early
//! when the best transaction left is owned by a later thread, and goes past an even share
//! only for transactions it owns. A cluster that every thread claims about equally (a hot
//! key) has no owner and is split evenly as before: the slack must not load one thread with
//! the whole batch. Over many batches the clusters' sizes even out, so the imbalance the
//! slack allows is the engine's to absorb (its threads take over each other's shares).

use foldhash::HashMap;

use crate::bitset::{self, OnesAnd};
use crate::error::ReorderError;
use crate::graph::Footprint;

/// One of a thread's recent keys (see [`ThreadAssigner::remember`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecentKey {
    pub key: u64,
    /// Whether a transaction the thread was given writes it.
    pub wrote: bool,
    /// Transactions of the latest share that access it, plus half the weight it had before.
    pub weight: u32,
}

/// The keys of the shares a thread was given lately, the latest weighing most.
pub type RecentKeys = Vec<RecentKey>;

/// A thread *owns* a transaction when its claim (the weights of its recent keys the
/// transaction conflicts with) is at least this many times every other thread's claim.
pub const OWNERSHIP_RATIO: u32 = 2;

/// Assigns batches to threads, reusing its scratch space.
#[derive(Debug, Default)]
pub struct ThreadAssigner {
    /// Key -> index of its list in `lists`, for the keys of the current batch only (cleared
    /// per batch, so the cost of a batch does not grow with every key ever seen).
    accessors: HashMap<u64, u32>,
    /// (transaction, wrote it) entries, one list per key of the batch; the first `lists_used`
    /// are live, the rest keep their capacity for later batches.
    lists: Vec<Vec<(u32, bool)>>,
    /// The key of each live list.
    list_keys: Vec<u64>,
    lists_used: usize,
    /// Each transaction's distinct keys as (list, position of its entry in the list), back to
    /// back.
    key_lists: Vec<(u32, u32)>,
    /// Where each transaction's entries in `key_lists` start (and, last, where they end).
    key_bounds: Vec<usize>,
    conflicts: Vec<u64>,
    words: usize,
    unassigned: Vec<u64>,
    conflicts_with_thread: Vec<u32>,
    shared_with_thread: Vec<u32>,
    conflicts_with_rest: Vec<u32>,
    /// Per thread, then per transaction: the weights of the thread's recent keys the
    /// transaction conflicts with.
    claims: Vec<u32>,
    /// Per transaction, the thread that owns it.
    owners: Vec<Option<usize>>,
    /// Per key of the batch, its entry in the recent keys [`Self::remember`] is updating.
    list_slots: Vec<u32>,
}

/// How far one thread's share may go: at least `lower`, past `nominal` (an even share of
/// what is left) only for transactions it owns, at most `upper`.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    lower: usize,
    nominal: usize,
    upper: usize,
}

impl ThreadAssigner {
    pub fn new() -> Self {
        ThreadAssigner::default()
    }

    /// Splits `batch` over threads; thread `t` receives exactly `capacities[t]` transactions,
    /// written to `out[t]` in the order they were picked.
    pub fn assign<F: Footprint>(
        &mut self,
        batch: &[F],
        capacities: &[usize],
        out: &mut Vec<Vec<usize>>,
    ) -> Result<(), ReorderError> {
        let capacity: usize = capacities.iter().sum();
        if capacity != batch.len() {
            return Err(ReorderError::CapacityMismatch { capacity, batch: batch.len() });
        }
        self.index(batch);
        self.claim(capacities.len(), &[]);
        out.resize_with(capacities.len(), Vec::new);
        for (thread, &capacity) in capacities.iter().enumerate() {
            self.fill(thread, Bounds { lower: capacity, nominal: capacity, upper: capacity }, &mut out[thread]);
        }
        debug_assert!(bitset::is_empty(&self.unassigned));
        Ok(())
    }

    /// Splits `batch` over `threads` threads as evenly as possible (the first
    /// `len % threads` threads get one more).
    pub fn assign_evenly<F: Footprint>(
        &mut self,
        batch: &[F],
        threads: usize,
        out: &mut Vec<Vec<usize>>,
    ) -> Result<(), ReorderError> {
        if threads == 0 {
            return Err(ReorderError::InvalidConfig { field: "threads", reason: "must be at least 1".into() });
        }
        let base = batch.len() / threads;
        let extra = batch.len() % threads;
        let capacities: Vec<usize> = (0..threads).map(|t| base + usize::from(t < extra)).collect();
        self.assign(batch, &capacities, out)
    }

    /// Splits `batch` over `recent.len()` threads, keeping conflicts that span batches on one
    /// thread (see the module's essay): `recent[t]` holds thread `t`'s recent keys (see
    /// [`Self::remember`]; empty for none), and each thread takes between `(1 - slack)` and
    /// `(1 + slack)` times an even share of the batch. With no recent keys and no slack this
    /// is [`Self::assign_evenly`].
    pub fn assign_sticky<F: Footprint>(
        &mut self,
        batch: &[F],
        recent: &[RecentKeys],
        slack: f64,
        out: &mut Vec<Vec<usize>>,
    ) -> Result<(), ReorderError> {
        let threads = recent.len();
        if threads == 0 {
            return Err(ReorderError::InvalidConfig { field: "threads", reason: "must be at least 1".into() });
        }
        if !(0.0..=1.0).contains(&slack) {
            return Err(ReorderError::InvalidConfig {
                field: "slack",
                reason: format!("{slack} is not within 0 to 1"),
            });
        }
        let n = batch.len();
        self.index(batch);
        self.claim(threads, recent);
        // Every thread may take from `least` to `most`; as threads are filled, each one's
        // bounds shrink so that what is left still fits the threads left.
        let even = n as f64 / threads as f64;
        let least = (even * (1.0 - slack)).floor() as usize;
        let most = ((even * (1.0 + slack)).ceil() as usize).min(n);
        out.resize_with(threads, Vec::new);
        let mut left = n;
        for (thread, share) in out.iter_mut().enumerate() {
            let after = threads - thread - 1;
            let lower = least.max(left.saturating_sub(after * most));
            let upper = most.min(left - after * least);
            let nominal = left.div_ceil(after + 1).clamp(lower, upper);
            self.fill(thread, Bounds { lower, nominal, upper }, share);
            left -= share.len();
        }
        debug_assert!(bitset::is_empty(&self.unassigned));
        Ok(())
    }

    /// Folds `share` (transactions of the batch assigned last) into a thread's recent keys:
    /// the weights already there halve (a key whose weight reaches zero is forgotten), then
    /// every key of the share gains one per transaction of the share that accesses it, and is
    /// marked written if one writes it. The halving lets a thread that was handed a few
    /// transactions of another cluster (the slack's minimum) keep its claim on its own.
    pub fn remember(&mut self, share: &[usize], recent: &mut RecentKeys) {
        self.list_slots.clear();
        self.list_slots.resize(self.lists_used, u32::MAX);
        recent.retain_mut(|kept| {
            kept.weight /= 2;
            kept.weight > 0
        });
        for (slot, kept) in recent.iter().enumerate() {
            if let Some(&list) = self.accessors.get(&kept.key) {
                self.list_slots[list as usize] = slot as u32;
            }
        }
        for &v in share {
            for &(list, at) in &self.key_lists[self.key_bounds[v]..self.key_bounds[v + 1]] {
                let (list, wrote) = (list as usize, self.lists[list as usize][at as usize].1);
                match self.list_slots[list] {
                    u32::MAX => {
                        self.list_slots[list] = recent.len() as u32;
                        recent.push(RecentKey { key: self.list_keys[list], wrote, weight: 1 });
                    }
                    slot => {
                        let kept = &mut recent[slot as usize];
                        kept.wrote |= wrote;
                        kept.weight += 1;
                    }
                }
            }
        }
    }

    /// The thread that owns transaction `v` (see [`OWNERSHIP_RATIO`]), if one does.
    fn owner(&self, v: usize, threads: usize) -> Option<usize> {
        let n = self.conflicts_with_thread.len();
        let claim = |thread: usize| self.claims[thread * n + v];
        let strongest = (0..threads).max_by_key(|&thread| (claim(thread), std::cmp::Reverse(thread)))?;
        let owns = claim(strongest) > 0
            && (0..threads).all(|other| other == strongest || claim(other) * OWNERSHIP_RATIO <= claim(strongest));
        owns.then_some(strongest)
    }

    /// Fills `share` for `thread` within `bounds`, picking by the module's ranking, the
    /// transactions this thread owns first.
    fn fill(&mut self, thread: usize, bounds: Bounds, share: &mut Vec<usize>) {
        let n = self.conflicts_with_thread.len();
        share.clear();
        self.conflicts_with_thread.iter_mut().for_each(|c| *c = 0);
        self.shared_with_thread.iter_mut().for_each(|c| *c = 0);
        while share.len() < bounds.upper {
            let mut best: Option<(usize, (bool, u32, u32, u32))> = None;
            for v in bitset::Ones::new(&self.unassigned) {
                let owned = self.owners[v] == Some(thread);
                let rank = (
                    owned,
                    self.conflicts_with_thread[v] + self.claims[thread * n + v],
                    self.shared_with_thread[v],
                    self.conflicts_with_rest[v],
                );
                if best.is_none_or(|(_, best_rank)| rank > best_rank) {
                    best = Some((v, rank));
                }
            }
            let (v, _) = best.expect("the bounds leave a transaction for every pick");
            // Within the bounds, stop where the best transaction left belongs to a later
            // thread, and past an even share unless it belongs to this one.
            if share.len() >= bounds.lower {
                let owner = self.owners[v];
                if owner.is_some_and(|owner| owner > thread) || share.len() >= bounds.nominal && owner != Some(thread) {
                    break;
                }
            }
            self.take(v);
            share.push(v);
        }
    }

    /// Counts each transaction's claims by each thread's recent keys (none when `recent` is
    /// empty) and finds its owner.
    fn claim(&mut self, threads: usize, recent: &[RecentKeys]) {
        let n = self.conflicts_with_thread.len();
        self.claims.clear();
        self.claims.resize(threads * n, 0);
        for (thread, keys) in recent.iter().enumerate() {
            let claims = &mut self.claims[thread * n..(thread + 1) * n];
            for recent in keys {
                let Some(&list) = self.accessors.get(&recent.key) else { continue };
                for &(v, v_wrote) in &self.lists[list as usize] {
                    if recent.wrote || v_wrote {
                        claims[v as usize] += recent.weight;
                    }
                }
            }
        }
        self.owners.clear();
        for v in 0..n {
            let owner = if recent.is_empty() { None } else { self.owner(v, threads) };
            self.owners.push(owner);
        }
    }

    fn index<F: Footprint>(&mut self, batch: &[F]) {
        let n = batch.len();
        self.words = bitset::words_for(n);
        self.accessors.clear();
        self.lists[..self.lists_used].iter_mut().for_each(Vec::clear);
        self.list_keys.clear();
        self.lists_used = 0;
        self.key_lists.clear();
        self.key_bounds.clear();
        self.key_bounds.push(0);
        for (txn, footprint) in batch.iter().enumerate() {
            let txn = txn as u32;
            let accesses =
                footprint.write_keys().map(|key| (key, true)).chain(footprint.read_keys().map(|key| (key, false)));
            for (key, wrote) in accesses {
                let next = self.lists_used as u32;
                let list = *self.accessors.entry(key).or_insert(next);
                if list == next {
                    self.lists_used += 1;
                    self.list_keys.push(key);
                    if self.lists.len() < self.lists_used {
                        self.lists.push(Vec::new());
                    }
                }
                // A transaction's entries in a list are adjacent (transactions are indexed one
                // at a time), so a repeated key only updates whether it was written.
                let accessors = &mut self.lists[list as usize];
                match accessors.last_mut() {
                    Some((last, last_wrote)) if *last == txn => *last_wrote |= wrote,
                    _ => {
                        self.key_lists.push((list, accessors.len() as u32));
                        accessors.push((txn, wrote));
                    }
                }
            }
            self.key_bounds.push(self.key_lists.len());
        }
        self.conflicts.clear();
        self.conflicts.resize(n * self.words, 0);
        let words = self.words;
        for list in &self.lists[..self.lists_used] {
            for (i, &(a, a_wrote)) in list.iter().enumerate() {
                for &(b, b_wrote) in &list[i + 1..] {
                    if a_wrote || b_wrote {
                        let (a, b) = (a as usize, b as usize);
                        bitset::insert(&mut self.conflicts[a * words..(a + 1) * words], b);
                        bitset::insert(&mut self.conflicts[b * words..(b + 1) * words], a);
                    }
                }
            }
        }
        self.unassigned.clear();
        self.unassigned.resize(words, 0);
        bitset::fill(&mut self.unassigned, n);
        self.conflicts_with_thread.clear();
        self.conflicts_with_thread.resize(n, 0);
        self.shared_with_thread.clear();
        self.shared_with_thread.resize(n, 0);
        self.conflicts_with_rest.clear();
        self.conflicts_with_rest
            .extend((0..n).map(|v| bitset::count(&self.conflicts[v * words..(v + 1) * words]) as u32));
    }

    fn take(&mut self, v: usize) {
        let words = self.words;
        bitset::remove(&mut self.unassigned, v);
        for u in OnesAnd::new(&self.conflicts[v * words..(v + 1) * words], &self.unassigned) {
            self.conflicts_with_thread[u] += 1;
            self.conflicts_with_rest[u] -= 1;
        }
        for &(list, _) in &self.key_lists[self.key_bounds[v]..self.key_bounds[v + 1]] {
            for &(u, _) in &self.lists[list as usize] {
                if bitset::contains(&self.unassigned, u as usize) {
                    self.shared_with_thread[u as usize] += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::TxnFootprint;

    #[test]
    fn conflicting_transactions_share_a_thread() {
        // 0, 2 and 4 fight over key 1; 1, 3 and 5 over key 2.
        let batch: Vec<TxnFootprint> = (0..6)
            .map(|i| {
                let key = 1 + (i % 2) as u64;
                TxnFootprint::new(vec![key], vec![key])
            })
            .collect();
        let mut out = Vec::new();
        ThreadAssigner::new().assign_evenly(&batch, 2, &mut out).unwrap();
        let mut threads: Vec<Vec<usize>> = out
            .into_iter()
            .map(|mut t| {
                t.sort_unstable();
                t
            })
            .collect();
        threads.sort();
        assert_eq!(threads, vec![vec![0, 2, 4], vec![1, 3, 5]]);
    }

    #[test]
    fn capacities_must_cover_the_batch() {
        let batch = vec![TxnFootprint::new(vec![1], vec![])];
        let err = ThreadAssigner::new().assign(&batch, &[2], &mut Vec::new()).unwrap_err();
        assert_eq!(err, ReorderError::CapacityMismatch { capacity: 2, batch: 1 });
    }

    /// `a` transactions that write key 1 (cluster A), then `b` that write key 2 (cluster B).
    fn two_clusters(a: usize, b: usize) -> Vec<TxnFootprint> {
        (0..a + b).map(|i| TxnFootprint::new(vec![], vec![if i < a { 1 } else { 2 }])).collect()
    }

    /// Recent keys of weight 1.
    fn keys(keys: &[(u64, bool)]) -> RecentKeys {
        keys.iter().map(|&(key, wrote)| RecentKey { key, wrote, weight: 1 }).collect()
    }

    fn sorted(shares: &[Vec<usize>]) -> Vec<Vec<usize>> {
        shares
            .iter()
            .map(|share| {
                let mut share = share.clone();
                share.sort_unstable();
                share
            })
            .collect()
    }

    #[test]
    fn a_cluster_stays_on_the_thread_that_ran_it() {
        let batch = two_clusters(3, 3);
        // Thread 0 ran cluster B last, thread 1 cluster A: the even split keeps them there,
        // although thread 0 alone would have taken A (the earlier transactions) first.
        let recent = vec![keys(&[(2, true)]), keys(&[(1, false)])];
        let mut out = Vec::new();
        ThreadAssigner::new().assign_sticky(&batch, &recent, 0.0, &mut out).unwrap();
        assert_eq!(sorted(&out), vec![vec![3, 4, 5], vec![0, 1, 2]]);
        ThreadAssigner::new().assign_evenly(&batch, 2, &mut out).unwrap();
        assert_eq!(sorted(&out)[0], vec![0, 1, 2], "without recent keys, the first cluster goes first");
    }

    #[test]
    fn the_slack_keeps_uneven_clusters_whole() {
        let batch = two_clusters(7, 3);
        let recent = vec![keys(&[(1, true)]), keys(&[(2, true)])];
        let mut out = Vec::new();
        let mut assigner = ThreadAssigner::new();
        assigner.assign_sticky(&batch, &recent, 0.5, &mut out).unwrap();
        assert_eq!(sorted(&out), vec![(0..7).collect::<Vec<_>>(), vec![7, 8, 9]]);
        // Thread 1 claims the small cluster and thread 0 stops early: the same shares.
        let recent = vec![keys(&[(2, true)]), keys(&[(1, true)])];
        assigner.assign_sticky(&batch, &recent, 0.5, &mut out).unwrap();
        assert_eq!(sorted(&out), vec![vec![7, 8, 9], (0..7).collect::<Vec<_>>()]);
        // Without slack the split is even, so two of A cross over.
        assigner.assign_sticky(&batch, &recent, 0.0, &mut out).unwrap();
        assert_eq!(out.iter().map(Vec::len).collect::<Vec<_>>(), vec![5, 5]);
        // The slack bounds the imbalance: at 0.2 a share of ten over two holds 4 to 6.
        assigner.assign_sticky(&batch, &recent, 0.2, &mut out).unwrap();
        assert_eq!(out.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 6]);
    }

    #[test]
    fn ownership_needs_a_claim_twice_every_other() {
        let batch = two_clusters(7, 3);
        let weighted = |a: u32, b: u32| {
            vec![
                vec![RecentKey { key: 1, wrote: true, weight: a }, RecentKey { key: 2, wrote: true, weight: b }],
                vec![RecentKey { key: 1, wrote: true, weight: b }, RecentKey { key: 2, wrote: true, weight: a }],
            ]
        };
        let mut out = Vec::new();
        let mut assigner = ThreadAssigner::new();
        // Thread 0 ran four of A and one of B last: it owns A, thread 1 owns B.
        assigner.assign_sticky(&batch, &weighted(4, 1), 0.5, &mut out).unwrap();
        assert_eq!(sorted(&out), vec![(0..7).collect::<Vec<_>>(), vec![7, 8, 9]]);
        // Three against two is no ownership: the split stays even.
        assigner.assign_sticky(&batch, &weighted(3, 2), 0.5, &mut out).unwrap();
        assert_eq!(out.iter().map(Vec::len).collect::<Vec<_>>(), vec![5, 5]);
    }

    #[test]
    fn a_cluster_every_thread_claims_is_split_evenly() {
        let batch = two_clusters(10, 0);
        let recent = vec![keys(&[(1, true)]), keys(&[(1, true)])];
        let mut out = Vec::new();
        ThreadAssigner::new().assign_sticky(&batch, &recent, 1.0, &mut out).unwrap();
        assert_eq!(out.iter().map(Vec::len).collect::<Vec<_>>(), vec![5, 5]);
    }

    #[test]
    fn remembered_keys_are_distinct_weighed_and_fade() {
        let batch = vec![
            TxnFootprint::new(vec![5, 3], vec![9]),
            TxnFootprint::new(vec![9], vec![3]),
            TxnFootprint::new(vec![4], vec![]),
        ];
        let mut assigner = ThreadAssigner::new();
        let mut out = Vec::new();
        assigner.assign(&batch, &[2, 1], &mut out).unwrap();
        let key = |key, wrote, weight| RecentKey { key, wrote, weight };
        let mut recent = Vec::new();
        assigner.remember(&[0, 1], &mut recent);
        assert_eq!(recent, vec![key(9, true, 2), key(5, false, 1), key(3, true, 2)]);
        // Remembering the next share halves what was there (5 fades out) and adds the new.
        assigner.remember(&[2], &mut recent);
        assert_eq!(recent, vec![key(9, true, 1), key(3, true, 1), key(4, false, 1)]);
        assigner.remember(&[1], &mut recent);
        assert_eq!(recent, vec![key(3, true, 1), key(9, false, 1)]);
    }

    #[test]
    fn bad_sticky_input_is_an_error() {
        let batch = two_clusters(2, 2);
        let mut out = Vec::new();
        let mut assigner = ThreadAssigner::new();
        assert!(matches!(
            assigner.assign_sticky(&batch, &[], 0.1, &mut out),
            Err(ReorderError::InvalidConfig { field: "threads", .. })
        ));
        for slack in [-0.1, 1.5, f64::NAN] {
            assert!(matches!(
                assigner.assign_sticky(&batch, &[Vec::new(), Vec::new()], slack, &mut out),
                Err(ReorderError::InvalidConfig { field: "slack", .. })
            ));
        }
    }
}
