//! Phantoms and reclamation in Silo over tables, driven by hand: two attempts interleaved on
//! one thread through the `Tx` interface. Every scenario first shows that both transactions
//! commit when run alone, so a protocol that aborts everything cannot pass.
//!
//! The table `items` holds keys 10, 20, ..., 100 (row: one value word); `other` holds key 0.
//!
//! The queue tests run one at a time (`exclusive`): reclamation waits on epochs, which a busy
//! neighbour slows down.

mod common;

use common::{Change, ITEMS, Look, OTHER, change, check_queue_length, exclusive, keys_in, look};
use ordo_storage::{Schema, TableId, TableSchema};
use ordo_threads::tables::Epochs;
use ordo_threads::tables::driver::{Finished, run_transaction};
use ordo_threads::tables::{Index, SiloTables};
use ordo_workload::{
    Aborted, ConsistencyError, ConsistencyReport, Direction, Outcome, Scratch, TableWorkload, Tx, Txn, WorkloadRng,
};

/// A small table workload: `items` with keys `step, 2 step, ..., count step`; its one
/// procedure is a queue step (delete the lowest item, insert one above the highest).
#[derive(Debug)]
struct Items {
    schema: Schema,
    count: u64,
    step: u64,
}

impl Items {
    fn new(count: u64, step: u64) -> Self {
        let mut schema = Schema::new();
        schema.add(TableSchema::new("items").int("value")).unwrap();
        schema.add(TableSchema::new("other").int("value")).unwrap();
        Items { schema, count, step }
    }
}

impl TableWorkload for Items {
    fn name(&self) -> &'static str {
        "items"
    }

    fn procedure_names(&self) -> &'static [&'static str] {
        &["queue_step"]
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn load(&self, part: usize, _parts: usize, sink: &mut dyn FnMut(TableId, u64, &[u64])) {
        if part == 0 {
            for i in 1..=self.count {
                sink(ITEMS, i * self.step, &[i]);
            }
            sink(OTHER, 0, &[0]);
        }
    }

    fn generate(&self, _rng: &mut WorkloadRng, _worker: usize, txn: &mut Txn) {
        txn.procedure = 0;
    }

    fn run(&self, _txn: &Txn, tx: &mut dyn Tx, _scratch: &mut Scratch) -> Result<Outcome, Aborted> {
        let (mut lowest, mut highest) = (None, None);
        tx.scan(ITEMS, 0, u64::MAX >> 1, Direction::Ascending, 1, &mut |key, _| {
            lowest = Some(key);
            true
        })?;
        tx.scan(ITEMS, 0, u64::MAX >> 1, Direction::Descending, 1, &mut |key, _| {
            highest = Some(key);
            true
        })?;
        // Under optimistic concurrency a view may be inconsistent until commit validates it:
        // an empty queue (it always holds `count` items), the lowest item gone or the next key
        // taken means another step committed since, and the step is retried. (An empty view
        // was a user abort, which is final; a run of two workers hit it once.)
        let (Some(lowest), Some(highest)) = (lowest, highest) else { return Err(Aborted) };
        if !tx.delete(ITEMS, lowest)? || !tx.insert(ITEMS, highest + 1, &[highest + 1])? {
            return Err(Aborted);
        }
        Ok(Outcome::Commit)
    }

    fn footprint(&self, _txn: &Txn, _reads: &mut Vec<u64>, _writes: &mut Vec<u64>) {}

    fn check(&self, tx: &mut dyn Tx) -> Result<ConsistencyReport, ConsistencyError> {
        check_queue_length(tx, ITEMS, self.count)
    }
}

fn database() -> SiloTables {
    SiloTables::load(&Items::new(10, 10), Index::Tree, 1, Epochs::clock(1)).unwrap()
}

