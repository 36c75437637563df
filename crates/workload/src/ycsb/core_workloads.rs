//! YCSB's core workloads A-F by name, as table workloads ([`YcsbCore`]).
//!
//! | name | mix                                   | request distribution            |
//! |------|---------------------------------------|---------------------------------|
//! | A    | 50% read, 50% update (blind write)    | Zipfian(θ)                      |
//! | B    | 95% read, 5% update                   | Zipfian(θ)                      |
//! | C    | 100% read                             | Zipfian(θ)                      |
//! | D    | 95% read, 5% insert                   | latest: Zipfian(θ) back from the newest key |
//! | E    | 95% scan (1..=100 rows), 5% insert    | scan start Zipfian(θ)           |
//! | F    | 50% read, 50% read-modify-write       | Zipfian(θ)                      |
//!
//! Every transaction is `ops` operations drawn from the mix. A, B, C and F (and custom mixes,
//! today's `read_ratio` / `write_kind` / `scrambled`) are exactly the key-value [`Ycsb`] with
//! a read ratio and a write kind, so they run as [`KvTables`] over it: the same rows, the same
//! procedure, the same random stream for a seed. [`YcsbCore::kv_form`] hands that [`Ycsb`] to
//! the engines without tables (the pipeline and the PostgreSQL tier); D and E refuse.
//!
//! D and E grow the table: an insert takes the next key from a shared atomic counter that
//! starts at `records`, so inserted keys are unique across workers and threads.
//!
//! Key order: YCSB hashes the insert sequence number into the key space by default
//! (`insertorder=hashed`). ordo keeps insert order (YCSB's `insertorder=ordered`): the
//! `i`-th insert gets key `records + i`. Then D's "latest" requests are the highest keys, and
//! E's scans walk neighbours in load-and-insert order, so a scan over new keys sees the
//! inserts just made — the range a phantom would appear in.
//!
//! ```text
//!   keys:  0 ....................... records-1 | records  records+1 ...  next-1
//!          loaded (Zipf rank r -> key r)         inserted, in counter order
//!   D read: key = newest - Zipf rank       E scan: start = Zipf rank, limit 1..=100
//! ```
//!
//! A D read may draw a key whose insert was handed out but not yet committed by another
//! worker; it then reads an absent key (a valid read the engine validates like any other).
//!
//! Txn layout for D and E: `keys[0..ops]` are the operation keys, `keys[ops..2*ops]` are the
//! operation descriptors (`kind | scan_length << 8`). Footprint (for reordering before
//! execution): a read reads `footprint_key(0, key)`; an insert writes its new key; a scan is
//! coarse: it reads its start key's bucket of [`SCAN_BUCKET_KEYS`] keys, and the bucket after
//! it (a scan of up to 100 rows from any start stays within two buckets of 128 keys, as long
//! as keys are dense).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ordo_storage::{Schema, TableId, TableSchema};
use rand::Rng;
use thiserror::Error;

use super::{WriteKind, Ycsb, YcsbConfig};
use crate::WorkloadRng;
use crate::error::WorkloadError;
use crate::procedure::Txn;
use crate::tables::{
    Aborted, ConsistencyError, ConsistencyReport, Direction, KV_TABLE, KvTables, Outcome, Scratch, TableWorkload, Tx,
    footprint_key, payload_word,
};
use crate::zipf::Zipf;

/// Longest scan of workload E (YCSB's `maxscanlength`).
pub const SCAN_LENGTH_MAX: u64 = 100;
/// Keys per footprint bucket of a scan (a power of two above [`SCAN_LENGTH_MAX`]).
pub const SCAN_BUCKET_KEYS: u64 = 128;
/// Share of operations that insert in D and E.
pub const INSERT_RATIO: f64 = 0.05;
/// Highest key a scan may reach (keys fit a footprint identity).
const SCAN_HIGH_KEY: u64 = (1 << crate::tables::FOOTPRINT_KEY_BITS) - 1;

/// A YCSB core workload by name, or a custom key-value mix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum YcsbMix {
    A,
    B,
    C,
    D,
    E,
    F,
    /// Today's flags: `read_ratio`, `write_kind` and `scrambled` of the [`YcsbConfig`].
    Custom,
}

