//! Histories for the tests: serial executions simulated from one seed, and an independent,
//! naive account of which dependencies a history implies.
//!
//! Every integration test file includes this module; not all of them use every helper.
#![allow(dead_code)]

use std::collections::BTreeMap;

use ordo_history::{CycleStep, DependencyKind, HistoryEntry};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Shape of a simulated serial execution.
#[derive(Debug, Clone, Copy)]
pub struct SerialConfig {
    pub transactions: usize,
    pub keys: u64,
    /// Operations (distinct keys touched) per transaction, at least 1.
    pub keys_per_transaction_max: usize,
    /// Share of transactions that only read, in percent.
    pub read_only_percent: u32,
}

pub fn rng(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// Transactions run one after another against a map key -> latest version. Each touches a few
/// distinct keys, reading (the latest version), writing blindly, or both (read-modify-write);
/// its writes install version `ts`, which grows with gaps. Ids are scrambled so that they say
/// nothing about the order. Returned in serial order.
pub fn serial_history(seed: u64, config: &SerialConfig) -> Vec<HistoryEntry> {
    assert!(config.keys > 0 && config.keys_per_transaction_max > 0);
    let mut rng = rng(seed);
    let mut latest = vec![0u64; config.keys as usize];
    let mut ts = 0u64;
    let mut entries = Vec::with_capacity(config.transactions);
    let mut keys: Vec<u64> = Vec::new();
    for position in 0..config.transactions as u64 {
        ts += rng.random_range(1..=3);
        let read_only = rng.random_range(0..100) < config.read_only_percent;
        let touched = rng.random_range(1..=config.keys_per_transaction_max);
        keys.clear();
        for _ in 0..touched {
            let key = rng.random_range(0..config.keys);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        for (index, &key) in keys.iter().enumerate() {
            // 0: read, 1: blind write, 2: read-modify-write; a writer writes at least once.
            let mut mode = if read_only { 0 } else { rng.random_range(0..3) };
            if !read_only && index + 1 == keys.len() && writes.is_empty() {
                mode = 2;
            }
            if mode != 1 {
                reads.push((key, latest[key as usize]));
                if rng.random_bool(0.05) {
                    reads.push((key, latest[key as usize]));
                }
            }
            if mode != 0 {
                writes.push((key, ts));
            }
        }
        reads.shuffle(&mut rng);
        writes.shuffle(&mut rng);
        for &(key, version) in &writes {
            latest[key as usize] = version;
        }
        let id = position.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        entries.push(HistoryEntry::new(id, reads, writes).with_ts(ts));
    }
    entries
}

/// The same entries in a random order (a history file need not be in commit order).
pub fn shuffled(mut entries: Vec<HistoryEntry>, seed: u64) -> Vec<HistoryEntry> {
    entries.shuffle(&mut rng(seed ^ 0x5EED));
    entries
}

/// Checks that every step of a reported cycle is a real dependency of `entries` and that the
/// steps close up, using a naive per-key index independent of the checker.
pub fn assert_cycle_is_real(entries: &[HistoryEntry], steps: &[CycleStep]) {
    assert!(!steps.is_empty(), "empty cycle");
    for (index, step) in steps.iter().enumerate() {
        let next = &steps[(index + 1) % steps.len()];
        assert_eq!(step.to, next.from, "steps {steps:?} do not chain");
        assert!(depends(entries, step), "{step:?} is not a dependency of the history");
    }
}

/// Whether `step` is a dependency of `entries`, found the slow way.
pub fn depends(entries: &[HistoryEntry], step: &CycleStep) -> bool {
    let entry = |id: u64| entries.iter().find(|entry| entry.id == id).expect("cycle names a known transaction");
    let (from, to) = (entry(step.from), entry(step.to));
    if from.id == to.id {
        return false;
    }
    let mut versions: BTreeMap<u64, u64> = BTreeMap::new(); // version of step.key -> writer
    for candidate in entries {
        for &(key, version) in &candidate.writes {
            if key == step.key {
                versions.insert(version, candidate.id);
            }
        }
    }
    let next_writer = |version: u64| versions.range(version + 1..).next().map(|(_, &writer)| writer);
    let versions_of = |list: &[(u64, u64)]| -> Vec<u64> {
        list.iter().filter(|&&(key, _)| key == step.key).map(|&(_, version)| version).collect()
    };
    match step.kind {
        DependencyKind::WriteWrite => versions_of(&from.writes).into_iter().any(|v| next_writer(v) == Some(to.id)),
        DependencyKind::WriteRead => {
            let read = versions_of(&to.reads);
            versions_of(&from.writes).into_iter().any(|v| read.contains(&v))
        }
        DependencyKind::ReadWrite => versions_of(&from.reads).into_iter().any(|v| next_writer(v) == Some(to.id)),
    }
}

/// Whether some serial order of `entries` installs every key's versions in increasing order
/// and has every read see the latest version installed before it (or the reader's own
/// write), tried over all permutations. For tiny histories only.
pub fn serializable_by_brute_force(entries: &[HistoryEntry]) -> bool {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    permutations_any(&mut order, 0, &mut |order| runs_serially(entries, order))
}

/// Whether running `entries` in `order` reproduces every read.
pub fn runs_serially(entries: &[HistoryEntry], order: &[usize]) -> bool {
    let mut latest: BTreeMap<u64, u64> = BTreeMap::new();
    for &position in order {
        let entry = &entries[position];
        for &(key, version) in &entry.reads {
            let seen = latest.get(&key).copied().unwrap_or(0);
            if version != seen && !entry.writes.contains(&(key, version)) {
                return false;
            }
        }
        for &(key, version) in &entry.writes {
            if version <= latest.get(&key).copied().unwrap_or(0) {
                return false;
            }
            latest.insert(key, version);
        }
    }
    true
}

fn permutations_any(items: &mut [usize], fixed: usize, test: &mut impl FnMut(&[usize]) -> bool) -> bool {
    if fixed == items.len() {
        return test(items);
    }
    for choice in fixed..items.len() {
        items.swap(fixed, choice);
        let found = permutations_any(items, fixed + 1, test);
        items.swap(fixed, choice);
        if found {
            return true;
        }
    }
    false
}
