//! Epoch-based reclamation: when a retired record or index node may be handed out again.
//!
//! A thread *pins* before it reads shared structures optimistically and drops the guard when it
//! is done; a slot retired while some thread is pinned goes back to its free list only after
//! every thread pinned at that moment has unpinned. This is crossbeam-epoch's global collector,
//! re-exported: it is well kept, lock-free, and its deferred functions (`Guard::defer`) are
//! exactly the "recycle this id later" hook the arenas need.
//!
//! ```text
//!   thread A   pin ──── read record 7 ────────────── unpin
//!   thread B        retire(7) ──(deferred)──────────────────▶ 7 back on a free list
//!                                          epoch advances once A (and every
//!                                          thread pinned at retire) unpinned
//! ```
//!
//! Reclamation here never frees memory: the arenas keep every slot for their whole life (see
//! [`crate::records`]), so a reader that was *not* pinned and reads a recycled slot reads
//! valid atomics holding someone else's data. That is memory-safe; it is caught by the
//! version word of the slot (records by their engine's TID word, index nodes by their lock
//! version, which keeps increasing across reuse). Pinning is what makes such restarts rare
//! and what lets engines rely on "the record I found is the record I meant" for the length of
//! a transaction.
//!
//! Pinning is cheap when already pinned (a counter); engines pin once per transaction.

pub use crossbeam_epoch::{Guard, pin};

/// Pins the current thread and asks the collector to run deferred recycling that is due.
///
/// For tests and for shutdown paths that want retired slots back soon; the collector also
/// does this on its own every so many pins.
pub fn flush() {
    pin().flush();
}
