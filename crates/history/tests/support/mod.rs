//! Histories for the tests: serial executions simulated from one seed, and an independent,
//! naive account of which dependencies a history implies.
//!
//! Every integration test file includes this module; not all of them use every helper.
#![allow(dead_code)]

use std::collections::BTreeMap;

use ordo_history::{CycleStep, DependencyKind, HistoryEntry, WriteEffect};
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
    let row = (step.table, step.key);
    // version of the step's key -> (writer, effect)
    let mut versions: BTreeMap<u64, (u64, WriteEffect)> = BTreeMap::new();
    for candidate in entries {
        for (access, effect) in candidate.all_writes() {
            if (access.table, access.key) == row {
                versions.insert(access.version, (candidate.id, effect));
            }
        }
    }
    let next_writer = |version: u64| versions.range(version + 1..).next().map(|(_, &(writer, _))| writer);
    let written_by = |entry: &HistoryEntry| -> Vec<u64> {
        entry
            .all_writes()
            .filter(|(access, _)| (access.table, access.key) == row)
            .map(|(access, _)| access.version)
            .collect()
    };
    let read_by = |entry: &HistoryEntry| -> Vec<u64> {
        if step.phantom.is_some() {
            return absent_version_read(entry, step, &versions).into_iter().collect();
        }
        let mut read: Vec<u64> = entry
            .reads
            .iter()
            .filter(|access| (access.table, access.key) == row)
            .map(|access| access.version)
            .collect();
        for scan in entry.scans.iter().filter(|scan| scan.table == step.table) {
            read.extend(scan.rows.iter().filter(|&&(key, _)| key == step.key).map(|&(_, version)| version));
        }
        read
    };
    match step.kind {
        DependencyKind::WriteWrite => written_by(from).into_iter().any(|v| next_writer(v) == Some(to.id)),
        DependencyKind::WriteRead => {
            let read = read_by(to);
            written_by(from).into_iter().any(|v| read.contains(&v))
        }
        DependencyKind::ReadWrite => read_by(from).into_iter().any(|v| next_writer(v) == Some(to.id)),
    }
}

/// The version `entry` read by seeing the step's key absent in a scan over the step's range:
/// its only absent version (version 0 if its first write is an insert, and every delete).
fn absent_version_read(
    entry: &HistoryEntry,
    step: &CycleStep,
    versions: &BTreeMap<u64, (u64, WriteEffect)>,
) -> Option<u64> {
    let range = step.phantom?;
    let saw_absent = entry.scans.iter().any(|scan| {
        scan.table == step.table
            && (scan.low, scan.high) == (range.low, range.high)
            && (scan.low..=scan.high).contains(&step.key)
            && scan.rows.iter().all(|&(key, _)| key != step.key)
    });
    let initially_absent = versions.values().next().is_some_and(|&(_, effect)| effect == WriteEffect::Insert);
    let mut absent: Vec<u64> = versions
        .iter()
        .filter(|(_, (_, effect))| *effect == WriteEffect::Delete)
        .map(|(&version, _)| version)
        .collect();
    if initially_absent {
        absent.push(0);
    }
    (saw_absent && absent.len() == 1).then(|| absent[0])
}

/// Whether some serial order of `entries` installs every key's versions in increasing order
/// and has every point read see the latest version installed before it (or the reader's own
/// write), tried over all permutations. For tiny histories of point reads and updates only.
pub fn serializable_by_brute_force(entries: &[HistoryEntry]) -> bool {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    permutations_any(&mut order, 0, &mut |order| runs_serially(entries, order))
}

/// Whether running `entries` in `order` reproduces every point read.
pub fn runs_serially(entries: &[HistoryEntry], order: &[usize]) -> bool {
    let mut latest: BTreeMap<(u16, u64), u64> = BTreeMap::new();
    for &position in order {
        let entry = &entries[position];
        for access in &entry.reads {
            let seen = latest.get(&(access.table, access.key)).copied().unwrap_or(0);
            if access.version != seen && !entry.all_writes().any(|(write, _)| write == *access) {
                return false;
            }
        }
        for (access, _) in entry.all_writes() {
            let row = (access.table, access.key);
            if access.version <= latest.get(&row).copied().unwrap_or(0) {
                return false;
            }
            latest.insert(row, access.version);
        }
    }
    true
}

/// Shape of a simulated serial execution over tables with inserts, deletes and scans.
#[derive(Debug, Clone, Copy)]
pub struct TableConfig {
    pub transactions: usize,
    pub tables: u16,
    /// Keys `0..keys` in every table.
    pub keys: u64,
    pub operations_per_transaction_max: usize,
    /// A scan covers at most this many keys.
    pub scan_width_max: u64,
}

/// Transactions run one after another against a `BTreeMap` model `(table, key) -> (version,
/// present)`. Even keys are loaded (present at version 0), odd keys start absent. Each
/// transaction does a few operations: point reads (of a present row; of an absent key, either
/// the tombstone version or an empty one-key scan), updates, inserts, deletes and range scans
/// (listing every present row of the range at that moment, own writes included). Each key is
/// written at most once per transaction; writes install version `ts`. Returned in serial
/// order, with scrambled ids.
pub fn serial_table_history(seed: u64, config: &TableConfig) -> Vec<HistoryEntry> {
    assert!(config.tables > 0 && config.keys > 0 && config.operations_per_transaction_max > 0);
    let mut rng = rng(seed);
    let mut model: BTreeMap<(u16, u64), (u64, bool)> = BTreeMap::new();
    for table in 0..config.tables {
        for key in (0..config.keys).step_by(2) {
            model.insert((table, key), (0, true));
        }
    }
    let mut ts = 0u64;
    let mut entries = Vec::with_capacity(config.transactions);
    for position in 0..config.transactions as u64 {
        ts += rng.random_range(1..=3);
        let mut entry = HistoryEntry::new(position.wrapping_mul(0x9E37_79B9_7F4A_7C15), vec![], vec![]).with_ts(ts);
        let mut written: Vec<(u16, u64)> = Vec::new();
        for _ in 0..rng.random_range(1..=config.operations_per_transaction_max) {
            let table = rng.random_range(0..config.tables);
            let key = rng.random_range(0..config.keys);
            let (version, present) = model.get(&(table, key)).copied().unwrap_or((0, false));
            let may_write = !written.contains(&(table, key));
            match rng.random_range(0..5) {
                0 if present => entry = entry.read(table, key, version),
                0 if version > 0 && rng.random_bool(0.5) => entry = entry.read(table, key, version),
                0 => entry = entry.scan(table, key, key, &[]),
                1 if may_write && present => {
                    entry = entry.update(table, key, ts);
                    model.insert((table, key), (ts, true));
                    written.push((table, key));
                }
                2 if may_write && !present => {
                    entry = entry.insert(table, key, ts);
                    model.insert((table, key), (ts, true));
                    written.push((table, key));
                }
                3 if may_write && present => {
                    entry = entry.delete(table, key, ts);
                    model.insert((table, key), (ts, false));
                    written.push((table, key));
                }
                _ => {
                    let high = (key + rng.random_range(0..config.scan_width_max.max(1))).min(config.keys - 1);
                    let rows: Vec<(u64, u64)> = model
                        .range((table, key)..=(table, high))
                        .filter(|&(_, &(_, present))| present)
                        .map(|(&(_, row_key), &(version, _))| (row_key, version))
                        .collect();
                    entry = entry.scan(table, key, high, &rows);
                }
            }
        }
        entries.push(entry);
    }
    entries
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
