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
use crate::policy::VertexMeta;
use crate::policy::{Policy, Score};
use crate::residual::trim_single_word;

use super::{FvsSolver, meta_of};

impl FvsSolver {
    /// Sort-based greedy on the subgraph induced by `subset` (the whole graph when `None`),
    /// appending the aborted vertices to `fvs`.
    pub(super) fn greedy_sort(
        &mut self,
        graph: &DependencyGraph,
        meta: &[VertexMeta],
        policy: Policy,
        multi_factor: usize,
        subset: Option<&[u64]>,
        fvs: &mut Vec<usize>,
    ) {
        if graph.words() == 1 {
            let all = if graph.len() == 64 { u64::MAX } else { (1u64 << graph.len()) - 1 };
            let live = subset.map_or(all, |s| s[0]);
            self.greedy_sort_single_word(graph, meta, policy, multi_factor, live, fvs);
            return;
        }
        match subset {
            Some(subset) => self.residual.reset_to(graph, subset),
            None => self.residual.reset(graph),
        }
        self.greedy_sort_residual(graph, meta, policy, multi_factor, fvs);
    }

    /// The same algorithm for graphs of at most 64 vertices (the usual batch), with the live
    /// set in one machine word and degrees recomputed by `popcount` instead of maintained.
    fn greedy_sort_single_word(
        &mut self,
        graph: &DependencyGraph,
        meta: &[VertexMeta],
        policy: Policy,
        multi_factor: usize,
        live: u64,
        fvs: &mut Vec<usize>,
    ) {
        let row = |rows: &[u64], v: usize| rows[v];
        let (successors, predecessors) = (graph.successor_rows(), graph.predecessor_rows());
        let trim = |live: u64| trim_single_word(graph, live);
        let mut live = trim(live);
        while live != 0 {
            let take = if live.count_ones() as usize <= multi_factor { 1 } else { multi_factor };
            self.candidates.clear();
            let mut rest = live;
            while rest != 0 {
                let v = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let in_degree = (row(predecessors, v) & live).count_ones();
                let out_degree = (row(successors, v) & live).count_ones();
                self.candidates.push((policy.score(in_degree, out_degree, meta_of(meta, v), &mut self.rng), v));
            }
            if take == 1 {
                let mut best = self.candidates[0];
                for &candidate in &self.candidates[1..] {
                    if candidate.0.outranks(best.0) {
                        best = candidate;
                    }
                }
                self.candidates[0] = best;
            } else {
                self.candidates.select_nth_unstable_by(take - 1, |a, b| a.0.cmp_desc(b.0).then(a.1.cmp(&b.1)));
            }
            for &(_, v) in &self.candidates[..take] {
                fvs.push(v);
                live &= !(1u64 << v);
            }
            live = trim(live);
        }
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
                self.candidates.select_nth_unstable_by(take - 1, |a, b| a.0.cmp_desc(b.0).then(a.1.cmp(&b.1)));
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
