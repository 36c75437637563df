//! The timestamp-order check: is the order of commit timestamps itself a valid serial order?
//!
//! Engines that assign commit timestamps (`ts`) promise more than serializability: running
//! the transactions one by one in `ts` order reproduces every read. In version terms:
//!
//! * every entry has a `ts`, and no two share one;
//! * every write installs version `ts` of its key;
//! * every read of key `k` saw version `v < ts`, and no committed write of `k` has a version
//!   strictly between `v` and `ts`: the read saw the latest version as of its place in `ts`
//!   order. A read of `v = ts` is accepted when it is the transaction's own write;
//! * every row a scan lists is such a read, and every written key of the scanned range that the
//!   scan does not list was absent at `ts`: its latest version before `ts` is a delete, or
//!   there is none and its first write is an insert (or the transaction itself inserted or
//!   deleted the key, whose scan may have run before or after that write).
//!
//! ```text
//!  key k:   v0 ─── v12 (T3) ─── v30 (T8) ─── v41 (T9)
//!  T5 @ ts 35 must read v30:  v12 is stale, v41 is from its future, v33 never existed
//! ```
//!
//! Keys are `(table, key)`; inserts and deletes are writes like updates. The reads are sorted by
//! `(table, key, ts)` and walked beside the sorted writes, so "the latest version of `k` before
//! `ts`" is the write just behind the walk: `O(N log N)` overall. An unlisted key of a scan is
//! looked up by binary search among its key's versions. A
//! history that passes also passes [`check`](crate::check) (the `ts` order is a witness); one
//! can pass `check` and fail here when its serial order is not its timestamp order.

use crate::entry::{HistoryEntry, TableId, WriteEffect};
use crate::versions::{
    Detail, KeyIndex, Operation, TxnIndex, VersionOrder, assert_within_limits, check_unique_ids, check_writes,
    gather_writes,
};
use crate::violation::Violation;

/// A read with its transaction's commit timestamp, ordered by key, then timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct TimedRead {
    table: TableId,
    key: u64,
    ts: u64,
    version: u64,
    txn: TxnIndex,
}

/// Checks that the commit-timestamp order of `entries` is a valid serial order.
///
/// # Panics
///
/// If the history holds more than `u32::MAX` transactions or operations.
pub fn check_timestamp_order(entries: &[HistoryEntry]) -> Result<(), Violation> {
    check_unique_ids(entries)?;
    // One pass over the entries: timestamps, writes and reads.
    let mut commit_ts: Vec<(u64, TxnIndex)> = Vec::with_capacity(entries.len());
    let mut writes = Vec::with_capacity(entries.iter().map(|entry| entry.writes.len()).sum());
    let mut reads: Vec<TimedRead> = Vec::with_capacity(entries.iter().map(|entry| entry.reads.len()).sum());
    let mut scratch = Vec::new();
    for (entry, txn) in entries.iter().zip(0..) {
        check_writes(entry, &mut scratch)?;
        let ts = entry.ts.ok_or(Violation::MissingTimestamp { id: entry.id })?;
        if let Some((access, _)) = entry.all_writes().find(|(access, _)| access.version != ts) {
            let (table, key, version) = (access.table, access.key, access.version);
            return Err(Violation::VersionNotTimestamp { id: entry.id, ts, table, key, version });
        }
        commit_ts.push((ts, txn));
        gather_writes(entry, txn, &mut writes);
        reads.extend(entry.reads.iter().map(|access| TimedRead {
            table: access.table,
            key: access.key,
            ts,
            version: access.version,
            txn,
        }));
        for scan in &entry.scans {
            reads.extend(scan.rows.iter().map(|&(key, version)| TimedRead {
                table: scan.table,
                key,
                ts,
                version,
                txn,
            }));
        }
    }
    assert_within_limits(entries.len(), writes.len() + reads.len());
    commit_ts.sort_unstable();
    if let Some(pair) = commit_ts.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(Violation::DuplicateTimestamp {
            ts: pair[0].0,
            first_id: entries[pair[0].1 as usize].id,
            second_id: entries[pair[1].1 as usize].id,
        });
    }

    // Versions are timestamps, timestamps are distinct and each transaction writes a key once,
    // so no version has two writers.
    let order = VersionOrder::sort(writes, entries)?;
    let writes = &order.writes;
    reads.sort_unstable();

    // First write at or after the current read's (key, ts); only moves forward.
    let mut at = 0;
    for read in &reads {
        while writes.get(at).is_some_and(|write| (write.row(), write.version) < ((read.table, read.key), read.ts)) {
            at += 1;
        }
        let id = entries[read.txn as usize].id;
        let (table, key) = (read.table, read.key);
        let same_key = |write: &&Operation| write.row() == (table, key);
        let latest_before = at.checked_sub(1).and_then(|before| writes.get(before)).filter(same_key);
        let latest_version = latest_before.map_or(0, |write| write.version);
        let own_write = writes.get(at).filter(same_key).is_some_and(|write| write.version == read.ts);
        debug_assert!(!own_write || writes[at].txn == read.txn, "versions are commit timestamps, which are distinct");

        if read.version > read.ts || (read.version == read.ts && !own_write) {
            return Err(Violation::ReadFromFuture { id, ts: read.ts, table, key, version: read.version });
        }
        if read.version == read.ts {
            continue;
        }
        if read.version < latest_version {
            let latest_writer = latest_before.map_or(0, |write| entries[write.txn as usize].id);
            return Err(Violation::StaleRead {
                id,
                ts: read.ts,
                table,
                key,
                version: read.version,
                latest_version,
                latest_writer,
            });
        }
        if read.version > latest_version {
            // Between the latest write before ts and ts itself nothing was written.
            return Err(Violation::PhantomRead { id, table, key, version: read.version });
        }
    }
    check_scanned_absences(entries, writes)
}

