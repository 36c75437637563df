//! `ordo recover DIR`: recovers a write-ahead log directory as an engine starting on it would
//! (the newest complete checkpoint plus every closed epoch of the log, a torn or corrupt tail
//! cut off, and the cut made durable), and reports what it read: rows, transactions, epochs,
//! bytes, time and where the log was cut.
//!
//! `--dump FILE` also writes the recovered rows as JSON lines, in `(table, key)` order:
//!
//! ```text
//!  {"key":17,"version":4,"value":1250}                                   key-value workloads
//!  {"table":"customer","key":3,"version":2,"value":{"c_id":3,"c_last":"BARBARBAR",...}}
//! ```
//!
//! `version` is the number histories use for the row's latest write; `value` is the row's
//! integer for a key-value workload, or an object of its columns (integers, and character
//! columns as strings up to their zero padding) named by the directory's `manifest.json`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use ordo_log::manifest::{MANIFEST_NAME, Manifest, ManifestTable};
use ordo_log::{Dir, FileDir, RecoveredRow};
use serde::Serialize;
use serde::ser::SerializeMap;

#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// The log directory (as given to `ordo bench --wal`).
    pub dir: PathBuf,
    /// Write the recovered rows as JSON lines to this file (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub dump: Option<PathBuf>,
}

pub fn run(args: &RecoverArgs) -> Result<()> {
    if !args.dir.is_dir() {
        bail!("{} is not a directory (give the directory of a write-ahead log)", args.dir.display());
    }
    let dir = FileDir::open(&args.dir)?;
    let manifest = Manifest::read(&dir).map_err(|reason| anyhow::anyhow!("{}: {reason}", args.dir.display()))?;
    let names = dir.list()?;
    if !names
        .iter()
        .any(|name| matches!(ordo_log::naming::parse(name), Some(ordo_log::naming::LogFile::Checkpoint { .. })))
    {
        bail!(
            "{} holds no checkpoint, so no log to recover (an engine starting on it loads its workload afresh)",
            args.dir.display()
        );
    }
    if let Some(path) = &args.dump {
        ordo_harness::output::check_writable(path).context("--dump")?;
    }
    let dumping = match (&args.dump, &manifest) {
        (None, _) => None,
        (Some(path), Some(manifest)) => Some((path, manifest)),
        (Some(_), None) => bail!("--dump names columns from {MANIFEST_NAME}, which {} lacks", args.dir.display()),
    };
    let to_stdout = dumping.is_some_and(|(path, _)| path.as_os_str() == "-");
    let recovered = match dumping {
        None => ordo_log::recover(&dir, |_| {})?,
        Some((path, manifest)) => dump(&dir, path, manifest)?,
    };
    let stats = &recovered.stats;
    let mut report = String::new();
    report.push_str(&format!(
        "recovered {}: {} rows ({} from the checkpoint{}), {} transactions in {} epochs of log, durable through epoch {}\n",
        args.dir.display(),
        stats.rows,
        stats.checkpoint_rows,
        recovered.checkpoint_epoch.map_or(String::new(), |epoch| format!(" of epoch {epoch}")),
        stats.transactions,
        stats.epochs,
        recovered.durable_epoch,
    ));
    report.push_str(&format!(
        "read {:.1} MB (checkpoint {:.1} MB, log {:.1} MB, {} records) in {:.3} s: {:.0} rows/s, {:.1} MB/s of log\n",
        stats.bytes as f64 / 1e6,
        stats.checkpoint_bytes as f64 / 1e6,
        stats.log_bytes as f64 / 1e6,
        stats.records,
        stats.seconds,
        stats.rows as f64 / stats.seconds.max(1e-9),
        stats.log_bytes as f64 / 1e6 / stats.seconds.max(1e-9),
    ));
    match &recovered.cut {
        Some(cut) => report.push_str(&format!(
            "log cut at {} offset {} ({}); what followed the last closed epoch was removed\n",
            cut.file, cut.offset, cut.reason
        )),
        None => report.push_str("log intact: no torn or corrupt tail\n"),
    }
    if let Some(manifest) = &manifest {
        report.push_str(&format!("workload {} ({} tables)\n", manifest.workload, manifest.tables.len()));
    }
    if to_stdout {
        eprint!("{report}");
    } else {
        print!("{report}");
    }
    Ok(())
}

