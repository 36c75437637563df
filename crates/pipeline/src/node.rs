//! A component of any kind, so drivers can host a mix of them uniformly.

use crate::client::Client;
use crate::component::{Context, Deadline};
use crate::decision_log::LoggedValidator;
use crate::driver::tuning::Sizes;
use crate::message::Message;
use crate::processor::Processor;
use crate::reorder_worker::ReorderWorker;
use crate::storage::StoragePartition;
use crate::validator::Validator;

#[derive(Debug)]
pub enum Node {
    Client(Client),
    Processor(Processor),
    Storage(StoragePartition),
    Validator(Validator),
    /// The validator with a write-ahead log of its decisions.
    LoggedValidator(Box<LoggedValidator>),
    Reorder(Box<ReorderWorker>),
}

impl Node {
    #[inline]
    pub fn handle(&mut self, message: Message, ctx: &mut Context) {
        match self {
            Node::Client(c) => c.handle(message, ctx),
            Node::Processor(p) => p.handle(message, ctx),
            Node::Storage(s) => s.handle(message, ctx),
            Node::Validator(v) => v.handle(message, ctx),
            Node::LoggedValidator(v) => v.handle(message, ctx),
            Node::Reorder(r) => r.handle(message, ctx),
        }
    }

    /// Sets the batch caps the batch-size controller chose (components without a batch ignore it).
    pub fn resize(&mut self, sizes: &Sizes) {
        match self {
            Node::Storage(s) => s.set_batch_size(sizes.storage),
            Node::Validator(v) => v.set_batch_size(sizes.validator),
            Node::LoggedValidator(v) => v.set_batch_size(sizes.validator),
            Node::Client(_) | Node::Processor(_) | Node::Reorder(_) => {}
        }
    }

    /// Lets the component act on the passage of time and on its thread running out of queued
    /// messages (partial batches); returns its next deadline.
    #[inline]
    pub fn tick(&mut self, ctx: &mut Context, queued: bool) -> Deadline {
        match self {
            Node::Storage(s) => s.tick(ctx, queued),
            Node::Validator(v) => v.tick(ctx, queued),
            Node::LoggedValidator(v) => v.tick(ctx, queued),
            _ => None,
        }
    }
}
