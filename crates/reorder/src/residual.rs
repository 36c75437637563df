//! The residual graph: what is left of a dependency graph while a solver removes vertices.
//!
//! It keeps the set of live vertices and, for each, its in- and out-degree counted among live
//! vertices only, updated incrementally on every removal (`O(words + degree)`). *Trimming*
//! (§4) repeatedly removes live vertices with no live predecessor or no live successor: such
//! vertices lie on no cycle, so they never need to be aborted.
//!
//! Invariant: for every live `v`, `in_degree[v] == |pred(v) ∩ live|` and
//! `out_degree[v] == |succ(v) ∩ live|` (checked by `debug_check`).

use crate::bitset::{self, Ones, OnesAnd};
use crate::graph::DependencyGraph;

#[derive(Debug, Clone, Default)]
pub struct Residual {
    live: Vec<u64>,
    in_degree: Vec<u32>,
    out_degree: Vec<u32>,
    live_count: usize,
    queue: Vec<usize>,
}

impl Residual {
    /// Resets to "every vertex of `graph` is live".
    pub fn reset(&mut self, graph: &DependencyGraph) {
        let words = graph.words();
        self.live.clear();
        self.live.resize(words, 0);
        bitset::fill(&mut self.live, graph.len());
        self.recount(graph);
    }

    /// Resets to "exactly the vertices of `subset` are live".
    pub fn reset_to(&mut self, graph: &DependencyGraph, subset: &[u64]) {
        self.live.clear();
        self.live.extend_from_slice(subset);
        self.recount(graph);
    }

    fn recount(&mut self, graph: &DependencyGraph) {
        let len = graph.len();
        self.in_degree.clear();
        self.in_degree.resize(len, 0);
        self.out_degree.clear();
        self.out_degree.resize(len, 0);
        self.live_count = 0;
        for v in Ones::new(&self.live) {
            self.in_degree[v] = bitset::count_and(graph.predecessors(v), &self.live) as u32;
            self.out_degree[v] = bitset::count_and(graph.successors(v), &self.live) as u32;
            self.live_count += 1;
        }
    }

    #[inline]
    pub fn live(&self) -> &[u64] {
        &self.live
    }

    #[inline]
    pub fn live_count(&self) -> usize {
        self.live_count
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.live_count == 0
    }

    #[inline]
    pub fn is_live(&self, v: usize) -> bool {
        bitset::contains(&self.live, v)
    }

    #[inline]
    pub fn in_degree(&self, v: usize) -> u32 {
        self.in_degree[v]
    }

    #[inline]
    pub fn out_degree(&self, v: usize) -> u32 {
        self.out_degree[v]
    }

    /// Removes a live vertex and updates its live neighbours' degrees.
    pub fn remove(&mut self, graph: &DependencyGraph, v: usize) {
        debug_assert!(self.is_live(v), "vertex {v} removed twice");
        bitset::remove(&mut self.live, v);
        self.live_count -= 1;
        for w in OnesAnd::new(graph.successors(v), &self.live) {
            self.in_degree[w] -= 1;
        }
        for u in OnesAnd::new(graph.predecessors(v), &self.live) {
            self.out_degree[u] -= 1;
        }
    }

    /// Removes every live vertex that cannot be on a cycle (no live predecessor or no live
    /// successor), repeatedly, until none is left. Returns how many were removed.
    pub fn trim(&mut self, graph: &DependencyGraph) -> usize {
        let before = self.live_count;
        self.queue.clear();
        for v in Ones::new(&self.live) {
            if self.in_degree[v] == 0 || self.out_degree[v] == 0 {
                self.queue.push(v);
            }
        }
        while let Some(v) = self.queue.pop() {
            if !self.is_live(v) {
                continue;
            }
            bitset::remove(&mut self.live, v);
            self.live_count -= 1;
            for w in OnesAnd::new(graph.successors(v), &self.live) {
                self.in_degree[w] -= 1;
                if self.in_degree[w] == 0 {
                    self.queue.push(w);
                }
            }
            for u in OnesAnd::new(graph.predecessors(v), &self.live) {
                self.out_degree[u] -= 1;
                if self.out_degree[u] == 0 {
                    self.queue.push(u);
                }
            }
        }
        self.debug_check(graph);
        before - self.live_count
    }

    fn debug_check(&self, graph: &DependencyGraph) {
        if cfg!(debug_assertions) {
            for v in Ones::new(&self.live) {
                debug_assert_eq!(self.in_degree[v] as usize, bitset::count_and(graph.predecessors(v), &self.live));
                debug_assert_eq!(self.out_degree[v] as usize, bitset::count_and(graph.successors(v), &self.live));
            }
        }
    }
}

/// Trims a graph of at most 64 vertices whose live set fits in one word: the same fixed point
/// as [`Residual::trim`], by repeated passes of two `AND`s per vertex, without degree counts.
#[inline]
pub fn trim_single_word(graph: &DependencyGraph, mut live: u64) -> u64 {
    debug_assert_eq!(graph.words(), 1);
    let (successors, predecessors) = (graph.successor_rows(), graph.predecessor_rows());
    loop {
        let before = live;
        let mut rest = live;
        while rest != 0 {
            let v = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            if successors[v] & live == 0 || predecessors[v] & live == 0 {
                live &= !(1u64 << v);
            }
        }
        if live == before {
            return live;
        }
    }
}

impl Residual {
    /// Writes the trimmed vertex set of the whole graph to `out` (`graph.words()` words).
    pub fn trimmed_graph(&mut self, graph: &DependencyGraph, out: &mut Vec<u64>) {
        out.clear();
        if graph.words() == 1 {
            let all = if graph.len() == 64 { u64::MAX } else { (1u64 << graph.len()) - 1 };
            out.push(trim_single_word(graph, all));
        } else {
            self.reset(graph);
            self.trim(graph);
            out.extend_from_slice(&self.live);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_keeps_only_cycles_and_what_lies_between_them() {
        // 0 -> 1 -> 2 -> 1 (a 2-cycle fed by 0), 2 -> 3 (a sink)
        let graph = DependencyGraph::from_edges(4, &[(0, 1), (1, 2), (2, 1), (2, 3)]).unwrap();
        let mut residual = Residual::default();
        residual.reset(&graph);
        assert_eq!(residual.trim(&graph), 2);
        assert_eq!(Ones::new(residual.live()).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!((residual.in_degree(1), residual.out_degree(1)), (1, 1));
        residual.remove(&graph, 1);
        residual.trim(&graph);
        assert!(residual.is_empty());
    }
}