fn scenario(how: Look, what: Change) {
    // Alone, one after the other: both commit.
    let silo = database();
    let (mut w1, mut w2) = (silo.worker(0, false), silo.worker(1, false));
    let mut t1 = silo.begin(&mut w1);
    look(&mut t1, how).unwrap();
    assert_eq!(t1.commit().map(drop), Ok(()), "{how:?} alone commits");
    let mut t2 = silo.begin(&mut w2);
    change(&mut t2, what).unwrap();
    assert_eq!(t2.commit().map(drop), Ok(()), "{what:?} alone commits");

    // Interleaved: T1 looks, T2 changes the range and commits, T1 must fail validation.
    let silo = database();
    let (mut w1, mut w2) = (silo.worker(0, false), silo.worker(1, false));
    let mut t1 = silo.begin(&mut w1);
    look(&mut t1, how).unwrap();
    let mut t2 = silo.begin(&mut w2);
    change(&mut t2, what).unwrap();
    assert_eq!(t2.commit().map(drop), Ok(()));
    assert_eq!(t1.commit().map(drop), Err(Aborted), "{how:?} racing {what:?}: a phantom went unnoticed");
    // T1 again sees the change.
    let mut t1 = silo.begin(&mut w1);
    let expected = match what {
        Change::Insert35 => vec![30, 35, 40, 50],
        Change::Delete40 => vec![30, 50],
    };
    assert_eq!(keys_in(&mut t1, 30, 50).unwrap(), expected);
    assert_eq!(t1.commit().map(drop), Ok(()));
}

#[test]
fn a_scan_racing_an_insert_into_its_range_fails_validation() {
    scenario(Look::Scan, Change::Insert35);
}

#[test]
fn an_absent_get_racing_the_insert_of_its_key_fails_validation() {
    scenario(Look::AbsentGet, Change::Insert35);
}

#[test]
fn a_scan_racing_a_delete_in_its_range_fails_validation() {
    scenario(Look::Scan, Change::Delete40);
}

#[test]
fn an_insert_far_outside_a_scanned_range_is_no_phantom() {
    // Enough keys that 30..=50 and 99_995 live in different leaves.
    let silo = SiloTables::load(&Items::new(10_000, 10), Index::Tree, 1, Epochs::clock(1)).unwrap();
    let (mut w1, mut w2) = (silo.worker(0, false), silo.worker(1, false));
    let mut t1 = silo.begin(&mut w1);
    look(&mut t1, Look::Scan).unwrap();
    let mut t2 = silo.begin(&mut w2);
    assert_eq!(t2.insert(ITEMS, 99_995, &[1]), Ok(true));
    assert_eq!(t2.commit().map(drop), Ok(()));
    assert_eq!(t1.commit().map(drop), Ok(()), "an insert in another leaf does not touch the scan's node set");
}

#[test]
fn own_inserts_deletes_and_puts_are_seen_by_own_scans_and_are_no_phantoms() {
    let silo = database();
    let mut w1 = silo.worker(0, false);
    let mut t1 = silo.begin(&mut w1);
    assert_eq!(keys_in(&mut t1, 30, 50).unwrap(), vec![30, 40, 50]);
    assert_eq!(t1.insert(ITEMS, 35, &[350]), Ok(true));
    assert_eq!(t1.insert(ITEMS, 35, &[351]), Ok(false), "present in the attempt's own view");
    assert_eq!(t1.delete(ITEMS, 40), Ok(true));
    assert_eq!(t1.put(ITEMS, 50, &[500]), Ok(true));
    let mut seen = Vec::new();
    t1.scan(ITEMS, 30, 50, Direction::Descending, 10, &mut |key, row| {
        seen.push((key, row[0]));
        true
    })
    .unwrap();
    assert_eq!(seen, vec![(50, 500), (35, 350), (30, 3)]);
    assert_eq!(t1.commit().map(drop), Ok(()), "an attempt's own insert is not a phantom to it");
    let mut t2 = silo.begin(&mut w1);
    assert_eq!(keys_in(&mut t2, 30, 50).unwrap(), vec![30, 35, 50]);
    let mut row = [0];
    assert_eq!(t2.get(ITEMS, 40, &mut row, false), Ok(false));
    assert_eq!(t2.insert(ITEMS, 40, &[41]), Ok(true), "a tombstone takes a new insert");
    assert_eq!(t2.commit().map(drop), Ok(()));
    let mut t3 = silo.begin(&mut w1);
    assert_eq!(t3.get(ITEMS, 40, &mut row, false), Ok(true));
    assert_eq!(row, [41]);
}

