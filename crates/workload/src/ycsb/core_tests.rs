//! Tests of YCSB's core workloads on the reference database.

use std::collections::BTreeSet;

use super::*;
use std::sync::Arc;

use crate::tables::{KV_TABLE, KvTables, MemoryDb, Outcome, Scratch, TableWorkload, Tx};
use crate::{Direction, rng_from_seed};

const SEED: u64 = 0x5eed_0014;
const TXNS: usize = 2_000;

fn config() -> YcsbConfig {
    YcsbConfig { records: 5_000, theta: 0.99, ops: 16, payload_bytes: 24, ..YcsbConfig::default() }
}

fn core(mix: YcsbMix) -> YcsbCore {
    YcsbCore::new(mix, config()).unwrap()
}

/// Runs `TXNS` seeded transactions, returning the database.
fn run(workload: &YcsbCore, seed: u64) -> MemoryDb {
    let mut db = MemoryDb::loaded(workload);
    let (mut rng, mut txn, mut scratch) = (rng_from_seed(seed), Txn::default(), Scratch::default());
    for _ in 0..TXNS {
        workload.generate(&mut rng, 0, &mut txn);
        assert_eq!(db.run(workload, &txn, &mut scratch), Outcome::Commit, "seed {seed}");
    }
    db
}

#[test]
fn read_write_mixes_match_a_b_c_f() {
    for (mix, read_share, write_kind) in [
        (YcsbMix::A, 0.5, WriteKind::Blind),
        (YcsbMix::B, 0.95, WriteKind::Blind),
        (YcsbMix::C, 1.0, WriteKind::Blind),
        (YcsbMix::F, 0.5, WriteKind::Rmw),
    ] {
        let workload = core(mix);
        let ycsb = workload.kv_form().unwrap();
        assert_eq!(ycsb.config().write_kind, write_kind, "{mix:?}");
        let (mut rng, mut txn) = (rng_from_seed(SEED), Txn::default());
        let mut writes = 0u64;
        for _ in 0..TXNS {
            workload.generate(&mut rng, 0, &mut txn);
            writes += u64::from(txn.flags.count_ones());
        }
        let share = 1.0 - writes as f64 / (TXNS * 16) as f64;
        assert!((share - read_share).abs() < 0.02, "{mix:?}: read share {share}, seed {SEED}");
        let mut db = run(&workload, SEED);
        workload.check(&mut db).unwrap();
    }
}

#[test]
fn a_custom_mix_is_the_key_value_form() {
    let config = YcsbConfig { read_ratio: 0.7, write_kind: WriteKind::Rmw, scrambled: true, ..config() };
    let core = YcsbCore::new(YcsbMix::Custom, config).unwrap();
    let kv = KvTables::new(Arc::new(Ycsb::new(config).unwrap()), config.payload_bytes);
    let (mut core_db, mut kv_db) = (MemoryDb::loaded(&core), MemoryDb::loaded(&kv));
    let (mut rng_a, mut rng_b) = (rng_from_seed(SEED), rng_from_seed(SEED));
    let (mut a, mut b, mut scratch) = (Txn::default(), Txn::default(), Scratch::default());
    for _ in 0..500 {
        core.generate(&mut rng_a, 0, &mut a);
        kv.generate(&mut rng_b, 0, &mut b);
        assert_eq!(a, b, "seed {SEED}");
        core_db.run(&core, &a, &mut scratch);
        kv_db.run(&kv, &b, &mut scratch);
    }
    assert_eq!(core_db.table(KV_TABLE), kv_db.table(KV_TABLE));
}

#[test]
fn d_and_e_have_no_key_value_form() {
    for (mix, needs) in [(YcsbMix::D, "inserts"), (YcsbMix::E, "scans")] {
        let error = core(mix).kv_form().unwrap_err().to_string();
        assert!(error.contains(needs) && error.contains("--engine threads"), "{error}");
    }
}

fn ops_of(txn: &Txn) -> impl Iterator<Item = (u64, u64)> + '_ {
    let ops = txn.keys.len() / 2;
    (0..ops).map(move |i| (txn.keys[i], txn.keys[ops + i]))
}

