//! Property tests for the reorder library on random graphs and random batches.

use ordo_reorder::{
    Algorithm, DependencyGraph, FvsConfig, FvsOutcome, FvsSolver, Plan, Policy, RecentKey, Reorderer, ThreadAssigner,
    TxnFootprint, VertexMeta, is_feedback_vertex_set,
};
use proptest::prelude::*;

/// A random directed graph on 1..=14 vertices (self-loops included now and then).
fn small_graph() -> impl Strategy<Value = DependencyGraph> {
    (1usize..=14).prop_flat_map(|n| {
        prop::collection::vec((0..n, 0..n), 0..=n * 4)
            .prop_map(move |edges| DependencyGraph::from_edges(n, &edges).unwrap())
    })
}

fn weights(n: usize) -> impl Strategy<Value = Vec<VertexMeta>> {
    prop::collection::vec((0u32..4, 1u32..40), n).prop_map(|v| {
        v.into_iter().map(|(restarts, value)| VertexMeta { restarts, value: f64::from(value) / 4.0 }).collect()
    })
}

/// A random batch: up to 60 transactions over a small key space, so conflicts are dense.
fn batch() -> impl Strategy<Value = Vec<TxnFootprint>> {
    (2u64..40).prop_flat_map(|keys| {
        prop::collection::vec(
            (prop::collection::vec(0..keys, 0..6), prop::collection::vec(0..keys, 0..6), 0u32..5),
            1..60,
        )
        .prop_map(|txns| {
            txns.into_iter()
                .map(|(reads, writes, restarts)| TxnFootprint { reads, writes, restarts, value: 1.0 })
                .collect()
        })
    })
}

fn weight_of(policy: Policy, meta: &[VertexMeta], set: &[usize]) -> f64 {
    set.iter().map(|&v| policy.weight(meta.get(v).copied().unwrap_or_default())).sum()
}

/// Minimum total weight of a feedback vertex set, by trying every subset.
fn brute_force_minimum(graph: &DependencyGraph, meta: &[VertexMeta], policy: Policy) -> f64 {
    let n = graph.len();
    let mut best = f64::INFINITY;
    for mask in 0u32..1 << n {
        let set: Vec<usize> = (0..n).filter(|v| mask & (1 << v) != 0).collect();
        let weight = weight_of(policy, meta, &set);
        if weight < best && is_feedback_vertex_set(graph, &set) {
            best = weight;
        }
    }
    best
}

fn solve(config: FvsConfig, graph: &DependencyGraph, meta: &[VertexMeta]) -> FvsOutcome {
    let mut out = FvsOutcome::default();
    FvsSolver::new(config).unwrap().solve(graph, meta, &mut out);
    out
}

/// Every algorithm under every policy it accepts, with and without the minimality pass.
fn all_configs() -> Vec<FvsConfig> {
    let mut configs = Vec::new();
    for name in [
        "search",
        "greedy_scc",
        "greedy_sort",
        "hybrid_4",
        "hybrid_20",
        "hybrid_sort_3",
        "hybrid_sort_32",
        "random",
        "random_3",
    ] {
        let (algorithm, implied) = Algorithm::parse(name).unwrap();
        for policy in Policy::ALL {
            if implied.is_some_and(|p| p != policy) {
                continue;
            }
            for multi_factor in [1, 2, 3] {
                if multi_factor != 2 && algorithm != Algorithm::GreedySort {
                    continue;
                }
                for minimize in [false, true] {
                    configs.push(FvsConfig { algorithm, policy, multi_factor, minimize, ..FvsConfig::default() });
                }
            }
        }
    }
    configs
}

