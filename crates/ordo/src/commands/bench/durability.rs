//! `--wal DIR --durability off|async|sync --epoch-ms N` (and, for the threads engine, the
//! checkpoint knobs): the write-ahead log of `ordo bench threads` and of the pipeline's
//! validator (issue 17).
//!
//! With `--wal`, every run logs its commits into DIR and acknowledges a transaction (counts
//! it, ends its latency, releases its history entry) only when its epoch is durable (`sync`,
//! the default) or once logged (`async`). A run started on a directory that holds a log
//! recovers from it first (its time is part of the load time) and continues that database;
//! runs of a sweep therefore continue one another. On the threads engine `--history FILE` is
//! then appended as commits are acknowledged and flushed every few milliseconds, so a run
//! killed at any moment leaves a file of acknowledged transactions only.
//!
//! ```text
//!  LogArgs (--wal, --durability, --epoch-ms)          both engines
//!    └─ DurabilityArgs (+ --checkpoint-ms, --checkpoint-log-mib)   threads engine
//!  threads:  apply ──> TablesConfig { wal, durability, epoch_ms, checkpoint }
//!  pipeline: decision_log ──> PipelineConfig::decision_log
//! ```
//!
//! Every value is typed and range-checked before anything runs, and results record
//! `durability`, `epoch_ms`, `wal` (and on the threads engine `checkpoint_ms` and
//! `checkpoint_log_mib`) in their configuration.

use std::io::Write;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use ordo_history::HistoryEntry;
use ordo_log::Durability;
use ordo_pipeline::decision_log::DecisionLogConfig;
use ordo_threads::tables::durable::CheckpointPolicy;
use ordo_threads::tables::{TableRunReport, TablesConfig};
use serde::{Deserialize, Serialize};

use super::Flags;
use super::values::{Bound, within};
use super::workloads::WorkloadArgs;

/// Longest epoch (the threads engine's epochs, and the log's group-commit interval), in ms.
pub const EPOCH_MS_MAX: u64 = 60_000;
/// The pipeline validator's group-commit interval unless `--epoch-ms` says.
pub const PIPELINE_EPOCH_MS_DEFAULT: u64 = 10;
/// Longest checkpoint period: a day, in ms.
pub const CHECKPOINT_MS_MAX: u64 = 86_400_000;
/// Log growth between two checkpoints unless `--checkpoint-log-mib` says, in MiB.
pub const CHECKPOINT_LOG_MIB_DEFAULT: usize = 1024;
/// Largest log growth between two checkpoints: 1 TiB, in MiB.
pub const CHECKPOINT_LOG_MIB_MAX: usize = 1 << 20;

/// `--durability`: when a commit is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DurabilityArg {
    /// Nothing is logged.
    Off,
    /// Once logged, before its fsync.
    Async,
    /// Once its epoch is durable.
    Sync,
}

impl From<DurabilityArg> for Durability {
    fn from(durability: DurabilityArg) -> Durability {
        match durability {
            DurabilityArg::Off => Durability::Off,
            DurabilityArg::Async => Durability::Async,
            DurabilityArg::Sync => Durability::Sync,
        }
    }
}

impl From<Durability> for DurabilityArg {
    fn from(durability: Durability) -> DurabilityArg {
        match durability {
            Durability::Off => DurabilityArg::Off,
            Durability::Async => DurabilityArg::Async,
            Durability::Sync => DurabilityArg::Sync,
        }
    }
}

/// The log's flags both engines take.
#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Durability")]
pub struct LogArgs {
    /// Log commits to this directory (write-ahead log with group commit by epochs). A
    /// directory that holds a log is recovered before the run, and the run continues it. The
    /// threads engine then runs on tables (key-value workloads behind --index tree); the
    /// pipeline logs its validator's decisions.
    #[arg(long, value_name = "DIR")]
    pub wal: Option<PathBuf>,
    /// When a commit is acknowledged: off (nothing logged), async (once logged, before its
    /// fsync) or sync (once its epoch is durable). Default: sync with --wal, off without.
    #[arg(long, value_enum)]
    pub durability: Option<DurabilityArg>,
    /// Epoch length in milliseconds, 1..=60000: the threads engine's epochs on tables and,
    /// with --wal, the group-commit interval. Default: 40 (threads), 10 (the pipeline's log).
    #[arg(long, value_name = "MS")]
    pub epoch_ms: Option<u64>,
}

