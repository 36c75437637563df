//! The drivers' side of the batch-size controller: one measurement window at a time, what the
//! clients tallied goes into an [`ordo_batching::Tuner`], and the sizes it chooses go back to
//! the components.
//!
//! ```text
//!  clients ──Tally (commits, aborted attempts, latency sum; per-client slots)──┐
//!                                                    every window_us, driver: │
//!        WindowTuner: delta of the tallies ──> WindowObservation ──> Tuner ───┘
//!                          │ sizes changed
//!                          ▼
//!  simulation: set on the nodes at once  |  threaded: published to the workers, which set them
//!                                        |  on their nodes at their next loop iteration
//! ```
//!
//! Components never see the controller: [`crate::node::Node::resize`] sets a storage
//! partition's or the validator's cap, and the threaded runtime's workers read their flush
//! interval. Which knobs exist is [`PipelineConfig::knobs`]'s decision.

use ordo_batching::{Tuner, WindowObservation};
use ordo_harness::BatchSizeSample;

use crate::client::Tally;
use crate::config::{ConfigError, KNOB_BATCH, KNOB_FLUSH, KNOB_STORAGE, KNOB_VALIDATOR, PipelineConfig};

/// The sizes every batching point uses now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub storage: usize,
    pub validator: usize,
    pub messages_per_flush: usize,
}

impl Sizes {
    /// The sizes a configuration starts with.
    pub fn initial(config: &PipelineConfig) -> Self {
        Sizes {
            storage: config.initial_storage_batch_size(),
            validator: config.initial_validator_batch_size(),
            messages_per_flush: config.initial_messages_per_flush(),
        }
    }
}

/// The sizes a run's components start with: those of the tuner's first window, or the
/// configuration's without a tuner. The components are built with the configuration's
/// ([`Sizes::initial`]: an `auto` knob's centre), but the tuner's first window measures a side
/// of its first round; a run left at the centre would measure the centre in a window scored
/// as that side, and with early decisions one window is all a side gets (at 100 live
/// transactions and θ = 0.7-0.8, the first round of a run built at the centre went to 42, on
/// the plateau below the peak at 60, in 7 of 60 runs; BENCHMARKS.md, "The start of a search
/// and the anchor").
pub fn starting_sizes(config: &PipelineConfig, tuner: Option<&WindowTuner>) -> Sizes {
    tuner.map_or_else(|| Sizes::initial(config), WindowTuner::sizes)
}

/// A tuner fed one window at a time from the clients' tallies. A window lasts at least
/// `tuning.window_us`, and goes on until it holds `tuning.window_commits_min` commits or has
/// lasted `tuning.window_us_max`.
#[derive(Debug)]
pub struct WindowTuner {
    tuner: Tuner,
    window_us: u64,
    window_commits_min: u64,
    window_us_max: u64,
    window_start_us: u64,
    next_window_us: u64,
    last: Tally,
    sizes: Sizes,
    /// Where the run is: before its first call, in its first window (which the tuner does not
    /// see), or past it.
    phase: Phase,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Fresh,
    Warming,
    Tuning,
}

impl WindowTuner {
    /// A tuner over `config`'s batching points (the flush interval only `with_flush`), or
    /// `None` when none of them is `auto`.
    pub fn new(config: &PipelineConfig, with_flush: bool) -> Result<Option<Self>, ConfigError> {
        let knobs: Vec<_> = config.knobs().into_iter().filter(|knob| with_flush || knob.name != KNOB_FLUSH).collect();
        let tuner = Tuner::new(&knobs, config.tuning.history_len_max)
            .map_err(|e| ConfigError::Invalid { field: "tuning", reason: e.to_string() })?;
        if !tuner.adapts() {
            return Ok(None);
        }
        let mut tuner = WindowTuner {
            tuner,
            window_us: config.tuning.window_us,
            window_commits_min: config.tuning.window_commits_min,
            window_us_max: config.tuning.window_us_max,
            window_start_us: 0,
            next_window_us: 0,
            last: Tally::default(),
            sizes: Sizes::initial(config),
            phase: Phase::Fresh,
        };
        tuner.refresh_sizes();
        Ok(Some(tuner))
    }

