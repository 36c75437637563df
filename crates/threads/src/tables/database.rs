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
//! Multi-version tables ([`Database::load_versioned`], for `mvcc_si` and `ssi`) keep the same
//! first three words in a *head* and the rows in versions, newest first (see [`versioned`]). A
//! record's head is followed by one *inline* version slot in the same arena record, which
//! holds the version it was loaded or inserted with (one cache-line walk for rows that are
//! read and never updated, the common case); later versions live in a side arena, and the
//! inline slot is used again once the version in it has been cut off. A version never
//! changes its row once linked, and the head's `newest` word moves to a new version only
//! under the head's lock.
//!
//! ```text
//!   record (table.records)                               version (inline, or table.versions)
//!     0 meta   lock:1 dead:1 owner                         0 cstamp   commit stamp of its writer
//!     1 key                                                1 pstamp   SSN: latest reader's stamp
//!     2 seq    of the newest version                       2 sstamp   SSN: overwriter's pi (or mark)
//!     3 newest ──> a version id: side, or inline          3 readers  SSN: committing readers, a bit each
//!     4 count  versions linked [inline slot busy:1 | n]    4 seq      [absent | version]
//!     5-7 the absent pseudo-version's pstamp, sstamp,      5 older ──> next older version, none, or
//!         readers (the key before the first version)                   truncated
//!     8.. the inline version slot                          6.. row
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
//! highest version the log holds (deletes too), so a key re-created later outranks them; a
//! recovered multi-version record is a head with one version, the recovered row at its
//! recovered version, stamped 0 like a loaded row. [`Database::scan_rows`] reads
//! single-version rows without any protocol's lock, for fuzzy checkpoints (multi-version tables
//! are read through their protocol, at a snapshot). With [`Index::Array`] a table's record id
//! is its key (an ablation for tables whose keys are dense); any other table makes the load
//! fail with [`LoadError::NotDense`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam::utils::CachePadded;
use ordo_storage::{
    DenseIndex, Direction, LeafVersion, OrderedIndex, PrimaryIndex, Records, Schema, TableId, TableSchema,
};
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

/// The layout of multi-version tables: word positions of heads and versions, and the link
/// values (see the module docs). Words 0-2 of a head are [`META_WORD`], [`KEY_WORD`] and
/// [`SEQ_WORD`], as in a single-version record.
pub mod versioned {
    /// Words of a head (one cache line).
    pub const HEAD_WORDS: usize = 8;
    /// The newest version's id, or [`NO_VERSION`].
    pub const NEWEST: usize = 3;
    /// Versions linked from the head, and whether the inline slot holds one ([`INLINE_BUSY`]).
    pub const COUNT: usize = 4;
    /// The bit of [`COUNT`] that says the inline slot holds a version (linked, or cut off while
    /// an old snapshot may still read it).
    pub const INLINE_BUSY: u64 = 1 << 63;
    /// The bit of a version id that names the inline slot of the record in the low bits.
    pub const INLINE: u64 = 1 << 62;
    /// The absent pseudo-version (the key before the record's first version): its pstamp,
    /// sstamp and readers words.
    pub const ABSENT_PSTAMP: usize = 5;
    pub const ABSENT_SSTAMP: usize = 6;
    pub const ABSENT_READERS: usize = 7;

    /// A version's words before its row.
    pub const VERSION_HEADER_WORDS: usize = 6;
    pub const CSTAMP: usize = 0;
    pub const PSTAMP: usize = 1;
    pub const SSTAMP: usize = 2;
    pub const READERS: usize = 3;
    pub const SEQ: usize = 4;
    pub const OLDER: usize = 5;

    /// A link to no version: the record's life starts here.
    pub const NO_VERSION: u64 = u64::MAX;
    /// A link to versions that were cut off: a reader that needs one is too old.
    pub const TRUNCATED: u64 = u64::MAX - 1;
    /// The sstamp of a version nobody has overwritten.
    pub const NO_SUCCESSOR: u64 = u64::MAX;
}

