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

use std::sync::Arc;

use ordo_workload::{Key, Step, Value, Workload};

use crate::component::Context;
use crate::message::{
    Address, CommitRecord, Decision, Message, Outcome, ReadItem, Submission, Ts, TxnRef, ValidationRequest,
};

#[derive(Debug)]
struct LiveTxn {
    submission: Submission,
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

#[derive(Debug)]
pub struct Processor {
    index: u16,
    storage_partitions: u16,
    workload: Arc<dyn Workload>,
    slots: Vec<Option<LiveTxn>>,
    free: Vec<u32>,
    /// Scratch: keys of the round being issued, and per-partition read lists.
    round_keys: Vec<Key>,
    per_partition: Vec<Vec<ReadItem>>,
    write_batches: Vec<Vec<(Key, Value, Ts)>>,
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
            Message::Submit(submission) => self.start(*submission, ctx),
            Message::ReadReply { txn, items } => self.read_reply(txn, &items, ctx),
            Message::Decide { txn, decision } => self.decide(txn, decision, ctx),
            other => debug_assert!(false, "processor got {other:?}"),
        }
    }

    fn start(&mut self, submission: Submission, ctx: &mut Context) {
        let live = LiveTxn {
            submission,
            restarts: 0,
            attempt: 0,
            values: Vec::new(),
            read_set: Vec::new(),
            pending_replies: 0,
            writes: Vec::new(),
            user_abort: false,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(live);
                slot
            }
            None => {
                self.slots.push(Some(live));
                (self.slots.len() - 1) as u32
            }
        };
        self.advance(slot, ctx);
    }

    /// Asks the workload what this transaction wants next and does it.
    fn advance(&mut self, slot: u32, ctx: &mut Context) {
        let Processor { index, workload, slots, round_keys, .. } = self;
        let live = slots[slot as usize].as_mut().expect("advance on a live slot");
        round_keys.clear();
        match workload.step(&live.submission.txn, &live.values, round_keys, &mut live.writes) {
            Step::Read if !round_keys.is_empty() => {
                let txn = TxnRef { processor: *index, slot, attempt: live.attempt };
                let base = live.values.len();
                live.values.resize(base + round_keys.len(), 0);
                live.read_set.extend(round_keys.iter().map(|&key| (key, 0)));
                self.issue_reads(txn, base, ctx);
            }
            Step::Read => debug_assert!(false, "a procedure asked to read nothing"),
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
        for (partition, keys) in self.per_partition.iter_mut().enumerate() {
            if !keys.is_empty() {
                ctx.send(Address::Storage(partition as u16), Message::Read { txn, items: std::mem::take(keys) });
                messages += 1;
            }
        }
        let live = self.slots[txn.slot as usize].as_mut().expect("issuing reads for a live slot");
        live.pending_replies = messages;
    }

    fn read_reply(&mut self, txn: TxnRef, items: &[ReadItem], ctx: &mut Context) {
        let Some(live) = self.slots[txn.slot as usize].as_mut() else {
            debug_assert!(false, "reply for a free slot");
            return;
        };
        if live.attempt != txn.attempt {
            debug_assert!(false, "reply for an earlier attempt");
            return;
        }
        for item in items {
            let position = usize::from(item.position);
            live.values[position] = item.value;
            live.read_set[position].1 = item.version;
        }
        debug_assert!(live.pending_replies > 0, "more replies than reads");
        live.pending_replies -= 1;
        if live.pending_replies == 0 {
            self.advance(txn.slot, ctx);
        }
    }

    fn request_validation(&mut self, slot: u32, user_abort: bool, ctx: &mut Context) {
        let live = self.slots[slot as usize].as_mut().expect("validating a live slot");
        live.user_abort = user_abort;
        if user_abort {
            live.writes.clear();
        }
        // The read set goes to the validator; a copy stays only when the run records history.
        let reads = if ctx.history.is_some() { live.read_set.clone() } else { std::mem::take(&mut live.read_set) };
        let request = ValidationRequest {
            txn: TxnRef { processor: self.index, slot, attempt: live.attempt },
            reads,
            writes: live.writes.iter().map(|&(key, _)| key).collect(),
            restarts: live.restarts,
            user_abort,
        };
        ctx.send(Address::Validator, Message::Validate(Box::new(request)));
    }

    fn decide(&mut self, txn: TxnRef, decision: Decision, ctx: &mut Context) {
        let Some(live) = self.slots[txn.slot as usize].as_mut() else {
            debug_assert!(false, "decision for a free slot");
            return;
        };
        debug_assert_eq!(live.attempt, txn.attempt, "decision for an earlier attempt");
        match decision {
            Decision::Abort(cause) => {
                ctx.recorder.abort(ctx.now_us, cause);
                live.restarts += 1;
                live.attempt += 1;
                live.values.clear();
                live.read_set.clear();
                live.writes.clear();
                live.user_abort = false;
                self.advance(txn.slot, ctx);
            }
            Decision::Commit(ts) => {
                let live = self.slots[txn.slot as usize].take().expect("live slot");
                self.free.push(txn.slot);
                self.finish(live, ts, ctx);
            }
        }
    }

    fn finish(&mut self, live: LiveTxn, ts: Ts, ctx: &mut Context) {
        let outcome = if live.user_abort { Outcome::UserAborted } else { Outcome::Committed };
        if !live.user_abort {
            for &(key, value) in &live.writes {
                let partition = usize::from(self.partition_of(key));
                self.write_batches[partition].push((key, value, ts));
            }
            for (partition, writes) in self.write_batches.iter_mut().enumerate() {
                if !writes.is_empty() {
                    ctx.send(Address::Storage(partition as u16), Message::Write { writes: std::mem::take(writes) });
                }
            }
        }
        let submission = &live.submission;
        ctx.send(
            Address::Client(submission.client),
            Message::Done {
                id: submission.id,
                outcome,
                restarts: live.restarts,
                procedure: submission.txn.procedure,
                submitted_us: submission.submitted_us,
            },
        );
        if outcome == Outcome::Committed
            && let Some(history) = ctx.history.as_mut()
        {
            history.push(CommitRecord {
                id: submission.id,
                ts,
                txn: submission.txn.clone(),
                reads: live.read_set,
                writes: live.writes,
            });
        }
    }
}
