//! What protocols rely on: reported leaf versions change exactly when the range they cover
//! changes, stamps follow ranges through splits and unlinks, retired leaves never validate
//! again, and emptied leaves do not accumulate.

use std::collections::BTreeSet;

use ordo_storage::index::node::LEAF_KEYS_MAX;
use ordo_storage::{Direction, LeafVersion, LoadError, OrderedIndex, epoch};

/// An index holding the even keys `0, 2, .., 2 * (count - 1)`, value = key + 1.
fn evens(count: u64) -> OrderedIndex {
    OrderedIndex::from_sorted((0..count).map(|i| (2 * i, 2 * i + 1))).expect("sorted")
}

fn scan_leaves(index: &OrderedIndex, low: u64, high: u64, direction: Direction) -> Vec<LeafVersion> {
    let mut leaves = Vec::new();
    index.scan(low, high, direction, &mut |_, _| true, &mut |leaf| leaves.push(leaf));
    leaves
}

fn changed(index: &OrderedIndex, leaves: &[LeafVersion]) -> usize {
    leaves.iter().filter(|leaf| index.version(leaf.leaf) != leaf.version).count()
}

#[test]
fn an_insert_into_a_scanned_range_changes_a_reported_version() {
    for direction in [Direction::Ascending, Direction::Descending] {
        let index = evens(10_000);
        let leaves = scan_leaves(&index, 1_001, 1_999, direction);
        assert!(leaves.len() >= 2, "the range spans several leaves");
        assert_eq!(changed(&index, &leaves), 0);
        index.insert(50_001, 0).expect("absent");
        assert_eq!(changed(&index, &leaves), 0, "an insert outside the range changed a reported leaf");
        index.insert(1_501, 0).expect("absent");
        assert_eq!(changed(&index, &leaves), 1, "an insert inside the range changed no reported leaf");
        let leaves = scan_leaves(&index, 1_001, 1_999, direction);
        assert!(index.remove(1_998, 1_999));
        assert_eq!(changed(&index, &leaves), 1, "a remove inside the range changed no reported leaf");
        // The range's ends are covered too: 1_999 lies in the last leaf scanned.
        let leaves = scan_leaves(&index, 1_001, 1_999, direction);
        index.insert(1_999, 0).expect("absent");
        assert_eq!(changed(&index, &leaves), 1, "an insert at the range's end changed no reported leaf");
    }
}

/// Scans that cross inner nodes (they continue from the lowest inner node whose range holds
/// the next key, not from the root) report every leaf of their range once, in order, with
/// its current version, visit every key, and any insert between the range's ends changes one
/// of the reported versions.
#[test]
fn a_scan_across_inner_nodes_reports_every_leaf_once_and_misses_no_insert() {
    // 400k keys: about 6,500 leaves under 100+ level-1 nodes, so both continuations (to a
    // sibling leaf and up through a level-1 boundary) happen many times.
    let count = 400_000u64;
    let index = evens(count);
    assert!(index.check_structure().height >= 2);
    for direction in [Direction::Ascending, Direction::Descending] {
        let (low, high) = (3, 2 * count - 5);
        let mut keys = Vec::new();
        let mut leaves = Vec::new();
        index.scan(
            low,
            high,
            direction,
            &mut |key, _| {
                keys.push(key);
                true
            },
            &mut |leaf| leaves.push(leaf),
        );
        let mut expected: Vec<u64> = (0..count).map(|i| 2 * i).filter(|key| (low..=high).contains(key)).collect();
        if direction == Direction::Descending {
            expected.reverse();
        }
        assert_eq!(keys, expected, "{direction:?}: keys visited");
        let mut expected_leaves: Vec<LeafVersion> = Vec::new();
        for &key in &expected {
            let leaf = index.leaf_of(key);
            if expected_leaves.last() != Some(&leaf) {
                expected_leaves.push(leaf);
            }
        }
        assert_eq!(leaves, expected_leaves, "{direction:?}: leaves reported");
        // An insert at a few places in the range, each into a fresh copy of the scan's view.
        for odd in [low, 2 * 62 * 61 + 1, count - 1, 2 * count - 7] {
            let before = index.leaf_of(odd);
            index.insert(odd, 0).expect("absent");
            assert!(leaves.contains(&before), "{direction:?}: the leaf of {odd} was not reported");
            assert_eq!(changed(&index, &leaves), 1, "{direction:?}: the insert of {odd} changed no reported leaf");
            assert!(index.remove(odd, 0));
            leaves = scan_leaves(&index, low, high, direction);
        }
    }
}

