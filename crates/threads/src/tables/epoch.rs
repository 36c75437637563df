//! The global epoch of the engine over tables: a counter that advances on a period (Silo's
//! epochs, SOSP 2013 §4.2), read by every protocol at its serialization point and by
//! reclamation (a tombstone is reclaimed only an epoch after it was left).
//!
//! Three ways to advance it: a sleeping thread that adds one every period ([`Epochs::clock`]);
//! nobody but the caller ([`Epochs::manual`]), for the interleaving simulator and tests that
//! want every epoch boundary where their seed puts it; or the write-ahead log's logger
//! ([`Epochs::follow`]): with a log, the engine's epoch *is* the log's group-commit epoch, so
//! the epoch a protocol reads at its serialization point is the one its redo record is tagged
//! with and the one whose durability acknowledges it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use ordo_log::EpochCell;

/// The global epoch, and the thread that advances it if it has one.
#[derive(Debug)]
pub struct Epochs {
    current: Arc<EpochCell>,
    /// Whether another component (the logger) owns the epoch: it is then never advanced here.
    follows: bool,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Epochs {
    /// An epoch that a thread advances every `period_ms` (at least 1).
    pub fn clock(period_ms: u64) -> Self {
        let mut epochs = Epochs::manual();
        let thread = {
            let (current, stop) = (Arc::clone(&epochs.current), Arc::clone(&epochs.stop));
            std::thread::Builder::new()
                .name("ordo-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::park_timeout(Duration::from_millis(period_ms.max(1)));
                        current.advance();
                    }
                })
                .expect("spawning the epoch thread")
        };
        epochs.thread = Some(thread);
        epochs
    }

    /// An epoch that only [`Epochs::advance`] moves, starting at 1.
    pub fn manual() -> Self {
        Epochs {
            current: Arc::new(EpochCell::new(1)),
            follows: false,
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
        }
    }

    /// The epoch `cell` holds, advanced by whoever owns it (the logger: `Logger::epoch_cell`).
    pub fn follow(cell: Arc<EpochCell>) -> Self {
        Epochs { current: cell, follows: true, stop: Arc::new(AtomicBool::new(false)), thread: None }
    }

    /// The current epoch.
    #[inline]
    pub fn current(&self) -> u64 {
        self.current.load()
    }

    /// Moves to the next epoch and returns it.
    pub fn advance(&self) -> u64 {
        assert!(!self.follows, "this epoch follows the log's; only the logger advances it");
        self.current.advance()
    }
}

impl Drop for Epochs {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_epochs_move_only_when_advanced_and_clocks_move_alone() {
        let manual = Epochs::manual();
        assert_eq!(manual.current(), 1);
        assert_eq!(manual.advance(), 2);
        assert_eq!(manual.current(), 2);
        let clock = Epochs::clock(1);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while clock.current() < 3 {
            assert!(std::time::Instant::now() < deadline, "the clock did not advance");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_following_epoch_reads_the_cell_its_owner_advances() {
        let cell = Arc::new(EpochCell::new(7));
        let epochs = Epochs::follow(Arc::clone(&cell));
        assert_eq!(epochs.current(), 7);
        cell.advance();
        assert_eq!(epochs.current(), 8);
    }
}
