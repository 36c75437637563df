//! The dense index and the `PrimaryIndex` switch behave like the ordered index on a fixed key
//! set, and refuse what a dense index cannot do.

use ordo_storage::index::DENSE_LEAF;
use ordo_storage::{DenseIndex, Direction, InsertError, LeafVersion, OrderedIndex, PrimaryIndex};

fn collect(
    index: &PrimaryIndex,
    low: u64,
    high: u64,
    direction: Direction,
    limit: usize,
) -> (Vec<u64>, Vec<LeafVersion>) {
    let mut keys = Vec::new();
    let mut leaves = Vec::new();
    index.scan(
        low,
        high,
        direction,
        &mut |key, value| {
            assert_eq!(key, value);
            keys.push(key);
            keys.len() < limit
        },
        &mut |leaf| leaves.push(leaf),
    );
    (keys, leaves)
}

#[test]
fn dense_and_ordered_agree_on_a_fixed_key_set() {
    const KEYS: u64 = 1_000;
    let dense = PrimaryIndex::Dense(DenseIndex::new(KEYS));
    let ordered = PrimaryIndex::Ordered(OrderedIndex::from_sorted((0..KEYS).map(|key| (key, key))).expect("sorted"));
    for index in [&dense, &ordered] {
        assert_eq!(index.len(), KEYS);
        assert_eq!(index.get(17), Ok(17));
        assert!(index.get(KEYS).is_err());
        assert!(matches!(index.insert(5, 5), Err(InsertError::Present { value: 5 })));
    }
    for (low, high, limit) in [(0, 10, 100), (990, u64::MAX, 100), (5, 500, 7), (2_000, 3_000, 10), (10, 5, 10)] {
        for direction in [Direction::Ascending, Direction::Descending] {
            let (dense_keys, dense_leaves) = collect(&dense, low, high, direction, limit);
            let (ordered_keys, _) = collect(&ordered, low, high, direction, limit);
            assert_eq!(dense_keys, ordered_keys, "{low}..={high} {direction:?} limit {limit}");
            if low <= high {
                assert_eq!(dense_leaves, vec![DENSE_LEAF]);
            }
        }
    }
}

#[test]
fn a_dense_index_refuses_inserts_and_removes() {
    let dense = PrimaryIndex::Dense(DenseIndex::new(10));
    assert_eq!(dense.insert(10, 10), Err(InsertError::Fixed));
    assert!(!dense.remove(3, 3));
    assert_eq!(dense.get(3), Ok(3));
    assert_eq!(dense.get(11), Err(DENSE_LEAF));
    assert_eq!(dense.version(DENSE_LEAF.leaf), DENSE_LEAF.version);
    assert_eq!(dense.leaf_of(4), DENSE_LEAF);
    let ordered = PrimaryIndex::Ordered(OrderedIndex::new());
    assert!(ordered.insert(10, 10).is_ok());
    assert!(ordered.remove(10, 10));
    assert!(ordered.is_empty());
}