/// How a database lays out its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One version per record, the row inline; loaded records start with this meta word.
    SingleVersion { initial_meta: u64 },
    /// Heads and versions (see [`versioned`]); loaded rows are one version each, stamped 0.
    Versioned,
}

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
    /// Single-version records, or the heads of a multi-version table.
    pub records: Records,
    /// The versions of a multi-version table (`None` for single-version layouts).
    pub versions: Option<Records>,
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

    /// A hint that `keys` will be read soon: asks for their index nodes and records (see
    /// [`OrderedIndex::prefetch`]) and calls `found(i, rid)` for each `keys[i]` the index held,
    /// with its record. Changes nothing a transaction can observe.
    #[inline]
    pub fn prefetch(&self, keys: &[u64], mut found: impl FnMut(usize, u64)) {
        self.index.prefetch(keys, |i, rid| {
            self.records.prefetch(rid);
            found(i, rid);
        });
    }

    /// A hint that record `rid` of a multi-version table will be read soon: asks for its newest
    /// version's lines from line `from_line` on when that is a side version (the inline slot
    /// comes with the record). It reads the record's head, so it waits for that line unless it
    /// is on its way already (the prefetch pass asks for it first). The id read is only a
    /// hint: a version recycled meanwhile costs a wasted line, an id past the arena is
    /// ignored, and `NO_VERSION` carries the inline bit.
    #[inline]
    pub fn prefetch_newest(&self, rid: u64, from_line: usize) {
        if let Some(versions) = &self.versions {
            let newest = self.record(rid)[versioned::NEWEST].load(Ordering::Relaxed);
            if newest & versioned::INLINE == 0 {
                versions.prefetch_from(newest, from_line);
            }
        }
    }

    /// The version arena of a multi-version table.
    ///
    /// # Panics
    /// If the table is single-version (a protocol bug).
    #[inline]
    pub fn versions(&self) -> &Records {
        self.versions.as_ref().expect("a multi-version table")
    }

    /// The words of version `id` of a multi-version table (a side version, or a record's
    /// inline slot).
    #[inline]
    pub fn version(&self, id: u64) -> &[AtomicU64] {
        if id & versioned::INLINE == 0 {
            self.versions().words(id)
        } else {
            &self.records.words(id & !versioned::INLINE)[versioned::HEAD_WORDS..]
        }
    }

    /// Raises `retired_version_max` to at least `version`.
    pub fn raise_retired_version(&self, version: u64) {
        self.retired_version_max.fetch_max(version, Ordering::AcqRel);
    }
}

/// The records an attempt's latest prefetch pass found, `(key, rid)` in the pass's order, so
/// that the point reads which follow it need not descend the tree again (YCSB's reads do so
/// for every key: about a sixth of a Silo transaction's instructions on the tree).
///
/// A hint is as good as a lookup made at the moment of the pass, provided the pass ran under
/// the attempt's epoch pin, which is why an attempt clears its hints when it begins:
/// - the pass reports only validated index entries ([`OrderedIndex::prefetch`]), so `rid` was
///   `key`'s record at some moment under the pin;
/// - a record leaves the index only while its remover holds its lock, and the store that
///   unlocks it marks it dead; a record retired after the pin was taken is not recycled
///   before the pin ends.
///
/// So a hinted record that a reader finds alive is still `key`'s, exactly as one the index
/// returned a moment before would be, and a dead one sends the reader to the index, as a
/// lookup's dead record always has. Only tree indexes keep hints: an array's lookup is cheaper
/// than the search of the hints.
#[derive(Debug, Default)]
pub struct Prefetched {
    table: TableId,
    found: Vec<(u64, u64)>,
    /// Where the next search starts: reads mostly follow the pass's order.
    next: usize,
}

impl Prefetched {
    /// Forgets every hint (an attempt begins; its pin is new).
    #[inline]
    pub fn clear(&mut self) {
        self.found.clear();
        self.next = 0;
    }

