//! Deterministic crash tests: a toy key-value engine drives the real group-commit core,
//! segment writer, checkpoints and recovery over a `FaultyDir`, the power is cut at a
//! seeded random operation or an fsync fails (mid-epoch, mid-sync, mid-checkpoint, during segment deletion,
//! during recovery's truncation), and what recovery returns is checked against the serial
//! replay of the committed transactions.
//!
//! Replay one seed: `ORDO_SEED=<n> cargo test -p ordo-log --test crash`.

use std::collections::BTreeMap;

use ordo_log::format::{self, Record};
use ordo_log::{
    CheckpointWriter, FaultyDir, GroupCommit, LogError, RowRecord, SegmentWriter, TxRecord, WorkerEpoch, Write,
    WriteKind, recover,
};

const KEYS: u64 = 300;
const TABLES: u16 = 2;
const WORKERS: usize = 2;
const SEEDS: u64 = 300;
const CYCLES_PER_SEED: usize = 4;
const STEPS_PER_CYCLE: usize = 400;
const SEGMENT_BYTES_MAX: u64 = 2048;

/// Live rows by `(table, key)`: `(version, row)`.
type Rows = BTreeMap<(u16, u64), (u64, Vec<u64>)>;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
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

/// The toy engine: rows, per-key version counters that only grow, the committed
/// transactions in commit order, and the highest acknowledged epoch.
struct Engine {
    rows: Rows,
    versions: BTreeMap<(u16, u64), u64>,
    committed: Vec<TxRecord>,
    acknowledged_epoch: u64,
}

impl Engine {
    fn commit(&mut self, rng: &mut Rng, epoch: u64) -> TxRecord {
        let mut writes = Vec::new();
        for _ in 0..=rng.below(3) {
            let table = rng.below(u64::from(TABLES)) as u16;
            let key = rng.below(KEYS);
            let version = self.versions.entry((table, key)).or_insert(0);
            *version += 1;
            let kind = if rng.below(5) == 0 { WriteKind::Delete } else { WriteKind::Put };
            let row = match kind {
                WriteKind::Put => vec![rng.next(); 1 + rng.below(3) as usize],
                WriteKind::Delete => Vec::new(),
            };
            match kind {
                WriteKind::Put => self.rows.insert((table, key), (*version, row.clone())),
                WriteKind::Delete => self.rows.remove(&(table, key)),
            };
            writes.push(Write { table, kind, key, version: *version, row });
        }
        let tx = TxRecord { epoch, commit_ts: Some(self.committed.len() as u64), writes };
        self.committed.push(tx.clone());
        tx
    }
}

/// Serial replay of the committed transactions of epochs `<= epoch`.
fn replay(committed: &[TxRecord], epoch: u64) -> Rows {
    let mut rows = Rows::new();
    for tx in committed.iter().filter(|tx| tx.epoch <= epoch) {
        for write in &tx.writes {
            match write.kind {
                WriteKind::Put => rows.insert((write.table, write.key), (write.version, write.row.clone())),
                WriteKind::Delete => rows.remove(&(write.table, write.key)),
            };
        }
    }
    rows
}

fn recover_rows(dir: &FaultyDir) -> Result<(Rows, ordo_log::Recovered), LogError> {
    let mut rows = Rows::new();
    let recovered = recover(dir, |row| {
        rows.insert((row.table, row.key), (row.version, row.row.to_vec()));
    })?;
    Ok((rows, recovered))
}

/// A fuzzy checkpoint being taken: its writer, the keys to read, the next key's index, and
/// the epoch the scan ended in once it has.
type CheckpointInProgress<'dir> = (CheckpointWriter<&'dir FaultyDir>, Vec<(u16, u64)>, usize, Option<u64>);

/// Runs the engine until the power is cut (or the cycle ends); returns normally either way.
fn run_cycle(
    rng: &mut Rng,
    dir: &FaultyDir,
    engine: &mut Engine,
    durable_epoch: u64,
    next_segment: u64,
) -> Result<u64, LogError> {
    let mut writer = SegmentWriter::start(dir.clone(), next_segment, durable_epoch, SEGMENT_BYTES_MAX)?;
    let mut core = GroupCommit::new(WORKERS, 1, durable_epoch, 0);
    let mut checkpoint: Option<CheckpointInProgress<'_>> = None;
    let mut checkpoints_finished = 0;
    for step in 0..STEPS_PER_CYCLE {
        let now_ms = step as u64;
        match rng.below(10) {
            0..=4 => {
                let worker = rng.below(WORKERS as u64) as usize;
                let epoch = core.global_epoch();
                core.publish_worker(worker, WorkerEpoch::In(epoch));
                let tx = engine.commit(rng, epoch);
                let mut bytes = Vec::new();
                format::encode_record(&Record::Transaction(tx), &mut bytes);
                core.append(worker, bytes);
            }
            5 => core.publish_worker(rng.below(WORKERS as u64) as usize, WorkerEpoch::Idle),
            6 => core.advance_epoch(now_ms),
            7 => {
                if let Some(flush) = core.poll_flush() {
                    writer.write(&flush)?;
                    core.flushed(flush.epoch);
                    engine.acknowledged_epoch = engine.acknowledged_epoch.max(flush.epoch);
                }
            }
            _ => match checkpoint.take() {
                None => {
                    // Every transaction of an earlier epoch is installed (the toy engine
                    // installs at commit), so the global epoch is a valid begin epoch.
                    let keys: Vec<(u16, u64)> = engine.rows.keys().copied().collect();
                    checkpoint = Some((CheckpointWriter::begin(dir, core.global_epoch())?, keys, 0, None));
                }
                Some((mut writer_ckpt, keys, mut next, mut end_epoch)) => {
                    // Read a few rows as they are now; transactions run in between.
                    for _ in 0..=rng.below(64) {
                        let Some(&(table, key)) = keys.get(next) else { break };
                        next += 1;
                        if let Some((version, row)) = engine.rows.get(&(table, key)) {
                            writer_ckpt.row(&RowRecord { table, key, version: *version, row: row.clone() })?;
                        }
                    }
                    if next >= keys.len() && end_epoch.is_none() {
                        // The scan ended in this epoch; commit once it is durable.
                        end_epoch = Some(core.global_epoch());
                        core.want_durable(core.global_epoch());
                    }
                    match end_epoch {
                        Some(end) if core.durable_epoch() >= end => {
                            writer_ckpt.finish(end, core.durable_epoch())?;
                            checkpoints_finished += 1;
                        }
                        _ => checkpoint = Some((writer_ckpt, keys, next, end_epoch)),
                    }
                }
            },
        }
    }
    Ok(checkpoints_finished)
}

