//! The ordered index against a `BTreeMap` model, single-threaded, under random operations
//! (proptest shrinks a failure to a short sequence and records it in
//! `tests/ordered_model.proptest-regressions`).

use std::collections::BTreeMap;

use ordo_storage::{Direction, LeafVersion, OrderedIndex};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Insert(u64, u64),
    Remove(u64, bool),
    Get(u64),
    /// A prefetch hint for these keys: on a quiescent tree it reports exactly the values of
    /// the present ones, in order.
    Prefetch(Vec<u64>),
    /// Inserts `count` keys `start, start + step, ..` (fills and splits leaves).
    InsertRun {
        start: u64,
        step: u64,
        count: u64,
    },
    /// Removes every present key in `start..start + len` (empties and unlinks leaves).
    RemoveRun {
        start: u64,
        len: u64,
    },
    Scan {
        low: u64,
        high: u64,
        direction: Direction,
        limit: usize,
    },
}

/// Keys mostly from a small range (so leaves fill, split and empty), some at the extremes.
fn key() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0u64..600,
        1 => Just(0u64),
        1 => Just(u64::MAX),
        1 => u64::MAX - 40..=u64::MAX,
    ]
}

fn direction() -> impl Strategy<Value = Direction> {
    prop_oneof![Just(Direction::Ascending), Just(Direction::Descending)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (key(), any::<u64>()).prop_map(|(key, value)| Op::Insert(key, value)),
        4 => (key(), any::<bool>()).prop_map(|(key, right_value)| Op::Remove(key, right_value)),
        2 => key().prop_map(Op::Get),
        1 => prop::collection::vec(key(), 0..40).prop_map(Op::Prefetch),
        1 => (0u64..3000, 1u64..4, 1u64..400).prop_map(|(start, step, count)| Op::InsertRun { start, step, count }),
        1 => (0u64..3000, 1u64..600).prop_map(|(start, len)| Op::RemoveRun { start, len }),
        2 => (key(), key(), direction(), 0usize..80)
            .prop_map(|(low, high, direction, limit)| Op::Scan { low, high, direction, limit }),
    ]
}

