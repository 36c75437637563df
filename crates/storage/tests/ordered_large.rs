//! The ordered index on trees several levels deep, against a `BTreeMap`: random inserts,
//! removal of whole subtrees (which unlinks chains of inner nodes), and emptying the tree.
//!
//! Replay with the printed seed: `ORDO_SEED=<seed> cargo test -p ordo-storage --test ordered_large`.

use std::collections::BTreeMap;

use ordo_storage::{Direction, OrderedIndex};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const KEYS: usize = 200_000;
const KEY_SPACE: u64 = 1_000_000;

fn seed() -> u64 {
    let seed = std::env::var("ORDO_SEED").ok().and_then(|text| text.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |since| since.as_nanos() as u64)
    });
    println!("seed {seed}: replay with ORDO_SEED={seed} cargo test -p ordo-storage --test ordered_large");
    seed
}

fn contents(index: &OrderedIndex) -> Vec<(u64, u64)> {
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
    all
}

fn agree(index: &OrderedIndex, model: &BTreeMap<u64, u64>) {
    let shape = index.check_structure();
    assert_eq!(shape.entries, model.len() as u64, "{shape:?}");
    assert_eq!(contents(index), model.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>());
    assert!(shape.empty_leaves == 0 || shape.leaves == 1, "empty leaves left linked: {shape:?}");
}

#[test]
fn deep_trees_survive_subtree_removal_and_emptying() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed());
    let index = OrderedIndex::new();
    let mut model = BTreeMap::new();
    while model.len() < KEYS {
        let key = rng.random_range(0..KEY_SPACE);
        let value = rng.random::<u64>();
        let expected = model.get(&key).copied();
        match index.insert(key, value) {
            Ok(_) => assert_eq!(expected, None, "insert of present key {key} succeeded"),
            Err(existing) => assert_eq!(Some(existing), expected),
        }
        model.entry(key).or_insert(value);
    }
    let shape = index.check_structure();
    assert!(shape.height >= 2, "the test needs a deep tree: {shape:?}");
    agree(&index, &model);

    // The prefetch hint descends every level of the deep tree in groups: present keys report
    // their values, in order, and absent ones nothing.
    let probes: Vec<u64> = (0..1000).map(|_| rng.random_range(0..KEY_SPACE)).collect();
    let mut reported = Vec::new();
    index.prefetch(&probes, |i, value| reported.push((i, value)));
    let expected: Vec<(usize, u64)> =
        probes.iter().enumerate().filter_map(|(i, key)| Some((i, *model.get(key)?))).collect();
    assert_eq!(reported, expected);

    // Remove a middle fifth in random order: whole subtrees empty and are unlinked.
    let middle: Vec<(u64, u64)> = model.range(KEY_SPACE * 2 / 5..KEY_SPACE * 3 / 5).map(|(&k, &v)| (k, v)).collect();
    let mut order: Vec<usize> = (0..middle.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    for &i in &order {
        let (key, value) = middle[i];
        assert!(!index.remove(key, value.wrapping_add(1)), "remove with the wrong value succeeded");
        assert!(index.remove(key, value));
        model.remove(&key);
    }
    agree(&index, &model);
    let gap = index.get(KEY_SPACE / 2).expect_err("removed");
    assert_eq!(index.version(gap.leaf), gap.version);

    // Remove everything, lowest first: one empty leaf remains, and it is the root again.
    for (key, value) in std::mem::take(&mut model) {
        assert!(index.remove(key, value));
    }
    let shape = index.check_structure();
    assert_eq!(shape.entries, 0);
    assert_eq!(shape.leaves, 1, "{shape:?}");
    assert_eq!(u64::from(shape.height), shape.inner_nodes, "{shape:?}");
    assert_eq!(shape.height, 0, "single-child roots were not collapsed: {shape:?}");
    assert!(index.is_empty());
    agree(&index, &model);

    // The emptied tree works as new.
    for key in (0..KEY_SPACE).step_by(7) {
        index.insert(key, key).expect("fresh");
        model.insert(key, key);
    }
    agree(&index, &model);
}

#[test]
fn prefetch_of_a_partial_group_on_a_bulk_loaded_tree_reports_only_its_keys() {
    // Groups shorter than the pass's group, and longer ones that end in a short group, on a
    // tree built bottom-up and never written: each present probe is reported once, in order,
    // with its value, and nothing beyond the probes.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed());
    let model: BTreeMap<u64, u64> = (0..KEYS as u64).map(|key| (key * 3, rng.random::<u64>())).collect();
    let index = OrderedIndex::from_sorted(model.iter().map(|(&k, &v)| (k, v))).expect("sorted keys");
    assert!(index.check_structure().height >= 2, "the test needs a deep tree");
    for len in [1, 5, 15, 17, 21] {
        let probes: Vec<u64> = (0..len).map(|_| rng.random_range(0..KEY_SPACE)).collect();
        let mut reported = Vec::new();
        index.prefetch(&probes, |i, value| reported.push((i, value)));
        let expected: Vec<(usize, u64)> =
            probes.iter().enumerate().filter_map(|(i, key)| Some((i, *model.get(key)?))).collect();
        assert_eq!(reported, expected, "{len} probes");
    }
}
