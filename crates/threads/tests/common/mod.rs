//! What the integration tests of `ordo-threads` share: the seed a test replays from, the lock
//! that runs a binary's busy tests one at a time, the workloads several files build, and the
//! checks that hold a protocol over tables to the reference database (`MemoryDb`), to its
//! workload's consistency conditions and to the serializability checker.
//!
//! ```text
//!   seed, seeds, exclusive              how a test runs, and replays from `ORDO_SEED`
//!   Preloaded, evens, small_tpcc, ...   workloads, and a queue's consistency condition
//!   single_worker_matches_memory_db     one worker against MemoryDb, transaction by transaction
//!   run_and_check                       several workers through the driver
//!   Look, Change, look, change          the two sides of a scripted phantom
//! ```
//!
//! Every file under `tests/` is a crate of its own that says `mod common;` and uses part of
//! this module.

// Each test binary uses only part of this module; the rest would warn as dead code there.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use ordo_storage::{Schema, TableId, TableSchema};
use ordo_threads::ProtocolKind;
use ordo_threads::tables::driver::{Finished, check, run_transaction};
use ordo_threads::tables::{Database, Index, TableProtocol, TableRunSpec, TablesConfig, WorkerOptions, run};
use ordo_workload::smallbank::CONSERVED_MIX;
use ordo_workload::{
    Aborted, Binding, ConsistencyError, ConsistencyReport, Direction, HybridConfig, KvTables, MemoryDb, Outcome,
    Scratch, SmallBank, SmallBankConfig, TableWorkload, Tpcc, TpccConfig, TpccScale, Tx, Txn, WorkloadRng, Ycsb,
    YcsbConfig, YcsbCore, YcsbMix, rng_from_seed,
};

/// The seed a test runs from: `ORDO_SEED` when it is set (to replay a failure), else `default`.
pub fn seed(default: u64) -> u64 {
    std::env::var("ORDO_SEED").map_or(default, |s| s.parse().expect("ORDO_SEED is a u64"))
}

/// The seeds a test sweeps: `ORDO_SEED` alone when it is set (to replay a failure), else
/// `default`.
pub fn seeds(default: impl IntoIterator<Item = u64>) -> Vec<u64> {
    match std::env::var("ORDO_SEED") {
        Ok(seed) => vec![seed.parse().expect("ORDO_SEED is a u64")],
        Err(_) => default.into_iter().collect(),
    }
}

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Takes the lock that runs a test binary's busy tests one at a time (each file says why its
/// tests need it); a test that failed while holding it does not fail the others.
pub fn exclusive() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A workload of fixed rows, for tests that drive attempts by hand or against a model: it
/// loads its rows and has no transactions of its own (it generates nothing, its one procedure
/// commits at once, and it has no consistency conditions).
#[derive(Debug)]
pub struct Preloaded {
    name: &'static str,
    schema: Schema,
    /// `(table, key, row)`, loaded in this order.
    rows: Vec<(TableId, u64, Vec<u64>)>,
}

impl Preloaded {
    /// `tables` (the first is table 0), loaded with `rows` in their order; with several load
    /// threads, row `i` goes to part `i % parts`.
    pub fn new(
        name: &'static str,
        tables: impl IntoIterator<Item = TableSchema>,
        rows: impl IntoIterator<Item = (TableId, u64, Vec<u64>)>,
    ) -> Self {
        let mut schema = Schema::new();
        for table in tables {
            schema.add(table).unwrap();
        }
        Preloaded { name, schema, rows: rows.into_iter().collect() }
    }

    /// The rows `table` starts with, as `Database::rows` returns them.
    pub fn rows(&self, table: TableId) -> BTreeMap<u64, Vec<u64>> {
        self.rows.iter().filter(|(t, _, _)| *t == table).map(|(_, key, row)| (*key, row.clone())).collect()
    }
}