impl std::str::FromStr for YcsbMix {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "a" => Ok(YcsbMix::A),
            "b" => Ok(YcsbMix::B),
            "c" => Ok(YcsbMix::C),
            "d" => Ok(YcsbMix::D),
            "e" => Ok(YcsbMix::E),
            "f" => Ok(YcsbMix::F),
            "custom" => Ok(YcsbMix::Custom),
            other => Err(WorkloadError::invalid("ycsb", format!("`{other}`: expected a, b, c, d, e, f or custom"))),
        }
    }
}

impl YcsbMix {
    pub fn name(self) -> &'static str {
        match self {
            YcsbMix::A => "a",
            YcsbMix::B => "b",
            YcsbMix::C => "c",
            YcsbMix::D => "d",
            YcsbMix::E => "e",
            YcsbMix::F => "f",
            YcsbMix::Custom => "custom",
        }
    }

    /// The key-value read ratio and write kind of A, B, C, F; `None` for D and E. Custom keeps
    /// `config`'s.
    fn kv_mix(self, config: &YcsbConfig) -> Option<(f64, WriteKind)> {
        match self {
            YcsbMix::A => Some((0.5, WriteKind::Blind)),
            YcsbMix::B => Some((0.95, WriteKind::Blind)),
            YcsbMix::C => Some((1.0, WriteKind::Blind)),
            YcsbMix::F => Some((0.5, WriteKind::Rmw)),
            YcsbMix::Custom => Some((config.read_ratio, config.write_kind)),
            YcsbMix::D | YcsbMix::E => None,
        }
    }
}

/// Why a core workload has no key-value form.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KvFormError {
    #[error(
        "YCSB {workload} needs {needs}, which only the thread-per-worker engine on tables runs \
         (--engine threads); the pipeline and pg engines run a, b, c, f and custom mixes"
    )]
    NeedsTables { workload: &'static str, needs: &'static str },
}

/// Operation kinds of D and E.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
enum Op {
    Read = 0,
    Insert = 1,
    Scan = 2,
}

impl Op {
    fn decode(word: u64) -> (Op, u64) {
        let op = match word & 0xff {
            0 => Op::Read,
            1 => Op::Insert,
            _ => Op::Scan,
        };
        (op, word >> 8)
    }
}

/// Procedure names of D and E (one procedure; the mix is per operation).
const PROCEDURES: &[&str] = &["Ycsb"];

/// YCSB's core workloads on tables.
#[derive(Debug)]
pub struct YcsbCore {
    mix: YcsbMix,
    config: YcsbConfig,
    /// A, B, C, F, custom: the key-value form on tables.
    kv: Option<(Arc<Ycsb>, KvTables)>,
    /// D, E: the table, the rank sampler and the insert counter.
    schema: Schema,
    zipf: Zipf,
    payload_words: usize,
    next_insert: AtomicU64,
}

impl YcsbCore {
    /// The workload `mix` over `config` (its records, θ, ops, payload; `read_ratio`,
    /// `write_kind` only for [`YcsbMix::Custom`]; `scrambled` maps ranks for every mix but D,
    /// whose ranks count back from the newest key).
    pub fn new(mix: YcsbMix, config: YcsbConfig) -> Result<Self, WorkloadError> {
        config.validate()?;
        let kv = match mix.kv_mix(&config) {
            Some((read_ratio, write_kind)) => {
                let ycsb = Arc::new(Ycsb::new(YcsbConfig { read_ratio, write_kind, ..config })?);
                let tables = KvTables::new(ycsb.clone(), config.payload_bytes);
                Some((ycsb, tables))
            }
            None => None,
        };
        let mut table = TableSchema::new("kv").int("value");
        if config.payload_bytes > 0 {
            table = table.chars("payload", u16::try_from(config.payload_bytes).expect("validated: at most 4096"));
        }
        let table = table.rows_hint(config.records);
        let payload_words = table.row_words - 1;
        let mut schema = Schema::new();
        schema.add(table).expect("the kv table is valid");
        Ok(YcsbCore {
            mix,
            config,
            kv,
            schema,
            zipf: Zipf::new(config.records, config.theta)?,
            payload_words,
            next_insert: AtomicU64::new(config.records),
        })
    }

