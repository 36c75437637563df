//! The simulator's workload: a handful of hot keys in one table with a secondary index, and
//! transactions that insert, delete, move, transfer between, scan and read them, so that almost
//! every pair of concurrent transactions conflicts, through rows or through the gaps between
//! them.
//!
//! ```text
//!   items            key k in 0..keys     row [value, group, check]     check = mix(k, value, group)
//!   items_by_group   (group << 32) | k    row [k]                       kept in step by `Maintained`
//!
//!   transfer  a b n      both present: a.value -= n, b.value += n
//!   insert    k g        count group g through the index; k absent and count < cap: insert k (value 0)
//!   delete    k dir      k present: scan one neighbour in `dir` (limit 1), give it k's value, delete k
//!   move      k k2 g2    k present: delete k; count g2; room and k2 absent: insert k2 in g2, else roll back
//!   scan      lo hi ...  items or one group through the index, either direction, with a limit
//!   reads     k...       point reads, present and absent keys
//!   rebalance g dir n    up to n rows of group g through the index: the richest gives 1 to the poorest
//! ```
//!
//! Every transaction keeps three invariants, checked after a run by [`SimWorkload::check`]: the
//! sum of all values never changes (inserts add 0; a delete hands its value on), every row's
//! check word matches it, and the index holds exactly one entry per row. A fourth needs
//! serializability, so only serializable protocols are held to it: no group holds more than
//! `cap` rows, which a phantom breaks (two inserts into one group, each counting the group
//! before the other's insert, is write skew through a predicate read).
//!
//! Transfers, reads and rebalances run a prefetch pass over the keys they are about to read
//! first, as YCSB's steps do, so the reads that follow start from the pass's records, which
//! another worker may delete, move or replace between the pass and the read.
//!
//! Procedures may meet an inconsistent view under optimistic protocols (a row just read present
//! is gone when written; an index entry without its row): such an attempt cannot commit, so
//! the procedure stops it with `Err(Aborted)` instead of carrying on.

use ordo_storage::{Schema, TableId, TableSchema};
use ordo_workload::{
    Aborted, ConsistencyError, ConsistencyReport, Direction, Outcome, Scratch, TableWorkload, Tx, Txn, WorkloadRng,
};
use rand::Rng;

/// The base table.
pub const ITEMS: TableId = 0;
/// The secondary index of `items` by group.
pub const ITEMS_BY_GROUP: TableId = 1;
/// Bits of the item key in an index key.
const GROUP_SHIFT: u32 = 32;
/// Row words of `items`.
const VALUE: usize = 0;
const GROUP: usize = 1;
const CHECK: usize = 2;
const ROW_WORDS: usize = 3;

/// Largest hot key space.
pub const KEYS_MAX: u64 = 64;
/// Largest number of groups.
pub const GROUPS_MAX: u64 = 8;
/// Most point reads in one `reads` transaction.
const READS_MAX: usize = 4;

/// The procedures, by [`Txn::procedure`].
const PROCEDURES: &[&str] = &["transfer", "insert", "delete", "move", "scan", "reads", "rebalance"];
const TRANSFER: u8 = 0;
const INSERT: u8 = 1;
const DELETE: u8 = 2;
const MOVE: u8 = 3;
const SCAN: u8 = 4;
const READS: u8 = 5;
const REBALANCE: u8 = 6;
/// Relative weights of the procedures when drawing a transaction.
const WEIGHTS: [u32; 7] = [20, 15, 15, 10, 15, 10, 15];

/// `scan` flags.
const DESCENDING: u64 = 1;
const THROUGH_INDEX: u64 = 2;
/// Stop the scan at the first row with an odd value (a visitor that stops early).
const STOP_AT_ODD: u64 = 4;

/// The shape of one simulated database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimShape {
    /// Hot keys: items live at keys `0..keys`.
    pub keys: u64,
    /// Groups of the secondary index.
    pub groups: u64,
    /// Most rows a group may hold.
    pub cap: u64,
}

