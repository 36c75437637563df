//! Load time and lookup rate of the ordered index (and of a record arena), single-threaded.
//!
//! ```text
//! cargo run --release -p ordo-storage --example index_bench -- [KEYS] [LOOKUPS] [all|lookups]
//! ```
//! (defaults: 10,000,000 keys, 10,000,000 lookups). It loads keys `0..KEYS` three ways (bulk
//! from a sorted iterator, one insert at a time in ascending order, and a record arena of
//! YCSB-sized records), then looks up uniformly random keys, then runs YCSB E's scans (from a
//! uniformly random key, 1..=100 rows, ascending; LOOKUPS / 10 of them) and long scans
//! (1..=20,000 rows; LOOKUPS / 1000) and reports the rows they return per second beside the
//! lookups per second, and the time per leaf. For instruction counts, which
//! stay comparable on a loaded machine, run the lookups alone under callgrind:
//! ```text
//! valgrind --tool=callgrind --cache-sim=yes --toggle-collect='*lookups*' \
//!     target/release/examples/index_bench 1000000 1000000 lookups
//! ```

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use ordo_storage::index::node::{LEAF_KEYS_MAX, NODE_LINES};
use ordo_storage::{Direction, OrderedIndex, Records};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Words of a YCSB record (ten 100-byte fields and a header word, as the engines lay it out).
const YCSB_RECORD_WORDS: usize = 10 * 100 / 8 + 1;
const SEED: u64 = 42;
/// Longest scan, as YCSB E's.
const SCAN_ROWS_MAX: u64 = 100;
/// Longest long scan (to measure the cost per leaf).
const LONG_SCAN_ROWS_MAX: u64 = 20_000;

fn argument(position: usize, default: u64) -> Result<u64, String> {
    match std::env::args().nth(position) {
        None => Ok(default),
        Some(text) => {
            text.replace('_', "").parse().map_err(|_| format!("argument {position} must be a count, got {text:?}"))
        }
    }
}

/// Looks up `count` uniformly random keys below `keys`; returns a checksum of the values.
#[inline(never)]
fn lookups(index: &OrderedIndex, keys: u64, count: u64) -> u64 {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(SEED);
    let mut checksum = 0u64;
    for _ in 0..count {
        let key = rng.random_range(0..keys);
        checksum = checksum.wrapping_add(index.get(key).unwrap_or(u64::MAX));
    }
    checksum
}

/// Runs `count` ascending scans from uniformly random keys below `keys`, each of
/// `1..=rows_max` rows; returns the rows visited and the leaves reported.
#[inline(never)]
fn scans(index: &OrderedIndex, keys: u64, count: u64, rows_max: u64) -> (u64, u64) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(SEED + 1);
    let (mut rows, mut leaves) = (0u64, 0u64);
    for _ in 0..count {
        let start = rng.random_range(0..keys);
        let length = rng.random_range(1..=rows_max);
        let mut left = length;
        index.scan(
            start,
            u64::MAX,
            Direction::Ascending,
            &mut |_, value| {
                rows += 1;
                black_box(value);
                left -= 1;
                left > 0
            },
            &mut |_| leaves += 1,
        );
    }
    (rows, leaves)
}

/// Inserts keys `0..keys` one at a time in ascending order.
#[inline(never)]
fn ascending_inserts(keys: u64) -> OrderedIndex {
    let index = OrderedIndex::with_capacity(keys);
    for key in 0..keys {
        index.insert(key, key).expect("fresh key");
    }
    index
}

