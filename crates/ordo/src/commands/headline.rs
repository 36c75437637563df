//! `ordo headline`: the one-minute demonstration. The pipeline engine without any batching
//! (`base`) against batching and reordering at storage and validator (`srvc`), on the paper's
//! micro-benchmark at several skews, in one short table, on two deployments: the paper's
//! split of the components over the two cores, and all of them on one thread.

use anyhow::Result;
use clap::Args;
use ordo_harness::output::Table;
use ordo_pipeline::{PLACEMENT_DEFAULT, PLACEMENT_ONE_THREAD};

use super::bench::{execute, parse_bench_args};

#[derive(Debug, Args)]
pub struct HeadlineArgs {
    /// Zipf skews to compare, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "0.6,0.7,0.8,0.9")]
    pub theta: Vec<f64>,
    /// Measured seconds per run (after 1 s of warm-up).
    #[arg(long, default_value_t = 3.0)]
    pub duration: f64,
    /// Live transactions. 100 fully loads the pipeline on 2 cores; the paper's 300 was chosen
    /// for its Java prototype and makes every mode thrash here (see BENCHMARKS.md).
    #[arg(long, default_value_t = 100)]
    pub concurrency: usize,
    /// Write the full results as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// The two deployments, as `(threads, placement)`.
const DEPLOYMENTS: [(usize, &str); 2] = [(2, PLACEMENT_DEFAULT), (1, PLACEMENT_ONE_THREAD)];

pub fn run(args: &HeadlineArgs) -> Result<()> {
    let thetas: Vec<String> = args.theta.iter().map(ToString::to_string).collect();
    let mut command_line = vec![
        "ordo".to_owned(),
        "--engine=pipeline".into(),
        "--workload=micro".into(),
        "--mode=base,srvc".into(),
        format!("--concurrency={}", args.concurrency),
        format!("--theta={}", thetas.join(",")),
        format!("--duration={}", args.duration),
        "--warmup=1".into(),
    ];
    command_line.extend(DEPLOYMENTS.iter().map(|(_, placement)| format!("--placement={placement}")));
    if let Some(path) = &args.json {
        command_line.push(format!("--json={}", path.display()));
    }
    let bench = parse_bench_args(&command_line)?;
    let results = execute(&bench)?;
    let mut table = Table::new(&[
        "theta",
        "threads",
        "base commits/s",
        "srvc commits/s",
        "srvc/base",
        "base aborts",
        "srvc aborts",
        "base p95 µs",
        "srvc p95 µs",
    ]);
    for &theta in &args.theta {
        for (threads, placement) in DEPLOYMENTS {
            let find = |mode: &str| {
                results
                    .iter()
                    .map(|(_, r)| r)
                    .find(|r| {
                        r.info.mode == mode
                            && r.info.theta == theta
                            && r.info.config.get("placement").is_some_and(|p| p == placement)
                    })
                    .cloned()
            };
            let (Some(base), Some(srvc)) = (find("base"), find("srvc")) else { continue };
            table.row(vec![
                format!("{theta}"),
                threads.to_string(),
                format!("{:.0}", base.throughput_tps),
                format!("{:.0}", srvc.throughput_tps),
                format!("{:.2}x", srvc.throughput_tps / base.throughput_tps.max(1.0)),
                format!("{:.1}%", 100.0 * base.abort_rate),
                format!("{:.1}%", 100.0 * srvc.abort_rate),
                format!("{:.0}", base.latency_us.p95),
                format!("{:.0}", srvc.latency_us.p95),
            ]);
        }
    }
    println!("{}", table.render());
    println!(
        "pipeline engine, micro-benchmark (100K keys, 5 reads + 5 writes), concurrency {}, batch 40; \
         {} s measured per point after 1 s warm-up.\n\
         2 threads: the paper's split (processor and storage on one core; client, validator and \
         reorder worker on the other), where batching also saves messages between the cores.\n\
         1 thread: every component on one core; on 2 cores the faster deployment for both modes \
         (BENCHMARKS.md).",
        args.concurrency, args.duration
    );

    Ok(())
}