    pub fn mix(&self) -> YcsbMix {
        self.mix
    }

    pub fn config(&self) -> &YcsbConfig {
        &self.config
    }

    /// The key-value [`Ycsb`] this workload is, for engines without tables.
    pub fn kv_form(&self) -> Result<Arc<Ycsb>, KvFormError> {
        match (&self.kv, self.mix) {
            (Some((ycsb, _)), _) => Ok(ycsb.clone()),
            (None, YcsbMix::D) => Err(KvFormError::NeedsTables { workload: "d", needs: "inserts" }),
            (None, _) => Err(KvFormError::NeedsTables { workload: "e", needs: "scans and inserts" }),
        }
    }

    /// Keys inserted so far (handed out to transactions).
    pub fn inserted(&self) -> u64 {
        self.next_insert.load(Ordering::Relaxed) - self.config.records
    }

    fn row_words(&self) -> usize {
        1 + self.payload_words
    }

    fn key_of_rank(&self, rank: u64) -> u64 {
        if self.config.scrambled { super::fnv1a64(rank) % self.config.records } else { rank }
    }
}

impl TableWorkload for YcsbCore {
    fn name(&self) -> &'static str {
        "ycsb"
    }

    fn procedure_names(&self) -> &'static [&'static str] {
        PROCEDURES
    }

    fn schema(&self) -> &Schema {
        match &self.kv {
            Some((_, tables)) => tables.schema(),
            None => &self.schema,
        }
    }

    fn load(&self, part: usize, parts: usize, sink: &mut dyn FnMut(TableId, u64, &[u64])) {
        if let Some((_, tables)) = &self.kv {
            return tables.load(part, parts, sink);
        }
        let keys = self.config.records;
        let chunk = keys.div_ceil(parts.max(1) as u64);
        let mut row = vec![0; self.row_words()];
        for key in (part as u64 * chunk)..((part as u64 + 1) * chunk).min(keys) {
            KvTables::fill_row(&mut row, 0);
            sink(KV_TABLE, key, &row);
        }
    }

    fn generate(&self, rng: &mut WorkloadRng, worker: usize, txn: &mut Txn) {
        if let Some((_, tables)) = &self.kv {
            return tables.generate(rng, worker, txn);
        }
        let ops = self.config.ops;
        txn.procedure = 0;
        txn.keys.clear();
        txn.flags = 0;
        txn.amount = 0;
        let mut descriptors = [0u64; super::YCSB_OPS_MAX];
        let mut count = 0;
        while count < ops {
            let insert = rng.random::<f64>() < INSERT_RATIO;
            let (key, descriptor) = if insert {
                (self.next_insert.fetch_add(1, Ordering::Relaxed), Op::Insert as u64)
            } else if self.mix == YcsbMix::D {
                let newest = self.next_insert.load(Ordering::Relaxed) - 1;
                (newest - self.zipf.sample(rng), Op::Read as u64)
            } else {
                let length = rng.random_range(1..=SCAN_LENGTH_MAX);
                (self.key_of_rank(self.zipf.sample(rng)), Op::Scan as u64 | length << 8)
            };
            // Point reads are on distinct keys, as in the key-value form; scans may overlap.
            if descriptor == Op::Read as u64 && txn.keys[..count].contains(&key) {
                continue;
            }
            txn.keys.push(key);
            descriptors[count] = descriptor;
            count += 1;
        }
        txn.keys.extend_from_slice(&descriptors[..ops]);
    }

    /// A, B, C and F replay as their key-value form does; D and E take fresh keys for their
    /// inserts from a shared counter.
    fn replayable(&self) -> bool {
        self.kv.as_ref().is_some_and(|(_, tables)| tables.replayable())
    }

    fn run(&self, txn: &Txn, tx: &mut dyn Tx, scratch: &mut Scratch) -> Result<Outcome, Aborted> {
        if let Some((_, tables)) = &self.kv {
            return tables.run(txn, tx, scratch);
        }
        let ops = txn.keys.len() / 2;
        scratch.row.resize(self.row_words(), 0);
        let mut copy = std::mem::take(&mut scratch.row);
        for i in 0..ops {
            let key = txn.keys[i];
            match Op::decode(txn.keys[ops + i]) {
                (Op::Read, _) => {
                    tx.get(KV_TABLE, key, &mut copy, false)?;
                }
                (Op::Insert, _) => {
                    KvTables::fill_row(&mut copy, 0);
                    let inserted = tx.insert(KV_TABLE, key, &copy)?;
                    debug_assert!(inserted, "insert keys are unique");
                }
                (Op::Scan, length) => {
                    let limit = usize::try_from(length).unwrap_or(usize::MAX);
                    tx.scan(KV_TABLE, key, SCAN_HIGH_KEY, Direction::Ascending, limit, &mut |_, row| {
                        copy.copy_from_slice(row);
                        true
                    })?;
                }
            }
        }
        scratch.row = copy;
        Ok(Outcome::Commit)
    }

    fn footprint(&self, txn: &Txn, reads: &mut Vec<u64>, writes: &mut Vec<u64>) {
        if let Some((_, tables)) = &self.kv {
            return tables.footprint(txn, reads, writes);
        }
        let ops = txn.keys.len() / 2;
        for i in 0..ops {
            let key = txn.keys[i];
            match Op::decode(txn.keys[ops + i]) {
                (Op::Read, _) => reads.push(footprint_key(KV_TABLE, key)),
                (Op::Insert, _) => writes.push(footprint_key(KV_TABLE, key)),
                (Op::Scan, _) => {
                    let bucket = key / SCAN_BUCKET_KEYS * SCAN_BUCKET_KEYS;
                    reads.push(footprint_key(KV_TABLE, bucket));
                    reads.push(footprint_key(KV_TABLE, bucket + SCAN_BUCKET_KEYS));
                }
            }
        }
    }

    /// D and E: every loaded key is present, every inserted key was handed out by the counter
    /// (so no key was invented or duplicated by an engine), and every payload matches its value.
    /// A key handed out to a transaction that never committed (generated at the end of a run)
    /// is legitimately absent, so presence of inserted keys is checked by the tests, which run
    /// every generated transaction.
    fn check(&self, tx: &mut dyn Tx) -> Result<ConsistencyReport, ConsistencyError> {
        if let Some((_, tables)) = &self.kv {
            return tables.check(tx);
        }
        let records = self.config.records;
        let mut torn = None;
        let mut loaded = 0u64;
        let mut extra = Vec::new();
        tx.scan(KV_TABLE, 0, SCAN_HIGH_KEY, Direction::Ascending, usize::MAX, &mut |key, row| {
            let value = row[0] as i64;
            if row[1..].iter().enumerate().any(|(i, &w)| w != payload_word(value, i)) {
                torn.get_or_insert(key);
            }
            if key < records {
                loaded += 1;
            } else {
                extra.push(key);
            }
            true
        })
        .map_err(|Aborted| ConsistencyError {
            condition: "readable".into(),
            detail: "the check's scan aborted".into(),
        })?;
        if loaded != records {
            return Err(ConsistencyError {
                condition: "every loaded key present".into(),
                detail: format!("{loaded} of {records} loaded keys found"),
            });
        }
        let next = self.next_insert.load(Ordering::Relaxed);
        if let Some(&stray) = extra.iter().find(|&&k| k >= next) {
            return Err(ConsistencyError {
                condition: "inserted keys were handed out".into(),
                detail: format!("key {stray} is past the insert counter {next}"),
            });
        }
        if let Some(key) = torn {
            return Err(ConsistencyError {
                condition: "payload matches value".into(),
                detail: format!("key {key} holds a payload of another value"),
            });
        }
        Ok(ConsistencyReport {
            checked: vec![
                "every loaded key present".to_owned(),
                "inserted keys were handed out".to_owned(),
                "payload matches value".to_owned(),
            ],
        })
    }
}
