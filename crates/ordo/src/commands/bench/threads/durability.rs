//! `ordo bench --engine threads --wal DIR --durability off|async|sync --epoch-ms N`: the
//! thread-per-worker engine with its write-ahead log (issue 17).
//!
//! With `--wal`, every run logs its commits into DIR and acknowledges a transaction (counts
//! it, ends its latency, releases its history entry) only when its epoch is durable (`sync`,
//! the default) or once logged (`async`). A run started on a directory that holds a log
//! recovers from it first (its time is part of the load time) and continues that database;
//! runs of a sweep therefore continue one another. `--history FILE` is then appended as
//! commits are acknowledged and flushed every few milliseconds, so a run killed at any moment
//! leaves a file of acknowledged transactions only. Results record `durability`, `epoch_ms`
//! and `wal` in their configuration.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use ordo_history::HistoryEntry;
use ordo_log::Durability;
use ordo_pipeline::decision_log::DecisionLogConfig;
use ordo_threads::tables::driver::durability_name;
use ordo_threads::tables::durable::CheckpointPolicy;
use ordo_threads::tables::{TableRunReport, TablesConfig};

/// The pipeline validator's group-commit interval unless `--epoch-ms` says.
const PIPELINE_EPOCH_MS_DEFAULT: u64 = 10;

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Durability (threads engine, and the pipeline's validator)")]
pub struct DurabilityArgs {
    /// Log commits to this directory (write-ahead log with group commit by epochs). A
    /// directory that holds a log is recovered before the run, and the run continues it. The
    /// threads engine then runs on tables (key-value workloads use --index tree); the pipeline
    /// logs its validator's decisions.
    #[arg(long, value_name = "DIR")]
    pub wal: Option<PathBuf>,
    /// When a commit is acknowledged: off (nothing logged), async (once logged, before its
    /// fsync) or sync (once its epoch is durable). Default: sync with --wal, off without.
    #[arg(long, value_parser = ["off", "async", "sync"])]
    pub durability: Option<String>,
    /// Epoch length in milliseconds: the threads engine's epochs and, with --wal, the
    /// group-commit interval (pipeline: 10 unless given).
    #[arg(long, value_name = "N")]
    pub epoch_ms: Option<u64>,
    /// With --wal: take a fuzzy checkpoint this often (milliseconds after the previous one).
    #[arg(long, value_name = "MS")]
    pub checkpoint_ms: Option<u64>,
    /// With --wal: take a fuzzy checkpoint after this many MiB of log (0: never on size);
    /// the segments it covers are deleted, so this bounds the log's disk use.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub checkpoint_log_mib: u64,
}

impl DurabilityArgs {
    /// Whether any durability flag asks for the log.
    pub fn logs(&self) -> bool {
        self.wal.is_some() || self.durability.as_deref().is_some_and(|d| d != "off")
    }

    fn durability(&self) -> Durability {
        match (self.durability.as_deref(), &self.wal) {
            (Some("async"), _) => Durability::Async,
            (Some("sync"), _) | (None, Some(_)) => Durability::Sync,
            _ => Durability::Off,
        }
    }

    /// The flat store (`--index array` with a key-value workload) has no log and no epoch
    /// knob: refuses the durability flags there.
    pub fn check_flat_store(&self) -> Result<()> {
        if self.durability.is_some() || self.epoch_ms.is_some() || self.checkpoint_ms.is_some() {
            bail!("--durability, --epoch-ms and --checkpoint-ms are for the engine on tables (--index tree or --wal)");
        }
        Ok(())
    }

    /// The pipeline engine's validator log the flags ask for (`None` without `--wal`).
    pub fn decision_log(&self) -> Result<Option<DecisionLogConfig>> {
        let durability = self.durability();
        let Some(dir) = &self.wal else {
            if durability != Durability::Off {
                bail!("--durability {} needs --wal DIR (where the log goes)", durability_name(durability));
            }
            if self.epoch_ms.is_some() || self.checkpoint_ms.is_some() {
                bail!("--epoch-ms and --checkpoint-ms are for the threads engine, or the pipeline with --wal");
            }
            return Ok(None);
        };
        if durability == Durability::Off {
            bail!("--durability off logs nothing: drop --wal, or give async or sync");
        }
        if self.checkpoint_ms.is_some() || self.checkpoint_log_mib != 1024 {
            bail!("the pipeline takes no checkpoints while it runs: drop --checkpoint-ms and --checkpoint-log-mib");
        }
        let epoch_ms = self.epoch_ms.unwrap_or(PIPELINE_EPOCH_MS_DEFAULT);
        if !(1..=60_000).contains(&epoch_ms) {
            bail!("--epoch-ms must be in 1..=60000, not {epoch_ms}");
        }
        Ok(Some(DecisionLogConfig { dir: dir.clone(), device: None, durability, epoch_ms, manual: false }))
    }

    /// The knobs a pipeline result records for its validator log.
    pub fn describe_decision_log(log: Option<&DecisionLogConfig>) -> Vec<(&'static str, serde_json::Value)> {
        match log {
            None => vec![("durability", "off".into()), ("wal", serde_json::Value::Null)],
            Some(log) => vec![
                ("durability", durability_name(log.durability).into()),
                ("wal", log.dir.display().to_string().into()),
                ("epoch_ms", log.epoch_ms.into()),
            ],
        }
    }

    /// Sets the engine's durability knobs from the flags and checks them.
    pub fn apply(&self, config: &mut TablesConfig) -> Result<()> {
        config.wal.clone_from(&self.wal);
        config.durability = self.durability();
        if let Some(epoch_ms) = self.epoch_ms {
            config.epoch_ms = epoch_ms;
        }
        config.checkpoint = CheckpointPolicy {
            period_ms: self.checkpoint_ms,
            log_bytes: (self.checkpoint_log_mib > 0).then(|| self.checkpoint_log_mib.saturating_mul(1 << 20)),
        };
        match (&config.wal, config.durability) {
            (None, Durability::Async | Durability::Sync) => {
                bail!("--durability {} needs --wal DIR (where the log goes)", durability_name(config.durability))
            }
            (Some(_), Durability::Off) => bail!("--durability off logs nothing: drop --wal, or give async or sync"),
            _ => {}
        }
        if config.wal.is_none() && (self.checkpoint_ms.is_some() || self.checkpoint_log_mib != 1024) {
            bail!("--checkpoint-ms and --checkpoint-log-mib are for runs with --wal");
        }
        config.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(())
    }

    /// `--verify` checks a history that starts from the workload's initial rows: refuses it
    /// on a log directory that already holds a log, or that a sweep's later runs would find
    /// holding one (their histories read versions earlier runs wrote).
    pub fn check_verify(&self, verify: bool, runs: usize, configurations: usize) -> Result<()> {
        let Some(dir) = self.wal.as_ref().filter(|_| verify) else { return Ok(()) };
        let holds_log = std::fs::read_dir(dir).is_ok_and(|entries| {
            entries.flatten().any(|entry| entry.file_name().to_string_lossy().starts_with("checkpoint-"))
        });
        if holds_log || runs > 1 || configurations > 1 {
            bail!(
                "--verify checks a history from the initial rows, but with --wal {} a run continues the log's \
                 database (versions earlier runs wrote are not in its history): give a new directory and one run",
                dir.display()
            );
        }
        Ok(())
    }

    /// The knobs results record.
    pub fn describe(config: &TablesConfig) -> Vec<(&'static str, serde_json::Value)> {
        let wal = config.wal.as_ref().map_or(serde_json::Value::Null, |path| path.display().to_string().into());
        let mut knobs = vec![("durability", durability_name(config.durability).into()), ("wal", wal)];
        if config.wal.is_some() {
            knobs.push(("checkpoint_ms", config.checkpoint.period_ms.into()));
            knobs.push(("checkpoint_log_bytes", config.checkpoint.log_bytes.into()));
        }
        knobs
    }
}

/// The file in a log directory naming the workload and seed its data was made from.
const DATA_NAME: &str = "workload.json";

/// The seed a run builds its workload's data from. Without a log, the run's own. With one,
/// `--seed` (the same for every run of a sweep), checked against the seed the directory was
/// created with (recorded in its `workload.json`): the run continues that directory's data,
/// and checks such as SmallBank's conserved total compare with its initial rows.
pub fn data_seed(
    config: &TablesConfig,
    workload: &super::super::workloads::WorkloadArgs,
    base_seed: u64,
    run_seed: u64,
) -> Result<u64> {
    let Some(dir) = &config.wal else { return Ok(run_seed) };
    std::fs::create_dir_all(dir).with_context(|| format!("--wal: cannot create {}", dir.display()))?;
    let path = dir.join(DATA_NAME);
    let wanted = serde_json::json!({ "workload": workload.name(), "seed": base_seed });
    match std::fs::read(&path) {
        Ok(bytes) => {
            let found: serde_json::Value = serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not what ordo writes there", path.display()))?;
            if found != wanted {
                bail!(
                    "--wal {}: its data was made by {found}, not {wanted}; give the same --workload and --seed, or \
                     another directory",
                    dir.display()
                );
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let temporary = dir.join(format!("{DATA_NAME}.tmp"));
            std::fs::write(&temporary, wanted.to_string())
                .and_then(|()| std::fs::rename(&temporary, &path))
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
    Ok(base_seed)
}

/// A history file appended as commits are acknowledged, flushed after every batch (the
/// history format's JSON lines).
pub struct HistoryStream {
    writer: std::io::BufWriter<Box<dyn Write>>,
    path: PathBuf,
    /// Everything written, when the run is verified afterwards.
    kept: Option<Vec<HistoryEntry>>,
}

impl HistoryStream {
    /// Creates (or truncates) `path` (`-`: standard output).
    pub fn create(path: &Path, keep: bool) -> Result<Self> {
        let out: Box<dyn Write> = if path.as_os_str() == "-" {
            Box::new(std::io::stdout())
        } else {
            Box::new(std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?)
        };
        Ok(HistoryStream { writer: std::io::BufWriter::new(out), path: path.to_path_buf(), kept: keep.then(Vec::new) })
    }

    /// Appends a batch of acknowledged transactions and flushes it.
    pub fn append(&mut self, entries: &[HistoryEntry]) -> Result<(), String> {
        let failed = |error: &dyn std::fmt::Display| format!("{}: {error}", self.path.display());
        for entry in entries {
            serde_json::to_writer(&mut self.writer, entry).map_err(|error| failed(&error))?;
            self.writer.write_all(b"\n").map_err(|error| failed(&error))?;
        }
        self.writer.flush().map_err(|error| failed(&error))?;
        if let Some(kept) = &mut self.kept {
            kept.extend_from_slice(entries);
        }
        Ok(())
    }

    /// The entries written, if kept.
    pub fn into_kept(self) -> Vec<HistoryEntry> {
        self.kept.unwrap_or_default()
    }
}

/// What the log did, for the run's line on standard error.
pub fn summary(report: &TableRunReport) -> Option<String> {
    let durability = report.durability.as_ref()?;
    let mut line = String::new();
    if let Some(recovery) = &durability.recovery {
        let recovered = &recovery.recovered;
        line.push_str(&format!(
            "recovered {} rows ({} from the checkpoint, {} transactions of the log) through epoch {} in {:.2} s{}; ",
            recovered.stats.rows,
            recovered.stats.checkpoint_rows,
            recovered.stats.transactions,
            recovered.durable_epoch,
            recovery.seconds,
            recovered.cut.as_ref().map_or(String::new(), |cut| format!(
                " (log cut at {} offset {}: {})",
                cut.file, cut.offset, cut.reason
            )),
        ));
    }
    line.push_str(&format!(
        "logged {:.1} MB, durable through epoch {}, {} checkpoint(s)",
        durability.log_bytes as f64 / 1e6,
        durability.durable_epoch,
        durability.checkpoints
    ));
    Some(line)
}