impl TableWorkload for Preloaded {
    fn name(&self) -> &'static str {
        self.name
    }

    fn procedure_names(&self) -> &'static [&'static str] {
        &["none"]
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn load(&self, part: usize, parts: usize, sink: &mut dyn FnMut(TableId, u64, &[u64])) {
        for (table, key, row) in self.rows.iter().skip(part).step_by(parts) {
            sink(*table, *key, row);
        }
    }

    fn generate(&self, _rng: &mut WorkloadRng, _worker: usize, _txn: &mut Txn) {}

    fn run(&self, _txn: &Txn, _tx: &mut dyn Tx, _scratch: &mut Scratch) -> Result<Outcome, Aborted> {
        Ok(Outcome::Commit)
    }

    fn footprint(&self, _txn: &Txn, _reads: &mut Vec<u64>, _writes: &mut Vec<u64>) {}

    fn check(&self, _tx: &mut dyn Tx) -> Result<ConsistencyReport, ConsistencyError> {
        Ok(ConsistencyReport { checked: Vec::new() })
    }
}

/// The one table of [`evens`].
pub const EVENS: TableId = 0;

/// The model tests' table: `evens` (columns `a`, `b`) with the even keys below `keys`, each
/// row `[key, !key]`, so half the key range is free for inserts.
pub fn evens(keys: u64) -> Preloaded {
    let rows = (0..keys).step_by(2).map(|key| (EVENS, key, vec![key, !key]));
    Preloaded::new("evens", [TableSchema::new("evens").int("a").int("b")], rows)
}

/// The consistency condition of a queue workload, whose every step deletes one row of `table`
/// and inserts another: the table still holds `count` rows.
pub fn check_queue_length(tx: &mut dyn Tx, table: TableId, count: u64) -> Result<ConsistencyReport, ConsistencyError> {
    let rows = tx
        .scan(table, 0, u64::MAX >> 1, Direction::Ascending, usize::MAX, &mut |_, _| true)
        .map_err(|Aborted| ConsistencyError { condition: "readable".into(), detail: "the scan aborted".into() })?;
    if rows as u64 == count {
        Ok(ConsistencyReport { checked: vec!["queue length".into()] })
    } else {
        Err(ConsistencyError { condition: "queue length".into(), detail: format!("{rows} items") })
    }
}

/// The hybrid mix of the runs: analytic transactions are a fifth of all and each scans a fifth
/// of a warehouse's customers.
pub const HYBRID_MIX: HybridConfig = HybridConfig { analytic_range: 0.2, analytic_share: 0.2 };

/// TPC-C at the small scale with `warehouses` warehouses and random binding, plus the
/// analytic transaction when `hybrid` is set.
pub fn small_tpcc(warehouses: u32, hybrid: Option<HybridConfig>) -> Tpcc {
    Tpcc::new(TpccConfig {
        warehouses,
        binding: Binding::Random,
        hybrid,
        scale: TpccScale::SMALL,
        ..TpccConfig::default()
    })
    .unwrap()
}

/// SmallBank over tables (24-byte rows through `KvTables`): 50 customers at θ 0.8 running
/// only the transactions that conserve the bank's total.
pub fn conserved_smallbank(seed: u64) -> Arc<dyn TableWorkload> {
    let config = SmallBankConfig { customers: 50, theta: 0.8, mix: CONSERVED_MIX, seed, ..SmallBankConfig::default() };
    Arc::new(KvTables::new(Arc::new(SmallBank::new(config).unwrap()), 24))
}

/// The YCSB configuration of the runs: θ 0.9 over `records` records of 24-byte payloads.
fn ycsb_config(records: u64) -> YcsbConfig {
    YcsbConfig { records, theta: 0.9, payload_bytes: 24, ..YcsbConfig::default() }
}

/// YCSB over tables (24-byte rows through `KvTables`), 2,000 records at θ 0.9.
pub fn ycsb_kv() -> Arc<dyn TableWorkload> {
    Arc::new(KvTables::new(Arc::new(Ycsb::new(ycsb_config(2_000)).unwrap()), 24))
}

