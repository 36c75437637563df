//! Drivers run the components: [`simulation`] on one thread in virtual time, deterministic
//! for a seed (tests), and [`threaded`] on OS threads in real time (benchmarks). Both feed the
//! batch-size controller of [`tuning`] once per measurement window.

pub mod simulation;
pub mod threaded;
pub mod tuning;

use ordo_workload::Value;

use crate::config::{Placement, Role};
use crate::message::{Address, Ts};
use crate::node::Node;

/// The thread of `placement` each address runs on: each role's instances are dealt
/// round-robin over the threads that host the role.
pub fn threads_of(addresses: &[Address], placement: &Placement) -> Vec<usize> {
    let mut next_of_role = [0usize; Role::ALL.len()];
    addresses
        .iter()
        .map(|address| {
            let role = match address {
                Address::Client(_) => Role::Client,
                Address::Processor(_) => Role::Processor,
                Address::Storage(_) => Role::Storage,
                Address::Validator => Role::Validator,
                Address::Reorder(_) => Role::Reorder,
            };
            let hosts: Vec<usize> =
                (0..placement.threads.len()).filter(|&t| placement.threads[t].contains(&role)).collect();
            let slot = &mut next_of_role[Role::ALL.iter().position(|r| *r == role).expect("known role")];
            let thread = hosts[*slot % hosts.len()];
            *slot += 1;
            thread
        })
        .collect()
}

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
