//! Output helpers: aligned text tables, JSON and CSV files (`-` means stdout).

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

/// A plain-text table with right-aligned numeric columns.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table { header: header.iter().map(|h| (*h).to_owned()).collect(), rows: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.header.len());
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.header.len())
            .map(|c| self.rows.iter().map(|r| r[c].len()).chain([self.header[c].len()]).max().unwrap_or(0))
            .collect();
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (c, cell) in cells.iter().enumerate() {
                if c > 0 {
                    out.push_str("  ");
                }
                if c == 0 {
                    out.push_str(&format!("{cell:<width$}", width = widths[c]));
                } else {
                    out.push_str(&format!("{cell:>width$}", width = widths[c]));
                }
            }
            out.trim_end().to_owned()
        };
        let mut out = line(&self.header);
        out.push('\n');
        out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1)));
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }
}

/// Writes `records` as pretty JSON to `path` (`-` is stdout).
pub fn write_json<T: Serialize + ?Sized>(path: &Path, records: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(records)?;
    write_text(path, &(text + "\n"))
}

/// Writes `records` as CSV with a header row to `path` (`-` is stdout).
pub fn write_csv<T: Serialize>(path: &Path, records: &[T]) -> Result<()> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for record in records {
        writer.serialize(record)?;
    }
    let bytes = writer.into_inner().context("flushing CSV")?;
    write_text(path, &String::from_utf8(bytes)?)
}

fn write_text(path: &Path, text: &str) -> Result<()> {
    if path == Path::new("-") {
        std::io::stdout().write_all(text.as_bytes())?;
        return Ok(());
    }
    replace_atomically(path, |out| out.write_all(text.as_bytes()))
}

/// Replaces the file at `path` with what `fill` writes, atomically: the bytes go to a temporary
/// file in the same directory, which is renamed over `path` only once complete, so a reader (or
/// a crash) sees the old file or the new one, never a torn mix.
pub fn replace_atomically(path: &Path, fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let directory = directory_of(path);
    let temporary = tempfile::NamedTempFile::new_in(directory)
        .with_context(|| format!("cannot create a file in {} to write {}", directory.display(), path.display()))?;
    let mut writer = BufWriter::new(temporary);
    fill(&mut writer).with_context(|| format!("cannot write {}", path.display()))?;
    let temporary = writer
        .into_inner()
        .map_err(std::io::IntoInnerError::into_error)
        .with_context(|| format!("cannot write {}", path.display()))?;
    temporary.persist(path).map_err(|e| e.error).with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}

/// The directory a file at `path` lives in (`.` for a bare file name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Checks, before anything is measured, that a file could be written at `path` (`-` is
/// standard output and always can): its directory exists and takes a new file, and `path`
/// itself is not a directory.
pub fn check_writable(path: &Path) -> Result<()> {
    if path == Path::new("-") {
        return Ok(());
    }
    if path.is_dir() {
        anyhow::bail!("{} is a directory, not a file to write", path.display());
    }
    let directory = directory_of(path);
    tempfile::NamedTempFile::new_in(directory).map(drop).with_context(|| {
        format!("cannot write {}: its directory {} takes no new file", path.display(), directory.display())
    })
}

/// Writes rows of `(column, value)` pairs as CSV (columns from the first row).
pub fn write_flat_csv(path: &Path, rows: &[Vec<(String, String)>]) -> Result<()> {
    // Rows of a sweep may carry different knobs (a protocol with a knob the others lack): the
    // header is the union of the columns in order of first appearance, and a row leaves the
    // columns it lacks empty.
    let mut columns: Vec<&str> = Vec::new();
    for row in rows {
        for (column, _) in row {
            if !columns.contains(&column.as_str()) {
                columns.push(column);
            }
        }
    }
    let mut writer = csv::Writer::from_writer(Vec::new());
    if !rows.is_empty() {
        writer.write_record(&columns)?;
    }
    for row in rows {
        writer.write_record(
            columns
                .iter()
                .map(|column| row.iter().find(|(name, _)| name == column).map_or("", |(_, value)| value.as_str())),
        )?;
    }
    let bytes = writer.into_inner().context("flushing CSV")?;
    write_text(path, &String::from_utf8(bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[(&str, &str)]) -> Vec<(String, String)> {
        cells.iter().map(|&(k, v)| (k.to_owned(), v.to_owned())).collect()
    }

    #[test]
    fn flat_csv_takes_the_union_of_the_rows_columns() {
        let path = std::env::temp_dir().join(format!("ordo-flat-csv-{}.csv", std::process::id()));
        let rows =
            [row(&[("protocol", "silo"), ("tps", "1")]), row(&[("protocol", "ssi"), ("versions", "4"), ("tps", "2")])];
        write_flat_csv(&path, &rows).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(text, "protocol,tps,versions\nsilo,1,\nssi,2,4\n");
    }
}