impl SimShape {
    /// A shape drawn from `rng`: few keys and groups, so conflicts are frequent.
    pub fn draw(rng: &mut WorkloadRng) -> Self {
        let keys: u64 = rng.random_range(4..=12);
        let groups = rng.random_range(1..=3);
        let cap = rng.random_range(2..=keys.div_ceil(groups) + 1);
        SimShape { keys, groups, cap }
    }
}

/// The simulator's workload over one shape, with its initial rows.
#[derive(Debug)]
pub struct SimWorkload {
    schema: Schema,
    shape: SimShape,
    /// The initial rows: `(key, value, group)`.
    initial: Vec<(u64, i64, u64)>,
    /// Whether [`check`](TableWorkload::check) holds the database to the group cap (only
    /// serializable protocols keep it).
    pub check_cap: bool,
}

/// The index key of an item row.
fn group_key(key: u64, row: &[u64]) -> u64 {
    (row[GROUP] << GROUP_SHIFT) | key
}

/// The check word of an item row.
fn check_word(key: u64, value: i64, group: u64) -> u64 {
    let mut x = key ^ (value as u64).rotate_left(17) ^ (group << 56) ^ 0x5bd1_e995_0000_0001;
    x ^= x >> 31;
    x = x.wrapping_mul(0x7fb5_d329_728e_a185);
    x ^ (x >> 27)
}

fn item_row(key: u64, value: i64, group: u64) -> [u64; ROW_WORDS] {
    [value as u64, group, check_word(key, value, group)]
}

fn value_of(row: &[u64]) -> i64 {
    row[VALUE] as i64
}

/// The index range of group `group`.
fn group_range(group: u64) -> (u64, u64) {
    (group << GROUP_SHIFT, (group << GROUP_SHIFT) | ((1 << GROUP_SHIFT) - 1))
}

fn direction(descending: bool) -> Direction {
    if descending { Direction::Descending } else { Direction::Ascending }
}

impl SimWorkload {
    /// The workload of `shape` with initial rows drawn from `rng` (about half the keys present,
    /// no group over its cap).
    ///
    /// # Panics
    ///
    /// If `shape` is outside `1..=KEYS_MAX` keys, `1..=GROUPS_MAX` groups, or has a zero cap.
    pub fn new(shape: SimShape, rng: &mut WorkloadRng) -> Self {
        assert!((1..=KEYS_MAX).contains(&shape.keys), "keys {} outside 1..={KEYS_MAX}", shape.keys);
        assert!((1..=GROUPS_MAX).contains(&shape.groups), "groups {} outside 1..={GROUPS_MAX}", shape.groups);
        assert!(shape.cap > 0, "a cap of 0 admits no rows");
        let mut schema = Schema::new();
        let items =
            schema.add(TableSchema::new("items").int("value").int("group").int("check")).expect("a valid table");
        let index = schema.add_index("items_by_group", items, group_key).expect("a valid index");
        assert_eq!((items, index), (ITEMS, ITEMS_BY_GROUP));
        let mut per_group = vec![0; shape.groups as usize];
        let mut initial = Vec::new();
        for key in 0..shape.keys {
            let group = rng.random_range(0..shape.groups);
            if rng.random_bool(0.5) && per_group[group as usize] < shape.cap {
                per_group[group as usize] += 1;
                initial.push((key, rng.random_range(0..10), group));
            }
        }
        SimWorkload { schema, shape, initial, check_cap: true }
    }

    /// The shape.
    pub fn shape(&self) -> SimShape {
        self.shape
    }

    fn any_key(&self, rng: &mut WorkloadRng) -> u64 {
        rng.random_range(0..self.shape.keys)
    }

    fn any_group(&self, rng: &mut WorkloadRng) -> u64 {
        rng.random_range(0..self.shape.groups)
    }

    /// The sum every transaction conserves.
    fn total(&self) -> i64 {
        self.initial.iter().map(|&(_, value, _)| value).sum()
    }

