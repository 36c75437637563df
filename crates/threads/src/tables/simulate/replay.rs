//! The replay oracle: what each committed attempt observed, and a search for a serial order of
//! the committed transactions that reproduces every observation and the final database.
//!
//! ```text
//!   attempt:   Recorded(attempt)  every Tx call and its answer ──> Vec<Observed>  (yield point before and after)
//!   after run: edges from the history's versions      ww: writer(v) -> writer(next v)
//!                                                     wr: writer(v) -> reader of v
//!                                                     rw: reader of v -> writer(next v)
//!              depth-first over orders that respect the edges, read-only first, else commit order:
//!                place T = run T's procedure on the model (a MemoryDb) and compare every answer
//!                with what T observed; a mismatch undoes T and tries the next candidate
//!              all placed: the model must equal the engine's tables, row for row
//! ```
//!
//! The edges are the history checker's, minus scans' absences (a written key a scan did not
//! list): with several absent versions the history cannot say which one the scan saw, so no
//! edge is drawn and the search sorts them out by comparing observations. Ready read-only
//! transactions are tried first, and one that matches is placed without a branch (placing it
//! never changes the model), so the search rarely backtracks; it gives up after
//! [`PLACEMENTS_MAX`] placements.
//!
//! Why this is stronger than the checker alone: the checker trusts the versions a protocol
//! reports, the replay checks the rows themselves (a torn or stale row under a correct version
//! number, a scan that skipped a row, a wrong answer to an insert of a present key) and that
//! the database left behind is the one the serial order produces.

use std::collections::BTreeMap;
use std::collections::HashMap;

use ordo_history::{HistoryEntry, WriteEffect};
use ordo_storage::TableId;
use ordo_workload::{Aborted, Direction, Maintained, MemoryDb, Outcome, Scratch, TableWorkload, Tx, Txn};

use crate::interleave;

/// Most transactions the search places (backtracking included) before it gives up.
pub const PLACEMENTS_MAX: usize = 50_000;

/// One `Tx` call of an attempt and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    Get { table: TableId, key: u64, row: Option<Vec<u64>> },
    Put { table: TableId, key: u64, row: Vec<u64>, done: bool },
    Insert { table: TableId, key: u64, row: Vec<u64>, done: bool },
    Delete { table: TableId, key: u64, done: bool },
    Scan { table: TableId, low: u64, high: u64, descending: bool, limit: usize, rows: Vec<(u64, Vec<u64>)> },
}

/// An attempt that records every call and its answer, with a yield point before and after
/// each call.
#[derive(Debug)]
pub struct Recorded<T> {
    inner: T,
    log: Vec<Observed>,
}

impl<T: Tx> Recorded<T> {
    pub fn new(inner: T) -> Self {
        Recorded { inner, log: Vec::new() }
    }

    /// The attempt and what it observed.
    pub fn into_parts(self) -> (T, Vec<Observed>) {
        (self.inner, self.log)
    }
}

impl<T: Tx> Tx for Recorded<T> {
    fn prefetch(&mut self, table: TableId, keys: &[u64]) {
        self.inner.prefetch(table, keys);
    }

    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], for_update: bool) -> Result<bool, Aborted> {
        interleave::point();
        let present = self.inner.get(table, key, row, for_update)?;
        self.log.push(Observed::Get { table, key, row: present.then(|| row.to_vec()) });
        interleave::point();
        Ok(present)
    }

    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        interleave::point();
        let done = self.inner.put(table, key, row)?;
        self.log.push(Observed::Put { table, key, row: row.to_vec(), done });
        interleave::point();
        Ok(done)
    }

    fn insert(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        interleave::point();
        let done = self.inner.insert(table, key, row)?;
        self.log.push(Observed::Insert { table, key, row: row.to_vec(), done });
        interleave::point();
        Ok(done)
    }

    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        interleave::point();
        let done = self.inner.delete(table, key)?;
        self.log.push(Observed::Delete { table, key, done });
        interleave::point();
        Ok(done)
    }

    fn scan(
        &mut self,
        table: TableId,
        low: u64,
        high: u64,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(u64, &[u64]) -> bool,
    ) -> Result<usize, Aborted> {
        interleave::point();
        let mut rows = Vec::new();
        let visited = self.inner.scan(table, low, high, direction, limit, &mut |key, row| {
            rows.push((key, row.to_vec()));
            visit(key, row)
        })?;
        debug_assert_eq!(visited, rows.len(), "a scan counts the rows it visited");
        let descending = direction == Direction::Descending;
        self.log.push(Observed::Scan { table, low, high, descending, limit, rows });
        interleave::point();
        Ok(visited)
    }

    fn wants_update_hints(&self) -> bool {
        self.inner.wants_update_hints()
    }
}

