//! The processor (§5.1): a non-blocking coordinator that multiplexes many live transactions.
//!
//! Each live transaction is a small state machine in a slot of the processor:
//!
//! ```text
//!  Submit ─> reading ──(all replies of the round)──> workload.step ─┬─ Read: next round
//!               ▲                                                    ├─ Commit ─┐
//!               │                                                    └─ UserAbort┤
//!               │                                                  Validate <────┘
//!               └────────── Decide(Abort): restart, restarts += 1 ─────┤
//!                           Decide(Commit ts): writes -> storage (version ts),
//!                                              Done -> client, slot freed
//! ```
//!
//! The processor never waits: it sends a round's reads (one message per storage partition
//! touched) and goes on with other messages; replies carry positions, so they can arrive in
//! any order. Writes stay in the transaction's private workspace until the validator commits
//! it. A user abort (e.g. insufficient funds) is validated like a read-only transaction, so the
//! decision to give up was taken on a consistent snapshot; if that validation fails the
//! transaction restarts like any other.
//!
//! Slots, read lists and validation requests are reused: read lists come back in the storage's
//! reply and requests in the validator's decision, so a steady-state attempt allocates only its
//! write messages.

use std::sync::Arc;

use ordo_workload::{Key, Step, Value, Workload};

use crate::component::Context;
use crate::message::{
    Address, CommitRecord, Decision, Message, Outcome, ReadItem, Submission, Ts, TxnRef, ValidationRequest,
};

/// Spare buffers kept for reuse, at most this many of each kind.
const SPARES_MAX: usize = 1024;

#[derive(Debug, Default)]
struct LiveTxn {
    /// `None` while the slot is free.
    submission: Option<Box<Submission>>,
    restarts: u32,
    attempt: u32,
    /// Every value read in this attempt, in request order.
    values: Vec<Value>,
    /// `(key, version)` of every read, parallel to `values`.
    read_set: Vec<(Key, Ts)>,
    /// Replies still missing for the current round.
    pending_replies: u16,
    writes: Vec<(Key, Value)>,
    user_abort: bool,
}

impl LiveTxn {
    fn restart(&mut self) {
        self.attempt += 1;
        self.values.clear();
        self.read_set.clear();
        self.writes.clear();
        self.pending_replies = 0;
        self.user_abort = false;
    }
}

#[derive(Debug)]
pub struct Processor {
    index: u16,
    storage_partitions: u16,
    workload: Arc<dyn Workload>,
    slots: Vec<LiveTxn>,
    free: Vec<u32>,
    /// Scratch: keys of the round being issued, and per-partition read lists.
    round_keys: Vec<Key>,
    per_partition: Vec<Vec<ReadItem>>,
    write_batches: Vec<Vec<(Key, Value, Ts)>>,
    spare_reads: Vec<Vec<ReadItem>>,
    /// Boxed on purpose: each is sent as a message payload again as it is.
    #[allow(clippy::vec_box)]
    spare_requests: Vec<Box<ValidationRequest>>,
}

impl Processor {
    pub fn new(index: u16, storage_partitions: u16, workload: Arc<dyn Workload>) -> Self {
        Processor {
            index,
            storage_partitions,
            workload,
            slots: Vec::new(),
            free: Vec::new(),
            round_keys: Vec::new(),
            per_partition: vec![Vec::new(); usize::from(storage_partitions)],
            write_batches: vec![Vec::new(); usize::from(storage_partitions)],
            spare_reads: Vec::new(),
            spare_requests: Vec::new(),
        }
    }

    /// Transactions currently live here.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    #[inline]
    fn partition_of(&self, key: Key) -> u16 {
        (key % u64::from(self.storage_partitions)) as u16
    }

    pub fn handle(&mut self, message: Message, ctx: &mut Context) {
        match message {
            Message::Submit(submission) => self.start(submission, ctx),
            Message::ReadReply { txn, items } => self.read_reply(txn, items, ctx),
            Message::Decide { decision, request } => self.decide(request, decision, ctx),
            other => unreachable!("processor got {other:?}: no route delivers it here"),
        }
    }

