//! Deterministic crash tests of the engine over tables with its write-ahead log, under every
//! protocol on tables (Silo, TicToc, 2PL, serial, `mvcc_si`, `ssi`): the real `Trace` →
//! `WorkerLog` → logger → segments path, fuzzy checkpoints (through each protocol's
//! checkpoint source) and recovery into a database (multi-version tables included), all over
//! a fault-injecting directory, driven by one thread from one seed.
//!
//! Several virtual workers run whole transactions one at a time (so the commit order is the
//! execution order), interleaved at random with the logger's rounds, epoch boundaries,
//! checkpoint steps, workers holding an old epoch or going idle; the power is cut at a seeded
//! operation (mid-epoch, mid-sync, mid-checkpoint, during segment deletion, during recovery's
//! truncation) or an fsync fails. After each crash the engine restarts on what survived, and
//! the recovered state must be exactly the serial replay (on `MemoryDb`) of a prefix of the
//! commit order that contains every acknowledged transaction, with the versions the engine
//! installed; recovering again (after a crash during recovery, or not) gives the same state.
//!
//! Replay one seed: `ORDO_SEED=<n> cargo test -p ordo-threads --test durability`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use ordo_log::naming::{self, LogFile};
use ordo_log::{Dir, Durability, FaultyDir, LogError};
use ordo_storage::TableId;
use ordo_storage::{Schema, TableSchema};
use ordo_threads::ProtocolKind;
use ordo_threads::tables::driver::{Finished, run_transaction};
use ordo_threads::tables::durable::{self, CheckpointPolicy, Checkpointer, OpenOptions};
use ordo_threads::tables::{
    Index, MvccTables, SerialTables, SiloTables, TableProtocol, TicTocTables, TwoPhaseTables, WorkerOptions,
};
use ordo_workload::smallbank::CONSERVED_MIX;
use ordo_workload::{
    Aborted, Binding, ConsistencyError, ConsistencyReport, KvTables, MemoryDb, Outcome, Scratch, SmallBank,
    SmallBankConfig, TableWorkload, Tpcc, TpccConfig, TpccScale, Tx, Txn, WorkloadRng, rng_from_seed,
};
use rand::Rng as _;

const WORKERS: usize = 3;
const EPOCH_MS: u64 = 2;
const SEGMENT_BYTES_MAX: u64 = 4096;
const CYCLES_PER_SEED: usize = 4;

/// Rows by `(table, key)`: version and row.
type Rows = BTreeMap<(TableId, u64), (u64, Vec<u64>)>;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

/// A committed transaction: its epoch, the transaction, and the versions it installed.
struct Committed {
    epoch: u64,
    txn: Txn,
    installed: Vec<(TableId, u64, u64)>,
}

/// How often the seeds reached each interesting point.
#[derive(Debug, Default)]
struct Coverage {
    commits: u64,
    /// The highest epoch acknowledged in any cycle.
    acknowledged: u64,
    checkpoints: u64,
    /// Power cuts while the logger wrote or synced.
    cuts_in_logger: u64,
    /// Power cuts while a checkpoint was written, committed or deleted segments.
    cuts_in_checkpoint: u64,
    /// Power cuts while the engine opened the directory (recovery, truncation, first checkpoint).
    cuts_in_recovery: u64,
    fsync_failures: u64,
    /// Recoveries that cut a torn or corrupt tail.
    torn_tails: u64,
    /// Recoveries that lost unacknowledged epochs.
    lost_epochs: u64,
}

fn smallbank() -> Arc<dyn TableWorkload> {
    let bank = SmallBank::new(SmallBankConfig {
        customers: 40,
        theta: 0.6,
        mix: CONSERVED_MIX,
        seed: 3,
        ..SmallBankConfig::default()
    })
    .unwrap();
    Arc::new(KvTables::new(Arc::new(bank), 8))
}

fn tpcc() -> Arc<dyn TableWorkload> {
    Arc::new(
        Tpcc::new(TpccConfig {
            warehouses: 1,
            binding: Binding::Random,
            scale: TpccScale::SMALL,
            ..TpccConfig::default()
        })
        .unwrap(),
    )
}

/// A workload that deletes and re-inserts the same few keys over and over (with a secondary
/// index kept in step), so tombstones, reclamation and re-created keys meet the log: a key
/// re-created after recovery must get a version above its delete still in the log.
#[derive(Debug)]
struct Toggle {
    schema: Schema,
}

