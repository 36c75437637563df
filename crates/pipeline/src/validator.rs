//! The validator (§2, §3.2, Appendix A): backward validation and commit timestamps.
//!
//! The validator caches, per key, the commit timestamp of the last committed transaction that
//! wrote it (`last_write`). A read of version `v` of key `k` is valid iff no committed
//! transaction wrote `k` after `v`, i.e. `last_write[k] == v`. A transaction whose reads are all
//! valid commits with the next integer timestamp, which becomes the version of its writes, so
//! commit-timestamp order is a serial order of the committed transactions.
//!
//! Without validator batching each request is decided on arrival. With it, the validator is the
//! three-stage pipeline of Appendix A (Fig. 25):
//!
//! ```text
//!  requests ─> batch preparation ─(B requests, or none queued)─────┐
//!                                                                  │ pre-validation against the
//!                                                                  │ cache: stale -> abort
//!              reorder workers (1..N, in parallel, any order) <────┘
//!                 plan = FVS to abort + order for the rest
//!                                   │
//!  decisions <─ final validation <──┘ whole batches, one at a time, in the planned order,
//!               against the cache as it is *now* (batches committed meanwhile count)
//! ```
//!
//! A partial batch closes when the validator's thread has no more requests queued and the
//! batch has waited `batch_wait_us_max` (0 by default: *natural batching*, so batches are as
//! large as the load makes them and never wait on an idle system).
//!
//! Pre-validation lives here, next to the cache, so reorder workers share no state: they get

//! the viable transactions and return a plan. In `batch` mode (batching without reordering) a
//! closed batch is validated at once in arrival order. Batched modes announce a batch's commits
//! before its aborts: a processor handles messages in order, so the aborted transactions'
//! restarts read what the batch just wrote.

use ordo_harness::AbortCause;
use ordo_reorder::Plan;

use crate::component::{Context, Deadline};
use crate::message::{Address, Decision, Message, ReorderBatch, Ts, ValidationRequest};

#[derive(Debug)]
pub struct Validator {
    /// Commit timestamp of the last committed write of each key (0: only the loaded value).
    last_write: Vec<Ts>,
    next_ts: Ts,
    batching: bool,
    reordering: bool,
    batch_size: usize,
    batch_wait_us_max: u64,
    reorder_workers: u16,
    next_worker: u16,
    batch: Vec<ValidationRequest>,
    batch_started_us: u64,
    batches_sent: u64,
}

impl Validator {
    #[allow(clippy::fn_params_excessive_bools)]
    pub fn new(
        key_count: u64,
        batching: bool,
        reordering: bool,
        batch_size: usize,
        batch_wait_us_max: u64,
        reorder_workers: u16,
    ) -> Self {
        Validator {
            last_write: vec![0; key_count as usize],
            next_ts: 1,
            batching,
            reordering,
            batch_size,
            batch_wait_us_max,
            reorder_workers,
            next_worker: 0,
            batch: Vec::with_capacity(batch_size),
            batch_started_us: 0,
            batches_sent: 0,
        }
    }

    /// The timestamp the next committed transaction will get.
    pub fn next_ts(&self) -> Ts {
        self.next_ts
    }

    pub fn handle(&mut self, message: Message, ctx: &mut Context) {
        match message {
            Message::Validate(request) => {
                if !self.batching {
                    if !self.try_commit(&request, ctx) {
                        Self::send_aborts([(&*request, AbortCause::FinalValidation)], ctx);
                    }
                    return;
                }
                if self.batch.is_empty() {
                    self.batch_started_us = ctx.now_us;
                }
                self.batch.push(*request);
                if self.batch.len() >= self.batch_size {
                    self.close_batch(ctx);
                }
            }
            Message::Reordered(batch) => self.validate_plan(&batch, ctx),
            other => debug_assert!(false, "validator got {other:?}"),
        }
    }