/// Runs `ops` on a fresh index and on the model, comparing every answer.
fn run(ops: &[Op], index: &OrderedIndex, model: &mut BTreeMap<u64, u64>) -> Result<(), TestCaseError> {
    for op in ops {
        match *op {
            Op::Insert(key, value) => {
                let outcome = index.insert(key, value);
                match model.get(&key) {
                    Some(&existing) => prop_assert_eq!(outcome, Err(existing), "insert of present key {}", key),
                    None => {
                        let inserted = outcome
                            .map_err(|existing| TestCaseError::fail(format!("insert {key} found {existing}")))?;
                        prop_assert!(inserted.after.version > inserted.before.version);
                        prop_assert_eq!(inserted.before.leaf, inserted.after.leaf);
                        prop_assert_eq!(index.version(inserted.after.leaf), inserted.after.version);
                        model.insert(key, value);
                    }
                }
            }
            Op::Remove(key, right_value) => {
                let value = match model.get(&key) {
                    Some(&value) if right_value => value,
                    Some(&value) => value.wrapping_add(1),
                    None => 7,
                };
                let removed = index.remove(key, value);
                let expected = model.get(&key) == Some(&value);
                prop_assert_eq!(removed, expected, "remove {} {}", key, value);
                if expected {
                    model.remove(&key);
                }
            }
            Op::InsertRun { start, step, count } => {
                for key in (0..count).map(|i| start + i * step) {
                    let outcome = index.insert(key, key * 3);
                    match model.get(&key) {
                        Some(&existing) => prop_assert_eq!(outcome, Err(existing)),
                        None => {
                            prop_assert!(outcome.is_ok(), "insert {} refused", key);
                            model.insert(key, key * 3);
                        }
                    }
                }
            }
            Op::RemoveRun { start, len } => {
                let present: Vec<(u64, u64)> = model.range(start..start + len).map(|(&k, &v)| (k, v)).collect();
                for (key, value) in present {
                    prop_assert!(index.remove(key, value), "remove {} refused", key);
                    model.remove(&key);
                    prop_assert!(index.get(key).is_err(), "removed key {} still found", key);
                }
            }
            Op::Get(key) => match (index.get(key), model.get(&key)) {
                (Ok(value), Some(&expected)) => prop_assert_eq!(value, expected),
                (Err(absent), None) => {
                    prop_assert_eq!(index.version(absent.leaf), absent.version, "absent-read leaf changed");
                    prop_assert_eq!(index.leaf_of(key), absent);
                }
                (found, expected) => prop_assert!(false, "get {}: index {:?}, model {:?}", key, found, expected),
            },
            Op::Prefetch(ref keys) => {
                let mut reported = Vec::new();
                index.prefetch(keys, |i, value| reported.push((i, value)));
                let expected: Vec<(usize, u64)> =
                    keys.iter().enumerate().filter_map(|(i, key)| Some((i, *model.get(key)?))).collect();
                prop_assert_eq!(reported, expected, "prefetch {:?}", keys);
            }
            Op::Scan { low, high, direction, limit } => {
                let mut seen = Vec::new();
                let mut leaves: Vec<LeafVersion> = Vec::new();
                index.scan(
                    low,
                    high,
                    direction,
                    &mut |key, value| {
                        seen.push((key, value));
                        seen.len() < limit
                    },
                    &mut |leaf| leaves.push(leaf),
                );
                let range =
                    if low <= high { model.range(low..=high).map(|(&k, &v)| (k, v)).collect() } else { Vec::new() };
                let mut expected: Vec<(u64, u64)> = range;
                if direction == Direction::Descending {
                    expected.reverse();
                }
                expected.truncate(limit.max(1));
                if low > high {
                    expected.clear();
                }
                prop_assert_eq!(&seen, &expected, "scan {}..={} {:?} limit {}", low, high, direction, limit);
                if low <= high {
                    prop_assert!(!leaves.is_empty(), "a scan reports at least the leaf it started in");
                }
                for leaf in &leaves {
                    prop_assert_eq!(index.version(leaf.leaf), leaf.version, "scan reported a stale version");
                }
                let mut distinct = leaves.clone();
                distinct.sort_by_key(|leaf| leaf.leaf);
                distinct.dedup_by_key(|leaf| leaf.leaf);
                prop_assert_eq!(distinct.len(), leaves.len(), "a quiescent scan reports each leaf once");
            }
        }
    }
    let shape = index.check_structure();
    prop_assert_eq!(shape.entries, model.len() as u64);
    // An emptied leaf stays linked only when it is the tree's only leaf.
    prop_assert!(shape.empty_leaves == 0 || shape.leaves == 1, "empty leaves left linked: {:?}", shape);
    prop_assert_eq!(index.len(), model.len() as u64);
    let mut all = Vec::new();
    index.scan(
        0,
        u64::MAX,
        Direction::Ascending,
        &mut |key, value| {
            all.push((key, value));
            true
        },
        &mut |_| {},
    );
    prop_assert_eq!(all, model.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn matches_btreemap(ops in prop::collection::vec(op(), 1..1500)) {
        let index = OrderedIndex::new();
        let mut model = BTreeMap::new();
        run(&ops, &index, &mut model)?;
    }

    #[test]
    fn matches_btreemap_after_bulk_load(
        loaded in prop::collection::btree_map(0u64..2000, any::<u64>(), 0..1200),
        ops in prop::collection::vec(op(), 1..600),
    ) {
        let index = OrderedIndex::from_sorted(loaded.iter().map(|(&k, &v)| (k, v))).expect("sorted input");
        let mut model = loaded;
        run(&ops, &index, &mut model)?;
    }
}
