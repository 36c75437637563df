//! The threaded runtime: components hosted on a fixed set of OS threads, in real time.
//!
//! The placement (`processor,storage;client,validator,reorder`, the paper's split, by default) says which roles
//! each thread hosts; there are never more threads than the placement lists, and a thread with
//! nothing to do parks instead of spinning.
//!
//! ```text
//!  thread t loop:
//!    inbox (channel of message batches) ──> local queue ──> node.handle ──┬─> local queue
//!                                                                         └─> outbox[t'] ─┐
//!    node.tick (batch timers)                                                             │
//!    flush: one channel send per destination thread with everything for it, then unpark <─┘
//!    idle: park until a batch arrives or the next batch timer is due
//! ```
//!
//! Messages cross threads in batches (one `Vec` per destination per loop iteration), so the
//! cost of a channel operation and a wake-up is shared by everything sent in that iteration.
//! Queues are unbounded channels, but the closed loop bounds them: at most `concurrency`
//! transactions are live, each with a handful of messages in flight.
//!
//! With `auto` batch sizes the calling thread, which otherwise only reports progress, runs the
//! [`WindowTuner`]: every `tuning.window_us` it reads the clients' tallies, and when the tuner
//! changes a size it publishes the new sizes (and bumps a version); each worker checks the
//! version once per loop iteration and sets the sizes on its own nodes and its flush interval.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crossbeam::channel::{Receiver, Sender, unbounded};
use crossbeam::sync::{Parker, Unparker};
use ordo_harness::{BatchSizeSample, Recorder, Window};
use ordo_workload::{Value, Workload};

use crate::assembly::build;
use crate::client::Counters;
use crate::component::Context;
use crate::config::{ConfigError, PipelineConfig};
use crate::driver::tuning::{Sizes, WindowTuner, starting_sizes};
use crate::message::{Address, CommitRecord, Envelope, Message, Ts};
use crate::node::Node;

/// Messages handled between two clock reads.
const MESSAGES_PER_CLOCK_READ: usize = 64;
/// Longest park when no timer is pending.
const PARK_US_MAX: u64 = 1000;
/// How often the calling thread reports progress.
const PROGRESS_US: u64 = 200_000;
/// How long an idle thread polls its inbox before parking. Waking a parked thread costs a
/// system call on both sides; a short poll absorbs the gaps between batches at full load.
const IDLE_POLL_US: u64 = 50;

#[derive(Debug, Clone)]
pub struct ThreadedRun {
    pub seed: u64,
    pub warmup: Duration,
    pub duration: Duration,
    pub cooldown: Duration,
    /// Keep every committed transaction (for `--history` and checks).
    pub record_history: bool,
    /// After the run, stop submitting, let every live transaction finish and every write land,
    /// and report the final store.
    pub drain: bool,
}

#[derive(Debug)]
pub struct ThreadedReport {
    pub recorder: Recorder,
    pub measured_s: f64,
    pub history: Vec<CommitRecord>,
    /// `(value, version)` of every key, when the run was drained.
    pub store: Option<Vec<(Value, Ts)>>,
    pub threads: usize,
    /// The sizes the controller chose over time; empty when every batch size was fixed.
    pub batch_sizes: Vec<BatchSizeSample>,
}

/// A thread's inbox: batches of envelopes.
type Channel = (Sender<Vec<Envelope>>, Receiver<Vec<Envelope>>);

const RUNNING: u8 = 0;
const FLUSH: u8 = 1;
const STOP: u8 = 2;

/// Where every node lives: `(thread, index on that thread)`, by role and instance.
#[derive(Debug, Default)]
struct Directory {
    clients: Vec<(usize, usize)>,
    processors: Vec<(usize, usize)>,
    storage: Vec<(usize, usize)>,
    validator: (usize, usize),
    reorder: Vec<(usize, usize)>,
}

impl Directory {
    fn insert(&mut self, address: Address, place: (usize, usize)) {
        let (list, index) = match address {
            Address::Client(i) => (&mut self.clients, i),
            Address::Processor(i) => (&mut self.processors, i),
            Address::Storage(i) => (&mut self.storage, i),
            Address::Reorder(i) => (&mut self.reorder, i),
            Address::Validator => {
                self.validator = place;
                return;
            }
        };
        let index = usize::from(index);
        if list.len() <= index {
            list.resize(index + 1, (usize::MAX, usize::MAX));
        }
        list[index] = place;
    }

