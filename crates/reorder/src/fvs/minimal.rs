//! The minimality pass (beyond the paper).
//!
//! Greedy solvers abort vertices whose removal stopped being necessary once later vertices
//! were removed. The pass tries to *return* each aborted vertex, least deserving of its abort
//! first (lowest policy rank on the full graph), and keeps it if the graph stays acyclic.
//! Afterwards no single vertex can return: the answer is a minimal feedback vertex set, and
//! it is never larger than the input.
//!
//! A vertex `v` can return iff it has no self-loop and no successor of `v` reaches a
//! predecessor of `v` through kept vertices; the reachability test is a bitset breadth-first
//! search, `O(|V| · words)`.

use rand::Rng;

use crate::bitset::{self, Ones};
use crate::graph::DependencyGraph;
use crate::policy::{Policy, VertexMeta};

use super::meta_of;

/// Makes `fvs` a minimal feedback vertex set of the whole graph.
pub(super) fn make_minimal(
    graph: &DependencyGraph,
    meta: &[VertexMeta],
    policy: Policy,
    fvs: &mut Vec<usize>,
    rng: &mut impl Rng,
) {
    let mut all = vec![0u64; graph.words()];
    bitset::fill(&mut all, graph.len());
    make_minimal_within(graph, meta, policy, &all, fvs, rng);
}

/// Makes `fvs` a minimal feedback vertex set of the subgraph induced by `subset`.
pub(super) fn make_minimal_within(
    graph: &DependencyGraph,
    meta: &[VertexMeta],
    policy: Policy,
    subset: &[u64],
    fvs: &mut Vec<usize>,
    rng: &mut impl Rng,
) {
    if fvs.is_empty() {
        return;
    }
    let mut kept = subset.to_vec();
    for &v in fvs.iter() {
        bitset::remove(&mut kept, v);
    }
    // Least deserving of an abort first.
    let mut order: Vec<(crate::policy::Score, usize)> = fvs
        .iter()
        .map(|&v| {
            let in_degree = bitset::count_and(graph.predecessors(v), subset) as u32;
            let out_degree = bitset::count_and(graph.successors(v), subset) as u32;
            (policy.score(in_degree, out_degree, meta_of(meta, v), rng), v)
        })
        .collect();
    order.sort_by(|a, b| b.0.cmp_desc(a.0).then(a.1.cmp(&b.1)));

    let mut visited = vec![0u64; graph.words()];
    let mut frontier = vec![0u64; graph.words()];
    let mut next = vec![0u64; graph.words()];
    let mut returned = 0usize;
    for &(_, v) in &order {
        if can_return(graph, &kept, v, &mut visited, &mut frontier, &mut next) {
            bitset::insert(&mut kept, v);
            returned += 1;
        }
    }
    if returned > 0 {
        fvs.retain(|&v| !bitset::contains(&kept, v));
    }
}

/// Whether `kept ∪ {v}` is acyclic, given that `kept` is.
fn can_return(
    graph: &DependencyGraph,
    kept: &[u64],
    v: usize,
    visited: &mut [u64],
    frontier: &mut [u64],
    next: &mut [u64],
) -> bool {
    if graph.has_edge(v, v) {
        return false;
    }
    let predecessors = graph.predecessors(v);
    for ((visit, front), (&succ, &keep)) in
        visited.iter_mut().zip(frontier.iter_mut()).zip(graph.successors(v).iter().zip(kept))
    {
        *visit = succ & keep;
        *front = *visit;
    }
    loop {
        if bitset::intersects(visited, predecessors) {
            return false;
        }
        next.fill(0);
        for u in Ones::new(frontier) {
            for ((n, &succ), (&keep, &visit)) in
                next.iter_mut().zip(graph.successors(u)).zip(kept.iter().zip(visited.iter()))
            {
                *n |= succ & keep & !visit;
            }
        }
        if bitset::is_empty(next) {
            return true;
        }
        for (visit, &n) in visited.iter_mut().zip(next.iter()) {
            *visit |= n;
        }
        frontier.copy_from_slice(next);
    }
}
