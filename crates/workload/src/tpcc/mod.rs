//! TPC-C (TPC Benchmark C, revision 5.11) and seed 003's hybrid analytic workload, as a
//! [`TableWorkload`]: nine tables with their real columns, the specification's data
//! generation and input rules, the five transactions, and consistency conditions 1 to 4.
//!
//! ```text
//!   WAREHOUSE (W) ──< DISTRICT (10 W) ──< CUSTOMER (30k W) ──< HISTORY
//!        │                 │                    └──< ORDER (30k W) ──< ORDER-LINE (300k W)
//!        └──< STOCK (100k W) >── ITEM (100k)         └── NEW-ORDER (9k W, undelivered)
//!
//!   mix          new_order 45 │ payment 43 │ order_status 4 │ delivery 4 │ stock_level 4
//!   hybrid       + analytic (analytic_share of all transactions, 20% by default)
//! ```
//!
//! * [`config`]: [`TpccConfig`] (warehouses, [`Binding`], the mix and [`parse_mix`], the
//!   [`HybridConfig`], a [`TpccScale`] for small test databases) and its bounds.
//! * [`schema`]: the tables, the two secondary indexes (customers by last name, orders by
//!   customer), and the bit layout of composite keys (every base key below 2^48).
//! * [`random`]: NURand and its run-time constants, last names, a-strings.
//! * [`load`]: the initial database in independent units, for parallel loading.
//! * `input`: drawing each transaction's inputs; the transactions in `new_order`, `payment`,
//!   `order_status`, `delivery`, `stock_level`, `analytic`; `footprint` (coarse and sound,
//!   argued there); `consistency` (conditions 1-4).
//!
//! Transactions run with no think or keying time. Delivery runs as one ordinary transaction
//! (not the specification's deferred, queued mode), and StockLevel draws its district per
//! transaction (the specification fixes one per terminal), as in-memory engines' TPC-C
//! usually do. The engine buffers writes, so the 1% of NewOrders that meet an unused item
//! return [`Outcome::UserAbort`] and leave no trace. A row that every consistent state holds
//! (a warehouse, a loaded customer, the order a NEW-ORDER row names) but an attempt cannot
//! find means the attempt read an inconsistent state, which validation would reject anyway:
//! the procedure returns [`Aborted`] at once.
//!
//! **Bindings** (seed 003): `Fixed` gives worker `k` home warehouse `k % warehouses + 1` for
//! all its transactions (TPCC-fixed: partitioned, conflicts only through the 1% remote order
//! lines and 15% remote payments); `Random` draws each transaction's home warehouse anew
//! (TPCC-random, to make workers collide). Seed 003 says only that its draw is non-uniform;
//! ordo draws uniformly, which already makes any two workers share a warehouse often.
//!
//! **The hybrid workload.** Seed 003's TPCE-hybrid adds to TPC-E a read-mostly analytic
//! transaction that totals the assets of a random customer account group (joining
//! `holding_summary` with `last_trade`) and logs the result in `analytic_history`, while
//! TPC-E's trade-result keeps updating holdings; the group's size (1% to 60%) is the
//! contention degree. ordo keeps the transaction and changes the schema to TPC-C's: the
//! analytic transaction scans a contiguous `analytic_range` of one warehouse's customers
//! (the home warehouse its binding gives it; the group starts at a random customer and runs
//! across district boundaries in key order), sums their balances and the amounts
//! of their open orders, and inserts one `analytic_history` row. One schema then serves both
//! workloads, so a hybrid result is comparable with the plain TPC-C result on the same data,
//! and the conflict that matters is the same: a long scan over rows that short transactions
//! (Payment, Delivery, NewOrder) keep updating and inserting into.

pub mod config;
mod consistency;
mod delivery;
mod footprint;
mod input;
pub mod load;
mod new_order;
mod order_status;
mod payment;
pub mod random;
pub mod schema;
mod stock_level;
#[cfg(test)]
mod tests;

mod analytic;

use std::sync::atomic::{AtomicU64, Ordering};

use ordo_storage::{Schema, TableId};

pub use config::{
    Binding, CUSTOMERS_PER_DISTRICT, DISTRICTS_PER_WAREHOUSE, HybridConfig, ITEMS, STANDARD_MIX, TRANSACTION_NAMES,
    TpccConfig, TpccScale, WAREHOUSES_MAX, parse_mix,
};
pub use consistency::{CONDITION_1, CONDITION_2, CONDITION_3, CONDITION_4};
pub use input::{BY_LAST_NAME, OrderLineInput};

use crate::WorkloadRng;
use crate::error::WorkloadError;
use crate::procedure::Txn;
use crate::tables::{Aborted, ConsistencyError, ConsistencyReport, Outcome, Scratch, TableWorkload, Tx};
use random::NurandConstants;

pub const NEW_ORDER_TX: u8 = 0;
pub const PAYMENT_TX: u8 = 1;
pub const ORDER_STATUS_TX: u8 = 2;
pub const DELIVERY_TX: u8 = 3;
pub const STOCK_LEVEL_TX: u8 = 4;
pub const ANALYTIC_TX: u8 = 5;