const TOGGLE_KEYS: u64 = 12;

impl Toggle {
    fn new() -> Self {
        let mut schema = Schema::new();
        let items = schema.add(TableSchema::new("items").int("value").int("bumps").rows_hint(TOGGLE_KEYS)).unwrap();
        schema.add_index("items_by_value", items, |key, row| (row[0] << 16) | key).unwrap();
        Toggle { schema }
    }
}

impl TableWorkload for Toggle {
    fn name(&self) -> &'static str {
        "toggle"
    }

    fn procedure_names(&self) -> &'static [&'static str] {
        &["toggle", "bump"]
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn load(&self, part: usize, _parts: usize, sink: &mut dyn FnMut(TableId, u64, &[u64])) {
        if part == 0 {
            for key in (0..TOGGLE_KEYS).step_by(2) {
                sink(0, key, &[key, 0]);
            }
        }
    }

    fn generate(&self, rng: &mut WorkloadRng, _worker: usize, txn: &mut Txn) {
        txn.procedure = rng.random_range(0..2);
        txn.keys.clear();
        for _ in 0..rng.random_range(1..=2) {
            let key = rng.random_range(0..TOGGLE_KEYS);
            if !txn.keys.contains(&key) {
                txn.keys.push(key);
            }
        }
        txn.amount = rng.random_range(0..1000);
    }

    fn run(&self, txn: &Txn, tx: &mut dyn Tx, scratch: &mut Scratch) -> Result<Outcome, Aborted> {
        scratch.row.resize(2, 0);
        for &key in &txn.keys {
            let present = tx.get(0, key, &mut scratch.row, true)?;
            match (txn.procedure, present) {
                (0, true) => assert!(tx.delete(0, key)?),
                (0, false) => assert!(tx.insert(0, key, &[txn.amount as u64, 0])?),
                (_, true) => {
                    scratch.row[1] += 1;
                    assert!(tx.put(0, key, &scratch.row)?);
                }
                (_, false) => return Ok(Outcome::UserAbort),
            }
        }
        Ok(Outcome::Commit)
    }

    fn footprint(&self, txn: &Txn, reads: &mut Vec<u64>, writes: &mut Vec<u64>) {
        reads.extend(&txn.keys);
        writes.extend(&txn.keys);
    }

    fn check(&self, _tx: &mut dyn Tx) -> Result<ConsistencyReport, ConsistencyError> {
        Ok(ConsistencyReport { checked: Vec::new() })
    }
}

/// Every row of every table of `db`, as the reference holds them, with `versions`.
fn reference_rows(workload: &dyn TableWorkload, memory: &MemoryDb, versions: &BTreeMap<(TableId, u64), u64>) -> Rows {
    let mut rows = Rows::new();
    for table in 0..workload.schema().tables().len() as TableId {
        for (key, row) in memory.table(table) {
            let version = versions.get(&(table, *key)).copied().unwrap_or(0);
            rows.insert((table, *key), (version, row.clone()));
        }
    }
    rows
}

/// What an engine starting on `dir` begins with: with a checkpoint, what the log crate's
/// recovery returns (it also cuts the tail); without one (the first checkpoint never
/// committed), the workload's initial rows at version 0, and no log.
fn recover_rows(dir: &FaultyDir, workload: &dyn TableWorkload) -> Result<(Rows, u64, bool), LogError> {
    let names = dir.list()?;
    let files: Vec<LogFile> = names.iter().filter_map(|name| naming::parse(name)).collect();
    if !files.iter().any(|file| matches!(file, LogFile::Checkpoint { .. })) {
        assert!(files.is_empty(), "segments without a checkpoint: {names:?}");
        return Ok((reference_rows(workload, &MemoryDb::loaded(workload), &BTreeMap::new()), 0, false));
    }
    let mut rows = Rows::new();
    let recovered = ordo_log::recover(dir, |row| {
        rows.insert((row.table, row.key), (row.version, row.row.to_vec()));
    })?;
    Ok((rows, recovered.durable_epoch, recovered.cut.is_some()))
}

