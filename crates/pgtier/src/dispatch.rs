//! The tier's planner, without I/O: a batch of footprints in, one queue per connection and
//! the transactions deferred to the next batch out.
//!
//! ```text
//!   nobatch : no batches; each connection runs its own client's transactions
//!   batch   : position i -> connection i mod N, nothing deferred
//!   reorder : Reorderer (FVS of the batch's dependency graph) -> defer the FVS to the next batch
//!             ThreadAssigner over the rest -> conflicting transactions share a connection,
//!             each queue in the plan's serial order
//! ```
//!
//! Invariant: the queues and the deferred list partition the batch's positions.

use ordo_reorder::{FvsConfig, Plan, ReorderError, Reorderer, ThreadAssigner, TxnFootprint};

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
        Mode::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| format!("`{s}`: expected nobatch, batch or reorder"))
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
    reorderer: Reorderer,
    assigner: ThreadAssigner,
    plan: Plan,
    kept: Vec<TxnFootprint>,
    assigned: Vec<Vec<usize>>,
}

impl Dispatcher {
    pub fn new(mode: Mode, connections: usize, reorder: FvsConfig) -> Result<Self, ReorderError> {
        if connections == 0 {
            return Err(ReorderError::InvalidConfig { field: "connections", reason: "must be at least 1".into() });
        }
        Ok(Dispatcher {
            mode,
            connections,
            reorderer: Reorderer::new(reorder)?,
            assigner: ThreadAssigner::new(),
            plan: Plan::default(),
            kept: Vec::new(),
            assigned: Vec::new(),
        })
    }

    /// Plans `batch` into `out`.
    pub fn plan(&mut self, batch: &[TxnFootprint], out: &mut BatchPlan) -> Result<(), ReorderError> {
        out.queues.resize_with(self.connections, Vec::new);
        out.queues.iter_mut().for_each(Vec::clear);
        out.deferred.clear();
        match self.mode {
            Mode::NoBatch | Mode::Batch => {
                for position in 0..batch.len() {
                    out.queues[position % self.connections].push(position);
                }
            }
            Mode::Reorder => {
                self.reorderer.plan_into(batch, &mut self.plan);
                out.deferred.extend_from_slice(&self.plan.abort);
                self.kept.clear();
                self.kept.extend(self.plan.order.iter().map(|&p| batch[p].clone()));
                if !self.kept.is_empty() {
                    let threads = self.connections.min(self.kept.len());
                    self.assigner.assign_evenly(&self.kept, threads, &mut self.assigned)?;
                    // Within a connection, keep the plan's serial order (a position in `kept`
                    // is a rank in `order`).
                    for (queue, assigned) in out.queues.iter_mut().zip(&mut self.assigned) {
                        assigned.sort_unstable();
                        queue.extend(assigned.iter().map(|&rank| self.plan.order[rank]));
                    }
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
        let mut out = BatchPlan::default();
        Dispatcher::new(mode, connections, FvsConfig::default()).unwrap().plan(batch, &mut out).unwrap();
        out
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
    fn reorder_defers_a_cycle_and_groups_conflicts() {
        // 0 and 1 form a cycle (each reads what the other writes); 2 and 3 both write key 9;
        // 4 and 5 touch nothing shared.
        let batch = vec![
            TxnFootprint::new(vec![1], vec![2]),
            TxnFootprint::new(vec![2], vec![1]),
            TxnFootprint::new(vec![9], vec![9]),
            TxnFootprint::new(vec![9], vec![9]),
            TxnFootprint::new(vec![20], vec![20]),
            TxnFootprint::new(vec![30], vec![30]),
        ];
        let out = plan(Mode::Reorder, 3, &batch);
        partition(&out, batch.len());
        assert_eq!(out.deferred.len(), 1, "one of the cycle waits for the next batch");
        let queue_of = |p: usize| out.queues.iter().position(|q| q.contains(&p));
        assert_eq!(queue_of(2), queue_of(3), "writers of one key share a connection");
    }

    #[test]
    fn more_connections_than_transactions() {
        let batch = vec![TxnFootprint::new(vec![1], vec![1])];
        let out = plan(Mode::Reorder, 4, &batch);
        partition(&out, 1);
        assert_eq!(out.queues.len(), 4);
    }
}
