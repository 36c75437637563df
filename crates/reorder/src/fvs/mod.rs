//! Feedback vertex set solvers (§4.1): which transactions of a batch to abort so that the rest
//! can be validated in some order and all commit.
//!
//! ```text
//!             ┌── search        exact minimum (branch and bound, reductions, node budget)
//!  trimmed    ├── greedy_scc    Algorithm 1: per SCC, abort the top-ranked vertex, recurse
//!  residual ──┼── greedy_sort   Algorithm 2: abort the top-k ranked vertices, trim, repeat
//!  graph      ├── hybrid_m      Algorithm 1, but exact on SCCs of at most m vertices
//!             └── random[_n]    Algorithm 1 with random ranks, best of n runs
//!                    │
//!                    └──> optional minimality pass: return every vertex whose return keeps
//!                         the graph acyclic (the answer becomes a minimal FVS)
//! ```
//!
//! The paper's names map onto (algorithm, policy): `greedy_max`, `greedy_sum` and
//! `greedy_prod` are `greedy_scc` with the max-, sum- and prod-degree policies; `greedy_sort`
//! uses prod-degree unless told otherwise; `random` and `random_3` use random ranks.

mod greedy_scc;
mod greedy_sort;
mod minimal;
mod search;

use std::fmt;
use std::str::FromStr;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::bitset;
use crate::error::ReorderError;
use crate::graph::DependencyGraph;
use crate::policy::{Policy, Score, VertexMeta};
use crate::residual::Residual;
use crate::scc::Components;

pub use search::SEARCH_NODE_BUDGET_DEFAULT;

/// Largest SCC the default algorithm solves exactly (see BENCHMARKS.md for the measurement).
pub const HYBRID_SORT_EXACT_DEFAULT: usize = 32;

/// A feedback vertex set algorithm, named as in the paper's Fig. 5-6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Exact minimum (minimum-weight under the `value` policy), within a node budget.
    Search,
    /// SCC-based greedy (Algorithm 1) under the configured policy.
    GreedyScc,
    /// Sort-based greedy (Algorithm 2) with the configured multi factor.
    GreedySort,
    /// SCC-based greedy that solves SCCs of at most `max_exact` vertices exactly.
    Hybrid { max_exact: usize },
    /// Exact search on every SCC of the trimmed graph with at most `max_exact` vertices,
    /// sort-based greedy (with the minimality pass) on the larger ones. ordo's default.
    HybridSort { max_exact: usize },
    /// SCC-based greedy with random ranks; the smallest answer of `tries` runs.
    Random { tries: u32 },
}

const ALGORITHM_NAMES: &str = "search, greedy_scc, greedy_max, greedy_sum, greedy_prod, greedy_sort, hybrid_<m>, \
hybrid_sort_<m>, random, random_<n>";

impl Algorithm {
    /// Parses a name and returns the policy it implies, if any (`greedy_prod` implies
    /// prod-degree, `random` implies random ranks).
    pub fn parse(name: &str) -> Result<(Algorithm, Option<Policy>), ReorderError> {
        let normalized = name.trim().to_ascii_lowercase().replace('-', "_");
        let unknown = || ReorderError::UnknownAlgorithm { name: name.to_owned(), expected: ALGORITHM_NAMES };
        let parse_suffix = |suffix: &str| suffix.parse::<u32>().ok().filter(|&n| n >= 1).ok_or_else(unknown);
        Ok(match normalized.as_str() {
            "search" | "exact" => (Algorithm::Search, None),
            "greedy_scc" | "greedy" => (Algorithm::GreedyScc, None),
            "greedy_max" => (Algorithm::GreedyScc, Some(Policy::MaxDegree)),
            "greedy_sum" => (Algorithm::GreedyScc, Some(Policy::SumDegree)),
            "greedy_prod" => (Algorithm::GreedyScc, Some(Policy::ProdDegree)),
            "greedy_sort" => (Algorithm::GreedySort, None),
            "random" => (Algorithm::Random { tries: 1 }, Some(Policy::Random)),
            other => {
                if let Some(m) = other.strip_prefix("hybrid_sort_") {
                    (Algorithm::HybridSort { max_exact: parse_suffix(m)? as usize }, None)
                } else if let Some(m) = other.strip_prefix("hybrid_") {
                    (Algorithm::Hybrid { max_exact: parse_suffix(m)? as usize }, None)
                } else if let Some(n) = other.strip_prefix("random_") {
                    (Algorithm::Random { tries: parse_suffix(n)? }, Some(Policy::Random))
                } else {
                    return Err(unknown());
                }
            }
        })
    }

