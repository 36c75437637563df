//! Versioned storage (§2, §3.1): one partition of the key space, keys `k` with
//! `k % partitions == index`.
//!
//! Every value carries the version (commit timestamp) of the transaction that wrote it. A
//! write older than the stored version is ignored, so committed writes may arrive in any order
//! and the store still converges to the last one in serialization order.
//!
//! With *storage batching* requests queue until a batch is full (or, once nothing more is
//! queued, its wait runs out) and are then served together: in arrival order (`batch` mode), or
//! with *storage reordering*

//! (`sr`, `srvc`): every write of the batch first, then every read, so no read in the batch
//! returns a value that a write sitting next to it in the queue has already replaced; such a
//! read would be bound to fail validation.

use ordo_workload::{Key, Value, Workload};

use crate::component::{Context, Deadline, PartialBatch};
use crate::message::{Address, Message, Ts};

#[derive(Debug)]
pub struct StoragePartition {
    index: u16,
    partitions: u16,
    /// `(value, version)` of key `index + i * partitions` at position `i`.
    records: Vec<(Value, Ts)>,
    batching: bool,
    writes_first: bool,
    batch_size: usize,
    batch_wait_us_max: u64,
    pending: Vec<Message>,
    batch_started_us: u64,
}

impl StoragePartition {
    #[allow(clippy::fn_params_excessive_bools)]
    pub fn new(
        index: u16,
        partitions: u16,
        workload: &dyn Workload,
        batching: bool,
        writes_first: bool,
        batch_size: usize,
        batch_wait_us_max: u64,
    ) -> Self {
        let keys = workload.key_count();
        let records =
            (u64::from(index)..keys).step_by(usize::from(partitions)).map(|k| (workload.initial_value(k), 0)).collect();
        StoragePartition {
            index,
            partitions,
            records,
            batching,
            writes_first,
            batch_size,
            batch_wait_us_max,
            pending: Vec::new(),
            batch_started_us: 0,
        }
    }

    #[inline]
    fn slot(&self, key: Key) -> usize {
        debug_assert_eq!(
            key % u64::from(self.partitions),
            u64::from(self.index),
            "key {key} routed to the wrong partition"
        );
        (key / u64::from(self.partitions)) as usize
    }

    /// Whether `key` lives in this partition.
    pub fn owns(&self, key: Key) -> bool {
        key % u64::from(self.partitions) == u64::from(self.index)
    }

    /// Before a run, after recovery: `key` holds `value` at `version`.
    pub fn restore(&mut self, key: Key, value: Value, version: Ts) {
        let slot = self.slot(key);
        self.records[slot] = (value, version);
    }

    /// Sets the batch cap (the drivers' batch-size controller); a pending batch that is already
    /// as large closes with the next request or tick.
    pub fn set_batch_size(&mut self, batch_size: usize) {
        assert!(batch_size > 0, "a batch cap of 0 would never serve a request");
        self.batch_size = batch_size;
    }

    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The value and version of `key` (for checks after a run).
    pub fn get(&self, key: Key) -> (Value, Ts) {
        self.records[self.slot(key)]
    }

    /// Every `(key, value, version)` of this partition.
    pub fn records(&self) -> impl Iterator<Item = (Key, Value, Ts)> + '_ {
        self.records.iter().enumerate().map(|(i, &(value, version))| {
            (i as u64 * u64::from(self.partitions) + u64::from(self.index), value, version)
        })
    }

    pub fn handle(&mut self, message: Message, ctx: &mut Context) {
        if !self.batching {
            self.serve(message, ctx);
            return;
        }
        if self.pending.is_empty() {
            self.batch_started_us = ctx.now_us;
        }
        self.pending.push(message);
        if self.pending.len() >= self.batch_size {
            self.serve_batch(ctx);
        }
    }

    /// Closes a partial batch when its rule says so ([`PartialBatch::at`]); `queued` says
    /// whether more messages wait on this component's thread.
    pub fn tick(&mut self, ctx: &mut Context, queued: bool) -> Deadline {
        if self.pending.is_empty() {
            return None;
        }
        match PartialBatch::at(ctx.now_us, self.batch_started_us, self.batch_wait_us_max, queued) {
            PartialBatch::Close => {
                self.serve_batch(ctx);
                None
            }
            PartialBatch::Wait(deadline) => deadline,
        }
    }

    fn serve_batch(&mut self, ctx: &mut Context) {
        let mut batch = std::mem::take(&mut self.pending);
        if self.writes_first {
            for message in &batch {
                if let Message::Write { writes } = message {
                    self.apply(writes);
                }
            }
            for message in batch.drain(..) {
                if !matches!(message, Message::Write { .. }) {
                    self.serve(message, ctx);
                }
            }
        } else {
            for message in batch.drain(..) {
                self.serve(message, ctx);
            }
        }
        self.pending = batch;
    }

    fn apply(&mut self, writes: &[(Key, Value, Ts)]) {
        for &(key, value, version) in writes {
            let slot = self.slot(key);
            let record = &mut self.records[slot];
            if version > record.1 {
                *record = (value, version);
            }
        }
    }

    fn serve(&mut self, message: Message, ctx: &mut Context) {
        match message {
            Message::Read { txn, mut items } => {
                for item in &mut items {
                    (item.value, item.version) = self.records[self.slot(item.key)];
                }
                ctx.send(Address::Processor(txn.processor), Message::ReadReply { txn, items });
            }
            Message::Write { writes } => self.apply(&writes),
            other => unreachable!("storage got {other:?}: no route delivers it here"),
        }
    }
}
