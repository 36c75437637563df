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
//!  requests ─> batch preparation ─(B requests or the wait ran out)─┐
//!                                                                  │ pre-validation against the
//!                                                                  │ cache: stale -> abort
//!              reorder workers (1..N, in parallel, any order) <────┘
//!                 plan = FVS to abort + order for the rest
//!                                   │
//!  decisions <─ final validation <──┘ whole batches, one at a time, in the planned order,
//!               against the cache as it is *now* (batches committed meanwhile count)
//! ```
//!
//! Pre-validation lives here, next to the cache, so reorder workers share no state: they get
//! the viable transactions and return a plan. In `batch` mode (batching without reordering) a
//! closed batch is validated at once in arrival order.

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
                    self.final_validation(&request, ctx);
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

    /// Validates one request against the cache now, commits or aborts it.
    fn final_validation(&mut self, request: &ValidationRequest, ctx: &mut Context) {
        let decision = if self.reads_are_current(request) {
            let ts = self.next_ts;
            self.next_ts += 1;
            for &key in &request.writes {
                self.last_write[key as usize] = ts;
            }
            Decision::Commit(ts)
        } else {
            Decision::Abort(AbortCause::FinalValidation)
        };
        ctx.send(Address::Processor(request.txn.processor), Message::Decide { txn: request.txn, decision });
    }

    fn close_batch(&mut self, ctx: &mut Context) {
        let mut requests = std::mem::replace(&mut self.batch, Vec::with_capacity(self.batch_size));
        if !self.reordering {
            ctx.recorder.batch(ctx.now_us, requests.len(), 0, 0);
            for request in &requests {
                self.final_validation(request, ctx);
            }
            return;
        }
        // Pre-validation: drop what can no longer commit before paying for reordering.
        requests.retain(|request| {
            let viable = self.reads_are_current(request);
            if !viable {
                let txn = request.txn;
                ctx.send(
                    Address::Processor(txn.processor),
                    Message::Decide { txn, decision: Decision::Abort(AbortCause::PreValidation) },
                );
            }
            viable
        });
        if requests.len() <= 1 {
            // Nothing to reorder.
            ctx.recorder.batch(ctx.now_us, requests.len(), 0, 0);
            for request in &requests {
                self.final_validation(request, ctx);
            }
            return;
        }
        let worker = self.next_worker;
        self.next_worker = (self.next_worker + 1) % self.reorder_workers;
        self.batches_sent += 1;
        let batch = ReorderBatch { sequence: self.batches_sent, requests, plan: Plan::default(), reorder_ns: 0 };
        ctx.send(Address::Reorder(worker), Message::Reorder(Box::new(batch)));
    }

    /// Final validation of a reordered batch: abort its FVS, validate the rest in order.
    fn validate_plan(&mut self, batch: &ReorderBatch, ctx: &mut Context) {
        for &position in &batch.plan.abort {
            let txn = batch.requests[position].txn;
            ctx.send(
                Address::Processor(txn.processor),
                Message::Decide { txn, decision: Decision::Abort(AbortCause::Reorder) },
            );
        }
        for &position in &batch.plan.order {
            self.final_validation(&batch.requests[position], ctx);
        }
    }
}
