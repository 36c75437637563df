//! The dependency graph of a batch (paper §3.2, §4).
//!
//! One vertex per transaction of the batch, numbered by its position in the batch. The graph
//! is stored twice as a bit matrix, once by rows of successors and once by rows of
//! predecessors, so that both degrees of a vertex inside any vertex subset are a few
//! `popcount`s.
//!
//! Building it from footprints goes through a key-to-writers index: every written key points
//! at a linked list of the positions that write it, and every read probes that list. The cost
//! is `O(|R| + |W| + |E|)` (reads, writes, edges found) instead of comparing all pairs.

use foldhash::HashMap;

use crate::bitset::{self, Ones};
use crate::error::ReorderError;

/// What the reorderer needs to know about one transaction of a batch.
///
/// Keys are opaque `u64`s; a workload with several tables folds the table into the key.
pub trait Footprint {
    /// Keys the transaction read (duplicates are harmless).
    fn read_keys(&self) -> impl Iterator<Item = u64> + '_;
    /// Keys the transaction will write (duplicates are harmless).
    fn write_keys(&self) -> impl Iterator<Item = u64> + '_;
    /// How many times the transaction has already been aborted and restarted.
    fn restarts(&self) -> u32 {
        0
    }
    /// Business value or priority; the `value` policy aborts the lowest first.
    fn value(&self) -> f64 {
        1.0
    }
}

impl<T: Footprint + ?Sized> Footprint for Box<T> {
    fn read_keys(&self) -> impl Iterator<Item = u64> + '_ {
        (**self).read_keys()
    }
    fn write_keys(&self) -> impl Iterator<Item = u64> + '_ {
        (**self).write_keys()
    }
    fn restarts(&self) -> u32 {
        (**self).restarts()
    }
    fn value(&self) -> f64 {
        (**self).value()
    }
}

/// A plain owned footprint, for callers that do not have their own transaction type.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TxnFootprint {
    pub reads: Vec<u64>,
    pub writes: Vec<u64>,
    pub restarts: u32,
    pub value: f64,
}

impl TxnFootprint {
    pub fn new(reads: Vec<u64>, writes: Vec<u64>) -> Self {
        TxnFootprint { reads, writes, restarts: 0, value: 1.0 }
    }
}

impl Footprint for TxnFootprint {
    fn read_keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.reads.iter().copied()
    }
    fn write_keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.writes.iter().copied()
    }
    fn restarts(&self) -> u32 {
        self.restarts
    }
    fn value(&self) -> f64 {
        self.value
    }
}

/// Directed dependency graph over the transactions `0..len()` of one batch.
///
/// **Edge direction.** An edge `u → v` means that `u` reads a key that `v` writes, so `u` must
/// be validated (serialized) before `v`: validated after `v`, `u`'s read would be stale and
/// backward validation would abort it. A serialization order that commits every vertex is
/// therefore a topological order of the graph, sources first, and a feedback vertex set is
/// exactly a set of transactions whose abort makes such an order exist.
#[derive(Debug, Clone, Default)]
pub struct DependencyGraph {
    len: usize,
    words: usize,
    successors: Vec<u64>,
    predecessors: Vec<u64>,
    edges: usize,
}

impl DependencyGraph {
    /// An edgeless graph on `len` vertices.
    pub fn new(len: usize) -> Self {
        let mut graph = DependencyGraph::default();
        graph.reset(len);
        graph
    }

    /// Clears the graph and resizes it to `len` vertices, keeping the allocation.
    pub fn reset(&mut self, len: usize) {
        self.len = len;
        self.words = bitset::words_for(len);
        self.successors.clear();
        self.successors.resize(len * self.words, 0);
        self.predecessors.clear();
        self.predecessors.resize(len * self.words, 0);
        self.edges = 0;
    }

    /// A graph from an explicit edge list (used by the CLI and by tests).
    pub fn from_edges(len: usize, edges: &[(usize, usize)]) -> Result<Self, ReorderError> {
        let mut graph = DependencyGraph::new(len);
        for (index, &(from, to)) in edges.iter().enumerate() {
            if from >= len || to >= len {
                return Err(ReorderError::EdgeOutOfRange { index, from, to, vertices: len });
            }
            graph.add_edge(from, to);
        }
        Ok(graph)
    }

    /// Number of vertices.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Words per adjacency row; every vertex set over this graph has this many words.
    #[inline]
    pub fn words(&self) -> usize {
        self.words
    }

    /// Number of distinct edges.
    #[inline]
    pub fn edge_count(&self) -> usize {
        self.edges
    }