/// Procedure names of the hybrid workload (TPC-C's are the first five).
pub const PROCEDURE_NAMES: [&str; 6] = ["new_order", "payment", "order_status", "delivery", "stock_level", "analytic"];

/// Most workers that may draw transactions: each owns a slot of `analytic_history` keys (12
/// bits).
pub const WORKERS_MAX: usize = 1024;

/// A counter on its own cache line, so workers counting their transactions do not share one.
#[derive(Debug, Default)]
#[repr(align(128))]
struct PaddedCounter(AtomicU64);

/// Each worker's count of transactions drawn: its logical clock and history-key sequence.
#[derive(Debug)]
struct Sequences(Box<[PaddedCounter]>);

impl Sequences {
    fn new() -> Self {
        Sequences((0..WORKERS_MAX).map(|_| PaddedCounter::default()).collect())
    }

    fn next(&self, worker: usize) -> u64 {
        assert!(worker < WORKERS_MAX, "worker {worker}: TPC-C supports at most {WORKERS_MAX} workers");
        // Only worker `worker` draws with this counter; the atomic just makes `&self` enough.
        self.0[worker].0.fetch_add(1, Ordering::Relaxed)
    }
}

/// The TPC-C workload (and, with a [`HybridConfig`], the hybrid one).
#[derive(Debug)]
pub struct Tpcc {
    config: TpccConfig,
    schema: Schema,
    constants: NurandConstants,
    /// Cumulative mix weights.
    cumulative_mix: [u32; 5],
    sequences: Sequences,
}

impl Tpcc {
    pub fn new(config: TpccConfig) -> Result<Self, WorkloadError> {
        config.validate()?;
        let mut cumulative_mix = config.mix;
        for i in 1..cumulative_mix.len() {
            cumulative_mix[i] += cumulative_mix[i - 1];
        }
        Ok(Tpcc {
            schema: schema::build(config.warehouses, config.scale, config.hybrid.is_some()),
            constants: NurandConstants::from_seed(config.seed),
            cumulative_mix,
            sequences: Sequences::new(),
            config,
        })
    }

    pub fn config(&self) -> &TpccConfig {
        &self.config
    }

    /// The NURand constants C of this run.
    pub fn nurand_constants(&self) -> &NurandConstants {
        &self.constants
    }
}

/// Reads a row that every consistent state holds; its absence means the attempt read an
/// inconsistent state, and the attempt gives up as the engine's validation would make it.
#[inline]
fn read_present(tx: &mut dyn Tx, table: TableId, key: u64, row: &mut [u64], for_update: bool) -> Result<(), Aborted> {
    if tx.get(table, key, row, for_update)? { Ok(()) } else { Err(Aborted) }
}

/// Inserts a row whose key no consistent state holds yet (see [`read_present`]).
#[inline]
fn insert_new(tx: &mut dyn Tx, table: TableId, key: u64, row: &[u64]) -> Result<(), Aborted> {
    if tx.insert(table, key, row)? { Ok(()) } else { Err(Aborted) }
}

impl TableWorkload for Tpcc {
    fn name(&self) -> &'static str {
        if self.config.hybrid.is_some() { "tpcc-hybrid" } else { "tpcc" }
    }

    fn procedure_names(&self) -> &'static [&'static str] {
        if self.config.hybrid.is_some() { &PROCEDURE_NAMES } else { &PROCEDURE_NAMES[..5] }
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn load(&self, part: usize, parts: usize, sink: &mut dyn FnMut(TableId, u64, &[u64])) {
        load::load(&self.config, part, parts, sink);
    }

    fn generate(&self, rng: &mut WorkloadRng, worker: usize, txn: &mut Txn) {
        self.draw(rng, worker, txn);
    }

    fn run(&self, txn: &Txn, tx: &mut dyn Tx, scratch: &mut Scratch) -> Result<Outcome, Aborted> {
        match txn.procedure {
            NEW_ORDER_TX => new_order::run(txn, tx),
            PAYMENT_TX => payment::run(txn, tx, scratch),
            ORDER_STATUS_TX => order_status::run(txn, tx, scratch),
            DELIVERY_TX => delivery::run(txn, tx),
            STOCK_LEVEL_TX => stock_level::run(txn, tx, scratch),
            ANALYTIC_TX => analytic::run(txn, tx, scratch, u64::from(self.config.scale.customers_per_district)),
            other => unreachable!("TPC-C has no procedure {other}"),
        }
    }

    fn footprint(&self, txn: &Txn, reads: &mut Vec<u64>, writes: &mut Vec<u64>) {
        footprint::footprint(txn, u64::from(self.config.scale.customers_per_district), reads, writes);
    }

    fn check(&self, tx: &mut dyn Tx) -> Result<ConsistencyReport, ConsistencyError> {
        consistency::check(tx, u64::from(self.config.warehouses))
    }
}
