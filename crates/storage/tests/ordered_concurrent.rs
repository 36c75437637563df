//! The ordered index under concurrent writers and scanners, compared at the end with what the
//! writers know they did; scanners check invariants while the writers run.
//!
//! Replay a failure with the seed it prints: `ORDO_SEED=<seed> cargo test -p ordo-storage
//! --test ordered_concurrent`.

use std::collections::BTreeMap;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ordo_storage::{Direction, OrderedIndex};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Keys are `0..KEYS`; their class is `key % 4`:
/// 0: stable (loaded, never removed) when in an even block of `BLOCK_KEYS`, else never present;
/// 1: owned by one writer (`key / 4 % WRITERS`), inserted and removed by it alone;
/// 2: contended: every writer inserts and removes them;
/// 3: never inserted.
const KEYS: u64 = 24_000;
const BLOCK_KEYS: u64 = 2_000;
const WRITERS: usize = 3;
const READERS: usize = 2;
const WRITER_OPS: usize = 150_000;
const READER_SCANS_MAX: usize = 1_000_000;
const RUN_TIME_MAX: Duration = Duration::from_mins(1);

fn value_of(key: u64) -> u64 {
    key.wrapping_mul(7).wrapping_add(1)
}

fn stable(key: u64) -> bool {
    key.is_multiple_of(4) && (key / BLOCK_KEYS).is_multiple_of(2)
}

fn seed() -> u64 {
    let seed = std::env::var("ORDO_SEED").ok().and_then(|text| text.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |since| since.as_nanos() as u64)
    });
    println!("seed {seed}: replay with ORDO_SEED={seed} cargo test -p ordo-storage --test ordered_concurrent");
    seed
}

/// A writer's record of what it did: its own keys' final presence, and per contended key
/// the number of its successful inserts minus successful removes.
struct WriterLog {
    owned: BTreeMap<u64, bool>,
    contended_net: BTreeMap<u64, i64>,
}

fn writer(index: &OrderedIndex, writer_id: usize, seed: u64) -> WriterLog {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (writer_id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut log = WriterLog { owned: BTreeMap::new(), contended_net: BTreeMap::new() };
    for _ in 0..WRITER_OPS {
        // Work on a window that moves, so that leaves fill, split, empty and unlink.
        let key = if rng.random_bool(0.6) {
            let slot = rng.random_range(0..KEYS / 4 / WRITERS as u64);
            (slot * WRITERS as u64 + writer_id as u64) * 4 + 1
        } else {
            rng.random_range(0..KEYS / 4) * 4 + 2
        };
        let insert = rng.random_bool(0.5);
        if key % 4 == 1 {
            let present = log.owned.get(&key).copied().unwrap_or(false);
            if insert {
                let outcome = index.insert(key, value_of(key));
                assert_eq!(outcome.is_ok(), !present, "owned key {key}: insert disagrees with the writer's record");
                if let Ok(inserted) = outcome {
                    assert!(inserted.after.version > inserted.before.version);
                }
                log.owned.insert(key, true);
            } else {
                let removed = index.remove(key, value_of(key));
                assert_eq!(removed, present, "owned key {key}: remove disagrees with the writer's record");
                log.owned.insert(key, false);
            }
        } else if insert {
            if index.insert(key, value_of(key)).is_ok() {
                *log.contended_net.entry(key).or_default() += 1;
            }
        } else if index.remove(key, value_of(key)) {
            *log.contended_net.entry(key).or_default() -= 1;
        }
    }
    log
}

/// Scans random ranges and checks what every scan must show, whatever the writers do.
fn reader(index: &OrderedIndex, reader_id: usize, seed: u64, done: &AtomicBool) -> usize {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (reader_id as u64 + 100));
    let start = Instant::now();
    let mut scans = 0;
    while !done.load(Ordering::Acquire) && scans < READER_SCANS_MAX && start.elapsed() < RUN_TIME_MAX {
        scans += 1;
        let low = rng.random_range(0..KEYS);
        let high = (low + rng.random_range(0..3 * BLOCK_KEYS)).min(KEYS + 10);
        let direction = if rng.random_bool(0.5) { Direction::Ascending } else { Direction::Descending };
        let limit = if rng.random_bool(0.3) { rng.random_range(1..200) } else { usize::MAX };
        let mut seen: Vec<u64> = Vec::new();
        let mut leaves = 0;
        index.scan(
            low,
            high,
            direction,
            &mut |key, value| {
                assert!((low..=high).contains(&key), "scan {low}..={high} visited {key}");
                assert_ne!(key % 4, 3, "scan visited key {key}, which was never inserted");
                assert!(key % 4 != 0 || stable(key), "scan visited key {key}, which was never inserted");
                assert_eq!(value, value_of(key), "key {key} has a value never written");
                if let Some(&previous) = seen.last() {
                    match direction {
                        Direction::Ascending => assert!(previous < key, "ascending scan: {previous} then {key}"),
                        Direction::Descending => assert!(previous > key, "descending scan: {previous} then {key}"),
                    }
                }
                seen.push(key);
                seen.len() < limit
            },
            &mut |_| leaves += 1,
        );
        assert!(leaves >= 1, "scan reported no leaf");
        // Every stable key between the scan's start and where it stopped was visited.
        let covered = match (direction, seen.len() >= limit, seen.last()) {
            (Direction::Ascending, true, Some(&last)) => low..=last,
            (Direction::Descending, true, Some(&last)) => last..=high,
            _ => low..=high,
        };
        let stable_seen = seen.iter().filter(|&&key| stable(key)).count();
        let stable_expected = covered.filter(|&key| stable(key) && key < KEYS).count();
        assert_eq!(stable_seen, stable_expected, "scan {low}..={high} {direction:?} missed a stable key");
        let probe = rng.random_range(0..KEYS / 4) * 4;
        if stable(probe) {
            assert_eq!(index.get(probe), Ok(value_of(probe)), "stable key {probe} not found");
        }
        // A prefetch pass races the writers' splits and unlinks. It may leave a key it could
        // not settle unreported, but what it reports is validated: each key at most once, in
        // order, with a value the key has had, and a stable key never with another.
        let hinted: Vec<u64> = (0..24).map(|_| rng.random_range(0..KEYS + 10)).collect();
        let mut reported: Vec<usize> = Vec::new();
        index.prefetch(&hinted, |i, value| {
            let key = hinted[i];
            assert!(key < KEYS && value == value_of(key), "prefetch reported {value} for key {key}");
            assert!(reported.last().is_none_or(|&last| last < i), "prefetch reported key {i} twice or out of order");
            reported.push(i);
        });
    }
    scans
}

