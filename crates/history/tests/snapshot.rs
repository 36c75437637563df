//! The snapshot-isolation check against snapshot isolation itself: random transactions run
//! by the textbook rules (each reads the versions committed before it started; it commits
//! unless a key it writes got a version committed after it started, first committer wins)
//! must always pass, and often fail the serializability check (write skew). Dropping the
//! first-committer-wins rule lets lost updates through, and the check must then catch some.

use ordo_history::{HistoryEntry, check, check_snapshot_isolation};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// One transaction of the run: when it starts and commits, what it reads and writes.
struct Planned {
    start: u64,
    end: u64,
    reads: Vec<u64>,
    writes: Vec<u64>,
}

/// Up to `count` distinct keys below `keys`, in order.
fn pick(rng: &mut Xoshiro256PlusPlus, count: usize, keys: u64) -> Vec<u64> {
    let mut chosen: Vec<u64> = (0..count).map(|_| rng.random_range(0..keys)).collect();
    chosen.sort_unstable();
    chosen.dedup();
    chosen
}

/// Runs `transactions` random transactions over `keys` keys under snapshot isolation (or,
/// without `first_committer_wins`, under a broken version of it); returns the history of the
/// committed ones.
fn run(seed: u64, transactions: usize, keys: u64, first_committer_wins: bool) -> Vec<HistoryEntry> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let plans: Vec<Planned> = (0..transactions)
        .map(|_| {
            let start = rng.random_range(0..transactions as u64 * 4);
            let end = start + 1 + rng.random_range(0..12);
            let (reads, writes) = (rng.random_range(0..4), rng.random_range(0..3));
            let (reads, writes) = (pick(&mut rng, reads, keys), pick(&mut rng, writes, keys));
            Planned { start, end, reads, writes }
        })
        .collect();
    // Each key's committed versions: (commit time, version), in commit order.
    let mut versions: Vec<Vec<(u64, u64)>> = vec![Vec::new(); keys as usize];
    let mut next_version = 1;
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|&t| (plans[t].end, t));
    let mut history = Vec::new();
    for t in order {
        let plan = &plans[t];
        // The version of `key` committed last before the transaction started (0: the initial).
        let seen = |key: u64| {
            versions[key as usize].iter().rev().find(|&&(committed, _)| committed < plan.start).map_or(0, |&(_, v)| v)
        };
        let conflict = plan.writes.iter().any(|&key| versions[key as usize].iter().any(|&(c, _)| c >= plan.start));
        if first_committer_wins && conflict {
            continue;
        }
        let reads: Vec<(u64, u64)> = plan.reads.iter().map(|&key| (key, seen(key))).collect();
        let mut writes = Vec::new();
        for &key in &plan.writes {
            versions[key as usize].push((plan.end, next_version));
            writes.push((key, next_version));
            next_version += 1;
        }
        history.push(HistoryEntry::new(t as u64 + 1, reads, writes));
    }
    history
}

proptest! {
    #[test]
    fn snapshot_isolation_runs_pass(seed in any::<u64>(), transactions in 1usize..60, keys in 1u64..8) {
        let history = run(seed, transactions, keys, true);
        if let Err(violation) = check_snapshot_isolation(&history) {
            prop_assert!(false, "seed {}: {}", seed, violation);
        }
    }
}

#[test]
fn snapshot_isolation_runs_show_write_skew_and_broken_ones_are_caught() {
    let (mut not_serializable, mut caught) = (0, 0);
    for seed in 0..400 {
        let history = run(seed, 40, 4, true);
        check_snapshot_isolation(&history).unwrap_or_else(|violation| panic!("seed {seed}: {violation}"));
        not_serializable += usize::from(check(&history).is_err());
        caught += usize::from(check_snapshot_isolation(&run(seed, 40, 4, false)).is_err());
    }
    // At this contention both are common (281 and 395 of 400 when written); the bounds leave
    // room for another random stream, not for a checker that rarely catches anything.
    assert!(not_serializable > 100, "only {not_serializable} of 400 SI runs were not serializable");
    assert!(caught > 200, "only {caught} of 400 runs without first committer wins were caught");
}
