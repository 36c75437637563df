//! A reorder worker: plans batches of viable transactions with the reorder library. It owns
//! nothing but its scratch space, so any number of workers can plan batches in parallel; the
//! validator takes the plans back in whatever order they finish.

use std::time::Instant;

use ordo_reorder::{FvsConfig, ReorderError, Reorderer};

use crate::component::Context;
use crate::message::{Address, Message};

#[derive(Debug)]
pub struct ReorderWorker {
    reorderer: Reorderer,
    /// Measure planning time with the wall clock (off under the deterministic driver, whose
    /// runs must not depend on the machine).
    timed: bool,
}

impl ReorderWorker {
    pub fn new(config: FvsConfig, timed: bool) -> Result<Self, ReorderError> {
        Ok(ReorderWorker { reorderer: Reorderer::new(config)?, timed })
    }

    pub fn handle(&mut self, message: Message, ctx: &mut Context) {
        let Message::Reorder(mut batch) = message else {
            unreachable!("reorder worker got {message:?}: no route delivers it here");
        };
        let start = self.timed.then(Instant::now);
        let ReorderWorker { reorderer, .. } = self;
        let mut plan = std::mem::take(&mut batch.plan);
        reorderer.plan_into(&batch.requests, &mut plan);
        batch.plan = plan;
        batch.reorder_ns = start.map_or(0, |s| s.elapsed().as_nanos() as u64);
        ctx.recorder.batch(ctx.now_us, batch.requests.len(), batch.plan.abort.len(), batch.reorder_ns);
        ctx.send(Address::Validator, Message::Reordered(batch));
    }
}
