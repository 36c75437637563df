//! # ordo-reorder: batch reordering for optimistic concurrency control
//!
//! Under contention, backward-validating OCC aborts a transaction whenever a transaction
//! validated before it wrote something it read. Given a *batch* of transactions awaiting
//! validation, the order of validation is free, and a good order turns many of those aborts
//! into commits (Ding, Kot, Gehrke, PVLDB 12(2), 2018, §3.2 and §4).
//!
//! This crate turns a batch of footprints into a [`Plan`]: the transactions to abort (a
//! feedback vertex set of the batch's [`DependencyGraph`]) and an order for the rest in which
//! all of them commit. It also splits batches over worker threads so that conflicting
//! transactions share a thread ([`ThreadAssigner`], for engines without a central validator),
//! batch by batch as the paper does or keeping conflicts that span batches on one thread.
//!
//! ```text
//!  batch of footprints
//!        │  GraphBuilder: key -> writers index, edge reader -> writer
//!        ▼
//!  DependencyGraph (bit matrix, both directions)
//!        │  FvsSolver: trim, SCCs, search | greedy_scc | greedy_sort | hybrid_m | random_n,
//!        │             ranked by a Policy, then the minimality pass
//!        ▼
//!  Plan { abort, order }   (SerialOrder: topological, earliest arrival first)
//! ```
//!
//! ```
//! use ordo_reorder::{FvsConfig, Reorderer, TxnFootprint};
//!
//! // t0 reads 1 and writes 2; t1 reads 2 and writes 1: whichever validates second aborts.
//! let batch = vec![TxnFootprint::new(vec![1], vec![2]), TxnFootprint::new(vec![2], vec![1])];
//! let plan = Reorderer::new(FvsConfig::default()).unwrap().plan(&batch);
//! assert_eq!(plan.abort.len(), 1);
//! assert_eq!(plan.order.len(), 1);
//! ```

pub mod bitset;
mod error;
mod fvs;
mod graph;
mod order;
mod plan;
mod policy;
mod residual;
mod scc;
mod thread_assign;

pub use error::ReorderError;
pub use fvs::{
    Algorithm, FvsConfig, FvsOutcome, FvsSolver, HYBRID_SORT_EXACT_DEFAULT, SEARCH_NODE_BUDGET_DEFAULT,
    is_feedback_vertex_set,
};
pub use graph::{DependencyGraph, Footprint, GraphBuilder, TxnFootprint};
pub use order::SerialOrder;
pub use plan::{Plan, Reorderer};
pub use policy::{Policy, Score, VertexMeta};
pub use scc::Components;
pub use thread_assign::{OWNERSHIP_RATIO, RecentKey, RecentKeys, ThreadAssigner};