#[test]
fn an_aborted_insert_leaves_nothing_visible() {
    let silo = database();
    let mut w1 = silo.worker(0, false);
    let mut t1 = silo.begin(&mut w1);
    assert_eq!(t1.insert(ITEMS, 35, &[1]), Ok(true));
    t1.abort();
    let mut t2 = silo.begin(&mut w1);
    assert_eq!(keys_in(&mut t2, 0, 1_000).unwrap(), vec![10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    assert_eq!(t2.insert(ITEMS, 35, &[2]), Ok(true), "the placeholder is reused");
    assert_eq!(t2.commit().map(drop), Ok(()));
    assert_eq!(silo.database().rows(ITEMS).get(&35), Some(&vec![2]));
}

/// Queue steps (delete the lowest, insert above the highest) run by one worker.
const QUEUE_STEPS: usize = 20_000;

#[test]
fn a_queue_does_not_grow_the_arena_without_bound() {
    let _one = exclusive();
    let workload = Items::new(100, 1);
    let silo = SiloTables::load(&workload, Index::Tree, 1, Epochs::clock(1)).unwrap();
    let mut worker = silo.worker(0, false);
    let (mut txn, mut scratch, mut row) = (Txn::default(), Scratch::default(), Vec::new());
    txn.procedure = 0;
    for step in 0..QUEUE_STEPS {
        let (finished, _) = run_transaction(&silo, &mut worker, &workload, &txn, &mut scratch, &mut row, |r, _| r < 3);
        assert_eq!(finished, Finished::Committed, "step {step}");
    }
    silo.reclaim_all(&mut worker);
    let table = silo.database().table(ITEMS);
    let allocated = table.records.allocated();
    println!("{allocated} records allocated after {QUEUE_STEPS} queue steps");
    assert!(
        allocated < QUEUE_STEPS as u64 / 4,
        "{allocated} records allocated for a queue of 100 after {QUEUE_STEPS} steps: tombstones are not reclaimed"
    );
    assert_eq!(table.index.len(), 100, "reclaimed tombstones leave the index");
    let rows = silo.database().rows(ITEMS);
    assert_eq!(
        rows.keys().copied().collect::<Vec<_>>(),
        (QUEUE_STEPS as u64 + 1..=QUEUE_STEPS as u64 + 100).collect::<Vec<_>>()
    );
    ordo_threads::tables::driver::check(&silo, &workload).unwrap();
}

/// Queue steps per worker when two workers share the queue.
const SHARED_QUEUE_STEPS: usize = 3_000;
/// Most attempts of one shared queue step (both workers want the same two ends).
const SHARED_QUEUE_ATTEMPTS_MAX: u32 = 100_000;

#[test]
fn two_workers_sharing_a_queue_keep_it_contiguous_and_bounded() {
    let _one = exclusive();
    let workload = Items::new(100, 1);
    let silo = SiloTables::load(&workload, Index::Tree, 1, Epochs::clock(1)).unwrap();
    std::thread::scope(|scope| {
        for index in 0..2 {
            let (silo, workload) = (&silo, &workload);
            scope.spawn(move || {
                let mut worker = silo.worker(index, false);
                let (mut txn, mut scratch, mut row) = (Txn::default(), Scratch::default(), Vec::new());
                txn.procedure = 0;
                for step in 0..SHARED_QUEUE_STEPS {
                    let (finished, restarts) =
                        run_transaction(silo, &mut worker, workload, &txn, &mut scratch, &mut row, |r, _| {
                            std::thread::yield_now();
                            r < SHARED_QUEUE_ATTEMPTS_MAX
                        });
                    assert_eq!(finished, Finished::Committed, "worker {index} step {step} after {restarts} restarts");
                }
                silo.reclaim_all(&mut worker);
            });
        }
    });
    // Every committed step moved the queue up by one: a lost phantom (two steps deleting the
    // same lowest item, or inserting the same new highest) breaks the contiguous range.
    let total = 2 * SHARED_QUEUE_STEPS as u64;
    let rows = silo.database().rows(ITEMS);
    assert_eq!(rows.keys().copied().collect::<Vec<_>>(), (total + 1..=total + 100).collect::<Vec<_>>());
    let allocated = silo.database().table(ITEMS).records.allocated();
    assert!(allocated < total / 2, "{allocated} records allocated for a queue of 100 after {total} steps");
}

#[test]
fn an_own_insert_deleted_again_leaves_nothing_behind() {
    let silo = database();
    let mut worker = silo.worker(0, false);
    let mut tx = silo.begin(&mut worker);
    assert_eq!(tx.insert(ITEMS, 5, &[5]), Ok(true));
    assert_eq!(tx.delete(ITEMS, 5), Ok(true));
    assert_eq!(tx.commit().map(drop), Ok(()));
    assert_eq!(worker.pending_reclaims(), 1, "the placeholder waits for reclamation");
    silo.reclaim_all(&mut worker);
    assert_eq!(worker.pending_reclaims(), 0);
    assert_eq!(silo.database().table(ITEMS).index.len(), 10, "only the loaded keys remain in the index");
}
