//! The reorderer: a batch of footprints in, a plan out.
//!
//! ```text
//!  footprints ──GraphBuilder──> dependency graph ──FvsSolver──> abort set
//!                                      │                           │
//!                                      └────────SerialOrder<───────┘──> order of the rest
//! ```
//!
//! A plan is *sound* when validating `order` one transaction at a time, against the writes of
//! the transactions validated before it in the batch, commits every transaction of `order`:
//! no transaction of `order` read a key that an earlier transaction of `order` writes.

use crate::error::ReorderError;
use crate::fvs::{FvsConfig, FvsOutcome, FvsSolver};
use crate::graph::{DependencyGraph, Footprint, GraphBuilder};
use crate::order::SerialOrder;
use crate::policy::VertexMeta;

/// What to do with a batch: abort `abort`, validate the rest in `order`. Both hold batch
/// positions; together they are a partition of the batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub abort: Vec<usize>,
    pub order: Vec<usize>,
    /// The exact search ran out of budget on some component and greedy was used there.
    pub search_fell_back: bool,
}

/// Plans batches, reusing all of its scratch space between calls.
#[derive(Debug)]
pub struct Reorderer {
    builder: GraphBuilder,
    graph: DependencyGraph,
    meta: Vec<VertexMeta>,
    solver: FvsSolver,
    outcome: FvsOutcome,
    serial: SerialOrder,
}

impl Reorderer {
    pub fn new(config: FvsConfig) -> Result<Self, ReorderError> {
        Ok(Reorderer {
            builder: GraphBuilder::new(),
            graph: DependencyGraph::default(),
            meta: Vec::new(),
            solver: FvsSolver::new(config)?,
            outcome: FvsOutcome::default(),
            serial: SerialOrder::default(),
        })
    }

    pub fn config(&self) -> &FvsConfig {
        self.solver.config()
    }

    /// Plans `batch` into `plan` (cleared first).
    pub fn plan_into<F: Footprint>(&mut self, batch: &[F], plan: &mut Plan) {
        self.builder.build(batch, &mut self.graph);
        self.meta.clear();
        self.meta.extend(batch.iter().map(|txn| VertexMeta { restarts: txn.restarts(), value: txn.value() }));
        self.solve_current(plan);
    }

    /// Plans `batch` into a new plan.
    pub fn plan<F: Footprint>(&mut self, batch: &[F]) -> Plan {
        let mut plan = Plan::default();
        self.plan_into(batch, &mut plan);
        plan
    }

    /// Plans an explicit dependency graph (`meta` may be empty).
    pub fn plan_graph(&mut self, graph: &DependencyGraph, meta: &[VertexMeta], plan: &mut Plan) {
        self.graph.clone_from(graph);
        self.meta.clear();
        self.meta.extend_from_slice(meta);
        self.solve_current(plan);
    }

    /// The graph of the last planned batch.
    pub fn graph(&self) -> &DependencyGraph {
        &self.graph
    }

    fn solve_current(&mut self, plan: &mut Plan) {
        self.solver.solve(&self.graph, &self.meta, &mut self.outcome);
        plan.abort.clear();
        plan.abort.extend_from_slice(&self.outcome.fvs);
        plan.search_fell_back = self.outcome.fell_back;
        plan.order.clear();
        self.serial.compute(&self.graph, &mut plan.abort, &mut plan.order);
    }
}
