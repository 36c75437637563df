//! Strongly connected components (Tarjan 1972), iterative so that no batch size can overflow
//! the call stack.
//!
//! Every cycle lies inside one strongly connected component, so the SCC-based solvers
//! (Algorithm 1, the hybrid, the exact search) work component by component. Components of
//! one vertex without a self-loop are acyclic and are never reported.

use crate::bitset::{self, Ones};
use crate::graph::DependencyGraph;

const UNVISITED: u32 = u32::MAX;

/// Reusable scratch space for Tarjan's algorithm.
#[derive(Debug, Clone, Default)]
pub struct Components {
    index: Vec<u32>,
    low_link: Vec<u32>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    /// DFS frames: (vertex, next successor to look at).
    frames: Vec<(usize, usize)>,
    /// Members of every reported component, back to back.
    members: Vec<usize>,
    /// `members[bounds[i]..bounds[i + 1]]` is component `i`.
    bounds: Vec<usize>,
}

impl Components {
    /// Computes the cyclic strongly connected components of the subgraph induced by `subset`.
    pub fn compute(&mut self, graph: &DependencyGraph, subset: &[u64]) {
        self.compute_rows(graph.len(), subset, |v| graph.successors(v));
    }

    /// Same, for a graph given by its successor rows (vertices `0..len`).
    pub fn compute_rows<'g>(&mut self, len: usize, subset: &[u64], successors_of: impl Fn(usize) -> &'g [u64]) {
        self.index.clear();
        self.index.resize(len, UNVISITED);
        self.low_link.clear();
        self.low_link.resize(len, 0);
        self.on_stack.clear();
        self.on_stack.resize(len, false);
        self.stack.clear();
        self.members.clear();
        self.bounds.clear();
        self.bounds.push(0);
        let mut next_index = 0u32;

        for root in Ones::new(subset) {
            if self.index[root] != UNVISITED {
                continue;
            }
            self.visit(root, &mut next_index);
            while let Some(&mut (v, ref mut cursor)) = self.frames.last_mut() {
                let successors = successors_of(v);
                // Next successor of `v` inside `subset`, at or after `cursor`.
                let mut next = None;
                let mut at = *cursor;
                while let Some(w) = bitset::next_at_or_after(successors, at) {
                    if bitset::contains(subset, w) {
                        next = Some(w);
                        break;
                    }
                    at = w + 1;
                }
                match next {
                    Some(w) => {
                        *cursor = w + 1;
                        if self.index[w] == UNVISITED {
                            self.visit(w, &mut next_index);
                        } else if self.on_stack[w] {
                            self.low_link[v] = self.low_link[v].min(self.index[w]);
                        }
                    }
                    None => {
                        self.frames.pop();
                        if let Some(&(parent, _)) = self.frames.last() {
                            self.low_link[parent] = self.low_link[parent].min(self.low_link[v]);
                        }
                        if self.low_link[v] == self.index[v] {
                            self.pop_component(v, bitset::contains(successors_of(v), v));
                        }
                    }
                }
            }
        }
    }

    fn visit(&mut self, v: usize, next_index: &mut u32) {
        self.index[v] = *next_index;
        self.low_link[v] = *next_index;
        *next_index += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        self.frames.push((v, 0));
    }

    fn pop_component(&mut self, root: usize, root_has_self_loop: bool) {
        let start = self.members.len();
        loop {
            let w = self.stack.pop().expect("Tarjan stack holds the component root");
            self.on_stack[w] = false;
            self.members.push(w);
            if w == root {
                break;
            }
        }
        let size = self.members.len() - start;
        if size > 1 || root_has_self_loop {
            self.members[start..].sort_unstable();
            self.bounds.push(self.members.len());
        } else {
            self.members.truncate(start);
        }
    }

    /// Number of cyclic components found.
    pub fn count(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Members of component `i`, sorted.
    pub fn component(&self, i: usize) -> &[usize] {
        &self.members[self.bounds[i]..self.bounds[i + 1]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn components(len: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
        let graph = DependencyGraph::from_edges(len, edges).unwrap();
        let mut all = vec![0u64; graph.words()];
        bitset::fill(&mut all, len);
        let mut scc = Components::default();
        scc.compute(&graph, &all);
        let mut out: Vec<Vec<usize>> = (0..scc.count()).map(|i| scc.component(i).to_vec()).collect();
        out.sort();
        out
    }

    #[test]
    fn finds_cycles_and_drops_acyclic_singletons() {
        let found = components(6, &[(0, 1), (1, 0), (1, 2), (2, 3), (3, 4), (4, 2), (5, 5)]);
        assert_eq!(found, vec![vec![0, 1], vec![2, 3, 4], vec![5]]);
    }

    #[test]
    fn long_path_does_not_overflow_the_stack() {
        let len = 20_000;
        let mut edges: Vec<(usize, usize)> = (0..len - 1).map(|v| (v, v + 1)).collect();
        edges.push((len - 1, 0));
        let found = components(len, &edges);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].len(), len);
    }
}