    /// Runs the prefetch pass of `keys` of table `table_id` and keeps what it found, in place
    /// of the hints before. This is every protocol's `Tx::prefetch`, and a simulator yield
    /// point after the pass (another worker may change the table before the reads).
    #[inline]
    pub fn run(&mut self, table: &Table, table_id: TableId, keys: &[u64]) {
        self.clear();
        self.table = table_id;
        if matches!(table.index, PrimaryIndex::Ordered(_)) {
            let found = &mut self.found;
            table.prefetch(keys, |i, rid| found.push((keys[i], rid)));
        } else {
            table.prefetch(keys, |_, _| {});
        }
        crate::interleave::point();
    }

    /// Asks for the newest version of every record the latest pass found in multi-version
    /// `table`, from line `from_line` on (see [`Table::prefetch_newest`]), side by side, as
    /// their heads arrive.
    #[inline]
    pub fn prefetch_newest_versions(&self, table: &Table, from_line: usize) {
        for &(_, rid) in &self.found {
            table.prefetch_newest(rid, from_line);
        }
    }

    /// A point read's lookup of `key` in table `table_id`, starting from the latest pass's
    /// hint.
    #[inline]
    pub fn lookup(&mut self, table_id: TableId, key: u64) -> Lookup {
        Lookup { key, hint: self.record(table_id, key) }
    }

    /// The record the latest pass found for `key` of table `table_id`, if it found one.
    #[inline]
    pub fn record(&mut self, table_id: TableId, key: u64) -> Option<u64> {
        if table_id != self.table || self.found.is_empty() {
            return None;
        }
        let (before, after) = self.found.split_at(self.next);
        let at = match after.iter().position(|&(k, _)| k == key) {
            Some(offset) => self.next + offset,
            None => before.iter().position(|&(k, _)| k == key)?,
        };
        self.next = at + 1;
        Some(self.found[at].1)
    }
}

/// One point read's lookup ([`Prefetched::lookup`]): its first answer is the hinted record
/// if there is one, and every later answer (the record it was given died) is the index's.
#[derive(Debug)]
pub struct Lookup {
    key: u64,
    hint: Option<u64>,
}

