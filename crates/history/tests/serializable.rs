//! Serializable histories pass, and histories made non-serializable on purpose fail.
//!
//! Serial executions are simulated from a seed (`support::serial_history`): one transaction at
//! a time against a map of latest versions. Such a history is serializable by construction,
//! and so is any shuffle of its lines. Every failing case prints its seed.

mod support;

use ordo_history::{Access, CycleStep, DependencyKind, HistoryEntry, Violation, check, check_timestamp_order};
use proptest::prelude::*;
use proptest::sample::Index;
use support::{SerialConfig, assert_cycle_is_real, serial_history, serializable_by_brute_force, shuffled};

const SMALL: SerialConfig =
    SerialConfig { transactions: 60, keys: 8, keys_per_transaction_max: 4, read_only_percent: 20 };

proptest! {
    #[test]
    fn serial_histories_pass_in_any_line_order(
        seed in any::<u64>(),
        transactions in 0usize..200,
        keys in 1u64..50,
        keys_per_transaction_max in 1usize..6,
        read_only_percent in 0u32..60,
    ) {
        let config = SerialConfig { transactions, keys, keys_per_transaction_max, read_only_percent };
        let entries = shuffled(serial_history(seed, &config), seed);
        let report = check(&entries).map_err(|violation| TestCaseError::fail(format!("seed {seed}: {violation}")))?;
        prop_assert_eq!(report.transactions, transactions);
        prop_assert_eq!(report.reads, entries.iter().map(|entry| entry.reads.len()).sum::<usize>());
        prop_assert_eq!(report.writes, entries.iter().map(|entry| entry.writes.len()).sum::<usize>());
        // The simulation's versions are its commit timestamps: ts order is the serial order.
        prop_assert_eq!(check_timestamp_order(&entries), Ok(()), "seed {}", seed);
    }

    /// A transaction `T` that writes key `a` after `W` did is made to read `a` as it was just
    /// before `W`'s write. Then `T -rw(a)-> W` (T missed W's version) and the ww chain on `a`
    /// leads from `W` back to `T`: a guaranteed cycle, and every cycle must use that rw edge,
    /// because it is the only edge running against the serial order.
    #[test]
    fn a_stale_read_before_an_overwritten_write_closes_a_cycle(
        seed in any::<u64>(),
        choice in any::<Index>(),
    ) {
        // 60 transactions that all write, over 8 keys: some key has two writers.
        let config = SerialConfig { read_only_percent: 0, ..SMALL };
        let mut entries = serial_history(seed, &config);
        let (reader, key, stale_version, overwriter) = stale_read_candidate(&entries, choice);
        let reader_id = entries[reader].id;
        entries[reader].reads.retain(|access| access.key != key);
        entries[reader].reads.push(Access::new(key, stale_version));
        let overwriter_id = entries[overwriter].id;
        let entries = shuffled(entries, seed);

        match check(&entries) {
            Err(Violation::Cycle { transactions }) => {
                assert_cycle_is_real(&entries, &transactions);
                let expected = CycleStep::on_key(reader_id, DependencyKind::ReadWrite, key, overwriter_id);
                prop_assert!(transactions.contains(&expected), "seed {}: {:?} lacks {:?}", seed, transactions, expected);
            }
            other => prop_assert!(false, "seed {}: expected a cycle, got {:?}", seed, other),
        }
        prop_assert!(check_timestamp_order(&entries).is_err());
    }

    /// On tiny histories (a serial one, then a few versions changed at random), the checker
    /// agrees with trying every serial order.
    #[test]
    fn agrees_with_brute_force_on_tiny_histories(
        seed in any::<u64>(),
        transactions in 1usize..6,
        keys in 1u64..4,
        edits in proptest::collection::vec((any::<Index>(), any::<Index>(), 0u64..12, any::<bool>()), 0..3),
    ) {
        let config = SerialConfig { transactions, keys, keys_per_transaction_max: 3, read_only_percent: 20 };
        let mut entries = serial_history(seed, &config);
        for (which, operation, version, edit_read) in edits {
            let entry = &mut entries[which.index(transactions)];
            let list = if edit_read { &mut entry.reads } else { &mut entry.writes };
            if !list.is_empty() {
                let at = operation.index(list.len());
                list[at].version = version;
            }
        }
        let written_twice = entries.iter().any(|entry| entry.key_written_twice().is_some());
        prop_assume!(!written_twice);

        let verdict = check(&entries);
        prop_assert_eq!(verdict.is_ok(), serializable_by_brute_force(&entries), "seed {}: {:?}\n{:?}", seed, verdict, entries);
        if let Err(Violation::Cycle { transactions }) = &verdict {
            assert_cycle_is_real(&entries, transactions);
        }
        if check_timestamp_order(&entries).is_ok() {
            prop_assert!(verdict.is_ok(), "timestamp order is a serial order, so the history is serializable");
            let mut by_ts: Vec<usize> = (0..entries.len()).collect();
            by_ts.sort_by_key(|&position| entries[position].ts);
            prop_assert!(support::runs_serially(&entries, &by_ts));
        }
    }
}

/// A `(reader position, key, stale version, overwriter position)` such that the reader writes
/// `key` after the overwriter did, and `stale version` is the version just before the
/// overwriter's. Entries are in serial order.
fn stale_read_candidate(entries: &[HistoryEntry], choice: Index) -> (usize, u64, u64, usize) {
    // key -> [(version, position)] in serial (= version) order.
    let mut writers: std::collections::BTreeMap<u64, Vec<(u64, usize)>> = std::collections::BTreeMap::new();
    for (position, entry) in entries.iter().enumerate() {
        for access in &entry.writes {
            writers.entry(access.key).or_default().push((access.version, position));
        }
    }
    let mut candidates = Vec::new();
    for (&key, list) in &writers {
        for later in 1..list.len() {
            for earlier in 0..later {
                let stale_version = if earlier == 0 { 0 } else { list[earlier - 1].0 };
                candidates.push((list[later].1, key, stale_version, list[earlier].1));
            }
        }
    }
    assert!(!candidates.is_empty(), "more writing transactions than keys, so some key has two writers");
    *choice.get(&candidates)
}

#[test]
fn a_large_serial_history_passes() {
    let config =
        SerialConfig { transactions: 200_000, keys: 50_000, keys_per_transaction_max: 10, read_only_percent: 10 };
    let entries = shuffled(serial_history(7, &config), 7);
    let report = check(&entries).unwrap();
    assert_eq!(report.transactions, 200_000);
    assert!(report.edges() > 200_000, "{report:?}");
    assert_eq!(check_timestamp_order(&entries), Ok(()));
}
