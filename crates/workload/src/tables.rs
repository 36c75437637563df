//! Transactions over tables: the interface of workloads that need more than a key-value store
//! (typed rows, inserts, deletes, range scans, secondary indexes), such as TPC-C and YCSB's
//! scan and insert workloads.
//!
//! A [`TableWorkload`] declares a [`Schema`], loads its initial rows, and runs each transaction
//! as Rust code against a [`Tx`], the engine's handle on one attempt:
//!
//! ```text
//!   engine                                  workload
//!   begin attempt ─────────────────────>    run(txn, tx)
//!                                             tx.get(CUSTOMER, key, row)      ── read a row
//!                                             tx.scan(NEW_ORDER, lo..=hi, …)  ── range scan
//!                                             tx.insert(ORDER, key, row)      ── buffered
//!                                             tx.put(DISTRICT, key, row)      ── buffered
//!   commit (validate, install) <─────────   Ok(Outcome::Commit)
//!   or: any call returned Err(Aborted)  ─>  the procedure returns it at once (`?`);
//!       the engine aborts and retries the same txn
//! ```
//!
//! Writes are buffered by the engine and installed only at commit, so a procedure that returns
//! [`Outcome::UserAbort`] (TPC-C's rolled-back NewOrder) leaves no trace. A read sees the
//! attempt's own earlier writes. Rows are slices of 64-bit words laid out by the table's
//! [`ordo_storage::TableSchema`]; every read and write copies the whole row, as
//! the engines ordo is compared with do.
//!
//! Engines keep secondary-index tables in step: [`Maintained`] wraps an engine's raw [`Tx`]
//! and turns an insert or delete of a base row into the matching index-table entries, so every
//! engine maintains indexes the same way. Workloads never write index tables themselves.
//!
//! The key-value workloads ([`Workload`]: micro, SmallBank, YCSB) run on table engines through
//! [`KvTables`]: one dense table `kv` whose row is the value and a payload derived from it.

use std::collections::BTreeMap;
use std::sync::Arc;

pub use ordo_storage::Direction;
use ordo_storage::{Schema, TableId, TableSchema};

use crate::WorkloadRng;
use crate::procedure::{Key, Step, Txn, Value, Workload};

/// The engine aborted this attempt (a concurrency-control conflict); the procedure must stop
/// and return it. The engine knows why and counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aborted;

/// How a procedure ended when nothing aborted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Install the buffered writes.
    Commit,
    /// The procedure's own logic refuses (e.g. an unused item number): discard everything.
    UserAbort,
}

/// One attempt of a transaction, as an engine offers it to a procedure.
///
/// Reads of absent keys, and scans, are part of what the engine validates: an insert that
/// would have changed what a get or scan saw (a phantom) makes the attempt fail validation in
/// every serializable protocol.
pub trait Tx {
    /// Reads the row of `key` into `row` (which holds the table's row words); `false` when the
    /// key is absent (then `row` is unspecified). `for_update` hints that the attempt will
    /// write this row (2PL then locks it exclusively at once).
    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], for_update: bool) -> Result<bool, Aborted>;

    /// Replaces the row of a present `key` with `row`. Returns `false`, writing nothing, if the
    /// key is absent (the attempt then depends on its absence, as a get would). The columns of
    /// a secondary index key must not change.
    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted>;

    /// Inserts `row` at an absent `key`; `false`, inserting nothing, if the key is present.
    fn insert(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted>;

    /// Deletes the row of a present `key`; `false` if the key is absent.
    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted>;

    /// Visits the rows with keys in `low..=high` in `direction`, at most `limit` of them, as
    /// `visit(key, row)`; `visit` returns `false` to stop early. Returns the number visited.
    /// The attempt's own inserts, updates and deletes in the range are seen.
    fn scan(
        &mut self,
        table: TableId,
        low: u64,
        high: u64,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(u64, &[u64]) -> bool,
    ) -> Result<usize, Aborted>;

    /// A hint that the attempt will soon [`Tx::get`] these keys of `table` (the reads of a
    /// step, known together): an engine may start loading their index nodes and rows, so
    /// that their cache misses overlap instead of following one another. It reads and
    /// changes nothing the transaction can observe; engines without the hint ignore it.
    fn prefetch(&mut self, _table: TableId, _keys: &[u64]) {}

    /// Whether the engine uses [`Tx::get`]'s `for_update` hint (so a workload may skip
    /// computing it).
    fn wants_update_hints(&self) -> bool {
        false
    }
}

