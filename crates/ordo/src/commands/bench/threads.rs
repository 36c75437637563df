//! `ordo bench --engine threads`: the thread-per-worker engine (§5.6).
//!
//! `--protocol` picks the concurrency control, a list sweeps: `silo`, `tictoc`, `no_wait`,
//! `wait_die`, `mvcc_si`, `ssi`, `serial`, and `reorder` (thread-aware batch assignment before
//! execution, over Silo) or `reorder+<protocol>` over another protocol. `--mode` belongs
//! to the pipeline and pg engines and is refused here. `serial` always runs one thread, so in a `--threads` sweep
//! it runs once.
//!
//! Where a run's records live is `--index`: `tree` (the default: the storage engine, tables
//! behind the ordered B+tree, with inserts, deletes and scans) or `array`, an ablation: for the
//! key-value workloads the flat store whose positions are the keys, for table workloads with
//! dense keys the tables behind a dense array index. Every protocol runs on tables, `reorder` included
//! (`--versions` caps the versions an MVCC record keeps). Every result records its index as
//! `config.index`.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::Args;
use indicatif::ProgressBar;
use ordo_harness::RunResult;
use ordo_threads::tables::{Index, TableRunSpec, TablesConfig};
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
    /// Where records live: `tree` (the default: tables behind the ordered B+tree, every
    /// protocol, inserts, deletes and scans) or `array` (an ablation: the flat store whose
    /// positions are the keys, for micro, smallbank and ycsb; `--prefetch` needs it).
    #[arg(long)]
    pub index: Option<String>,
}

