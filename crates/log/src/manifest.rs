//! The manifest of a log directory: which workload wrote it and the schema of its rows
//! (tables, row widths, columns, dense key counts), as `manifest.json`. The log itself is
//! schema-agnostic (rows are words); an engine refuses a directory written for another schema,
//! and `ordo recover --dump` names each row's columns from it without knowing the workload.

use serde::{Deserialize, Serialize};

use crate::LogError;
use crate::device::Dir;

/// Name of the manifest in a log directory.
pub const MANIFEST_NAME: &str = "manifest.json";
const MANIFEST_TEMP_NAME: &str = "manifest.tmp";
/// Version of the manifest's format.
pub const MANIFEST_FORMAT: u32 = 1;
/// Largest manifest read back (a schema of 256 tables fits many times over).
const MANIFEST_BYTES_MAX: u64 = 4 << 20;

/// One column of a table in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestColumn {
    pub name: String,
    /// `int`, or `chars` with `bytes`.
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u16>,
    /// First word of the column in the row.
    pub word: usize,
}

/// One table in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestTable {
    pub name: String,
    pub row_words: usize,
    pub columns: Vec<ManifestColumn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dense_keys: Option<u64>,
    /// The base table, for a secondary index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_of: Option<u16>,
}

/// What a log directory was written for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: u32,
    pub workload: String,
    pub tables: Vec<ManifestTable>,
}

impl Manifest {
    /// Whether this is a key-value workload's single table of `[value, payload]` rows (its
    /// rows dump as their value alone).
    pub fn is_key_value(&self) -> bool {
        matches!(self.tables.as_slice(), [table] if table.name == "kv" && table.columns.first().is_some_and(|c| c.name == "value"))
    }

    /// Reads the manifest of `dir`, if it has one.
    pub fn read(dir: &dyn Dir) -> Result<Option<Manifest>, String> {
        if !dir.list().map_err(|e| e.to_string())?.iter().any(|name| name == MANIFEST_NAME) {
            return Ok(None);
        }
        let len = dir.len(MANIFEST_NAME).map_err(|e| e.to_string())?;
        if len > MANIFEST_BYTES_MAX {
            return Err(format!("{MANIFEST_NAME} is {len} bytes; a manifest is at most {MANIFEST_BYTES_MAX}"));
        }
        let bytes = dir.read(MANIFEST_NAME).map_err(|e| e.to_string())?;
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|e| format!("{MANIFEST_NAME} is not a manifest: {e}"))?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(format!(
                "{MANIFEST_NAME} has format {}; this build reads format {MANIFEST_FORMAT}",
                manifest.format
            ));
        }
        Ok(Some(manifest))
    }

    /// Writes the manifest into `dir` atomically (temporary file, sync, rename, sync the
    /// directory).
    pub fn write(&self, dir: &dyn Dir) -> Result<(), LogError> {
        let bytes = serde_json::to_vec_pretty(self).expect("a manifest serializes");
        dir.create(MANIFEST_TEMP_NAME)?;
        dir.append(MANIFEST_TEMP_NAME, &bytes)?;
        dir.sync(MANIFEST_TEMP_NAME)?;
        dir.rename(MANIFEST_TEMP_NAME, MANIFEST_NAME)?;
        dir.sync_dir()?;
        Ok(())
    }

    /// Why `self` (a directory's) cannot hold `other` (a workload's), if it cannot.
    pub fn mismatch(&self, other: &Manifest) -> Option<String> {
        if self.workload != other.workload {
            return Some(format!("it was written by workload {}, not {}", self.workload, other.workload));
        }
        if self.tables.len() != other.tables.len() {
            return Some(format!("it has {} tables; the workload has {}", self.tables.len(), other.tables.len()));
        }
        for (mine, theirs) in self.tables.iter().zip(&other.tables) {
            if mine != theirs {
                let what = if mine.dense_keys != theirs.dense_keys && mine.columns == theirs.columns {
                    format!("{:?} keys, the workload {:?}", mine.dense_keys, theirs.dense_keys)
                } else {
                    "different columns".to_owned()
                };
                return Some(format!("its table `{}` differs from the workload's: {what}", mine.name));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::FaultyDir;

    fn key_value(keys: u64) -> Manifest {
        let column = |name: &str, word| ManifestColumn { name: name.into(), ty: "int".into(), bytes: None, word };
        Manifest {
            format: MANIFEST_FORMAT,
            workload: "ycsb".into(),
            tables: vec![ManifestTable {
                name: "kv".into(),
                row_words: 1,
                columns: vec![column("value", 0)],
                dense_keys: Some(keys),
                index_of: None,
            }],
        }
    }

    #[test]
    fn a_manifest_round_trips_and_names_what_differs() {
        let dir = FaultyDir::new(1);
        assert_eq!(Manifest::read(&dir), Ok(None));
        key_value(10).write(&dir).unwrap();
        let read = Manifest::read(&dir).unwrap().unwrap();
        assert_eq!(read, key_value(10));
        assert!(read.is_key_value());
        assert_eq!(read.mismatch(&key_value(10)), None);
        assert!(read.mismatch(&key_value(11)).unwrap().contains("keys"));
        dir.create(MANIFEST_NAME).unwrap();
        dir.append(MANIFEST_NAME, b"{\"format\": 1, \"surprise\": true}").unwrap();
        assert!(Manifest::read(&dir).unwrap_err().contains("not a manifest"));
    }
}