/// The reference validator: walk `order`, fail a transaction if an earlier committed
/// transaction of the batch wrote a key it read.
fn every_transaction_commits(batch: &[TxnFootprint], order: &[usize]) -> Result<(), String> {
    let mut written = std::collections::HashSet::new();
    for &t in order {
        if let Some(key) = batch[t].reads.iter().find(|k| written.contains(*k)) {
            return Err(format!("transaction {t} read key {key}, already overwritten in the batch"));
        }
        written.extend(batch[t].writes.iter().copied());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_answer_is_a_feedback_vertex_set(graph in small_graph()) {
        for config in all_configs() {
            let out = solve(config, &graph, &[]);
            prop_assert!(is_feedback_vertex_set(&graph, &out.fvs), "{} returned {:?}", config.label(), out.fvs);
            let mut sorted = out.fvs.clone();
            sorted.sort_unstable();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), out.fvs.len(), "{} returned a vertex twice", config.label());
        }
    }

    #[test]
    fn search_is_exact_and_greedy_is_never_better(graph in small_graph()) {
        let minimum = brute_force_minimum(&graph, &[], Policy::ProdDegree);
        let exact = solve(FvsConfig::paper("search").unwrap(), &graph, &[]);
        prop_assert!(!exact.fell_back);
        prop_assert_eq!(exact.fvs.len() as f64, minimum);
        for config in all_configs() {
            let out = solve(config, &graph, &[]);
            prop_assert!(out.fvs.len() as f64 >= minimum, "{} beat the minimum", config.label());
        }
    }

    #[test]
    fn weighted_search_finds_the_minimum_weight(
        (graph, meta) in small_graph().prop_flat_map(|g| { let n = g.len(); (Just(g), weights(n)) })
    ) {
        let minimum = brute_force_minimum(&graph, &meta, Policy::Value);
        let config = FvsConfig { policy: Policy::Value, ..FvsConfig::paper("search").unwrap() };
        let exact = solve(config, &graph, &meta);
        prop_assert!((weight_of(Policy::Value, &meta, &exact.fvs) - minimum).abs() < 1e-9,
            "search weight {} vs minimum {}", weight_of(Policy::Value, &meta, &exact.fvs), minimum);
        for name in ["hybrid_20", "hybrid_sort_32"] {
            let hybrid = FvsConfig { policy: Policy::Value, ..FvsConfig::paper(name).unwrap() };
            let out = solve(hybrid, &graph, &meta);
            prop_assert!((weight_of(Policy::Value, &meta, &out.fvs) - minimum).abs() < 1e-9, "{}", name);
        }
    }

    #[test]
    fn minimality_pass_never_grows_and_leaves_a_minimal_answer(
        (graph, meta) in small_graph().prop_flat_map(|g| { let n = g.len(); (Just(g), weights(n)) })
    ) {
        for config in all_configs().into_iter().filter(|c| !c.minimize) {
            let plain = solve(config, &graph, &meta);
            let minimal = solve(FvsConfig { minimize: true, ..config }, &graph, &meta);
            prop_assert!(minimal.fvs.len() <= plain.fvs.len(), "{}", config.label());
            prop_assert!(minimal.fvs.iter().all(|v| plain.fvs.contains(v)), "{}: not a subset", config.label());
            for returned in &minimal.fvs {
                let rest: Vec<usize> = minimal.fvs.iter().copied().filter(|v| v != returned).collect();
                prop_assert!(!is_feedback_vertex_set(&graph, &rest), "{}: {} could return", config.label(), returned);
            }
        }
    }

    #[test]
    fn plans_commit_everything_they_keep(batch in batch()) {
        for config in all_configs().into_iter().filter(|c| c.algorithm != Algorithm::Search || batch.len() <= 40) {
            let mut plan = Plan::default();
            Reorderer::new(config).unwrap().plan_into(&batch, &mut plan);
            let mut all: Vec<usize> = plan.abort.iter().chain(&plan.order).copied().collect();
            all.sort_unstable();
            prop_assert_eq!(all, (0..batch.len()).collect::<Vec<_>>(), "{}: not a partition", config.label());
            if let Err(why) = every_transaction_commits(&batch, &plan.order) {
                prop_assert!(false, "{}: {}", config.label(), why);
            }
        }
    }

    #[test]
    fn thread_assignment_is_a_partition_with_the_requested_counts(
        (batch, capacities) in batch().prop_flat_map(|b| {
            let n = b.len();
            (Just(b), prop::collection::vec(0..=n, 1..6)).prop_map(move |(b, mut caps)| {
                // Scale the random capacities so they sum to the batch size.
                let total: usize = caps.iter().sum::<usize>().max(1);
                let mut left = n;
                for c in &mut caps { *c = (*c * n / total).min(left); left -= *c; }
                caps[0] += left;
                (b, caps)
            })
        })
    ) {
        let mut out = Vec::new();
        ThreadAssigner::new().assign(&batch, &capacities, &mut out).unwrap();
        prop_assert_eq!(out.iter().map(Vec::len).collect::<Vec<_>>(), capacities);
        let mut all: Vec<usize> = out.concat();
        all.sort_unstable();
        prop_assert_eq!(all, (0..batch.len()).collect::<Vec<_>>());
    }

    /// Sticky assignment partitions the batch, every share within the slack's bounds, whatever
    /// the threads' recent keys; with no recent keys it is the even split.
    #[test]
    fn sticky_assignment_is_a_partition_within_the_slack(
        batch in batch(),
        recent in prop::collection::vec(prop::collection::vec((0u64..40, any::<bool>(), 1u32..4).prop_map(|(key, wrote, weight)| RecentKey { key, wrote, weight }), 0..8), 1..5),
        slack in 0.0f64..=1.0,
    ) {
        let mut assigner = ThreadAssigner::new();
        let mut out = Vec::new();
        assigner.assign_sticky(&batch, &recent, slack, &mut out).unwrap();
        prop_assert_eq!(out.len(), recent.len());
        let even = batch.len() as f64 / recent.len() as f64;
        let (least, most) = ((even * (1.0 - slack)).floor() as usize, (even * (1.0 + slack)).ceil() as usize);
        for share in &out {
            prop_assert!((least..=most).contains(&share.len()), "{} not in {least}..={most}", share.len());
        }
        let mut all: Vec<usize> = out.concat();
        all.sort_unstable();
        prop_assert_eq!(all, (0..batch.len()).collect::<Vec<_>>());
        let none = vec![Vec::new(); recent.len()];
        assigner.assign_sticky(&batch, &none, slack, &mut out).unwrap();
        let mut even_out = Vec::new();
        assigner.assign_evenly(&batch, recent.len(), &mut even_out).unwrap();
        prop_assert_eq!(out, even_out);
    }
}
/// A batch of no transactions (an empty JSON array handed to `ordo fvs`, or a graph of no
/// vertices) is planned by every algorithm without panicking: nothing to abort, nothing to order.
#[test]
fn every_algorithm_plans_an_empty_batch() {
    let empty = DependencyGraph::from_edges(0, &[]).unwrap();
    for config in all_configs() {
        let out = solve(config, &empty, &[]);
        assert!(out.fvs.is_empty() && !out.fell_back, "{config:?}");
        let plan = Reorderer::new(config).unwrap().plan::<TxnFootprint>(&[]);
        assert!(plan.abort.is_empty() && plan.order.is_empty(), "{config:?}");
    }
}
