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

use crate::component::{Context, Deadline, PartialBatch};
use crate::message::{Address, Decision, Message, ReorderBatch, Ts, ValidationRequest};

/// Requests stay boxed from the processor to the decision, which hands them back.
type Request = Box<ValidationRequest>;

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
    batch: Vec<Request>,
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

    /// Sets the batch cap (the drivers' batch-size controller); a batch that is already as
    /// large closes with the next request or tick.
    pub fn set_batch_size(&mut self, batch_size: usize) {
        assert!(batch_size > 0, "a batch cap of 0 would never close a batch");
        self.batch_size = batch_size;
    }

    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The timestamp the next committed transaction will get.
    pub fn next_ts(&self) -> Ts {
        self.next_ts
    }

    /// Before a run, after recovery: `key` was last written at `version`; timestamps resume
    /// above it.
    pub fn restore(&mut self, key: u64, version: Ts) {
        self.last_write[key as usize] = version;
        self.resume_after(version);
    }

    /// Before a run, after recovery: timestamps resume above `ts`.
    pub fn resume_after(&mut self, ts: Ts) {
        self.next_ts = self.next_ts.max(ts + 1);
    }

    pub fn handle(&mut self, message: Message, ctx: &mut Context) {
        match message {
            Message::Validate(request) => {
                if !self.batching {
                    let decision = match self.try_commit(&request) {
                        Some(ts) => Decision::Commit(ts),
                        None => Decision::Abort(AbortCause::FinalValidation),
                    };
                    Self::send(request, decision, ctx);
                    return;
                }
                if self.batch.is_empty() {
                    self.batch_started_us = ctx.now_us;
                }
                self.batch.push(request);

                if self.batch.len() >= self.batch_size {
                    self.close_batch(ctx);
                }
            }
            Message::Reordered(batch) => self.validate_plan(*batch, ctx),
            other => unreachable!("validator got {other:?}: no route delivers it here"),
        }
    }

    /// Closes a partial batch when its rule says so ([`PartialBatch::at`]); `queued` says
    /// whether more messages wait on this component's thread.
    pub fn tick(&mut self, ctx: &mut Context, queued: bool) -> Deadline {
        if self.batch.is_empty() {
            return None;
        }
        match PartialBatch::at(ctx.now_us, self.batch_started_us, self.batch_wait_us_max, queued) {
            PartialBatch::Close => {
                self.close_batch(ctx);
                None
            }
            PartialBatch::Wait(deadline) => deadline,
        }
    }

    /// Whether every read of `request` still sees the latest committed version.
    #[inline]
    fn reads_are_current(&self, request: &ValidationRequest) -> bool {
        request.reads.iter().all(|&(key, version)| {
            let last = self.last_write[key as usize];
            assert!(last >= version, "read version {version} of key {key} newer than the last commit {last}");
            last == version
        })
    }

    /// Validates one request against the cache now; if its reads are current, commits it and
    /// returns its timestamp.
    #[must_use = "an aborted transaction must be told"]
    fn try_commit(&mut self, request: &ValidationRequest) -> Option<Ts> {
        if !self.reads_are_current(request) {
            return None;
        }
        let ts = self.next_ts;
        self.next_ts += 1;
        for &key in &request.writes {
            self.last_write[key as usize] = ts;
        }
        Some(ts)
    }

    /// Final validation of `requests[i]` for every `i` of `order`, in that order; the commits
    /// are announced as they happen, the aborts after them.
    fn decide_in_order(
        &mut self,
        requests: &mut [Option<Request>],
        order: impl IntoIterator<Item = usize>,
        ctx: &mut Context,
    ) {
        let mut aborted = Vec::new();
        for i in order {
            let request = requests[i].take().expect("every request is decided once");
            match self.try_commit(&request) {
                Some(ts) => Self::send(request, Decision::Commit(ts), ctx),
                None => aborted.push(request),
            }
        }
        Self::send_aborts(aborted, AbortCause::FinalValidation, ctx);
    }

    fn send(request: Request, decision: Decision, ctx: &mut Context) {
        ctx.send(Address::Processor(request.txn.processor), Message::Decide { decision, request });
    }

    fn send_aborts(requests: impl IntoIterator<Item = Request>, cause: AbortCause, ctx: &mut Context) {
        for request in requests {
            Self::send(request, Decision::Abort(cause), ctx);
        }
    }

    fn close_batch(&mut self, ctx: &mut Context) {
        let requests = std::mem::replace(&mut self.batch, Vec::with_capacity(self.batch_size));
        if !self.reordering {
            ctx.recorder.batch(ctx.now_us, requests.len(), 0, 0);
            let count = requests.len();
            let mut requests: Vec<Option<Request>> = requests.into_iter().map(Some).collect();
            self.decide_in_order(&mut requests, 0..count, ctx);
            return;
        }
        // Pre-validation: drop what can no longer commit before paying for reordering.
        let (viable, rejected): (Vec<Request>, Vec<Request>) =
            requests.into_iter().partition(|request| self.reads_are_current(request));
        if viable.len() <= 1 {
            // Nothing to reorder.
            ctx.recorder.batch(ctx.now_us, viable.len(), 0, 0);
            let count = viable.len();
            let mut viable: Vec<Option<Request>> = viable.into_iter().map(Some).collect();
            self.decide_in_order(&mut viable, 0..count, ctx);
            Self::send_aborts(rejected, AbortCause::PreValidation, ctx);
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
    fn validate_plan(&mut self, batch: ReorderBatch, ctx: &mut Context) {
        let ReorderBatch { requests, rejected, plan, .. } = batch;
        let mut requests: Vec<Option<Request>> = requests.into_iter().map(Some).collect();
        self.decide_in_order(&mut requests, plan.order.iter().copied(), ctx);
        let fvs = plan.abort.iter().map(|&i| requests[i].take().expect("the plan is a partition"));
        Self::send_aborts(fvs.collect::<Vec<_>>(), AbortCause::Reorder, ctx);
        Self::send_aborts(rejected, AbortCause::PreValidation, ctx);
    }
}
