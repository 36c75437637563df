//! The deterministic driver: every component on one OS thread, in virtual time.
//!
//! Messages are delivered after a random delay of 1 to `1 + delay_us_max` virtual
//! microseconds drawn from the run's seed, so runs explore many interleavings (replies
//! overtaking each other, writes reaching storage late, batches finishing reordering out of
//! order) and one seed reproduces one interleaving exactly. Ties in delivery time go to the
//! message sent first. Batch timers are served by ticking a component whenever virtual time
//! passes its deadline.
//!
//! **Virtual threads.** Components live on virtual threads, each with a FIFO inbox: a thread
//! handles one message at a time, and after each one ticks its components, telling them
//! whether its inbox still holds messages (so a partial batch closes once the inbox runs dry:
//! the threaded runtime's natural batching). Without a [`ServiceModel`] every component shares
//! one thread and handling costs no time, so batches hold what arrives at the same instant.
//! With one, components are placed on the threads of the configuration's placement, exactly as
//! the threaded runtime places them on OS threads, and each message keeps its thread busy for
//! the model's virtual time: messages queue behind a busy thread, batches fill while it works,
//! and aborted attempts cost throughput as they do on real cores.
//!
//! ```text
//!  delivery heap (at_us, sequence) ──due──> inbox of the receiver's thread ──one at a time──>
//!     handle (thread busy for the model's cost) ──> tick the thread's components ──>
//!     outgoing messages sent when the handling ends, each with its random delay
//! ```
//!
//! The run stops submitting after `transactions` transactions have finished and ends when
//! nothing is left in flight, so the final store reflects every committed write.
//!
//! With `auto` batch sizes the storage and validator caps are chosen by a [`WindowTuner`] every
//! `tuning.window_us` of virtual time, so the controller's runs replay exactly too (the
//! simulation has no flush interval to tune).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering as AtomicOrdering;

use ordo_harness::{BatchSizeSample, Recorder, Window};
use ordo_workload::{Value, Workload, rng_from_seed};
use rand::Rng;

use crate::assembly::build;
use crate::client::Counters;
use crate::component::Context;
use crate::config::{ConfigError, PipelineConfig};
use crate::driver::tuning::{WindowTuner, starting_sizes};
use crate::message::{Address, CommitRecord, Envelope, Message, Ts};
use crate::node::Node;

/// Virtual CPU time a component's thread spends per message (see the module essay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceModel {
    /// Any message, of any component.
    pub message_ns: u64,
    /// A reorder worker planning a batch of `n` transactions, per pair (building the batch's
    /// dependency graph compares every pair): `n * n * reorder_pair_ns` on top of `message_ns`.
    pub reorder_pair_ns: u64,
}

impl ServiceModel {
    fn cost_ns(&self, message: &Message) -> u64 {
        let planned = match message {
            Message::Reorder(batch) => batch.requests.len() as u64,
            _ => 0,
        };
        self.message_ns + planned * planned * self.reorder_pair_ns
    }
}

#[derive(Debug, Clone, Copy)]
pub struct SimulationConfig {
    pub seed: u64,
    /// Stop submitting after this many transactions have finished.
    pub transactions: u64,
    /// Largest extra delivery delay of a message.
    pub delay_us_max: u64,
    /// Virtual time after which a run that has not finished is reported as stalled (a
    /// transaction that never commits would otherwise keep the run going forever).
    pub time_limit_us: u64,
    /// What handling a message costs; `None`: nothing, on one virtual thread.
    pub service: Option<ServiceModel>,
}

#[derive(Debug, thiserror::Error)]
pub enum SimulationError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the run stalled: {live} transactions still live after {elapsed_us} µs of virtual time")]
    Stalled { live: usize, elapsed_us: u64 },
    /// The validator's log failed (fail-stop); `history` holds the transactions whose
    /// commits reached their processors before it did.
    #[error("the validator's write-ahead log stopped: {reason}")]
    LogStopped { reason: String, history: Vec<CommitRecord> },
}