/// Every written key a scan's range holds but its rows do not list was absent at the
/// scanning transaction's `ts` (or written by that transaction itself).
fn check_scanned_absences(entries: &[HistoryEntry], writes: &[Operation]) -> Result<(), Violation> {
    if entries.iter().all(|entry| entry.scans.is_empty()) {
        return Ok(());
    }
    let keys = KeyIndex::build(writes);
    let mut listed = Vec::new();
    for (entry, txn) in entries.iter().zip(0..) {
        let ts = entry.ts.expect("checked by the caller");
        for scan in &entry.scans {
            listed.clear();
            listed.extend(scan.rows.iter().map(|&(key, _)| key));
            listed.sort_unstable();
            for written in keys.range(scan.table, scan.low, scan.high) {
                if listed.binary_search(&written.key).is_ok() {
                    continue;
                }
                let versions = &writes[written.first_write as usize..written.end_write as usize];
                let before = versions.partition_point(|write| write.version < ts);
                // An own insert or delete at ts may have come before or after the scan; an own
                // update leaves the row present on both sides.
                let own = versions.get(before).filter(|write| write.version == ts && write.txn == txn);
                if own.is_some_and(|write| write.detail != Detail::Write(WriteEffect::Update)) {
                    continue;
                }
                let (present, version) = match before.checked_sub(1).map(|latest| versions[latest]) {
                    Some(latest) => (latest.detail != Detail::Write(WriteEffect::Delete), latest.version),
                    None => (!written.initially_absent(writes), 0),
                };
                if present {
                    return Err(Violation::ScanMissedRow {
                        id: entry.id,
                        ts,
                        table: scan.table,
                        low: scan.low,
                        high: scan.high,
                        key: written.key,
                        version,
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, ts: u64, reads: &[(u64, u64)], writes: &[(u64, u64)]) -> HistoryEntry {
        HistoryEntry::new(id, reads.to_vec(), writes.to_vec()).with_ts(ts)
    }

    #[test]
    fn accepts_reads_of_the_latest_version_and_of_own_writes() {
        let history = [
            entry(1, 12, &[(7, 0)], &[(7, 12)]),
            entry(2, 30, &[(7, 12), (7, 30)], &[(7, 30)]),
            entry(3, 35, &[(7, 30), (8, 0)], &[]),
        ];
        assert_eq!(check_timestamp_order(&history), Ok(()));
    }

    #[test]
    fn names_each_way_a_read_can_miss_its_place() {
        let base = [entry(1, 12, &[], &[(7, 12)]), entry(2, 30, &[], &[(7, 30)])];
        let with = |read: (u64, u64)| {
            let mut history = base.to_vec();
            history.push(entry(5, 35, &[read], &[]));
            check_timestamp_order(&history)
        };
        assert_eq!(with((7, 30)), Ok(()));
        assert_eq!(
            with((7, 12)),
            Err(Violation::StaleRead {
                id: 5,
                ts: 35,
                table: 0,
                key: 7,
                version: 12,
                latest_version: 30,
                latest_writer: 2
            })
        );
        assert_eq!(with((7, 33)), Err(Violation::PhantomRead { id: 5, table: 0, key: 7, version: 33 }));
        assert_eq!(with((7, 35)), Err(Violation::ReadFromFuture { id: 5, ts: 35, table: 0, key: 7, version: 35 }));
        assert_eq!(with((7, 41)), Err(Violation::ReadFromFuture { id: 5, ts: 35, table: 0, key: 7, version: 41 }));
    }

    #[test]
    fn a_scan_must_see_exactly_the_rows_present_at_its_ts() {
        // Table 2: key 5 inserted at ts 10, deleted at 20, inserted at 30; key 7 loaded (present
        // at version 0) and deleted at 25.
        let base = [
            HistoryEntry::new(1, vec![], vec![]).insert(2, 5, 10).with_ts(10),
            HistoryEntry::new(2, vec![], vec![]).delete(2, 5, 20).with_ts(20),
            HistoryEntry::new(3, vec![], vec![]).delete(2, 7, 25).with_ts(25),
            HistoryEntry::new(4, vec![], vec![]).insert(2, 5, 30).with_ts(30),
        ];
        let with = |ts: u64, rows: &[(u64, u64)]| {
            let mut history = base.to_vec();
            history.push(HistoryEntry::new(9, vec![], vec![]).scan(2, 0, 100, rows).with_ts(ts));
            check_timestamp_order(&history)
        };
        assert_eq!(with(5, &[(7, 0)]), Ok(()));
        assert_eq!(with(15, &[(5, 10), (7, 0)]), Ok(()));
        assert_eq!(with(22, &[(7, 0)]), Ok(()));
        assert_eq!(with(27, &[]), Ok(()));
        assert_eq!(with(35, &[(5, 30)]), Ok(()));
        assert_eq!(
            with(15, &[(7, 0)]),
            Err(Violation::ScanMissedRow { id: 9, ts: 15, table: 2, low: 0, high: 100, key: 5, version: 10 })
        );
        assert_eq!(
            with(5, &[]),
            Err(Violation::ScanMissedRow { id: 9, ts: 5, table: 2, low: 0, high: 100, key: 7, version: 0 })
        );
        assert_eq!(
            with(35, &[(5, 10)]),
            Err(Violation::StaleRead {
                id: 9,
                ts: 35,
                table: 2,
                key: 5,
                version: 10,
                latest_version: 30,
                latest_writer: 4
            })
        );
    }

    #[test]
    fn timestamps_must_exist_be_distinct_and_match_versions() {
        let missing = [entry(1, 3, &[], &[]), HistoryEntry::new(2, vec![], vec![])];
        assert_eq!(check_timestamp_order(&missing), Err(Violation::MissingTimestamp { id: 2 }));
        let shared = [entry(1, 3, &[], &[]), entry(2, 4, &[], &[]), entry(3, 3, &[], &[])];
        assert_eq!(
            check_timestamp_order(&shared),
            Err(Violation::DuplicateTimestamp { ts: 3, first_id: 1, second_id: 3 })
        );
        let mismatched = [entry(1, 3, &[], &[(4, 3), (5, 2)])];
        assert_eq!(
            check_timestamp_order(&mismatched),
            Err(Violation::VersionNotTimestamp { id: 1, ts: 3, table: 0, key: 5, version: 2 })
        );
    }
}
