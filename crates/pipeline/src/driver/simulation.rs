//! The deterministic driver: every component on one thread, in virtual time.
//!
//! Messages are delivered after a random delay of 1 to `1 + delay_us_max` virtual
//! microseconds drawn from the run's seed, so runs explore many interleavings (replies
//! overtaking each other, writes reaching storage late, batches finishing reordering out of
//! order) and one seed reproduces one interleaving exactly. Ties in delivery time go to the
//! message sent first. Batch timers are served by ticking every component whenever virtual time
//! passes one of their deadlines.
//!
//! The run stops submitting after `transactions` transactions have finished and ends when
//! nothing is left in flight, so the final store reflects every committed write.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::sync::atomic::Ordering as AtomicOrdering;

use ordo_harness::{Recorder, Window};
use ordo_workload::{Value, Workload, rng_from_seed};
use rand::Rng;

use crate::assembly::build;
use crate::client::Counters;
use crate::component::Context;
use crate::config::{ConfigError, PipelineConfig};
use crate::message::{Address, CommitRecord, Envelope, Message, Ts};
use crate::node::Node;

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
        SimulationConfig { seed: 1, transactions: 2_000, delay_us_max: 20, time_limit_us: 60_000_000 }
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
    let counters = Arc::new(Counters::default());
    let mut nodes = build(config, workload, simulation.seed, &counters, false)?;
    let addresses: Vec<Address> = nodes.iter().map(|(address, _)| *address).collect();
    let index_of = |address: Address| addresses.iter().position(|a| *a == address).expect("every address has a node");
    let mut rng = rng_from_seed(simulation.seed ^ 0x5157_u64);
    let mut queue = BinaryHeap::new();
    let mut sequence = 0u64;
    let mut recorder = Recorder::new(Window::ALL);
    let mut history = Vec::new();
    let mut out: Vec<Envelope> = Vec::new();
    let mut now_us = 0u64;
    let mut draining = false;
    let mut deadlines: Vec<Option<u64>> = vec![None; nodes.len()];

    let mut schedule = |out: &mut Vec<Envelope>, queue: &mut BinaryHeap<Scheduled>, now_us: u64| {
        for Envelope { to, message } in out.drain(..) {
            let delay = 1 + rng.random_range(0..=simulation.delay_us_max);
            sequence += 1;
            queue.push(Scheduled { at_us: now_us + delay, sequence, to: index_of(to), message });
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
        let next_deadline = deadlines.iter().flatten().copied().min();
        let next_message = queue.peek().map(|s| s.at_us);
        match (next_message, next_deadline) {
            (None, None) => break,
            (Some(at), Some(deadline)) if deadline < at => now_us = now_us.max(deadline),
            (None, Some(deadline)) => now_us = now_us.max(deadline),
            _ => {
                let Scheduled { at_us, to, message, .. } = queue.pop().expect("peeked");
                now_us = now_us.max(at_us);
                let mut ctx = Context { now_us, out: &mut out, recorder: &mut recorder, history: Some(&mut history) };
                nodes[to].1.handle(message, &mut ctx);
            }
        }
        // More messages due at this instant count as queued, as on a busy thread.
        let queued = queue.peek().is_some_and(|next| next.at_us <= now_us);
        for (i, (_, node)) in nodes.iter_mut().enumerate() {
            let mut ctx = Context { now_us, out: &mut out, recorder: &mut recorder, history: Some(&mut history) };
            deadlines[i] = node.tick(&mut ctx, queued);
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
    }

    let storage: Vec<&Node> = nodes.iter().map(|(_, node)| node).collect();
    let store = super::final_store(&storage, workload.key_count());
    let live: usize = nodes.iter().map(|(_, node)| if let Node::Client(c) = node { c.live() } else { 0 }).sum();
    if live > 0 {
        return Err(SimulationError::Stalled { live, elapsed_us: now_us });
    }

    Ok(SimulationReport { recorder, history, store, elapsed_us: now_us })
}
