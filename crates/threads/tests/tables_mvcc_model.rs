//! The multi-version protocols over tables against a model of snapshot isolation: up to three
//! attempts at once, interleaved at random on one thread, each doing random gets, prefetch
//! passes (which later gets start from), puts, inserts, deletes and scans (both directions,
//! with limits) over a small key range. Every answer must be the one the attempt's snapshot
//! (the committed state when it began) plus its own writes gives; a write of a key that a later
//! commit changed must abort at once, and a commit must fail exactly when first committer wins
//! says so (`mvcc_si`) or may fail only then or for serializability (`ssi`). The final table
//! must equal the model's, and `ssi`'s history must pass the checker.
//!
//! With a small version cap, old snapshots lose versions: then a read may abort with
//! `snapshot_too_old`, but whatever it returns is still exactly the snapshot's answer.
//!
//! A failure prints its seed; rerun with `ORDO_SEED=<seed> cargo test -p ordo-threads --test
//! tables_mvcc_model`.

mod common;

use std::collections::BTreeMap;

use common::{EVENS, evens, seeds};
use ordo_harness::AbortCause;
use ordo_storage::TableId;
use ordo_threads::tables::{Epochs, Index, Isolation, MvccTables, MvccTx, MvccWorker, WorkerOptions};
use ordo_workload::{Aborted, Direction, Tx, WorkloadRng, rng_from_seed};
use rand::Rng;

const TABLE: TableId = EVENS;
/// Keys drawn from `0..KEYS`; the table starts with the even ones.
const KEYS: u64 = 40;
const STEPS: usize = 6_000;
const ATTEMPTS_AT_ONCE: usize = 3;
/// Seeds each test runs, from 1, unless `ORDO_SEED` names one.
const SEEDS_DEFAULT: u64 = 6;

type Rows = BTreeMap<u64, Vec<u64>>;

/// What an attempt's writes of a key add up to, as the protocol buffers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Put,
    Insert,
    Delete,
    /// An own insert deleted again: installs nothing, so first committer wins skips it.
    InsertDelete,
}

/// The model's view of one live attempt.
struct Live<'a> {
    tx: MvccTx<'a>,
    /// How many commits the snapshot includes.
    snapshot: usize,
    view: Rows,
    written: BTreeMap<u64, Kind>,
}

/// What the model knows about the history of commits.
struct Model {
    /// The committed table after each commit (`states[0]`: as loaded).
    states: Vec<Rows>,
    /// For each key, the number of the commit that last installed a version of it.
    last_write: BTreeMap<u64, usize>,
    commits: usize,
    refused: usize,
    too_old: usize,
}

/// Steps of one batch of attempts at most (attempts still live then are abandoned).
const BATCH_STEPS_MAX: usize = 60;