/// The `--index` of a run: whether it runs on tables (the storage engine) and with which index.
fn index_of(args: &BenchArgs) -> Result<Option<Index>> {
    let tables = args.workload.needs_tables();
    match args.threads.index.as_deref() {
        None | Some("tree") => Ok(Some(Index::Tree)),
        Some("array") if !tables => Ok(None),
        Some("array") => Ok(Some(Index::Array)),
        Some(other) => bail!("--index `{other}`: expected tree or array"),
    }
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
    if let Some(index) = index_of(args)? {
        return plan_tables(args, index, &protocols);
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
    knobs.insert("index".into(), "array".into());
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

/// The runs of a table sweep (TPC-C, or a key-value workload with `--index tree`): each protocol
/// over the storage engine, one run per thread count and (tpcc-hybrid) contention degree.
fn plan_tables(args: &BenchArgs, index: Index, protocols: &[(ProtocolKind, bool)]) -> Result<Vec<Planned>> {
    let t = &args.threads;
    if t.prefetch.iter().any(|&on| on) {
        bail!("--prefetch is for the flat store: add --index array");
    }
    let thetas: Vec<f64> = if args.workload.is_tpcc() {
        if args.theta.len() > 1 {
            bail!("{} has no Zipf skew: give no --theta list", args.workload.name());
        }
        vec![0.0]
    } else {
        args.theta.clone()
    };
    let mut planned = Vec::new();
    let bindings = if args.workload.is_tpcc() { args.workload.binding.clone() } else { vec!["fixed".into()] };
    for &theta in &thetas {
        for range in args.workload.analytic_ranges() {
            for binding in &bindings {
                let mut workload = args.workload.clone();
                workload.binding = vec![binding.clone()];
                workload.build_tables(theta, args.seed, range.unwrap_or(0.0))?;
                for (&threads, &(protocol, reorder)) in
                    t.threads.iter().flat_map(|threads| protocols.iter().map(move |p| (threads, p)))
                {
                    if protocol == ProtocolKind::Serial && threads != t.threads[0] {
                        continue; // serial runs one thread whatever the sweep says
                    }
                    let config = TablesConfig {
                        protocol,
                        reorder,
                        batch: (t.batch > 0).then_some(t.batch),
                        threads,
                        index,
                        versions: t.versions,
                        ..TablesConfig::default()
                    };
                    let mut label = vec![("protocol".to_owned(), config.label())];
                    if !args.workload.is_tpcc() {
                        label.push(("theta".into(), format!("{theta}")));
                    }
                    if bindings.len() > 1 {
                        label.push(("binding".into(), binding.clone()));
                    }
                    if let Some(range) = range.filter(|_| args.workload.analytic_range.len() > 1) {
                        label.push(("analytic_range".into(), format!("{range}")));
                    }
                    if t.threads.len() > 1 {
                        label.push(("threads".into(), threads.to_string()));
                    }
                    planned.push(planned_table_run(args, &workload, theta, range, config, label));
                }
            }
        }
    }
    Ok(planned)
}

fn planned_table_run(
    args: &BenchArgs,
    workload_args: &super::workloads::WorkloadArgs,
    theta: f64,
    analytic_range: Option<f64>,
    config: TablesConfig,
    label: Vec<(String, String)>,
) -> Planned {
    let mut knobs: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    for (name, value) in workload_args.describe() {
        knobs.insert(name.into(), value);
    }
    knobs.insert("protocol".into(), config.label().into());
    knobs.insert("reorder".into(), config.reorder.into());
    if config.reorder {
        knobs.insert("batch".into(), config.effective_batch().into());
    }
    if config.protocol != ProtocolKind::Silo {
        knobs.insert("versions".into(), config.versions.into());
    }
    knobs.insert("threads".into(), config.threads.into());
    knobs.insert("index".into(), config.index.name().into());
    knobs.insert("epoch_ms".into(), config.epoch_ms.into());
    if let Some(range) = analytic_range {
        knobs.insert("analytic_range".into(), range.into());
    }
    if !workload_args.is_tpcc() {
        knobs.insert("payload_bytes".into(), workload_args.payload_bytes.into());
    }
    let info = args.run_info("threads", workload_args.name(), config.label(), theta, knobs);
    let workload_args = workload_args.clone();
    Planned {
        info: info.clone(),
        label,
        run: Box::new(move |options: &Options, seed: u64, bar: &ProgressBar| {
            let workload = workload_args.build_tables(theta, seed, analytic_range.unwrap_or(0.0))?;
            let spec = TableRunSpec {
                seed,
                warmup: Duration::from_secs_f64(options.warmup_s),
                duration: Duration::from_secs_f64(options.duration_s),
                cooldown: Duration::from_secs_f64(options.cooldown_s),
                record_history: options.history.is_some() || options.verify,
            };
            let meter = RateMeter::new(bar);
            let report = ordo_threads::tables::run(&config, &workload, &spec, |elapsed_s, commits| {
                meter.update(elapsed_s, commits);
            })
            .map_err(|e| anyhow!("{e}"))?;
            let consistency = report.consistency.as_ref().map_err(|e| anyhow!("after the run: {e}"))?;
            bar.suspend(|| {
                eprintln!(
                    "{} on tables ({} index): loaded in {:.2} s; after the run {} hold",
                    config.label(),
                    config.index.name(),
                    report.load_s,
                    consistency.checked.join(", ")
                );
            });
            if let Some(path) = &options.history {
                super::write_history(path, report.history.iter().cloned())?;
            }
            if options.verify {
                let checked = ordo_history::check(&report.history).map_err(|v| anyhow!("not serializable: {v}"))?;
                bar.suspend(|| {
                    eprintln!(
                        "verified: {} committed transactions serializable ({} dependency edges; {} inserts, {} \
                         deletes, {} scans of {} rows, {} absences seen by scans and absent reads)",
                        checked.transactions,
                        checked.edges(),
                        checked.inserts,
                        checked.deletes,
                        checked.scans,
                        checked.scanned_rows,
                        checked.scanned_absences + checked.ambiguous_absences
                    );
                });
            }
            let mut info = info.clone();
            info.seed = seed;
            let names = workload.procedure_names();
            let mut result = RunResult::from_recorder(info, &report.recorder, report.measured_s, names);
            result.aborts_by_procedure = report
                .aborts_by_procedure
                .iter()
                .enumerate()
                .filter(|&(_, &count)| count > 0)
                .map(|(i, &count)| {
                    (names.get(i).map_or_else(|| format!("procedure_{i}"), |n| (*n).to_owned()), count as f64)
                })
                .collect();
            if workload.name().starts_with("tpcc") && report.measured_s > 0.0 {
                let new_orders = result.commits_by_procedure.get("new_order").copied().unwrap_or(0.0);
                result.tpmc = Some(new_orders * 60.0 / report.measured_s);
            }
            Ok(result)
        }),
    }
}