fn main() -> ExitCode {
    let (keys, count) = match (argument(1, 10_000_000), argument(2, 10_000_000)) {
        (Ok(keys), Ok(count)) if keys > 0 => (keys, count),
        (Err(error), _) | (_, Err(error)) => {
            eprintln!("index_bench: {error}\nusage: index_bench [KEYS] [LOOKUPS]");
            return ExitCode::from(2);
        }
        _ => {
            eprintln!("index_bench: KEYS must be at least 1");
            return ExitCode::from(2);
        }
    };
    let all_phases = match std::env::args().nth(3).as_deref() {
        None | Some("all") => true,
        Some("lookups") => false,
        Some(other) => {
            eprintln!("index_bench: the third argument is all or lookups, not {other:?}");
            return ExitCode::from(2);
        }
    };
    println!("node: {NODE_LINES} cache lines, {LEAF_KEYS_MAX} keys per leaf; {keys} keys, {count} lookups");

    let start = Instant::now();
    let index = OrderedIndex::from_sorted((0..keys).map(|key| (key, key))).expect("sorted keys");
    let bulk_s = start.elapsed().as_secs_f64();
    println!(
        "bulk load:          {bulk_s:.3} s ({:.1} M keys/s), {} nodes",
        keys as f64 / bulk_s / 1e6,
        index.nodes_allocated()
    );

    if all_phases {
        other_loads(keys);
    }

    let start = Instant::now();
    let checksum = black_box(lookups(&index, keys, count));
    let lookup_s = start.elapsed().as_secs_f64();
    println!(
        "random lookups:     {lookup_s:.3} s ({:.2} M lookups/s, {:.0} ns each), checksum {checksum}",
        count as f64 / lookup_s / 1e6,
        lookup_s * 1e9 / count as f64
    );

    // YCSB E's scans, then long ones whose cost is per leaf rather than per descent.
    for (rows_max, scan_count) in [(SCAN_ROWS_MAX, count / 10), (LONG_SCAN_ROWS_MAX, count / 1000)] {
        let scan_count = scan_count.max(1);
        let start = Instant::now();
        let (rows, leaves) = scans(&index, keys, scan_count, rows_max);
        let scan_s = start.elapsed().as_secs_f64();
        println!(
            "scans (1..={rows_max}): {scan_s:.3} s ({:.2} M rows/s, {:.1} ns per row, {:.0} ns per leaf, {:.0} ns per \
             scan, {:.2} leaves per scan)",
            rows as f64 / scan_s / 1e6,
            scan_s * 1e9 / rows as f64,
            scan_s * 1e9 / leaves as f64,
            scan_s * 1e9 / scan_count as f64,
            leaves as f64 / scan_count as f64
        );
    }
    ExitCode::SUCCESS
}

/// Inserts `keys` distinct keys in a scattered order (an odd multiplier permutes `u64`).
#[inline(never)]
fn scattered_inserts(keys: u64) -> OrderedIndex {
    const SCATTER: u64 = 0x9E37_79B9_7F4A_7C15;
    let index = OrderedIndex::with_capacity(keys);
    for i in 0..keys {
        index.insert(i.wrapping_mul(SCATTER), i).expect("distinct keys");
    }
    index
}

/// Loads by ascending inserts, scattered inserts, and a record arena, and reports their times.
fn other_loads(keys: u64) {
    let start = Instant::now();
    let inserted = ascending_inserts(keys);
    let insert_s = start.elapsed().as_secs_f64();
    println!(
        "ascending inserts:  {insert_s:.3} s ({:.1} M keys/s), {} nodes",
        keys as f64 / insert_s / 1e6,
        inserted.nodes_allocated()
    );
    drop(inserted);

    let start = Instant::now();
    let scattered = scattered_inserts(keys);
    let scattered_s = start.elapsed().as_secs_f64();
    println!(
        "scattered inserts:  {scattered_s:.3} s ({:.1} M keys/s), {} nodes",
        keys as f64 / scattered_s / 1e6,
        scattered.nodes_allocated()
    );
    drop(scattered);

    let start = Instant::now();
    let records = Records::new(YCSB_RECORD_WORDS, keys);
    records.alloc_dense(keys);
    for id in 0..keys {
        records.words(id)[0].store(id, std::sync::atomic::Ordering::Relaxed);
    }
    let records_s = start.elapsed().as_secs_f64();
    println!("record arena:       {records_s:.3} s for {keys} records of {} words", records.stride_words());
    drop(records);
}