    /// The base keys of group `group`'s index entries, at most `limit`, in `direction`.
    fn group_members(
        tx: &mut dyn Tx,
        group: u64,
        direction: Direction,
        limit: usize,
        out: &mut Vec<u64>,
    ) -> Result<(), Aborted> {
        out.clear();
        let (low, high) = group_range(group);
        tx.scan(ITEMS_BY_GROUP, low, high, direction, limit, &mut |_, row| {
            out.push(row[0]);
            true
        })?;
        Ok(())
    }

    /// Reads the base row of every key in `keys` into `rows`; a missing one is a view that
    /// cannot commit.
    fn read_members(tx: &mut dyn Tx, group: u64, keys: &[u64], rows: &mut Vec<u64>) -> Result<(), Aborted> {
        rows.clear();
        let mut row = [0; ROW_WORDS];
        tx.prefetch(ITEMS, keys);
        for &key in keys {
            if !tx.get(ITEMS, key, &mut row, false)? || row[GROUP] != group {
                return Err(Aborted);
            }
            rows.extend_from_slice(&row);
        }
        Ok(())
    }

    fn transfer(tx: &mut dyn Tx, from: u64, to: u64, amount: i64) -> Result<Outcome, Aborted> {
        let (mut a, mut b) = ([0; ROW_WORDS], [0; ROW_WORDS]);
        tx.prefetch(ITEMS, &[from, to]);
        if !tx.get(ITEMS, from, &mut a, true)? || from == to || !tx.get(ITEMS, to, &mut b, true)? {
            return Ok(Outcome::Commit);
        }
        a = item_row(from, value_of(&a) - amount, a[GROUP]);
        b = item_row(to, value_of(&b) + amount, b[GROUP]);
        if !tx.put(ITEMS, from, &a)? || !tx.put(ITEMS, to, &b)? {
            return Err(Aborted);
        }
        Ok(Outcome::Commit)
    }

    fn insert(&self, tx: &mut dyn Tx, key: u64, group: u64, scratch: &mut Scratch) -> Result<Outcome, Aborted> {
        let cap = self.shape.cap as usize;
        Self::group_members(tx, group, Direction::Ascending, usize::MAX, &mut scratch.keys)?;
        let mut row = [0; ROW_WORDS];
        if tx.get(ITEMS, key, &mut row, false)? || scratch.keys.len() >= cap {
            return Ok(Outcome::Commit);
        }
        if !tx.insert(ITEMS, key, &item_row(key, 0, group))? {
            return Err(Aborted);
        }
        Ok(Outcome::Commit)
    }

    fn delete(tx: &mut dyn Tx, key: u64, descending: bool) -> Result<Outcome, Aborted> {
        let mut row = [0; ROW_WORDS];
        if !tx.get(ITEMS, key, &mut row, true)? {
            return Ok(Outcome::Commit);
        }
        let (low, high) = if descending {
            if key == 0 {
                return Ok(Outcome::Commit);
            }
            (0, key - 1)
        } else {
            (key + 1, KEYS_MAX)
        };
        let mut neighbour = None;
        tx.scan(ITEMS, low, high, direction(descending), 1, &mut |found, found_row| {
            neighbour = Some((found, value_of(found_row), found_row[GROUP]));
            true
        })?;
        let Some((other, other_value, other_group)) = neighbour else { return Ok(Outcome::Commit) };
        let given = item_row(other, other_value + value_of(&row), other_group);
        if !tx.put(ITEMS, other, &given)? || !tx.delete(ITEMS, key)? {
            return Err(Aborted);
        }
        Ok(Outcome::Commit)
    }

    fn relocate(
        &self,
        tx: &mut dyn Tx,
        key: u64,
        to: u64,
        group: u64,
        scratch: &mut Scratch,
    ) -> Result<Outcome, Aborted> {
        let mut row = [0; ROW_WORDS];
        if !tx.get(ITEMS, key, &mut row, true)? {
            return Ok(Outcome::Commit);
        }
        if !tx.delete(ITEMS, key)? {
            return Err(Aborted);
        }
        Self::group_members(tx, group, Direction::Descending, self.shape.cap as usize, &mut scratch.keys)?;
        if scratch.keys.len() >= self.shape.cap as usize
            || !tx.insert(ITEMS, to, &item_row(to, value_of(&row), group))?
        {
            // No room, or the new key is taken: undo everything.
            return Ok(Outcome::UserAbort);
        }
        Ok(Outcome::Commit)
    }