impl Default for LogArgs {
    fn default() -> Self {
        super::defaults()
    }
}

impl LogArgs {
    /// Whether the flags ask for a log.
    pub fn logs(&self) -> bool {
        self.wal.is_some() || self.durability.is_some_and(|d| d != DurabilityArg::Off)
    }

    /// The durability in force: as given, else sync with a log directory and off without.
    pub fn durability(&self) -> DurabilityArg {
        match (self.durability, &self.wal) {
            (Some(durability), _) => durability,
            (None, Some(_)) => DurabilityArg::Sync,
            (None, None) => DurabilityArg::Off,
        }
    }

    /// Checks what both engines share: a log directory goes with async or sync, and the
    /// epoch's range.
    pub fn validate(&self) -> Result<()> {
        match (&self.wal, self.durability()) {
            (None, durability @ (DurabilityArg::Async | DurabilityArg::Sync)) => {
                bail!("--durability {} needs --wal DIR (where the log goes)", super::value_name(&durability))
            }
            (Some(_), DurabilityArg::Off) => bail!("--durability off logs nothing: drop --wal, or give async or sync"),
            (Some(dir), _) if dir.as_os_str().is_empty() => bail!("--wal needs a directory"),
            _ => {}
        }
        within("--epoch-ms", self.epoch_ms, 1, EPOCH_MS_MAX)
    }

    /// The pipeline's validator log the flags ask for (`None` without `--wal`). Assumes
    /// [`Self::validate`].
    pub fn decision_log(&self) -> Result<Option<DecisionLogConfig>> {
        let Some(dir) = &self.wal else {
            if self.epoch_ms.is_some() {
                bail!("--epoch-ms is the pipeline validator's group-commit interval: it needs --wal DIR");
            }
            return Ok(None);
        };
        Ok(Some(DecisionLogConfig {
            dir: dir.clone(),
            device: None,
            durability: self.durability().into(),
            epoch_ms: self.epoch_ms.unwrap_or(PIPELINE_EPOCH_MS_DEFAULT),
            manual: false,
            checkpoint_log_bytes: ordo_pipeline::decision_log::CHECKPOINT_LOG_BYTES_DEFAULT,
        }))
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

    /// The flags off their defaults, as `--flag=value`.
    pub fn flags(&self, flags: &mut Flags) {
        flags.optional("--wal", self.wal.as_ref().map(|dir| dir.display().to_string()).as_ref());
        flags.optional("--durability", self.durability.as_ref().map(super::value_name).as_ref());
        flags.optional("--epoch-ms", self.epoch_ms.as_ref());
    }
}

/// The threads engine's durability flags: the log's, and when checkpoints are taken.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct DurabilityArgs {
    #[command(flatten)]
    pub log: LogArgs,
    /// With --wal: take a fuzzy checkpoint this long after the previous one (ms,
    /// 1..=86400000). Default: not on a period.
    #[arg(long, value_name = "MS", help_heading = "Durability")]
    pub checkpoint_ms: Option<u64>,
    /// With --wal: take a fuzzy checkpoint once the log grew by this many MiB (1..=1048576),
    /// or `unbounded` (never on size); the segments a checkpoint covers are deleted, so this
    /// bounds the log's disk use. Default: 1024.
    #[arg(long, value_name = "MIB", help_heading = "Durability")]
    pub checkpoint_log_mib: Option<Bound>,
}

impl Default for DurabilityArgs {
    fn default() -> Self {
        super::defaults()
    }
}

