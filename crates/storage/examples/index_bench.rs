//! Load time and lookup rate of the ordered index (and of a record arena), single-threaded.
//!
//! ```text
//! cargo run --release -p ordo-storage --example index_bench -- [KEYS] [LOOKUPS] [all|lookups]
//! ```
//! (defaults: 10,000,000 keys, 10,000,000 lookups). It loads keys `0..KEYS` three ways (bulk
//! from a sorted iterator, one insert at a time in ascending order, and a record arena of
//! YCSB-sized records), then looks up uniformly random keys. For instruction counts, which
//! stay comparable on a loaded machine, run the lookups alone under callgrind:
//! ```text
//! valgrind --tool=callgrind --cache-sim=yes --toggle-collect='*lookups*' \
//!     target/release/examples/index_bench 1000000 1000000 lookups
//! ```

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use ordo_storage::index::node::{LEAF_KEYS_MAX, NODE_LINES};
use ordo_storage::{OrderedIndex, Records};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Words of a YCSB record (ten 100-byte fields and a header word, as the engines lay it out).
const YCSB_RECORD_WORDS: usize = 10 * 100 / 8 + 1;
const SEED: u64 = 42;

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