    fn scan(tx: &mut dyn Tx, txn: &Txn, scratch: &mut Scratch) -> Result<Outcome, Aborted> {
        let limit = txn.amount as usize;
        let descending = txn.flags & DESCENDING != 0;
        if txn.flags & THROUGH_INDEX != 0 {
            let group = txn.keys[0];
            Self::group_members(tx, group, direction(descending), limit, &mut scratch.keys)?;
            let members = std::mem::take(&mut scratch.keys);
            let read = Self::read_members(tx, group, &members, &mut scratch.row);
            scratch.keys = members;
            read?;
        } else {
            let stop_at_odd = txn.flags & STOP_AT_ODD != 0;
            tx.scan(ITEMS, txn.keys[0], txn.keys[1], direction(descending), limit, &mut |_, row| {
                !(stop_at_odd && value_of(row) % 2 != 0)
            })?;
        }
        Ok(Outcome::Commit)
    }

    fn rebalance(tx: &mut dyn Tx, txn: &Txn, scratch: &mut Scratch) -> Result<Outcome, Aborted> {
        let group = txn.keys[0];
        Self::group_members(tx, group, direction(txn.flags & DESCENDING != 0), txn.amount as usize, &mut scratch.keys)?;
        let members = std::mem::take(&mut scratch.keys);
        let read = Self::read_members(tx, group, &members, &mut scratch.row);
        scratch.keys = members;
        read?;
        let rows: Vec<(u64, i64)> =
            scratch.keys.iter().zip(scratch.row.chunks(ROW_WORDS)).map(|(&key, row)| (key, value_of(row))).collect();
        let richest = rows.iter().max_by_key(|&&(key, value)| (value, key));
        let poorest = rows.iter().min_by_key(|&&(key, value)| (value, key));
        if let (Some(&(rich, rich_value)), Some(&(poor, poor_value))) = (richest, poorest)
            && rich_value - poor_value >= 2
            && (!tx.put(ITEMS, rich, &item_row(rich, rich_value - 1, group))?
                || !tx.put(ITEMS, poor, &item_row(poor, poor_value + 1, group))?)
        {
            return Err(Aborted);
        }
        Ok(Outcome::Commit)
    }
}