#[test]
fn concurrent_writers_and_scanners_agree_with_the_model() {
    let seed = seed();
    let index = OrderedIndex::new();
    for key in (0..KEYS).filter(|&key| stable(key)) {
        index.insert(key, value_of(key)).expect("fresh key");
    }
    let done = AtomicBool::new(false);
    let barrier = Barrier::new(WRITERS + READERS);
    let (logs, scans) = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..READERS)
            .map(|reader_id| {
                let (index, done, barrier) = (&index, &done, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    reader(index, reader_id, seed, done)
                })
            })
            .collect();
        let writers: Vec<_> = (0..WRITERS)
            .map(|writer_id| {
                let (index, barrier) = (&index, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    writer(index, writer_id, seed)
                })
            })
            .collect();
        let logs: Vec<WriterLog> = writers.into_iter().map(|handle| handle.join().expect("writer panicked")).collect();
        done.store(true, Ordering::Release);
        let scans: usize = readers.into_iter().map(|handle| handle.join().expect("reader panicked")).sum();
        (logs, scans)
    });
    println!("readers ran {scans} scans");

    let mut expected: BTreeMap<u64, u64> =
        (0..KEYS).filter(|&key| stable(key)).map(|key| (key, value_of(key))).collect();
    let mut contended: BTreeMap<u64, i64> = BTreeMap::new();
    for log in &logs {
        for (&key, &present) in &log.owned {
            if present {
                expected.insert(key, value_of(key));
            }
        }
        for (&key, &net) in &log.contended_net {
            *contended.entry(key).or_default() += net;
        }
    }
    for (&key, &net) in &contended {
        assert!(net == 0 || net == 1, "contended key {key}: net inserts {net}");
        if net == 1 {
            expected.insert(key, value_of(key));
        }
    }
    let mut actual = BTreeMap::new();
    index.scan(
        0,
        u64::MAX,
        Direction::Ascending,
        &mut |key, value| {
            actual.insert(key, value);
            true
        },
        &mut |_| {},
    );
    assert_eq!(actual.len(), expected.len(), "entry count differs from the writers' record");
    assert_eq!(actual, expected);
    let shape = index.check_structure();
    assert_eq!(shape.entries, expected.len() as u64);
    assert_eq!(index.len(), expected.len() as u64);
    assert!(shape.empty_leaves == 0 || shape.leaves == 1, "empty leaves left linked: {shape:?}");
}

