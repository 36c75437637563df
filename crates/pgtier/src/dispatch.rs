//! The tier's planner, without I/O: a batch of footprints in, one queue per connection and
//! the transactions deferred to the next batch out.
//!
//! ```text
//!   nobatch : no batches; each connection runs its own client's transactions
//!   batch   : position i -> queue i mod Q, nothing deferred
//!   reorder : ThreadAssigner -> conflicting transactions share a connection (they run one
//!             after another there and cannot abort each other);
//!             Reorderer over the dependencies *between* connections -> defer a feedback vertex
//!             set of those cycles to the next batch; each queue in the plan's serial order
//! ```
//!
//! With grouping (`group`), a queue is meant to run as one server transaction, so a batch of B
//! is planned over Q = min(N, ceil(B / G)) queues of about G transactions instead of spreading
//! it thinly over all N connections (B / N each, too few to group); the rolling dispatcher
//! sends the next batch's queues to the other connections. Without grouping (G = 1), Q = N.
//! batch and reorder size their queues the same way, so they group alike.
//!
//! Invariant: the queues and the deferred list partition the batch's positions.

use ordo_reorder::{
    DependencyGraph, FvsConfig, GraphBuilder, Plan, ReorderError, Reorderer, ThreadAssigner, TxnFootprint, VertexMeta,
};

/// How the tier dispatches transactions over its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    NoBatch,
    Batch,
    Reorder,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::NoBatch, Mode::Batch, Mode::Reorder];

    pub fn name(self) -> &'static str {
        match self {
            Mode::NoBatch => "nobatch",
            Mode::Batch => "batch",
            Mode::Reorder => "reorder",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("`{s}`: expected nobatch, batch or reorder"))
    }
}

/// A batch's dispatch: `queues[c]` runs on connection `c`, in order; `deferred` waits for the
/// next batch. All hold batch positions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchPlan {
    pub queues: Vec<Vec<usize>>,
    pub deferred: Vec<usize>,
}

/// Plans batches for `batch` or `reorder` mode, reusing its scratch space.
#[derive(Debug)]
pub struct Dispatcher {
    mode: Mode,
    connections: usize,
    /// Transactions a queue is meant to hold (the group size; 1: spread over all connections).
    queue_len_target: usize,
    reorderer: Reorderer,
    assigner: ThreadAssigner,
    plan: Plan,
    builder: GraphBuilder,
    full: DependencyGraph,
    cross: DependencyGraph,
    meta: Vec<VertexMeta>,
    assigned: Vec<Vec<usize>>,
    connection_of: Vec<usize>,
    rank: Vec<usize>,
}

impl Dispatcher {
    pub fn new(
        mode: Mode,
        connections: usize,
        queue_len_target: usize,
        reorder: FvsConfig,
    ) -> Result<Self, ReorderError> {
        if connections == 0 {
            return Err(ReorderError::InvalidConfig { field: "connections", reason: "must be at least 1".into() });
        }
        if queue_len_target == 0 {
            return Err(ReorderError::InvalidConfig { field: "queue length", reason: "must be at least 1".into() });
        }
        Ok(Dispatcher {
            mode,
            connections,
            queue_len_target,
            reorderer: Reorderer::new(reorder)?,
            assigner: ThreadAssigner::new(),
            plan: Plan::default(),
            builder: GraphBuilder::new(),
            full: DependencyGraph::default(),
            cross: DependencyGraph::default(),
            meta: Vec::new(),
            assigned: Vec::new(),
            connection_of: Vec::new(),
            rank: Vec::new(),
        })
    }