    /// When the current window may end (it ends there if it holds enough commits).
    pub fn next_window_us(&self) -> u64 {
        self.next_window_us
    }

    /// At `now_us`, with the clients' totals `tally`: closes the window if it is long enough
    /// and holds enough commits, otherwise looks again one `window_us` later. Returns whether a
    /// size changed.
    ///
    /// The first call starts the run's first window, which the tuner does not see: it lasts
    /// `window_us` and measures the engine filling up (every client starts a transaction at
    /// once) more than the size it runs. The second call, at its end, opens the tuner's first
    /// window.
    pub fn observe(&mut self, now_us: u64, tally: Tally) -> bool {
        match self.phase {
            Phase::Fresh => {
                self.phase = Phase::Warming;
                self.next_window_us = now_us + self.window_us;
                return false;
            }
            Phase::Warming => self.phase = Phase::Tuning,
            Phase::Tuning => {}
        }
        let committed = tally.committed - self.last.committed;
        let lasted_us = now_us.saturating_sub(self.window_start_us);
        if !self.tuner.history().is_empty() && committed < self.window_commits_min && lasted_us < self.window_us_max {
            self.next_window_us = now_us + self.window_us;
            return false;
        }
        self.window_start_us = now_us;
        let delta = Tally {
            committed: tally.committed - self.last.committed,
            aborted: tally.aborted - self.last.aborted,
            latency_us_sum: tally.latency_us_sum - self.last.latency_us_sum,
        };
        self.last = tally;
        self.next_window_us = now_us + self.window_us;
        let changed = self.tuner.observe(WindowObservation {
            now_us,
            committed: delta.committed,
            aborted: delta.aborted,
            latency_us: delta.latency_us_sum.checked_div(delta.committed).unwrap_or(0),
        });
        if changed {
            self.refresh_sizes();
        }
        changed
    }

    pub fn sizes(&self) -> Sizes {
        self.sizes
    }

    /// The sizes chosen over time, for the run's result.
    pub fn samples(&self) -> Vec<BatchSizeSample> {
        let names = self.tuner.names();
        let of = |sizes: &[u32], name: &str| {
            let position = |name: &str| names.iter().position(|&n| n == name);
            let batch = || if name == KNOB_FLUSH { None } else { position(KNOB_BATCH) };
            position(name).or_else(batch).map(|index| sizes[index])
        };
        self.tuner
            .history()
            .iter()
            .map(|(t_us, sizes)| BatchSizeSample {
                t_ms: t_us / 1000,
                storage: of(sizes, KNOB_STORAGE),
                validator: of(sizes, KNOB_VALIDATOR),
                flush: of(sizes, KNOB_FLUSH),
                ..BatchSizeSample::default()
            })
            .collect()
    }

    fn refresh_sizes(&mut self) {
        let tuner = &self.tuner;
        let size = |name: &str, current: usize| {
            let batch = || if name == KNOB_FLUSH { None } else { tuner.size_of(KNOB_BATCH) };
            tuner.size_of(name).or_else(batch).map_or(current, |size| size as usize)
        };
        self.sizes = Sizes {
            storage: size(KNOB_STORAGE, self.sizes.storage),
            validator: size(KNOB_VALIDATOR, self.sizes.validator),
            messages_per_flush: size(KNOB_FLUSH, self.sizes.messages_per_flush),
        };
    }
}

#[cfg(test)]
mod tests {
    use ordo_batching::BatchSize;

    use super::*;
    use crate::config::Mode;

