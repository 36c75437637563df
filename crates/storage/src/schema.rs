//! What a table is: a name, typed fixed-width columns laid out in 64-bit words, and how its
//! rows are keyed.
//!
//! Every row of a table has the same width, so a row is a slice of `row_words` words and a
//! column is a fixed run of them:
//!
//! ```text
//!   customer row:  [ c_id | c_d_id | c_w_id | c_balance | c_last (16 bytes) .. | c_data (500 bytes) ......... ]
//!   word:             0       1        2         3          4    5                 ..
//!   Int              one word: integers, and decimals as integers in minor units (cents)
//!   Chars(n)         n bytes, zero-padded, packed little-endian into ceil(n / 8) words
//! ```
//!
//! Keys are `u64`; composite keys are packed into them by the workload (as DBx1000 and Cicada
//! do for TPC-C). A table whose keys are exactly `0..n`, all loaded before the run and never
//! inserted or deleted, says so ([`TableSchema::dense_keys`]), which lets an engine index it
//! with a flat array for ablations.
//!
//! A secondary index is a table of its own ([`TableSchema::index_of`]): its key is computed from
//! a row of the base table by [`SecondaryIndex::key`] (which packs the indexed columns and,
//! for a non-unique index, the base row's primary key, so that every entry is distinct), and
//! its row is one word, the base row's primary key. Engines keep index tables in step with
//! their base table inside the same transaction (an insert into the base inserts the entry, a
//! delete deletes it), so a scan of an index table is an ordinary, phantom-protected scan. The
//! columns an index key is made from must not change after the row is inserted.

use thiserror::Error;

/// A table's position in its [`Schema`].
pub type TableId = u16;
/// A column's position in its table.
pub type ColumnId = u16;

/// Largest number of tables (index tables included) in one schema.
pub const TABLES_MAX: usize = 256;
/// Largest row, in 64-bit words (8 KiB).
pub const ROW_WORDS_MAX: usize = 1024;

/// The type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// A signed 64-bit integer: counts, identifiers, and decimals in minor units.
    Int,
    /// A fixed-length byte string of this many bytes (zero-padded).
    Chars(u16),
}

/// Words taken by `bytes` bytes of characters.
pub const fn chars_words(bytes: usize) -> usize {
    bytes.div_ceil(8)
}

impl ColumnType {
    /// Words the column takes in a row.
    pub fn words(self) -> usize {
        match self {
            ColumnType::Int => 1,
            ColumnType::Chars(bytes) => chars_words(bytes as usize),
        }
    }
}

/// A column: its name, type and place in the row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub ty: ColumnType,
    /// First word of the column in the row.
    pub word: usize,
}

impl Column {
    /// The integer in this column of `row`.
    #[inline]
    pub fn int(&self, row: &[u64]) -> i64 {
        debug_assert_eq!(self.ty, ColumnType::Int, "column {} is not an integer", self.name);
        row[self.word] as i64
    }

    /// Sets the integer in this column of `row`.
    #[inline]
    pub fn set_int(&self, row: &mut [u64], value: i64) {
        debug_assert_eq!(self.ty, ColumnType::Int, "column {} is not an integer", self.name);
        row[self.word] = value as u64;
    }

    /// Adds `delta` to the integer in this column of `row`.
    #[inline]
    pub fn add_int(&self, row: &mut [u64], delta: i64) {
        self.set_int(row, self.int(row).wrapping_add(delta));
    }

    /// Length of a character column in bytes.
    fn char_len(&self) -> usize {
        match self.ty {
            ColumnType::Chars(bytes) => bytes as usize,
            ColumnType::Int => panic!("column {} is not a character column", self.name),
        }
    }

    /// Copies the characters of this column of `row` into `out` (which must hold the column's
    /// length) and returns the bytes up to the first zero (the padding).
    pub fn chars<'a>(&self, row: &[u64], out: &'a mut [u8]) -> &'a [u8] {
        let len = self.char_len();
        let out = &mut out[..len];
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&row[self.word + i].to_le_bytes()[..chunk.len()]);
        }
        let end = out.iter().position(|&b| b == 0).unwrap_or(len);
        &out[..end]
    }

    /// Writes `bytes` into this column of `row`, zero-padding the rest; bytes beyond the
    /// column's length are cut off.
    pub fn set_chars(&self, row: &mut [u64], bytes: &[u8]) {
        let len = self.char_len();
        let bytes = &bytes[..bytes.len().min(len)];
        for i in 0..chars_words(len) {
            let mut word = [0u8; 8];
            let from = (i * 8).min(bytes.len());
            let to = (i * 8 + 8).min(bytes.len());
            word[..to - from].copy_from_slice(&bytes[from..to]);
            row[self.word + i] = u64::from_le_bytes(word);
        }
    }

    /// Whether this column of `row` holds exactly `bytes` (then zero padding).
    pub fn chars_eq(&self, row: &[u64], bytes: &[u8]) -> bool {
        let len = self.char_len();
        if bytes.len() > len {
            return false;
        }
        (0..chars_words(len)).all(|i| {
            let mut word = [0u8; 8];
            let from = (i * 8).min(bytes.len());
            let to = (i * 8 + 8).min(bytes.len());
            word[..to - from].copy_from_slice(&bytes[from..to]);
            row[self.word + i] == u64::from_le_bytes(word)
        })
    }
}