/// A committed transaction, as the simulator saw it.
#[derive(Debug, Clone)]
pub struct CommittedTxn {
    /// Its history id.
    pub id: u64,
    pub worker: usize,
    pub txn: Txn,
    /// Its committed attempt's calls and answers.
    pub observed: Vec<Observed>,
}

/// Why no serial order reproduces the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayFailure {
    /// Transactions placed in the deepest partial order reached, by history id.
    pub placed: Vec<u64>,
    /// What went wrong there.
    pub detail: String,
}

/// A transaction's place in the dependency graph.
struct Node {
    successors: Vec<usize>,
    predecessors: usize,
    read_only: bool,
}

/// Builds the edges the history's versions fix, over `committed` (in commit order).
fn dependency_graph(history: &[HistoryEntry], committed: &[CommittedTxn]) -> Result<Vec<Node>, String> {
    let position: HashMap<u64, usize> = committed.iter().enumerate().map(|(i, txn)| (txn.id, i)).collect();
    let mut nodes: Vec<Node> = committed
        .iter()
        .map(|txn| Node {
            successors: Vec::new(),
            predecessors: 0,
            read_only: txn.observed.iter().all(|o| matches!(o, Observed::Get { .. } | Observed::Scan { .. })),
        })
        .collect();
    // Each key's versions in order, with their writer and what the write did.
    let mut versions: BTreeMap<(TableId, u64), BTreeMap<u64, (usize, WriteEffect)>> = BTreeMap::new();
    for entry in history {
        let Some(&txn) = position.get(&entry.id) else {
            return Err(format!("history entry T{} is no committed transaction of the run", entry.id));
        };
        for (access, effect) in entry.all_writes() {
            versions.entry((access.table, access.key)).or_default().insert(access.version, (txn, effect));
        }
    }
    let mut edges = Vec::new();
    for writers in versions.values() {
        let chain: Vec<usize> = writers.values().map(|&(txn, _)| txn).collect();
        edges.extend(chain.windows(2).map(|pair| (pair[0], pair[1])));
    }
    for entry in history {
        let reader = position[&entry.id];
        let reads = entry.reads.iter().map(|a| (a.table, a.key, a.version));
        let rows =
            entry.scans.iter().flat_map(|scan| scan.rows.iter().map(|&(key, version)| (scan.table, key, version)));
        let mut observed: Vec<(TableId, u64, u64)> = reads.chain(rows).collect();
        // A written key of a scan's range that the scan did not list was absent; with exactly
        // one absent version (version 0 of a key first inserted, or one delete), it read that.
        for scan in &entry.scans {
            for (&(table, key), writers) in versions.range((scan.table, scan.low)..=(scan.table, scan.high)) {
                if scan.rows.iter().any(|&(listed, _)| listed == key) {
                    continue;
                }
                let initially_absent =
                    writers.values().next().is_some_and(|&(_, effect)| effect == WriteEffect::Insert);
                let deletes = writers.iter().filter(|(_, (_, effect))| *effect == WriteEffect::Delete).map(|(&v, _)| v);
                let absent: Vec<u64> = initially_absent.then_some(0).into_iter().chain(deletes).collect();
                if let [version] = absent[..] {
                    observed.push((table, key, version));
                }
            }
        }
        for (table, key, version) in observed {
            let Some(writers) = versions.get(&(table, key)) else { continue };
            if let Some(&(writer, _)) = writers.get(&version) {
                edges.push((writer, reader));
            }
            if let Some((_, &(next, _))) = writers.range(version + 1..).next() {
                edges.push((reader, next));
            }
        }
    }
    edges.sort_unstable();
    edges.dedup();
    for (from, to) in edges {
        if from != to {
            nodes[from].successors.push(to);
            nodes[to].predecessors += 1;
        }
    }
    Ok(nodes)
}

