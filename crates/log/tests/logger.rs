//! The logger thread over both devices: fail-stop after a failed fsync, a round trip through
//! real files in a temporary directory, and corruption in the middle of a segment.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ordo_log::format::{self, HEADER_LEN, Record};
use ordo_log::{
    Dir, Durability, FaultyDir, FileDir, GroupCommit, LogConfig, LogError, Logger, SegmentWriter, TxRecord,
    WorkerEpoch, WorkerLog, Write, WriteKind, recover,
};

/// Upper bound on how long a test waits for the logger thread.
const WAIT_LIMIT: Duration = Duration::from_secs(20);

fn put(epoch: u64, key: u64, version: u64) -> TxRecord {
    TxRecord {
        epoch,
        commit_ts: None,
        writes: vec![Write { table: 0, kind: WriteKind::Put, key, version, row: vec![key * 10 + version] }],
    }
}

/// Commits one transaction writing `key` at `version`; returns its epoch.
fn commit(worker: &WorkerLog, key: u64, version: u64) -> u64 {
    let epoch = worker.enter_epoch();
    worker.append(&put(epoch, key, version));
    worker.idle();
    epoch
}

fn recovered_rows(dir: &dyn Dir) -> (BTreeMap<u64, (u64, Vec<u64>)>, ordo_log::Recovered) {
    let mut rows = BTreeMap::new();
    let recovered = recover(dir, |row| {
        rows.insert(row.key, (row.version, row.row.to_vec()));
    })
    .expect("recovery");
    (rows, recovered)
}