fn scenario(isolation: Isolation, versions_max: usize, seed: u64) {
    let workload = evens(KEYS);
    let mvcc = MvccTables::load(&workload, Index::Tree, 2, Epochs::manual(), isolation, versions_max).unwrap();
    let record = isolation == Isolation::SerialSafetyNet;
    let mut workers: Vec<MvccWorker> = (0..ATTEMPTS_AT_ONCE)
        .map(|index| mvcc.worker(WorkerOptions { index, workers: ATTEMPTS_AT_ONCE, record_history: record }))
        .collect();
    let mut model =
        Model { states: vec![workload.rows(TABLE)], last_write: BTreeMap::new(), commits: 0, refused: 0, too_old: 0 };
    let mut rng = rng_from_seed(seed);
    let mut step = 0;
    while step < STEPS {
        mvcc.database().epochs().advance();
        let mut idle: Vec<Option<&mut MvccWorker>> = workers.iter_mut().map(Some).collect();
        let mut live: Vec<Option<Live<'_>>> = (0..ATTEMPTS_AT_ONCE).map(|_| None).collect();
        for _ in 0..BATCH_STEPS_MAX {
            step += 1;
            let at = rng.random_range(0..ATTEMPTS_AT_ONCE);
            if live[at].is_none() {
                if let Some(worker) = idle[at].take() {
                    let snapshot = model.states.len() - 1;
                    let view = model.states[snapshot].clone();
                    live[at] = Some(Live { tx: mvcc.begin(worker), snapshot, view, written: BTreeMap::new() });
                }
                continue;
            }
            let context = format!("{isolation:?} versions {versions_max} seed {seed} step {step}");
            if rng.random_bool(0.1) {
                let attempt = live[at].take().expect("live");
                finish(&mut model, attempt, isolation, rng.random_bool(0.85), &context);
            } else if let Err(may_conflict) =
                operate(&model, live[at].as_mut().expect("live"), &mut rng, step, &context)
            {
                let cause = live[at].take().expect("live").tx.abort();
                match cause {
                    AbortCause::Conflict => assert!(may_conflict, "{context}: a conflict without a newer version"),
                    AbortCause::SnapshotTooOld => model.too_old += 1,
                    other => panic!("{context}: an operation aborted with {other:?}"),
                }
            }
        }
        for attempt in live.into_iter().flatten() {
            attempt.tx.abort();
        }
    }
    for worker in &mut workers {
        mvcc.collect_all(worker);
    }
    let last = model.states.last().expect("the loaded state");
    assert_eq!(&mvcc.database().rows(TABLE), last, "{isolation:?} seed {seed}: the final table differs");
    let Model { commits, refused, too_old, .. } = model;
    assert!(commits > STEPS / 60, "{isolation:?} seed {seed}: only {commits} commits ({refused} refused)");
    println!(
        "{isolation:?} versions {versions_max} seed {seed}: {commits} commits, {refused} refused, {too_old} too old"
    );
    if record {
        let mut history: Vec<_> = workers.iter_mut().flat_map(|w| std::mem::take(w.history())).collect();
        history.sort_unstable_by_key(|entry| entry.id);
        if let Err(violation) = ordo_history::check(&history) {
            panic!("{isolation:?} seed {seed}: the history does not check: {violation:?}");
        }
    }
}

/// Commits (or abandons) `attempt` and checks the outcome against first committer wins.
fn finish(model: &mut Model, attempt: Live<'_>, isolation: Isolation, commit: bool, context: &str) {
    if !commit {
        attempt.tx.abort();
        return;
    }
    let fcw = attempt
        .written
        .iter()
        .filter(|&(_, &kind)| kind != Kind::InsertDelete)
        .all(|(key, _)| model.last_write.get(key).is_none_or(|&n| n <= attempt.snapshot));
    match attempt.tx.commit() {
        Ok(_) => {
            assert!(fcw, "{context}: committed against first committer wins");
            let number = model.states.len();
            let mut state = model.states[number - 1].clone();
            // An own insert deleted again installs nothing: the key keeps what others did.
            for (&key, _) in attempt.written.iter().filter(|&(_, &kind)| kind != Kind::InsertDelete) {
                match attempt.view.get(&key) {
                    Some(row) => state.insert(key, row.clone()),
                    None => state.remove(&key),
                };
                model.last_write.insert(key, number);
            }
            model.states.push(state);
            model.commits += 1;
        }
        Err(cause) => {
            if isolation == Isolation::Snapshot || !fcw {
                assert!(!fcw, "{context}: refused ({cause:?}) though first committer wins holds");
                assert_eq!(cause, AbortCause::Conflict, "{context}");
            } else {
                assert!(matches!(cause, AbortCause::Serialization | AbortCause::Conflict), "{context}: {cause:?}");
            }
            model.refused += 1;
        }
    }
}