/// Scratch buffers a worker lends every transaction it runs (no allocation per operation).
#[derive(Debug, Default)]
pub struct Scratch {
    pub values: Vec<Value>,
    pub keys: Vec<Key>,
    pub more_keys: Vec<Key>,
    pub writes: Vec<(Key, Value)>,
    pub row: Vec<u64>,
}

/// Bits of a key in a [`footprint_key`] (the table id takes the rest).
pub const FOOTPRINT_KEY_BITS: u32 = 48;

/// The footprint identity of `key` in `table`, for reordering before execution: distinct
/// (table, key) pairs with keys below 2^48 get distinct identities.
#[inline]
pub fn footprint_key(table: TableId, key: u64) -> u64 {
    debug_assert!(key < 1 << FOOTPRINT_KEY_BITS, "key {key} does not fit a footprint identity");
    (u64::from(table) << FOOTPRINT_KEY_BITS) | (key & ((1 << FOOTPRINT_KEY_BITS) - 1))
}

/// What a consistency check after a run found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsistencyReport {
    /// The conditions that were checked and hold, by name.
    pub checked: Vec<String>,
}

/// A condition of the workload's data that does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("consistency condition {condition} does not hold: {detail}")]
pub struct ConsistencyError {
    pub condition: String,
    pub detail: String,
}

/// A workload over tables: a schema, its initial rows, and transactions as procedures.
pub trait TableWorkload: Send + Sync + std::fmt::Debug {
    /// Short name (`tpcc`, `ycsb`, ...).
    fn name(&self) -> &'static str;

    /// Names of the procedures, indexed by [`Txn::procedure`].
    fn procedure_names(&self) -> &'static [&'static str];

    /// The tables, index tables included.
    fn schema(&self) -> &Schema;

    /// Emits the initial rows of base tables (never index tables; the engine derives their
    /// entries) for part `part` of `parts`: loading runs on several threads, each with one
    /// part, and the parts together emit every row exactly once.
    fn load(&self, part: usize, parts: usize, sink: &mut dyn FnMut(TableId, u64, &[u64]));

    /// Draws the next transaction for worker `worker` into `txn` (reusing its buffers).
    fn generate(&self, rng: &mut WorkloadRng, worker: usize, txn: &mut Txn);

    /// Whether a transaction drawn now may run unchanged at any later time, on any worker:
    /// [`Self::generate`] depends on nothing but the random stream (no shared counter, no
    /// worker binding), so a worker may draw its transactions before the run and replay them
    /// (a [`crate::TxnPool`]). False unless a workload says so.
    fn replayable(&self) -> bool {
        false
    }

    /// Runs `txn` against `tx`.
    fn run(&self, txn: &Txn, tx: &mut dyn Tx, scratch: &mut Scratch) -> Result<Outcome, Aborted>;

    /// Identities ([`footprint_key`]) of what `txn` will read and may write, known before it
    /// runs, for reordering before execution. May be coarse (a warehouse for all its rows), but
    /// two transactions that can conflict must share an identity.
    fn footprint(&self, txn: &Txn, reads: &mut Vec<u64>, writes: &mut Vec<u64>);

    /// Checks the workload's consistency conditions on a quiescent database, read through `tx`
    /// (an attempt that writes nothing).
    fn check(&self, tx: &mut dyn Tx) -> Result<ConsistencyReport, ConsistencyError>;
}

/// Keeps index tables in step with their base tables, over an engine's raw [`Tx`].
#[derive(Debug)]
pub struct Maintained<'a, T: Tx + ?Sized> {
    schema: &'a Schema,
    inner: &'a mut T,
    row: &'a mut Vec<u64>,
}

impl<'a, T: Tx + ?Sized> Maintained<'a, T> {
    /// Wraps `inner`; `row` is scratch space for the rows of deleted base rows.
    pub fn new(schema: &'a Schema, inner: &'a mut T, row: &'a mut Vec<u64>) -> Self {
        Maintained { schema, inner, row }
    }
}