/// Every present row of `database`, read as a checkpoint reads them.
fn database_rows(database: &ordo_threads::tables::Database) -> Rows {
    let mut rows = Rows::new();
    let mut row = Vec::new();
    for table in 0..database.tables().len() as TableId {
        let mut next = Some(0);
        while let Some(from) = next {
            next = database.scan_rows(table, from, 1024, &mut row, &mut |key, version, row| {
                rows.insert((table, key), (version, row.to_vec()));
            });
        }
    }
    rows
}

/// The serial replay of `committed` on the workload's initial rows: rows and versions.
fn replay(workload: &dyn TableWorkload, committed: &[Committed], seed: u64, hint: &str) -> Rows {
    let mut memory = MemoryDb::loaded(workload);
    let mut versions = BTreeMap::new();
    let mut scratch = Scratch::default();
    for (index, tx) in committed.iter().enumerate() {
        let outcome = memory.run(workload, &tx.txn, &mut scratch);
        assert_eq!(outcome, Outcome::Commit, "seed {seed}: transaction {index} commits in the replay; {hint}");
        for &(table, key, version) in &tx.installed {
            versions.insert((table, key), version);
        }
    }
    reference_rows(workload, &memory, &versions)
}

/// Rows a checkpoint step reads at most: a checkpoint takes some tens of steps.
fn rows_per_checkpoint_step(workload: &dyn TableWorkload) -> u64 {
    let rows: u64 = workload.schema().tables().iter().map(|t| t.rows_hint.max(t.dense_keys.unwrap_or(0))).sum();
    (rows / 16).max(64)
}

/// Runs the engine until the power is cut, an fsync fails, or the cycle's steps are done.
/// Returns the highest acknowledged epoch.
#[allow(clippy::too_many_arguments)]
fn run_cycle<P: TableProtocol>(
    kind: ProtocolKind,
    rng: &mut Rng,
    dir: &FaultyDir,
    workload: &Arc<dyn TableWorkload>,
    committed: &mut Vec<Committed>,
    coverage: &mut Coverage,
    steps: usize,
    expected: &Rows,
    acknowledged_epoch: &mut u64,
) -> Result<(), (String, &'static str)> {
    let shared: Arc<dyn Dir> = Arc::new(dir.clone());
    let workers_count = if P::CONCURRENT { WORKERS } else { 1 };
    let options = OpenOptions {
        durability: Durability::Sync,
        epoch_ms: EPOCH_MS,
        workers: workers_count,
        index: Index::Tree,
        load_threads: 1,
        layout: P::LAYOUT,
        recovered_meta: P::recovered_meta,
        manual_logger: true,
        segment_bytes_max: SEGMENT_BYTES_MAX,
    };
    let opened = durable::open(Arc::clone(&shared), Path::new("<faulty>"), workload.as_ref(), &options)
        .map_err(|error| (error.to_string(), "recovery"))?;
    let logger = opened.logger;
    // The engine's database holds exactly the recovered state, versions included.
    assert!(database_rows(&opened.database) == *expected, "the database loaded from the log differs from it");
    let protocol = P::over(opened.database, kind);
    let mut workers: Vec<_> = opened
        .logs
        .into_iter()
        .enumerate()
        .map(|(index, log)| {
            let mut worker = protocol.worker(WorkerOptions { index, workers: workers_count, record_history: true });
            P::trace(&mut worker).log_to(log);
            worker
        })
        .collect();
    let policy = CheckpointPolicy { period_ms: Some(20 + rng.below(60)), log_bytes: Some(1 << 20) };
    let rows_per_step = rows_per_checkpoint_step(workload.as_ref());
    let mut checkpointer = Checkpointer::new(&*shared, policy, 0, 0);
    let (mut txn, mut scratch, mut row) = (Txn::default(), Scratch::default(), Vec::new());
    let mut txn_rng = rng_from_seed(rng.next());
    let mut now_ms = 0;
    for _ in 0..steps {
        match rng.below(20) {
            0..=9 => {
                let index = rng.below(workers_count as u64) as usize;
                let worker = &mut workers[index];
                workload.generate(&mut txn_rng, index, &mut txn);
                let (finished, _) =
                    run_transaction(&protocol, worker, workload.as_ref(), &txn, &mut scratch, &mut row, |r, _| r < 5);
                if finished == Finished::Committed {
                    if rng.below(8) == 0 {
                        // Reclaim tombstones now and then, so keys leave the index and come back.
                        protocol.quiesce(&mut workers[index]);
                    }
                    let worker = &mut workers[index];
                    let entry = P::history(worker).pop().expect("histories are recorded");
                    let installed = entry.all_writes().map(|(a, _)| (a.table, a.key, a.version)).collect();
                    // One thread: the epoch cannot move between the commit and here.
                    committed.push(Committed { epoch: protocol.database().epoch(), txn: txn.clone(), installed });
                    coverage.commits += 1;
                } else {
                    assert_ne!(finished, Finished::Stopped, "a lone transaction aborted five times");
                }
            }
            // A worker enters the current epoch and holds it (a slow worker), or goes idle.
            10 => P::trace(&mut workers[rng.below(workers_count as u64) as usize]).enter_epoch(),
            11 => {
                let worker = &mut workers[rng.below(workers_count as u64) as usize];
                P::trace(worker).log().expect("logged").idle();
            }
            12..=15 => {
                now_ms += rng.below(3 * EPOCH_MS);
                let stepped = logger.step(now_ms);
                // Workers acknowledge whatever the log publishes as durable, even as it fails.
                *acknowledged_epoch = (*acknowledged_epoch).max(logger.durable_epoch());
                coverage.acknowledged = coverage.acknowledged.max(*acknowledged_epoch);
                stepped.map_err(|error| (error.to_string(), "logger"))?;
            }
            16 if !checkpointer.busy() && rng.below(4) == 0 => {
                checkpointer.begin_now(&logger).map_err(|error| (error.to_string(), "checkpoint"))?;
            }
            _ => {
                let step = checkpointer.step(
                    protocol.checkpoint_source(),
                    &logger,
                    now_ms,
                    1 + rng.below(rows_per_step) as usize,
                );
                if let durable::CheckpointStep::Committed { .. } =
                    step.map_err(|error| (error.to_string(), "checkpoint"))?
                {
                    coverage.checkpoints += 1;
                }
            }
        }
    }
    Ok(())
}

