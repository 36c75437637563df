//! Sort-based greedy (Algorithm 2).
//!
//! ```text
//! trim
//! while the residual graph is not empty:
//!     k' = 1 if at most k vertices are left, else k
//!     abort the k' top-ranked vertices (quickselect), then trim
//! ```
//!
//! Ranks come from degrees in the whole residual graph, not per SCC, and all `k'` vertices of a
//! round are ranked once, before any of them is removed. That is what makes it cheap: no SCC
//! decomposition, one `O(|V|)` selection per round.
//!
//! *"< k" or "no more than k".* The pseudocode switches to `k = 1` when the graph has `< k`
//! vertices; the prose says "no more than k". ordo uses *no more than k* (`live <= k`): a
//! trimmed graph of exactly `k` vertices still contains a cycle, and aborting all `k` of them
//! at once can abort vertices whose removal was never needed, while rounds of one vertex stop
//! as soon as the graph is acyclic. The two readings differ only in that one case.

use crate::bitset::Ones;
use crate::graph::DependencyGraph;
use crate::policy::{Policy, Score};
use crate::policy::VertexMeta;

use super::{FvsSolver, meta_of};

impl FvsSolver {
    pub(super) fn greedy_sort(
        &mut self,
        graph: &DependencyGraph,
        meta: &[VertexMeta],
        policy: Policy,
        multi_factor: usize,
        fvs: &mut Vec<usize>,
    ) {
        self.residual.reset(graph);
        self.greedy_sort_residual(graph, meta, policy, multi_factor, fvs);
    }

    /// Sort-based greedy restricted to `subset` (prod-degree ranks of the configured policy,
    /// `k = 1`): the exact search's first upper bound.
    pub(super) fn greedy_sort_within(
        &mut self,
        graph: &DependencyGraph,
        meta: &[VertexMeta],
        subset: &[u64],
        fvs: &mut Vec<usize>,
    ) {
        fvs.clear();
        self.residual.reset_to(graph, subset);
        let policy = if self.config.policy == Policy::Random { Policy::ProdDegree } else { self.config.policy };
        self.greedy_sort_residual(graph, meta, policy, 1, fvs);
    }

    fn greedy_sort_residual(
        &mut self,
        graph: &DependencyGraph,
        meta: &[VertexMeta],
        policy: Policy,
        multi_factor: usize,
        fvs: &mut Vec<usize>,
    ) {
        self.residual.trim(graph);
        while !self.residual.is_empty() {
            let take = if self.residual.live_count() <= multi_factor { 1 } else { multi_factor };
            if take == 1 {
                let mut best = (Score::LOWEST, usize::MAX);
                for v in Ones::new(self.residual.live()) {
                    let score = policy.score(
                        self.residual.in_degree(v),
                        self.residual.out_degree(v),
                        meta_of(meta, v),
                        &mut self.rng,
                    );
                    if best.1 == usize::MAX || score.outranks(best.0) {
                        best = (score, v);
                    }
                }
                fvs.push(best.1);
                self.residual.remove(graph, best.1);
            } else {
                self.candidates.clear();
                for v in Ones::new(self.residual.live()) {
                    let score = policy.score(
                        self.residual.in_degree(v),
                        self.residual.out_degree(v),
                        meta_of(meta, v),
                        &mut self.rng,
                    );
                    self.candidates.push((score, v));
                }
                self.candidates
                    .select_nth_unstable_by(take - 1, |a, b| a.0.cmp_desc(b.0).then(a.1.cmp(&b.1)));
                for i in 0..take {
                    let v = self.candidates[i].1;
                    fvs.push(v);
                    self.residual.remove(graph, v);
                }
            }
            self.residual.trim(graph);
        }
    }
}