impl TableWorkload for SimWorkload {
    fn name(&self) -> &'static str {
        "simulation"
    }

    fn procedure_names(&self) -> &'static [&'static str] {
        PROCEDURES
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn load(&self, part: usize, _parts: usize, sink: &mut dyn FnMut(TableId, u64, &[u64])) {
        if part == 0 {
            for &(key, value, group) in &self.initial {
                sink(ITEMS, key, &item_row(key, value, group));
            }
        }
    }

    fn generate(&self, rng: &mut WorkloadRng, _worker: usize, txn: &mut Txn) {
        let mut pick = rng.random_range(0..WEIGHTS.iter().sum::<u32>());
        let procedure = WEIGHTS
            .iter()
            .position(|&weight| {
                let hit = pick < weight;
                pick = pick.saturating_sub(weight);
                hit
            })
            .expect("a procedure under the total weight");
        txn.procedure = procedure as u8;
        txn.keys.clear();
        txn.amount = 0;
        txn.flags = 0;
        match txn.procedure {
            TRANSFER => {
                txn.keys.extend([self.any_key(rng), self.any_key(rng)]);
                txn.amount = rng.random_range(1..=5);
            }
            INSERT => txn.keys.extend([self.any_key(rng), self.any_group(rng)]),
            DELETE => {
                txn.keys.push(self.any_key(rng));
                txn.flags = u64::from(rng.random_bool(0.5));
            }
            MOVE => {
                let key = self.any_key(rng);
                let to = if rng.random_bool(0.25) { key } else { self.any_key(rng) };
                txn.keys.extend([key, to, self.any_group(rng)]);
            }
            SCAN => {
                txn.flags = (u64::from(rng.random_bool(0.5)) * DESCENDING)
                    | (u64::from(rng.random_bool(0.3)) * THROUGH_INDEX)
                    | (u64::from(rng.random_bool(0.3)) * STOP_AT_ODD);
                txn.amount = rng.random_range(1..=self.shape.keys as i64 + 1);
                if txn.flags & THROUGH_INDEX != 0 {
                    txn.keys.push(self.any_group(rng));
                } else {
                    let (a, b) = (self.any_key(rng), self.any_key(rng));
                    txn.keys.extend([a.min(b), a.max(b) + rng.random_range(0..=2)]);
                }
            }
            READS => {
                let count = rng.random_range(1..=READS_MAX);
                txn.keys.extend((0..count).map(|_| self.any_key(rng)));
            }
            REBALANCE => {
                txn.keys.push(self.any_group(rng));
                txn.flags = u64::from(rng.random_bool(0.5)) * DESCENDING;
                txn.amount = rng.random_range(2..=self.shape.cap as i64 + 1);
            }
            _ => unreachable!("procedure {procedure} drawn from {} weights", WEIGHTS.len()),
        }
    }

    fn run(&self, txn: &Txn, tx: &mut dyn Tx, scratch: &mut Scratch) -> Result<Outcome, Aborted> {
        let keys = &txn.keys;
        match txn.procedure {
            TRANSFER => Self::transfer(tx, keys[0], keys[1], txn.amount),
            INSERT => self.insert(tx, keys[0], keys[1], scratch),
            DELETE => Self::delete(tx, keys[0], txn.flags & DESCENDING != 0),
            MOVE => self.relocate(tx, keys[0], keys[1], keys[2], scratch),
            SCAN => Self::scan(tx, txn, scratch),
            READS => {
                let mut row = [0; ROW_WORDS];
                tx.prefetch(ITEMS, keys);
                for &key in keys {
                    tx.get(ITEMS, key, &mut row, false)?;
                }
                Ok(Outcome::Commit)
            }
            REBALANCE => Self::rebalance(tx, txn, scratch),
            other => unreachable!("procedure {other} is not one of this workload's"),
        }
    }

    fn footprint(&self, txn: &Txn, reads: &mut Vec<u64>, writes: &mut Vec<u64>) {
        // Everything conflicts with everything through the index: one identity for the lot.
        let _ = txn;
        reads.push(0);
        writes.push(0);
    }

    fn check(&self, tx: &mut dyn Tx) -> Result<ConsistencyReport, ConsistencyError> {
        let unreadable =
            |Aborted| ConsistencyError { condition: "readable".into(), detail: "the check aborted".into() };
        let mut rows = Vec::new();
        tx.scan(ITEMS, 0, u64::MAX, Direction::Ascending, usize::MAX, &mut |key, row| {
            rows.push((key, value_of(row), row[GROUP], row[CHECK]));
            true
        })
        .map_err(unreadable)?;
        let mut entries = Vec::new();
        tx.scan(ITEMS_BY_GROUP, 0, u64::MAX, Direction::Ascending, usize::MAX, &mut |key, row| {
            entries.push((key, row[0]));
            true
        })
        .map_err(unreadable)?;
        let failed = |condition: &str, detail: String| Err(ConsistencyError { condition: condition.into(), detail });
        let mut checked = Vec::new();
        if let Some(&(key, value, group, check)) = rows
            .iter()
            .find(|&&(key, value, group, check)| group >= self.shape.groups || check != check_word(key, value, group))
        {
            return failed("rows intact", format!("key {key}: value {value}, group {group}, check word {check:#x}"));
        }
        checked.push("rows intact".to_owned());
        let total: i64 = rows.iter().map(|&(_, value, _, _)| value).sum();
        if total != self.total() {
            return failed("conserved total", format!("the values sum to {total}, not {}", self.total()));
        }
        checked.push("conserved total".to_owned());
        let mut expected: Vec<(u64, u64)> =
            rows.iter().map(|&(key, _, group, _)| ((group << GROUP_SHIFT) | key, key)).collect();
        expected.sort_unstable();
        if entries != expected {
            return failed("index matches rows", format!("index entries {entries:?}, rows want {expected:?}"));
        }
        checked.push("index matches rows".to_owned());
        if self.check_cap {
            for group in 0..self.shape.groups {
                let members = rows.iter().filter(|row| row.2 == group).count() as u64;
                if members > self.shape.cap {
                    return failed("group cap", format!("group {group} holds {members} rows, cap {}", self.shape.cap));
                }
            }
            checked.push("group cap".to_owned());
        }
        Ok(ConsistencyReport { checked })
    }
}

