//! One committed transaction as the history records it.
//!
//! Serialized as one JSON object per line, exactly
//!
//! ```text
//! {"id":7,"reads":[[5,3],[9,0]],"writes":[[5,12]],"ts":12}
//! ```
//!
//! with `ts` left out when the engine has no commit timestamp. Unknown fields are rejected on
//! reading, so that a misspelt `ts` is an error rather than a silently missing timestamp.

use serde::{Deserialize, Serialize};

/// A committed transaction: what it read and what it wrote, as `(key, version)` pairs.
///
/// Version 0 of every key is the initially loaded value and is written by nobody. A
/// transaction writes each key at most once; it may read a key more than once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryEntry {
    /// Transaction id, unique in the history.
    pub id: u64,
    /// `(key, version)` of every read.
    pub reads: Vec<(u64, u64)>,
    /// `(key, version)` of every write: the version this transaction installed.
    pub writes: Vec<(u64, u64)>,
    /// Commit timestamp, for engines that assign one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<u64>,
}

impl HistoryEntry {
    /// An entry without a commit timestamp.
    pub fn new(id: u64, reads: Vec<(u64, u64)>, writes: Vec<(u64, u64)>) -> Self {
        HistoryEntry { id, reads, writes, ts: None }
    }

    /// The same entry with commit timestamp `ts`.
    pub fn with_ts(mut self, ts: u64) -> Self {
        self.ts = Some(ts);
        self
    }

    /// Number of reads plus writes.
    pub fn operations(&self) -> usize {
        self.reads.len() + self.writes.len()
    }

    /// The first key this transaction writes twice, with the two versions, if any.
    pub fn key_written_twice(&self) -> Option<(u64, u64, u64)> {
        first_key_written_twice(&self.writes, &mut Vec::new())
    }
}

/// The first key of `writes` that appears twice, as `(key, first_version, second_version)`.
///
/// Sorts a copy in `scratch` (reused across calls so that checking a whole history does not
/// allocate per transaction): `O(w log w)` for `w` writes.
pub(crate) fn first_key_written_twice(writes: &[(u64, u64)], scratch: &mut Vec<(u64, u64)>) -> Option<(u64, u64, u64)> {
    if writes.len() < 2 {
        return None;
    }
    scratch.clear();
    scratch.extend_from_slice(writes);
    scratch.sort_unstable();
    scratch.windows(2).find(|pair| pair[0].0 == pair[1].0).map(|pair| (pair[0].0, pair[0].1, pair[1].1))
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
    }

    #[test]
    fn finds_a_key_written_twice() {
        assert_eq!(HistoryEntry::new(1, vec![], vec![(4, 2), (3, 1), (4, 9)]).key_written_twice(), Some((4, 2, 9)));
        assert_eq!(HistoryEntry::new(1, vec![(4, 1), (4, 2)], vec![(4, 3), (5, 3)]).key_written_twice(), None);
    }
}