    #[test]
    fn only_auto_knobs_make_a_tuner_and_fixed_ones_keep_their_size() {
        let fixed = BatchSize::fixed(25).unwrap();
        let all_fixed = PipelineConfig {
            storage_batch_size: fixed,
            validator_batch_size: fixed,
            messages_per_flush: fixed,
            ..PipelineConfig::default()
        };
        assert!(WindowTuner::new(&all_fixed, true).unwrap().is_none());
        let flush_only = PipelineConfig { messages_per_flush: BatchSize::Auto, ..all_fixed.clone() };
        assert!(WindowTuner::new(&flush_only, false).unwrap().is_none(), "the simulation has no flushes");
        let mut tuner = WindowTuner::new(&flush_only, true).unwrap().expect("flush is auto");
        // The first round starts on its up side: 256 (the mode's measured best) * 1.5.
        assert_eq!(tuner.sizes(), Sizes { storage: 25, validator: 25, messages_per_flush: 384 });
        let mut t_us = 0;
        let mut tally = Tally::default();
        tuner.observe(t_us, tally);
        let mut flushes = Vec::new();
        // The centre goes 256, 171, 114, 57, 28, then to the bound (16): five rounds of nine
        // windows; the loop runs six.
        for _ in 0..54 {
            t_us = tuner.next_window_us();
            // Goodput falls as the flush interval grows.
            tally.committed += 1_000_000 / tuner.sizes().messages_per_flush as u64;
            tuner.observe(t_us, tally);
            assert_eq!((tuner.sizes().storage, tuner.sizes().validator), (25, 25));
            flushes.push(tuner.sizes().messages_per_flush);
        }
        let samples = tuner.samples();
        assert_eq!(samples[0].flush, Some(256));
        assert_eq!(samples.last().unwrap().flush, Some(16), "the centre went down to the bound: {flushes:?}");
        assert_eq!(samples.last().unwrap().storage, Some(25), "fixed knobs report their size");
        assert!(samples.windows(2).all(|pair| pair[0].t_ms <= pair[1].t_ms));
    }

    #[test]
    fn one_batch_knob_sets_both_caps() {
        let config = PipelineConfig { concurrency: 100, ..PipelineConfig::default() };
        let mut tuner = WindowTuner::new(&config, false).unwrap().unwrap();
        assert_eq!(tuner.tuner.names(), [KNOB_BATCH]);
        let sizes = tuner.sizes();
        assert_eq!(sizes.storage, sizes.validator);
        assert_eq!(sizes.storage, 60, "the first round's up side: half the concurrency (50) * 1.2");
        tuner.observe(0, Tally::default());
        assert!(tuner.samples().is_empty(), "the run's first window is not the tuner's");
        tuner.observe(tuner.next_window_us(), Tally { committed: 5_000, ..Tally::default() });
        assert_eq!((tuner.samples()[0].storage, tuner.samples()[0].validator), (Some(50), Some(50)));
        assert_eq!(tuner.samples()[0].t_ms, 50, "the tuner opens its first window as the run's ends");
    }

    #[test]
    fn a_run_starts_at_the_size_of_the_tuners_first_window() {
        let config = PipelineConfig { concurrency: 100, ..PipelineConfig::default() };
        let tuner = WindowTuner::new(&config, true).unwrap().unwrap();
        let centre = Sizes::initial(&config);
        assert_eq!((centre.storage, centre.validator), (50, 50));
        let start = starting_sizes(&config, Some(&tuner));
        assert_eq!(start, tuner.sizes());
        assert_eq!((start.storage, start.validator), (60, 60), "the first round's up side");
        let fixed = BatchSize::fixed(25).unwrap();
        let fixed = PipelineConfig {
            storage_batch_size: fixed,
            validator_batch_size: fixed,
            messages_per_flush: fixed,
            ..config
        };
        assert_eq!(starting_sizes(&fixed, None), Sizes::initial(&fixed));
    }

    #[test]
    fn a_mode_without_a_batching_point_has_no_knob_for_it() {
        let config = PipelineConfig { mode: Mode::Vc, ..PipelineConfig::default() };
        let mut tuner = WindowTuner::new(&config, true).unwrap().unwrap();
        assert_eq!(tuner.tuner.names(), [KNOB_VALIDATOR, KNOB_FLUSH]);
        tuner.observe(0, Tally::default());
        tuner.observe(tuner.next_window_us(), Tally::default());
        assert_eq!(tuner.samples()[0].storage, None);
    }
}