impl Lookup {
    /// The key's record, or the leaf that proves it has none.
    #[inline]
    pub fn next(&mut self, table: &Table) -> Result<u64, LeafVersion> {
        self.hint.take().map_or_else(|| table.index.get(self.key), Ok)
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

/// Writes a whole version (for loading and for installs; nobody else sees it yet).
#[inline]
pub fn write_version(words: &[AtomicU64], cstamp: u64, seq: u64, older: u64, row: Option<&[u64]>) {
    use versioned::{CSTAMP, NO_SUCCESSOR, OLDER, PSTAMP, READERS, SEQ, SSTAMP, VERSION_HEADER_WORDS};
    words[CSTAMP].store(cstamp, Ordering::Relaxed);
    words[PSTAMP].store(cstamp, Ordering::Relaxed);
    words[SSTAMP].store(NO_SUCCESSOR, Ordering::Relaxed);
    words[READERS].store(0, Ordering::Relaxed);
    words[SEQ].store(seq, Ordering::Relaxed);
    words[OLDER].store(older, Ordering::Relaxed);
    if let Some(row) = row {
        for (word, &value) in words[VERSION_HEADER_WORDS..].iter().zip(row) {
            word.store(value, Ordering::Relaxed);
        }
    }
}

/// Writes a whole head of a multi-version table (for loading and for fresh placeholders;
/// nobody else sees it yet).
#[inline]
pub fn write_head(words: &[AtomicU64], key: u64, seq: u64, newest: u64, count: u64) {
    use versioned::{ABSENT_PSTAMP, ABSENT_READERS, ABSENT_SSTAMP, COUNT, NEWEST, NO_SUCCESSOR};
    words[META_WORD].store(0, Ordering::Relaxed);
    words[KEY_WORD].store(key, Ordering::Relaxed);
    words[SEQ_WORD].store(seq, Ordering::Relaxed);
    words[NEWEST].store(newest, Ordering::Relaxed);
    words[COUNT].store(count, Ordering::Relaxed);
    words[ABSENT_PSTAMP].store(0, Ordering::Relaxed);
    words[ABSENT_SSTAMP].store(NO_SUCCESSOR, Ordering::Relaxed);
    words[ABSENT_READERS].store(0, Ordering::Relaxed);
}

/// Every table of a workload, and the engine's global epoch.
#[derive(Debug)]
pub struct Database {
    tables: Vec<Table>,
    index: Index,
    layout: Layout,
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
        Self::load_with(workload, index, threads, Layout::SingleVersion { initial_meta }, epochs)
    }

    /// Loads `workload` into multi-version tables: every row becomes one version with commit
    /// stamp 0, the head's meta word is 0 (unlocked, no owner).
    pub fn load_versioned(
        workload: &dyn TableWorkload,
        index: Index,
        threads: usize,
        epochs: Epochs,
    ) -> Result<Database, LoadError> {
        Self::load_with(workload, index, threads, Layout::Versioned, epochs)
    }

    /// Loads `workload` into tables laid out as `layout` ([`Database::load`] or
    /// [`Database::load_versioned`]).
    pub fn load_with(
        workload: &dyn TableWorkload,
        index: Index,
        threads: usize,
        layout: Layout,
        epochs: Epochs,
    ) -> Result<Database, LoadError> {
        let schema = workload.schema();
        let dense = |table: &TableSchema| table.dense_keys.filter(|_| table.index_of.is_none());
        if index == Index::Array
            && let Some(table) = schema.tables().iter().find(|t| dense(t).is_none())
        {
            return Err(LoadError::NotDense { table: table.name });
        }
        let tables = empty_tables(schema, index, layout);
        let parts = threads.max(1);
        let per_part: Vec<Result<PartEntries, LoadError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..parts)
                .map(|part| {
                    let tables = &tables;
                    scope.spawn(move || load_part(workload, tables, index, part, parts, layout))
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
        Ok(Database { tables, index, layout, epochs })
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

    /// How the records are laid out.
    pub fn layout(&self) -> Layout {
        self.layout
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
                let (seq, row) = match self.layout {
                    Layout::SingleVersion { .. } => {
                        (words[SEQ_WORD].load(Ordering::Acquire), &words[TABLE_HEADER_WORDS..])
                    }
                    Layout::Versioned => {
                        let newest = words[versioned::NEWEST].load(Ordering::Acquire);
                        if newest == versioned::NO_VERSION {
                            return true;
                        }
                        let version = table.version(newest);
                        (version[versioned::SEQ].load(Ordering::Acquire), &version[versioned::VERSION_HEADER_WORDS..])
                    }
                };
                if seq & ABSENT == 0 {
                    rows.insert(key, row[..table.row_words].iter().map(|w| w.load(Ordering::Relaxed)).collect());
                }
                true
            },
            &mut |_| {},
        );
        rows
    }
}

impl Database {
    /// Reads up to `rows_max` present rows of `table` with keys from `from` upward, handing
    /// each to `sink(key, version, row)`; returns the key to go on from, or `None` once the
    /// table is done. For fuzzy checkpoints (through [`super::durable::CheckpointSource`]).
    ///
    /// Single-version rows are read without the protocol's lock, while transactions run: the
    /// version first, then the row words. A row read while a write is being installed may be
    /// torn, but carries a version no newer than that write's, which is in the log (its epoch
    /// is at or after the checkpoint's begin epoch, and the checkpoint commits only once the
    /// log is durable through the epoch its scan ended in); recovery keeps the log's write for
    /// any version at least as new, so torn rows never survive. Rows whose last write preceded
    /// the checkpoint are read exactly.
    ///
    /// Multi-version rows are read as their newest version, which is exact only while nothing
    /// commits (a version cut off a chain is reused at once, with no epoch between): while
    /// transactions run, the MVCC protocol reads them at a snapshot of its own instead.
    pub fn scan_rows(
        &self,
        table_id: TableId,
        from: u64,
        rows_max: usize,
        row: &mut Vec<u64>,
        sink: &mut dyn FnMut(u64, u64, &[u64]),
    ) -> Option<u64> {
        match self.layout {
            Layout::SingleVersion { .. } => {
                self.scan_records(table_id, from, rows_max, row, &mut read_single_version, sink)
            }
            Layout::Versioned => self.scan_records(table_id, from, rows_max, row, &mut read_newest_version, sink),
        }
    }