impl Default for SimulationConfig {
    fn default() -> Self {
        SimulationConfig { seed: 1, transactions: 2_000, delay_us_max: 20, time_limit_us: 60_000_000, service: None }
    }
}

#[derive(Debug)]
pub struct SimulationReport {
    pub recorder: Recorder,
    pub history: Vec<CommitRecord>,
    /// `(value, version)` of every key at the end.
    pub store: Vec<(Value, Ts)>,
    /// Virtual microseconds the run took.
    pub elapsed_us: u64,
    /// The sizes the controller chose over time (virtual milliseconds); empty when every
    /// batch size was fixed.
    pub batch_sizes: Vec<BatchSizeSample>,
}

struct Scheduled {
    at_us: u64,
    sequence: u64,
    to: usize,
    message: Message,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.at_us, self.sequence) == (other.at_us, other.sequence)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    /// Earliest first in a max-heap.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at_us, other.sequence).cmp(&(self.at_us, self.sequence))
    }
}

/// Runs a pipeline deterministically; the same arguments always give the same report.
pub fn simulate(
    config: &PipelineConfig,
    workload: &Arc<dyn Workload>,
    simulation: SimulationConfig,
) -> Result<SimulationReport, SimulationError> {
    let counters = Arc::new(Counters::new(config.clients));
    let mut nodes = build(config, workload, simulation.seed, &counters, false)?;
    let mut tuner = WindowTuner::new(config, false)?;
    let sizes = starting_sizes(config, tuner.as_ref());
    for (_, node) in &mut nodes {
        node.resize(&sizes);
    }
    if let Some(tuner) = &mut tuner {
        tuner.observe(0, counters.tally());
    }
    let addresses: Vec<Address> = nodes.iter().map(|(address, _)| *address).collect();
    let index_of = |address: Address| addresses.iter().position(|a| *a == address).expect("every address has a node");
    let thread_of: Vec<usize> = match simulation.service {
        Some(_) => super::threads_of(&addresses, &config.placement),
        None => vec![0; nodes.len()],
    };
    let thread_count = thread_of.iter().max().map_or(1, |&last| last + 1);
    let nodes_of_thread: Vec<Vec<usize>> =
        (0..thread_count).map(|t| (0..nodes.len()).filter(|&i| thread_of[i] == t).collect()).collect();
    let mut inboxes: Vec<VecDeque<(usize, Message)>> = (0..thread_count).map(|_| VecDeque::new()).collect();
    let mut busy_until_ns = vec![0u64; thread_count];
    let mut rng = rng_from_seed(simulation.seed ^ 0x5157_u64);
    let mut queue = BinaryHeap::new();
    let mut sequence = 0u64;
    let mut recorder = Recorder::new(Window::ALL);
    let mut history = Vec::new();
    let mut out: Vec<Envelope> = Vec::new();
    let mut now_us = 0u64;
    let mut draining = false;
    let mut deadlines: Vec<Option<u64>> = vec![None; nodes.len()];

    // Messages are sent at `sent_us` and arrive after their random delay.
    let mut schedule = |out: &mut Vec<Envelope>, queue: &mut BinaryHeap<Scheduled>, sent_us: u64| {
        for Envelope { to, message } in out.drain(..) {
            let delay = 1 + rng.random_range(0..=simulation.delay_us_max);
            sequence += 1;
            queue.push(Scheduled { at_us: sent_us + delay, sequence, to: index_of(to), message });
        }
    };

    for (_, node) in &mut nodes {
        if let Node::Client(client) = node {
            let mut ctx = Context { now_us, out: &mut out, recorder: &mut recorder, history: Some(&mut history) };
            client.start(&mut ctx);
        }
    }
    schedule(&mut out, &mut queue, now_us);

    loop {
        if let Some(reason) = counters.failure.get() {
            return Err(SimulationError::LogStopped { reason: reason.clone(), history });
        }
        if now_us > simulation.time_limit_us {
            let live = nodes.iter().map(|(_, node)| if let Node::Client(c) = node { c.live() } else { 0 }).sum();
            return Err(SimulationError::Stalled { live, elapsed_us: now_us });
        }
        while queue.peek().is_some_and(|next| next.at_us <= now_us) {
            let Scheduled { to, message, .. } = queue.pop().expect("peeked");
            inboxes[thread_of[to]].push_back((to, message));
        }
        // Every free thread with work handles one message, then ticks its components.
        let mut ran = false;
        for thread in 0..thread_count {
            if busy_until_ns[thread] > now_us * 1000 {
                continue;
            }
            let Some((to, message)) = inboxes[thread].pop_front() else { continue };
            let cost_ns = simulation.service.map_or(0, |model| model.cost_ns(&message));
            let mut ctx = Context { now_us, out: &mut out, recorder: &mut recorder, history: Some(&mut history) };
            nodes[to].1.handle(message, &mut ctx);
            let queued = !inboxes[thread].is_empty();
            for &i in &nodes_of_thread[thread] {
                let mut ctx = Context { now_us, out: &mut out, recorder: &mut recorder, history: Some(&mut history) };
                deadlines[i] = nodes[i].1.tick(&mut ctx, queued);
            }
            busy_until_ns[thread] = now_us * 1000 + cost_ns;
            schedule(&mut out, &mut queue, busy_until_ns[thread].div_ceil(1000));
            ran = true;
        }
        // Batch timers that are due.
        for i in 0..nodes.len() {
            if deadlines[i].is_some_and(|deadline| deadline <= now_us) {
                let queued = !inboxes[thread_of[i]].is_empty();
                let mut ctx = Context { now_us, out: &mut out, recorder: &mut recorder, history: Some(&mut history) };
                deadlines[i] = nodes[i].1.tick(&mut ctx, queued);
            }
        }
        if let Some(tuner) = tuner.as_mut().filter(|tuner| now_us >= tuner.next_window_us())
            && tuner.observe(now_us, counters.tally())
        {
            let sizes = tuner.sizes();
            for (_, node) in &mut nodes {
                node.resize(&sizes);
            }
        }
        if !draining && counters.finished.load(AtomicOrdering::Relaxed) >= simulation.transactions {
            draining = true;
            for (address, _) in &nodes {
                if let Address::Client(_) = address {
                    out.push(Envelope { to: *address, message: Message::Drain });
                }
            }
        }
        schedule(&mut out, &mut queue, now_us);
        if ran {
            continue;
        }
        // Nothing could run now: on to the next delivery, thread becoming free, or timer.
        let next_delivery = queue.peek().map(|next| next.at_us);
        let next_free = (0..thread_count)
            .filter(|&thread| !inboxes[thread].is_empty())
            .map(|thread| busy_until_ns[thread].div_ceil(1000))
            .min();
        let next_deadline = deadlines.iter().flatten().copied().min();
        match [next_delivery, next_free, next_deadline].into_iter().flatten().min() {
            None => break,
            Some(next_us) => now_us = now_us.max(next_us),
        }
    }
    // The log may have failed in the last step that ran, with nothing left to wake the loop.
    if let Some(reason) = counters.failure.get() {
        return Err(SimulationError::LogStopped { reason: reason.clone(), history });
    }

    let storage: Vec<&Node> = nodes.iter().map(|(_, node)| node).collect();
    let store = super::final_store(&storage, workload.key_count());
    let live: usize = nodes.iter().map(|(_, node)| if let Node::Client(c) = node { c.live() } else { 0 }).sum();
    if live > 0 {
        return Err(SimulationError::Stalled { live, elapsed_us: now_us });
    }
    let batch_sizes = tuner.map(|tuner| tuner.samples()).unwrap_or_default();
    Ok(SimulationReport { recorder, history, store, elapsed_us: now_us, batch_sizes })
}
