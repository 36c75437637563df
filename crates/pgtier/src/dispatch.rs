//! The tier's planner, without I/O: a batch of footprints in, one queue per connection and
//! the transactions deferred to the next batch out.
//!
//! ```text
//!   nobatch : no batches; each connection runs its own client's transactions
//!   batch   : position i -> queue i mod Q, nothing deferred
//!   reorder, placement thread-aware (§4.2 as the paper does it):
//!             ThreadAssigner -> Q equal queues, conflicting transactions together;
//!             Reorderer over the dependencies *between* queues -> defer a feedback vertex
//!             set of their cycles to the next batch; each queue in the plan's serial order
//!   reorder, placement components (the CLI's default with grouping):
//!             conflict components of the batch, joined with the connections whose running
//!             transactions they touch -> a component touching one busy connection goes
//!             there; one touching several is deferred; the free ones are packed (largest
//!             first) onto the least loaded idle connections
//! ```
//!
//! Why two placements: a cycle-free plan is all the paper's OCC validator needs, but
//! PostgreSQL's SSI also aborts a transaction with a read-write dependency in and another out
//! (a "dangerous structure") although no cycle exists, and with grouping a queue is one long
//! server transaction that easily has both. `components` leaves no dependency at all between
//! the connections of a batch, nor with the keys still running on other connections; the
//! deferred transactions cover every edge across connections, a superset of a feedback vertex
//! set.
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

named!(Mode { NoBatch => "nobatch", Batch => "batch", Reorder => "reorder" });

/// How `reorder` places a batch's transactions on connections (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Placement {
    ThreadAware,
    Components,
}

named!(Placement { ThreadAware => "thread-aware", Components => "components" });

/// What a transaction of the batch shares with transactions still queued or running on the
/// connections (rolling dispatch): nothing, keys of one connection, or keys of several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pin {
    #[default]
    Free,
    Connection(usize),
    Several,
}

impl Pin {
    /// The pin of a transaction that also touches connection `c`.
    pub fn and(self, c: usize) -> Pin {
        match self {
            Pin::Free => Pin::Connection(c),
            Pin::Connection(d) if d == c => self,
            _ => Pin::Several,
        }
    }
}

/// The connections' state a placement may look at: per batch position its pin, and per
/// connection the transactions queued or running there. Empty slices: all idle.
#[derive(Debug, Clone, Copy, Default)]
pub struct Busy<'a> {
    pub pins: &'a [Pin],
    pub loads: &'a [usize],
}

/// A component is deferred for touching several busy connections only while none of its
/// transactions has been restarted this often; after that it goes to one of them anyway, so
/// a transaction between two hot connections cannot wait forever.
pub const DEFERRALS_MAX: u32 = 4;

/// A batch's dispatch: `deferred` waits for the next batch; the queues run in order, each on
/// its own connection: `queues[c]` on connection `c` when `placed`, otherwise on whichever
/// connection the caller picks. All hold batch positions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchPlan {
    pub queues: Vec<Vec<usize>>,
    pub deferred: Vec<usize>,
    pub placed: bool,
}

/// Plans batches for `batch` or `reorder` mode, reusing its scratch space.
#[derive(Debug)]
pub struct Dispatcher {
    mode: Mode,
    placement: Placement,
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
    /// Union-find over the batch's positions and then one node per connection.
    parent: Vec<usize>,
    /// Per union-find root: its positions, and the connections joined to it.
    members: Vec<Vec<usize>>,
    joined: Vec<Pin>,
    components: Vec<usize>,
    idle: Vec<usize>,
}