    /// Visits up to `rows_max` records of `table` with keys from `from` upward, in key order
    /// and pinned (no record id the index hands out is recycled meanwhile); `read(table, key,
    /// rid, row)` fills `row` and returns the row's version if it is present, and present rows
    /// go to `sink(key, version, row)`. Returns the key to go on from, or `None` once the
    /// table is done.
    pub fn scan_records(
        &self,
        table_id: TableId,
        from: u64,
        rows_max: usize,
        row: &mut Vec<u64>,
        read: &mut RecordReader<'_>,
        sink: &mut dyn FnMut(u64, u64, &[u64]),
    ) -> Option<u64> {
        let table = self.table(table_id);
        row.resize(table.row_words, 0);
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
                if let Some(version) = read(table, key, rid, row) {
                    sink(key, version, row);
                }
                true
            },
            &mut |_| {},
        );
        next
    }
}

/// How [`Database::scan_records`] reads one record: `(table, key, rid, row)` fills `row` and
/// returns the row's version if the row is present.
pub type RecordReader<'a> = dyn FnMut(&Table, u64, u64, &mut [u64]) -> Option<u64> + 'a;

/// A single-version record's row and version, read without its lock (see
/// [`Database::scan_rows`]); `None` if absent or no longer `key`'s.
fn read_single_version(table: &Table, key: u64, rid: u64, row: &mut [u64]) -> Option<u64> {
    let words = table.record(rid);
    let seq = words[SEQ_WORD].load(Ordering::Acquire);
    if seq & ABSENT != 0 || words[KEY_WORD].load(Ordering::Relaxed) != key {
        return None;
    }
    for (out, word) in row.iter_mut().zip(&words[TABLE_HEADER_WORDS..]) {
        *out = word.load(Ordering::Relaxed);
    }
    Some(seq & VERSION_MASK)
}