fn check_seed(seed: u64, coverage: &mut Coverage) {
    let replay_hint = format!("replay: ORDO_SEED={seed} cargo test -p ordo-log --test crash");
    let mut rng = Rng(seed);
    let dir = FaultyDir::new(seed);
    let mut engine =
        Engine { rows: Rows::new(), versions: BTreeMap::new(), committed: Vec::new(), acknowledged_epoch: 0 };
    let (mut durable_epoch, mut next_segment) = (0, 0);
    for cycle in 0..CYCLES_PER_SEED {
        dir.power_cut_after(rng.below(600));
        if rng.below(4) == 0 {
            dir.fail_sync_after(1 + rng.below(40));
        }
        // The cycle ends at the first error: the engine fail-stops, acknowledging nothing more.
        match run_cycle(&mut rng, &dir, &mut engine, durable_epoch, next_segment) {
            Ok(checkpoints) => coverage.checkpoints += checkpoints,
            Err(_) if dir.is_powered_off() => coverage.power_cuts += 1,
            Err(error) => {
                assert!(
                    error.to_string().contains("injected fsync failure"),
                    "seed {seed} cycle {cycle}: unexpected error {error}; {replay_hint}"
                );
                coverage.fsync_failures += 1;
            }
        }
        dir.crash(rng.below(2) == 0);

        // Sometimes the power is cut again during recovery (e.g. while it truncates).
        if rng.below(3) == 0 {
            dir.power_cut_after(rng.below(4));
            if recover_rows(&dir).is_err() {
                coverage.recovery_power_cuts += 1;
                dir.crash(rng.below(2) == 0);
            }
        }
        dir.power_cut_after(u64::MAX);
        let (rows, recovered) =
            recover_rows(&dir).unwrap_or_else(|error| panic!("seed {seed}: {error}; {replay_hint}"));
        let epoch = recovered.durable_epoch;
        coverage.cuts += u64::from(recovered.cut.is_some());
        assert!(
            epoch >= engine.acknowledged_epoch,
            "seed {seed} cycle {cycle}: recovered through epoch {epoch} but epoch {} was acknowledged; {replay_hint}",
            engine.acknowledged_epoch
        );
        let expected = replay(&engine.committed, epoch);
        assert!(
            rows == expected,
            "seed {seed} cycle {cycle}: recovered state differs from the replay of epochs <= {epoch} \
             ({} rows against {}); {replay_hint}",
            rows.len(),
            expected.len()
        );
        let (again, recovered_again) = recover_rows(&dir).expect("second recovery");
        assert!(
            again == rows && recovered_again.durable_epoch == epoch,
            "seed {seed}: recovery is not idempotent; {replay_hint}"
        );

        // Restart from what survived: transactions of lost epochs never happened.
        engine.committed.retain(|tx| tx.epoch <= epoch);
        engine.rows = rows;
        engine.acknowledged_epoch = epoch;
        durable_epoch = epoch;
        next_segment = recovered.next_segment;
    }
}

#[test]
fn recovery_returns_a_prefix_of_epochs_containing_every_acknowledged_one() {
    let seeds: Vec<u64> = match std::env::var("ORDO_SEED") {
        Ok(seed) => vec![seed.parse().expect("ORDO_SEED is a u64")],
        Err(_) => (0..SEEDS).collect(),
    };
    let mut coverage = Coverage::default();
    for seed in &seeds {
        check_seed(*seed, &mut coverage);
    }
    eprintln!("{coverage:?}");
    if seeds.len() > 1 {
        // The seeds must reach the interesting points, or the test proves little.
        assert!(
            coverage.checkpoints > 0
                && coverage.cuts > 0
                && coverage.power_cuts > 0
                && coverage.recovery_power_cuts > 0
        );
    }
}

/// How often the seeds reached each interesting point.
#[derive(Debug, Default)]
struct Coverage {
    /// Checkpoints committed (segments deleted behind them).
    checkpoints: u64,
    /// Power cuts while the engine ran.
    power_cuts: u64,
    /// Injected fsync failures that stopped the engine.
    fsync_failures: u64,
    /// Power cuts during recovery.
    recovery_power_cuts: u64,
    /// Recoveries that cut a torn or corrupt tail.
    cuts: u64,
}
