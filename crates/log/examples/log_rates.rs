//! Measures the disk's own fsync latency and the log's recovery rate in a directory.
//!
//! `cargo run --release -p ordo-log --example log_rates -- DIR [ROWS] [LOG_TRANSACTIONS]`
//!
//! Writes a checkpoint of ROWS rows (4 words each) and a log of LOG_TRANSACTIONS
//! single-write transactions (1,000 per epoch) into DIR (which must not exist), then
//! recovers it and prints rows/s and log bytes/s. Not a test: timings vary with load.

use std::time::Instant;

use ordo_log::format::{self, Record};
use ordo_log::{
    CheckpointWriter, Dir, FileDir, GroupCommit, SegmentWriter, TxRecord, WorkerEpoch, Write, WriteKind, recover,
};

const FSYNC_SAMPLES: usize = 200;
const TRANSACTIONS_PER_EPOCH: u64 = 1000;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: log_rates DIR [ROWS] [LOG_TRANSACTIONS]");
        std::process::exit(2);
    };
    let rows: u64 = args.next().map_or(1_000_000, |value| value.parse().expect("ROWS is a number"));
    let transactions: u64 = args.next().map_or(1_000_000, |value| value.parse().expect("LOG_TRANSACTIONS is a number"));
    if std::path::Path::new(&path).exists() {
        eprintln!("{path} exists; give a new directory");
        std::process::exit(2);
    }
    let dir = FileDir::open(&path).expect("open directory");

    // The disk's fsync latency for a 4 KiB append: the floor under any sync commit.
    dir.create("fsync-probe").expect("create");
    let mut latencies_us = Vec::with_capacity(FSYNC_SAMPLES);
    for _ in 0..FSYNC_SAMPLES {
        let started = Instant::now();
        dir.append("fsync-probe", &[7; 4096]).expect("append");
        dir.sync("fsync-probe").expect("fsync");
        latencies_us.push(started.elapsed().as_micros() as u64);
    }
    dir.remove("fsync-probe").expect("remove");
    latencies_us.sort_unstable();
    println!(
        "fsync of a 4 KiB append: p50 {} us, p99 {} us ({FSYNC_SAMPLES} samples)",
        latencies_us[FSYNC_SAMPLES / 2],
        latencies_us[FSYNC_SAMPLES * 99 / 100]
    );

    // A checkpoint at epoch 1, then the log.
    let mut checkpoint = CheckpointWriter::begin(&dir, 1).expect("checkpoint");
    for key in 0..rows {
        checkpoint.row_words(0, key, 1, &[key; 4]).expect("row");
    }
    let mut writer = SegmentWriter::start(FileDir::open(&path).expect("open"), 0, 0, 64 << 20).expect("segment");
    let mut core = GroupCommit::new(1, 1, 0, 0);
    let epochs = transactions.div_ceil(TRANSACTIONS_PER_EPOCH);
    let mut written = 0;
    for epoch in 1..=epochs {
        core.publish_worker(0, WorkerEpoch::In(epoch));
        while written < transactions.min(epoch * TRANSACTIONS_PER_EPOCH) {
            let key = written % rows.max(1);
            let write = Write { table: 0, kind: WriteKind::Put, key, version: 2 + written, row: vec![written; 4] };
            let mut bytes = Vec::new();
            format::encode_record(
                &Record::Transaction(TxRecord { epoch, commit_ts: None, writes: vec![write] }),
                &mut bytes,
            );
            core.append(0, bytes);
            written += 1;
        }
        core.advance_epoch(epoch);
        core.publish_worker(0, WorkerEpoch::Idle);
        let flush = core.poll_flush().expect("closable");
        writer.write(&flush).expect("write");
        core.flushed(flush.epoch);
    }
    checkpoint.finish(1, core.durable_epoch()).expect("finish checkpoint");

    let started = Instant::now();
    let mut delivered = 0u64;
    let recovered = recover(&dir, |_| delivered += 1).expect("recover");
    let seconds = started.elapsed().as_secs_f64();
    let stats = &recovered.stats;
    println!(
        "recovered {delivered} rows ({} from the checkpoint) and {} transactions, {} bytes, in {seconds:.3} s: \
         {:.0} rows/s, {:.1} MB/s",
        stats.checkpoint_rows,
        stats.transactions,
        stats.bytes,
        (stats.checkpoint_rows + stats.transactions) as f64 / seconds,
        stats.bytes as f64 / seconds / 1e6
    );
}