/// A [`Tx`] over the model that compares every call and answer with a recorded attempt's,
/// remembering how to undo its writes.
struct Checker<'a> {
    db: &'a mut MemoryDb,
    expected: &'a [Observed],
    at: usize,
    undo: &'a mut Vec<(TableId, u64, Option<Vec<u64>>)>,
    mismatch: Option<String>,
}

impl Checker<'_> {
    fn compare(&mut self, actual: &Observed) -> Result<(), Aborted> {
        match self.expected.get(self.at) {
            Some(expected) if expected == actual => {
                self.at += 1;
                Ok(())
            }
            Some(expected) => {
                self.mismatch =
                    Some(format!("call {}: the engine answered {expected:?}, serially {actual:?}", self.at));
                Err(Aborted)
            }
            None => {
                self.mismatch = Some(format!("call {}: serially the procedure goes on with {actual:?}", self.at));
                Err(Aborted)
            }
        }
    }

    fn remember(&mut self, table: TableId, key: u64) {
        self.undo.push((table, key, self.db.table(table).get(&key).cloned()));
    }
}

impl Tx for Checker<'_> {
    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], for_update: bool) -> Result<bool, Aborted> {
        let present = self.db.get(table, key, row, for_update)?;
        self.compare(&Observed::Get { table, key, row: present.then(|| row.to_vec()) })?;
        Ok(present)
    }

    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        self.remember(table, key);
        let done = self.db.put(table, key, row)?;
        self.compare(&Observed::Put { table, key, row: row.to_vec(), done })?;
        Ok(done)
    }

    fn insert(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        self.remember(table, key);
        let done = self.db.insert(table, key, row)?;
        self.compare(&Observed::Insert { table, key, row: row.to_vec(), done })?;
        Ok(done)
    }

    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        self.remember(table, key);
        let done = self.db.delete(table, key)?;
        self.compare(&Observed::Delete { table, key, done })?;
        Ok(done)
    }

    fn scan(
        &mut self,
        table: TableId,
        low: u64,
        high: u64,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(u64, &[u64]) -> bool,
    ) -> Result<usize, Aborted> {
        let mut rows = Vec::new();
        let visited = self.db.scan(table, low, high, direction, limit, &mut |key, row| {
            rows.push((key, row.to_vec()));
            visit(key, row)
        })?;
        let descending = direction == Direction::Descending;
        self.compare(&Observed::Scan { table, low, high, descending, limit, rows })?;
        Ok(visited)
    }
}

/// The search for a serial order.
struct Search<'a> {
    workload: &'a dyn TableWorkload,
    committed: &'a [CommittedTxn],
    nodes: Vec<Node>,
    db: MemoryDb,
    order: Vec<usize>,
    placed: Vec<bool>,
    placements: usize,
    scratch: Scratch,
    row: Vec<u64>,
    /// The deepest dead end so far: the order up to it and why nothing fit.
    deepest: Option<ReplayFailure>,
}