    pub fn tick(&mut self, ctx: &mut Context) -> Deadline {
        if self.batch.is_empty() {
            return None;
        }
        let due = self.batch_started_us + self.batch_wait_us_max;
        if ctx.now_us >= due {
            self.close_batch(ctx);
            None
        } else {
            Some(due)
        }
    }

    /// Whether every read of `request` still sees the latest committed version.
    #[inline]
    fn reads_are_current(&self, request: &ValidationRequest) -> bool {
        request.reads.iter().all(|&(key, version)| {
            let last = self.last_write[key as usize];
            debug_assert!(last >= version, "read version {version} of key {key} newer than the last commit {last}");
            last == version
        })
    }

    /// Validates one request against the cache now; if its reads are current, commits it and
    /// sends the decision. Returns whether it committed.
    #[must_use = "an aborted transaction must be told"]
    fn try_commit(&mut self, request: &ValidationRequest, ctx: &mut Context) -> bool {
        if !self.reads_are_current(request) {
            return false;
        }
        let ts = self.next_ts;
        self.next_ts += 1;
        for &key in &request.writes {
            self.last_write[key as usize] = ts;
        }
        let txn = request.txn;
        ctx.send(Address::Processor(txn.processor), Message::Decide { txn, decision: Decision::Commit(ts) });
        true
    }

    /// Final validation of `requests[i]` for every `i` of `order`, in that order; the commits
    /// are announced as they happen, the aborts after them.
    fn validate_in_order(
        &mut self,
        requests: &[ValidationRequest],
        order: impl IntoIterator<Item = usize>,
        ctx: &mut Context,
    ) {
        let aborted: Vec<usize> = order.into_iter().filter(|&i| !self.try_commit(&requests[i], ctx)).collect();
        Self::send_aborts(aborted.iter().map(|&i| (&requests[i], AbortCause::FinalValidation)), ctx);
    }

    /// Sends abort decisions.
    fn send_aborts<'r>(aborts: impl IntoIterator<Item = (&'r ValidationRequest, AbortCause)>, ctx: &mut Context) {
        for (request, cause) in aborts {
            let txn = request.txn;
            ctx.send(Address::Processor(txn.processor), Message::Decide { txn, decision: Decision::Abort(cause) });
        }
    }

    fn close_batch(&mut self, ctx: &mut Context) {
        let requests = std::mem::replace(&mut self.batch, Vec::with_capacity(self.batch_size));
        if !self.reordering {
            ctx.recorder.batch(ctx.now_us, requests.len(), 0, 0);
            self.validate_in_order(&requests, 0..requests.len(), ctx);
            return;
        }
        // Pre-validation: drop what can no longer commit before paying for reordering.
        let (viable, rejected): (Vec<ValidationRequest>, Vec<ValidationRequest>) =
            requests.into_iter().partition(|request| self.reads_are_current(request));
        if viable.len() <= 1 {
            // Nothing to reorder.
            ctx.recorder.batch(ctx.now_us, viable.len(), 0, 0);
            self.validate_in_order(&viable, 0..viable.len(), ctx);
            Self::send_aborts(rejected.iter().map(|r| (r, AbortCause::PreValidation)), ctx);
            return;
        }
        let worker = self.next_worker;
        self.next_worker = (self.next_worker + 1) % self.reorder_workers;
        self.batches_sent += 1;
        let batch = ReorderBatch {
            sequence: self.batches_sent,
            requests: viable,
            rejected,
            plan: Plan::default(),
            reorder_ns: 0,
        };
        ctx.send(Address::Reorder(worker), Message::Reorder(Box::new(batch)));
    }

    /// Final validation of a reordered batch: validate the planned order, then abort the rest.
    fn validate_plan(&mut self, batch: &ReorderBatch, ctx: &mut Context) {
        self.validate_in_order(&batch.requests, batch.plan.order.iter().copied(), ctx);
        Self::send_aborts(batch.plan.abort.iter().map(|&i| (&batch.requests[i], AbortCause::Reorder)), ctx);
        Self::send_aborts(batch.rejected.iter().map(|r| (r, AbortCause::PreValidation)), ctx);
    }
}
