//! # ordo-storage: tables, rows and indexes below ordo's engines
//!
//! The storage floor of ordo, in four parts. Engines (the thread-per-worker engine's
//! protocols: Silo, TicToc, 2PL, MVCC/SSN) interpret records and run concurrency control on
//! top; workloads define schemas and read and write rows through their engine. Nothing here
//! does I/O.
//!
//! ```text
//!   schema    what a table is: typed fixed-width columns in u64 words; secondary indexes
//!             are tables of their own
//!   index     key -> record id: OrderedIndex (B+tree, optimistic lock coupling, leaf
//!             versions and stamps for phantom protection), DenseIndex (0..n, ablations)
//!   records   where rows live: arenas of fixed-stride records of AtomicU64, by integer id
//!   prefetch  the hint that overlaps the cache misses of many records and index descents
//!   epoch     when a retired record or node id may be handed out again (crossbeam-epoch)
//! ```
//!
//! ## Arenas of atomics instead of pointers
//! The workspace denies `unsafe`, and optimistic concurrency control reads data that other
//! threads are writing. Both are served by one design: every shared structure is an arena of
//! `AtomicU64` words addressed by integer ids ([`records`]). A reader can never tear a word or
//! touch freed memory, because arena memory is never returned while the arena lives; ids are
//! recycled instead. A reader that is slow enough to read a slot after it was recycled reads
//! well-formed atomics holding someone else's data, which is harmless: it then fails its
//! version check (a record's TID word, an index node's lock version, which only grows across
//! reuse) and retries. Epochs make such late reads rare, versions make them correct.
//!
//! ## Why an own B+tree
//! The protocols need more from the ordered index than a map: Silo-style node-set validation
//! needs the version of every leaf a scan or an absent read looked at, an insert's leaf version
//! before and after (so a transaction's own insert is not a phantom to it), and TicToc and SSN
//! need a per-leaf word to order inserters after scanners. Off-the-shelf concurrent indexes
//! hide their nodes: `congee` (an ART) exposes no node versions; `scc::TreeIndex` is weak under
//! writes; `crossbeam-skiplist` 0.1.3 leaks every node a range scan visits (crossbeam issue
//! 1178, fixed upstream after that release) and has no leaves to validate. So [`index::OrderedIndex`] is a B+tree with optimistic lock coupling
//! (Leis et al., DaMoN 2016), its nodes in a record arena, with Masstree's leaf versions.
//!
//! ## Why crossbeam-epoch
//! Recycling an id needs to know that no thread still works with it. crossbeam-epoch is the
//! well-kept, lock-free answer, and its deferred functions are the hook an arena needs: a
//! retired id goes back on a free list once every thread pinned at retirement has unpinned.
//! Engines pin once per transaction. parking_lot provides the free-list shards' mutexes,
//! crossbeam-utils cache-line padding and spin backoff.
//!
//! ## The two `unsafe` modules
//! Arena chunks are allocated zeroed by the C library's `calloc` (module `zeroed`), not by the
//! process's global allocator: `calloc` hands out fresh zero pages that are mapped only when
//! touched, where mimalloc (ordo's global allocator) clears reused memory with a `memset`, which
//! stalled a run for seconds when a chunk of gigabytes was allocated under a lock. Owning memory
//! of another allocator takes `unsafe` on stable Rust. The same module advises chunks of 2 MiB
//! or more onto transparent huge pages (`madvise`, through `libc`, the crate Rust's own
//! standard library binds the C library with): a table of millions of records or B+tree
//! leaves otherwise costs a page walk per access. The module is small, every block states why
//! it is sound, and `cargo miri test -p ordo-storage zeroed` runs its tests under Miri.
//! bytemuck's `zeroed_slice_box`, used before, allocates through the global allocator. A test
//! (`tests/arena_allocator.rs`) runs on stats_alloc's counting allocator, the small crate made
//! for asserting what a piece of code allocates, and fails if a chunk goes through it.
//!
//! The other is [`prefetch`], the prefetch instruction behind [`Records::prefetch`] and
//! [`OrderedIndex::prefetch`], which walks the descents of a group of keys side by side so
//! that their cache misses overlap. Engines call it with the keys a transaction's step will
//! read: on 10M ycsb records, Silo on one thread ran 63K transactions per second without it
//! and 89-113K with it (BENCHMARKS.md, "The index's cost: huge pages and group
//! prefetching").

pub mod epoch;
pub mod index;
pub mod prefetch;
pub mod records;
pub mod schema;
pub mod shard;
pub mod zeroed;

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
pub use zeroed::ZeroedWords;