/// One random operation of `attempt`, checked against its snapshot and own writes. If the
/// operation aborted the attempt: `Err(whether first committer wins allows a conflict)` (a
/// first write of a key a later commit changed); any other abort must be a version cut off.
fn operate(
    model: &Model,
    attempt: &mut Live<'_>,
    rng: &mut WorkloadRng,
    step: usize,
    context: &str,
) -> Result<(), bool> {
    let key = rng.random_range(0..KEYS);
    let value = vec![rng.random(), step as u64];
    let newer = model.last_write.get(&key).is_some_and(|&n| n > attempt.snapshot);
    let own = attempt.written.get(&key).copied();
    let mut row = [0u64; 2];
    // A first write of a key a later commit changed must abort (first committer wins).
    let aborted = |result: Result<bool, Aborted>, applies: bool, what: &str| -> Result<bool, bool> {
        let conflict = applies && newer && own.is_none();
        match result {
            Ok(done) => {
                assert!(!conflict, "{context}: {what} {key} over a newer version");
                Ok(done)
            }
            Err(Aborted) => Err(conflict),
        }
    };
    match rng.random_range(0..6) {
        0 => {
            let found = aborted(attempt.tx.get(TABLE, key, &mut row, false), false, "get")?;
            assert_eq!(found.then(|| row.to_vec()), attempt.view.get(&key).cloned(), "{context}: get {key}");
        }
        1 => {
            let present = attempt.view.contains_key(&key);
            let done = aborted(attempt.tx.put(TABLE, key, &value), present, "put")?;
            assert_eq!(done, present, "{context}: put {key}");
            if present {
                attempt.view.insert(key, value);
                attempt.written.insert(key, own.unwrap_or(Kind::Put));
            }
        }
        2 => {
            let absent = !attempt.view.contains_key(&key);
            let done = aborted(attempt.tx.insert(TABLE, key, &value), absent, "insert")?;
            assert_eq!(done, absent, "{context}: insert {key}");
            if absent {
                attempt.view.insert(key, value);
                let kind = match own {
                    None | Some(Kind::InsertDelete) => Kind::Insert,
                    Some(_) => Kind::Put,
                };
                attempt.written.insert(key, kind);
            }
        }
        3 => {
            let present = attempt.view.contains_key(&key);
            let done = aborted(attempt.tx.delete(TABLE, key), present, "delete")?;
            assert_eq!(done, present, "{context}: delete {key}");
            if present {
                attempt.view.remove(&key);
                let kind = if own == Some(Kind::Insert) { Kind::InsertDelete } else { Kind::Delete };
                attempt.written.insert(key, kind);
            }
        }
        4 => {
            // A prefetch pass: the attempt's later gets of these keys start from the records
            // it found, which the attempts interleaved with this one may delete, reclaim or
            // replace in between; their answers are checked like any get's.
            let keys: Vec<u64> = (0..rng.random_range(1..=8)).map(|_| rng.random_range(0..KEYS)).collect();
            attempt.tx.prefetch(TABLE, &keys);
        }
        _ => {
            let high = key + rng.random_range(0..KEYS / 2);
            let limit = rng.random_range(1..12);
            let direction = if rng.random() { Direction::Ascending } else { Direction::Descending };
            let mut seen = Vec::new();
            let scanned = attempt.tx.scan(TABLE, key, high, direction, limit, &mut |k, r| {
                seen.push((k, r.to_vec()));
                true
            });
            if scanned.is_err() {
                return Err(false);
            }
            let range = attempt.view.range(key..=high).map(|(k, r)| (*k, r.clone()));
            let expected: Vec<_> = match direction {
                Direction::Ascending => range.take(limit).collect(),
                Direction::Descending => range.rev().take(limit).collect(),
            };
            assert_eq!(seen, expected, "{context}: scan {key}..={high} {direction:?} limit {limit}");
        }
    }
    Ok(())
}

#[test]
fn snapshot_isolation_matches_the_model() {
    for seed in seeds(1..=SEEDS_DEFAULT) {
        scenario(Isolation::Snapshot, 8, seed);
    }
}

#[test]
fn the_serial_safety_net_matches_the_model_and_serializes() {
    for seed in seeds(1..=SEEDS_DEFAULT) {
        scenario(Isolation::SerialSafetyNet, 8, seed);
    }
}

#[test]
fn a_small_version_cap_aborts_old_snapshots_and_never_misreads() {
    for seed in seeds(1..=SEEDS_DEFAULT) {
        scenario(Isolation::Snapshot, 2, seed);
        scenario(Isolation::SerialSafetyNet, 2, seed);
    }
}
