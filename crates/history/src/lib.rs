//! # ordo-history: recorded transaction histories and their checkers
//!
//! Every ordo engine can record the transactions it commits; this crate holds that record's
//! format and the checkers that read it back and decide whether the execution was
//! serializable (or, for `mvcc_si`, allowed by snapshot isolation). An engine under test
//! needs no trust in its own bookkeeping: the checkers see only what each committed
//! transaction read and wrote.
//!
//! ## The format
//!
//! JSON lines, one committed transaction per line ([`HistoryEntry`]):
//!
//! ```text
//! {"id": 7, "reads": [[5, 3], [2, 9, 0]], "writes": [[5, 12]], "inserts": [[2, 9, 4]],
//!  "deletes": [[2, 8, 5]], "scans": [{"table": 2, "low": 0, "high": 100, "rows": [[3, 2], [9, 4]]}],
//!  "ts": 12}
//! ```
//!
//! (one line in the file). An access is `[key, version]` on table 0 or `[table, key, version]`
//! ([`Access`]); a key is the pair `(table, key)`. `writes` installed a version over a present
//! row (in histories from before inserts and deletes, any write), `inserts` made an absent key
//! present, `deletes` made a present key absent (their version is a tombstone). A scan
//! ([`Scan`]) names its table, the key range `low..=high` it covered (up to where it stopped,
//! for a scan cut short by a limit) and every `(key, version)` it saw there; it may list the
//! tombstones it passed. A point read of an absent key is a read of the tombstone version the
//! engine saw, or a scan with `low == high == key` and no rows.
//!
//! Version 0 of every key is its initial state, which no transaction writes: present if the
//! key was loaded, absent otherwise (the checker infers which: absent when the key's first
//! write is an insert). For one key, a later version has a larger number. `ts` (the commit
//! timestamp) is optional and written only by engines that have one. `inserts`, `deletes`,
//! `scans` and `ts` are left out when empty, so a history of point reads and updates on one
//! table is written exactly as before they existed, and every such old history still reads and
//! checks the same. Unknown fields are rejected. Aborted transactions never appear.
//! [`HistoryWriter`] appends entries; [`read_history`] parses them back and names the line of
//! anything malformed.
//!
//! ## The checker
//!
//! Because every version names its writer and versions of a key are totally ordered, the
//! history fixes the direct serialization graph of Adya's thesis (§3.1): one vertex per
//! committed transaction and an edge `a -> b` whenever `b` must follow `a` in every equivalent
//! serial order:
//!
//! ```text
//!  key k:  v0 (initial) ── v3 (T1) ── v7 (T2) ── v9 (T4)
//!                          │                     ▲
//!                          └─ read by T5 ──rw────┘ ... T5 read v3, so it precedes
//!                                                      T2, who overwrote v3
//!  ww  T1 -> T2 -> T4        writer of a version -> writer of the next version
//!  wr  T1 -> T5              writer of a version -> every other reader of it
//!  rw  T5 -> T2              reader of a version -> writer of the next version
//! ```
//!
//! A scan reads every row it lists. A written key of its range that it does not list was seen
//! absent, that is, it read one of the key's absent versions (version 0 when initially absent,
//! each delete). With exactly one such version the scan gets the edges of a read of it, and the
//! rw edge to the next writer is the phantom anti-dependency: a scan racing an insert into its
//! range shows up as a cycle. With none, the scan missed a row that always existed
//! ([`Violation::MissedRow`]); with several, the history does not say which one it saw, so no
//! edge is added and the case is counted in [`CheckReport::ambiguous_absences`].
//!
//! The history is conflict-serializable exactly when this graph is acyclic. [`check`] builds
//! it by sorting (`O(N log N)` in the number of operations, no per-operation hashing) and
//! either returns a [`CheckReport`] or a [`Violation`]: a malformed version order (a version
//! written twice, a read of a version nobody committed) or one concrete dependency cycle,
//! found without recursion so that histories of millions of transactions fit.
//!
//! [`check_timestamp_order`] checks the stronger property that engines with commit timestamps
//! promise: the order of `ts` itself is a valid serial order (every write installs version
//! `ts`, every read saw the latest version committed before its transaction's `ts`).
//!
//! [`check_snapshot_isolation`] checks the weaker promise of snapshot isolation on the same
//! graph: cycles are allowed, but each must hold two anti-dependencies in a row (Cerone and
//! Gotsman, PODC 2016, characterize SI over a version order exactly so). It looks for a closed
//! walk in which no rw edge follows another, as a cycle search over pairs (transaction,
//! whether the walk entered it by an rw edge). Write skew passes; a lost update (`ww` then
//! `rw`), a read of half a transaction's writes (`rw` then `wr`) and a scan that saw half of
//! another transaction's inserts do not. It does not order one worker's transactions by
//! their session, so it checks SI rather than strong session SI.
//! [`check_snapshot_isolation_and_serializability`] answers both questions from one graph
//! (what `ordo check --isolation snapshot` reports).
//!
//! ```
//! use ordo_history::{HistoryEntry, Violation, check, check_snapshot_isolation};
//!
//! // Write skew: both read x and y at their initial versions, each writes one of them.
//! let history = vec![
//!     HistoryEntry::new(1, vec![(10, 0), (20, 0)], vec![(10, 1)]),
//!     HistoryEntry::new(2, vec![(10, 0), (20, 0)], vec![(20, 2)]),
//! ];
//! let violation = check(&history).unwrap_err();
//! assert!(matches!(violation, Violation::Cycle { .. }));
//! assert_eq!(violation.to_string(), "cycle: T1 -rw(k=20)-> T2 -rw(k=10)-> T1");
//! // Snapshot isolation allows it: the cycle's two anti-dependencies follow each other.
//! assert!(check_snapshot_isolation(&history).is_ok());
//! ```

mod check;
mod entry;
mod error;
mod graph;
mod reader;
mod timestamp;
mod versions;
mod violation;
mod writer;

pub use check::{CheckReport, check, check_snapshot_isolation, check_snapshot_isolation_and_serializability};
pub use entry::{Access, HistoryEntry, Scan, TableId, WriteEffect};
pub use error::HistoryError;
pub use reader::{read_history, read_history_file};
pub use timestamp::check_timestamp_order;
pub use violation::{CycleStep, DependencyKind, ScanRange, Violation};
pub use writer::HistoryWriter;
