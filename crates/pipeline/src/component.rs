//! What every component gets when it runs: the time, a place to send messages, and the
//! thread's recorder. Components never touch threads, channels or clocks themselves.

use ordo_harness::Recorder;

use crate::message::{Address, CommitRecord, Envelope, Message};

#[derive(Debug)]
pub struct Context<'a> {
    /// Microseconds since the run started (virtual time under the deterministic driver).
    pub now_us: u64,
    pub out: &'a mut Vec<Envelope>,
    pub recorder: &'a mut Recorder,
    /// Committed transactions, when the run records a history.
    pub history: Option<&'a mut Vec<CommitRecord>>,
}

impl Context<'_> {
    #[inline]
    pub fn send(&mut self, to: Address, message: Message) {
        self.out.push(Envelope { to, message });
    }
}

/// A component's answer to `tick`: when it next needs a tick, if ever.
pub type Deadline = Option<u64>;
