//! The thread-per-worker engine over tables: workloads written against the table interface
//! (`ordo_workload::TableWorkload`: TPC-C, the hybrid workload, and the key-value workloads
//! through `KvTables`) run on `ordo-storage`'s record arenas and ordered indexes, under Silo,
//! TicToc, 2PL (`no_wait`, `wait_die`) or `serial`, each with its own phantom protection
//! (issues 14 and 15; the plan is `docs/design/protocols-on-storage.md`).
//!
//! ```text
//!   TableWorkload ── generate ──> worker t ── run(txn, Maintained(P::Attempt)) ──> commit / retry
//!                                                │ get · put · insert · delete · scan
//!   Database: one Table per schema table         ▼
//!     Records arena   [ meta | key | seq | row words ... ]   seq = [absent:1 | version:63]
//!     PrimaryIndex    key -> record id (B+tree with leaf versions, or a dense array)
//! ```
//!
//! * [`database`]: tables, their record layout, parallel loading, and quiescent dumps;
//!   [`database::Table::prefetch`], which every protocol's `Tx::prefetch` calls with the keys
//!   of a step (a workload passes them before it reads them, as `KvTables` does): the index
//!   descents of the group run side by side and ask for each node and record before reading
//!   it, so their cache misses overlap (`OrderedIndex::prefetch`); and
//!   [`database::Prefetched`], the records that pass found, from which the attempt's point
//!   reads of those keys start instead of descending the tree a second time.
//! * [`silo`]: Silo (Tu et al., SOSP 2013) over tables: TID words, read sets, node sets
//!   (§4.6) for absent keys and scans, inserts through absent placeholder records, deletes
//!   through tombstones, and epoch-deferred reclamation of both.
//! * [`tictoc`]: TicToc (Yu et al., SIGMOD 2016): `wts`/`rts` meta words, data-driven commit
//!   timestamps, node-set validation plus leaf read stamps for phantoms, and history stamps
//!   that make the timestamp order checkable.
//! * [`two_phase`]: 2PL, `no_wait` or `wait_die`, with next-key locking (ARIES/KVL) and an
//!   end-of-table lock per table for phantoms.
//! * [`serial`]: one worker, no concurrency control: the per-core bound.
//! * What they share: `optimistic` (Silo's and TicToc's common part: the seqlock read, the
//!   read, node and write sets, get, put, insert, delete and scan on them, locking and
//!   releasing the write set; each keeps its own validation, timestamps and meta word),
//!   [`writes`] (the write buffer and an attempt's own view of it, installs),
//!   [`scan`] (a range scan merged with own writes, for the protocols that read without
//!   locks), [`reclaim`] (tombstones and aborted placeholders leave the index an epoch later),
//!   [`trace`] (histories), [`protocol`] (the interface the driver and tests use).
//! * [`mvcc`]: multi-version tables: snapshot isolation (`mvcc_si`) and the Serial Safety
//!   Net (`ssi`, ERMIA's parallel commit without a latch), version chains trimmed behind the
//!   oldest snapshot, phantoms by node sets and leaf stamps under `ssi`.
//! * [`driver`]: worker threads with warm-up, measurement and cool-down, retries with
//!   randomized backoff, per-procedure counts, reorder mode's batching front (its batch size
//!   fixed, or `auto`: tuned online by `ordo-batching`'s controller), and the workload's
//!   consistency check after the run.
//! * [`protocol`]: the one interface every protocol over tables implements ([`TableProtocol`]).
//! * [`trace`]: what committed transactions leave behind, in the history format with tables.
//! * [`simulate`]: the seeded interleaving simulator, which runs any [`TableProtocol`] with
//!   workers that take turns at the protocol's yield points and checks the run with the
//!   history checker, a serial replay and the workload's invariants.
//! * [`durable`]: the write-ahead log (issue 17, `ordo-log`): a log directory is opened,
//!   recovered into the database (or given its first checkpoint), fuzzy checkpoints are taken
//!   while transactions run, and the engine's epoch is the log's group-commit epoch.
//!
//! ## Durability
//! ```text
//!   attempt:  trace.enter_epoch()  (the worker holds the log's current epoch open)
//!   commit:   installed(t, effect, k, v, row)* -> committed(ts)   (redo record built, sealed)
//!   driver:   trace.log_commit(epoch the commit returned) -> WorkerLog (one copy, one lock)
//!             queue (epoch, start, history entry); acknowledge the front once the log's
//!             durable epoch reaches it (sync) or at once (async): count, latency, history
//!   logger:   closes an epoch once every worker left it, writes, fsyncs, publishes durable
//! ```
//! Protocols need nothing for this beyond the row image they pass to `installed` and the
//! serialization epoch their commit returns (read after locking, before installing: every
//! wr or ww successor reads a later or equal epoch, so a whole number of epochs is a closed
//! prefix of the commit order). A worker whose queue of unacknowledged commits is full waits,
//! idle in the log. After a failed write or fsync the run stops acknowledging at once and
//! ends with [`driver::TablesError::LogStopped`]; it never retries.
//!
//! ## Histories
//! With `record_history`, every committed transaction is kept by its worker's [`Trace`] as an
//! `ordo_history` entry in the format with tables: point reads (of present rows and of
//! tombstones), updates, inserts, deletes, and scans with the range they covered and the rows
//! they saw, so the checker finds phantoms as cycles through scans.
//!
//! The epoch clock and the polite spin are the key-value engine's; the driver's backoff loop
//! and history recorder are still its own copies, to fold in when the other protocols move
//! onto tables.

pub mod database;
pub mod driver;
pub mod durable;
pub mod epoch;
pub mod mvcc;
mod optimistic;
pub mod protocol;
pub mod reclaim;
pub mod scan;
pub mod serial;
pub mod silo;
pub mod simulate;
pub mod tictoc;
pub mod trace;
pub mod two_phase;
pub mod writes;

pub use database::{Database, Index, LoadError, TABLE_HEADER_WORDS};
pub use driver::{ReorderTuning, TableRunReport, TableRunSpec, TablesConfig, TablesError, run};
pub use epoch::Epochs;
pub use mvcc::{Isolation, MvccTables, MvccTx, MvccWorker};
pub use protocol::{Committed, TableProtocol, WorkerOptions};
pub use serial::{SerialTables, SerialTx};
pub use silo::{SiloFaults, SiloTables, SiloTx};
pub use tictoc::{TicTocTables, TicTocTx};
pub use trace::Trace;
pub use two_phase::{TwoPhaseTables, TwoPhaseTx};
