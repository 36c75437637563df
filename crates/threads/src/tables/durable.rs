//! Durability for the engine over tables: the write-ahead log directory, recovery into a
//! [`Database`], fuzzy checkpoints while transactions run, and the manifest that ties a
//! directory to its workload's schema. The log itself (record format, group commit by epochs,
//! fail-stop logger, recovery scan) is `ordo-log`; this module wires it to the tables.
//!
//! ```text
//!  open(dir):   manifest.json matches the workload's schema?   (else: a clear error)
//!               no checkpoint yet  -> load the workload's rows, write checkpoint-1 (B = 1),
//!                                     and only then start the logger (segment 0)
//!               a checkpoint       -> recover: checkpoint + log -> RowLoader (versions kept)
//!               logger resumes after the recovered epoch; the database's epoch follows it
//!  run:         workers: Trace -> WorkerLog (per-worker buffer, one lock per commit)
//!               logger thread: epoch -> closable -> write + fsync -> durable_epoch
//!               checkpoint thread (Checkpointer): on a period or every N log bytes,
//!                 B = durable + 1, scan every table in key order, end epoch E = global,
//!                 wait until durable >= E, commit, delete segments before B
//! ```
//!
//! # Why the begin epoch is `durable + 1`
//!
//! A worker appends a transaction's record only after installing all its writes, and the
//! logger closes an epoch only once no worker can append to it any more. So when the log is
//! durable through `D`, every transaction of an epoch `<= D` is fully installed: a checkpoint
//! that begins at `D + 1` may skip every segment whose epochs all precede it. Rows it reads
//! that later writes change (or that it reads torn, without the protocol's lock, see
//! [`Database::scan_rows`]) are overtaken at recovery by those writes, which are in the log.
//!
//! # The manifest
//!
//! `manifest.json` (`ordo_log::manifest`) records the workload's name and its schema (tables,
//! row widths, columns, dense key counts), made here from the workload's `Schema`. An engine
//! refuses a directory written for another schema, and `ordo recover --dump` names each row's
//! columns from it without knowing the workload.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use ordo_log::manifest::{MANIFEST_FORMAT, MANIFEST_NAME, Manifest, ManifestColumn, ManifestTable};
use ordo_log::{CheckpointWriter, Dir, Durability, LogConfig, LogError, Logger, Recovered, WorkerLog, naming};
use ordo_storage::{ColumnType, Schema, TableId};
use ordo_workload::TableWorkload;

use super::database::{Database, Index, Layout, LoadError, RowLoader};
use super::epoch::Epochs;

/// Rows a checkpoint reads per step (one epoch pin per step).
pub const CHECKPOINT_ROWS_PER_STEP: usize = 4096;
/// Segments rotate at about this size.
pub const SEGMENT_BYTES_MAX: u64 = 64 << 20;

/// When fuzzy checkpoints are taken while transactions run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointPolicy {
    /// Take one this long after the previous one ended (`None`: not on a period).
    pub period_ms: Option<u64>,
    /// Take one once the log grew by this many bytes since the previous one (`None`: not on
    /// size). Segments a checkpoint covers are deleted, so this bounds the log's disk use.
    pub log_bytes: Option<u64>,
}

impl Default for CheckpointPolicy {
    fn default() -> Self {
        CheckpointPolicy { period_ms: None, log_bytes: Some(1 << 30) }
    }
}

/// Why the log directory could not be used or the log stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurableError {
    #[error("write-ahead log {dir}: {reason}")]
    Directory { dir: String, reason: String },
    #[error("write-ahead log {dir}: {source}")]
    Load {
        dir: String,
        #[source]
        source: LoadError,
    },
}

/// The manifest of `workload`: its name and schema.
pub fn manifest_of(workload: &dyn TableWorkload) -> Manifest {
    manifest_from_schema(workload.name(), workload.schema())
}

/// The manifest of a workload named `workload` with `schema`.
pub fn manifest_from_schema(workload: &str, schema: &Schema) -> Manifest {
    let tables = schema
        .tables()
        .iter()
        .map(|table| ManifestTable {
            name: table.name.to_owned(),
            row_words: table.row_words,
            columns: table
                .columns
                .iter()
                .map(|column| {
                    let (ty, bytes) = match column.ty {
                        ColumnType::Int => ("int", None),
                        ColumnType::Chars(bytes) => ("chars", Some(bytes)),
                    };
                    ManifestColumn { name: column.name.to_owned(), ty: ty.to_owned(), bytes, word: column.word }
                })
                .collect(),
            dense_keys: table.dense_keys,
            index_of: table.index_of.map(|index| index.base),
        })
        .collect();
    Manifest { format: MANIFEST_FORMAT, workload: workload.to_owned(), tables }
}