impl Search<'_> {
    /// Replays transaction `i` on the model; on a mismatch undoes it and says why.
    fn place(&mut self, i: usize, undo: &mut Vec<(TableId, u64, Option<Vec<u64>>)>) -> Result<(), String> {
        self.placements += 1;
        undo.clear();
        let all = self.committed;
        let committed = &all[i];
        let mut checker = Checker { db: &mut self.db, expected: &committed.observed, at: 0, undo, mismatch: None };
        let outcome = {
            let mut tx = Maintained::new(self.workload.schema(), &mut checker, &mut self.row);
            self.workload.run(&committed.txn, &mut tx, &mut self.scratch)
        };
        let problem = match (outcome, checker.mismatch.take()) {
            (_, Some(mismatch)) => Some(mismatch),
            (Ok(Outcome::Commit), None) if checker.at == committed.observed.len() => None,
            (Ok(Outcome::Commit), None) => Some(format!(
                "serially the procedure commits after {} of {} calls",
                checker.at,
                committed.observed.len()
            )),
            (other, None) => Some(format!("serially the procedure ends with {other:?}, the engine committed it")),
        };
        match problem {
            None => Ok(()),
            Some(problem) => {
                self.undo(undo);
                Err(format!(
                    "T{} ({}): {problem}",
                    committed.id,
                    self.workload.procedure_names()[usize::from(committed.txn.procedure)]
                ))
            }
        }
    }

    fn undo(&mut self, undo: &[(TableId, u64, Option<Vec<u64>>)]) {
        for (table, key, previous) in undo.iter().rev() {
            let present = self.db.table(*table).contains_key(key);
            let restored = match previous {
                Some(row) if present => self.db.put(*table, *key, row),
                Some(row) => self.db.insert(*table, *key, row),
                None if present => self.db.delete(*table, *key),
                None => Ok(true),
            };
            debug_assert_eq!(restored, Ok(true));
        }
    }

    /// Depth-first: extends the order by every ready transaction that matches, read-only ones
    /// first, each kind in commit order. Returns whether a full order was found.
    ///
    /// Read-only first is what keeps the search from running out of placements: a read-only
    /// transaction that matches now can go now in every order that completes from here (it
    /// changes nothing the others observe, and its predecessors are placed), so it never needs
    /// a branch. In commit order alone, a writer committed before it could go first and change
    /// what it saw, and the search would then try the writers' orders beneath that writer
    /// before coming back to the read (seed 7005420 of `ssi::seeds` ran out of placements
    /// that way on a scan of a range that writers later filled).
    fn extend(&mut self) -> Result<bool, ReplayFailure> {
        if self.order.len() == self.committed.len() {
            return Ok(true);
        }
        let mut ready: Vec<usize> =
            (0..self.committed.len()).filter(|&i| !self.placed[i] && self.nodes[i].predecessors == 0).collect();
        ready.sort_by_key(|&i| !self.nodes[i].read_only);
        let mut reasons = Vec::new();
        let mut undo = Vec::new();
        for &i in &ready {
            if self.placements >= PLACEMENTS_MAX {
                let deepest = self.deepest.take().map_or_else(String::new, |deepest| {
                    format!("; the deepest dead end, after {:?}: {}", deepest.placed, deepest.detail)
                });
                return Err(ReplayFailure {
                    placed: self.ids(),
                    detail: format!("no serial order found within {PLACEMENTS_MAX} placements{deepest}"),
                });
            }
            match self.place(i, &mut undo) {
                Err(reason) => reasons.push(reason),
                Ok(()) => {
                    let undo_i = std::mem::take(&mut undo);
                    self.push(i);
                    if self.extend()? {
                        return Ok(true);
                    }
                    self.pop(i);
                    self.undo(&undo_i);
                    if self.nodes[i].read_only {
                        // The model did not change, so no other choice here can do better.
                        return Ok(false);
                    }
                }
            }
        }
        if self.deepest.as_ref().is_none_or(|deepest| deepest.placed.len() < self.order.len()) {
            let detail = if ready.is_empty() {
                "a dependency cycle among the rest".to_owned()
            } else {
                format!("no ready transaction fits next:\n    {}", reasons.join("\n    "))
            };
            self.deepest = Some(ReplayFailure { placed: self.ids(), detail });
        }
        Ok(false)
    }

    fn push(&mut self, i: usize) {
        self.order.push(i);
        self.placed[i] = true;
        for k in 0..self.nodes[i].successors.len() {
            let next = self.nodes[i].successors[k];
            self.nodes[next].predecessors -= 1;
        }
    }

    fn pop(&mut self, i: usize) {
        assert_eq!(self.order.pop(), Some(i));
        self.placed[i] = false;
        for k in 0..self.nodes[i].successors.len() {
            let next = self.nodes[i].successors[k];
            self.nodes[next].predecessors += 1;
        }
    }

    fn ids(&self) -> Vec<u64> {
        self.order.iter().map(|&i| self.committed[i].id).collect()
    }
}