/// YCSB E (short scans and inserts) over `records` records at θ 0.9.
pub fn ycsb_e(records: u64) -> YcsbCore {
    YcsbCore::new(YcsbMix::E, ycsb_config(records)).unwrap()
}

/// Most attempts of one transaction when a single worker runs alone: nothing conflicts with
/// it, but an optimistic protocol's own insert may split a leaf its node set holds.
pub const ALONE_ATTEMPTS_MAX: u32 = 3;

/// Whether a lone worker records its history for the checker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    /// The worker records nothing.
    Unrecorded,
    /// The worker records its history, which must then check.
    Checked,
}

/// Runs `count` transactions of `workload`, generated from `seed`, one at a time on one
/// worker of `protocol` and on `MemoryDb`: each must end alike (commit or user abort), more
/// than half must commit, every table must end equal, and the workload's consistency
/// conditions must hold. With [`History::Checked`] the worker's history must also hold one
/// entry per commit and pass the checker (TicToc's in its timestamp order too).
pub fn single_worker_matches_memory_db<P: TableProtocol>(
    protocol: &P,
    workload: &dyn TableWorkload,
    seed: u64,
    count: usize,
    history: History,
) {
    let name = protocol.kind();
    let record_history = history == History::Checked;
    let mut memory = MemoryDb::loaded(workload);
    let mut worker = protocol.worker(WorkerOptions { index: 0, workers: 1, record_history });
    let (mut rng, mut txn, mut scratch, mut row) =
        (rng_from_seed(seed), Txn::default(), Scratch::default(), Vec::new());
    let mut memory_scratch = Scratch::default();
    let mut commits = 0;
    for i in 0..count {
        workload.generate(&mut rng, i % 4, &mut txn);
        let expected = memory.run(workload, &txn, &mut memory_scratch);
        let (finished, restarts) =
            run_transaction(protocol, &mut worker, workload, &txn, &mut scratch, &mut row, |r, _| {
                r < ALONE_ATTEMPTS_MAX
            });
        let finished_as = match finished {
            Finished::Committed => Outcome::Commit,
            Finished::UserAborted => Outcome::UserAbort,
            Finished::Stopped => panic!("{name} seed {seed}: transaction {i} ({txn:?}) aborted alone {restarts} times"),
        };
        assert_eq!(finished_as, expected, "{name} seed {seed}: transaction {i} ({txn:?}) ended differently");
        commits += usize::from(expected == Outcome::Commit);
        if i % 500 == 0 {
            protocol.quiesce(&mut worker);
        }
    }
    assert!(commits > count / 2, "{name} seed {seed}: only {commits} of {count} committed");
    protocol.quiesce(&mut worker);
    assert_tables_match(protocol.database(), &memory, workload, &format!("{name} seed {seed}"));
    if record_history {
        let history = std::mem::take(P::history(&mut worker));
        assert_eq!(history.len(), commits, "{name} seed {seed}: one history entry per commit");
        if let Err(violation) = ordo_history::check(&history) {
            panic!("{name} seed {seed}: a lone worker's history does not check: {violation:?}");
        }
        if name == ProtocolKind::TicToc
            && let Err(violation) = ordo_history::check_timestamp_order(&history)
        {
            panic!("{name} seed {seed}: a lone worker's timestamps are no serial order: {violation:?}");
        }
    }
    drop(worker);
    let report = check(protocol, workload).unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
    assert!(!report.checked.is_empty(), "{name} seed {seed}: {} checked no condition", workload.name());
}

/// Asserts that every table of `workload` holds the same rows in `database` as in `memory`;
/// `context` (protocol and seed) leads each message.
pub fn assert_tables_match(database: &Database, memory: &MemoryDb, workload: &dyn TableWorkload, context: &str) {
    for table in 0..workload.schema().tables().len() {
        let table = table as TableId;
        let table_name = workload.schema().table(table).name;
        let engine_rows = database.rows(table);
        let memory_rows = memory.table(table);
        assert_eq!(engine_rows.len(), memory_rows.len(), "{context}: table {table_name} has a different row count");
        for (key, row) in memory_rows {
            assert_eq!(engine_rows.get(key), Some(row), "{context}: table {table_name} key {key} differs");
        }
    }
}

