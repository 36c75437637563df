//! # ordo-storage: tables, rows and indexes below ordo's engines
//!
//! The storage floor of ordo: what a table is ([`schema`]: typed, fixed-width columns laid out
//! in 64-bit words), and, in later modules, where rows live and how keys find them. Engines
//! (the thread-per-worker engine's protocols) interpret records; workloads define schemas and
//! read and write rows through their engine. Nothing here does I/O.

pub mod epoch;
pub mod index;
pub mod records;
pub mod schema;
pub mod shard;

/// The order of a range scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Ascending,
    Descending,
}

pub use index::{DenseIndex, InsertError, Inserted, LeafVersion, LoadError, OrderedIndex, PrimaryIndex};
pub use records::Records;
pub use schema::{
    Column, ColumnId, ColumnType, IndexKeyFn, Schema, SchemaError, SecondaryIndex, TableId, TableSchema, chars_words,
};