#[test]
fn d_inserts_unique_keys_and_reads_recent_ones() {
    let workload = core(YcsbMix::D);
    let mut db = MemoryDb::loaded(&workload);
    let (mut rng, mut txn, mut scratch) = (rng_from_seed(SEED), Txn::default(), Scratch::default());
    let (mut inserted, mut reads, mut recent_reads) = (BTreeSet::new(), 0u64, 0u64);
    for _ in 0..TXNS {
        workload.generate(&mut rng, 0, &mut txn);
        let newest = workload.config().records + workload.inserted();
        for (key, descriptor) in ops_of(&txn) {
            if descriptor & 0xff == 1 {
                assert!(inserted.insert(key), "key {key} inserted twice, seed {SEED}");
                assert!(key >= workload.config().records);
            } else {
                reads += 1;
                recent_reads += u64::from(newest - key <= 100);
            }
        }
        db.run(&workload, &txn, &mut scratch);
    }
    let share = inserted.len() as f64 / (TXNS * 16) as f64;
    assert!((share - INSERT_RATIO).abs() < 0.01, "insert share {share}, seed {SEED}");
    // Uniform reads would put 2% of reads on the newest 100 of 5000+ keys; Zipf(0.99) back
    // from the newest puts about half there (less than its 57% mass: keys are distinct per txn).
    assert!(
        recent_reads as f64 > 0.4 * reads as f64,
        "{recent_reads} of {reads} reads among the newest 100 keys, seed {SEED}"
    );
    for key in &inserted {
        assert!(db.table(KV_TABLE).contains_key(key), "inserted key {key} is present");
    }
    workload.check(&mut db).unwrap();
}

#[test]
fn e_scans_at_most_a_hundred_rows_in_order_from_the_drawn_key() {
    let workload = core(YcsbMix::E);
    let mut db = MemoryDb::loaded(&workload);
    let (mut rng, mut txn, mut scratch) = (rng_from_seed(SEED), Txn::default(), Scratch::default());
    let (mut scans, mut inserts) = (0u64, 0u64);
    for _ in 0..TXNS {
        workload.generate(&mut rng, 0, &mut txn);
        for (key, descriptor) in ops_of(&txn) {
            if descriptor & 0xff == 2 {
                scans += 1;
                let length = descriptor >> 8;
                assert!((1..=SCAN_LENGTH_MAX).contains(&length));
                let mut seen = Vec::new();
                db.scan(KV_TABLE, key, u64::MAX >> 16, Direction::Ascending, length as usize, &mut |k, _| {
                    seen.push(k);
                    true
                })
                .unwrap();
                assert!(seen.len() as u64 <= length && seen.first() == Some(&key), "seed {SEED}");
                assert!(seen.windows(2).all(|w| w[0] < w[1]));
            } else {
                inserts += 1;
            }
        }
        db.run(&workload, &txn, &mut scratch);
    }
    let share = scans as f64 / (scans + inserts) as f64;
    assert!((share - 0.95).abs() < 0.01, "scan share {share}, seed {SEED}");
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    workload.footprint(&txn, &mut reads, &mut writes);
    assert!(!reads.is_empty() || !writes.is_empty());
    workload.check(&mut db).unwrap();
}

#[test]
fn check_catches_a_torn_payload_in_every_form() {
    for mix in [YcsbMix::A, YcsbMix::E] {
        let workload = core(mix);
        let mut db = run(&workload, SEED);
        workload.check(&mut db).unwrap();
        let mut row = vec![0; 4];
        db.get(KV_TABLE, 5, &mut row, false).unwrap();
        row[2] ^= 1;
        db.put(KV_TABLE, 5, &row).unwrap();
        assert!(workload.check(&mut db).is_err(), "{mix:?}");
    }
}

#[test]
fn names_parse() {
    for name in ["a", "B", "c", "d", "e", "f", "custom"] {
        assert_eq!(name.parse::<YcsbMix>().unwrap().name(), name.to_ascii_lowercase());
    }
    assert!("g".parse::<YcsbMix>().is_err());
}