    #[inline]
    fn locate(&self, address: Address) -> (usize, usize) {
        match address {
            Address::Client(i) => self.clients[usize::from(i)],
            Address::Processor(i) => self.processors[usize::from(i)],
            Address::Storage(i) => self.storage[usize::from(i)],
            Address::Reorder(i) => self.reorder[usize::from(i)],
            Address::Validator => self.validator,
        }
    }
}

struct Shared {
    start: Instant,
    phase: AtomicU8,
    draining: AtomicBool,
    barrier: Barrier,
    sizes: LiveSizes,
}

/// The sizes the tuner chose, published by the calling thread: `version` is bumped (release)
/// after the sizes are stored, so a worker that sees a new version (acquire) reads them whole.
#[derive(Debug, Default)]
struct LiveSizes {
    version: AtomicU64,
    storage: AtomicUsize,
    validator: AtomicUsize,
    messages_per_flush: AtomicUsize,
}

impl LiveSizes {
    fn publish(&self, sizes: Sizes) {
        self.storage.store(sizes.storage, Ordering::Relaxed);
        self.validator.store(sizes.validator, Ordering::Relaxed);
        self.messages_per_flush.store(sizes.messages_per_flush, Ordering::Relaxed);
        self.version.fetch_add(1, Ordering::Release);
    }

    fn read(&self) -> Sizes {
        Sizes {
            storage: self.storage.load(Ordering::Relaxed),
            validator: self.validator.load(Ordering::Relaxed),
            messages_per_flush: self.messages_per_flush.load(Ordering::Relaxed),
        }
    }
}

struct Worker {
    thread: usize,
    nodes: Vec<Node>,
    directory: Arc<Directory>,
    local: VecDeque<(usize, Message)>,
    outboxes: Vec<Vec<Envelope>>,
    out: Vec<Envelope>,
    inbox: Receiver<Vec<Envelope>>,
    senders: Vec<Sender<Vec<Envelope>>>,
    unparkers: Vec<Unparker>,
    parker: Parker,
    recorder: Recorder,
    history: Option<Vec<CommitRecord>>,
    shared: Arc<Shared>,
    /// Messages handled before the outboxes are flushed, even if more are queued.
    messages_per_flush: usize,
    /// The version of `shared.sizes` this worker's nodes use.
    sizes_version: u64,
}

impl Worker {
    #[inline]
    fn locate(&self, address: Address) -> (usize, usize) {
        self.directory.locate(address)
    }

    fn route(&mut self) {
        // Drained rather than taken, so the buffer keeps its capacity.
        let mut out = std::mem::take(&mut self.out);
        for envelope in out.drain(..) {
            let (thread, index) = self.locate(envelope.to);
            if thread == self.thread {
                self.local.push_back((index, envelope.message));
            } else {
                self.outboxes[thread].push(envelope);
            }
        }
        self.out = out;
    }

    fn receive(&mut self) -> bool {
        let mut received = false;
        while let Ok(batch) = self.inbox.try_recv() {
            received = true;
            for envelope in batch {
                let (thread, index) = self.locate(envelope.to);
                debug_assert_eq!(thread, self.thread);
                self.local.push_back((index, envelope.message));
            }
        }
        received
    }

    fn flush(&mut self) {
        for (thread, outbox) in self.outboxes.iter_mut().enumerate() {
            if !outbox.is_empty() {
                // The receiver lives as long as the run; a send can only fail after it ended.
                let _ = self.senders[thread].send(std::mem::take(outbox));
                self.unparkers[thread].unpark();
            }
        }
    }

    /// Polls the inbox until `until_us`; whether something arrived.
    fn poll_inbox(&self, until_us: u64) -> bool {
        loop {
            for _ in 0..64 {
                if !self.inbox.is_empty() {
                    return true;
                }
                std::hint::spin_loop();
            }
            if self.now_us() >= until_us || self.shared.phase.load(Ordering::Relaxed) != RUNNING {
                return false;
            }
        }
    }

    fn now_us(&self) -> u64 {
        self.shared.start.elapsed().as_micros() as u64
    }

    /// Handles queued messages; returns how many.
    fn process(&mut self, limit: usize) -> usize {
        let mut handled = 0;
        let mut now_us = self.now_us();
        while handled < limit {
            let Some((index, message)) = self.local.pop_front() else { break };
            if handled % MESSAGES_PER_CLOCK_READ == 0 {
                now_us = self.now_us();
            }
            let mut ctx =
                Context { now_us, out: &mut self.out, recorder: &mut self.recorder, history: self.history.as_mut() };
            self.nodes[index].handle(message, &mut ctx);
            self.route();
            handled += 1;
        }
        handled
    }