/// Finds a serial order of `committed` (given in commit order) that reproduces every
/// observation, starting from `workload`'s initial rows; returns it (by history id) with the
/// model database it leaves.
pub fn serial_replay(
    workload: &dyn TableWorkload,
    history: &[HistoryEntry],
    committed: &[CommittedTxn],
) -> Result<(Vec<u64>, MemoryDb), ReplayFailure> {
    let nodes = dependency_graph(history, committed).map_err(|detail| ReplayFailure { placed: Vec::new(), detail })?;
    let mut search = Search {
        workload,
        committed,
        nodes,
        db: MemoryDb::loaded(workload),
        order: Vec::new(),
        placed: vec![false; committed.len()],
        placements: 0,
        scratch: Scratch::default(),
        row: Vec::new(),
        deepest: None,
    };
    if search.extend()? {
        let order = search.ids();
        Ok((order, search.db))
    } else {
        Err(search.deepest.unwrap_or(ReplayFailure { placed: Vec::new(), detail: "no serial order".into() }))
    }
}

#[cfg(test)]
mod tests {
    use ordo_workload::rng_from_seed;

    use super::*;
    use crate::tables::simulate::workload::{SimShape, SimWorkload};

    /// `count` transactions run one after the other on a `MemoryDb` and recorded (never a
    /// `move`, the one procedure that may roll itself back), and the database they leave.
    fn serial_run(seed: u64, count: usize) -> (SimWorkload, Vec<CommittedTxn>, MemoryDb) {
        const MOVE: u8 = 3;
        let mut rng = rng_from_seed(seed);
        let workload = SimWorkload::new(SimShape { keys: 6, groups: 2, cap: 3 }, &mut rng);
        let mut db = MemoryDb::loaded(&workload);
        let (mut scratch, mut row, mut committed) = (Scratch::default(), Vec::new(), Vec::new());
        while committed.len() < count {
            let mut txn = Txn::default();
            workload.generate(&mut rng, 0, &mut txn);
            if txn.procedure == MOVE {
                continue;
            }
            let mut recorded = Recorded::new(std::mem::take(&mut db));
            let outcome =
                workload.run(&txn, &mut Maintained::new(workload.schema(), &mut recorded, &mut row), &mut scratch);
            assert_eq!(outcome, Ok(Outcome::Commit));
            let observed;
            (db, observed) = recorded.into_parts();
            committed.push(CommittedTxn { id: committed.len() as u64 + 1, worker: 0, txn, observed });
        }
        (workload, committed, db)
    }

    fn ids(committed: &[CommittedTxn]) -> Vec<u64> {
        committed.iter().map(|txn| txn.id).collect()
    }

    #[test]
    fn finds_the_serial_order_when_the_commit_order_differs() {
        for seed in 0..10 {
            let (workload, mut committed, db) = serial_run(seed, 30);
            let serial = ids(&committed);
            // Every pair swapped, and no history, so no edges: the search has to find the
            // order by comparing answers alone.
            for pair in committed.chunks_mut(2) {
                pair.reverse();
            }
            let (found, model) = serial_replay(&workload, &[], &committed).expect("a serial order exists");
            assert_eq!(found.len(), serial.len());
            for table in 0..2 {
                assert_eq!(
                    model.table(table),
                    db.table(table),
                    "seed {seed}: the replay leaves the same table {table}"
                );
            }
        }
    }

    #[test]
    fn a_wrong_answer_has_no_serial_order() {
        let (workload, mut committed, _) = serial_run(3, 30);
        let (t, call) = committed
            .iter()
            .enumerate()
            .find_map(|(t, txn)| {
                txn.observed.iter().position(|o| matches!(o, Observed::Get { row: Some(_), .. })).map(|call| (t, call))
            })
            .expect("some transaction read a present row");
        let Observed::Get { row: Some(row), .. } = &mut committed[t].observed[call] else { unreachable!() };
        row[0] ^= 1 << 40;
        let failure = serial_replay(&workload, &[], &committed).expect_err("no order explains a row nobody wrote");
        assert!(failure.detail.contains("the engine answered"), "{failure:?}");
    }
}
