//! What bounds the memory of the multi-version protocols: versions no snapshot can see are
//! cut and reused, tombstones leave the index, an old snapshot holds versions back only until
//! it ends, and a per-record cap bounds a chain whatever the snapshots, an old reader then
//! aborting with `snapshot_too_old` instead of reading a wrong version.
//!
//! The table `items` holds keys 1..=n (row: one value word).
//!
//! The tests run one at a time (`exclusive`): reuse waits for every pinned thread to move on,
//! and another test's threads pinning meanwhile would only make the bounds depend on timing.

mod common;

use common::{check_queue_length, exclusive};
use ordo_harness::AbortCause;
use ordo_storage::{Schema, TableId, TableSchema};
use ordo_threads::tables::driver::{Finished, run_transaction};
use ordo_threads::tables::{Epochs, Index, Isolation, MvccTables, TableProtocol, WorkerOptions};
use ordo_workload::{
    Aborted, ConsistencyError, ConsistencyReport, Direction, Outcome, Scratch, TableWorkload, Tx, Txn, WorkloadRng,
};

const ITEMS: TableId = 0;

/// `items` with keys `1..=count`; its one procedure is a queue step (delete the lowest item,
/// insert one above the highest, bump the counter in the lowest remaining item).
#[derive(Debug)]
struct Queue {
    schema: Schema,
    count: u64,
}

impl Queue {
    fn new(count: u64) -> Self {
        let mut schema = Schema::new();
        schema.add(TableSchema::new("items").int("value")).unwrap();
        Queue { schema, count }
    }
}

impl TableWorkload for Queue {
    fn name(&self) -> &'static str {
        "queue"
    }
    fn procedure_names(&self) -> &'static [&'static str] {
        &["queue_step"]
    }
    fn schema(&self) -> &Schema {
        &self.schema
    }
    fn load(&self, part: usize, _parts: usize, sink: &mut dyn FnMut(TableId, u64, &[u64])) {
        if part == 0 {
            for key in 1..=self.count {
                sink(ITEMS, key, &[key]);
            }
        }
    }
    fn generate(&self, _rng: &mut WorkloadRng, _worker: usize, txn: &mut Txn) {
        txn.procedure = 0;
    }
    fn run(&self, _txn: &Txn, tx: &mut dyn Tx, _scratch: &mut Scratch) -> Result<Outcome, Aborted> {
        let (mut lowest, mut highest) = (None, None);
        tx.scan(ITEMS, 0, u64::MAX >> 1, Direction::Ascending, 2, &mut |key, row| {
            lowest.get_or_insert((key, row[0]));
            true
        })?;
        tx.scan(ITEMS, 0, u64::MAX >> 1, Direction::Descending, 1, &mut |key, _| {
            highest = Some(key);
            true
        })?;
        let (Some((lowest, value)), Some(highest)) = (lowest, highest) else { return Ok(Outcome::UserAbort) };
        if !tx.delete(ITEMS, lowest)? || !tx.insert(ITEMS, highest + 1, &[value + 1])? {
            return Err(Aborted);
        }
        let mut row = [0];
        if tx.get(ITEMS, lowest + 1, &mut row, true)? {
            tx.put(ITEMS, lowest + 1, &[row[0] + 1])?;
        }
        Ok(Outcome::Commit)
    }
    fn footprint(&self, _txn: &Txn, _reads: &mut Vec<u64>, _writes: &mut Vec<u64>) {}
    fn check(&self, tx: &mut dyn Tx) -> Result<ConsistencyReport, ConsistencyError> {
        check_queue_length(tx, ITEMS, self.count)
    }
}

const QUEUE_STEPS: usize = 20_000;

#[test]
fn a_queue_keeps_records_and_versions_bounded() {
    let _one_at_a_time = exclusive();
    for isolation in [Isolation::Snapshot, Isolation::SerialSafetyNet] {
        let workload = Queue::new(100);
        let mvcc = MvccTables::load(&workload, Index::Tree, 1, Epochs::clock(1), isolation, 8).unwrap();
        let mut worker = mvcc.worker(WorkerOptions { index: 0, workers: 1, record_history: false });
        let (mut txn, mut scratch, mut row) = (Txn::default(), Scratch::default(), Vec::new());
        txn.procedure = 0;
        for step in 0..QUEUE_STEPS {
            let (finished, _) =
                run_transaction(&mvcc, &mut worker, &workload, &txn, &mut scratch, &mut row, |r, _| r < 3);
            assert_eq!(finished, Finished::Committed, "{isolation:?} step {step}");
        }
        mvcc.collect_all(&mut worker);
        let table = mvcc.database().table(ITEMS);
        let (heads, versions) = (table.records.allocated(), table.versions().allocated());
        println!("{isolation:?}: {heads} heads and {versions} versions allocated after {QUEUE_STEPS} queue steps");
        // Every step writes three versions and leaves a tombstone: without reuse that is
        // 60,000 versions and 20,000 heads.
        assert!(heads < QUEUE_STEPS as u64 / 4, "{isolation:?}: {heads} heads: tombstones are not reclaimed");
        assert!(versions < QUEUE_STEPS as u64 / 4, "{isolation:?}: {versions} versions: old versions are not reused");
        assert_eq!(table.index.len(), 100, "reclaimed tombstones leave the index");
        let keys: Vec<u64> = mvcc.database().rows(ITEMS).keys().copied().collect();
        assert_eq!(keys, (QUEUE_STEPS as u64 + 1..=QUEUE_STEPS as u64 + 100).collect::<Vec<_>>());
        drop(worker);
        ordo_threads::tables::driver::check(&mvcc, &workload).unwrap();
    }
}