fn check_seed<P: TableProtocol>(
    kind: ProtocolKind,
    seed: u64,
    workload: &Arc<dyn TableWorkload>,
    steps: usize,
    coverage: &mut Coverage,
) {
    let hint = format!("{kind}: replay: ORDO_SEED={seed} cargo test -p ordo-threads --test durability");
    let mut rng = Rng(seed);
    let dir = FaultyDir::new(seed);
    let mut committed: Vec<Committed> = Vec::new();
    let mut acknowledged_epoch = 0;
    let mut state = reference_rows(workload.as_ref(), &MemoryDb::loaded(workload.as_ref()), &BTreeMap::new());
    for cycle in 0..CYCLES_PER_SEED {
        dir.power_cut_after(rng.below(80 + steps as u64));
        if rng.below(4) == 0 {
            dir.fail_sync_after(1 + rng.below(30));
        }
        match run_cycle::<P>(
            kind,
            &mut rng,
            &dir,
            workload,
            &mut committed,
            coverage,
            steps,
            &state,
            &mut acknowledged_epoch,
        ) {
            Ok(()) => {}
            Err((error, place)) => {
                if dir.is_powered_off() {
                    match place {
                        "logger" => coverage.cuts_in_logger += 1,
                        "checkpoint" => coverage.cuts_in_checkpoint += 1,
                        _ => coverage.cuts_in_recovery += 1,
                    }
                } else {
                    assert!(
                        error.contains("injected fsync failure"),
                        "seed {seed} cycle {cycle}: unexpected error in the {place}: {error}; {hint}"
                    );
                    coverage.fsync_failures += 1;
                }
            }
        }
        dir.crash(rng.below(2) == 0);

        // Sometimes the power is cut again during recovery (e.g. while it truncates).
        if rng.below(3) == 0 {
            dir.power_cut_after(rng.below(4));
            if recover_rows(&dir, workload.as_ref()).is_err() {
                coverage.cuts_in_recovery += 1;
                dir.crash(rng.below(2) == 0);
            }
        }
        dir.power_cut_after(u64::MAX);
        let (rows, epoch, cut) =
            recover_rows(&dir, workload.as_ref()).unwrap_or_else(|error| panic!("seed {seed}: {error}; {hint}"));
        coverage.torn_tails += u64::from(cut);
        assert!(
            epoch >= acknowledged_epoch,
            "seed {seed} cycle {cycle}: recovered through epoch {epoch} but epoch {acknowledged_epoch} was \
             acknowledged; {hint}"
        );
        // Commit order is execution order, and epochs never go back in it: a whole number of
        // epochs is a prefix.
        assert!(committed.windows(2).all(|pair| pair[0].epoch <= pair[1].epoch), "seed {seed}: epochs out of order");
        let kept = committed.iter().take_while(|tx| tx.epoch <= epoch).count();
        coverage.lost_epochs += u64::from(kept < committed.len());
        committed.truncate(kept);
        let expected = replay(workload.as_ref(), &committed, seed, &hint);
        if rows != expected {
            let differing: Vec<_> = expected
                .iter()
                .filter(|(key, value)| rows.get(key) != Some(value))
                .map(|(key, value)| (key, value.0, rows.get(key).map(|r| r.0)))
                .take(5)
                .collect();
            panic!(
                "seed {seed} cycle {cycle}: recovered state ({} rows) is not the replay of the {kept} commits of \
                 epochs <= {epoch} ({} rows); first differences (key, version expected, recovered): {differing:?}; \
                 {hint}",
                rows.len(),
                expected.len()
            );
        }
        let (again, epoch_again, cut_again) = recover_rows(&dir, workload.as_ref()).expect("second recovery");
        assert!(
            again == rows && epoch_again == epoch && !cut_again,
            "seed {seed} cycle {cycle}: recovery is not idempotent; {hint}"
        );
        // What recovery returned is durable: later recoveries may not go behind it.
        acknowledged_epoch = epoch;
        state = rows;
    }
}

