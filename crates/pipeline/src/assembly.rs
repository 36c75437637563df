//! Builds the components of one pipeline from a configuration.

use std::sync::Arc;

use ordo_workload::{Workload, rng_from_seed};

use crate::client::{Client, Counters};
use crate::config::{ConfigError, PipelineConfig};
use crate::message::Address;
use crate::node::Node;
use crate::processor::Processor;
use crate::reorder_worker::ReorderWorker;
use crate::storage::StoragePartition;
use crate::validator::Validator;

/// Every component of a pipeline with its address, clients first.
pub fn build(
    config: &PipelineConfig,
    workload: &Arc<dyn Workload>,
    seed: u64,
    counters: &Arc<Counters>,
    timed_reordering: bool,
) -> Result<Vec<(Address, Node)>, ConfigError> {
    config.validate()?;
    let mode = config.mode;
    let mut nodes = Vec::new();
    let clients = config.clients as u16;
    for index in 0..clients {
        let share =
            config.concurrency / config.clients + usize::from(usize::from(index) < config.concurrency % config.clients);
        let rng = rng_from_seed(seed ^ (u64::from(index) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let client =
            Client::new(index, config.processors as u16, Arc::clone(workload), rng, share, Arc::clone(counters));
        nodes.push((Address::Client(index), Node::Client(client)));
    }
    for index in 0..config.processors as u16 {
        let processor = Processor::new(index, config.storage_workers as u16, Arc::clone(workload));
        nodes.push((Address::Processor(index), Node::Processor(processor)));
    }
    for index in 0..config.storage_workers as u16 {
        let partition = StoragePartition::new(
            index,
            config.storage_workers as u16,
            workload.as_ref(),
            mode.storage_batching(),
            mode.storage_reordering(),
            config.initial_storage_batch_size(),
            config.storage_batch_wait_us_max,
        );
        nodes.push((Address::Storage(index), Node::Storage(partition)));
    }
    let validator = Validator::new(
        workload.key_count(),
        mode.validator_batching(),
        mode.validator_reordering(),
        config.initial_validator_batch_size(),
        config.validator_batch_wait_us_max,
        config.reorder_workers as u16,
    );

    nodes.push((Address::Validator, Node::Validator(validator)));
    for index in 0..config.reorder_workers as u16 {
        let worker = ReorderWorker::new(config.reorder, timed_reordering)
            .map_err(|e| ConfigError::Invalid { field: "reorder", reason: e.to_string() })?;
        nodes.push((Address::Reorder(index), Node::Reorder(Box::new(worker))));
    }
    if let Some(log) = &config.decision_log {
        crate::decision_log::attach(&mut nodes, log, workload.as_ref(), counters)?;
    }
    Ok(nodes)
}