impl DurabilityArgs {
    /// Checks the flags before anything runs (`flat`: the run is on the flat store, which
    /// has no log and no epochs).
    pub fn validate(&self, flat: bool) -> Result<()> {
        self.log.validate()?;
        within("--checkpoint-ms", self.checkpoint_ms, 1, CHECKPOINT_MS_MAX)?;
        within("--checkpoint-log-mib", self.checkpoint_log_mib.and_then(Bound::limit), 1, CHECKPOINT_LOG_MIB_MAX)?;
        if self.log.wal.is_none() && (self.checkpoint_ms.is_some() || self.checkpoint_log_mib.is_some()) {
            bail!("--checkpoint-ms and --checkpoint-log-mib are for runs with --wal");
        }
        if flat && (self.log.durability.is_some() || self.log.epoch_ms.is_some()) {
            bail!("--durability and --epoch-ms are for the engine on tables (--index tree, the default, or --wal)");
        }
        Ok(())
    }

    /// Log growth between two checkpoints (`None`: never on size).
    pub fn checkpoint_log_mib(&self) -> Option<usize> {
        match self.checkpoint_log_mib {
            None => Some(CHECKPOINT_LOG_MIB_DEFAULT),
            Some(bound) => bound.limit(),
        }
    }

    /// Sets the engine's durability knobs from the flags.
    pub fn apply(&self, config: &mut TablesConfig) {
        config.wal.clone_from(&self.log.wal);
        config.durability = self.log.durability().into();
        if let Some(epoch_ms) = self.log.epoch_ms {
            config.epoch_ms = epoch_ms;
        }
        config.checkpoint = CheckpointPolicy {
            period_ms: self.checkpoint_ms,
            log_bytes: self.checkpoint_log_mib().map(|mib| (mib as u64).saturating_mul(1 << 20)),
        };
    }

    /// What a result records about the log of a run on tables: the durability always, the
    /// rest with a log.
    pub fn knobs(config: &TablesConfig) -> DurabilityKnobs {
        let logged = config.wal.is_some();
        let mib = |bytes: u64| usize::try_from(bytes >> 20).ok().and_then(NonZeroUsize::new);
        DurabilityKnobs {
            durability: Some(config.durability.into()),
            wal: config.wal.clone(),
            checkpoint_ms: config.checkpoint.period_ms.filter(|_| logged),
            checkpoint_log_mib: logged.then(|| match config.checkpoint.log_bytes.and_then(mib) {
                Some(mib) => Bound::AtMost(mib),
                None => Bound::Unbounded,
            }),
        }
    }

    /// The flags off their defaults, as `--flag=value`.
    pub fn flags(&self, flags: &mut Flags) {
        self.log.flags(flags);
        flags.optional("--checkpoint-ms", self.checkpoint_ms.as_ref());
        flags.optional("--checkpoint-log-mib", self.checkpoint_log_mib.as_ref());
    }
}

/// What a threads-engine result records about its log (all `None` on the flat store).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DurabilityKnobs {
    /// When commits were acknowledged (runs on tables).
    pub durability: Option<DurabilityArg>,
    /// The log directory (with a log).
    pub wal: Option<PathBuf>,
    /// The checkpoint period (with a log, where one was given).
    pub checkpoint_ms: Option<u64>,
    /// Log growth between checkpoints (with a log).
    pub checkpoint_log_mib: Option<Bound>,
}

/// `checkpoint_log_mib` as results write it: a number, or `"unbounded"`.
pub fn bound_to_json(bound: Bound) -> serde_json::Value {
    match bound {
        Bound::Unbounded => "unbounded".into(),
        Bound::AtMost(n) => n.get().into(),
    }
}

/// `checkpoint_log_mib` as results write it, read back.
pub fn bound_from_json(value: &serde_json::Value) -> Result<Bound> {
    match value {
        serde_json::Value::String(s) => s.parse::<Bound>().map_err(|e| anyhow::anyhow!("checkpoint_log_mib {e}")),
        serde_json::Value::Number(n) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .and_then(NonZeroUsize::new)
            .map(Bound::AtMost)
            .ok_or_else(|| anyhow::anyhow!("checkpoint_log_mib {n}: expected unbounded or a positive number")),
        other => bail!("checkpoint_log_mib {other}: expected unbounded or a positive number"),
    }
}

/// The file in a log directory naming the workload and seed its data was made from.
const DATA_NAME: &str = "workload.json";

