//! Thread-aware assignment (§4.2, last part): split a batch over worker threads so that
//! conflicting transactions run on the same thread, one after another, instead of aborting
//! each other on different threads.
//!
//! Two transactions *conflict* when one writes a key the other reads or writes. Threads are
//! filled one at a time, each up to its capacity:
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

use foldhash::HashMap;

use crate::bitset::{self, OnesAnd};
use crate::error::ReorderError;
use crate::graph::Footprint;

/// Assigns batches to threads, reusing its scratch space.
#[derive(Debug, Default)]
pub struct ThreadAssigner {
    /// Key -> index of its list in `lists`, for the keys of the current batch only (cleared
    /// per batch, so the cost of a batch does not grow with every key ever seen).
    accessors: HashMap<u64, u32>,
    /// (transaction, wrote it) entries, one list per key of the batch; the first `lists_used`
    /// are live, the rest keep their capacity for later batches.
    lists: Vec<Vec<(u32, bool)>>,
    lists_used: usize,
    /// The accessor lists of each transaction's distinct keys, back to back.
    key_lists: Vec<u32>,
    /// Where each transaction's entries in `key_lists` start (and, last, where they end).
    key_bounds: Vec<usize>,
    conflicts: Vec<u64>,
    words: usize,
    unassigned: Vec<u64>,
    conflicts_with_thread: Vec<u32>,
    shared_with_thread: Vec<u32>,
    conflicts_with_rest: Vec<u32>,
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
        let n = batch.len();
        out.resize_with(capacities.len(), Vec::new);
        for (thread, &capacity) in out.iter_mut().zip(capacities) {
            thread.clear();
            self.conflicts_with_thread.iter_mut().for_each(|c| *c = 0);
            self.shared_with_thread.iter_mut().for_each(|c| *c = 0);
            for picked in 0..capacity {
                let mut best: Option<(usize, (u32, u32, u32))> = None;
                for v in bitset::Ones::new(&self.unassigned) {
                    let rank = if picked == 0 {
                        (0, 0, self.conflicts_with_rest[v])
                    } else {
                        (self.conflicts_with_thread[v], self.shared_with_thread[v], self.conflicts_with_rest[v])
                    };
                    if best.is_none_or(|(_, best_rank)| rank > best_rank) {
                        best = Some((v, rank));
                    }
                }
                let (v, _) = best.expect("capacities sum to the batch size");
                self.take(v);
                thread.push(v);
            }
        }
        debug_assert!(bitset::is_empty(&self.unassigned));
        debug_assert_eq!(out.iter().map(Vec::len).sum::<usize>(), n);
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

    fn index<F: Footprint>(&mut self, batch: &[F]) {
        let n = batch.len();
        self.words = bitset::words_for(n);
        self.accessors.clear();
        self.lists[..self.lists_used].iter_mut().for_each(Vec::clear);
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
                        accessors.push((txn, wrote));
                        self.key_lists.push(list);
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
        for &list in &self.key_lists[self.key_bounds[v]..self.key_bounds[v + 1]] {
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
}