#[test]
fn a_scan_stopped_early_reports_the_leaf_it_stopped_in() {
    let index = evens(10_000);
    let mut leaves = Vec::new();
    let mut visited = 0;
    index.scan(
        0,
        u64::MAX,
        Direction::Ascending,
        &mut |_, _| {
            visited += 1;
            visited < 3 * LEAF_KEYS_MAX as u64 / 2
        },
        &mut |leaf| leaves.push(leaf),
    );
    assert_eq!(leaves.len(), 2);
    let stopped_at = 2 * (visited - 1);
    assert_eq!(index.leaf_of(stopped_at), leaves[1]);
}

#[test]
fn an_absent_get_reports_the_leaf_whose_version_the_insert_changes() {
    // Inserted in a scrambled order, so leaves split in halves and have room.
    let index = OrderedIndex::new();
    for i in 0..5_000u64 {
        let key = 2 * (i * 2_477 % 5_000);
        index.insert(key, key + 1).expect("fresh");
    }
    for key in [1, 777, 4_001, 9_999, 20_000, u64::MAX] {
        let absent = index.get(key).expect_err("odd keys and keys past the end are absent");
        assert_eq!(index.version(absent.leaf), absent.version);
        let inserted = index.insert(key, 5).expect("absent");
        assert_eq!(inserted.before, absent, "the insert went into another leaf or version");
        assert!(!inserted.split);
        assert_ne!(index.version(absent.leaf), absent.version);
        assert_eq!(index.version(absent.leaf), inserted.after.version);
    }
}

#[test]
fn a_split_changes_the_version_and_copies_the_stamp() {
    let index = OrderedIndex::new();
    for key in 0..LEAF_KEYS_MAX as u64 {
        index.insert(key * 10, key).expect("fresh");
    }
    let full = index.leaf_of(0);
    index.stamp(full.leaf).store(42, std::sync::atomic::Ordering::Relaxed);
    let inserted = index.insert(15, 0).expect("fresh");
    assert!(inserted.split, "inserting into a full leaf splits it");
    assert_ne!(index.version(full.leaf), full.version);
    let left = index.leaf_of(0);
    let right = index.leaf_of(10 * (LEAF_KEYS_MAX as u64 - 1));
    assert_ne!(left.leaf, right.leaf);
    for leaf in [left.leaf, right.leaf] {
        assert_eq!(index.stamp(leaf).load(std::sync::atomic::Ordering::Relaxed), 42);
    }
}

