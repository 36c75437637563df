//! One committed transaction as the history records it.
//!
//! Serialized as one JSON object per line, exactly
//!
//! ```text
//! {"id":7,"reads":[[5,3],[2,9,0]],"writes":[[5,12]],"inserts":[[2,9,4]],"deletes":[[2,8,5]],
//!  "scans":[{"table":2,"low":0,"high":100,"rows":[[3,2],[9,4]]}],"ts":12}
//! ```
//!
//! (on one line). An access is `[key, version]` on table 0 or `[table, key, version]`; the
//! writer uses the short form exactly when the table is 0, so a history of one table reads as
//! the original two-field format. `writes` are updates of a present row (in histories written
//! before inserts and deletes existed: any write), `inserts` made an absent key present,
//! `deletes` made a present key absent (the version is a tombstone). A scan names its table,
//! the key range `low..=high` it covered, and the `[key, version]` rows it saw there.
//! `inserts`, `deletes`, `scans` and `ts` are left out when empty, so old-format entries are
//! written byte for byte as before. Unknown fields are rejected on reading, so that a misspelt
//! `ts` is an error rather than a silently missing timestamp.

use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Table number; table 0 is the table of every old-format access.
pub type TableId = u16;

/// One access to a versioned row: `version` of `key` in `table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Access {
    pub table: TableId,
    pub key: u64,
    pub version: u64,
}

impl Access {
    /// An access to `key` of table 0.
    pub fn new(key: u64, version: u64) -> Self {
        Access { table: 0, key, version }
    }

    /// An access to `key` of `table`.
    pub fn in_table(table: TableId, key: u64, version: u64) -> Self {
        Access { table, key, version }
    }
}

impl From<(u64, u64)> for Access {
    fn from((key, version): (u64, u64)) -> Self {
        Access::new(key, version)
    }
}

impl Serialize for Access {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.table == 0 {
            let mut tuple = serializer.serialize_tuple(2)?;
            tuple.serialize_element(&self.key)?;
            tuple.serialize_element(&self.version)?;
            tuple.end()
        } else {
            let mut tuple = serializer.serialize_tuple(3)?;
            tuple.serialize_element(&self.table)?;
            tuple.serialize_element(&self.key)?;
            tuple.serialize_element(&self.version)?;
            tuple.end()
        }
    }
}

struct AccessVisitor;

impl<'de> Visitor<'de> for AccessVisitor {
    type Value = Access;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("[key, version] or [table, key, version]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Access, A::Error> {
        let first: u64 = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let second: u64 = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
        let Some(third) = seq.next_element::<u64>()? else {
            return Ok(Access::new(first, second));
        };
        if seq.next_element::<de::IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(4, &self));
        }
        let table = TableId::try_from(first)
            .map_err(|_| de::Error::invalid_value(de::Unexpected::Unsigned(first), &"a table number up to 65535"))?;
        Ok(Access::in_table(table, second, third))
    }
}

impl<'de> Deserialize<'de> for Access {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(AccessVisitor)
    }
}

/// One range scan: the rows a transaction saw in `low..=high` of `table`.
///
/// The range is what the scan covered (a scan stopped by a row limit records the range up to
/// where it stopped). `rows` lists every `(key, version)` it observed there; a key of the range
/// that the history writes but the scan does not list was observed absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scan {
    #[serde(default)]
    pub table: TableId,
    pub low: u64,
    pub high: u64,
    pub rows: Vec<(u64, u64)>,
}

/// What a write did to its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WriteEffect {
    /// Replaced a present row (`writes`).
    Update,
    /// Made an absent key present (`inserts`).
    Insert,
    /// Made a present key absent (`deletes`): the version is a tombstone.
    Delete,
}

/// A committed transaction: what it read, wrote, inserted, deleted and scanned.
///
/// Version 0 of every key is its initial state (present if loaded, absent otherwise) and is
/// written by nobody. A transaction writes (updates, inserts or deletes) each key at most once;
/// it may read a key more than once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryEntry {
    /// Transaction id, unique in the history.
    pub id: u64,
    /// Every point read.
    pub reads: Vec<Access>,
    /// Every update: the version this transaction installed over a present row.
    pub writes: Vec<Access>,
    /// Every insert: the version that made an absent key present.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inserts: Vec<Access>,
    /// Every delete: the tombstone version that made a present key absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deletes: Vec<Access>,
    /// Every range scan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scans: Vec<Scan>,
    /// Commit timestamp, for engines that assign one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<u64>,
}

impl HistoryEntry {
    /// An entry of table-0 point reads and updates, without a commit timestamp.
    pub fn new(id: u64, reads: Vec<(u64, u64)>, writes: Vec<(u64, u64)>) -> Self {
        HistoryEntry {
            id,
            reads: reads.into_iter().map(Access::from).collect(),
            writes: writes.into_iter().map(Access::from).collect(),
            inserts: Vec::new(),
            deletes: Vec::new(),
            scans: Vec::new(),
            ts: None,
        }
    }

    /// The same entry with commit timestamp `ts`.
    pub fn with_ts(mut self, ts: u64) -> Self {
        self.ts = Some(ts);
        self
    }