impl Dispatcher {
    pub fn new(
        mode: Mode,
        placement: Placement,
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
            placement,
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
            parent: Vec::new(),
            members: Vec::new(),
            joined: Vec::new(),
            components: Vec::new(),
            idle: Vec::new(),
        })
    }

    /// Sets the transactions a queue is meant to hold (the group size, which the batch-size
    /// controller may change between batches); at least 1.
    pub fn set_queue_len_target(&mut self, queue_len_target: usize) {
        self.queue_len_target = queue_len_target.max(1);
    }

    /// Plans `batch` into `out`; `busy` describes the connections (components placement only).
    pub fn plan(&mut self, batch: &[TxnFootprint], busy: Busy<'_>, out: &mut BatchPlan) -> Result<(), ReorderError> {
        out.queues.resize_with(self.connections, Vec::new);
        out.queues.iter_mut().for_each(Vec::clear);
        out.deferred.clear();
        out.placed = false;
        let queues = self.connections.min(batch.len().div_ceil(self.queue_len_target)).max(1);
        match self.mode {
            Mode::NoBatch | Mode::Batch => {
                for position in 0..batch.len() {
                    out.queues[position % queues].push(position);
                }
            }
            Mode::Reorder if self.placement == Placement::Components => {
                self.place_components(batch, busy, queues, out);
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

    /// The components placement (module docs): `queues` is how many idle connections the free
    /// components may spread over.
    fn place_components(&mut self, batch: &[TxnFootprint], busy: Busy<'_>, queues: usize, out: &mut BatchPlan) {
        out.placed = true;
        let n = batch.len();
        let connections = self.connections;
        self.builder.build(batch, &mut self.full);
        self.parent.clear();
        self.parent.extend(0..n + connections);
        for (from, to) in self.full.edges() {
            union(&mut self.parent, from, to);
        }
        for (position, pin) in busy.pins.iter().enumerate() {
            if let Pin::Connection(c) = *pin {
                union(&mut self.parent, position, n + c);
            }
        }
        // Gather each root's positions and the connections joined to it.
        self.members.resize_with(n + connections, Vec::new);
        self.members.iter_mut().for_each(Vec::clear);
        self.joined.clear();
        self.joined.resize(n + connections, Pin::Free);
        for node in 0..n + connections {
            let root = find(&mut self.parent, node);
            if node < n {
                self.members[root].push(node);
                if busy.pins.get(node) == Some(&Pin::Several) {
                    self.joined[root] = Pin::Several;
                }
            } else {
                self.joined[root] = self.joined[root].and(node - n);
            }
        }
        // A component joined to one busy connection queues there; one joined to several waits
        // for the next batch (unless it has waited often enough); the free ones are packed,
        // largest first, each onto the idle connection whose queue is shortest so far.
        self.components.clear();
        for root in 0..n + connections {
            if self.members[root].is_empty() {
                continue;
            }
            match self.joined[root] {
                Pin::Free => self.components.push(root),
                Pin::Connection(c) => out.queues[c].extend_from_slice(&self.members[root]),
                Pin::Several => {
                    let starving = self.members[root].iter().any(|&p| batch[p].restarts >= DEFERRALS_MAX);
                    let pinned = self.members[root].iter().find_map(|&p| match busy.pins.get(p) {
                        Some(&Pin::Connection(c)) => Some(c),
                        _ => None,
                    });
                    match (starving, pinned) {
                        (true, Some(c)) => out.queues[c].extend_from_slice(&self.members[root]),
                        (true, None) => self.components.push(root),
                        (false, _) => out.deferred.extend_from_slice(&self.members[root]),
                    }
                }
            }
        }
        let load = |c: usize| busy.loads.get(c).copied().unwrap_or(0);
        self.idle.clear();
        self.idle.extend((0..connections).filter(|&c| out.queues[c].is_empty()));
        self.idle.sort_by_key(|&c| (load(c), c));
        self.idle.truncate(queues);
        if self.idle.is_empty() {
            // Every connection got a pinned component: free ones join the least loaded.
            self.idle.extend(0..connections);
            self.idle.sort_by_key(|&c| (load(c) + out.queues[c].len(), c));
            self.idle.truncate(queues);
        }
        let members = &self.members;
        self.components.sort_by_key(|&root| (std::cmp::Reverse(members[root].len()), root));
        for &root in &self.components {
            let c = *self.idle.iter().min_by_key(|&&c| out.queues[c].len()).expect("at least one connection");
            out.queues[c].extend_from_slice(&members[root]);
        }
        // Batch order within a queue: retried transactions were put first in the batch.
        for queue in &mut out.queues {
            queue.sort_unstable();
        }
        out.deferred.sort_unstable();
    }
}

fn find(parent: &mut [usize], mut node: usize) -> usize {
    while parent[node] != node {
        parent[node] = parent[parent[node]];
        node = parent[node];
    }
    node
}

/// Joins the sets of `a` and `b`; the smaller index becomes the root.
fn union(parent: &mut [usize], a: usize, b: usize) {
    let (a, b) = (find(parent, a), find(parent, b));
    if a != b {
        parent[a.max(b)] = a.min(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(mode: Mode, connections: usize, batch: &[TxnFootprint]) -> BatchPlan {
        plan_grouped(mode, Placement::ThreadAware, connections, 1, batch)
    }

    fn plan_grouped(
        mode: Mode,
        placement: Placement,
        connections: usize,
        group: usize,
        batch: &[TxnFootprint],
    ) -> BatchPlan {
        plan_mode(mode, placement, connections, group, batch, Busy::default())
    }

    fn plan_busy(
        placement: Placement,
        connections: usize,
        group: usize,
        batch: &[TxnFootprint],
        busy: Busy<'_>,
    ) -> BatchPlan {
        plan_mode(Mode::Reorder, placement, connections, group, batch, busy)
    }

    fn plan_mode(
        mode: Mode,
        placement: Placement,
        connections: usize,
        group: usize,
        batch: &[TxnFootprint],
        busy: Busy<'_>,
    ) -> BatchPlan {
        let mut out = BatchPlan::default();
        let mut dispatcher = Dispatcher::new(mode, placement, connections, group, FvsConfig::default()).unwrap();
        dispatcher.plan(batch, busy, &mut out).unwrap();
        out
    }

    #[test]
    fn grouping_plans_queues_of_about_a_group() {
        // 20 transactions on distinct keys, 8 connections, groups of 5: 4 queues of 5.
        let batch: Vec<TxnFootprint> = (0..20).map(|k| TxnFootprint::new(vec![k], vec![k])).collect();
        for (mode, placement) in [
            (Mode::Batch, Placement::ThreadAware),
            (Mode::Reorder, Placement::ThreadAware),
            (Mode::Reorder, Placement::Components),
        ] {
            let out = plan_mode(mode, placement, 8, 5, &batch, Busy::default());
            partition(&out, batch.len());
            let mut lengths: Vec<usize> = out.queues.iter().map(Vec::len).filter(|&n| n > 0).collect();
            lengths.sort_unstable();
            assert_eq!(lengths, vec![5, 5, 5, 5], "{} {}: {out:?}", mode.name(), placement.name());
        }
        // Never more queues than connections.
        let out = plan_grouped(Mode::Batch, Placement::ThreadAware, 2, 5, &batch);
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

    fn rmw(keys: &[u64]) -> TxnFootprint {
        TxnFootprint::new(keys.to_vec(), keys.to_vec())
    }

    fn queue_of(out: &BatchPlan, position: usize) -> Option<usize> {
        out.queues.iter().position(|q| q.contains(&position))
    }

    #[test]
    fn components_keep_every_conflict_on_one_connection() {
        // 0-1-2 chained through keys 1 and 2 (no cycle between any two connections would need
        // them together, but SSI's dangerous structures would); 3 and 4 share key 7; 5 alone.
        let batch = vec![rmw(&[1]), rmw(&[1, 2]), rmw(&[2]), rmw(&[7]), rmw(&[7, 8]), rmw(&[9])];
        let out = plan_busy(Placement::Components, 4, 2, &batch, Busy::default());
        partition(&out, batch.len());
        assert!(out.placed && out.deferred.is_empty(), "{out:?}");
        assert_eq!(queue_of(&out, 0), queue_of(&out, 1));
        assert_eq!(queue_of(&out, 1), queue_of(&out, 2));
        assert_eq!(queue_of(&out, 3), queue_of(&out, 4));
        assert_ne!(queue_of(&out, 0), queue_of(&out, 3), "free components spread: {out:?}");
        // ceil(6 / 2) = 3 queues at most, so 5 joins the shorter one and 3 connections are used.
        assert_eq!(out.queues.iter().filter(|q| !q.is_empty()).count(), 3, "{out:?}");
        for queue in &out.queues {
            assert!(queue.windows(2).all(|w| w[0] < w[1]), "batch order kept: {out:?}");
        }
    }

    #[test]
    fn components_follow_busy_connections_and_defer_bridges() {
        // 0 touches what connection 2 runs, 1 what connection 3 runs, 2 bridges both, 3 is free,
        // 4 is pinned to connection 2 by itself but shares key 5 with the bridge.
        let batch = vec![rmw(&[1]), rmw(&[2]), rmw(&[3]), rmw(&[4]), rmw(&[5])];
        let pins = [Pin::Connection(2), Pin::Connection(3), Pin::Several, Pin::Free, Pin::Free];
        let loads = [0, 0, 10, 10];
        let out = plan_busy(Placement::Components, 4, 16, &batch, Busy { pins: &pins, loads: &loads });
        partition(&out, batch.len());
        assert_eq!(queue_of(&out, 0), Some(2));
        assert_eq!(queue_of(&out, 1), Some(3));
        assert_eq!(out.deferred, vec![2]);
        assert_eq!(queue_of(&out, 3), Some(0), "a free component goes to the least loaded idle connection");
        // 4 alone is free (key 5 is nobody else's in this batch).
        assert!(matches!(queue_of(&out, 4), Some(0 | 1)));

        // A component that joins two busy connections through its members is deferred whole...
        let batch = vec![rmw(&[1, 9]), rmw(&[2, 9])];
        let pins = [Pin::Connection(0), Pin::Connection(1)];
        let out = plan_busy(Placement::Components, 2, 16, &batch, Busy { pins: &pins, loads: &[] });
        assert_eq!(out.deferred, vec![0, 1]);
        // ...until one of its members has waited DEFERRALS_MAX times: then it runs on one of them.
        let mut starving = batch.clone();
        starving[1].restarts = DEFERRALS_MAX;
        let out = plan_busy(Placement::Components, 2, 16, &starving, Busy { pins: &pins, loads: &[] });
        partition(&out, 2);
        assert!(out.deferred.is_empty());
        assert_eq!(queue_of(&out, 0), queue_of(&out, 1));
    }

    #[test]
    fn pins_combine() {
        assert_eq!(Pin::Free.and(3), Pin::Connection(3));
        assert_eq!(Pin::Connection(3).and(3), Pin::Connection(3));
        assert_eq!(Pin::Connection(3).and(4), Pin::Several);
        assert_eq!(Pin::Several.and(3), Pin::Several);
    }

    #[test]
    fn placement_names_round_trip() {
        for &placement in Placement::ALL {
            assert_eq!(placement.name().parse::<Placement>().unwrap(), placement);
        }
        assert!("spread".parse::<Placement>().unwrap_err().contains("thread-aware or components"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]

        /// Whatever the batch and the connections' state: the plan partitions the batch; no
        /// two connections of the plan share a dependency; a transaction touching one busy
        /// connection runs there; one touching several waits, unless it has waited too often.
        #[test]
        fn components_placement_invariants(
            txns in proptest::collection::vec(
                (proptest::collection::vec(0u64..40, 1..4), proptest::collection::vec(0u64..40, 0..3), 0u32..6),
                1..60,
            ),
            busy_keys in proptest::collection::vec(proptest::collection::vec(0u64..40, 0..4), 1..6),
            group in 1usize..20,
        ) {
            let connections = busy_keys.len();
            let batch: Vec<TxnFootprint> = txns
                .iter()
                .map(|(reads, writes, restarts)| {
                    let mut f = TxnFootprint::new(reads.clone(), writes.clone());
                    f.restarts = *restarts;
                    f
                })
                .collect();
            // A transaction is pinned by every connection whose busy keys it reads or writes.
            let pins: Vec<Pin> = batch
                .iter()
                .map(|f| {
                    busy_keys.iter().enumerate().fold(Pin::Free, |pin, (c, keys)| {
                        if f.reads.iter().chain(&f.writes).any(|k| keys.contains(k)) { pin.and(c) } else { pin }
                    })
                })
                .collect();
            let loads: Vec<usize> = busy_keys.iter().map(Vec::len).collect();
            let out = plan_busy(Placement::Components, connections, group, &batch, Busy { pins: &pins, loads: &loads });
            partition(&out, batch.len());
            proptest::prop_assert!(out.placed);
            let mut graph = DependencyGraph::default();
            GraphBuilder::new().build(&batch, &mut graph);
            for (from, to) in graph.edges() {
                let (a, b) = (queue_of(&out, from), queue_of(&out, to));
                proptest::prop_assert!(
                    a.is_none() || b.is_none() || a == b,
                    "{from} -> {to} runs on connections {a:?} and {b:?}: {out:?}"
                );
            }
            // The one exception: a component with a transaction deferred DEFERRALS_MAX times
            // runs anyway, on one of its connections.
            let starving = |q: usize| out.queues[q].iter().any(|&p| batch[p].restarts >= DEFERRALS_MAX);
            for (position, pin) in pins.iter().enumerate() {
                let Some(queue) = queue_of(&out, position) else { continue };
                match *pin {
                    Pin::Connection(c) => proptest::prop_assert!(
                        queue == c || starving(queue),
                        "{position} touches connection {c} only but runs on {queue}: {out:?}"
                    ),
                    Pin::Several => proptest::prop_assert!(
                        starving(queue),
                        "{position} touches several connections and was not deferred: {out:?}"
                    ),
                    Pin::Free => {}
                }
            }
            // Deferring is only for bridges: with nothing busy, nothing waits.
            let idle = plan_busy(Placement::Components, connections, group, &batch, Busy::default());
            proptest::prop_assert!(idle.deferred.is_empty());
        }
    }
}