    fn start(&mut self, submission: Box<Submission>, ctx: &mut Context) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(LiveTxn::default());
            (self.slots.len() - 1) as u32
        });
        let live = &mut self.slots[slot as usize];
        assert!(live.submission.is_none(), "slot {slot} reused while live");
        live.submission = Some(submission);
        live.restarts = 0;
        live.restart();
        self.advance(slot, ctx);
    }

    /// Asks the workload what this transaction wants next and does it.
    fn advance(&mut self, slot: u32, ctx: &mut Context) {
        let Processor { index, workload, slots, round_keys, .. } = self;
        let live = &mut slots[slot as usize];
        let submission = live.submission.as_ref().expect("advance on a live slot");
        round_keys.clear();
        match workload.step(&submission.txn, &live.values, round_keys, &mut live.writes) {
            Step::Read if !round_keys.is_empty() => {
                let txn = TxnRef { processor: *index, slot, attempt: live.attempt };
                let base = live.values.len();
                live.values.resize(base + round_keys.len(), 0);
                live.read_set.extend(round_keys.iter().map(|&key| (key, 0)));
                self.issue_reads(txn, base, ctx);
            }
            Step::Read => unreachable!("a procedure asked to read nothing (a workload bug)"),
            Step::Commit => self.request_validation(slot, false, ctx),
            Step::UserAbort => self.request_validation(slot, true, ctx),
        }
    }

    fn issue_reads(&mut self, txn: TxnRef, base: usize, ctx: &mut Context) {
        for (position, &key) in self.round_keys.iter().enumerate() {
            let partition = usize::from(self.partition_of(key));
            self.per_partition[partition].push(ReadItem {
                position: (base + position) as u16,
                key,
                value: 0,
                version: 0,
            });
        }
        let mut messages = 0u16;
        for (partition, items) in self.per_partition.iter_mut().enumerate() {
            if !items.is_empty() {
                let spare = self.spare_reads.pop().unwrap_or_default();
                ctx.send(
                    Address::Storage(partition as u16),
                    Message::Read { txn, items: std::mem::replace(items, spare) },
                );
                messages += 1;
            }
        }
        self.slots[txn.slot as usize].pending_replies = messages;
    }

    fn read_reply(&mut self, txn: TxnRef, mut items: Vec<ReadItem>, ctx: &mut Context) {
        let live = &mut self.slots[txn.slot as usize];
        let current = live.submission.is_some() && live.attempt == txn.attempt;
        assert!(current, "reply for a free slot or an earlier attempt");
        if current {
            for item in &items {
                let position = usize::from(item.position);
                live.values[position] = item.value;
                live.read_set[position].1 = item.version;
            }
            assert!(live.pending_replies > 0, "more replies than reads");
            live.pending_replies -= 1;
        }
        let round_done = current && live.pending_replies == 0;
        if self.spare_reads.len() < SPARES_MAX {
            items.clear();
            self.spare_reads.push(items);
        }
        if round_done {
            self.advance(txn.slot, ctx);
        }
    }

    fn request_validation(&mut self, slot: u32, user_abort: bool, ctx: &mut Context) {
        let mut request = self.spare_requests.pop().unwrap_or_default();
        let live = &mut self.slots[slot as usize];
        live.user_abort = user_abort;
        if user_abort {
            live.writes.clear();
        }
        request.txn = TxnRef { processor: self.index, slot, attempt: live.attempt };
        // The read set travels to the validator and comes back with the decision.
        request.reads.clear();
        std::mem::swap(&mut request.reads, &mut live.read_set);
        request.writes.clear();
        request.writes.extend(live.writes.iter().map(|&(key, _)| key));
        request.values.clear();
        request.values.extend(live.writes.iter().map(|&(_, value)| value));
        request.restarts = live.restarts;
        request.user_abort = user_abort;
        ctx.send(Address::Validator, Message::Validate(request));
    }

    fn decide(&mut self, mut request: Box<ValidationRequest>, decision: Decision, ctx: &mut Context) {
        let txn = request.txn;
        let live = &mut self.slots[txn.slot as usize];
        let current = live.submission.is_some() && live.attempt == txn.attempt;
        assert!(current, "decision for a free slot or an earlier attempt");
        if current {
            match decision {
                Decision::Abort(cause) => {
                    ctx.recorder.abort(ctx.now_us, cause);
                    live.restarts += 1;
                    live.restart();
                    std::mem::swap(&mut live.read_set, &mut request.reads);
                    live.read_set.clear();
                    self.recycle(request);
                    self.advance(txn.slot, ctx);
                    return;
                }
                Decision::Commit(ts) => self.finish(txn.slot, ts, &mut request, ctx),
            }
        }
        self.recycle(request);
    }

    fn recycle(&mut self, request: Box<ValidationRequest>) {
        if self.spare_requests.len() < SPARES_MAX {
            self.spare_requests.push(request);
        }
    }

    fn finish(&mut self, slot: u32, ts: Ts, request: &mut ValidationRequest, ctx: &mut Context) {
        let partitions = self.storage_partitions;
        let live = &mut self.slots[slot as usize];
        let submission = live.submission.take().expect("finishing a live slot");
        let outcome = if live.user_abort { Outcome::UserAborted } else { Outcome::Committed };
        if outcome == Outcome::Committed {
            for &(key, value) in &live.writes {
                let partition = (key % u64::from(partitions)) as usize;
                self.write_batches[partition].push((key, value, ts));
            }
            for (partition, writes) in self.write_batches.iter_mut().enumerate() {
                if !writes.is_empty() {
                    ctx.send(Address::Storage(partition as u16), Message::Write { writes: std::mem::take(writes) });
                }
            }
            if let Some(history) = ctx.history.as_mut() {
                history.push(CommitRecord {
                    id: submission.id,
                    ts,
                    txn: submission.txn.clone(),
                    reads: std::mem::take(&mut request.reads),
                    writes: live.writes.clone(),
                });
            }
        }
        let restarts = live.restarts;
        self.free.push(slot);
        ctx.send(Address::Client(submission.client), Message::Done { submission, outcome, restarts });
    }
}
