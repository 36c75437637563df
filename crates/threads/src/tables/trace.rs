//! What a committed transaction leaves behind, written once for every protocol over tables:
//! its history entry (for `ordo-history`'s checker) and, with a write-ahead log, its redo
//! record.
//!
//! The redo record: with a log attached ([`Trace::log_to`]), every `installed` write is
//! encoded at once, row image included, into a buffer the trace reuses (no allocation per
//! write); `committed` seals it, and [`Trace::log_commit`], called by the driver with the
//! epoch the protocol's commit returned (its serialization epoch), appends it to the worker's
//! `WorkerLog` in one copy. Before every attempt the driver calls [`Trace::enter_epoch`], so the
//! epoch the protocol reads at its serialization point can never have closed already. A
//! read-only transaction logs nothing but still asks for its epoch to be made durable: it may
//! have read writes that are not durable yet, so it is acknowledged only with them.
//!
//! A protocol reports what an attempt observed as it goes (point reads, absences, scans) and
//! what it installed at commit; [`Trace`] turns that into one [`HistoryEntry`] in the format
//! with tables (`crates/history`), or forgets it when the attempt aborts. Every call is a
//! branch on a flag when histories are off, so protocols call it unconditionally.
//!
//! ```text
//!   attempt:  read(t, k, v) · absent(t, k) · scan_begin(t) scan_row(k, v)* scan_own(k)* scan_end(lo, hi)
//!   commit:   installed(t, effect, k, v)*  ──>  committed(ts)  ──> HistoryEntry { reads, writes,
//!   abort:    clear()                                                inserts, deletes, scans, ts }
//! ```
//!
//! How observations map onto the format (see `ordo_history`'s essay):
//! * a present row read at version `v`: a read of `v`;
//! * an absent key whose record carries a tombstone version `v > 0`: a read of `v` (the
//!   checker knows `v` was written by a delete, so it is an absent version);
//! * an absent key with no record, or with a placeholder at version 0 (never installed, or
//!   made after the key's earlier record was reclaimed): a scan of `k..=k` with no rows, so
//!   the checker infers which absent version was seen when it can;
//! * a scan: its table, the range it covered (up to where it stopped, for a scan cut short),
//!   every present row it returned and every tombstone it passed with its version, and the
//!   attempt's own writes in the range: those are listed with the version the attempt installs
//!   for them, filled in at commit (an own update or delete is what the scan saw of that key).

use ordo_history::{Access, HistoryEntry, Scan};
use ordo_log::{WorkerLog, WriteKind, format};
use ordo_storage::TableId;

use super::database::{ABSENT, VERSION_MASK};

/// The effect of an installed write.
pub use ordo_history::WriteEffect;

/// A scan row whose version is the attempt's own write, filled in at commit.
const OWN_VERSION: u64 = u64::MAX;

/// One worker's recording of its committed transactions.
#[derive(Debug)]
pub struct Trace {
    enabled: bool,
    next_id: u64,
    id_stride: u64,
    entry: HistoryEntry,
    /// The scan being recorded: its table and where its rows start in `entry.scans`.
    scan_table: TableId,
    scan_rows: Vec<(u64, u64)>,
    /// Committed entries, oldest first.
    entries: Vec<HistoryEntry>,
    /// With a write-ahead log: the redo record being built.
    redo: Option<Box<Redo>>,
}

/// The redo record of the attempt being committed, and the log it goes to.
#[derive(Debug)]
struct Redo {
    log: WorkerLog,
    /// The installed writes, encoded by `ordo_log::format::encode_write`.
    writes: Vec<u8>,
    count: u32,
    commit_ts: Option<u64>,
    /// Set by `committed`: the record is complete and waits for its epoch.
    sealed: bool,
}

impl Trace {
    /// The trace of worker `worker` of at most `workers`: its history ids are `worker + 1`,
    /// then every `workers` after that, so ids of different workers never collide.
    pub fn new(worker: usize, workers: usize, enabled: bool) -> Self {
        assert!(worker < workers, "worker {worker} of {workers}");
        Trace {
            enabled,
            next_id: worker as u64 + 1,
            id_stride: workers as u64,
            entry: HistoryEntry::new(0, Vec::new(), Vec::new()),
            scan_table: 0,
            scan_rows: Vec::new(),
            entries: Vec::new(),
            redo: None,
        }
    }

    /// Logs this worker's committed writes to `log` from now on.
    pub fn log_to(&mut self, log: WorkerLog) {
        self.redo = Some(Box::new(Redo { log, writes: Vec::new(), count: 0, commit_ts: None, sealed: false }));
    }

    /// The worker's log, if it has one.
    pub fn log(&self) -> Option<&WorkerLog> {
        self.redo.as_ref().map(|redo| &redo.log)
    }