/// Runs `seeds` seeds of `workload` under every protocol on tables; returns the coverage.
fn every_protocol(workload: &Arc<dyn TableWorkload>, seeds: &[u64], steps: usize) -> Coverage {
    let mut coverage = Coverage::default();
    for &seed in seeds {
        check_seed::<SiloTables>(ProtocolKind::Silo, seed, workload, steps, &mut coverage);
        check_seed::<TicTocTables>(ProtocolKind::TicToc, seed, workload, steps, &mut coverage);
        let two_phase = if seed % 2 == 0 { ProtocolKind::NoWait } else { ProtocolKind::WaitDie };
        check_seed::<TwoPhaseTables>(two_phase, seed, workload, steps, &mut coverage);
        check_seed::<SerialTables>(ProtocolKind::Serial, seed, workload, steps, &mut coverage);
        let mvcc = if seed % 2 == 0 { ProtocolKind::MvccSi } else { ProtocolKind::Ssi };
        check_seed::<MvccTables>(mvcc, seed, workload, steps, &mut coverage);
    }
    eprintln!("{coverage:?}");
    coverage
}

#[test]
fn smallbank_recovers_a_prefix_of_its_commits_with_every_acknowledged_one_after_any_crash() {
    let seeds = common::seeds(0..300);
    let coverage = every_protocol(&smallbank(), &seeds, 400);
    if seeds.len() > 1 {
        // The seeds must reach the interesting points, or the test proves little.
        assert!(
            coverage.checkpoints > 0
                && coverage.cuts_in_logger > 0
                && coverage.cuts_in_checkpoint > 0
                && coverage.cuts_in_recovery > 0
                && coverage.fsync_failures > 0
                && coverage.torn_tails > 0
                && coverage.lost_epochs > 0
                && coverage.acknowledged > 0,
            "{coverage:?}"
        );
    }
}

#[test]
fn tpcc_with_inserts_and_deletes_recovers_a_prefix_of_its_commits_after_any_crash() {
    let seeds = common::seeds(0..6);
    let coverage = every_protocol(&tpcc(), &seeds, 250);
    if seeds.len() > 1 {
        assert!(coverage.checkpoints > 0 && coverage.acknowledged > 0, "{coverage:?}");
    }
}

#[test]
fn deleted_and_recreated_keys_recover_with_increasing_versions() {
    let workload: Arc<dyn TableWorkload> = Arc::new(Toggle::new());
    let seeds = common::seeds(0..300);
    let coverage = every_protocol(&workload, &seeds, 400);
    if seeds.len() > 1 {
        assert!(coverage.checkpoints > 0 && coverage.acknowledged > 0 && coverage.lost_epochs > 0, "{coverage:?}");
    }
}