/// Computes a secondary index's key from a base row's primary key and contents.
pub type IndexKeyFn = fn(primary_key: u64, row: &[u64]) -> u64;

/// What makes a table an index of another.
#[derive(Clone, Copy)]
pub struct SecondaryIndex {
    /// The table it indexes.
    pub base: TableId,
    /// The entry's key for a base row (distinct for distinct base rows).
    pub key: IndexKeyFn,
}

impl std::fmt::Debug for SecondaryIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecondaryIndex").field("base", &self.base).finish_non_exhaustive()
    }
}

/// One table: columns, row width and key shape.
#[derive(Debug, Clone)]
pub struct TableSchema {
    pub name: &'static str,
    pub columns: Vec<Column>,
    /// Words per row (the sum of the columns' words).
    pub row_words: usize,
    /// `Some(n)`: the keys are exactly `0..n`, all loaded, never inserted or deleted.
    pub dense_keys: Option<u64>,
    /// `Some`: this table is a secondary index of another, maintained by the engine.
    pub index_of: Option<SecondaryIndex>,
    /// Rows expected after loading (a sizing hint for engines; not a limit).
    pub rows_hint: u64,
}

impl TableSchema {
    /// A table without columns yet.
    pub fn new(name: &'static str) -> Self {
        TableSchema { name, columns: Vec::new(), row_words: 0, dense_keys: None, index_of: None, rows_hint: 0 }
    }

    /// Appends an integer column.
    pub fn int(self, name: &'static str) -> Self {
        self.column(name, ColumnType::Int)
    }

    /// Appends a character column of `bytes` bytes.
    pub fn chars(self, name: &'static str, bytes: u16) -> Self {
        self.column(name, ColumnType::Chars(bytes))
    }

    /// Appends a column of type `ty`.
    pub fn column(mut self, name: &'static str, ty: ColumnType) -> Self {
        self.columns.push(Column { name, ty, word: self.row_words });
        self.row_words += ty.words();
        self
    }

    /// Declares the keys dense: exactly `0..keys`, loaded up front, never inserted or deleted.
    pub fn dense(mut self, keys: u64) -> Self {
        self.dense_keys = Some(keys);
        self.rows_hint = keys;
        self
    }

    /// Sets the expected number of rows after loading.
    pub fn rows_hint(mut self, rows: u64) -> Self {
        self.rows_hint = rows;
        self
    }

    /// The column at `id`.
    #[inline]
    pub fn col(&self, id: ColumnId) -> Column {
        self.columns[id as usize]
    }

    /// The column named `name`, if any.
    pub fn column_named(&self, name: &str) -> Option<Column> {
        self.columns.iter().copied().find(|c| c.name == name)
    }

    /// A zeroed row of this table.
    pub fn empty_row(&self) -> Vec<u64> {
        vec![0; self.row_words]
    }
}

/// Why a schema cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SchemaError {
    #[error("table {table}: {reason}")]
    InvalidTable { table: &'static str, reason: String },
}

/// A workload's tables, index tables included.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    tables: Vec<TableSchema>,
}

impl Schema {
    pub fn new() -> Self {
        Schema::default()
    }

