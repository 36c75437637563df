//! `ordo bench --engine threads`: the thread-per-worker engine (§5.6).
//!
//! `--protocol` picks the concurrency control, a list sweeps: `silo`, `tictoc`, `no_wait`,
//! `wait_die`, `mvcc_si`, `ssi`, `serial`, and `reorder` (thread-aware batch assignment before
//! execution, over Silo) or `reorder+<protocol>` over another protocol. `--mode` belongs
//! to the pipeline and pg engines and is refused here. `serial` always runs one thread, so in a `--threads` sweep
//! it runs once.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::Args;
use indicatif::ProgressBar;
use ordo_harness::RunResult;
use ordo_threads::{EngineConfig, ProtocolKind, RunSpec, VERSIONS_DEFAULT};

use super::{BenchArgs, Options, Planned, RateMeter};

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Threads engine")]
pub struct ThreadsArgs {
    /// silo, tictoc, no_wait, wait_die, mvcc_si, ssi, serial, reorder (over silo) or
    /// reorder+<protocol>; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "silo")]
    pub protocol: Vec<String>,
    /// Worker threads; a list sweeps (serial always runs one).
    #[arg(long, value_delimiter = ',', default_value = "2")]
    pub threads: Vec<usize>,
    /// reorder: transactions per batch (0: 4 per thread).
    #[arg(long, default_value_t = 0)]
    pub batch: usize,
    /// mvcc_si, ssi: versions kept per record.
    #[arg(long, default_value_t = VERSIONS_DEFAULT)]
    pub versions: usize,
    /// Prefetch each transaction's footprint when it starts (on/off; a list sweeps). Off by
    /// default: no protocol's paper does it.
    #[arg(long, value_delimiter = ',', default_value = "off", value_parser = clap::builder::BoolishValueParser::new())]
    pub prefetch: Vec<bool>,
}

/// Parses one `--protocol` entry into (protocol, reorder).
fn parse_protocol(name: &str) -> Result<(ProtocolKind, bool)> {
    match name {
        "reorder" => Ok((ProtocolKind::Silo, true)),
        _ => match name.strip_prefix("reorder+") {
            Some(base) => Ok((base.parse()?, true)),
            None => Ok((name.parse()?, false)),
        },
    }
}

pub fn plan(args: &BenchArgs) -> Result<Vec<Planned>> {
    let t = &args.threads;
    if !args.mode.is_empty() {
        bail!(
            "--mode is for the pipeline and pg engines; the threads engine takes --protocol (e.g. --protocol silo,reorder)"
        );
    }
    if t.protocol.is_empty() || t.threads.is_empty() || t.prefetch.is_empty() {
        bail!("--protocol, --threads and --prefetch need at least one value");
    }
    let protocols: Vec<(ProtocolKind, bool)> =
        t.protocol.iter().map(|p| parse_protocol(p.trim())).collect::<Result<_>>()?;
    if args.verify && protocols.iter().any(|&(p, _)| !p.serializable()) {
        bail!("--verify checks serializability, which mvcc_si (snapshot isolation) does not promise; drop one of them");
    }
    let mut planned = Vec::new();
    let mut seen = Vec::new();
    for &theta in &args.theta {
        args.workload.build(theta, args.seed)?;
        for &(protocol, reorder) in &protocols {
            for (&threads, &prefetch) in t.threads.iter().flat_map(|t| std::iter::repeat(t).zip(&args.threads.prefetch))
            {
                let config = EngineConfig {
                    protocol,
                    reorder,
                    threads,
                    batch: t.batch,
                    payload_bytes: args.workload.payload_bytes,
                    versions: t.versions,
                    prefetch,
                };
                config.validate().map_err(|e| anyhow!("{e}"))?;
                let key = (theta.to_bits(), config.label(), config.effective_threads(), prefetch);
                if seen.contains(&key) {
                    continue;
                }
                seen.push(key);
                let mut label = vec![("protocol".to_owned(), config.label()), ("theta".to_owned(), format!("{theta}"))];
                if t.threads.len() > 1 {
                    label.push(("threads".into(), config.effective_threads().to_string()));
                }
                if t.prefetch.len() > 1 {
                    label.push(("prefetch".into(), if prefetch { "on" } else { "off" }.into()));
                }
                planned.push(planned_run(args, theta, config, label));
            }
        }
    }
    Ok(planned)
}

fn planned_run(args: &BenchArgs, theta: f64, config: EngineConfig, label: Vec<(String, String)>) -> Planned {
    let mut knobs: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    for (name, value) in args.workload.describe() {
        knobs.insert(name.into(), value);
    }
    knobs.insert("protocol".into(), config.protocol.name().into());
    knobs.insert("reorder".into(), config.reorder.into());
    knobs.insert("threads".into(), config.effective_threads().into());
    knobs.insert("payload_bytes".into(), config.payload_bytes.into());
    knobs.insert("prefetch".into(), config.prefetch.into());
    if config.reorder {
        knobs.insert("batch".into(), config.effective_batch().into());
    }
    if matches!(config.protocol, ProtocolKind::MvccSi | ProtocolKind::Ssi) {
        knobs.insert("versions".into(), config.versions.into());
    }
    let info = args.run_info("threads", args.workload.name(), config.label(), theta, knobs);
    let workload_args = args.workload.clone();
    Planned {
        info: info.clone(),
        label,
        run: Box::new(move |options: &Options, seed: u64, bar: &ProgressBar| {
            let workload = workload_args.build(theta, seed)?;
            let spec = RunSpec {
                seed,
                warmup: Duration::from_secs_f64(options.warmup_s),
                duration: Duration::from_secs_f64(options.duration_s),
                cooldown: Duration::from_secs_f64(options.cooldown_s),
                record_history: options.history.is_some() || options.verify,
            };
            let meter = RateMeter::new(bar);
            let report =
                ordo_threads::run(&config, &workload, &spec, |elapsed_s, commits| meter.update(elapsed_s, commits))
                    .map_err(|e| anyhow!("{e}"))?;
            bar.suspend(|| {
                eprintln!(
                    "{}: loaded {} keys in {:.2} s on {} thread(s)",
                    config.label(),
                    workload.key_count(),
                    report.load_s,
                    report.threads
                );
            });
            if let Some(path) = &options.history {
                super::write_history(path, report.history.iter().cloned())?;
            }
            if options.verify {
                let checked = ordo_history::check(&report.history).map_err(|v| anyhow!("not serializable: {v}"))?;
                if let Some((initial, total)) = report.conserved
                    && initial != total
                {
                    bail!("the conserved total changed from {initial} to {total}");
                }
                bar.suspend(|| {
                    eprintln!(
                        "verified: {} committed transactions serializable ({} dependency edges){}",
                        checked.transactions,
                        checked.edges(),
                        if report.conserved.is_some() { "; conserved total exact" } else { "" }
                    );
                });
            }
            let mut info = info.clone();
            info.seed = seed;
            Ok(RunResult::from_recorder(info, &report.recorder, report.measured_s, workload.procedure_names()))
        }),
    }
}
