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
//! closed batch is validated at once in arrival order. Batched modes announce a batch's commits
//! before its aborts: a processor handles messages in order, so the aborted transactions'
//! restarts read what the batch just wrote.
//!
//! **Starvation guard** (beyond the paper, off unless configured). Under heavy skew a
//! transaction that read-modify-writes a hot key can abort indefinitely: by the time it is
//! validated, some other transaction has overwritten the key. Once a transaction has restarted
//! `guard_restarts` times, the validator *pins* every key it touched (all or none: only if no
//! other transaction holds a pin on any of them). Until it commits, any other transaction that
//! would write a pinned key is aborted (`pinned`). Its next attempt reads keys nobody can
//! overwrite, so it commits; pins held by one transaction cover all its keys, so two pinned
//! transactions never block each other.

use foldhash::HashMap;
use ordo_harness::AbortCause;
use ordo_reorder::Plan;

use crate::component::{Context, Deadline};
use crate::message::{Address, Decision, Message, ReorderBatch, Ts, TxnRef, ValidationRequest};

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
    /// Restarts after which a transaction pins its keys (`None`: no starvation guard).
    guard_restarts: Option<u32>,
    /// Owner token of the pin on each key (0: unpinned).
    pin_owner: Vec<u64>,
    /// Keys pinned by each owner.
    pins: HashMap<u64, Vec<u64>>,
}

/// Why a request cannot commit now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Admissible,
    Stale,
    Pinned,
}

/// The pin owner of a live transaction: stable across its attempts.
fn owner(txn: TxnRef) -> u64 {
    ((u64::from(txn.processor) << 32) | u64::from(txn.slot)) + 1
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
        guard_restarts: Option<u32>,
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
            guard_restarts,
            pin_owner: if guard_restarts.is_some() { vec![0; key_count as usize] } else { Vec::new() },
            pins: HashMap::default(),
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
                    let aborted = self.final_validation(&request, ctx);
                    self.send_aborts(aborted.map(|cause| (&*request, cause)), ctx);
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

    /// Whether `request` can commit against the cache now.
    #[inline]
    fn verdict(&self, request: &ValidationRequest) -> Verdict {
        let current = request.reads.iter().all(|&(key, version)| {
            let last = self.last_write[key as usize];
            debug_assert!(last >= version, "read version {version} of key {key} newer than the last commit {last}");
            last == version
        });
        if !current {
            return Verdict::Stale;
        }
        if self.guard_restarts.is_some() && !self.pins.is_empty() {
            let me = owner(request.txn);
            if request.writes.iter().any(|&key| {
                let holder = self.pin_owner[key as usize];
                holder != 0 && holder != me
            }) {
                return Verdict::Pinned;
            }
        }
        Verdict::Admissible
    }

    /// Validates one request against the cache now: commits it (and sends the decision) or
    /// returns why it aborts.
    #[must_use = "an aborted transaction must be told"]
    fn final_validation(&mut self, request: &ValidationRequest, ctx: &mut Context) -> Option<AbortCause> {
        match self.verdict(request) {
            Verdict::Stale => return Some(AbortCause::FinalValidation),
            Verdict::Pinned => return Some(AbortCause::Pinned),
            Verdict::Admissible => {}
        }
        let ts = self.next_ts;
        self.next_ts += 1;
        for &key in &request.writes {
            self.last_write[key as usize] = ts;
        }
        self.unpin(request.txn);
        let txn = request.txn;
        ctx.send(Address::Processor(txn.processor), Message::Decide { txn, decision: Decision::Commit(ts) });
        None
    }

    /// Sends abort decisions (and pins the keys of transactions that keep losing).
    fn send_aborts<'r>(
        &mut self,
        aborts: impl IntoIterator<Item = (&'r ValidationRequest, AbortCause)>,
        ctx: &mut Context,
    ) {
        for (request, cause) in aborts {
            self.maybe_pin(request);
            let txn = request.txn;
            ctx.send(Address::Processor(txn.processor), Message::Decide { txn, decision: Decision::Abort(cause) });
        }
    }

    fn maybe_pin(&mut self, request: &ValidationRequest) {
        let Some(threshold) = self.guard_restarts else { return };
        if request.restarts + 1 < threshold {
            return;
        }
        let me = owner(request.txn);
        if self.pins.contains_key(&me) {
            return;
        }
        let keys = || request.reads.iter().map(|&(key, _)| key).chain(request.writes.iter().copied());
        if keys().any(|key| self.pin_owner[key as usize] != 0) {
            return;
        }
        let mut pinned: Vec<u64> = keys().collect();
        pinned.sort_unstable();
        pinned.dedup();
        for &key in &pinned {
            self.pin_owner[key as usize] = me;
        }
        self.pins.insert(me, pinned);
    }

    fn unpin(&mut self, txn: TxnRef) {
        if self.pins.is_empty() {
            return;
        }
        if let Some(keys) = self.pins.remove(&owner(txn)) {
            for key in keys {
                self.pin_owner[key as usize] = 0;
            }
        }
    }

    fn close_batch(&mut self, ctx: &mut Context) {
        let mut requests = std::mem::replace(&mut self.batch, Vec::with_capacity(self.batch_size));
        if !self.reordering {
            ctx.recorder.batch(ctx.now_us, requests.len(), 0, 0);
            let aborted: Vec<(usize, AbortCause)> = (0..requests.len())
                .filter_map(|i| self.final_validation(&requests[i], ctx).map(|cause| (i, cause)))
                .collect();
            self.send_aborts(aborted.iter().map(|&(i, cause)| (&requests[i], cause)), ctx);
            return;
        }
        // Pre-validation: drop what can no longer commit before paying for reordering.
        let mut rejected = Vec::new();
        let mut viable = Vec::with_capacity(requests.len());
        for request in requests.drain(..) {
            match self.verdict(&request) {
                Verdict::Admissible => viable.push(request),
                Verdict::Stale => rejected.push((request, AbortCause::PreValidation)),
                Verdict::Pinned => rejected.push((request, AbortCause::Pinned)),
            }
        }
        if viable.len() <= 1 {
            // Nothing to reorder.
            ctx.recorder.batch(ctx.now_us, viable.len(), 0, 0);
            let aborted: Vec<AbortCause> = viable.iter().filter_map(|r| self.final_validation(r, ctx)).collect();
            self.send_aborts(viable.iter().zip(aborted), ctx);
            self.send_aborts(rejected.iter().map(|(r, cause)| (r, *cause)), ctx);
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
        let aborted: Vec<(usize, AbortCause)> = batch
            .plan
            .order
            .iter()
            .filter_map(|&position| {
                self.final_validation(&batch.requests[position], ctx).map(|cause| (position, cause))
            })
            .collect();
        self.send_aborts(aborted.iter().map(|&(position, cause)| (&batch.requests[position], cause)), ctx);
        self.send_aborts(
            batch.plan.abort.iter().map(|&position| (&batch.requests[position], AbortCause::Reorder)),
            ctx,
        );
        self.send_aborts(batch.rejected.iter().map(|(request, cause)| (request, *cause)), ctx);
    }
}
