//! Silo over tables against a model: one worker runs random transactions of gets (alone, or
//! after a prefetch pass over several keys), puts, inserts, deletes and scans (both directions, with limits) over a small key range, each
//! committed or abandoned at random, with reclamation in between; every answer, and the final
//! table, must equal a `BTreeMap`'s. The recorded history must pass the checker, which needs
//! every key's versions to be written once each, across deletes, reclamation and re-inserts.
//!
//! A failure prints its seed; rerun with `ORDO_SEED=<seed> cargo test -p ordo-threads --test
//! tables_model`.

mod common;

use common::{EVENS, evens, seed};
use ordo_storage::TableId;
use ordo_threads::tables::Epochs;
use ordo_threads::tables::{Index, SiloTables};
use ordo_workload::{Direction, Tx, rng_from_seed};
use rand::Rng;

const TABLE: TableId = EVENS;
/// Keys drawn from `0..KEYS`; the table starts with the even ones.
const KEYS: u64 = 200;
const TRANSACTIONS: usize = 3_000;
const OPERATIONS_MAX: usize = 8;

#[test]
fn random_transactions_match_a_btreemap() {
    let seed = seed(11);
    let workload = evens(KEYS);
    let silo = SiloTables::load(&workload, Index::Tree, 2, Epochs::clock(1)).unwrap();
    let mut worker = silo.worker(0, true);
    let mut model = workload.rows(TABLE);
    let mut rng = rng_from_seed(seed);
    let mut row = [0u64; 2];
    let (mut commits, mut failed_commits) = (0usize, 0usize);
    for t in 0..TRANSACTIONS {
        let mut view = model.clone();
        let mut tx = silo.begin(&mut worker);
        for op in 0..rng.random_range(1..=OPERATIONS_MAX) {
            let key = rng.random_range(0..KEYS);
            let value = [rng.random(), t as u64];
            let context = || format!("seed {seed}: transaction {t} operation {op} on key {key}");
            match rng.random_range(0..6) {
                0 => {
                    let found = tx.get(TABLE, key, &mut row, false).unwrap();
                    assert_eq!(found.then_some(row.to_vec()), view.get(&key).cloned(), "{} (get)", context());
                }
                1 => {
                    let expected = view.contains_key(&key);
                    assert_eq!(tx.put(TABLE, key, &value).unwrap(), expected, "{} (put)", context());
                    if expected {
                        view.insert(key, value.to_vec());
                    }
                }
                2 => {
                    let expected = !view.contains_key(&key);
                    assert_eq!(tx.insert(TABLE, key, &value).unwrap(), expected, "{} (insert)", context());
                    if expected {
                        view.insert(key, value.to_vec());
                    }
                }
                3 => {
                    let expected = view.remove(&key).is_some();
                    assert_eq!(tx.delete(TABLE, key).unwrap(), expected, "{} (delete)", context());
                }
                4 => {
                    // A prefetch pass over a step's keys, then the step's reads: each starts
                    // from the record the pass found, which the attempt's own writes
                    // (buffered puts, inserts and deletes) must still shadow.
                    let keys: Vec<u64> = (0..rng.random_range(1..=6)).map(|_| rng.random_range(0..KEYS)).collect();
                    tx.prefetch(TABLE, &keys);
                    for &key in &keys {
                        let found = tx.get(TABLE, key, &mut row, false).unwrap();
                        assert_eq!(
                            found.then_some(row.to_vec()),
                            view.get(&key).cloned(),
                            "{} (prefetched get of {key})",
                            context()
                        );
                    }
                }
                _ => {
                    let high = key + rng.random_range(0..KEYS / 4);
                    let limit = rng.random_range(1..20);
                    let direction = if rng.random() { Direction::Ascending } else { Direction::Descending };
                    let mut seen = Vec::new();
                    tx.scan(TABLE, key, high, direction, limit, &mut |k, r| {
                        seen.push((k, r.to_vec()));
                        true
                    })
                    .unwrap();
                    let range = view.range(key..=high).map(|(k, r)| (*k, r.clone()));
                    let expected: Vec<_> = match direction {
                        Direction::Ascending => range.take(limit).collect(),
                        Direction::Descending => range.rev().take(limit).collect(),
                    };
                    assert_eq!(seen, expected, "{} (scan to {high}, {direction:?}, limit {limit})", context());
                }
            }
        }
        if rng.random_bool(0.8) {
            // Alone, a commit fails only when the attempt's own insert split a leaf its node
            // set holds (Silo's rule: the split leaf's recorded version is stale); then
            // nothing it wrote may be visible.
            if tx.commit().is_ok() {
                model = view;
                commits += 1;
            } else {
                failed_commits += 1;
            }
        } else {
            tx.abort();
        }
        if t % 50 == 0 {
            silo.reclaim_all(&mut worker);
        }
    }
    silo.reclaim_all(&mut worker);
    assert!(
        failed_commits * 20 < commits,
        "seed {seed}: {failed_commits} commits failed alone against {commits} that succeeded"
    );
    assert_eq!(silo.database().rows(TABLE), model, "seed {seed}: the final table differs");
    if let Err(violation) = ordo_history::check(worker.history()) {
        panic!("seed {seed}: the history does not check: {violation:?}");
    }
}