    /// Adds `from → to` (`from` must be serialized before `to`). Idempotent. A self-loop is
    /// allowed and forces its vertex into every feedback vertex set.
    #[inline]
    pub fn add_edge(&mut self, from: usize, to: usize) {
        let row = from * self.words;
        if bitset::contains(&self.successors[row..row + self.words], to) {
            return;
        }
        bitset::insert(&mut self.successors[row..row + self.words], to);
        let col = to * self.words;
        bitset::insert(&mut self.predecessors[col..col + self.words], from);
        self.edges += 1;
    }

    #[inline]
    pub fn has_edge(&self, from: usize, to: usize) -> bool {
        bitset::contains(self.successors(from), to)
    }

    /// The vertices `v` with an edge `vertex → v`.
    #[inline]
    pub fn successors(&self, vertex: usize) -> &[u64] {
        &self.successors[vertex * self.words..(vertex + 1) * self.words]
    }

    /// The vertices `u` with an edge `u → vertex`.
    #[inline]
    pub fn predecessors(&self, vertex: usize) -> &[u64] {
        &self.predecessors[vertex * self.words..(vertex + 1) * self.words]
    }

    /// All successor rows back to back (`words()` words per vertex).
    #[inline]
    pub fn successor_rows(&self) -> &[u64] {
        &self.successors
    }

    /// All predecessor rows back to back (`words()` words per vertex).
    #[inline]
    pub fn predecessor_rows(&self) -> &[u64] {
        &self.predecessors
    }

    /// Every edge as `(from, to)`, in increasing order.
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.len).flat_map(move |from| Ones::new(self.successors(from)).map(move |to| (from, to)))
    }

    /// Whether the subgraph induced by `subset` has no cycle.
    pub fn is_acyclic_within(&self, subset: &[u64]) -> bool {
        // Kahn's algorithm on the induced subgraph.
        let mut remaining = subset.to_vec();
        let mut in_degree: Vec<usize> = vec![0; self.len];
        let mut ready = Vec::new();
        for v in Ones::new(subset) {
            in_degree[v] = bitset::count_and(self.predecessors(v), subset);
            if in_degree[v] == 0 {
                ready.push(v);
            }
        }
        while let Some(v) = ready.pop() {
            bitset::remove(&mut remaining, v);
            for w in bitset::OnesAnd::new(self.successors(v), subset) {
                in_degree[w] -= 1;
                if in_degree[w] == 0 {
                    ready.push(w);
                }
            }
        }
        bitset::is_empty(&remaining)
    }
}

const NO_ENTRY: u32 = u32::MAX;

/// Builds dependency graphs from batches of footprints, reusing its index between batches.
#[derive(Debug, Default)]
pub struct GraphBuilder {
    /// Key -> most recent entry in `entries` for a writer of that key.
    first_writer: HashMap<u64, u32>,
    /// Singly linked lists of `(writer position, next entry)`.
    entries: Vec<(u32, u32)>,
}

impl GraphBuilder {
    pub fn new() -> Self {
        GraphBuilder::default()
    }

    /// Rebuilds `graph` as the dependency graph of `batch`.
    pub fn build<F: Footprint>(&mut self, batch: &[F], graph: &mut DependencyGraph) {
        graph.reset(batch.len());
        self.first_writer.clear();
        self.entries.clear();
        for (writer, txn) in batch.iter().enumerate() {
            for key in txn.write_keys() {
                let entry = self.entries.len() as u32;
                let next = self.first_writer.insert(key, entry).unwrap_or(NO_ENTRY);
                self.entries.push((writer as u32, next));
            }
        }
        for (reader, txn) in batch.iter().enumerate() {
            for key in txn.read_keys() {
                let mut entry = self.first_writer.get(&key).copied().unwrap_or(NO_ENTRY);
                while entry != NO_ENTRY {
                    let (writer, next) = self.entries[entry as usize];
                    if writer as usize != reader {
                        graph.add_edge(reader, writer as usize);
                    }
                    entry = next;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_points_at_writer() {
        let batch = vec![
            TxnFootprint::new(vec![1], vec![2]),
            TxnFootprint::new(vec![2], vec![1]),
            TxnFootprint::new(vec![3], vec![3]),
        ];
        let mut graph = DependencyGraph::default();
        GraphBuilder::new().build(&batch, &mut graph);
        assert_eq!(graph.edges().collect::<Vec<_>>(), vec![(0, 1), (1, 0)]);
        assert!(!graph.has_edge(2, 2), "reading your own write is not a dependency");
    }

    #[test]
    fn out_of_range_edge_is_an_error() {
        let err = DependencyGraph::from_edges(2, &[(0, 1), (1, 2)]).unwrap_err();
        assert_eq!(err, ReorderError::EdgeOutOfRange { index: 1, from: 1, to: 2, vertices: 2 });
    }
}
