//! Exact minimum feedback vertex set: branch and bound with reductions.
//!
//! The paper's `search` is a brute force that "cannot produce results once the skew factor
//! increases beyond 0.7". This one finishes every 40-transaction batch up to θ = 0.9 by
//! shrinking the problem before and during branching:
//!
//! * **Reductions** (exact, applied to a fixed point at every node):
//!   - no live predecessor or no live successor: the vertex is on no cycle, drop it;
//!   - self-loop: the vertex is in every answer, take it;
//!   - exactly one live predecessor `u` (or successor): every cycle through `v` passes `u`,
//!     so some optimal answer avoids `v`; *bypass* `v` (connect its predecessors to its
//!     successors and drop it). Weighted only when `w(u) <= w(v)`;
//!   - 2-cycle core: if every edge of `v` is half of a 2-cycle and its neighbours form a
//!     bidirected clique, all of them but `v` must go (weighted only when `v` is the dearest).
//! * **Components**: the live graph splits into strongly connected components that are solved
//!   independently, each against what is left of the bound.
//! * **Bounds**: the incumbent starts at the greedy answer; a node is cut when its cost plus a
//!   lower bound (a packing of vertex-disjoint cycles, 2-cycles first) cannot beat it.
//! * **Branching** on the vertex of largest in x out degree: abort it, or keep it (bypass).
//!
//! Every node costs one unit of a budget; when it runs out the search gives up and the caller
//! uses the greedy answer, saying so (`FvsOutcome::fell_back`).
//!
//! State lives in an arena of frames, one per open node: `[live | successor rows |
//! predecessor rows]`, each row `words` long over the component's local vertex numbers.

use crate::bitset::{self, Ones, OnesAnd};
use crate::graph::DependencyGraph;
use crate::policy::{Policy, VertexMeta};
use crate::scc::Components;

use super::meta_of;

/// Default number of search-tree nodes before the exact search falls back to greedy.
pub const SEARCH_NODE_BUDGET_DEFAULT: u64 = 200_000;

const EPSILON: f64 = 1e-9;
/// Largest subgraph the exact search takes on; a larger one gets the greedy answer (reported as
/// a fall-back). A frame is `2n^2` bits, and a search can stack up to `n` frames: at 1,024
/// vertices that is at most 256 MiB.
pub const SEARCH_VERTICES_MAX: usize = 1_024;

#[derive(Debug, Default)]
pub(super) struct Search {
    len: usize,
    words: usize,
    frame_len: usize,
    arena: Vec<u64>,
    weight: Vec<f64>,
    unweighted: bool,
    /// Local vertex -> vertex of the caller's graph.
    original: Vec<usize>,
    /// Vertex of the caller's graph -> local vertex.
    local: Vec<u32>,
    /// Chosen local vertices of the node being solved (a stack shared by all nodes).
    solution: Vec<usize>,
    nodes: u64,
    budget: u64,
    exhausted: bool,
    components: Components,
    row: Vec<u64>,
    parent: Vec<u32>,
    visited: Vec<u64>,
    frontier: Vec<u64>,
    next: Vec<u64>,
}

