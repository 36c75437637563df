//! SCC-based greedy (Algorithm 1) and the hybrid that solves small SCCs exactly.
//!
//! ```text
//! trim; push every cyclic SCC
//! while a component S is pending:
//!     if hybrid and |S| <= m: solve S exactly
//!     else: abort the top-ranked vertex of S (degrees counted inside S),
//!           push the cyclic SCCs of S minus that vertex
//! ```
//!
//! The paper writes it recursively; here a stack of vertex sets replaces the recursion, and
//! Tarjan's algorithm on `S − v` also does the trimming (vertices on no cycle end up in
//! acyclic singleton components, which are dropped).

use crate::bitset::{self, Ones};
use crate::graph::DependencyGraph;
use crate::policy::{Policy, Score, VertexMeta};

use super::{FvsOutcome, FvsSolver, meta_of};

impl FvsSolver {
    pub(super) fn greedy_scc(
        &mut self,
        graph: &DependencyGraph,
        meta: &[VertexMeta],
        policy: Policy,
        max_exact: Option<usize>,
        out: &mut FvsOutcome,
    ) {
        let words = graph.words();
        self.pending.clear();
        let mut live = std::mem::take(&mut self.trimmed);
        self.residual.trimmed_graph(graph, &mut live);
        self.push_components(graph, &live);
        self.trimmed = live;

        let mut component = vec![0u64; words];
        while !self.pending.is_empty() {
            let start = self.pending.len() - words;
            component.copy_from_slice(&self.pending[start..]);
            self.pending.truncate(start);

            if let Some(max_exact) = max_exact
                && bitset::count(&component) <= max_exact
            {
                out.fell_back |= self.exact(graph, meta, &component, &mut out.fvs);
                continue;
            }

            let mut best = (Score::LOWEST, usize::MAX);
            for v in Ones::new(&component) {
                let in_degree = bitset::count_and(graph.predecessors(v), &component) as u32;
                let out_degree = bitset::count_and(graph.successors(v), &component) as u32;
                let score = policy.score(in_degree, out_degree, meta_of(meta, v), &mut self.rng);
                if best.1 == usize::MAX || score.outranks(best.0) {
                    best = (score, v);
                }
            }
            out.fvs.push(best.1);
            bitset::remove(&mut component, best.1);
            self.push_components(graph, &component);
        }
    }

    /// Pushes every cyclic SCC of the subgraph induced by `subset` onto `pending`.
    fn push_components(&mut self, graph: &DependencyGraph, subset: &[u64]) {
        let words = graph.words();
        self.components.compute(graph, subset);
        for i in 0..self.components.count() {
            let start = self.pending.len();
            self.pending.resize(start + words, 0);
            for &v in self.components.component(i) {
                bitset::insert(&mut self.pending[start..], v);
            }
        }
    }
}
