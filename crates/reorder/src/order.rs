//! Serialization order for the transactions a plan keeps.
//!
//! With the feedback vertex set removed the graph is acyclic, and validating the kept
//! transactions in a topological order (sources first: a reader before the writers of what it
//! read) commits every one of them. Among the ready transactions the one that came first in
//! the batch goes first, so the order is deterministic and stays close to arrival order.

use crate::bitset::{self, OnesAnd};
use crate::graph::DependencyGraph;

/// Reusable scratch for [`SerialOrder::compute`].
#[derive(Debug, Clone, Default)]
pub struct SerialOrder {
    kept: Vec<u64>,
    ready: Vec<u64>,
    in_degree: Vec<u32>,
}

impl SerialOrder {
    /// Appends to `order` a topological order of the vertices not in `abort`. If the rest is
    /// not acyclic (a caller bug), the vertices left on cycles are appended to `abort`
    /// instead, so the plan stays safe.
    pub fn compute(&mut self, graph: &DependencyGraph, abort: &mut Vec<usize>, order: &mut Vec<usize>) {
        let words = graph.words();
        self.kept.clear();
        self.kept.resize(words, 0);
        bitset::fill(&mut self.kept, graph.len());
        for &v in abort.iter() {
            bitset::remove(&mut self.kept, v);
        }
        self.ready.clear();
        self.ready.resize(words, 0);
        self.in_degree.clear();
        self.in_degree.resize(graph.len(), 0);
        for v in bitset::Ones::new(&self.kept) {
            let degree = bitset::count_and(graph.predecessors(v), &self.kept) as u32;
            self.in_degree[v] = degree;
            if degree == 0 {
                bitset::insert(&mut self.ready, v);
            }
        }
        let start = order.len();
        while let Some(v) = bitset::next_at_or_after(&self.ready, 0) {
            bitset::remove(&mut self.ready, v);
            order.push(v);
            for w in OnesAnd::new(graph.successors(v), &self.kept) {
                self.in_degree[w] -= 1;
                if self.in_degree[w] == 0 {
                    bitset::insert(&mut self.ready, w);
                }
            }
        }
        let ordered = order.len() - start;
        let kept = bitset::count(&self.kept);
        debug_assert_eq!(ordered, kept, "aborted set is not a feedback vertex set");
        if ordered != kept {
            for &v in &order[start..] {
                bitset::remove(&mut self.kept, v);
            }
            abort.extend(bitset::Ones::new(&self.kept));
        }
    }
}
