//! The dependency graph of a history (Adya's direct serialization graph) and how a cycle in
//! it is found.
//!
//! One vertex per committed transaction. Edges come from two sorted tables, the writes
//! ([`VersionOrder`]) and the reads, both ordered by `(table, key, version)`, walked side by
//! side. A read here is a point read, a row a scan listed, or a key a scan saw absent (read at
//! its absent version, so that the rw edge out of it is the phantom anti-dependency):
//!
//! ```text
//!  ww  writer of version v        -> writer of the next version of the key
//!  wr  writer of version v        -> each reader of v (other than the writer)
//!  rw  each reader of version v   -> writer of the next version (other than the reader)
//! ```
//!
//! A read of version 0 (the initial value) has no writer, and its rw edge goes to the first
//! writer of the key. Only the next version is linked, not every later one: the ww chain
//! carries the order on to the rest, so `O(reads + writes)` edges suffice.
//!
//! The graph is stored compressed (CSR): the successors of vertex `v` are
//! `targets[offsets[v]..offsets[v + 1]]`, filled in two passes over the tables (count, then
//! place), so no edge list is ever materialized. Each edge keeps the index of the operation
//! that justifies it (`via`: a write's position for ww, `writes + read's position` for wr and
//! rw), from which the cycle report recovers kind and key.
//!
//! Finding a cycle is an iterative depth-first search (an explicit stack of `(vertex, next
//! edge)` frames, so millions of transactions cannot overflow the call stack). Meeting a
//! vertex still on the stack proves it lies on a cycle; a breadth-first search from that
//! vertex then returns the shortest cycle through it, which is what a person debugging an
//! engine wants to read.
//!
//! Snapshot isolation's search ([`DependencyGraph::find_snapshot_cycle`]) runs the same two
//! searches over walk states instead of vertices: state `2v` is "at `v`, entered by a ww or wr
//! edge (or starting there)", `2v + 1` is "at `v`, entered by an rw edge", and an rw edge may
//! not leave a state of the second kind. A cycle among these states is a closed walk of the
//! graph in which no anti-dependency follows another, around the end too (the state the walk
//! returns to records how it was entered): exactly what SI forbids.

use crate::versions::{Operation, TxnIndex, VersionOrder};
use crate::violation::DependencyKind;

/// A read whose version no committed transaction wrote: its position in the sorted reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnwrittenRead(pub usize);

#[derive(Debug)]
pub(crate) struct DependencyGraph<'h> {
    writes: &'h [Operation],
    reads: &'h [Operation],
    offsets: Vec<usize>,
    targets: Vec<TxnIndex>,
    via: Vec<u32>,
    /// Edges of each kind, indexed by [`kind_index`].
    counts: [usize; 3],
}

/// One edge of a cycle: source, kind and the operation that justifies it (a write for ww, a
/// read for wr and rw); the target is the next edge's source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edge {
    pub from: TxnIndex,
    pub to: TxnIndex,
    pub kind: DependencyKind,
    pub via: Operation,
}

fn kind_index(kind: DependencyKind) -> usize {
    match kind {
        DependencyKind::WriteWrite => 0,
        DependencyKind::WriteRead => 1,
        DependencyKind::ReadWrite => 2,
    }
}

const UNVISITED: u8 = 0;
const ON_STACK: u8 = 1;
const FINISHED: u8 = 2;

impl<'h> DependencyGraph<'h> {
    /// Builds the graph of `transactions` vertices from the version order and the reads sorted
    /// by `(table, key, version, txn)`, or names the first read of a version nobody wrote.
    pub fn build(transactions: usize, order: &'h VersionOrder, reads: &'h [Operation]) -> Result<Self, UnwrittenRead> {
        let mut graph = DependencyGraph {
            writes: &order.writes,
            reads,
            offsets: vec![0; transactions + 1],
            targets: Vec::new(),
            via: Vec::new(),
            counts: [0; 3],
        };
        debug_assert!(reads.is_sorted());
        debug_assert!(u32::try_from(graph.writes.len() + reads.len()).is_ok());

        // Pass 1: out-degrees (shifted by one, so the prefix sum leaves start offsets).
        let mut counts = [0; 3];
        let (writes, offsets) = (graph.writes, &mut graph.offsets);
        for_each_dependency(writes, reads, |from, _, via| {
            offsets[from as usize + 1] += 1;
            counts[kind_index(classify(writes, reads, from, via))] += 1;
        })?;
        for v in 0..transactions {
            graph.offsets[v + 1] += graph.offsets[v];
        }
        graph.counts = counts;

        // Pass 2: place every edge at its source's next free slot.
        let edges = graph.offsets[transactions];
        graph.targets = vec![0; edges];
        graph.via = vec![0; edges];
        let mut next_slot = graph.offsets[..transactions].to_vec();
        let (targets, via_of) = (&mut graph.targets, &mut graph.via);
        for_each_dependency(writes, reads, |from, to, via| {
            let slot = &mut next_slot[from as usize];
            targets[*slot] = to;
            via_of[*slot] = via;
            *slot += 1;
        })?;
        Ok(graph)
    }