/// A timed run of `duration` from `seed`, without warm-up or cool-down.
pub fn run_spec(seed: u64, duration: Duration, record_history: bool) -> TableRunSpec {
    TableRunSpec { seed, warmup: Duration::ZERO, duration, cooldown: Duration::ZERO, record_history }
}

/// Runs `workload` through the driver on `threads` workers of `protocol` over `index` as
/// `spec` says (it must record the history): something commits, the workload's consistency
/// conditions hold afterwards and the history passes the checker of the protocol's isolation
/// (serializability, or snapshot isolation for `mvcc_si`; TicToc's in its timestamp order too).
pub fn run_and_check(
    protocol: ProtocolKind,
    workload: &Arc<dyn TableWorkload>,
    threads: usize,
    index: Index,
    spec: &TableRunSpec,
) {
    assert!(spec.record_history, "run_and_check checks the history the run records");
    let seed = spec.seed;
    let config = TablesConfig { protocol, threads, index, epoch_ms: 5, ..TablesConfig::default() };
    let report = run(&config, workload, spec, |_, _| {}).unwrap();
    let name = workload.name();
    assert!(report.recorder.commits() > 0, "{protocol} seed {seed}: nothing committed on {name}");
    let consistency = report.consistency.unwrap_or_else(|e| panic!("{protocol} seed {seed}: {name}: {e}"));
    assert!(!consistency.checked.is_empty());
    assert!(!report.history.is_empty());
    if let Err(violation) = protocol.check_history(&report.history) {
        let isolation = protocol.isolation();
        panic!("{protocol} seed {seed}: {name} history on {threads} threads not {isolation}: {violation:?}");
    }
    if protocol == ProtocolKind::TicToc
        && let Err(violation) = ordo_history::check_timestamp_order(&report.history)
    {
        panic!("{protocol} seed {seed}: {name} on {threads} threads: timestamps are no serial order: {violation:?}");
    }
}

/// The table a phantom scenario's range lives in: it must hold 30, 40 and 50 and not 35.
pub const ITEMS: TableId = 0;
/// The table a phantom scenario's reader writes to: it must hold key 0.
pub const OTHER: TableId = 1;

/// The keys of `items` in `low..=high`, ascending.
pub fn keys_in(tx: &mut dyn Tx, low: u64, high: u64) -> Result<Vec<u64>, Aborted> {
    let mut keys = Vec::new();
    tx.scan(ITEMS, low, high, Direction::Ascending, usize::MAX, &mut |key, _| {
        keys.push(key);
        true
    })?;
    Ok(keys)
}

/// How the reader (T1) of a phantom scenario looks at the range 30..=50 of `items`.
#[derive(Clone, Copy, Debug)]
pub enum Look {
    /// A scan of 30..=50.
    Scan,
    /// A get of the absent key 35.
    AbsentGet,
}

/// What the writer (T2) of a phantom scenario does to the range.
#[derive(Clone, Copy, Debug)]
pub enum Change {
    Insert35,
    Delete40,
}

/// The reader's side: looks at the range as `how` says (and asserts what it finds there),
/// then writes `other` 0 elsewhere.
pub fn look(tx: &mut dyn Tx, how: Look) -> Result<(), Aborted> {
    match how {
        Look::Scan => assert_eq!(keys_in(tx, 30, 50)?, vec![30, 40, 50]),
        Look::AbsentGet => assert!(!tx.get(ITEMS, 35, &mut [0], false)?),
    }
    assert!(tx.put(OTHER, 0, &[1])?);
    Ok(())
}

/// The writer's side: changes the range as `what` says (and asserts the change applied).
pub fn change(tx: &mut dyn Tx, what: Change) -> Result<(), Aborted> {
    match what {
        Change::Insert35 => assert!(tx.insert(ITEMS, 35, &[35])?),
        Change::Delete40 => assert!(tx.delete(ITEMS, 40)?),
    }
    Ok(())
}
