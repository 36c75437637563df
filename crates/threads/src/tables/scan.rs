//! A range scan as an attempt sees it: the index's entries in the range, each record read the
//! protocol's way, with the attempt's own buffered writes in the range taking the place of
//! what the index holds for their keys. Shared by the protocols that read records without
//! holding locks (Silo, TicToc, serial); 2PL locks as it goes and validates before it
//! delivers, so it walks the same index itself.
//!
//! ```text
//!   index.scan(low..=high, direction) ── (key, rid) ──┬─ own write of key?  present after: visit
//!                                                     │                      its buffered row
//!                                                     └─ read(key, rid, row) -> seq word
//!                                                          present: visit(key, row)
//!                                                          absent:  skipped (a tombstone is traced)
//!   stop after `limit` visited rows or when visit says so; trace the range covered
//! ```

use ordo_storage::{Direction, LeafVersion, TableId};

use super::database::{ABSENT, Table, VERSION_MASK};
use super::trace::Trace;
use super::writes::{WriteBuffer, WriteKind};

/// Reads record `rid` (key `key`) into the row buffer and returns its seq word, or `None` for
/// a dead record.
pub type ReadRecord<'a> = dyn FnMut(u64, u64, &mut [u64]) -> Option<u64> + 'a;

/// One range scan's arguments.
#[derive(Debug, Clone, Copy)]
pub struct Range {
    pub table: TableId,
    pub low: u64,
    pub high: u64,
    pub direction: Direction,
    pub limit: usize,
}

/// Runs `range` over `table`'s index (see the module docs). `in_range` holds the indexes of
/// `writes`' entries in the range; `read(key, rid, row)` reads a record into `row` and returns
/// its seq word, or `None` for a dead record (reclaimed since its leaf was read: skipped, as
/// the leaf's version says); `leaves` gets every leaf the index reports. Returns the number of
/// rows visited.
#[allow(clippy::too_many_arguments)]
pub fn scan_merged(
    table: &Table,
    range: Range,
    writes: &WriteBuffer,
    in_range: &[usize],
    trace: &mut Trace,
    row: &mut [u64],
    read: &mut ReadRecord<'_>,
    leaves: &mut dyn FnMut(LeafVersion),
    visit: &mut dyn FnMut(u64, &[u64]) -> bool,
) -> usize {
    let Range { table: table_id, low, high, direction, limit } = range;
    trace.scan_begin(table_id);
    let mut visited = 0;
    // The last key handed to `visit` when the scan stopped early: the range it covered ends
    // there.
    let mut stopped_at = None;
    table.index.scan(
        low,
        high,
        direction,
        &mut |key, rid| {
            if let Some(&i) = in_range.iter().find(|&&i| writes.entries[i].key == key) {
                let write = &writes.entries[i];
                if write.kind != WriteKind::InsertDelete {
                    trace.scan_own(key);
                }
                if write.kind.present_after() {
                    visited += 1;
                    if !visit(key, writes.row(i, table.row_words)) || visited >= limit {
                        stopped_at = Some(key);
                        return false;
                    }
                }
                return true;
            }
            let Some(seq) = read(key, rid, row) else { return true };
            let version = seq & VERSION_MASK;
            if seq & ABSENT != 0 {
                if version > 0 {
                    trace.scan_row(key, version);
                }
                return true;
            }
            trace.scan_row(key, version);
            visited += 1;
            if !visit(key, row) || visited >= limit {
                stopped_at = Some(key);
                return false;
            }
            true
        },
        leaves,
    );
    let (covered_low, covered_high) = match (stopped_at, direction) {
        (None, _) => (low, high),
        (Some(key), Direction::Ascending) => (low, key),
        (Some(key), Direction::Descending) => (key, high),
    };
    trace.scan_end(covered_low, covered_high);
    visited
}