impl<T: Tx + ?Sized> Tx for Maintained<'_, T> {
    #[inline]
    fn prefetch(&mut self, table: TableId, keys: &[u64]) {
        self.inner.prefetch(table, keys);
    }

    #[inline]
    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], for_update: bool) -> Result<bool, Aborted> {
        self.inner.get(table, key, row, for_update)
    }

    #[inline]
    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        debug_assert!(self.schema.table(table).index_of.is_none(), "workloads do not write index tables");
        self.inner.put(table, key, row)
    }

    fn insert(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        debug_assert!(self.schema.table(table).index_of.is_none(), "workloads do not write index tables");
        if !self.inner.insert(table, key, row)? {
            return Ok(false);
        }
        for (index, index_key) in self.schema.indexes_of(table) {
            let inserted = self.inner.insert(index, index_key(key, row), &[key])?;
            debug_assert!(inserted, "index entries are distinct for distinct base rows");
        }
        Ok(true)
    }

    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        debug_assert!(self.schema.table(table).index_of.is_none(), "workloads do not write index tables");
        let mut indexes = self.schema.indexes_of(table).peekable();
        if indexes.peek().is_some() {
            self.row.resize(self.schema.table(table).row_words, 0);
            if !self.inner.get(table, key, self.row, true)? {
                return Ok(false);
            }
        }
        if !self.inner.delete(table, key)? {
            return Ok(false);
        }
        for (index, index_key) in indexes {
            let deleted = self.inner.delete(index, index_key(key, self.row))?;
            debug_assert!(deleted, "every base row has its index entries");
        }
        Ok(true)
    }

    #[inline]
    fn scan(
        &mut self,
        table: TableId,
        low: u64,
        high: u64,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(u64, &[u64]) -> bool,
    ) -> Result<usize, Aborted> {
        self.inner.scan(table, low, high, direction, limit, visit)
    }

    fn wants_update_hints(&self) -> bool {
        self.inner.wants_update_hints()
    }
}