/// What starting on a log directory recovered (`None` in [`Opened`] for a fresh directory).
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryReport {
    pub recovered: Recovered,
    /// Seconds to recover the log and load the database from it.
    pub seconds: f64,
}

/// A log directory opened for a run: the database it holds, the logger, and each worker's
/// handle to it.
#[derive(Debug)]
pub struct Opened {
    pub database: Database,
    pub logger: Logger,
    pub logs: Vec<WorkerLog>,
    pub dir: Arc<dyn Dir>,
    pub recovery: Option<RecoveryReport>,
}

/// How to open a log directory.
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    pub durability: Durability,
    pub epoch_ms: u64,
    pub workers: usize,
    pub index: Index,
    pub load_threads: usize,
    /// How the protocol lays out records (a single-version layout names the meta word of
    /// records loaded from the workload).
    pub layout: Layout,
    /// The protocol's meta word for a record recovered at a version.
    pub recovered_meta: fn(u64) -> u64,
    /// A logger the caller steps (deterministic tests) instead of a thread.
    pub manual_logger: bool,
    pub segment_bytes_max: u64,
}

/// Opens the log directory `dir` (`path` names it in errors) for `workload`: recovers the
/// database it holds, or loads the workload's initial rows into a fresh one and writes its
/// first checkpoint; then starts the logger after the recovered epoch.
pub fn open(
    dir: Arc<dyn Dir>,
    path: &Path,
    workload: &dyn TableWorkload,
    options: &OpenOptions,
) -> Result<Opened, DurableError> {
    let dir_name = path.display().to_string();
    let problem = |reason: String| DurableError::Directory { dir: dir_name.clone(), reason };
    let log_error = |error: LogError| DurableError::Directory { dir: dir_name.clone(), reason: error.to_string() };
    let load_error = |source: LoadError| DurableError::Load { dir: dir_name.clone(), source };
    if options.durability == Durability::Off {
        return Err(problem("durability off logs nothing; give async or sync with a log directory".into()));
    }
    let wanted = manifest_of(workload);
    let names = dir.list().map_err(|e| problem(e.to_string()))?;
    let files: Vec<naming::LogFile> = names.iter().filter_map(|name| naming::parse(name)).collect();
    let has_checkpoint = files.iter().any(|file| matches!(file, naming::LogFile::Checkpoint { .. }));
    let has_segments = files.iter().any(|file| matches!(file, naming::LogFile::Segment { .. }));
    match Manifest::read(&*dir).map_err(&problem)? {
        Some(found) => {
            if let Some(reason) = found.mismatch(&wanted) {
                return Err(problem(format!("cannot run {} here: {reason}", workload.name())));
            }
        }
        None if has_checkpoint || has_segments => {
            return Err(problem(format!("it holds log files but no {MANIFEST_NAME}; it was not written by ordo")));
        }
        None => wanted.write(&*dir).map_err(log_error)?,
    }
    let (database, recovery) = if has_checkpoint {
        let started = Instant::now();
        let mut loader = RowLoader::new(workload.schema(), options.index, options.layout, options.recovered_meta)
            .map_err(load_error)?;
        let mut failed = None;
        let recovered = ordo_log::recover(&*dir, |row| {
            if failed.is_none()
                && let Err(error) = loader.row(row.table, row.key, row.version, row.row)
            {
                failed = Some(error);
            }
        })
        .map_err(log_error)?;
        if let Some(error) = failed {
            return Err(load_error(error));
        }
        let database = loader.finish(&recovered.versions_max, Epochs::manual()).map_err(load_error)?;
        (database, Some(RecoveryReport { recovered, seconds: started.elapsed().as_secs_f64() }))
    } else {
        if has_segments {
            return Err(problem(
                "it holds log segments but no checkpoint (every log starts with one); it lost its checkpoint".into(),
            ));
        }
        let database =
            Database::load_with(workload, options.index, options.load_threads, options.layout, Epochs::manual())
                .map_err(load_error)?;
        // The first checkpoint holds the initial rows; the log holds only what changes them.
        let mut scan = Scan::begin(&*dir, 1).map_err(log_error)?;
        let mut row = Vec::new();
        while !scan.advance(&database, usize::MAX, &mut row).map_err(log_error)? {}
        scan.writer.finish(0, 0).map_err(log_error)?;
        (database, None)
    };
    let (durable_epoch, next_segment) =
        recovery.as_ref().map_or((0, 0), |report| (report.recovered.durable_epoch, report.recovered.next_segment));
    let config = LogConfig {
        durability: options.durability,
        epoch_ms: options.epoch_ms,
        segment_bytes_max: options.segment_bytes_max,
    };
    type Start = fn(Arc<dyn Dir>, &LogConfig, usize, u64, u64) -> Result<(Logger, Vec<WorkerLog>), LogError>;
    let start: Start = if options.manual_logger { Logger::start_manual } else { Logger::start };
    let (logger, logs) =
        start(Arc::clone(&dir), &config, options.workers, durable_epoch, next_segment).map_err(log_error)?;
    let mut database = database;
    database.follow(Epochs::follow(logger.epoch_cell()));
    Ok(Opened { database, logger, logs, dir, recovery })
}