/// The seed a run builds its workload's data from. Without a log, the run's own. With one,
/// `--seed` (the same for every run of a sweep), checked against the seed the directory was
/// created with (recorded in its `workload.json`): the run continues that directory's data,
/// and checks such as SmallBank's conserved total compare with its initial rows.
pub fn data_seed(config: &TablesConfig, workload: &WorkloadArgs, base_seed: u64, run_seed: u64) -> Result<u64> {
    let Some(dir) = &config.wal else { return Ok(run_seed) };
    std::fs::create_dir_all(dir).with_context(|| format!("--wal: cannot create {}", dir.display()))?;
    let path = dir.join(DATA_NAME);
    let wanted = serde_json::json!({ "workload": workload.name().name(), "seed": base_seed });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(argv: &[&str]) -> Result<DurabilityArgs> {
        let mut all = vec!["ordo".to_owned()];
        all.extend(argv.iter().map(|s| (*s).to_owned()));
        super::super::parse::<DurabilityArgs>(&all)
    }

    #[test]
    fn durability_defaults_to_sync_with_a_directory_and_off_without() {
        assert_eq!(parsed(&[]).unwrap().log.durability(), DurabilityArg::Off);
        let with_dir = parsed(&["--wal", "w"]).unwrap();
        assert_eq!(with_dir.log.durability(), DurabilityArg::Sync);
        let mut config = TablesConfig::default();
        with_dir.apply(&mut config);
        assert_eq!(config.durability, Durability::Sync);
        assert_eq!(config.checkpoint.log_bytes, Some(1 << 30));
        assert!(config.validate().is_ok());
    }

    #[test]
    fn bad_values_are_refused_with_the_flag_named() {
        let error = |argv: &[&str]| match parsed(argv) {
            Ok(args) => args.validate(false).unwrap_err().to_string(),
            Err(error) => error.to_string(),
        };
        assert!(error(&["--durability", "fast"]).contains("--durability"));
        assert!(error(&["--durability", "sync"]).contains("needs --wal"));
        assert!(error(&["--wal", "w", "--durability", "off"]).contains("logs nothing"));
        assert!(error(&["--wal", "w", "--epoch-ms", "0"]).contains("--epoch-ms 0"));
        assert!(error(&["--wal", "w", "--epoch-ms", "60001"]).contains("1..=60000"));
        assert!(error(&["--wal", "w", "--checkpoint-log-mib", "0"]).contains("unbounded"));
        assert!(error(&["--wal", "w", "--checkpoint-log-mib", "1048577"]).contains("--checkpoint-log-mib"));
        assert!(error(&["--checkpoint-ms", "100"]).contains("with --wal"));
        let flat = parsed(&["--epoch-ms", "5"]).unwrap();
        assert!(flat.validate(false).is_ok(), "epochs of the engine on tables");
        assert!(flat.validate(true).unwrap_err().to_string().contains("on tables"));
    }

    #[test]
    fn the_checkpoint_knobs_reach_the_engine_and_the_results() {
        let args = parsed(&["--wal", "w", "--durability", "async", "--checkpoint-ms", "500"]).unwrap();
        args.validate(false).unwrap();
        let mut config = TablesConfig::default();
        args.apply(&mut config);
        assert_eq!(config.checkpoint, CheckpointPolicy { period_ms: Some(500), log_bytes: Some(1 << 30) });
        let knobs = DurabilityArgs::knobs(&config);
        assert_eq!(knobs.durability, Some(DurabilityArg::Async));
        assert_eq!(knobs.checkpoint_ms, Some(500));
        assert_eq!(knobs.checkpoint_log_mib, Some(Bound::AtMost(NonZeroUsize::new(1024).unwrap())));
        let never = parsed(&["--wal", "w", "--checkpoint-log-mib", "unbounded"]).unwrap();
        never.apply(&mut config);
        assert_eq!(config.checkpoint.log_bytes, None);
        assert_eq!(DurabilityArgs::knobs(&config).checkpoint_log_mib, Some(Bound::Unbounded));
        for bound in [Bound::Unbounded, Bound::AtMost(NonZeroUsize::new(7).unwrap())] {
            assert_eq!(bound_from_json(&bound_to_json(bound)).unwrap(), bound);
        }
        assert!(bound_from_json(&serde_json::Value::from(0)).is_err());
    }
}
