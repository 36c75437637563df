//! No concurrency control at all: one worker runs transactions one after another, reading and
//! installing records directly. The per-core upper bound every protocol is measured against
//! (`serial` x threads).

use ordo_history::HistoryEntry;
use ordo_workload::{Key, Value, Workload};

use crate::protocol::{Abort, Protocol, Recording, WriteSet};
use crate::store::Table;

/// The serial executor over a single-version table.
#[derive(Debug)]
pub struct Serial {
    table: Table,
}

#[derive(Debug)]
pub struct SerialWorker {
    writes: WriteSet,
    payload: Vec<u64>,
    recording: Recording,
}

impl Serial {
    pub fn new(workload: &dyn Workload, payload_bytes: usize, load_threads: usize) -> Self {
        Serial { table: Table::load(workload, payload_bytes, 0, load_threads) }
    }
}

impl Protocol for Serial {
    type Worker = SerialWorker;
    const CONCURRENT: bool = false;

    fn name(&self) -> &'static str {
        "serial"
    }

    fn worker(&self, index: usize, record_history: bool) -> SerialWorker {
        SerialWorker {
            writes: WriteSet::default(),
            payload: vec![0; self.table.payload_words()],
            recording: Recording::new(index, record_history),
        }
    }

    fn begin(&self, worker: &mut SerialWorker, _restart: bool) {
        worker.writes.clear();
        worker.recording.clear();
    }

    #[inline]
    fn prefetch(&self, key: Key) {
        self.table.prefetch(key);
    }

    #[inline]
    fn read(&self, worker: &mut SerialWorker, key: Key, _for_update: bool) -> Result<Value, Abort> {
        if let Some(value) = worker.writes.get(key) {
            return Ok(value);
        }
        let (value, seq) = self.table.record(key).read_data(&mut worker.payload);
        worker.recording.read(key, seq);
        Ok(value)
    }

    #[inline]
    fn write(&self, worker: &mut SerialWorker, key: Key, value: Value) -> Result<(), Abort> {
        worker.writes.put(key, value);
        Ok(())
    }

    fn commit(&self, worker: &mut SerialWorker) -> Result<(), Abort> {
        for &(key, value) in &worker.writes.entries {
            let seq = self.table.record(key).install(value);
            worker.recording.write(key, seq);
        }
        worker.recording.commit(None);
        Ok(())
    }

    fn abort(&self, worker: &mut SerialWorker) {
        worker.recording.clear();
    }

    fn history(worker: &mut SerialWorker) -> &mut Vec<HistoryEntry> {
        &mut worker.recording.entries
    }

    fn committed_value(&self, key: Key) -> Value {
        self.table.value(key)
    }
}