    /// The paper's name for this algorithm under `policy` (e.g. `greedy_prod`).
    pub fn label(self, policy: Policy) -> String {
        match (self, policy) {
            (Algorithm::Search, _) => "search".into(),
            (Algorithm::GreedyScc, Policy::MaxDegree) => "greedy_max".into(),
            (Algorithm::GreedyScc, Policy::SumDegree) => "greedy_sum".into(),
            (Algorithm::GreedyScc, Policy::ProdDegree) => "greedy_prod".into(),
            (Algorithm::GreedyScc, other) => format!("greedy_scc[{other}]"),
            (Algorithm::GreedySort, _) => "greedy_sort".into(),
            (Algorithm::Hybrid { max_exact }, _) => format!("hybrid_{max_exact}"),
            (Algorithm::HybridSort { max_exact }, _) => format!("hybrid_sort_{max_exact}"),
            (Algorithm::Random { tries: 1 }, _) => "random".into(),
            (Algorithm::Random { tries }, _) => format!("random_{tries}"),
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Algorithm::GreedyScc => f.write_str("greedy_scc"),
            other => f.write_str(&other.label(Policy::ProdDegree)),
        }
    }
}

impl FromStr for Algorithm {
    type Err = ReorderError;
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Algorithm::parse(name).map(|(algorithm, _)| algorithm)
    }
}

/// How to compute a feedback vertex set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FvsConfig {
    pub algorithm: Algorithm,
    pub policy: Policy,
    /// `k` of the sort-based greedy: vertices aborted per round.
    pub multi_factor: usize,
    /// Run the minimality pass after the algorithm.
    pub minimize: bool,
    /// Search-tree nodes the exact search may visit before it falls back to greedy.
    pub search_node_budget: u64,
    /// Seed of the random policy.
    pub seed: u64,
}

impl Default for FvsConfig {
    /// ordo's default: `hybrid_sort_32` (exact on SCCs of up to 32 transactions, sort-based
    /// greedy with k = 2 and the minimality pass on larger ones), prod-degree.
    fn default() -> Self {
        FvsConfig {
            algorithm: Algorithm::HybridSort { max_exact: HYBRID_SORT_EXACT_DEFAULT },
            policy: Policy::ProdDegree,
            multi_factor: 2,
            minimize: true,
            search_node_budget: SEARCH_NODE_BUDGET_DEFAULT,
            seed: 0x6f72_646f,
        }
    }
}

impl FvsConfig {
    /// A configuration from a paper-style algorithm name, with the policy it implies (or
    /// prod-degree), `k = 2` and no minimality pass.
    pub fn paper(name: &str) -> Result<FvsConfig, ReorderError> {
        let (algorithm, policy) = Algorithm::parse(name)?;
        Ok(FvsConfig {
            algorithm,
            policy: policy.unwrap_or(Policy::ProdDegree),
            minimize: false,
            ..FvsConfig::default()
        })
    }

    pub fn validate(&self) -> Result<(), ReorderError> {
        if self.multi_factor == 0 {
            return Err(ReorderError::InvalidConfig { field: "multi_factor", reason: "must be at least 1".into() });
        }
        if self.search_node_budget == 0 {
            return Err(ReorderError::InvalidConfig {
                field: "search_node_budget",
                reason: "must be at least 1".into(),
            });
        }
        if let Algorithm::Hybrid { max_exact: 0 } | Algorithm::HybridSort { max_exact: 0 } = self.algorithm {
            return Err(ReorderError::InvalidConfig { field: "algorithm", reason: "hybrid_m needs m >= 1".into() });
        }
        if let Algorithm::Random { tries: 0 } = self.algorithm {
            return Err(ReorderError::InvalidConfig { field: "algorithm", reason: "random_n needs n >= 1".into() });
        }
        Ok(())
    }

