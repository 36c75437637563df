//! A transaction client (§5.1): keeps its share of the concurrency level in the system, and
//! measures each transaction from its first submission to its commit, across restarts.
//!
//! Closed loop: the client submits `target` transactions at start and a new one whenever one
//! finishes, until it is told to drain. Transactions are dealt to processors round-robin.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ordo_workload::{Txn, Workload, WorkloadRng};

use crate::component::Context;
use crate::message::{Address, Message, Outcome, Submission};

#[derive(Debug)]
pub struct Client {
    index: u16,
    processors: u16,
    next_processor: u16,
    workload: Arc<dyn Workload>,
    rng: WorkloadRng,
    target: usize,
    live: usize,
    next_sequence: u64,
    started: bool,
    draining: bool,
    /// Shared counts of submitted and finished transactions (for progress and draining).
    counters: Arc<Counters>,
}

/// Transactions submitted and finished by all clients. A client counts a submission before it
/// counts the finish that triggered it, so `submitted == finished`, read in the order finished
/// then submitted, proves that nothing is live and nothing will be submitted again.
#[derive(Debug, Default)]
pub struct Counters {
    pub submitted: AtomicU64,
    pub finished: AtomicU64,
    /// Why the run must stop (the validator's log failed), once set.
    pub failure: std::sync::OnceLock<String>,
}

impl Counters {
    /// Stops the run with `reason` (the first reason wins).
    pub fn fail(&self, reason: String) {
        let _ = self.failure.set(reason);
    }

    /// Whether no transaction is live (see the type's invariant).
    pub fn idle(&self) -> bool {
        let finished = self.finished.load(Ordering::SeqCst);
        self.submitted.load(Ordering::SeqCst) == finished
    }
}

/// Transaction ids are `client << CLIENT_ID_SHIFT | sequence`.
pub const CLIENT_ID_SHIFT: u32 = 48;

impl Client {
    pub fn new(
        index: u16,
        processors: u16,
        workload: Arc<dyn Workload>,
        rng: WorkloadRng,
        target: usize,
        counters: Arc<Counters>,
    ) -> Self {
        Client {
            index,
            processors,
            next_processor: index % processors,
            workload,
            rng,
            target,
            live: 0,
            next_sequence: 0,
            started: false,
            draining: false,
            counters,
        }
    }

    /// Transactions submitted and not yet finished.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Submits the first `target` transactions (called once by the driver at time 0).
    pub fn start(&mut self, ctx: &mut Context) {
        if !self.started {
            self.started = true;
            for _ in 0..self.target {
                self.submit(ctx, None);
            }
        }
    }

    fn submit(&mut self, ctx: &mut Context, reuse: Option<Box<Submission>>) {
        let mut submission = reuse.unwrap_or_else(|| {
            Box::new(Submission { id: 0, client: self.index, txn: Txn::default(), submitted_us: 0 })
        });
        self.workload.generate(&mut self.rng, &mut submission.txn);
        let id = (u64::from(self.index) << CLIENT_ID_SHIFT) | self.next_sequence;
        self.next_sequence += 1;
        let processor = self.next_processor;
        self.next_processor = (self.next_processor + 1) % self.processors;
        self.live += 1;
        self.counters.submitted.fetch_add(1, Ordering::SeqCst);
        submission.id = id;
        submission.client = self.index;
        submission.submitted_us = ctx.now_us;
        ctx.send(Address::Processor(processor), Message::Submit(submission));
    }

    pub fn handle(&mut self, message: Message, ctx: &mut Context) {
        match message {
            Message::Done { submission, outcome, restarts } => {
                self.live -= 1;
                match outcome {
                    Outcome::Committed => {
                        let latency_us = ctx.now_us.saturating_sub(submission.submitted_us);
                        ctx.recorder.commit(ctx.now_us, latency_us, restarts, submission.txn.procedure);
                    }
                    Outcome::UserAborted => ctx.recorder.user_abort(ctx.now_us),
                }
                if !self.draining {
                    self.submit(ctx, Some(submission));
                }
                self.counters.finished.fetch_add(1, Ordering::SeqCst);
            }
            Message::Drain => self.draining = true,
            other => unreachable!("client got {other:?}: no route delivers it here"),
        }
    }
}
