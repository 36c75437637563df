//! # ordo-harness: how every ordo engine is measured and reported
//!
//! The pipeline engine, the thread-per-worker engine and the PostgreSQL tier all plug into the
//! same measurement, so their numbers mean the same thing:
//!
//! ```text
//!  engine threads ──Recorder (one per thread, no sharing)──┐
//!                                                           ├─ merge ─> Measurement ─> RunResult
//!  driver: Window (warm-up | measured | cool-down)  ────────┘                  │
//!                                                                              ├─> table (stdout)
//!                                   --runs N: Aggregate (mean, std) <──────────┼─> --json FILE
//!                                                                              └─> --csv FILE
//! ```
//!
//! * [`metrics`]: per-thread recorders (commits, aborts by cause, latency HDR histogram,
//!   restarts, batch statistics) that count only inside the measurement window.
//! * [`result`]: the result record whose JSON field names are the contract every engine and
//!   later tooling share (`engine`, `workload`, `mode`, `theta`, `commits`, `throughput_tps`,
//!   `abort_rate`, `latency_us` {...}), and, for adaptive runs, the batch sizes chosen over
//!   time (`batch_sizes`).
//! * [`output`]: text tables, JSON and CSV.
//! * [`progress`]: a progress bar with the time left for timed runs.
//! * [`clock`]: the run clock every worker reads once per commit ([`RunClock`]).
//!
//! ## Why these crates
//! `hdrhistogram` keeps latencies to three significant digits over a range of microseconds to
//! a minute in fixed memory, and merges per-thread histograms exactly; a histogram is what the
//! percentiles need, and writing one well is its own project. `quanta` reads the CPU's
//! time-stamp counter, calibrated against the monotonic clock, for about a third of what
//! `Instant::now` costs here, and falls back to the monotonic clock where the counter cannot be
//! trusted (see [`clock`] for the measurement). `indicatif` draws the progress bar; `csv` and
//! `serde_json` write the results.

pub mod affinity;
pub mod clock;
pub mod metrics;
pub mod output;
pub mod progress;
pub mod result;

pub use clock::RunClock;
pub use metrics::{AbortCause, Recorder, Window};
pub use result::{
    Aggregate, BatchSizeSample, Description, LatencySummary, RowRates, RunInfo, RunResult, median, median_interval_95,
};