    fn tick(&mut self) -> Option<u64> {
        let now_us = self.now_us();
        let queued = !self.local.is_empty();
        let mut next = None;
        for node in &mut self.nodes {
            let mut ctx =
                Context { now_us, out: &mut self.out, recorder: &mut self.recorder, history: self.history.as_mut() };
            if let Some(deadline) = node.tick(&mut ctx, queued) {
                next = Some(next.map_or(deadline, |n: u64| n.min(deadline)));
            }
        }
        self.route();
        next
    }

    fn start_clients(&mut self) {
        let now_us = self.now_us();
        for node in &mut self.nodes {
            if let Node::Client(client) = node {
                let mut ctx = Context {
                    now_us,
                    out: &mut self.out,
                    recorder: &mut self.recorder,
                    history: self.history.as_mut(),
                };
                client.start(&mut ctx);
            }
        }
        self.route();
    }

    /// Takes the tuner's latest sizes if they changed since the last look.
    fn apply_sizes(&mut self) {
        let version = self.shared.sizes.version.load(Ordering::Acquire);
        if version == self.sizes_version {
            return;
        }
        self.sizes_version = version;
        let sizes = self.shared.sizes.read();
        for node in &mut self.nodes {
            node.resize(&sizes);
        }
        self.messages_per_flush = sizes.messages_per_flush;
    }

    fn run(mut self) -> Self {
        self.start_clients();
        let mut drain_sent = false;
        loop {
            self.apply_sizes();
            match self.shared.phase.load(Ordering::Acquire) {
                RUNNING => {}
                FLUSH => {
                    self.finish_drain();
                    return self;
                }
                _ => return self,
            }
            if !drain_sent && self.shared.draining.load(Ordering::Acquire) {
                drain_sent = true;
                for node in &mut self.nodes {
                    if let Node::Client(client) = node {
                        let mut ctx = Context {
                            now_us: 0,
                            out: &mut self.out,
                            recorder: &mut self.recorder,
                            history: self.history.as_mut(),
                        };
                        client.handle(Message::Drain, &mut ctx);
                    }
                }
            }
            let received = self.receive();
            let handled = self.process(self.messages_per_flush);
            let deadline = self.tick();
            self.flush();
            if !received && handled == 0 && self.local.is_empty() {
                let now_us = self.now_us();
                let wait_us = deadline.map_or(PARK_US_MAX, |d| d.saturating_sub(now_us).min(PARK_US_MAX));
                if wait_us > 0 && !self.poll_inbox(now_us + wait_us.min(IDLE_POLL_US)) {
                    self.parker.park_timeout(Duration::from_micros(wait_us));
                }
            }
        }
    }

    /// Every transaction has finished: deliver what is still in flight (only writes), serve
    /// partial storage batches, and stop.
    fn finish_drain(&mut self) {
        self.flush();
        self.shared.barrier.wait();
        loop {
            self.receive();
            if self.process(usize::MAX) == 0 {
                break;
            }
            self.flush();
        }
        self.shared.barrier.wait();
        self.receive();
        self.process(usize::MAX);
        for node in &mut self.nodes {
            if let Node::Storage(partition) = node {
                let mut ctx = Context {
                    now_us: u64::MAX / 2,
                    out: &mut self.out,
                    recorder: &mut self.recorder,
                    history: self.history.as_mut(),
                };
                partition.tick(&mut ctx, false);
            }
        }
        debug_assert!(self.out.is_empty(), "storage produced messages while draining");
    }
}