/// The payload word `index` of a row whose value is `value`: derived from the value, so that
/// copying a row copies real data and a reader can tell a torn copy.
#[inline]
pub fn payload_word(value: Value, index: usize) -> u64 {
    (value as u64) ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// A key-value [`Workload`] as a table workload: one dense table `kv` of rows
/// `[value, payload ...]`, run through its stored procedure's rounds.
#[derive(Debug, Clone)]
pub struct KvTables {
    inner: Arc<dyn Workload>,
    schema: Schema,
    payload_words: usize,
}

/// The table of a [`KvTables`] workload.
pub const KV_TABLE: TableId = 0;

impl KvTables {
    /// Wraps `inner`, with `payload_bytes` of payload per row beside the value.
    pub fn new(inner: Arc<dyn Workload>, payload_bytes: usize) -> Self {
        let mut table = TableSchema::new("kv").int("value");
        if payload_bytes > 0 {
            table = table.chars("payload", u16::try_from(payload_bytes).expect("payload bytes fit a u16"));
        }
        let table = table.dense(inner.key_count());
        let payload_words = table.row_words - 1;
        let mut schema = Schema::new();
        schema.add(table).expect("the kv table is valid");
        KvTables { inner, schema, payload_words }
    }

    /// The key-value workload inside.
    pub fn inner(&self) -> &Arc<dyn Workload> {
        &self.inner
    }

    /// Fills `row` with `value` and its payload.
    #[inline]
    pub fn fill_row(row: &mut [u64], value: Value) {
        row[0] = value as u64;
        for (i, word) in row[1..].iter_mut().enumerate() {
            *word = payload_word(value, i);
        }
    }

    /// Words per row.
    pub fn row_words(&self) -> usize {
        1 + self.payload_words
    }
}

impl TableWorkload for KvTables {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn procedure_names(&self) -> &'static [&'static str] {
        self.inner.procedure_names()
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn load(&self, part: usize, parts: usize, sink: &mut dyn FnMut(TableId, u64, &[u64])) {
        let keys = self.inner.key_count();
        let chunk = keys.div_ceil(parts.max(1) as u64);
        let mut row = vec![0; self.row_words()];
        for key in (part as u64 * chunk)..((part as u64 + 1) * chunk).min(keys) {
            Self::fill_row(&mut row, self.inner.initial_value(key));
            sink(KV_TABLE, key, &row);
        }
    }

    fn generate(&self, rng: &mut WorkloadRng, _worker: usize, txn: &mut Txn) {
        self.inner.generate(rng, txn);
    }

    fn replayable(&self) -> bool {
        self.inner.replayable()
    }

    fn run(&self, txn: &Txn, tx: &mut dyn Tx, scratch: &mut Scratch) -> Result<Outcome, Aborted> {
        let hints = tx.wants_update_hints();
        if hints {
            scratch.more_keys.clear();
            self.inner.footprint(txn, &mut scratch.keys, &mut scratch.more_keys);
        }
        scratch.row.resize(self.row_words(), 0);
        scratch.values.clear();
        scratch.writes.clear();
        loop {
            scratch.keys.clear();
            match self.inner.step(txn, &scratch.values, &mut scratch.keys, &mut scratch.writes) {
                Step::Read => {
                    if scratch.keys.len() > 1 {
                        tx.prefetch(KV_TABLE, &scratch.keys);
                    }
                    for &key in &scratch.keys {
                        let for_update = hints && scratch.more_keys.contains(&key);
                        let present = tx.get(KV_TABLE, key, &mut scratch.row, for_update)?;
                        debug_assert!(present, "every key of a key-value workload is loaded");
                        scratch.values.push(scratch.row[0] as Value);
                    }
                }
                Step::Commit => {
                    for &(key, value) in &scratch.writes {
                        Self::fill_row(&mut scratch.row, value);
                        let present = tx.put(KV_TABLE, key, &scratch.row)?;
                        debug_assert!(present, "every key of a key-value workload is loaded");
                    }
                    return Ok(Outcome::Commit);
                }
                Step::UserAbort => return Ok(Outcome::UserAbort),
            }
        }
    }

    fn footprint(&self, txn: &Txn, reads: &mut Vec<u64>, writes: &mut Vec<u64>) {
        self.inner.footprint(txn, reads, writes);
    }

    fn check(&self, tx: &mut dyn Tx) -> Result<ConsistencyReport, ConsistencyError> {
        let mut checked = Vec::new();
        let mut row = vec![0; self.row_words()];
        let mut payload_ok = true;
        let mut torn = None;
        let keys = self.inner.key_count();
        let mut scanned = 0u64;
        tx.scan(KV_TABLE, 0, keys.saturating_sub(1), Direction::Ascending, usize::MAX, &mut |key, data| {
            scanned += 1;
            row.copy_from_slice(data);
            let value = row[0] as Value;
            if row[1..].iter().enumerate().any(|(i, &w)| w != payload_word(value, i)) {
                payload_ok = false;
                torn.get_or_insert(key);
            }
            true
        })
        .map_err(|Aborted| ConsistencyError {
            condition: "readable".into(),
            detail: "the check's scan aborted".into(),
        })?;
        if scanned != keys {
            return Err(ConsistencyError {
                condition: "every key present".into(),
                detail: format!("{scanned} of {keys} keys found"),
            });
        }
        checked.push("every key present".to_owned());
        if !payload_ok {
            return Err(ConsistencyError {
                condition: "payload matches value".into(),
                detail: format!("key {} holds a payload of another value", torn.unwrap_or_default()),
            });
        }
        checked.push("payload matches value".to_owned());
        if let Some(range) = self.inner.conserved_keys() {
            let initial: i64 = range.clone().map(|k| self.inner.initial_value(k)).sum();
            let mut total = 0i64;
            for key in range {
                tx.get(KV_TABLE, key, &mut row, false).map_err(|Aborted| ConsistencyError {
                    condition: "conserved total".into(),
                    detail: "the check's read aborted".into(),
                })?;
                total += row[0] as Value;
            }
            if total != initial {
                return Err(ConsistencyError {
                    condition: "conserved total".into(),
                    detail: format!("the total moved from {initial} to {total}"),
                });
            }
            checked.push("conserved total".to_owned());
        }
        Ok(ConsistencyReport { checked })
    }
}

/// A reference database: every table a `BTreeMap`, one transaction at a time, no concurrency
/// control. Workload tests run procedures on it, and engines' results can be compared with
/// it. Writes apply at once and are undone on a user abort.
#[derive(Debug, Default)]
pub struct MemoryDb {
    tables: Vec<BTreeMap<u64, Vec<u64>>>,
    row_words: Vec<usize>,
    /// Undo log of the running transaction: (table, key, previous row or absent).
    undo: Vec<(TableId, u64, Option<Vec<u64>>)>,
}

impl MemoryDb {
    /// An empty database with the tables of `schema`.
    pub fn new(schema: &Schema) -> Self {
        MemoryDb {
            tables: schema.tables().iter().map(|_| BTreeMap::new()).collect(),
            row_words: schema.tables().iter().map(|t| t.row_words).collect(),
            undo: Vec::new(),
        }
    }

    /// A database loaded with `workload`'s initial rows (index entries included).
    pub fn loaded(workload: &dyn TableWorkload) -> Self {
        let schema = workload.schema();
        let mut db = MemoryDb::new(schema);
        let mut rows = Vec::new();
        workload.load(0, 1, &mut |table, key, row| rows.push((table, key, row.to_vec())));
        let mut scratch = Vec::new();
        for (table, key, row) in rows {
            let inserted = Maintained::new(schema, &mut db, &mut scratch).insert(table, key, &row);
            assert_eq!(inserted, Ok(true), "the workload loads table {table} key {key} once");
        }
        db.undo.clear();
        db
    }

    /// Runs `txn` of `workload` to its end: commits, or rolls back a user abort.
    pub fn run(&mut self, workload: &dyn TableWorkload, txn: &Txn, scratch: &mut Scratch) -> Outcome {
        self.undo.clear();
        let mut row = Vec::new();
        let outcome = {
            let mut tx = Maintained::new(workload.schema(), self, &mut row);
            workload.run(txn, &mut tx, scratch).expect("the reference database never aborts")
        };
        if outcome == Outcome::UserAbort {
            while let Some((table, key, previous)) = self.undo.pop() {
                match previous {
                    Some(row) => self.tables[table as usize].insert(key, row),
                    None => self.tables[table as usize].remove(&key),
                };
            }
        }
        self.undo.clear();
        outcome
    }

    /// The rows of `table`.
    pub fn table(&self, table: TableId) -> &BTreeMap<u64, Vec<u64>> {
        &self.tables[table as usize]
    }

    fn remember(&mut self, table: TableId, key: u64) {
        let previous = self.tables[table as usize].get(&key).cloned();
        self.undo.push((table, key, previous));
    }
}

impl Tx for MemoryDb {
    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], _for_update: bool) -> Result<bool, Aborted> {
        match self.tables[table as usize].get(&key) {
            Some(found) => {
                row.copy_from_slice(found);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        assert_eq!(row.len(), self.row_words[table as usize], "a row of table {table} has the wrong width");
        if !self.tables[table as usize].contains_key(&key) {
            return Ok(false);
        }
        self.remember(table, key);
        self.tables[table as usize].insert(key, row.to_vec());
        Ok(true)
    }

    fn insert(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        assert_eq!(row.len(), self.row_words[table as usize], "a row of table {table} has the wrong width");
        if self.tables[table as usize].contains_key(&key) {
            return Ok(false);
        }
        self.remember(table, key);
        self.tables[table as usize].insert(key, row.to_vec());
        Ok(true)
    }

    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        if !self.tables[table as usize].contains_key(&key) {
            return Ok(false);
        }
        self.remember(table, key);
        self.tables[table as usize].remove(&key);
        Ok(true)
    }

    fn scan(
        &mut self,
        table: TableId,
        low: u64,
        high: u64,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(u64, &[u64]) -> bool,
    ) -> Result<usize, Aborted> {
        if low > high {
            return Ok(0);
        }
        let range = self.tables[table as usize].range(low..=high);
        let mut visited = 0;
        let mut each = |(key, row): (&u64, &Vec<u64>)| {
            if visited >= limit {
                return false;
            }
            visited += 1;
            visit(*key, row)
        };
        match direction {
            Direction::Ascending => {
                for entry in range {
                    if !each(entry) {
                        break;
                    }
                }
            }
            Direction::Descending => {
                for entry in range.rev() {
                    if !each(entry) {
                        break;
                    }
                }
            }
        }
        Ok(visited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SmallBank, SmallBankConfig, rng_from_seed};

    fn orders_schema() -> (Schema, TableId, TableId) {
        let mut schema = Schema::new();
        let orders = schema.add(TableSchema::new("orders").int("customer").int("amount")).unwrap();
        // Non-unique index on the customer: (customer, order key) packed.
        let by_customer = schema.add_index("orders_by_customer", orders, |key, row| (row[0] << 32) | key).unwrap();
        (schema, orders, by_customer)
    }

    #[test]
    fn indexes_follow_inserts_and_deletes() {
        let (schema, orders, by_customer) = orders_schema();
        let mut db = MemoryDb::new(&schema);
        let mut scratch = Vec::new();
        let mut tx = Maintained::new(&schema, &mut db, &mut scratch);
        assert_eq!(tx.insert(orders, 1, &[7, 100]), Ok(true));
        assert_eq!(tx.insert(orders, 2, &[7, 200]), Ok(true));
        assert_eq!(tx.insert(orders, 3, &[8, 300]), Ok(true));
        assert_eq!(tx.insert(orders, 3, &[9, 300]), Ok(false), "a present key is not inserted again");
        let mut found = Vec::new();
        tx.scan(by_customer, 7 << 32, (8 << 32) - 1, Direction::Descending, 10, &mut |_, row| {
            found.push(row[0]);
            true
        })
        .unwrap();
        assert_eq!(found, vec![2, 1], "customer 7's orders, newest first");
        assert_eq!(tx.delete(orders, 2), Ok(true));
        assert_eq!(tx.delete(orders, 2), Ok(false));
        assert_eq!(db.table(by_customer).values().map(|r| r[0]).collect::<Vec<_>>(), vec![1, 3]);
    }

    #[test]
    fn scans_honour_limits_and_stops() {
        let (schema, orders, _) = orders_schema();
        let mut db = MemoryDb::new(&schema);
        for key in 0..10 {
            db.insert(orders, key * 2, &[0, key]).unwrap();
        }
        let mut keys = Vec::new();
        let n = db
            .scan(orders, 3, 15, Direction::Ascending, 3, &mut |k, _| {
                keys.push(k);
                true
            })
            .unwrap();
        assert_eq!((n, keys.as_slice()), (3, &[4, 6, 8][..]));
        keys.clear();
        db.scan(orders, 0, 100, Direction::Descending, 100, &mut |k, _| {
            keys.push(k);
            k > 14
        })
        .unwrap();
        assert_eq!(keys, vec![18, 16, 14]);
    }

    #[test]
    fn key_value_workloads_run_on_tables_and_keep_their_invariants() {
        let bank = SmallBank::new(SmallBankConfig {
            customers: 100,
            theta: 0.5,
            mix: crate::smallbank::CONSERVED_MIX,
            ..SmallBankConfig::default()
        })
        .unwrap();
        let workload = KvTables::new(Arc::new(bank), 24);
        let mut db = MemoryDb::loaded(&workload);
        let (mut rng, mut txn, mut scratch) = (rng_from_seed(3), Txn::default(), Scratch::default());
        let mut commits = 0;
        for _ in 0..2_000 {
            workload.generate(&mut rng, 0, &mut txn);
            commits += usize::from(db.run(&workload, &txn, &mut scratch) == Outcome::Commit);
        }
        assert!(commits > 1_000, "{commits} of 2000 committed");
        let report = workload.check(&mut db).unwrap();
        assert!(report.checked.contains(&"conserved total".to_owned()), "{report:?}");
        // A torn payload is caught.
        db.tables[0].get_mut(&5).unwrap()[2] ^= 1;
        assert!(workload.check(&mut db).is_err());
    }

    #[test]
    fn footprint_keys_keep_tables_apart() {
        assert_ne!(footprint_key(0, 5), footprint_key(1, 5));
        assert_eq!(footprint_key(0, 5), 5);
    }
}
