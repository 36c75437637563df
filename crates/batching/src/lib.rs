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
//! # Mechanism: interleaved three-arm rounds on goodput
//!
//! ```text
//!  goodput            peak
//!    ^                 __
//!    |              _-    -_                 one round measures three arms in interleaved
//!    |           _-    ↑     -_              windows: down = centre/step, the centre, and
//!    |        _-   down c up   -_            up = centre*step; a side that measures above the
//!    |     _-                    -_          centre, and by the tolerance above it or above
//!    +------------------------------>        the other side, becomes the new centre;
//!            batch size (log scale)          otherwise the centre stays and the step shrinks
//! ```
//!
//! * A *round* spends `windows_per_side` windows on each of three arms, the centre and one
//!   side either way of it, in the order up, centre, down, down, centre, up, up, centre, down,
//!   … (`3 * windows_per_side` windows; the next round swaps up and down), and scores each arm
//!   by the median goodput (commits per second) of its windows, so one noisy window cannot
//!   steer it.
//! * A side wins the round if it measured above the centre and clears `tolerance_ratio` over
//!   either the centre or the other side; the winner becomes the new centre (if both sides
//!   win, the better one). Clearing it over the centre is the plain test: better than the
//!   centre by more than noise. Clearing it over the other side, two steps away, catches a
//!   slope through the centre too shallow to show within one step (in `ordo-pipeline`'s
//!   deterministic `tests/batch_size.rs` runs, validator batches at θ = 0.3 commit about 5%
//!   more at 8 than at 27, under 2% per step of 1.5, and a search that needed 3% per step
//!   stayed between 34 and 53 while the best fixed size was 8). A side that measured
//!   below the centre never wins, however far it beat the other side: that is what keeps the
//!   search on a sharp peak. With no winner the centre stays: it measured at least as good as
//!   both neighbours a step away (within the tolerance), so the peak lies within a step of
//!   it, and the step shrinks to look closer.
//! * At a bound the outer side is clamped onto the centre: that arm measures the centre again,
//!   so it cannot win and stands for the centre in the comparisons. The round then spans only
//!   one step, from the bound to the inward side, and a slope rising inward that two steps
//!   would show stays hidden. So at a bound a tie (the inward side within the tolerance of the
//!   centre) moves the centre inward: that costs at most the tolerance, and the next round,
//!   off the bound, spans two steps again. A centre at a bound that beats its inward side by
//!   more than the tolerance stays there. (When `auto` pipeline batches still started at the
//!   search's minimum, the `srvc` search in the same tests started at 4 and, without this
//!   rule, stayed there through a change of skew that moved the best size to 64.)
//! * Steps are multiplicative (batch sizes that matter span 10 to several hundred, so the
//!   search is on a log scale), and adapt as in Rprop: a move in the same direction as the
//!   last one squares the step (up to `step_ratio_max`), so a far peak is reached in a few
//!   rounds; a reversal, a stay, or a move cut short by a bound takes its square root (down to
//!   `step_ratio_min`), so the search settles into a narrow band around the peak.
//! * Re-probing: every `reprobe_every_rounds` rounds the step goes back up to
//!   `step_ratio_reprobe`, so a moved peak is found even after the step has shrunk to its
//!   floor; and when a round's centre measures a goodput that differs by more than
//!   `level_shift_ratio` from what the previous round measured at the same size (the workload
//!   changed: a change of skew moves the level as it moves the peak), the search restarts at
//!   once with `step_ratio_initial`. The level is the centre's median, not a mean over the
//!   arms: the sides' goodput depends on how wide the step is (on a sharp peak a re-probe's
//!   wider step alone lowers it), and comparing one size with itself a round later leaves
//!   only the workload to explain a change. After a move, the size that is now the centre was
//!   measured as the winning side, and that is the figure the next round compares with.
//! * A round ends early when it is already clear: every three windows (when each arm has
//!   measured as many windows as the others) it checks whether both sides are below the
//!   centre by more than `early_decision_ratio` (15%; the centre stays), or a side above the
//!   centre and the other side by more (it wins); otherwise it runs its course. The cost of a
//!   round is its windows at the sides, and a side costs the most exactly when it differs the
//!   most from the centre, where one window of each arm already tells: near a sharp peak a
//!   round takes three windows instead of nine, near a flat one (sides within 15%, so probing
//!   them costs little) it keeps all nine for noise. On the pipeline (srvc, 100 live
//!   transactions, θ = 0.8, where 50 and 72 run at about 0.7x of the peak at 55-65) the round
//!   that probes them from 60 takes 150 ms instead of 450. The search's first round, and the
//!   first after a guard or a return to the anchor, runs its course: one window an arm is all
//!   an early decision rests on, and a run's first windows measure an engine still filling up.
//!   Started at 50 there, first rounds cut short went to 42, on the plateau below the peak, in
//!   7 of 60 runs (12%), and the search then stayed near 42 for up to seconds (BENCHMARKS.md,
//!   "The start of a search and the anchor").
//! * Noisy windows (optional, `spread_tolerance_factor`): the tolerance of a round becomes the
//!   larger of `tolerance_ratio` and a factor times the spread the round measured (the median
//!   over its arms of each arm's range of window goodputs over its median). The PostgreSQL
//!   tier turns it on, at 1.5 and without early decisions (one window an arm says nothing
//!   about noise): there a window's commits vary with the shared disk's fsyncs, batch sizes
//!   25 to 100 run within a few percent to a quarter of each other, and a fixed 3% tolerance
//!   let its search walk on noise (BENCHMARKS.md, "`auto` batch and group sizes"). On a flat
//!   plant with ±15% uniform noise per window, a search from 100 spends about half of its
//!   windows within a step (1.5x) of 100 with the fixed tolerance and about 0.95 with this
//!   one (`on_a_flat_noisy_plant_a_spread_tolerance_keeps_the_search_near_where_it_was`,
//!   20 seeds), and it still converges on, and follows, the peaked plants below. A factor of
//!   2 kept the flat search as well but lost a moved peak under a drifting level. The tie
//!   rule at a bound keeps the fixed tolerance: a wider tie would move the centre off a
//!   bound on noise more often, not less. The other side of keeping still: where the windows
//!   cannot show the few percent between neighbouring sizes, a search stays within a step of
//!   where it starts, so the start must be where the best fixed size was measured. The tier
//!   starts its batch from the connection count (at 4 connections, from 100 it settled at
//!   67-100 and ran 0.954x the best fixed batch, 50; from 50 it stayed there, at 0.994x).
//! * A side is always at least one away from the rounded centre, so at small sizes a small
//!   step still compares different sizes.
//! * The anchor (optional, `return_commit_ratio_drop`; the pipeline engine's batches turn it
//!   on at 10%): the search remembers a size and the commit ratio (commits per attempt)
//!   measured there. Under optimistic concurrency control a size's commit ratio hardly moves
//!   from run to run while its goodput moves with the host (fixed 60 at 100 live transactions
//!   and θ = 0.8 aborted 34.7-35.0% of its attempts over 40 runs whose throughput spread by
//!   ±20%), so it tells a walk-off from a move. The peak there is a mesa (55-69) between two
//!   plateaus (about 61% aborts below it, 62% above); on a plateau every size ties on goodput,
//!   so a search that noise has carried onto one moves only on noise and can stay there for
//!   seconds. A round that leaves the centre at a size whose commit ratio is more than the drop
//!   below the anchor's sends the centre back to the anchor, with the step set to the ratio
//!   between the two sizes, so the next round, the *challenge*, measures the anchor against
//!   where the search had gone, side by side in interleaved windows. In a challenge only the
//!   plain test counts (the mirror side was never a candidate), so a tie keeps the anchor,
//!   and a side that wins becomes the anchor whatever its commit ratio (a larger batch that
//!   aborts more but commits more, as at θ = 0.9, takes over). Goodput is never compared
//!   across rounds, which the host's drift would decide. The first round sets the anchor at
//!   its new centre; at the anchor's own size the anchor takes each round's commit ratio;
//!   elsewhere a new centre becomes the anchor only if its commit ratio is within the
//!   tolerance of the anchor's, so the anchor cannot creep down the side of a peak; a shift of
//!   the level forgets it.
//! * Guards: a window whose abort ratio exceeds `abort_ratio_max` or whose latency exceeds
//!   `latency_us_max` moves the centre down at once, whatever goodput says (both off by default:
//!   aborted work already lowers goodput, and under optimistic concurrency control at high skew
//!   most attempts abort at every batch size).
//!
//! **Why measure the centre** (an earlier version measured only the two sides and moved to the
//! better one). A two-sided round has no outcome that means "the centre is best": near a sharp
//! peak both sides are worse than the centre, but rarely equally, and the better of two bad
//! sides wins. On the pipeline engine (srvc, 100 live transactions, θ = 0.8) batch 60 was the
//! peak, with 80 at 0.77x and 40 at 0.68x of it; from 50 that rule compared 75 with 33, moved
//! to 75, and kept wandering between 72 and 100. It also never ran the engine at the centre.
//! With the centre measured in the same round, a peak at the centre is a result the round can
//! see, and the search stays on it.
//!
//! **Why interleaved rounds** (an earlier version still compared each probe with the previous
//! one). ordo's reference machine is shared: another process can take a core for a second, so
//! the goodput of consecutive probes drifts by tens of percent for reasons that have nothing to
//! do with the batch size, and a controller that compares a probe with the last one follows the
//! drift. All three arms of a round are measured within the same few windows, and within each
//! block of six windows each arm's two windows sit symmetrically about the block's middle (up
//! first and last, the centre second and fifth, down in the middle two), so a drift that is
//! roughly linear over a round adds the same to every arm and cancels in the comparisons. With
//! an odd `windows_per_side` the round ends in half a block (up, centre, down), which leaves
//! the sides a window off balance; every other round swaps up and down, so that residue does
//! not favour the same side round after round. Interleaving also makes several knobs tunable
//! on one signal: a [`Tuner`] gives each auto knob a round in turn while the others hold their
//! centres, so no comparison mixes the moves of two knobs.
//!
//! **The price.** The engine runs a step away from the centre in two windows out of three;
//! near the peak the step is small (5% at its floor by default) and so is the cost. A round
//! cut short rests on one window an arm; a drift or a noisy window can decide it wrongly only
//! by more than 15%, and the next round measures again. A round
//! takes `3 * windows_per_side` windows, half again as many as the two-sided round, so the
//! search moves less often for the same windows per arm, and a drift has longer to build up
//! within a round. In this crate's seeded plant whose level wanders by up to 10% per window
//! (`a_drifting_level_does_not_steer_the_search_away_from_the_peak`, run over 300 seeds
//! instead of its 20), the mean share of windows near the peak after the peak moves rose from
//! 0.87 to 0.90, but the worst seed's fell from 0.75 to 0.65 (before the move, from 0.84 to
//! 0.66).
//!
//! **Where it runs.** The pipeline engine's drivers (`ordo-pipeline`, `driver/tuning.rs`: the
//! storage and validator batch caps, as one knob when both are `auto`, and the threaded
//! runtime's flush interval) and the PostgreSQL tier (`ordo-pgtier`, `tuning.rs`: batch size
//! and group size) each feed a [`Tuner`] one window at a time, from counts their clients keep,
//! and set the sizes it returns. A window there lasts a minimum time and then until it holds
//! enough commits, so that a window's goodput is not mostly counting noise. The threads
//! engine's reorder batch does the same (`ordo-threads`, `tables/driver.rs`). The write-ahead
//! log's group commit (`ordo-log`) has no size to choose: it batches by epoch, and every
//! commit of an epoch goes into that epoch's flush however many there are. Its one knob, the
//! epoch length (`--epoch-ms`), trades acknowledgement latency (about one epoch) for nothing
//! that goodput can see: on ycsb and SmallBank throughput moved by less than the machine's
//! noise from 1 to 40 ms (BENCHMARKS.md, "Durability"), so a goodput search there would walk
//! on noise, and the epoch stays a fixed, documented setting.
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
/// Largest number of windows an arm of a round may span.
pub const WINDOWS_PER_SIDE_MAX: u32 = 64;
/// Largest history a configuration may ask for.
pub const HISTORY_LEN_MAX: usize = 1 << 16;
/// Largest multiplicative step a configuration may name.
pub const STEP_RATIO_MAX: f64 = 4.0;
/// Largest [`ControllerConfig::spread_tolerance_factor`]: a few spreads above the centre is
/// more than any real gain between neighbouring sizes.
pub const SPREAD_TOLERANCE_FACTOR_MAX: f64 = 4.0;

#[cfg(test)]
mod tests;