/// Runs a pipeline on threads for warm-up + duration + cool-down; `on_progress` is called about
/// every 200 ms with the seconds elapsed and the transactions finished so far.
pub fn run_threaded(
    config: &PipelineConfig,
    workload: &Arc<dyn Workload>,
    run: &ThreadedRun,
    mut on_progress: impl FnMut(f64, u64),
) -> Result<ThreadedReport, ConfigError> {
    let counters = Arc::new(Counters::new(config.clients));
    let nodes = build(config, workload, run.seed, &counters, true)?;
    let threads = config.placement.threads.len();
    let mut tuner = WindowTuner::new(config, true)?;

    let mut per_thread: Vec<Vec<(Address, Node)>> = (0..threads).map(|_| Vec::new()).collect();
    let addresses: Vec<Address> = nodes.iter().map(|(address, _)| *address).collect();
    for ((address, node), thread) in nodes.into_iter().zip(super::threads_of(&addresses, &config.placement)) {
        per_thread[thread].push((address, node));
    }
    let mut directory = Directory::default();
    for (thread, nodes) in per_thread.iter().enumerate() {
        for (index, (address, _)) in nodes.iter().enumerate() {
            directory.insert(*address, (thread, index));
        }
    }
    let directory = Arc::new(directory);

    let measured = Window::after_warmup(run.warmup.as_micros() as u64, run.duration.as_micros() as u64);
    let shared = Arc::new(Shared {
        start: Instant::now(),
        phase: AtomicU8::new(RUNNING),
        draining: AtomicBool::new(false),
        barrier: Barrier::new(threads),
        sizes: LiveSizes::default(),
    });
    shared.sizes.publish(starting_sizes(config, tuner.as_ref()));
    let channels: Vec<Channel> = (0..threads).map(|_| unbounded()).collect();
    let parkers: Vec<Parker> = (0..threads).map(|_| Parker::new()).collect();
    let unparkers: Vec<Unparker> = parkers.iter().map(|p| p.unparker().clone()).collect();
    let senders: Vec<Sender<Vec<Envelope>>> = channels.iter().map(|(s, _)| s.clone()).collect();

    let mut handles = Vec::new();
    for ((thread, nodes), ((_, inbox), parker)) in
        per_thread.into_iter().enumerate().zip(channels.into_iter().zip(parkers))
    {
        let worker = Worker {
            thread,
            nodes: nodes.into_iter().map(|(_, node)| node).collect(),
            directory: Arc::clone(&directory),
            local: VecDeque::new(),
            outboxes: (0..threads).map(|_| Vec::new()).collect(),
            out: Vec::new(),
            inbox,
            senders: senders.clone(),
            unparkers: unparkers.clone(),
            parker,
            recorder: Recorder::new(measured),
            history: run.record_history.then(Vec::new),
            shared: Arc::clone(&shared),
            messages_per_flush: config.initial_messages_per_flush(),
            sizes_version: 0,
        };
        let handle = std::thread::Builder::new()
            .name(format!("ordo-pipeline-{thread}"))
            .spawn(move || worker.run())
            .expect("spawning an engine thread");
        handles.push(handle);
    }

    let total_us = (run.warmup + run.duration + run.cooldown).as_micros() as u64;
    let now_us = || shared.start.elapsed().as_micros() as u64;
    if let Some(tuner) = &mut tuner {
        tuner.observe(now_us(), counters.tally());
    }
    let mut next_progress_us = PROGRESS_US;
    // A failed validator log stops the run at once.
    while now_us() < total_us && counters.failure.get().is_none() {
        let next_window_us = tuner.as_ref().map_or(u64::MAX, WindowTuner::next_window_us);
        let wake_us = next_progress_us.min(next_window_us).min(total_us);
        std::thread::sleep(Duration::from_micros(wake_us.saturating_sub(now_us())));
        let now = now_us();
        if let Some(tuner) = tuner.as_mut().filter(|tuner| now >= tuner.next_window_us())
            && tuner.observe(now, counters.tally())
        {
            shared.sizes.publish(tuner.sizes());
        }
        if now >= next_progress_us {
            next_progress_us = now + PROGRESS_US;
            on_progress(now as f64 / 1e6, counters.finished.load(Ordering::Relaxed));
        }
    }
    if run.drain && counters.failure.get().is_none() {
        shared.draining.store(true, Ordering::Release);
        for unparker in &unparkers {
            unparker.unpark();
        }
        while !counters.idle() && counters.failure.get().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    if run.drain && counters.failure.get().is_none() {
        shared.phase.store(FLUSH, Ordering::Release);
    } else {
        shared.phase.store(STOP, Ordering::Release);
    }
    for unparker in &unparkers {
        unparker.unpark();
    }
    let workers: Vec<Worker> = handles.into_iter().map(|h| h.join().expect("engine thread panicked")).collect();
    if let Some(reason) = counters.failure.get() {
        return Err(ConfigError::LogStopped(reason.clone()));
    }

    let mut recorder = Recorder::new(measured);
    let mut history = Vec::new();
    for worker in &workers {
        recorder.merge(&worker.recorder);
    }
    let mut all_nodes: Vec<&Node> = Vec::new();
    for worker in &workers {
        all_nodes.extend(worker.nodes.iter());
    }
    let store = run.drain.then(|| {
        for node in &all_nodes {
            if let Node::Client(client) = node {
                assert_eq!(client.live(), 0, "drained run still has live transactions");
            }
        }
        super::final_store(&all_nodes, workload.key_count())
    });
    for mut worker in workers {
        if let Some(mut records) = worker.history.take() {
            history.append(&mut records);
        }
    }
    let batch_sizes = tuner.map(|tuner| tuner.samples()).unwrap_or_default();
    Ok(ThreadedReport { recorder, measured_s: run.duration.as_secs_f64(), history, store, threads, batch_sizes })
}
