//! Drivers run the components: [`simulation`] on one thread in virtual time, deterministic
//! for a seed (tests), and [`threaded`] on OS threads in real time (benchmarks).

pub mod simulation;
pub mod threaded;

use ordo_workload::Value;

use crate::message::Ts;
use crate::node::Node;

/// The store after a run, indexed by key: `(value, version)`.
pub fn final_store(nodes: &[&Node], key_count: u64) -> Vec<(Value, Ts)> {
    let mut store = vec![(0, 0); key_count as usize];
    for node in nodes {
        if let Node::Storage(partition) = node {
            for (key, value, version) in partition.records() {
                store[key as usize] = (value, version);
            }
        }
    }
    store
}