    /// Before an attempt: enters the log's current epoch, so the epoch the attempt reads at
    /// its serialization point stays open until its record is appended.
    #[inline]
    pub fn enter_epoch(&mut self) {
        if let Some(redo) = &mut self.redo {
            assert!(!redo.sealed, "a committed transaction's redo record was never logged");
            redo.log.enter_epoch();
        }
    }

    /// Whether histories are recorded.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The attempt read `key` of `table` at `version`, present or a tombstone (`version > 0`).
    #[inline]
    pub fn read(&mut self, table: TableId, key: u64, version: u64) {
        if self.enabled {
            self.entry.reads.push(Access::in_table(table, key, version));
        }
    }

    /// The attempt saw `key` of `table` absent with no version to name (no record, or a
    /// placeholder at version 0).
    #[inline]
    pub fn absent(&mut self, table: TableId, key: u64) {
        if self.enabled {
            self.entry.scans.push(Scan { table, low: key, high: key, rows: Vec::new() });
        }
    }

    /// An absence at `version` (0: no version to name; see the module docs).
    #[inline]
    pub fn absent_at(&mut self, table: TableId, key: u64, version: u64) {
        if version == 0 {
            self.absent(table, key);
        } else {
            self.read(table, key, version);
        }
    }

    /// The attempt read `key`'s record, whose seq word was `seq`: the version of a present
    /// row, or an absence at the version of a tombstone or placeholder.
    #[inline]
    pub fn seen(&mut self, table: TableId, key: u64, seq: u64) {
        let version = seq & VERSION_MASK;
        if seq & ABSENT == 0 {
            self.read(table, key, version);
        } else {
            self.absent_at(table, key, version);
        }
    }

    /// A scan of `table` begins.
    #[inline]
    pub fn scan_begin(&mut self, table: TableId) {
        if self.enabled {
            self.scan_table = table;
            self.scan_rows.clear();
        }
    }

    /// The scan passed `key` at `version` (a present row, or a tombstone with `version > 0`;
    /// absent placeholders at version 0 are not listed).
    #[inline]
    pub fn scan_row(&mut self, key: u64, version: u64) {
        if self.enabled {
            self.scan_rows.push((key, version));
        }
    }

    /// The scan saw the attempt's own write of `key` (its version is filled in at commit).
    #[inline]
    pub fn scan_own(&mut self, key: u64) {
        if self.enabled {
            self.scan_rows.push((key, OWN_VERSION));
        }
    }

    /// The scan ends, having covered `low..=high`.
    #[inline]
    pub fn scan_end(&mut self, low: u64, high: u64) {
        if self.enabled {
            let rows = self.scan_rows.clone();
            self.entry.scans.push(Scan { table: self.scan_table, low, high, rows });
        }
    }

    /// At commit: the attempt installed `version` of `key` in `table`, whose row is now `row`
    /// (ignored for a delete).
    #[inline]
    pub fn installed(&mut self, table: TableId, effect: WriteEffect, key: u64, version: u64, row: &[u64]) {
        if let Some(redo) = &mut self.redo {
            assert!(!redo.sealed, "a committed transaction's redo record was never logged");
            let (kind, row) = match effect {
                WriteEffect::Update | WriteEffect::Insert => (WriteKind::Put, row),
                WriteEffect::Delete => (WriteKind::Delete, &[][..]),
            };
            format::encode_write(&mut redo.writes, table, kind, key, version, row);
            redo.count += 1;
        }
        if self.enabled {
            let access = Access::in_table(table, key, version);
            match effect {
                WriteEffect::Update => self.entry.writes.push(access),
                WriteEffect::Insert => self.entry.inserts.push(access),
                WriteEffect::Delete => self.entry.deletes.push(access),
            }
        }
    }

    /// The attempt committed, with commit timestamp `ts` if the protocol's timestamps order
    /// its transactions serially. With a log, the redo record is complete and waits for
    /// [`Trace::log_commit`].
    pub fn committed(&mut self, ts: Option<u64>) {
        if let Some(redo) = &mut self.redo {
            redo.commit_ts = ts;
            redo.sealed = true;
        }
        if !self.enabled {
            return;
        }
        let mut entry = std::mem::replace(&mut self.entry, HistoryEntry::new(0, Vec::new(), Vec::new()));
        if entry.scans.iter().any(|scan| scan.rows.iter().any(|&(_, v)| v == OWN_VERSION)) {
            let own: Vec<Access> = entry.all_writes().map(|(access, _)| access).collect();
            for scan in &mut entry.scans {
                for row in scan.rows.iter_mut().filter(|row| row.1 == OWN_VERSION) {
                    let installed = own.iter().find(|a| a.table == scan.table && a.key == row.0);
                    row.1 = installed.expect("a scan's own row is a write the attempt installed").version;
                }
            }
        }
        entry.id = self.next_id;
        entry.ts = ts;
        self.next_id += self.id_stride;
        self.entries.push(entry);
    }

