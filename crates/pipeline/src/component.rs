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

/// What a tick does with a partial batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartialBatch {
    Close,
    /// Keep it; tick again by this deadline (`None`: the tick after the next message will do).
    Wait(Deadline),
}

impl PartialBatch {
    /// The rule for a partial batch that started at `started_us`. With no wait (natural
    /// batching) it closes once nothing more is queued on its thread (`queued` is false), so a
    /// busy thread fills its batches; with a wait, once it has waited `wait_us_max`, busy or not.
    pub fn at(now_us: u64, started_us: u64, wait_us_max: u64, queued: bool) -> Self {
        if wait_us_max == 0 {
            return if queued { PartialBatch::Wait(None) } else { PartialBatch::Close };
        }
        let due = started_us + wait_us_max;
        if now_us >= due { PartialBatch::Close } else { PartialBatch::Wait(Some(due)) }
    }
}

#[cfg(test)]
mod tests {
    use super::PartialBatch;

    #[test]
    fn natural_batches_close_only_when_nothing_is_queued() {
        assert_eq!(PartialBatch::at(500, 10, 0, true), PartialBatch::Wait(None));
        assert_eq!(PartialBatch::at(500, 10, 0, false), PartialBatch::Close);
        assert_eq!(PartialBatch::at(20, 10, 30, false), PartialBatch::Wait(Some(40)));
        assert_eq!(PartialBatch::at(40, 10, 30, true), PartialBatch::Close);
    }
}
