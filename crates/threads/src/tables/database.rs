//! The database of the table engine: one [`Table`] per schema table (index tables included),
//! each a record arena and a primary index, loaded in parallel from a workload.
//!
//! ```text
//!   record (one stride of atomic words, whole cache lines):
//!     word 0  meta      the protocol's word (Silo: the TID word, with lock and dead bits)
//!     word 1  key       the record's key (a record never changes keys)
//!     word 2  seq       [ absent:1 | version:63 ]  version: what histories record
//!     word 3.. row      the table's row words
//! ```
//!
//! Invariants: a record found through a table's index holds that index key in word 1; the
//! index maps a key to at most one record; `version` grows with every install on a record,
//! and a record made for a key whose earlier record was reclaimed starts at or above the
//! table's `retired_version_max` (raised before the old record leaves the index), so a key's
//! versions increase across its whole life. Loaded rows have version 0, the version histories
//! treat as initial.
//!
//! Loading: `parts` threads each run `TableWorkload::load(part, parts, ..)`, write every row
//! into its table's arena (each thread allocates from its own arena shard) and derive the
//! entries of index tables; then each table's `(key, record)` pairs are sorted and the B+tree
//! is built bottom-up with `OrderedIndex::from_sorted`, one thread per table (much faster than
//! inserting one key at a time: no splits, full leaves). An engine starting on a write-ahead
//! log loads through [`RowLoader`] instead: recovered rows (index tables' entries included)
//! with the versions the log recorded, each table's `retired_version_max` raised to the
//! highest version the log holds (deletes too), so a key re-created later outranks them.
//! [`Database::scan_rows`] reads rows without any protocol's lock, for fuzzy checkpoints. With [`Index::Array`] a table's
//! record id is its key (an ablation for tables whose keys are dense); any other table makes
//! the load fail with [`LoadError::NotDense`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam::utils::CachePadded;
use ordo_storage::{DenseIndex, Direction, OrderedIndex, PrimaryIndex, Records, Schema, TableId, TableSchema};
use ordo_workload::TableWorkload;

use super::epoch::Epochs;

/// Words before the row in every record.
pub const TABLE_HEADER_WORDS: usize = 3;
/// Word of the protocol's meta word.
pub const META_WORD: usize = 0;
/// Word of the key.
pub const KEY_WORD: usize = 1;
/// Word of `[absent | version]`.
pub const SEQ_WORD: usize = 2;
/// The absent flag of the seq word.
pub const ABSENT: u64 = 1 << 63;
/// The version bits of the seq word.
pub const VERSION_MASK: u64 = ABSENT - 1;

/// Which primary index the tables use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Index {
    /// The ordered B+tree (the default).
    #[default]
    Tree,
    /// A flat array: the key is the record id (ablations; dense tables only).
    Array,
}

impl Index {
    pub fn name(self) -> &'static str {
        match self {
            Index::Tree => "tree",
            Index::Array => "array",
        }
    }
}

