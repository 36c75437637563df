//! A transaction client (§5.1): keeps its share of the concurrency level in the system, and
//! measures each transaction from its first submission to its commit, across restarts.
//!
//! Closed loop: the client submits `target` transactions at start and a new one whenever one
//! finishes, until it is told to drain. Transactions are dealt to processors round-robin.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam::utils::CachePadded;

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
    /// This client's running totals, published to its slot of `counters.tallies`.
    tally: Tally,
}

/// Transactions submitted and finished by all clients. A client counts a submission before it
/// counts the finish that triggered it, so `submitted == finished`, read in the order finished
/// then submitted, proves that nothing is live and nothing will be submitted again.
///
/// Each client also publishes its running [`Tally`] (commits, aborted attempts, latency) in its
/// own slot, with plain stores (one writer per slot, no read-modify-write on the commit path),
/// which the drivers sum once per measurement window for the batch-size controller.
#[derive(Debug, Default)]
pub struct Counters {
    pub submitted: AtomicU64,
    pub finished: AtomicU64,
    /// Why the run must stop (the validator's log failed), once set.
    pub failure: std::sync::OnceLock<String>,
    tallies: Vec<CachePadded<TallySlot>>,
}

/// Running totals of the transactions a client saw finish.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub committed: u64,
    /// Aborted attempts of the finished transactions (their restarts).
    pub aborted: u64,
    /// Sum of the committed transactions' latencies.
    pub latency_us_sum: u64,
}

#[derive(Debug, Default)]
struct TallySlot {
    committed: AtomicU64,
    aborted: AtomicU64,
    latency_us_sum: AtomicU64,
}

impl Counters {
    /// Counters with a tally slot for each of `clients` clients.
    pub fn new(clients: usize) -> Self {
        Counters { tallies: (0..clients).map(|_| CachePadded::new(TallySlot::default())).collect(), ..Self::default() }
    }

    /// The sum of every client's tally so far.
    pub fn tally(&self) -> Tally {
        self.tallies.iter().fold(Tally::default(), |sum, slot| Tally {
            committed: sum.committed + slot.committed.load(Ordering::Relaxed),
            aborted: sum.aborted + slot.aborted.load(Ordering::Relaxed),
            latency_us_sum: sum.latency_us_sum + slot.latency_us_sum.load(Ordering::Relaxed),
        })
    }

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
            tally: Tally::default(),
        }
    }

    fn publish_tally(&self) {
        let Some(slot) = self.counters.tallies.get(usize::from(self.index)) else {
            return;
        };
        slot.committed.store(self.tally.committed, Ordering::Relaxed);
        slot.aborted.store(self.tally.aborted, Ordering::Relaxed);
        slot.latency_us_sum.store(self.tally.latency_us_sum, Ordering::Relaxed);
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
                        self.tally.committed += 1;
                        self.tally.latency_us_sum += latency_us;
                    }
                    Outcome::UserAborted => ctx.recorder.user_abort(ctx.now_us),
                }
                self.tally.aborted += u64::from(restarts);
                self.publish_tally();
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