#[cfg(test)]
mod tests {
    use ordo_workload::{Maintained, MemoryDb, rng_from_seed};

    use super::*;

    fn condition(workload: &SimWorkload, db: &mut MemoryDb) -> Option<String> {
        workload.check(db).err().map(|e| e.condition)
    }

    #[test]
    fn procedures_keep_the_invariants_serially() {
        for seed in 0..20 {
            let mut rng = rng_from_seed(seed);
            let workload = SimWorkload::new(SimShape::draw(&mut rng), &mut rng);
            let mut db = MemoryDb::loaded(&workload);
            let (mut txn, mut scratch) = (Txn::default(), Scratch::default());
            let mut commits = 0;
            for _ in 0..300 {
                workload.generate(&mut rng, 0, &mut txn);
                commits += usize::from(db.run(&workload, &txn, &mut scratch) == Outcome::Commit);
            }
            assert!(commits > 200, "seed {seed}: {commits} of 300 committed");
            let report = workload.check(&mut db).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(report.checked.len(), 4, "{report:?}");
        }
    }

    #[test]
    fn the_check_catches_each_broken_invariant() {
        let mut rng = rng_from_seed(7);
        let workload = SimWorkload::new(SimShape { keys: 8, groups: 2, cap: 3 }, &mut rng);
        let fresh = || {
            let mut db = MemoryDb::new(workload.schema());
            let mut scratch = Vec::new();
            let mut tx = Maintained::new(workload.schema(), &mut db, &mut scratch);
            for key in 0..3 {
                tx.insert(ITEMS, key, &item_row(key, 5, key % 2)).unwrap();
            }
            db
        };
        let ok = SimWorkload {
            initial: vec![(0, 5, 0), (1, 5, 1), (2, 5, 0)],
            ..SimWorkload::new(workload.shape, &mut rng)
        };
        assert_eq!(condition(&ok, &mut fresh()), None);
        let mut db = fresh();
        db.put(ITEMS, 1, &item_row(1, 6, 1)).unwrap();
        assert_eq!(condition(&ok, &mut db).as_deref(), Some("conserved total"));
        let mut db = fresh();
        db.put(ITEMS, 1, &[5, 1, 0]).unwrap();
        assert_eq!(condition(&ok, &mut db).as_deref(), Some("rows intact"));
        let mut db = fresh();
        db.insert(ITEMS_BY_GROUP, 7, &[7]).unwrap();
        assert_eq!(condition(&ok, &mut db).as_deref(), Some("index matches rows"));
        let mut db = fresh();
        let mut scratch = Vec::new();
        let mut tx = Maintained::new(ok.schema(), &mut db, &mut scratch);
        tx.insert(ITEMS, 4, &item_row(4, 0, 0)).unwrap();
        tx.insert(ITEMS, 6, &item_row(6, 0, 0)).unwrap();
        assert_eq!(condition(&ok, &mut db).as_deref(), Some("group cap"));
        let lenient = SimWorkload { check_cap: false, ..ok };
        assert_eq!(condition(&lenient, &mut db), None);
    }
}