/// Why a database could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("a recovered row names table {table}, which the workload's schema does not have")]
    UnknownTable { table: TableId },
    #[error("a recovered row of table `{table}` has {words} words; the schema says {row_words}")]
    RowWidth { table: &'static str, words: usize, row_words: usize },
    #[error("--index array needs dense keys, and table `{table}` does not have them")]
    NotDense { table: &'static str },
    #[error("the workload loaded key {key} of table `{table}` twice")]
    Duplicate { table: &'static str, key: u64 },
    #[error("the workload loaded key {key} into dense table `{table}` of {keys} keys")]
    OutOfRange { table: &'static str, key: u64, keys: u64 },
    #[error("dense table `{table}` was loaded with {loaded} of its {keys} keys")]
    Incomplete { table: &'static str, loaded: u64, keys: u64 },
}

/// One table: its rows and its primary index.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub row_words: usize,
    /// Whether this table is a secondary index of another (kept in step by the engine).
    pub is_index: bool,
    pub records: Records,
    pub index: PrimaryIndex,
    /// The highest version of any record of this table that was reclaimed (see module docs).
    pub retired_version_max: CachePadded<AtomicU64>,
}

impl Table {
    /// The words of record `rid`.
    #[inline]
    pub fn record(&self, rid: u64) -> &[AtomicU64] {
        self.records.words(rid)
    }

    /// Raises `retired_version_max` to at least `version`.
    pub fn raise_retired_version(&self, version: u64) {
        self.retired_version_max.fetch_max(version, Ordering::AcqRel);
    }
}

/// Writes a whole record (for loading and for fresh placeholders; nobody else sees it yet).
#[inline]
pub fn write_record(words: &[AtomicU64], meta: u64, key: u64, seq: u64, row: &[u64]) {
    words[META_WORD].store(meta, Ordering::Relaxed);
    words[KEY_WORD].store(key, Ordering::Relaxed);
    words[SEQ_WORD].store(seq, Ordering::Relaxed);
    for (word, &value) in words[TABLE_HEADER_WORDS..].iter().zip(row) {
        word.store(value, Ordering::Relaxed);
    }
}

/// Every table of a workload, and the engine's global epoch.
#[derive(Debug)]
pub struct Database {
    tables: Vec<Table>,
    index: Index,
    epochs: Epochs,
}

/// One loading thread's `(key, record id)` pairs, per table.
type PartEntries = Vec<Vec<(u64, u64)>>;

impl Database {
    /// Loads `workload`'s rows (and derives its index tables' entries) on `threads` threads;
    /// every record starts with meta word `initial_meta`, present, at version 0. `epochs` is
    /// the engine's global epoch from then on.
    pub fn load(
        workload: &dyn TableWorkload,
        index: Index,
        threads: usize,
        initial_meta: u64,
        epochs: Epochs,
    ) -> Result<Database, LoadError> {
        let schema = workload.schema();
        let dense = |table: &TableSchema| table.dense_keys.filter(|_| table.index_of.is_none());
        if index == Index::Array
            && let Some(table) = schema.tables().iter().find(|t| dense(t).is_none())
        {
            return Err(LoadError::NotDense { table: table.name });
        }
        let tables = empty_tables(schema, index);
        let parts = threads.max(1);
        let per_part: Vec<Result<PartEntries, LoadError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..parts)
                .map(|part| {
                    let tables = &tables;
                    scope.spawn(move || load_part(workload, tables, index, part, parts, initial_meta))
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a loading thread panicked")).collect()
        });
        let mut per_table: Vec<Vec<(u64, u64)>> = vec![Vec::new(); tables.len()];
        for part in per_part {
            for (all, entries) in per_table.iter_mut().zip(part?) {
                if all.is_empty() {
                    *all = entries;
                } else {
                    all.extend(entries);
                }
            }
        }
        let mut tables = tables;
        build_indexes(&mut tables, per_table, schema, index)?;
        Ok(Database { tables, index, epochs })
    }

    /// The table `id`.
    #[inline]
    pub fn table(&self, id: TableId) -> &Table {
        &self.tables[id as usize]
    }

    /// Every table, in id order.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }

    /// The index the tables use.
    pub fn index(&self) -> Index {
        self.index
    }

    /// The current global epoch.
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epochs.current()
    }

    /// The global epoch.
    pub fn epochs(&self) -> &Epochs {
        &self.epochs
    }

    /// From now on the global epoch is `epochs` (the log's, once the logger has started on
    /// the recovered database).
    pub fn follow(&mut self, epochs: Epochs) {
        self.epochs = epochs;
    }

    /// The present rows of `table`, read directly (only meaningful when no transaction runs).
    pub fn rows(&self, table: TableId) -> BTreeMap<u64, Vec<u64>> {
        let table = self.table(table);
        let mut rows = BTreeMap::new();
        table.index.scan(
            0,
            u64::MAX,
            Direction::Ascending,
            &mut |key, rid| {
                let words = table.record(rid);
                if words[SEQ_WORD].load(Ordering::Acquire) & ABSENT == 0 {
                    let row = words[TABLE_HEADER_WORDS..TABLE_HEADER_WORDS + table.row_words]
                        .iter()
                        .map(|w| w.load(Ordering::Relaxed))
                        .collect();
                    rows.insert(key, row);
                }
                true
            },
            &mut |_| {},
        );
        rows
    }
}

impl Database {
    /// Reads up to `rows_max` present rows of `table` with keys from `from` upward, while
    /// transactions run, handing each to `sink(key, version, row)`; returns the key to go on
    /// from, or `None` once the table is done. For a fuzzy checkpoint.
    ///
    /// Each row is read without the protocol's lock: the version first, then the row words.
    /// A row read while a write is being installed may be torn, but carries a version no newer
    /// than that write's, which is in the log (its epoch is at or after the checkpoint's begin
    /// epoch, and the checkpoint commits only once the log is durable through the epoch its scan
    /// ended in); recovery keeps the log's write for any version at least as new, so torn rows
    /// never survive. Rows whose last write preceded the checkpoint are read exactly.
    pub fn scan_rows(
        &self,
        table_id: TableId,
        from: u64,
        rows_max: usize,
        row: &mut Vec<u64>,
        sink: &mut dyn FnMut(u64, u64, &[u64]),
    ) -> Option<u64> {
        let table = self.table(table_id);
        row.resize(table.row_words, 0);
        // Pinned while reading, so no record id the index hands out is recycled meanwhile.
        let _guard = ordo_storage::epoch::pin();
        let mut visited = 0;
        let mut next = None;
        table.index.scan(
            from,
            u64::MAX,
            Direction::Ascending,
            &mut |key, rid| {
                if visited == rows_max {
                    next = Some(key);
                    return false;
                }
                visited += 1;
                let words = table.record(rid);
                let seq = words[SEQ_WORD].load(Ordering::Acquire);
                if seq & ABSENT != 0 || words[KEY_WORD].load(Ordering::Relaxed) != key {
                    return true;
                }
                for (out, word) in row.iter_mut().zip(&words[TABLE_HEADER_WORDS..]) {
                    *out = word.load(Ordering::Relaxed);
                }
                sink(key, seq & VERSION_MASK, row);
                true
            },
            &mut |_| {},
        );
        next
    }
}

/// Builds every table's primary index from its `(key, record id)` pairs, one thread per table.
fn build_indexes(
    tables: &mut [Table],
    per_table: Vec<Vec<(u64, u64)>>,
    schema: &Schema,
    index: Index,
) -> Result<(), LoadError> {
    let dense = |table: &TableSchema| table.dense_keys.filter(|_| table.index_of.is_none());
    let built: Vec<Result<PrimaryIndex, LoadError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = tables
            .iter()
            .zip(per_table)
            .map(|(table, mut entries)| {
                let (name, keys) = (table.name, schema.tables().iter().find(|t| t.name == table.name).and_then(dense));
                scope.spawn(move || {
                    entries.sort_unstable_by_key(|&(key, _)| key);
                    if let Some(pair) = entries.windows(2).find(|pair| pair[0].0 == pair[1].0) {
                        return Err(LoadError::Duplicate { table: name, key: pair[0].0 });
                    }
                    match index {
                        Index::Array => {
                            let keys = keys.unwrap_or(0);
                            let loaded = entries.len() as u64;
                            if loaded != keys {
                                return Err(LoadError::Incomplete { table: name, loaded, keys });
                            }
                            Ok(PrimaryIndex::Dense(DenseIndex::new(keys)))
                        }
                        Index::Tree => OrderedIndex::from_sorted(entries)
                            .map(PrimaryIndex::Ordered)
                            .map_err(|_| LoadError::Duplicate { table: name, key: 0 }),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("an index-building thread panicked")).collect()
    });
    for (table, primary) in tables.iter_mut().zip(built) {
        table.index = primary?;
    }
    Ok(())
}

/// Empty tables for `schema` (index tables included), arenas sized by the schema's hints.
fn empty_tables(schema: &Schema, index: Index) -> Vec<Table> {
    schema
        .tables()
        .iter()
        .map(|table| {
            let hint = table.dense_keys.unwrap_or(table.rows_hint).max(1);
            let records = Records::new(TABLE_HEADER_WORDS + table.row_words, hint);
            if index == Index::Array {
                records.alloc_dense(hint);
            }
            Table {
                name: table.name,
                row_words: table.row_words,
                is_index: table.index_of.is_some(),
                records,
                // Replaced once the rows are in.
                index: PrimaryIndex::Dense(DenseIndex::new(0)),
                retired_version_max: CachePadded::new(AtomicU64::new(0)),
            }
        })
        .collect()
}

/// Loads a database from rows given one at a time, each with its version: the path an engine
/// takes when it starts on a write-ahead log and recovers (instead of loading the workload's
/// initial rows). Rows of index tables are given like any other (the log recorded them).
#[derive(Debug)]
pub struct RowLoader<'a> {
    schema: &'a Schema,
    index: Index,
    /// The meta word of a record at a version.
    meta_of: fn(u64) -> u64,
    tables: Vec<Table>,
    entries: Vec<Vec<(u64, u64)>>,
}

impl<'a> RowLoader<'a> {
    /// An empty database for `schema`; a record at version `v` starts with meta word
    /// `meta_of(v)` (the protocol's `recovered_meta`).
    pub fn new(schema: &'a Schema, index: Index, meta_of: fn(u64) -> u64) -> Result<Self, LoadError> {
        if index == Index::Array
            && let Some(table) = schema.tables().iter().find(|t| t.dense_keys.is_none() || t.index_of.is_some())
        {
            return Err(LoadError::NotDense { table: table.name });
        }
        let tables = empty_tables(schema, index);
        let entries = vec![Vec::new(); tables.len()];
        Ok(RowLoader { schema, index, meta_of, tables, entries })
    }

    /// Adds the present row `key` of `table` at `version`.
    pub fn row(&mut self, table_id: TableId, key: u64, version: u64, row: &[u64]) -> Result<(), LoadError> {
        let table = self.tables.get(table_id as usize).ok_or(LoadError::UnknownTable { table: table_id })?;
        if row.len() != table.row_words {
            return Err(LoadError::RowWidth { table: table.name, words: row.len(), row_words: table.row_words });
        }
        let rid = match self.index {
            Index::Tree => table.records.alloc(),
            Index::Array => {
                let keys = self.schema.table(table_id).dense_keys.unwrap_or(0);
                if key >= keys {
                    return Err(LoadError::OutOfRange { table: table.name, key, keys });
                }
                key
            }
        };
        let version = version & VERSION_MASK;
        write_record(table.record(rid), (self.meta_of)(version), key, version, row);
        self.entries[table_id as usize].push((key, rid));
        Ok(())
    }

    /// Builds the indexes. `versions_max` is, per table, the highest version the log holds
    /// (deletes included): keys created from now on start above it, so a delete still in the
    /// log never outranks a later insert of the same key.
    pub fn finish(mut self, versions_max: &BTreeMap<u16, u64>, epochs: Epochs) -> Result<Database, LoadError> {
        build_indexes(&mut self.tables, std::mem::take(&mut self.entries), self.schema, self.index)?;
        for (&table, &version) in versions_max {
            if let Some(table) = self.tables.get(table as usize) {
                table.raise_retired_version(version);
            }
        }
        Ok(Database { tables: self.tables, index: self.index, epochs })
    }
}

/// Loads part `part` of `parts`: writes the rows into the arenas and returns each table's
/// `(key, record id)` pairs (index tables' entries derived from their base rows).
fn load_part(
    workload: &dyn TableWorkload,
    tables: &[Table],
    index: Index,
    part: usize,
    parts: usize,
    initial_meta: u64,
) -> Result<PartEntries, LoadError> {
    let schema = workload.schema();
    let mut entries: PartEntries = vec![Vec::new(); tables.len()];
    let mut failed = None;
    let place = |table_id: TableId, key: u64, row: &[u64], entries: &mut PartEntries| {
        let table = &tables[table_id as usize];
        let rid = match index {
            Index::Tree => table.records.alloc(),
            Index::Array => {
                let keys = schema.table(table_id).dense_keys.unwrap_or(0);
                if key >= keys {
                    return Err(LoadError::OutOfRange { table: table.name, key, keys });
                }
                key
            }
        };
        write_record(table.record(rid), initial_meta, key, 0, row);
        entries[table_id as usize].push((key, rid));
        Ok(())
    };
    workload.load(part, parts, &mut |table, key, row| {
        if failed.is_some() {
            return;
        }
        let mut result = place(table, key, row, &mut entries);
        for (index_table, index_key) in schema.indexes_of(table) {
            if result.is_ok() {
                result = place(index_table, index_key(key, row), &[key], &mut entries);
            }
        }
        if let Err(error) = result {
            failed = Some(error);
        }
    });
    match failed {
        Some(error) => Err(error),
        None => Ok(entries),
    }
}