    /// The same entry with one more point read.
    pub fn read(mut self, table: TableId, key: u64, version: u64) -> Self {
        self.reads.push(Access::in_table(table, key, version));
        self
    }

    /// The same entry with one more update.
    pub fn update(mut self, table: TableId, key: u64, version: u64) -> Self {
        self.writes.push(Access::in_table(table, key, version));
        self
    }

    /// The same entry with one more insert.
    pub fn insert(mut self, table: TableId, key: u64, version: u64) -> Self {
        self.inserts.push(Access::in_table(table, key, version));
        self
    }

    /// The same entry with one more delete.
    pub fn delete(mut self, table: TableId, key: u64, version: u64) -> Self {
        self.deletes.push(Access::in_table(table, key, version));
        self
    }

    /// The same entry with one more scan of `low..=high` in `table` that saw `rows`.
    pub fn scan(mut self, table: TableId, low: u64, high: u64, rows: &[(u64, u64)]) -> Self {
        self.scans.push(Scan { table, low, high, rows: rows.to_vec() });
        self
    }

    /// Point reads, writes of every effect, scans and scanned rows.
    pub fn operations(&self) -> usize {
        self.reads.len()
            + self.writes.len()
            + self.inserts.len()
            + self.deletes.len()
            + self.scans.iter().map(|scan| 1 + scan.rows.len()).sum::<usize>()
    }

    /// Every write with its effect: updates, then inserts, then deletes.
    pub fn all_writes(&self) -> impl Iterator<Item = (Access, WriteEffect)> + '_ {
        let with = |effect| move |&access: &Access| (access, effect);
        self.writes
            .iter()
            .map(with(WriteEffect::Update))
            .chain(self.inserts.iter().map(with(WriteEffect::Insert)))
            .chain(self.deletes.iter().map(with(WriteEffect::Delete)))
    }

    /// The first key this transaction writes twice (by any effect), with the two versions.
    pub fn key_written_twice(&self) -> Option<(TableId, u64, u64, u64)> {
        first_key_written_twice(self, &mut Vec::new())
    }
}

/// The first `(table, key)` `entry` writes twice, as `(table, key, first_version,
/// second_version)`.
///
/// Sorts a copy in `scratch` (reused across calls so that checking a whole history does not
/// allocate per transaction): `O(w log w)` for `w` writes.
pub(crate) fn first_key_written_twice(
    entry: &HistoryEntry,
    scratch: &mut Vec<Access>,
) -> Option<(TableId, u64, u64, u64)> {
    if entry.writes.len() + entry.inserts.len() + entry.deletes.len() < 2 {
        return None;
    }
    scratch.clear();
    scratch.extend(entry.all_writes().map(|(access, _)| access));
    scratch.sort_unstable();
    scratch
        .windows(2)
        .find(|pair| (pair[0].table, pair[0].key) == (pair[1].table, pair[1].key))
        .map(|pair| (pair[0].table, pair[0].key, pair[0].version, pair[1].version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_exactly_as_documented() {
        let entry = HistoryEntry::new(7, vec![(5, 3), (9, 0)], vec![(5, 12)]);
        assert_eq!(serde_json::to_string(&entry).unwrap(), r#"{"id":7,"reads":[[5,3],[9,0]],"writes":[[5,12]]}"#);
        assert_eq!(
            serde_json::to_string(&entry.with_ts(12)).unwrap(),
            r#"{"id":7,"reads":[[5,3],[9,0]],"writes":[[5,12]],"ts":12}"#
        );
        let tables = HistoryEntry::new(7, vec![(5, 3)], vec![(5, 12)])
            .read(2, 9, 0)
            .insert(2, 9, 4)
            .delete(2, 8, 5)
            .scan(2, 0, 100, &[(3, 2), (9, 4)])
            .with_ts(12);
        let text = r#"{"id":7,"reads":[[5,3],[2,9,0]],"writes":[[5,12]],"inserts":[[2,9,4]],"deletes":[[2,8,5]],"scans":[{"table":2,"low":0,"high":100,"rows":[[3,2],[9,4]]}],"ts":12}"#;
        assert_eq!(serde_json::to_string(&tables).unwrap(), text);
        assert_eq!(serde_json::from_str::<HistoryEntry>(text).unwrap(), tables);
    }

    #[test]
    fn finds_a_key_written_twice_by_any_effect() {
        assert_eq!(HistoryEntry::new(1, vec![], vec![(4, 2), (3, 1), (4, 9)]).key_written_twice(), Some((0, 4, 2, 9)));
        assert_eq!(HistoryEntry::new(1, vec![(4, 1), (4, 2)], vec![(4, 3), (5, 3)]).key_written_twice(), None);
        assert_eq!(HistoryEntry::new(1, vec![], vec![(4, 3)]).insert(1, 4, 5).key_written_twice(), None);
        assert_eq!(
            HistoryEntry::new(1, vec![], vec![]).insert(1, 4, 5).delete(1, 4, 6).key_written_twice(),
            Some((1, 4, 5, 6))
        );
    }
}