    /// Number of edges of `kind`.
    pub fn edge_count(&self, kind: DependencyKind) -> usize {
        self.counts[kind_index(kind)]
    }

    fn transactions(&self) -> usize {
        self.offsets.len() - 1
    }

    fn edges_from(&self, v: TxnIndex) -> std::ops::Range<usize> {
        self.offsets[v as usize]..self.offsets[v as usize + 1]
    }

    fn edge(&self, from: TxnIndex, slot: usize) -> Edge {
        let via = self.via[slot];
        let kind = classify(self.writes, self.reads, from, via);
        let via = match kind {
            DependencyKind::WriteWrite => self.writes[via as usize],
            DependencyKind::WriteRead | DependencyKind::ReadWrite => self.reads[via as usize - self.writes.len()],
        };
        Edge { from, to: self.targets[slot], kind, via }
    }

    /// One shortest cycle through some vertex that lies on a cycle, or `None` if the graph is
    /// acyclic. `O(V + E)` time, `O(V)` extra space.
    pub fn find_cycle(&self) -> Option<Vec<Edge>> {
        self.find_closed_walk(Walks::Any)
    }

    /// One closed walk in which no two anti-dependencies follow each other (the last edge and
    /// the first count as following each other), or `None` if there is none: the cycles
    /// snapshot isolation forbids. Twice the states of [`Self::find_cycle`].
    pub fn find_snapshot_cycle(&self) -> Option<Vec<Edge>> {
        self.find_closed_walk(Walks::NoAdjacentAntiDependencies)
    }

    /// Depth-first search over the walk states of `walks` for one that lies on a closed walk,
    /// then the shortest closed walk through it.
    fn find_closed_walk(&self, walks: Walks) -> Option<Vec<Edge>> {
        let width = walks.states_per_vertex();
        let mut state = vec![UNVISITED; self.transactions() * width];
        let mut frames: Vec<(usize, usize)> = Vec::new();
        for root in 0..state.len() {
            if state[root] != UNVISITED {
                continue;
            }
            state[root] = ON_STACK;
            frames.push((root, self.offsets[root / width]));
            while let Some(&mut (s, ref mut cursor)) = frames.last_mut() {
                if *cursor == self.offsets[s / width + 1] {
                    state[s] = FINISHED;
                    frames.pop();
                    continue;
                }
                let slot = *cursor;
                *cursor += 1;
                let Some(t) = self.step(walks, s, slot) else { continue };
                match state[t] {
                    UNVISITED => {
                        state[t] = ON_STACK;
                        frames.push((t, self.offsets[t / width]));
                    }
                    ON_STACK => return Some(self.shortest_walk_through(walks, t)),
                    _ => {}
                }
            }
        }
        None
    }

    /// The walk state that the edge in `slot` leads to from walk state `s`, or `None` when
    /// `walks` may not take it there.
    fn step(&self, walks: Walks, s: usize, slot: usize) -> Option<usize> {
        let to = self.targets[slot] as usize;
        match walks {
            Walks::Any => Some(to),
            Walks::NoAdjacentAntiDependencies => {
                let from = (s / 2) as TxnIndex;
                let anti = classify(self.writes, self.reads, from, self.via[slot]) == DependencyKind::ReadWrite;
                let entered_by_anti = s % 2 == 1;
                (!(anti && entered_by_anti)).then_some(to * 2 + usize::from(anti))
            }
        }
    }