/// Where a checkpoint reads rows while transactions run: each protocol's tables, read the way
/// the protocol allows ([`super::protocol::TableProtocol::checkpoint_source`]). A
/// single-version [`Database`] reads them directly, without locks ([`Database::scan_rows`]);
/// multi-version tables read them at a snapshot the protocol keeps from being trimmed.
pub trait CheckpointSource: Sync {
    /// How many tables there are (index tables included).
    fn table_count(&self) -> usize;

    /// Reads up to `rows_max` present rows of `table` with keys from `from` upward, handing
    /// each to `sink(key, version, row)`; returns the key to go on from, or `None` once the
    /// table is done. Every row whose last write is in an epoch before the checkpoint's begin
    /// epoch must be read at that write's version or a newer one (newer writes are in the
    /// log, and recovery keeps them over the checkpoint's).
    fn checkpoint_rows(
        &self,
        table: TableId,
        from: u64,
        rows_max: usize,
        row: &mut Vec<u64>,
        sink: &mut dyn FnMut(u64, u64, &[u64]),
    ) -> Option<u64>;
}

impl CheckpointSource for Database {
    fn table_count(&self) -> usize {
        self.tables().len()
    }

    fn checkpoint_rows(
        &self,
        table: TableId,
        from: u64,
        rows_max: usize,
        row: &mut Vec<u64>,
        sink: &mut dyn FnMut(u64, u64, &[u64]),
    ) -> Option<u64> {
        self.scan_rows(table, from, rows_max, row, sink)
    }
}

/// A checkpoint's scan through every table, in `(table, key)` order.
#[derive(Debug)]
struct Scan<'d> {
    writer: CheckpointWriter<&'d dyn Dir>,
    table: usize,
    /// The key to go on from in `table`.
    next: u64,
}

impl<'d> Scan<'d> {
    fn begin(dir: &'d dyn Dir, begin_epoch: u64) -> Result<Self, LogError> {
        Ok(Scan { writer: CheckpointWriter::begin(dir, begin_epoch)?, table: 0, next: 0 })
    }

    /// Reads up to `rows_max` rows; returns whether every table is done.
    fn advance(
        &mut self,
        source: &dyn CheckpointSource,
        rows_max: usize,
        row: &mut Vec<u64>,
    ) -> Result<bool, LogError> {
        let tables = source.table_count();
        let mut budget = rows_max;
        while self.table < tables && budget > 0 {
            let table = self.table as TableId;
            let chunk = budget.min(CHECKPOINT_ROWS_PER_STEP);
            let mut result = Ok(());
            let writer = &mut self.writer;
            let next = source.checkpoint_rows(table, self.next, chunk, row, &mut |key, version, row| {
                if result.is_ok() {
                    result = writer.row_words(table, key, version, row);
                }
            });
            result?;
            budget -= chunk;
            match next {
                Some(key) => self.next = key,
                None => {
                    self.table += 1;
                    self.next = 0;
                }
            }
        }
        Ok(self.table >= tables)
    }
}

