//! The messages the components exchange, and who they go to.
//!
//! ```text
//!  Client ──Submit──> Processor ──Read──> Storage ──ReadReply──> Processor
//!                         │ ──Validate──> Validator ──Reorder──> ReorderWorker
//!                         │                  ▲ └──Decision──┐        │
//!                         │                  └──Reordered───┼────────┘
//!                         │ <───────────────────────────────┘
//!                         ├──Write──> Storage
//!                         └──Done──> Client
//! ```
//!
//! Payloads that carry a transaction's read and write sets are boxed so that every message
//! stays small and moving one between queues is cheap. Buffers travel back to their owner
//! (read lists in `ReadReply`, validation requests in `Decide`, submissions in `Done`), so in
//! steady state a transaction allocates nothing but its write messages.

use ordo_harness::AbortCause;
use ordo_reorder::{Footprint, Plan};
use ordo_workload::{Key, Txn, Value};

/// A commit timestamp, and the version of every value it wrote. Version 0 is the loaded value.
pub type Ts = u64;

/// A component instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Address {
    Client(u16),
    Processor(u16),
    Storage(u16),
    Validator,
    Reorder(u16),
}

/// One attempt of one live transaction at a processor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxnRef {
    pub processor: u16,
    pub slot: u32,
    /// Incremented on every restart, so a reply for an earlier attempt is recognized.
    pub attempt: u32,
}

/// One key of a read request and, in the reply, what storage found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadItem {
    /// Index of the read in the transaction's read set.
    pub position: u16,
    pub key: Key,
    pub value: Value,
    pub version: Ts,
}

/// A transaction submitted by a client.
#[derive(Debug, Clone)]
pub struct Submission {
    /// Unique in the run.
    pub id: u64,
    pub client: u16,
    pub txn: Txn,
    /// When the client first submitted it (latency counts from here, across restarts).
    pub submitted_us: u64,
}

/// What a validator needs to decide a transaction.
#[derive(Debug, Clone, Default)]
pub struct ValidationRequest {
    pub txn: TxnRef,
    /// Every key read and the version seen.
    pub reads: Vec<(Key, Ts)>,
    /// Every key the transaction will write.
    pub writes: Vec<Key>,
    /// The value written to each of `writes` (a validator that logs its decisions needs them).
    pub values: Vec<Value>,
    pub restarts: u32,
    /// The procedure gave up (user abort): validated like a read-only transaction, so the
    /// decision to give up rests on a consistent snapshot.
    pub user_abort: bool,
}

impl Footprint for ValidationRequest {
    fn read_keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.reads.iter().map(|&(key, _)| key)
    }
    fn write_keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.writes.iter().copied()
    }
    fn restarts(&self) -> u32 {
        self.restarts
    }
}

/// The validator's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Commit(Ts),
    Abort(AbortCause),
}

/// How a submitted transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    UserAborted,
}

/// A batch on its way to a reorder worker and back.
#[derive(Debug, Clone)]
pub struct ReorderBatch {
    /// Sequence number of the batch at the validator.
    pub sequence: u64,
    pub requests: Vec<Box<ValidationRequest>>,
    /// Transactions of the batch that failed pre-validation; told only after the batch's
    /// commits, so that their restarts read what the batch wrote.
    pub rejected: Vec<Box<ValidationRequest>>,

    /// Filled by the reorder worker.
    pub plan: Plan,
    /// Time the worker spent planning.
    pub reorder_ns: u64,
}

#[derive(Debug, Clone)]
pub enum Message {
    /// Client -> processor: run this transaction.
    Submit(Box<Submission>),
    /// Processor -> storage: read these keys. Storage fills in values and versions in place
    /// and sends the same buffer back as `ReadReply`.
    Read {
        txn: TxnRef,
        items: Vec<ReadItem>,
    },
    /// Storage -> processor.
    ReadReply {
        txn: TxnRef,
        items: Vec<ReadItem>,
    },
    /// Processor -> storage: install committed writes.
    Write {
        writes: Vec<(Key, Value, Ts)>,
    },
    /// Processor -> validator.
    Validate(Box<ValidationRequest>),
    /// Validator -> processor: the decision, and the request back so its buffers are reused.
    Decide {
        decision: Decision,
        request: Box<ValidationRequest>,
    },
    /// Validator -> reorder worker, and back with the plan.
    Reorder(Box<ReorderBatch>),
    Reordered(Box<ReorderBatch>),
    /// Processor -> client: how it ended, and the submission back so its buffers are reused.
    Done {
        submission: Box<Submission>,
        outcome: Outcome,
        restarts: u32,
    },
    /// Driver -> client: stop submitting new transactions.
    Drain,
}

/// A message and its destination.
#[derive(Debug, Clone)]
pub struct Envelope {
    pub to: Address,
    pub message: Message,
}

/// One committed transaction, as the processor saw it (for `--history` and replay checks).
#[derive(Debug, Clone, PartialEq)]
pub struct CommitRecord {
    pub id: u64,
    pub ts: Ts,
    pub txn: Txn,
    pub reads: Vec<(Key, Ts)>,
    pub writes: Vec<(Key, Value)>,
}

impl CommitRecord {
    /// The record in the history format every engine shares: writes carry the commit
    /// timestamp as their version.
    pub fn history_entry(&self) -> ordo_history::HistoryEntry {
        let writes = self.writes.iter().map(|&(key, _)| (key, self.ts)).collect();
        ordo_history::HistoryEntry::new(self.id, self.reads.clone(), writes).with_ts(self.ts)
    }
}