    /// Plans `batch` into `out`.
    pub fn plan(&mut self, batch: &[TxnFootprint], out: &mut BatchPlan) -> Result<(), ReorderError> {
        out.queues.resize_with(self.connections, Vec::new);
        out.queues.iter_mut().for_each(Vec::clear);
        out.deferred.clear();
        let queues = self.connections.min(batch.len().div_ceil(self.queue_len_target)).max(1);
        match self.mode {
            Mode::NoBatch | Mode::Batch => {
                for position in 0..batch.len() {
                    out.queues[position % queues].push(position);
                }
            }
            Mode::Reorder => {
                if batch.is_empty() {
                    return Ok(());
                }
                // 1. Conflicting transactions to the same connection (§4.2's thread-aware policy).
                self.assigner.assign_evenly(batch, queues, &mut self.assigned)?;
                self.connection_of.clear();
                self.connection_of.resize(batch.len(), 0);
                for (connection, assigned) in self.assigned.iter().enumerate() {
                    for &position in assigned {
                        self.connection_of[position] = connection;
                    }
                }
                // 2. Only transactions on different connections run concurrently, so only their
                //    dependencies can close a cycle that makes the server abort one of them.
                self.builder.build(batch, &mut self.full);
                self.cross.reset(batch.len());
                for (from, to) in self.full.edges() {
                    if self.connection_of[from] != self.connection_of[to] {
                        self.cross.add_edge(from, to);
                    }
                }
                self.meta.clear();
                self.meta.extend(batch.iter().map(|f| VertexMeta { restarts: f.restarts, value: f.value }));
                // 3. Defer a feedback vertex set of those cycles to the next batch; run the rest
                //    in the plan's serial order on their connections.
                self.reorderer.plan_graph(&self.cross, &self.meta, &mut self.plan);
                out.deferred.extend_from_slice(&self.plan.abort);
                self.rank.clear();
                self.rank.resize(batch.len(), usize::MAX);
                for (rank, &position) in self.plan.order.iter().enumerate() {
                    self.rank[position] = rank;
                }
                for (queue, assigned) in out.queues.iter_mut().zip(&self.assigned) {
                    queue.extend(assigned.iter().copied().filter(|&p| self.rank[p] != usize::MAX));
                    queue.sort_unstable_by_key(|&p| self.rank[p]);
                }
            }
        }
        debug_assert_eq!(out.queues.iter().map(Vec::len).sum::<usize>() + out.deferred.len(), batch.len());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(mode: Mode, connections: usize, batch: &[TxnFootprint]) -> BatchPlan {
        plan_grouped(mode, connections, 1, batch)
    }

    fn plan_grouped(mode: Mode, connections: usize, group: usize, batch: &[TxnFootprint]) -> BatchPlan {
        let mut out = BatchPlan::default();
        Dispatcher::new(mode, connections, group, FvsConfig::default()).unwrap().plan(batch, &mut out).unwrap();
        out
    }

    #[test]
    fn grouping_plans_queues_of_about_a_group() {
        // 20 transactions on distinct keys, 8 connections, groups of 5: 4 queues of 5.
        let batch: Vec<TxnFootprint> = (0..20).map(|k| TxnFootprint::new(vec![k], vec![k])).collect();
        for mode in [Mode::Batch, Mode::Reorder] {
            let out = plan_grouped(mode, 8, 5, &batch);
            partition(&out, batch.len());
            let mut lengths: Vec<usize> = out.queues.iter().map(Vec::len).filter(|&n| n > 0).collect();
            lengths.sort_unstable();
            assert_eq!(lengths, vec![5, 5, 5, 5], "{}: {out:?}", mode.name());
        }
        // Never more queues than connections.
        let out = plan_grouped(Mode::Batch, 2, 5, &batch);
        assert_eq!(out.queues.iter().map(Vec::len).collect::<Vec<_>>(), vec![10, 10]);
    }

    fn partition(out: &BatchPlan, n: usize) {
        let mut all: Vec<usize> = out.queues.iter().flatten().chain(&out.deferred).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn batch_mode_deals_round_robin() {
        let batch: Vec<TxnFootprint> = (0..5).map(|k| TxnFootprint::new(vec![k], vec![k])).collect();
        let out = plan(Mode::Batch, 2, &batch);
        assert_eq!(out.queues, vec![vec![0, 2, 4], vec![1, 3]]);
        assert!(out.deferred.is_empty());
    }

    #[test]
    fn reorder_groups_a_cycle_on_one_connection() {
        // 0 and 1 form a cycle (each reads what the other writes); 2 and 3 touch nothing shared.
        let batch = vec![
            TxnFootprint::new(vec![1], vec![2]),
            TxnFootprint::new(vec![2], vec![1]),
            TxnFootprint::new(vec![20], vec![20]),
            TxnFootprint::new(vec![30], vec![30]),
        ];
        let out = plan(Mode::Reorder, 2, &batch);
        partition(&out, batch.len());
        assert!(out.deferred.is_empty(), "on one connection the cycle runs serially: {out:?}");
        let queue_of = |p: usize| out.queues.iter().position(|q| q.contains(&p));
        assert_eq!(queue_of(0), queue_of(1));
    }

    #[test]
    fn reorder_defers_cycles_between_connections() {
        // Four read-modify-writes of key 9 over two connections of two: whatever the split,
        // the ones that do not fit on the first connection form cycles across connections.
        let batch: Vec<TxnFootprint> = (0..4).map(|_| TxnFootprint::new(vec![9], vec![9])).collect();
        let out = plan(Mode::Reorder, 2, &batch);
        partition(&out, batch.len());
        assert_eq!(out.deferred.len(), 2, "{out:?}");
        let running: Vec<usize> = out.queues.iter().filter(|q| !q.is_empty()).map(Vec::len).collect();
        assert_eq!(running, vec![2], "the survivors share one connection: {out:?}");
    }

    #[test]
    fn more_connections_than_transactions() {
        let batch = vec![TxnFootprint::new(vec![1], vec![1])];
        let out = plan(Mode::Reorder, 4, &batch);
        partition(&out, 1);
        assert_eq!(out.queues.len(), 4);
    }
}