    /// Parses a label of the form `<algorithm>[\[<policy>\]][_k<k>][+min]` (the inverse of
    /// [`FvsConfig::label`]), e.g. `greedy_sort_k1+min` or `greedy_sort[rct]+min`. The policy is
    /// the one in brackets, else the one the name implies, else `default_policy`.
    pub fn from_label(label: &str, default_policy: Policy) -> Result<FvsConfig, ReorderError> {
        let (name, minimize) = match label.trim().strip_suffix("+min") {
            Some(name) => (name, true),
            None => (label.trim(), false),
        };
        if let Some((before, rest)) = name.split_once('[') {
            let Some((policy, after)) = rest.split_once(']') else {
                return Err(ReorderError::InvalidConfig {
                    field: "algorithm",
                    reason: format!("`{label}`: a `[` without its `]`"),
                });
            };
            let policy: Policy = policy.parse()?;
            let minimized = if minimize { "+min" } else { "" };
            let config = FvsConfig::from_label(&format!("{before}{after}{minimized}"), policy)?;
            if config.policy != policy {
                return Err(ReorderError::InvalidConfig {
                    field: "policy",
                    reason: format!("`{label}`: {before} fixes the policy to {}", config.policy),
                });
            }
            return Ok(config);
        }
        let (name, multi_factor) = match name.rsplit_once("_k") {
            Some((base, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => {
                let k = k.parse::<usize>().map_err(|_| ReorderError::InvalidConfig {
                    field: "multi_factor",
                    reason: format!("`{k}` in `{label}` is not a number"),
                })?;
                (base, k)
            }
            _ => (name, 2),
        };
        let (algorithm, implied) = Algorithm::parse(name)?;
        let config = FvsConfig {
            algorithm,
            policy: implied.unwrap_or(default_policy),
            multi_factor,
            minimize,
            ..FvsConfig::default()
        };
        config.validate()?;
        Ok(config)
    }

    /// The paper's name, with `+min` when the minimality pass runs.
    pub fn label(&self) -> String {
        let mut label = self.algorithm.label(self.policy);
        if self.algorithm == Algorithm::GreedySort && self.policy != Policy::ProdDegree {
            label = format!("greedy_sort[{}]", self.policy);
        }
        // Only the sort-based greedy (alone or in the hybrid) has a k.
        if matches!(self.algorithm, Algorithm::GreedySort | Algorithm::HybridSort { .. }) && self.multi_factor != 2 {
            label = format!("{label}_k{}", self.multi_factor);
        }
        if self.minimize {
            label.push_str("+min");
        }
        label
    }
}

/// A feedback vertex set and how it was found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FvsOutcome {
    /// Vertices to abort, in the order the solver chose them.
    pub fvs: Vec<usize>,
    /// The exact search (or an exact hybrid component) ran out of budget and the greedy
    /// answer was used for at least one component.
    pub fell_back: bool,
}

/// Solves feedback vertex set problems, reusing its scratch space between calls.
#[derive(Debug)]
pub struct FvsSolver {
    config: FvsConfig,
    residual: Residual,
    /// The trimmed vertex set of the graph being solved.
    trimmed: Vec<u64>,
    components: Components,
    /// Stack of vertex sets still to process (greedy_scc), `words` per entry.
    pending: Vec<u64>,
    candidates: Vec<(Score, usize)>,
    search: search::Search,
    scratch_fvs: Vec<usize>,
    rng: Xoshiro256PlusPlus,
}

impl FvsSolver {
    pub fn new(config: FvsConfig) -> Result<Self, ReorderError> {
        config.validate()?;
        Ok(FvsSolver {
            config,
            residual: Residual::default(),
            trimmed: Vec::new(),
            components: Components::default(),
            pending: Vec::new(),
            candidates: Vec::new(),
            search: search::Search::default(),
            scratch_fvs: Vec::new(),
            rng: Xoshiro256PlusPlus::seed_from_u64(config.seed),
        })
    }

    pub fn config(&self) -> &FvsConfig {
        &self.config
    }