/// Writes `value` into item 1 in a transaction of its own.
fn overwrite(mvcc: &MvccTables, worker: &mut ordo_threads::tables::MvccWorker, value: u64) {
    let mut tx = mvcc.begin(worker);
    assert_eq!(tx.put(ITEMS, 1, &[value]), Ok(true));
    tx.commit().expect("a lone writer commits");
}

#[test]
fn an_old_snapshot_holds_versions_until_the_cap_then_aborts_as_too_old() {
    let _one_at_a_time = exclusive();
    const CAP: usize = 16;
    for isolation in [Isolation::Snapshot, Isolation::SerialSafetyNet] {
        let workload = Queue::new(10);
        let mvcc = MvccTables::load(&workload, Index::Tree, 1, Epochs::manual(), isolation, CAP).unwrap();
        let mut reader = mvcc.worker(WorkerOptions { index: 0, workers: 2, record_history: false });
        let mut writer = mvcc.worker(WorkerOptions { index: 1, workers: 2, record_history: false });
        let versions = |mvcc: &MvccTables| mvcc.database().table(ITEMS).versions().allocated();
        let mut row = [0];

        // While the reader lives, the low-water mark stays at its snapshot: the writer's
        // versions pile up, and the reader keeps reading the one its snapshot saw.
        let mut old = mvcc.begin(&mut reader);
        assert_eq!(old.get(ITEMS, 1, &mut row, false), Ok(true));
        assert_eq!(row, [1]);
        for value in 100..100 + CAP as u64 - 2 {
            overwrite(&mvcc, &mut writer, value);
        }
        assert_eq!(old.get(ITEMS, 2, &mut row, false), Ok(true));
        assert_eq!(old.get(ITEMS, 1, &mut row, false), Ok(true));
        assert_eq!(row, [1], "{isolation:?}: the snapshot's version is kept");

        // Past the cap the chain is cut (to half): the old snapshot's version is gone, and the
        // reader stops with a cause that says so.
        for value in 200..200 + CAP as u64 {
            overwrite(&mvcc, &mut writer, value);
        }
        assert_eq!(old.get(ITEMS, 1, &mut row, false), Err(Aborted));
        assert_eq!(old.abort(), AbortCause::SnapshotTooOld, "{isolation:?}");

        // A new snapshot reads the newest version; once the old reader is gone the writer's
        // collector cuts the chains and reuses their versions: memory stops growing.
        let mut fresh = mvcc.begin(&mut reader);
        assert_eq!(fresh.get(ITEMS, 1, &mut row, false), Ok(true));
        assert_eq!(row, [200 + CAP as u64 - 1]);
        drop(fresh);
        mvcc.collect_all(&mut reader);
        for value in 300..400 {
            overwrite(&mvcc, &mut writer, value);
        }
        let settled = versions(&mvcc);
        for value in 400..2_000 {
            overwrite(&mvcc, &mut writer, value);
        }
        assert_eq!(versions(&mvcc), settled, "{isolation:?}: versions are reused once nobody needs them");
    }
}

/// Queue steps per worker when two workers share the queue.
const SHARED_QUEUE_STEPS: usize = 3_000;
/// Most attempts of one shared queue step (both workers want the same two ends).
const SHARED_QUEUE_ATTEMPTS_MAX: u32 = 100_000;

#[test]
fn two_workers_sharing_a_queue_keep_it_contiguous_and_bounded() {
    let _one_at_a_time = exclusive();
    for isolation in [Isolation::Snapshot, Isolation::SerialSafetyNet] {
        let workload = Queue::new(100);
        let mvcc = MvccTables::load(&workload, Index::Tree, 1, Epochs::clock(1), isolation, 8).unwrap();
        std::thread::scope(|scope| {
            for index in 0..2 {
                let (mvcc, workload) = (&mvcc, &workload);
                scope.spawn(move || {
                    let mut worker = mvcc.worker(WorkerOptions { index, workers: 2, record_history: false });
                    let (mut txn, mut scratch, mut row) = (Txn::default(), Scratch::default(), Vec::new());
                    txn.procedure = 0;
                    for step in 0..SHARED_QUEUE_STEPS {
                        let (finished, restarts) =
                            run_transaction(mvcc, &mut worker, workload, &txn, &mut scratch, &mut row, |r, _| {
                                std::thread::yield_now();
                                r < SHARED_QUEUE_ATTEMPTS_MAX
                            });
                        assert_eq!(
                            finished,
                            Finished::Committed,
                            "worker {index} step {step} after {restarts} restarts"
                        );
                    }
                    mvcc.quiesce(&mut worker);
                });
            }
        });
        // Every committed step moved the queue up by one: two steps deleting the same lowest
        // item, or inserting the same new highest, would break the contiguous range (first
        // committer wins forbids both, even under snapshot isolation).
        let total = 2 * SHARED_QUEUE_STEPS as u64;
        let rows = mvcc.database().rows(ITEMS);
        assert_eq!(rows.keys().copied().collect::<Vec<_>>(), (total + 1..=total + 100).collect::<Vec<_>>());
        let table = mvcc.database().table(ITEMS);
        let (heads, versions) = (table.records.allocated(), table.versions().allocated());
        // Without reuse every step would take a head and three versions. With it, how many are
        // allocated depends on how often both workers were unpinned at once (ids come back only
        // then), which a loaded machine delays: the bound catches a leak, not a slow epoch.
        assert!(heads < total * 3 / 4, "{isolation:?}: {heads} heads for a queue of 100 after {total} steps");
        assert!(versions < total * 2, "{isolation:?}: {versions} versions for a queue of 100 after {total} steps");
    }
}