/// What a [`Checkpointer`] is doing.
#[derive(Debug)]
enum Phase<'d> {
    Idle,
    Scanning(Scan<'d>),
    /// The scan ended in `end_epoch`; the checkpoint commits once the log is durable through it.
    Waiting {
        scan: Scan<'d>,
        end_epoch: u64,
    },
}

/// What one [`Checkpointer::step`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointStep {
    /// Nothing due.
    Idle,
    /// Began a checkpoint, or read more rows.
    Scanned,
    /// Waiting for the log to be durable through the scan's end epoch.
    Waiting,
    /// Committed a checkpoint of `rows` rows at begin epoch `begin_epoch` and deleted what it covers.
    Committed { rows: u64, begin_epoch: u64 },
}

/// Takes fuzzy checkpoints while transactions run, one bounded step at a time: the thread
/// that runs it (or a deterministic test) decides when steps happen.
#[derive(Debug)]
pub struct Checkpointer<'d> {
    dir: &'d dyn Dir,
    policy: CheckpointPolicy,
    phase: Phase<'d>,
    /// When the last checkpoint ended (or the checkpointer started), and the log's size then.
    last_ms: u64,
    last_log_bytes: u64,
    row: Vec<u64>,
    /// Checkpoints committed.
    pub committed: u64,
}

impl<'d> Checkpointer<'d> {
    pub fn new(dir: &'d dyn Dir, policy: CheckpointPolicy, now_ms: u64, log_bytes: u64) -> Self {
        Checkpointer {
            dir,
            policy,
            phase: Phase::Idle,
            last_ms: now_ms,
            last_log_bytes: log_bytes,
            row: Vec::new(),
            committed: 0,
        }
    }

    /// Whether the policy asks for a checkpoint now.
    fn due(&self, now_ms: u64, log_bytes: u64) -> bool {
        self.policy.period_ms.is_some_and(|period| now_ms.saturating_sub(self.last_ms) >= period)
            || self.policy.log_bytes.is_some_and(|bytes| log_bytes.saturating_sub(self.last_log_bytes) >= bytes)
    }

    /// Starts a checkpoint now whatever the policy says (tests, and a shutdown checkpoint).
    pub fn begin_now(&mut self, logger: &Logger) -> Result<(), LogError> {
        if matches!(self.phase, Phase::Idle) {
            self.phase = Phase::Scanning(Scan::begin(self.dir, logger.durable_epoch() + 1)?);
        }
        Ok(())
    }

    /// Whether a checkpoint is in progress.
    pub fn busy(&self) -> bool {
        !matches!(self.phase, Phase::Idle)
    }

    /// One step: starts a checkpoint if one is due, reads up to `rows_max` rows, or commits a
    /// finished scan once the log is durable through its end epoch.
    pub fn step(
        &mut self,
        source: &dyn CheckpointSource,
        logger: &Logger,
        now_ms: u64,
        rows_max: usize,
    ) -> Result<CheckpointStep, LogError> {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Idle => {
                if !self.due(now_ms, logger.bytes_written()) {
                    return Ok(CheckpointStep::Idle);
                }
                self.phase = Phase::Scanning(Scan::begin(self.dir, logger.durable_epoch() + 1)?);
                Ok(CheckpointStep::Scanned)
            }
            Phase::Scanning(mut scan) => {
                if scan.advance(source, rows_max, &mut self.row)? {
                    // Every row read so far shows writes of epochs up to the current one at
                    // most; the checkpoint may commit once they are all durable.
                    let end_epoch = logger.global_epoch();
                    logger.want_durable(end_epoch);
                    self.phase = Phase::Waiting { scan, end_epoch };
                } else {
                    self.phase = Phase::Scanning(scan);
                }
                Ok(CheckpointStep::Scanned)
            }
            Phase::Waiting { scan, end_epoch } => {
                logger.check()?;
                let durable_epoch = logger.durable_epoch();
                if durable_epoch < end_epoch {
                    self.phase = Phase::Waiting { scan, end_epoch };
                    return Ok(CheckpointStep::Waiting);
                }
                let begin_epoch = scan.writer.begin_epoch();
                let rows = scan.writer.finish(end_epoch, durable_epoch)?;
                self.committed += 1;
                self.last_ms = now_ms;
                self.last_log_bytes = logger.bytes_written();
                Ok(CheckpointStep::Committed { rows, begin_epoch })
            }
        }
    }
}
