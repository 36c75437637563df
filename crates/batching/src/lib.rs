//! Adaptive batch size: choose a batch-size cap within `[min, max]` online, from what the
//! engine measures.
//!
//! The paper (Ding, Kot, Gehrke, PVLDB 2018) measures a sweet spot in batch size (§5.3,
//! storage and validator batching; Table 1: larger batches give reordering more freedom but
//! add latency), and §7 names adaptive batching, adjusting the size to the workload, as
//! future work. Our BENCHMARKS.md finds the best fixed size moving with skew, concurrency and
//! deployment. This crate is that choice as an I/O-free core (STYLE.md rule 1): a driver feeds
//! one [`WindowObservation`] per measurement window (commits, aborts, a latency figure and the
//! explicit `now_us`) and reads back the size to use for the next window. Every batching
//! point is configured with a [`BatchSize`] knob: `auto` (this controller) or a fixed number.
//!
//! # Mechanism: interleaved two-sided probes on goodput
//!
//! ```text
//!  goodput            peak
//!    ^                 __
//!    |              _-    -_                 one round: windows alternate between
//!    |           _-    ↑     -_              down = centre/step and up = centre*step
//!    |        _-   down c up   -_            (ABBA order); the better side by more than
//!    |     _-                    -_          the tolerance becomes the new centre
//!    +------------------------------> batch size (log scale)
//! ```
//!
//! * A *round* spends `windows_per_side` windows on each side of the centre, in the order
//!   up, down, down, up, up, down, … and scores each side by the median goodput (commits per
//!   second) of its windows, so one noisy window cannot steer it.
//! * The better side by more than `tolerance_ratio` becomes the new centre; within the
//!   tolerance the centre stays (the peak lies between the two sides), except at a bound, where
//!   the side at the bound is the centre itself: there a tie moves the centre inward (at most a
//!   tolerance's loss), so a plateau that starts at a bound does not hold the search there.
//! * Steps are multiplicative (batch sizes that matter span 10 to several hundred, so the
//!   search is on a log scale), and adapt as in Rprop: a move in the same direction as the
//!   last one squares the step (up to `step_ratio_max`), so a far peak is reached in a few
//!   rounds; a reversal or a tie takes its square root (down to `step_ratio_min`), so the
//!   search settles into a narrow band around the peak.
//! * Re-probing: every `reprobe_every_rounds` rounds the step goes back up to
//!   `step_ratio_reprobe`, so a moved peak is found even after the step has shrunk to its
//!   floor; and when a round's goodput differs from the knob's previous round by more than
//!   `level_shift_ratio` (the workload changed: a change of skew moves the level as it moves
//!   the peak), the search restarts at once with `step_ratio_initial`.
//! * The two sides are always at least one apart (rounded), so at small sizes a small step
//!   still compares two different sizes.
//! * Guards: a window whose abort ratio exceeds `abort_ratio_max` or whose latency exceeds
//!   `latency_us_max` moves the centre down at once, whatever goodput says (both off by default:
//!   aborted work already lowers goodput, and under optimistic concurrency control at high skew
//!   most attempts abort at every batch size).
//!
//! **Why interleaved rounds** (an earlier version compared each probe with the previous one).
//! ordo's reference machine is shared: another process can take a core for a second, so the
//! goodput of consecutive probes drifts by tens of percent for reasons that have nothing to do
//! with the batch size, and a controller that compares a probe with the last one follows the
//! drift. Both sides of a round are measured within the same few windows, in ABBA order, so a
//! drift that is roughly linear over a round weighs on both alike and cancels in the
//! comparison. It also makes several knobs tunable on one signal: a [`Tuner`] gives each auto
//! knob a round in turn while the others hold their centres, so no comparison mixes the moves
//! of two knobs. The price is that the engine always runs a step away from the centre; near
//! the peak the step is small (5% at its floor by default) and so is the cost.
//!
//! **Where it runs.** The pipeline engine's drivers (`ordo-pipeline`, `driver/tuning.rs`: the
//! storage and validator batch caps, as one knob when both are `auto`, and the threaded
//! runtime's flush interval) and the PostgreSQL tier (`ordo-pgtier`, `tuning.rs`: batch size
//! and group size) each feed a [`Tuner`] one window at a time, from counts their clients keep,
//! and set the sizes it returns. A window there lasts a minimum time and then until it holds
//! enough commits, so that a window's goodput is not mostly counting noise.
//!
//! The anchors: TiDB's PD client grows and shrinks its timestamp-request batch from what it
//! observes; Omid closes a commit batch on size or on idle time; PostgreSQL's `commit_delay`
//! waits for siblings only when enough of them are active. All three adapt a batch to load
//! with a simple local rule. Here the quantity of interest (goodput) has one peak in batch
//! size (small batches lose the reordering and amortization benefit, large ones add conflicts
//! and wait), which is what a local search needs.
//!
//! # Invariants
//!
//! * `min <= batch_size() <= max` at all times; the centre is asserted within bounds after
//!   every decision.
//! * Histories hold at most `history_len_max` entries: when full they drop every other entry
//!   and record half as often, so they span the whole run at coarser grain.
//!
//! Hand-written: no crate implements this small rule; it needs only `thiserror` and `serde`.

mod controller;
mod history;
mod size;
mod tuner;

pub use controller::{AdaptiveBatchSize, ConfigError, ControllerConfig, Decision, WindowObservation};
pub use history::History;
pub use size::{BatchSize, BatchSizeError};
pub use tuner::{Knob, Tuner};

/// Smallest batch size a configuration may name.
pub const BATCH_SIZE_MIN: u32 = 1;
/// Largest batch size a configuration may name.
pub const BATCH_SIZE_MAX: u32 = 100_000;
/// Largest number of windows a side of a round may span.
pub const WINDOWS_PER_SIDE_MAX: u32 = 64;
/// Largest history a configuration may ask for.
pub const HISTORY_LEN_MAX: usize = 1 << 16;
/// Largest multiplicative step a configuration may name.
pub const STEP_RATIO_MAX: f64 = 4.0;

#[cfg(test)]
mod tests;