/// A multi-version record's newest row and version (exact only while nothing commits, see
/// [`Database::scan_rows`]); `None` if absent or no longer `key`'s.
fn read_newest_version(table: &Table, key: u64, rid: u64, row: &mut [u64]) -> Option<u64> {
    let head = table.record(rid);
    let newest = head[versioned::NEWEST].load(Ordering::Acquire);
    if newest == versioned::NO_VERSION || head[KEY_WORD].load(Ordering::Relaxed) != key {
        return None;
    }
    let version = table.version(newest);
    let seq = version[versioned::SEQ].load(Ordering::Acquire);
    if seq & ABSENT != 0 {
        return None;
    }
    for (out, word) in row.iter_mut().zip(&version[versioned::VERSION_HEADER_WORDS..]) {
        *out = word.load(Ordering::Relaxed);
    }
    Some(seq & VERSION_MASK)
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

/// Empty tables for `schema` (index tables included) laid out as `layout`, arenas sized by
/// the schema's hints.
fn empty_tables(schema: &Schema, index: Index, layout: Layout) -> Vec<Table> {
    schema
        .tables()
        .iter()
        .map(|table| {
            let hint = table.dense_keys.unwrap_or(table.rows_hint).max(1);
            let (records, versions) = match layout {
                Layout::SingleVersion { .. } => (Records::new(TABLE_HEADER_WORDS + table.row_words, hint), None),
                Layout::Versioned => (
                    Records::new(versioned::HEAD_WORDS + versioned::VERSION_HEADER_WORDS + table.row_words, hint),
                    Some(Records::new(versioned::VERSION_HEADER_WORDS + table.row_words, hint)),
                ),
            };
            if index == Index::Array {
                records.alloc_dense(hint);
            }
            Table {
                name: table.name,
                row_words: table.row_words,
                is_index: table.index_of.is_some(),
                records,
                versions,
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
    layout: Layout,
    /// The meta word of a single-version record at a version.
    meta_of: fn(u64) -> u64,
    tables: Vec<Table>,
    entries: Vec<Vec<(u64, u64)>>,
}

impl<'a> RowLoader<'a> {
    /// An empty database for `schema` laid out as `layout`. A single-version record at
    /// version `v` starts with meta word `meta_of(v)` (the protocol's `recovered_meta`); a
    /// multi-version record is a head with one version, `v`, stamped 0 (older than every
    /// snapshot), as loaded rows are.
    pub fn new(schema: &'a Schema, index: Index, layout: Layout, meta_of: fn(u64) -> u64) -> Result<Self, LoadError> {
        if index == Index::Array
            && let Some(table) = schema.tables().iter().find(|t| t.dense_keys.is_none() || t.index_of.is_some())
        {
            return Err(LoadError::NotDense { table: table.name });
        }
        let tables = empty_tables(schema, index, layout);
        let entries = vec![Vec::new(); tables.len()];
        Ok(RowLoader { schema, index, layout, meta_of, tables, entries })
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
        let layout = match self.layout {
            Layout::SingleVersion { .. } => Layout::SingleVersion { initial_meta: (self.meta_of)(version) },
            Layout::Versioned => Layout::Versioned,
        };
        write_loaded(table, rid, layout, key, version, row);
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
        Ok(Database { tables: self.tables, index: self.index, layout: self.layout, epochs })
    }
}

/// Writes the present row `key` at `version` into the fresh record `rid` of `table`, laid out
/// as `layout`: a single-version record with the layout's meta word, or a head whose only
/// version (in its inline slot, commit stamp 0) holds the row.
fn write_loaded(table: &Table, rid: u64, layout: Layout, key: u64, version: u64, row: &[u64]) {
    match layout {
        Layout::SingleVersion { initial_meta } => write_record(table.record(rid), initial_meta, key, version, row),
        Layout::Versioned => {
            let inline = versioned::INLINE | rid;
            write_version(table.version(inline), 0, version, versioned::NO_VERSION, Some(row));
            write_head(table.record(rid), key, version, inline, 1 | versioned::INLINE_BUSY);
        }
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
    layout: Layout,
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
        write_loaded(table, rid, layout, key, 0, row);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(table: TableId, found: &[(u64, u64)]) -> Prefetched {
        Prefetched { table, found: found.to_vec(), next: 0 }
    }

    #[test]
    fn hints_answer_keys_of_their_table_in_any_order() {
        let mut hints = hints(3, &[(10, 100), (20, 200), (30, 300)]);
        assert_eq!(hints.record(3, 10), Some(100));
        assert_eq!(hints.record(3, 20), Some(200));
        // Out of the pass's order, and again: the search wraps around.
        assert_eq!(hints.record(3, 10), Some(100));
        assert_eq!(hints.record(3, 30), Some(300));
        assert_eq!(hints.record(3, 30), Some(300));
        assert_eq!(hints.record(3, 15), None, "a key the pass did not find");
        assert_eq!(hints.record(4, 10), None, "a key of another table");
        hints.clear();
        assert_eq!(hints.record(3, 10), None, "a new attempt has no hints");
    }

    #[test]
    fn hints_of_an_empty_pass_answer_nothing() {
        let mut hints = Prefetched::default();
        assert_eq!(hints.record(0, 0), None);
    }
}