    /// Adds `table`, returning its id.
    pub fn add(&mut self, table: TableSchema) -> Result<TableId, SchemaError> {
        let invalid = |reason: String| SchemaError::InvalidTable { table: table.name, reason };
        if self.tables.len() >= TABLES_MAX {
            return Err(invalid(format!("at most {TABLES_MAX} tables")));
        }
        if table.columns.is_empty() {
            return Err(invalid("a table needs at least one column".into()));
        }
        if table.row_words > ROW_WORDS_MAX {
            return Err(invalid(format!("{} words per row; at most {ROW_WORDS_MAX}", table.row_words)));
        }
        if self.tables.iter().any(|t| t.name == table.name) {
            return Err(invalid("a table of that name exists".into()));
        }
        if let Some(index) = &table.index_of {
            let Some(base) = self.tables.get(index.base as usize) else {
                return Err(invalid(format!("indexes table {}, which does not exist", index.base)));
            };
            if base.index_of.is_some() {
                return Err(invalid("an index of an index table".into()));
            }
            if table.row_words != 1 || table.dense_keys.is_some() {
                return Err(invalid("an index table has one integer column (the base key) and sparse keys".into()));
            }
        }
        self.tables.push(table);
        Ok((self.tables.len() - 1) as TableId)
    }

    /// Adds a secondary index named `name` over table `base`, keyed by `key`.
    pub fn add_index(&mut self, name: &'static str, base: TableId, key: IndexKeyFn) -> Result<TableId, SchemaError> {
        let rows_hint = self.tables.get(base as usize).map_or(0, |t| t.rows_hint);
        let mut table = TableSchema::new(name).int("primary_key").rows_hint(rows_hint);
        table.index_of = Some(SecondaryIndex { base, key });
        self.add(table)
    }

    /// The table at `id`.
    #[inline]
    pub fn table(&self, id: TableId) -> &TableSchema {
        &self.tables[id as usize]
    }

    /// Every table, in id order.
    pub fn tables(&self) -> &[TableSchema] {
        &self.tables
    }

    /// The id of the table named `name`.
    pub fn id_of(&self, name: &str) -> Option<TableId> {
        self.tables.iter().position(|t| t.name == name).map(|i| i as TableId)
    }

    /// The index tables of `base`, as `(index table id, key function)`.
    pub fn indexes_of(&self, base: TableId) -> impl Iterator<Item = (TableId, IndexKeyFn)> + '_ {
        self.tables.iter().enumerate().filter_map(move |(id, t)| match t.index_of {
            Some(index) if index.base == base => Some((id as TableId, index.key)),
            _ => None,
        })
    }

    /// Whether every table has dense keys (so a flat array can index all of them).
    pub fn all_dense(&self) -> bool {
        self.tables.iter().all(|t| t.dense_keys.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn customer() -> TableSchema {
        TableSchema::new("customer").int("c_id").chars("c_last", 16).int("c_balance").chars("c_data", 13)
    }

    #[test]
    fn columns_are_laid_out_in_words() {
        let table = customer();
        let words: Vec<usize> = table.columns.iter().map(|c| c.word).collect();
        assert_eq!(words, vec![0, 1, 3, 4]);
        assert_eq!(table.row_words, 6);
    }

    #[test]
    fn integers_and_characters_round_trip() {
        let table = customer();
        let mut row = table.empty_row();
        let (id, last, balance, data) = (table.col(0), table.col(1), table.col(2), table.col(3));
        id.set_int(&mut row, 42);
        balance.set_int(&mut row, -1_000);
        balance.add_int(&mut row, 250);
        last.set_chars(&mut row, b"BARBARBAR");
        data.set_chars(&mut row, b"a string longer than thirteen bytes");
        let mut out = [0u8; 16];
        assert_eq!(id.int(&row), 42);
        assert_eq!(balance.int(&row), -750);
        assert_eq!(last.chars(&row, &mut out), b"BARBARBAR");
        assert!(last.chars_eq(&row, b"BARBARBAR"));
        assert!(!last.chars_eq(&row, b"BARBARBA"));
        assert!(!last.chars_eq(&row, b"BARBARBARX"));
        assert_eq!(data.chars(&row, &mut out), b"a string long");
        last.set_chars(&mut row, b"OUGHT");
        assert_eq!(last.chars(&row, &mut out), b"OUGHT", "a shorter string clears the old tail");
    }

    #[test]
    fn bad_tables_are_refused() {
        let mut schema = Schema::new();
        assert!(schema.add(TableSchema::new("empty")).is_err());
        let base = schema.add(customer()).unwrap();
        assert!(schema.add(customer()).is_err(), "duplicate name");
        let index = schema.add_index("customer_by_last", base, |pk, _| pk).unwrap();
        assert!(schema.add_index("index_of_index", index, |pk, _| pk).is_err());
        assert!(schema.add_index("of_nothing", 99, |pk, _| pk).is_err());
        assert_eq!(schema.indexes_of(base).map(|(id, _)| id).collect::<Vec<_>>(), vec![index]);
        assert_eq!(schema.id_of("customer_by_last"), Some(index));
        assert!(!schema.all_dense());
    }
}