impl Search {
    /// Finds a minimum FVS of the subgraph induced by `subset` and appends it to `out`.
    /// `greedy` (an FVS of that subgraph) is the initial incumbent and the fallback.
    /// Returns `true` when the budget ran out and `greedy` was used.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run(
        &mut self,
        graph: &DependencyGraph,
        meta: &[VertexMeta],
        policy: Policy,
        subset: &[u64],
        greedy: &[usize],
        budget: u64,
        out: &mut Vec<usize>,
    ) -> bool {
        if bitset::count(subset) > SEARCH_VERTICES_MAX {
            // A search frame holds two adjacency bitsets (2n^2 bits) and the search may stack
            // one frame per level: beyond this size memory, not time, runs out first.
            out.extend_from_slice(greedy);
            return true;
        }
        self.load(graph, meta, policy, subset);
        if self.len == 0 {
            return false;
        }
        let greedy_cost: f64 = greedy.iter().map(|&v| policy.weight(meta_of(meta, v))).sum();
        self.nodes = 0;
        self.budget = budget;
        self.exhausted = false;
        self.solution.clear();
        let found = self.exact(0, greedy_cost);
        if self.exhausted || found.is_none() {
            // Out of budget, or nothing beats greedy: greedy is the answer.
            out.extend_from_slice(greedy);
            return self.exhausted;
        }
        out.extend(self.solution.iter().map(|&local| self.original[local]));
        false
    }

    fn load(&mut self, graph: &DependencyGraph, meta: &[VertexMeta], policy: Policy, subset: &[u64]) {
        self.original.clear();
        self.original.extend(Ones::new(subset));
        self.len = self.original.len();
        self.words = bitset::words_for(self.len);
        self.frame_len = self.words * (1 + 2 * self.len);
        self.local.clear();
        self.local.resize(graph.len(), u32::MAX);
        for (local, &v) in self.original.iter().enumerate() {
            self.local[v] = local as u32;
        }
        self.unweighted = policy.is_unweighted();
        self.weight.clear();
        self.weight.extend(self.original.iter().map(|&v| policy.weight(meta_of(meta, v))));
        self.arena.clear();
        self.arena.resize(self.frame_len, 0);
        bitset::fill(&mut self.arena[..self.words], self.len);
        for (from_local, &from) in self.original.iter().enumerate() {
            for to in OnesAnd::new(graph.successors(from), subset) {
                let to_local = self.local[to] as usize;
                let succ = self.succ_at(0, from_local);
                bitset::insert(&mut self.arena[succ..succ + self.words], to_local);
                let pred = self.pred_at(0, to_local);
                bitset::insert(&mut self.arena[pred..pred + self.words], from_local);
            }
        }
        self.row.resize(self.words, 0);
        self.visited.resize(self.words, 0);
        self.frontier.resize(self.words, 0);
        self.next.resize(self.words, 0);
        self.parent.resize(self.len, 0);
    }

    #[inline]
    fn succ_at(&self, frame: usize, v: usize) -> usize {
        frame + self.words * (1 + v)
    }

    #[inline]
    fn pred_at(&self, frame: usize, v: usize) -> usize {
        frame + self.words * (1 + self.len + v)
    }

    #[inline]
    fn live(&self, frame: usize) -> &[u64] {
        &self.arena[frame..frame + self.words]
    }

    #[inline]
    fn succ(&self, frame: usize, v: usize) -> &[u64] {
        let at = self.succ_at(frame, v);
        &self.arena[at..at + self.words]
    }

    #[inline]
    fn pred(&self, frame: usize, v: usize) -> &[u64] {
        let at = self.pred_at(frame, v);
        &self.arena[at..at + self.words]
    }

    #[inline]
    fn drop_vertex(&mut self, frame: usize, v: usize) {
        bitset::remove(&mut self.arena[frame..frame + self.words], v);
    }

    fn push_copy(&mut self, frame: usize) -> usize {
        let child = self.arena.len();
        self.arena.extend_from_within(frame..frame + self.frame_len);
        child
    }

    /// Keeps `v` out of the answer: every live predecessor of `v` gains `v`'s live successors
    /// (cycles through `v` become cycles without it), then `v` is dropped.
    fn bypass(&mut self, frame: usize, v: usize) {
        let words = self.words;
        let mut successors = std::mem::take(&mut self.row);
        for ((out, &succ), &live) in successors.iter_mut().zip(self.succ(frame, v)).zip(self.live(frame)) {
            *out = succ & live;
        }
        bitset::remove(&mut successors, v);
        let mut predecessors = std::mem::take(&mut self.visited);
        for ((out, &pred), &live) in predecessors.iter_mut().zip(self.pred(frame, v)).zip(self.live(frame)) {
            *out = pred & live;
        }
        bitset::remove(&mut predecessors, v);
        for u in Ones::new(&predecessors) {
            let at = self.succ_at(frame, u);
            for (row, &add) in self.arena[at..at + words].iter_mut().zip(&successors) {
                *row |= add;
            }
        }
        for w in Ones::new(&successors) {
            let at = self.pred_at(frame, w);
            for (row, &add) in self.arena[at..at + words].iter_mut().zip(&predecessors) {
                *row |= add;
            }
        }
        self.row = successors;
        self.visited = predecessors;
        self.drop_vertex(frame, v);
    }

    fn degrees(&self, frame: usize, v: usize) -> (usize, usize) {
        let live = self.live(frame);
        (bitset::count_and(self.pred(frame, v), live), bitset::count_and(self.succ(frame, v), live))
    }

    /// Single live member of `row ∩ live` (the caller knows there is exactly one).
    fn only(&self, frame: usize, row: &[u64]) -> usize {
        OnesAnd::new(row, self.live(frame)).next().expect("degree-one vertex has a neighbour")
    }

    /// Applies the reductions to a fixed point, pushing forced vertices onto `solution`.
    /// Returns their total weight.
    fn reduce(&mut self, frame: usize) -> f64 {
        let mut forced = 0.0;
        loop {
            let mut changed = false;
            let mut cursor = 0;
            while let Some(v) = bitset::next_at_or_after(self.live(frame), cursor) {
                cursor = v + 1;
                if bitset::contains(self.succ(frame, v), v) {
                    self.solution.push(v);
                    forced += self.weight[v];
                    self.drop_vertex(frame, v);
                    changed = true;
                    continue;
                }
                let (in_degree, out_degree) = self.degrees(frame, v);
                if in_degree == 0 || out_degree == 0 {
                    self.drop_vertex(frame, v);
                    changed = true;
                } else if (in_degree == 1
                    && (self.unweighted || self.weight[self.only(frame, self.pred(frame, v))] <= self.weight[v]))
                    || (out_degree == 1
                        && (self.unweighted || self.weight[self.only(frame, self.succ(frame, v))] <= self.weight[v]))
                {
                    self.bypass(frame, v);
                    changed = true;
                }
            }
            if !changed {
                changed = self.reduce_two_cycle_core(frame, &mut forced);
            }
            if !changed {
                return forced;
            }
        }
    }

    /// The 2-cycle core rule; applies it to the first vertex it fits and reports whether it did.
    fn reduce_two_cycle_core(&mut self, frame: usize, forced: &mut f64) -> bool {
        let words = self.words;
        let mut neighbours = std::mem::take(&mut self.row);
        let mut applied = None;
        'vertices: for v in Ones::new(self.live(frame)) {
            let live = self.live(frame);
            let succ = self.succ(frame, v);
            let pred = self.pred(frame, v);
            for i in 0..words {
                if succ[i] & live[i] != pred[i] & live[i] {
                    continue 'vertices;
                }
                neighbours[i] = succ[i] & live[i];
            }
            for a in Ones::new(&neighbours) {
                if !self.unweighted && self.weight[a] > self.weight[v] {
                    continue 'vertices;
                }
                // Every other neighbour must be both a successor and a predecessor of `a`.
                let (succ_a, pred_a) = (self.succ(frame, a), self.pred(frame, a));
                for i in 0..words {
                    let others = neighbours[i] & !if i == a / 64 { 1u64 << (a % 64) } else { 0 };
                    if others & !(succ_a[i] & pred_a[i]) != 0 {
                        continue 'vertices;
                    }
                }
            }
            applied = Some(v);
            break;
        }
        if let Some(v) = applied {
            for a in Ones::new(&neighbours) {
                self.solution.push(a);
                *forced += self.weight[a];
                self.drop_vertex(frame, a);
            }
            self.drop_vertex(frame, v);
        }
        self.row = neighbours;
        applied.is_some()
    }

    /// Weight of a packing of vertex-disjoint cycles: a lower bound on any answer.
    fn lower_bound(&mut self, frame: usize) -> f64 {
        let words = self.words;
        let mut available: Vec<u64> = self.live(frame).to_vec();
        let mut bound = 0.0;
        // 2-cycles first: cheap and common under skew.
        for v in Ones::new(self.live(frame)) {
            if !bitset::contains(&available, v) {
                continue;
            }
            let (succ, pred) = (self.succ(frame, v), self.pred(frame, v));
            let partner = (0..words).find_map(|i| {
                let both = succ[i] & pred[i] & available[i];
                (both != 0).then(|| i * 64 + both.trailing_zeros() as usize)
            });
            if let Some(u) = partner {
                bound += self.weight[v].min(self.weight[u]);
                bitset::remove(&mut available, v);
                bitset::remove(&mut available, u);
            }
        }
        // Then a shortest cycle through each remaining vertex, breadth first.
        let mut cursor = 0;
        while let Some(root) = bitset::next_at_or_after(&available, cursor) {
            cursor = root + 1;
            if let Some(cycle_min) = self.shortest_cycle_through(frame, root, &mut available) {
                bound += cycle_min;
            }
        }
        bound
    }

    /// Finds a shortest cycle through `root` inside `available`; on success removes its
    /// vertices from `available` and returns its lightest weight.
    fn shortest_cycle_through(&mut self, frame: usize, root: usize, available: &mut [u64]) -> Option<f64> {
        let words = self.words;
        self.visited.fill(0);
        self.frontier.fill(0);
        bitset::insert(&mut self.visited, root);
        bitset::insert(&mut self.frontier, root);
        loop {
            self.next.fill(0);
            let mut closing = None;
            for x in Ones::new(&self.frontier) {
                let at = frame + words * (1 + x);
                let succ = &self.arena[at..at + words];
                if bitset::contains(succ, root) {
                    closing = Some(x);
                    break;
                }
                for i in 0..words {
                    let new = succ[i] & available[i] & !self.visited[i] & !self.next[i];
                    if new != 0 {
                        self.next[i] |= new;
                        let mut bits = new;
                        while bits != 0 {
                            let w = i * 64 + bits.trailing_zeros() as usize;
                            self.parent[w] = x as u32;
                            bits &= bits - 1;
                        }
                    }
                }
            }
            if let Some(mut x) = closing {
                let mut lightest = self.weight[root];
                while x != root {
                    lightest = lightest.min(self.weight[x]);
                    bitset::remove(available, x);
                    x = self.parent[x] as usize;
                }
                bitset::remove(available, root);
                return Some(lightest);
            }
            if bitset::is_empty(&self.next) {
                return None;
            }
            for i in 0..words {
                self.visited[i] |= self.next[i];
            }
            std::mem::swap(&mut self.frontier, &mut self.next);
        }
    }

    fn branch_vertex(&self, frame: usize) -> usize {
        let mut best = (f64::NEG_INFINITY, usize::MAX);
        for v in Ones::new(self.live(frame)) {
            let (in_degree, out_degree) = self.degrees(frame, v);
            let score = (in_degree * out_degree) as f64 / self.weight[v].max(EPSILON);
            if score > best.0 {
                best = (score, v);
            }
        }
        best.1
    }

    /// Minimum-weight FVS of the live graph of `frame`, if one costs less than `bound`. The
    /// answer is left on `solution` above its length at entry.
    fn exact(&mut self, frame: usize, bound: f64) -> Option<f64> {
        self.nodes += 1;
        if self.nodes > self.budget {
            self.exhausted = true;
            return None;
        }
        let mark = self.solution.len();
        let fail = |search: &mut Self| {
            search.solution.truncate(mark);
            None
        };
        let forced = self.reduce(frame);
        if forced >= bound - EPSILON {
            return fail(self);
        }
        if bitset::is_empty(self.live(frame)) {
            return Some(forced);
        }

        // Split into cyclic strongly connected components.
        let len = self.len;
        let words = self.words;
        let succ_base = frame + words;
        let arena = &self.arena;
        self.components.compute_rows(len, &arena[frame..frame + words], |v| {
            &arena[succ_base + v * words..succ_base + (v + 1) * words]
        });
        let count = self.components.count();
        if count == 0 {
            return Some(forced);
        }
        if count > 1 {
            let mut masks = vec![0u64; count * words];
            for i in 0..count {
                for &v in self.components.component(i) {
                    bitset::insert(&mut masks[i * words..(i + 1) * words], v);
                }
            }
            let mut lower_bounds = Vec::with_capacity(count);
            for i in 0..count {
                let child = self.push_copy(frame);
                self.arena[child..child + words].copy_from_slice(&masks[i * words..(i + 1) * words]);
                lower_bounds.push(self.lower_bound(child));
                self.arena.truncate(child);
            }
            let mut total = forced;
            let mut rest: f64 = lower_bounds.iter().sum();
            if total + rest >= bound - EPSILON {
                return fail(self);
            }
            for i in 0..count {
                rest -= lower_bounds[i];
                let child = self.push_copy(frame);
                self.arena[child..child + words].copy_from_slice(&masks[i * words..(i + 1) * words]);
                let found = self.exact(child, bound - total - rest);
                self.arena.truncate(child);
                match found {
                    Some(cost) => total += cost,
                    None => return fail(self),
                }
            }
            return Some(total);
        }
        // One component: drop live vertices outside it (they lie between cycles, on none).
        self.arena[frame..frame + words].fill(0);
        for i in 0..self.components.component(0).len() {
            let v = self.components.component(0)[i];
            bitset::insert(&mut self.arena[frame..frame + words], v);
        }
        if forced + self.lower_bound(frame) >= bound - EPSILON {
            return fail(self);
        }

        let v = self.branch_vertex(frame);
        let room = bound - forced;
        let branch_mark = self.solution.len();
        let mut best: Option<f64> = None;

        // Abort `v`.
        let child = self.push_copy(frame);
        self.drop_vertex(child, v);
        self.solution.push(v);
        match self.exact(child, room - self.weight[v]) {
            Some(cost) => best = Some(cost + self.weight[v]),
            None => self.solution.truncate(branch_mark),
        }
        self.arena.truncate(child);
        if self.exhausted {
            return fail(self);
        }

        // Keep `v`.
        let child = self.push_copy(frame);
        self.bypass(child, v);
        let keep_mark = self.solution.len();
        if let Some(cost) = self.exact(child, best.unwrap_or(room)) {
            let kept = self.solution.len() - keep_mark;
            self.solution.copy_within(keep_mark.., branch_mark);
            self.solution.truncate(branch_mark + kept);
            best = Some(cost);
        }
        self.arena.truncate(child);
        if self.exhausted {
            return fail(self);
        }
        match best {
            Some(cost) => Some(forced + cost),
            None => fail(self),
        }
    }
}