    /// Breadth-first search from walk state `start` until an edge leads back to it.
    fn shortest_walk_through(&self, walks: Walks, start: usize) -> Vec<Edge> {
        const NO_PARENT: usize = usize::MAX;
        let width = walks.states_per_vertex();
        let states = self.transactions() * width;
        // For each reached state, the slot of the edge it was reached by and the state before.
        let mut parent_slot = vec![NO_PARENT; states];
        let mut parent = vec![start; states];
        let mut queue = vec![start];
        let mut head = 0;
        let vertex = |s: usize| (s / width) as TxnIndex;
        while let Some(&u) = queue.get(head) {
            head += 1;
            for slot in self.edges_from(vertex(u)) {
                let Some(x) = self.step(walks, u, slot) else { continue };
                if x == start {
                    let mut walk = vec![self.edge(vertex(u), slot)];
                    let mut v = u;
                    while v != start {
                        walk.push(self.edge(vertex(parent[v]), parent_slot[v]));
                        v = parent[v];
                    }
                    walk.reverse();
                    return walk;
                }
                if parent_slot[x] == NO_PARENT {
                    parent_slot[x] = slot;
                    parent[x] = u;
                    queue.push(x);
                }
            }
        }
        unreachable!("the depth-first search found walk state {start} on a closed walk, so a path leads back to it")
    }
}

/// Which closed walks a search looks for. A walk state is a vertex, and for
/// [`Walks::NoAdjacentAntiDependencies`] also whether the walk entered it by an
/// anti-dependency (state `2 * vertex + 1`) or not (`2 * vertex`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walks {
    /// Every cycle (serializability).
    Any,
    /// Walks in which an anti-dependency never follows another (snapshot isolation).
    NoAdjacentAntiDependencies,
}

impl Walks {
    fn states_per_vertex(self) -> usize {
        match self {
            Walks::Any => 1,
            Walks::NoAdjacentAntiDependencies => 2,
        }
    }
}

/// Which kind an edge from `from` justified by operation `via` is: a write justifies only ww
/// edges; a read justifies a wr edge into its reader and an rw edge out of it (never both for
/// the same pair: self-edges are not emitted).
fn classify(writes: &[Operation], reads: &[Operation], from: TxnIndex, via: u32) -> DependencyKind {
    match (via as usize).checked_sub(writes.len()) {
        None => DependencyKind::WriteWrite,
        Some(read) if reads[read].txn == from => DependencyKind::ReadWrite,
        Some(_) => DependencyKind::WriteRead,
    }
}

/// Calls `emit(from, to, via)` for every dependency, in a fixed order; stops at the first read
/// of an unwritten version. `writes` sorted by `(table, key, version)` with every version
/// written once, `reads` sorted by `(table, key, version, txn)`.
fn for_each_dependency(
    writes: &[Operation],
    reads: &[Operation],
    mut emit: impl FnMut(TxnIndex, TxnIndex, u32),
) -> Result<(), UnwrittenRead> {
    for (later, pair) in (1..).zip(writes.windows(2)) {
        if pair[0].row() == pair[1].row() {
            debug_assert!(pair[0].version < pair[1].version && pair[0].txn != pair[1].txn);
            emit(pair[0].txn, pair[1].txn, later);
        }
    }

    let read_via_base = writes.len() as u32;
    // First write at or after the current read's (key, version); only moves forward.
    let mut at = 0;
    for (position, read) in reads.iter().enumerate() {
        while writes.get(at).is_some_and(|write| (write.row(), write.version) < (read.row(), read.version)) {
            at += 1;
        }
        let same_key = |index: usize| writes.get(index).filter(|write| write.row() == read.row());
        let (writer, next) = if read.version == 0 {
            (None, same_key(at))
        } else {
            match same_key(at).filter(|write| write.version == read.version) {
                Some(writer) => (Some(writer), same_key(at + 1)),
                None => return Err(UnwrittenRead(position)),
            }
        };
        let via = read_via_base + position as u32;
        if let Some(writer) = writer.filter(|writer| writer.txn != read.txn) {
            emit(writer.txn, read.txn, via);
        }
        if let Some(next) = next.filter(|next| next.txn != read.txn) {
            emit(read.txn, next.txn, via);
        }
    }
    Ok(())
}