/// Recovers `dir`, writing every row to `path` as a JSON line.
fn dump(dir: &dyn Dir, path: &Path, manifest: &Manifest) -> Result<ordo_log::Recovered> {
    let key_value = manifest.is_key_value();
    let write = |out: &mut dyn Write| -> std::io::Result<ordo_log::Recovered> {
        let mut failed = None;
        let mut line = Vec::new();
        let recovered = ordo_log::recover(dir, |row| {
            if failed.is_some() {
                return;
            }
            line.clear();
            let result = match row_json(manifest, key_value, row) {
                Ok(value) => serde_json::to_writer(&mut line, &value).map_err(std::io::Error::other),
                Err(reason) => Err(std::io::Error::other(reason)),
            };
            line.push(b'\n');
            if let Err(error) = result.and_then(|()| out.write_all(&line)) {
                failed = Some(error);
            }
        })
        .map_err(std::io::Error::other)?;
        match failed {
            Some(error) => Err(error),
            None => Ok(recovered),
        }
    };
    if path.as_os_str() == "-" {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        let recovered = write(&mut out).context("writing the dump")?;
        out.flush().context("writing the dump")?;
        return Ok(recovered);
    }
    let mut recovered = None;
    ordo_harness::output::replace_atomically(path, |out| {
        recovered = Some(write(out)?);
        Ok(())
    })?;
    Ok(recovered.expect("set by the writer"))
}

/// One line of the dump; fields in the order the format names them.
#[derive(Serialize)]
struct DumpRow<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    table: Option<&'a str>,
    key: u64,
    version: u64,
    value: DumpValue<'a>,
}

/// A row's value: the integer of a key-value row, or the columns in schema order.
enum DumpValue<'a> {
    Integer(i64),
    Columns { table: &'a ManifestTable, row: &'a [u64] },
}

impl Serialize for DumpValue<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            DumpValue::Integer(value) => serializer.serialize_i64(value),
            DumpValue::Columns { table, row } => {
                let mut map = serializer.serialize_map(Some(table.columns.len()))?;
                for column in &table.columns {
                    match (column.ty.as_str(), column.bytes) {
                        ("chars", Some(bytes)) => map.serialize_entry(&column.name, &chars(row, column.word, bytes))?,
                        _ => map.serialize_entry(&column.name, &row.get(column.word).map(|&word| word as i64))?,
                    }
                }
                map.end()
            }
        }
    }
}

/// A character column: its bytes up to the zero padding, as text.
fn chars(row: &[u64], word: usize, bytes: u16) -> String {
    let words = usize::from(bytes).div_ceil(8);
    let mut text: Vec<u8> = row
        .get(word..word + words)
        .unwrap_or(&[])
        .iter()
        .flat_map(|word| word.to_le_bytes())
        .take(usize::from(bytes))
        .collect();
    if let Some(end) = text.iter().position(|&b| b == 0) {
        text.truncate(end);
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// One recovered row as the dump's line.
fn row_json<'a>(manifest: &'a Manifest, key_value: bool, row: &RecoveredRow<'a>) -> Result<DumpRow<'a>, String> {
    let table = manifest
        .tables
        .get(row.table as usize)
        .ok_or_else(|| format!("a row of table {}, which {MANIFEST_NAME} does not list", row.table))?;
    if row.row.len() != table.row_words {
        return Err(format!(
            "a row of table `{}` has {} words; {MANIFEST_NAME} says {}",
            table.name,
            row.row.len(),
            table.row_words
        ));
    }
    let value =
        if key_value { DumpValue::Integer(row.row[0] as i64) } else { DumpValue::Columns { table, row: row.row } };
    Ok(DumpRow { table: (!key_value).then_some(table.name.as_str()), key: row.key, version: row.version, value })
}