#[test]
fn a_failed_fsync_stops_the_logger_for_good() {
    let dir = FaultyDir::new(7);
    let config = LogConfig { durability: Durability::Sync, epoch_ms: 1, segment_bytes_max: 1 << 20 };
    // Sync 1 is the new segment's header; the 4th sync fails.
    dir.fail_sync_after(4);
    let (logger, workers) = Logger::start(dir.clone(), &config, 1, 0, 0).expect("start");
    let started = Instant::now();
    let mut version = 0;
    while logger.check().is_ok() {
        assert!(started.elapsed() < WAIT_LIMIT, "the injected fsync failure never surfaced");
        version += 1;
        commit(&workers[0], 1, version);
        std::thread::sleep(Duration::from_millis(1));
    }
    let durable = logger.durable_epoch();
    assert!(durable >= 1, "the first syncs succeeded");
    // Keep committing: nothing more becomes durable, nothing more is acknowledged.
    let mut last_epoch = 0;
    for _ in 0..20 {
        version += 1;
        last_epoch = commit(&workers[0], 1, version);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(logger.durable_epoch(), durable);
    assert!(!workers[0].acknowledged(last_epoch));
    assert!(!logger.acknowledged(durable + 1));
    let error = logger.check().unwrap_err();
    assert!(matches!(error, LogError::Stopped { .. }), "{error}");
    assert!(error.to_string().contains("fsync"), "{error}");
    assert!(logger.shutdown().is_err());

    dir.crash(true);
    let (_, recovered) = recovered_rows(&dir);
    assert!(recovered.durable_epoch >= durable, "an acknowledged epoch was lost");
}

#[test]
fn file_dir_round_trip_across_restarts() {
    let temp = tempfile::tempdir().expect("tempdir");
    let path = temp.path().join("wal");
    let config = LogConfig { durability: Durability::Sync, epoch_ms: 2, segment_bytes_max: 4096 };
    let mut model = BTreeMap::new();
    let mut version = 0;
    for restart in 0..3 {
        let dir = FileDir::open(&path).expect("open");
        let (rows, recovered) = recovered_rows(&dir);
        assert_eq!(rows, model, "restart {restart}");
        let (logger, workers) = Logger::start(
            FileDir::open(&path).expect("open"),
            &config,
            2,
            recovered.durable_epoch,
            recovered.next_segment,
        )
        .expect("start");
        let mut last_epoch = 0;
        for step in 0..200u64 {
            version += 1;
            let key = step % 37;
            last_epoch = last_epoch.max(commit(&workers[(step % 2) as usize], key, version));
            model.insert(key, (version, vec![key * 10 + version]));
        }
        let started = Instant::now();
        while !logger.acknowledged(last_epoch) {
            assert!(started.elapsed() < WAIT_LIMIT, "epoch {last_epoch} never became durable");
            std::thread::sleep(Duration::from_millis(1));
        }
        let durable = logger.shutdown().expect("shutdown");
        assert!(durable >= last_epoch);
    }
    let names = FileDir::open(&path).expect("open").list().expect("list");
    assert!(names.len() > 2, "segments rotated at 4 KiB: {names:?}");
}

#[test]
fn a_cleanly_shut_down_log_ends_at_its_last_record() {
    // A logger's flushes may be direct writes padded with zeros to whole blocks; shutdown cuts
    // the padding, so a closed log has nothing for recovery to cut.
    let temp = tempfile::tempdir().expect("tempdir");
    let path = temp.path().join("wal");
    let config = LogConfig { durability: Durability::Sync, epoch_ms: 1, segment_bytes_max: 1 << 20 };
    let (logger, workers) = Logger::start(FileDir::open(&path).expect("open"), &config, 1, 0, 0).expect("start");
    let epoch = commit(&workers[0], 1, 1);
    let started = Instant::now();
    while !logger.acknowledged(epoch) {
        assert!(started.elapsed() < WAIT_LIMIT, "epoch {epoch} never became durable");
        std::thread::sleep(Duration::from_millis(1));
    }
    workers[0].idle();
    logger.shutdown().expect("shutdown");
    let segment = path.join(ordo_log::naming::segment_name(0));
    let len = std::fs::metadata(&segment).expect("stat").len();
    let (rows, recovered) = recovered_rows(&FileDir::open(&path).expect("open"));
    assert_eq!((rows.len(), recovered.cut), (1, None));
    assert_eq!(std::fs::metadata(&segment).expect("stat").len(), len, "recovery cut padding off the segment");
}

#[test]
fn an_idle_logger_makes_a_wanted_epoch_durable() {
    let config = LogConfig { durability: Durability::Sync, epoch_ms: 1, segment_bytes_max: 1 << 20 };
    let (logger, _workers) = Logger::start(FaultyDir::new(5), &config, 1, 0, 0).expect("start");
    let wanted = logger.global_epoch();
    logger.want_durable(wanted);
    let started = Instant::now();
    while logger.durable_epoch() < wanted {
        assert!(started.elapsed() < WAIT_LIMIT, "epoch {wanted} never became durable");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn out_of_range_configuration_is_rejected() {
    let config = LogConfig { epoch_ms: 0, ..LogConfig::default() };
    let error = Logger::start(FaultyDir::new(1), &config, 1, 0, 0).unwrap_err();
    assert!(matches!(error, LogError::InvalidConfig { field: "epoch_ms", .. }), "{error}");
}

#[test]
fn async_and_off_acknowledge_at_once() {
    for durability in [Durability::Async, Durability::Off] {
        let config = LogConfig { durability, epoch_ms: 1000, segment_bytes_max: 1 << 20 };
        let (logger, workers) = Logger::start(FaultyDir::new(1), &config, 1, 0, 0).expect("start");
        let epoch = commit(&workers[0], 1, 1);
        assert!(workers[0].acknowledged(epoch) && logger.durable_epoch() == 0, "{durability:?}");
    }
}

#[test]
fn corruption_inside_a_segment_cuts_the_log_there() {
    let dir = FaultyDir::new(3);
    let mut writer = SegmentWriter::start(dir.clone(), 0, 0, 1 << 20).expect("start");
    let mut core = GroupCommit::new(1, 1, 0, 0);
    // Where each epoch's flush begins in the segment.
    let mut flush_offsets = Vec::new();
    let mut offset = HEADER_LEN;
    for epoch in 1..=10u64 {
        core.publish_worker(0, WorkerEpoch::In(epoch));
        let mut bytes = Vec::new();
        format::encode_record(&Record::Transaction(put(epoch, epoch, 1)), &mut bytes);
        core.append(0, bytes);
        core.advance_epoch(epoch);
        core.publish_worker(0, WorkerEpoch::Idle);
        let flush = core.poll_flush().expect("epoch closable");
        assert_eq!(flush.epoch, epoch);
        writer.write(&flush).expect("write");
        core.flushed(epoch);
        flush_offsets.push(offset);
        offset += flush.len();
    }
    let segment = dir.list().expect("list")[0].clone();
    dir.corrupt(&segment, flush_offsets[5] + 12);
    let (rows, recovered) = recovered_rows(&dir);
    let cut = recovered.cut.expect("corruption detected");
    assert_eq!((cut.file.as_str(), cut.offset), (segment.as_str(), flush_offsets[5] as u64), "{}", cut.reason);
    assert_eq!(recovered.durable_epoch, 5);
    assert_eq!(rows.keys().copied().collect::<Vec<_>>(), (1..=5).collect::<Vec<_>>());
    assert_eq!(recovered.stats.transactions, 5);
    // The tail was cut back to the last closed epoch: a second recovery finds no damage.
    let (rows_again, again) = recovered_rows(&dir);
    assert_eq!((rows_again, again.durable_epoch, again.cut), (rows, 5, None));
}

#[test]
fn two_worker_threads_every_acknowledged_commit_recovers() {
    const COMMITS_PER_WORKER: u64 = 500;
    let dir = FaultyDir::new(11);
    let config = LogConfig { durability: Durability::Sync, epoch_ms: 1, segment_bytes_max: 8192 };
    let (logger, workers) = Logger::start(dir.clone(), &config, 2, 0, 0).expect("start");
    std::thread::scope(|scope| {
        for (index, worker) in workers.iter().enumerate() {
            scope.spawn(move || {
                let mut pending = Vec::new();
                for version in 1..=COMMITS_PER_WORKER {
                    let key = index as u64 * 1000 + version % 50;
                    pending.push(commit(worker, key, version));
                    pending.retain(|epoch| !worker.acknowledged(*epoch));
                }
                let started = Instant::now();
                while pending.iter().any(|epoch| !worker.acknowledged(*epoch)) {
                    assert!(started.elapsed() < WAIT_LIMIT, "commits never acknowledged");
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
        }
    });
    // Every commit was acknowledged, so a crash right now must keep all of them.
    dir.crash(true);
    let (rows, _) = recovered_rows(&dir);
    for index in 0..2u64 {
        for version in COMMITS_PER_WORKER - 49..=COMMITS_PER_WORKER {
            let key = index * 1000 + version % 50;
            assert_eq!(rows.get(&key), Some(&(version, vec![key * 10 + version])), "key {key}");
        }
    }
    drop(logger);
}

#[test]
fn a_manual_logger_moves_only_when_stepped_and_records_may_join_a_later_epoch() {
    let dir = FaultyDir::new(9);
    let config = LogConfig { durability: Durability::Sync, epoch_ms: 10, segment_bytes_max: 1 << 20 };
    let (logger, workers) = Logger::start_manual(dir.clone(), &config, 2, 0, 0).expect("start");
    let entered = workers[0].enter_epoch();
    assert_eq!(entered, 1);
    logger.step(5).unwrap();
    assert_eq!(logger.global_epoch(), 1, "not a whole period yet");
    logger.step(10).unwrap();
    logger.step(20).unwrap();
    assert_eq!(logger.global_epoch(), 3);
    // Worker 0 entered epoch 1 and serialized in epoch 3: its record joins epoch 3, and epochs
    // 1 and 2 stayed open for it all along.
    workers[0].append(&put(3, 7, 1));
    logger.step(25).unwrap();
    assert_eq!(logger.durable_epoch(), 0, "worker 0 is still in epoch 3");
    workers[0].idle();
    logger.step(30).unwrap();
    assert_eq!(logger.durable_epoch(), 3);
    assert!(workers[0].acknowledged(3) && !workers[0].acknowledged(4));

    // A read-only commit logs nothing but asks for its epoch: a marker-only flush.
    let epoch = workers[1].enter_epoch();
    workers[1].want_durable(epoch);
    workers[1].idle();
    logger.step(40).unwrap();
    logger.step(50).unwrap();
    assert!(logger.durable_epoch() >= epoch, "durable {} < wanted {epoch}", logger.durable_epoch());
    assert!(logger.bytes_written() > 0);
    assert_eq!(logger.shutdown().unwrap(), logger_durable_after(&dir));
}

/// The durable epoch recovery finds in `dir`.
fn logger_durable_after(dir: &FaultyDir) -> u64 {
    recovered_rows(dir).1.durable_epoch
}