#[test]
fn an_unlinked_leaf_never_validates_again_and_hands_its_stamp_on() {
    let index = evens(20 * LEAF_KEYS_MAX as u64);
    // Empty the third leaf: its range joins the second.
    let third = index.leaf_of(2 * 2 * LEAF_KEYS_MAX as u64);
    let second = index.leaf_of(2 * LEAF_KEYS_MAX as u64);
    assert_ne!(third.leaf, second.leaf);
    index.stamp(third.leaf).store(99, std::sync::atomic::Ordering::Relaxed);
    let mut keys = Vec::new();
    index.scan(
        0,
        u64::MAX,
        Direction::Ascending,
        &mut |key, value| {
            keys.push((key, value));
            true
        },
        &mut |_| {},
    );
    let in_third: Vec<(u64, u64)> =
        keys.iter().copied().filter(|&(key, _)| index.leaf_of(key).leaf == third.leaf).collect();
    assert_eq!(in_third.len(), LEAF_KEYS_MAX);
    let absent_in_third = index.get(in_third[0].0 + 1).expect_err("odd key");
    assert_eq!(absent_in_third.leaf, third.leaf);
    for &(key, value) in &in_third {
        assert!(index.remove(key, value));
    }
    let now = index.version(third.leaf);
    assert_ne!(now, absent_in_third.version, "the unlinked leaf still validates");
    assert_eq!(now & 0b11, 0b01, "an unlinked leaf is obsolete and unlocked");
    let takes_over = index.leaf_of(in_third[0].0);
    assert_eq!(takes_over.leaf, second.leaf, "the left neighbour takes over the range");
    assert!(index.stamp(second.leaf).load(std::sync::atomic::Ordering::Relaxed) >= 99, "the stamp was not handed on");
    // Recycle nodes: the old leaf's version keeps growing, so the old entry never validates.
    for _ in 0..100 {
        epoch::flush();
    }
    for key in 0..10_000u64 {
        let _ = index.insert(1_000_000 + key, key);
    }
    assert!(index.version(third.leaf) > now || index.version(third.leaf) == now);
    assert_ne!(index.version(third.leaf), absent_in_third.version);
    index.check_structure();
}

#[test]
fn a_queue_workload_runs_in_bounded_space() {
    // Insert at the high end, remove at the low end (TPC-C's NEW-ORDER), 500 live entries.
    const LIVE: u64 = 500;
    const OPERATIONS: u64 = 300_000;
    let index = OrderedIndex::new();
    for key in 0..LIVE {
        index.insert(key, key).expect("fresh");
    }
    let mut high_water_after_warmup = 0;
    for key in LIVE..OPERATIONS {
        index.insert(key, key).expect("fresh");
        assert!(index.remove(key - LIVE, key - LIVE));
        if key == OPERATIONS / 10 {
            high_water_after_warmup = index.nodes_allocated();
        }
    }
    let shape = index.check_structure();
    assert_eq!(shape.entries, LIVE);
    assert!(shape.leaves <= 2 * LIVE / LEAF_KEYS_MAX as u64 + 2, "{shape:?}");
    assert!(shape.height <= 1, "a single-child root was not collapsed: {shape:?}");
    let nodes = index.nodes_allocated();
    // Nodes come back through the epoch and are reused: the arena stops growing.
    assert!(nodes <= high_water_after_warmup + 512, "node arena grew from {high_water_after_warmup} to {nodes}");
    assert!(nodes < 2_000, "{nodes} nodes for {LIVE} live entries");
}

#[test]
fn bulk_load_refuses_unsorted_input_and_loads_sorted_input() {
    assert_eq!(
        OrderedIndex::from_sorted([(1, 1), (3, 3), (3, 4)]).map(|_| ()),
        Err(LoadError::NotIncreasing { previous: 3, key: 3 })
    );
    let empty = OrderedIndex::from_sorted(std::iter::empty()).expect("empty is sorted");
    assert!(empty.is_empty());
    assert!(empty.get(0).is_err());
    let count = 100_000u64;
    let index = OrderedIndex::from_sorted((0..count).map(|key| (key * 3, key))).expect("sorted");
    assert_eq!(index.len(), count);
    let shape = index.check_structure();
    assert_eq!(shape.entries, count);
    assert!(shape.height >= 2);
    for key in (0..count).step_by(97) {
        assert_eq!(index.get(key * 3), Ok(key));
        assert!(index.get(key * 3 + 1).is_err());
    }
    let mut inserted = BTreeSet::new();
    for key in (0..count).step_by(13) {
        index.insert(key * 3 + 1, 0).expect("absent");
        inserted.insert(key * 3 + 1);
    }
    assert_eq!(index.len(), count + inserted.len() as u64);
    assert_eq!(index.check_structure().entries, count + inserted.len() as u64);
}