/// A queue (TPC-C's NEW-ORDER): one thread inserts ascending keys, one removes the lowest
/// present key found by a scan, others scan; at the end the queue is empty and the tree has
/// unlinked every leaf but one.
#[test]
fn a_concurrent_queue_drains_and_unlinks_its_leaves() {
    const QUEUE_KEYS: u64 = 100_000;
    let seed = seed();
    let index = OrderedIndex::new();
    let produced_all = AtomicBool::new(false);
    let consumed_all = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for key in 0..QUEUE_KEYS {
                index.insert(key, value_of(key)).expect("each key is inserted once");
            }
            produced_all.store(true, Ordering::Release);
        });
        scope.spawn(|| {
            let start = Instant::now();
            let mut next = 0;
            while next < QUEUE_KEYS {
                assert!(start.elapsed() < RUN_TIME_MAX, "consumer stuck at {next}");
                let mut lowest = None;
                index.scan(
                    next,
                    u64::MAX,
                    Direction::Ascending,
                    &mut |key, _| {
                        lowest = Some(key);
                        false
                    },
                    &mut |_| {},
                );
                match lowest {
                    Some(key) => {
                        assert_eq!(key, next, "the queue's head is the next key in order");
                        assert!(index.remove(key, value_of(key)), "only this thread removes");
                        next += 1;
                    }
                    None => std::thread::yield_now(),
                }
            }
            consumed_all.store(true, Ordering::Release);
        });
        for scanner in 0..2u64 {
            let (index, consumed_all) = (&index, &consumed_all);
            scope.spawn(move || {
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ scanner);
                let start = Instant::now();
                let mut scans = 0;
                while !consumed_all.load(Ordering::Acquire)
                    && scans < READER_SCANS_MAX
                    && start.elapsed() < RUN_TIME_MAX
                {
                    scans += 1;
                    let low = rng.random_range(0..QUEUE_KEYS);
                    let high = low + rng.random_range(0..5_000);
                    let direction = if rng.random_bool(0.5) { Direction::Ascending } else { Direction::Descending };
                    let mut previous: Option<u64> = None;
                    index.scan(
                        low,
                        high,
                        direction,
                        &mut |key, value| {
                            assert!((low..=high).contains(&key) && key < QUEUE_KEYS);
                            assert_eq!(value, value_of(key));
                            if let Some(previous) = previous {
                                assert!(
                                    (direction == Direction::Ascending) == (previous < key) && previous != key,
                                    "{direction:?} scan: {previous} then {key}"
                                );
                            }
                            previous = Some(key);
                            true
                        },
                        &mut |_| {},
                    );
                }
            });
        }
    });
    assert!(produced_all.load(Ordering::Acquire));
    let shape = index.check_structure();
    assert_eq!(shape.entries, 0);
    assert_eq!(shape.leaves, 1, "a drained queue keeps one leaf: {shape:?}");
    assert!(index.is_empty());
}

/// Node-set validation, as a protocol uses it: if every leaf a scan reported still has the
/// version it was reported with, the range still holds exactly what the scan saw. Here a second
/// scan after the first, followed by a successful validation of the first, must see the same
/// entries, while writers insert and remove keys in and around the range.
#[test]
fn validated_scans_see_no_phantoms() {
    const SPACE: u64 = 20_000;
    const VALIDATIONS: usize = 20_000;
    let seed = seed();
    let index = OrderedIndex::new();
    for key in (0..SPACE).step_by(3) {
        index.insert(key, value_of(key)).expect("fresh");
    }
    let done = AtomicBool::new(false);
    let (passed, failed) = std::thread::scope(|scope| {
        for writer_id in 0..2u64 {
            let (index, done) = (&index, &done);
            scope.spawn(move || {
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (writer_id + 7));
                let start = Instant::now();
                while !done.load(Ordering::Acquire) && start.elapsed() < RUN_TIME_MAX {
                    let key = rng.random_range(0..SPACE);
                    if rng.random_bool(0.5) {
                        let _ = index.insert(key, value_of(key));
                    } else {
                        index.remove(key, value_of(key));
                    }
                }
            });
        }
        // Stops the writers however this thread leaves the scope (a failed assertion too).
        let _stop_writers = StopOnDrop(&done);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x63);
        let (mut passed, mut failed) = (0, 0);
        for _ in 0..VALIDATIONS {
            let low = rng.random_range(0..SPACE);
            let high = low + rng.random_range(0..3_000);
            let direction = if rng.random_bool(0.5) { Direction::Ascending } else { Direction::Descending };
            let scan = |entries: &mut Vec<u64>, leaves: &mut Vec<ordo_storage::LeafVersion>| {
                index.scan(
                    low,
                    high,
                    direction,
                    &mut |key, _| {
                        entries.push(key);
                        true
                    },
                    &mut |leaf| leaves.push(leaf),
                );
            };
            let (mut first, mut first_leaves) = (Vec::new(), Vec::new());
            scan(&mut first, &mut first_leaves);
            let (mut second, mut second_leaves) = (Vec::new(), Vec::new());
            scan(&mut second, &mut second_leaves);
            if first_leaves.iter().all(|leaf| index.version(leaf.leaf) == leaf.version) {
                passed += 1;
                assert_eq!(first, second, "scan {low}..={high} validated, but the range changed (a phantom)");
            } else {
                failed += 1;
            }
        }
        (passed, failed)
    });
    println!("validations: {passed} passed, {failed} failed");
    assert!(passed > 0, "no validation passed, so nothing was checked");
}

/// Sets its flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}