    /// Computes a feedback vertex set of `graph`. `meta` holds one entry per vertex (or is
    /// empty, meaning no restarts and unit values everywhere).
    pub fn solve(&mut self, graph: &DependencyGraph, meta: &[VertexMeta], out: &mut FvsOutcome) {
        debug_assert!(meta.is_empty() || meta.len() == graph.len());
        out.fvs.clear();
        out.fell_back = false;
        if graph.is_empty() {
            return; // no transactions, no cycles (and no bitset words to chunk by)
        }
        let config = self.config;
        match config.algorithm {
            Algorithm::Search => {
                let mut live = std::mem::take(&mut self.trimmed);
                self.residual.trimmed_graph(graph, &mut live);
                out.fell_back = self.exact(graph, meta, &live, &mut out.fvs);
                self.trimmed = live;
            }
            Algorithm::GreedyScc => self.greedy_scc(graph, meta, config.policy, None, out),
            Algorithm::Hybrid { max_exact } => self.greedy_scc(graph, meta, config.policy, Some(max_exact), out),
            Algorithm::GreedySort => {
                self.greedy_sort(graph, meta, config.policy, config.multi_factor, None, &mut out.fvs);
            }
            Algorithm::HybridSort { max_exact } => self.hybrid_sort(graph, meta, max_exact, out),
            Algorithm::Random { tries } => {
                let mut best = std::mem::take(&mut self.scratch_fvs);
                for attempt in 0..tries {
                    let mut trial = FvsOutcome::default();
                    self.greedy_scc(graph, meta, Policy::Random, None, &mut trial);
                    if attempt == 0
                        || total_weight(config.policy, meta, &trial.fvs) < total_weight(config.policy, meta, &best)
                    {
                        best.clone_from(&trial.fvs);
                    }
                }
                out.fvs.extend_from_slice(&best);
                self.scratch_fvs = best;
            }
        }
        if config.minimize {
            minimal::make_minimal(graph, meta, config.policy, &mut out.fvs, &mut self.rng);
        }
        debug_assert!(is_feedback_vertex_set(graph, &out.fvs), "solver returned a non-FVS");
    }

    /// Exact search on the subgraph induced by `subset`, appending the answer to `fvs`.
    /// Returns whether the budget ran out (the greedy answer was used instead).
    fn exact(&mut self, graph: &DependencyGraph, meta: &[VertexMeta], subset: &[u64], fvs: &mut Vec<usize>) -> bool {
        // Greedy first (sort-based, k = 1, minimal): the initial upper bound and the fallback.
        let mut greedy = std::mem::take(&mut self.scratch_fvs);
        greedy.clear();
        let policy = if self.config.policy == Policy::Random { Policy::ProdDegree } else { self.config.policy };
        self.greedy_sort(graph, meta, policy, 1, Some(subset), &mut greedy);
        minimal::make_minimal_within(graph, meta, self.config.policy, subset, &mut greedy, &mut self.rng);
        let fell_back =
            self.search.run(graph, meta, self.config.policy, subset, &greedy, self.config.search_node_budget, fvs);
        self.scratch_fvs = greedy;
        fell_back
    }
}

impl FvsSolver {
    /// `hybrid_sort_m`: per SCC of the trimmed graph, exact when small, greedy_sort when large.
    fn hybrid_sort(&mut self, graph: &DependencyGraph, meta: &[VertexMeta], max_exact: usize, out: &mut FvsOutcome) {
        let config = self.config;
        let mut live = std::mem::take(&mut self.trimmed);
        self.residual.trimmed_graph(graph, &mut live);
        self.components.compute(graph, &live);
        self.trimmed = live;
        let words = graph.words();
        let count = self.components.count();
        let mut masks = vec![0u64; count * words];
        let mut sizes = Vec::with_capacity(count);
        for i in 0..count {
            for &v in self.components.component(i) {
                bitset::insert(&mut masks[i * words..(i + 1) * words], v);
            }
            sizes.push(self.components.component(i).len());
        }
        for (mask, size) in masks.chunks_exact(words).zip(sizes) {
            if size <= max_exact {
                out.fell_back |= self.exact(graph, meta, mask, &mut out.fvs);
            } else {
                let start = out.fvs.len();
                let mut part = out.fvs.split_off(start);
                self.greedy_sort(graph, meta, config.policy, config.multi_factor, Some(mask), &mut part);
                minimal::make_minimal_within(graph, meta, config.policy, mask, &mut part, &mut self.rng);
                out.fvs.append(&mut part);
            }
        }
    }
}

fn meta_of(meta: &[VertexMeta], v: usize) -> VertexMeta {
    meta.get(v).copied().unwrap_or_default()
}

fn total_weight(policy: Policy, meta: &[VertexMeta], set: &[usize]) -> f64 {
    set.iter().map(|&v| policy.weight(meta_of(meta, v))).sum()
}

/// Whether removing `fvs` leaves `graph` acyclic.
pub fn is_feedback_vertex_set(graph: &DependencyGraph, fvs: &[usize]) -> bool {
    let mut kept = vec![0u64; graph.words()];
    bitset::fill(&mut kept, graph.len());
    for &v in fvs {
        bitset::remove(&mut kept, v);
    }
    graph.is_acyclic_within(&kept)
}
