//! The thread-per-worker engine over tables: workloads written against the table interface
//! (`ordo_workload::TableWorkload`: TPC-C, the hybrid workload, and the key-value workloads
//! through `KvTables`) run on `ordo-storage`'s record arenas and ordered indexes, under Silo
//! with node-set phantom protection (issues 14 and 15; the plan is
//! `docs/design/protocols-on-storage.md`).
//!
//! ```text
//!   TableWorkload ── generate ──> worker t ── run(txn, Maintained(SiloTx)) ──> commit / retry
//!                                                │ get · put · insert · delete · scan
//!   Database: one Table per schema table         ▼
//!     Records arena   [ meta | key | seq | row words ... ]   seq = [absent:1 | version:63]
//!     PrimaryIndex    key -> record id (B+tree with leaf versions, or a dense array)
//! ```
//!
//! * [`database`]: tables, their record layout, parallel loading, and quiescent dumps.
//! * [`silo`]: Silo (Tu et al., SOSP 2013) over tables: TID words, read sets, node sets
//!   (§4.6) for absent keys and scans, inserts through absent placeholder records, deletes
//!   through tombstones, and epoch-deferred reclamation of both.
//! * [`driver`]: worker threads with warm-up, measurement and cool-down, retries with
//!   randomized backoff, per-procedure counts, and the workload's consistency check after
//!   the run.
//!
//! ## Histories (interim encoding)
//! With `record_history`, every committed transaction is kept as an `ordo_history` entry of
//! `(key, version)` pairs, where the key is `footprint_key(table, key)` (the table id above
//! bit 48) so today's key-value checker can read it. Reads of present records and every
//! install (updates, inserts and deletes alike, a delete installing a tombstone version) are
//! recorded; scans are recorded only as the present rows they returned, and reads of absent
//! keys not at all. So the check covers everything except phantoms and absences: those are
//! covered by the scripted tests until the history format with tables, inserts, deletes and
//! scans replaces this encoding.
//!
//! The epoch clock and the polite spin are the key-value engine's; the driver's backoff loop
//! and history recorder are still its own copies, to fold in when the other protocols move
//! onto tables.

pub mod database;
pub mod driver;
pub mod durable;
pub mod epoch;
pub mod protocol;
pub mod silo;
pub mod trace;

pub use database::{Database, Index, LoadError, TABLE_HEADER_WORDS};
pub use driver::{TableRunReport, TableRunSpec, TablesConfig, TablesError, run};
pub use epoch::Epochs;
pub use protocol::{Committed, TableProtocol, WorkerOptions};
pub use silo::{SiloTables, SiloTx};
pub use trace::Trace;
