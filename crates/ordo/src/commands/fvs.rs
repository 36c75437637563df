//! `ordo fvs`: plan one batch given as JSON.
//!
//! Input (a file, or stdin when the path is absent or `-`) is either a batch of footprints
//!
//! ```json
//! [{"reads": [1, 2], "writes": [3], "restarts": 0, "value": 1.0}, ...]
//! ```
//!
//! (`restarts` and `value` optional), or an explicit dependency graph
//!
//! ```json
//! {"vertices": 4, "edges": [[0, 1], [1, 0], [2, 3]]}
//! ```
//!
//! where an edge `[u, v]` means `u` must be validated before `v`. The plan lists the input
//! positions to abort and the order in which to validate the rest.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use ordo_reorder::{DependencyGraph, Plan, Reorderer, TxnFootprint, VertexMeta};
use serde::{Deserialize, Serialize};

use super::reorder_args::ReorderArgs;

/// Largest batch `ordo fvs` accepts (the graph is a bit matrix: 2 x n² bits).
const BATCH_TRANSACTIONS_MAX: usize = 20_000;

#[derive(Debug, Args)]
pub struct FvsArgs {
    /// Batch or graph as JSON; stdin when absent or `-`.
    pub input: Option<PathBuf>,
    #[command(flatten)]
    pub reorder: ReorderArgs,
    /// Print the plan as JSON (`abort` and `order` arrays of input positions).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchEntry {
    reads: Vec<u64>,
    writes: Vec<u64>,
    #[serde(default)]
    restarts: u32,
    #[serde(default = "unit_value")]
    value: f64,
}

fn unit_value() -> f64 {
    1.0
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphInput {
    vertices: usize,
    edges: Vec<[usize; 2]>,
}

#[derive(Debug, Serialize)]
struct PlanOutput<'a> {
    algorithm: String,
    policy: &'a str,
    transactions: usize,
    edges: usize,
    abort: &'a [usize],
    order: &'a [usize],
    search_fell_back: bool,
}

/// A parsed `ordo fvs` input.
pub enum FvsInput {
    Batch(Vec<TxnFootprint>),
    Graph(DependencyGraph),
}

/// Parses a batch or graph, naming the position and field of anything malformed.
pub fn parse_input(text: &str) -> Result<FvsInput> {
    match text.trim_start().as_bytes().first() {
        Some(b'[') => {
            let mut deserializer = serde_json::Deserializer::from_str(text);
            let entries: Vec<BatchEntry> = serde_path_to_error::deserialize(&mut deserializer)
                .map_err(|e| anyhow::anyhow!("batch entry {}: {}", e.path(), e.inner()))?;
            if entries.len() > BATCH_TRANSACTIONS_MAX {
                bail!("the batch holds {} transactions; at most {BATCH_TRANSACTIONS_MAX} are accepted", entries.len());
            }
            let mut batch = Vec::with_capacity(entries.len());
            for (position, entry) in entries.into_iter().enumerate() {
                if !(entry.value.is_finite() && entry.value > 0.0) {
                    bail!("batch entry [{position}].value: must be a positive finite number, got {}", entry.value);
                }
                batch.push(TxnFootprint {
                    reads: entry.reads,
                    writes: entry.writes,
                    restarts: entry.restarts,
                    value: entry.value,
                });
            }
            Ok(FvsInput::Batch(batch))
        }
        Some(b'{') => {
            let mut deserializer = serde_json::Deserializer::from_str(text);
            let graph: GraphInput = serde_path_to_error::deserialize(&mut deserializer)
                .map_err(|e| anyhow::anyhow!("graph field {}: {}", e.path(), e.inner()))?;
            if graph.vertices > BATCH_TRANSACTIONS_MAX {
                bail!("the graph has {} vertices; at most {BATCH_TRANSACTIONS_MAX} are accepted", graph.vertices);
            }
            let edges: Vec<(usize, usize)> = graph.edges.iter().map(|&[from, to]| (from, to)).collect();
            let graph = DependencyGraph::from_edges(graph.vertices, &edges).context("graph field edges")?;
            Ok(FvsInput::Graph(graph))
        }
        Some(_) => bail!(
            "expected a JSON array of transactions ([{{\"reads\": [..], \"writes\": [..]}}, ..]) \
             or a graph ({{\"vertices\": n, \"edges\": [[from, to], ..]}})"
        ),
        None => bail!("the input is empty"),
    }
}

pub fn run(args: &FvsArgs) -> Result<()> {
    let config = args.reorder.config()?;
    let text = match &args.input {
        Some(path) if path.as_os_str() != "-" => {
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?
        }
        _ => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("cannot read stdin")?;
            text
        }
    };
    let mut reorderer = Reorderer::new(config)?;
    let mut plan = Plan::default();
    let transactions = match parse_input(&text)? {
        FvsInput::Batch(batch) => {
            reorderer.plan_into(&batch, &mut plan);
            batch.len()
        }
        FvsInput::Graph(graph) => {
            let meta: Vec<VertexMeta> = Vec::new();
            reorderer.plan_graph(&graph, &meta, &mut plan);
            graph.len()
        }
    };
    let output = PlanOutput {
        algorithm: config.label(),
        policy: config.policy.name(),
        transactions,
        edges: reorderer.graph().edge_count(),
        abort: &plan.abort,
        order: &plan.order,
        search_fell_back: plan.search_fell_back,
    };
    if args.json {
        println!("{}", serde_json::to_string(&output)?);
        return Ok(());
    }
    let list = |items: &[usize]| items.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
    println!("algorithm: {} (policy {})", output.algorithm, output.policy);
    println!("transactions: {}, dependencies: {}", output.transactions, output.edges);
    println!("abort ({}): {}", plan.abort.len(), list(&plan.abort));
    println!("order ({}): {}", plan.order.len(), list(&plan.order));
    if plan.search_fell_back {
        println!("note: the exact search ran out of budget; greedy answers were used for some components");
    }
    Ok(())
}