    /// After a commit that returned `epoch` (the epoch read at its serialization point):
    /// appends the sealed redo record to the worker's log, tagged with `epoch`; a transaction
    /// that wrote nothing only asks for `epoch` to become durable. Nothing without a log.
    pub fn log_commit(&mut self, epoch: u64) {
        let Some(redo) = &mut self.redo else { return };
        assert!(redo.sealed, "log_commit without a committed transaction");
        if redo.count == 0 {
            redo.log.want_durable(epoch);
        } else {
            redo.log.append_parts(epoch, redo.commit_ts, redo.count, &redo.writes);
        }
        redo.writes.clear();
        redo.count = 0;
        redo.sealed = false;
    }

    /// Forgets the current attempt (a committed transaction's sealed redo record stays until
    /// it is logged).
    #[inline]
    pub fn clear(&mut self) {
        if let Some(redo) = &mut self.redo
            && !redo.sealed
        {
            redo.writes.clear();
            redo.count = 0;
        }
        if self.enabled {
            let entry = &mut self.entry;
            entry.reads.clear();
            entry.writes.clear();
            entry.inserts.clear();
            entry.deletes.clear();
            entry.scans.clear();
        }
    }

    /// The committed entries recorded so far (the caller may drain them).
    pub fn entries(&mut self) -> &mut Vec<HistoryEntry> {
        &mut self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_the_format_with_tables_and_fills_in_own_scan_rows() {
        let mut trace = Trace::new(1, 4, true);
        trace.read(2, 5, 3);
        trace.absent_at(2, 6, 0);
        trace.absent_at(2, 7, 4);
        trace.scan_begin(3);
        trace.scan_row(10, 1);
        trace.scan_own(11);
        trace.scan_end(10, 20);
        trace.installed(3, WriteEffect::Insert, 11, 9, &[1]);
        trace.installed(2, WriteEffect::Update, 5, 4, &[2]);
        trace.committed(Some(42));
        trace.read(0, 1, 1);
        trace.clear();
        trace.committed(None);
        let entries = std::mem::take(trace.entries());
        assert_eq!(entries.len(), 2);
        let expected = HistoryEntry::new(2, Vec::new(), Vec::new())
            .read(2, 5, 3)
            .read(2, 7, 4)
            .update(2, 5, 4)
            .insert(3, 11, 9)
            .scan(2, 6, 6, &[])
            .scan(3, 10, 20, &[(10, 1), (11, 9)])
            .with_ts(42);
        assert_eq!(entries[0], expected);
        assert_eq!(entries[1].id, 6, "ids advance by the number of workers");
        assert_eq!(entries[1].operations(), 0, "a cleared attempt leaves nothing");
    }

    #[test]
    fn a_disabled_trace_keeps_nothing() {
        let mut trace = Trace::new(0, 1, false);
        trace.read(0, 1, 1);
        trace.scan_begin(0);
        trace.scan_row(1, 1);
        trace.scan_end(0, 9);
        trace.committed(None);
        assert!(trace.entries().is_empty());
    }

    #[test]
    fn a_committed_transaction_is_logged_with_the_epoch_its_commit_returned() {
        use ordo_log::{Durability, FaultyDir, LogConfig, Logger, recover};
        let dir = FaultyDir::new(1);
        let config = LogConfig { durability: Durability::Sync, epoch_ms: 1, ..LogConfig::default() };
        let (logger, mut logs) = Logger::start_manual(dir.clone(), &config, 1, 0, 0).unwrap();
        let mut trace = Trace::new(0, 1, false);
        trace.log_to(logs.pop().unwrap());
        // An aborted attempt leaves nothing.
        trace.enter_epoch();
        trace.installed(0, WriteEffect::Update, 1, 1, &[10]);
        trace.clear();
        // A committed one: the protocol clears its attempt after `committed`, before the driver
        // logs it; the record survives that.
        trace.enter_epoch();
        logger.step(1).unwrap();
        trace.installed(0, WriteEffect::Update, 1, 1, &[11]);
        trace.installed(2, WriteEffect::Insert, 5, 3, &[12, 13]);
        trace.installed(2, WriteEffect::Delete, 6, 4, &[99]);
        trace.committed(None);
        trace.clear();
        trace.log_commit(2);
        // A read-only one asks for its epoch.
        trace.enter_epoch();
        trace.committed(None);
        trace.log_commit(3);
        trace.log().unwrap().idle();
        for now in 2..6 {
            logger.step(now).unwrap();
        }
        assert!(logger.durable_epoch() >= 3, "durable {}", logger.durable_epoch());
        let mut rows = Vec::new();
        let recovered = recover(&dir, |row| rows.push((row.table, row.key, row.version, row.row.to_vec()))).unwrap();
        assert_eq!(rows, vec![(0, 1, 1, vec![11]), (2, 5, 3, vec![12, 13])]);
        assert_eq!(recovered.stats.transactions, 1);
        assert_eq!(recovered.versions_max.get(&2), Some(&4), "the delete's version counts");
    }
}
