//! The tier's side of the batch-size controller: what the tier counts per window, the sizes
//! its batcher, planner and connections read, and the window logic between them. No I/O: the
//! driver's ticker calls [`TierTuner::observe`] with the time and the counts.
//!
//! ```text
//!  settle / retry ──> WindowCounts (commits, failed attempts, latency sum; Cells, one thread)
//!                          │ every window_us (once it holds window_commits_min commits)
//!                          ▼
//!                     TierTuner ──> Tuner (ordo-batching) ──> LiveSizes (batch, group)
//!                                                               │ read by the batcher for the
//!                                                               │ next batch, the planner for
//!                                                               │ its queue length, the lanes for
//!                                                               ▼ their chunk and group split
//! ```

use std::cell::Cell;

use ordo_batching::{Tuner, WindowObservation};
use ordo_harness::BatchSizeSample;

use crate::error::{PgError, Result};
use crate::run::{KNOB_BATCH, KNOB_GROUP, TierConfig};

/// What the tier counted since the run started (one thread: `Cell`s).
#[derive(Debug, Default)]
pub struct WindowCounts {
    committed: Cell<u64>,
    aborted: Cell<u64>,
    latency_us_sum: Cell<u64>,
}

impl WindowCounts {
    pub fn commit(&self, latency_us: u64) {
        self.committed.set(self.committed.get() + 1);
        self.latency_us_sum.set(self.latency_us_sum.get() + latency_us);
    }

    /// A failed attempt (serialization failure, deadlock, lost connection, or deferred).
    pub fn abort(&self) {
        self.aborted.set(self.aborted.get() + 1);
    }

    fn totals(&self) -> (u64, u64, u64) {
        (self.committed.get(), self.aborted.get(), self.latency_us_sum.get())
    }
}

/// The batch and group sizes in force, set by the tuner and read where they are used.
#[derive(Debug)]
pub struct LiveSizes {
    batch: Cell<usize>,
    group: Cell<usize>,
}

impl LiveSizes {
    /// The sizes a configuration starts with.
    pub fn initial(config: &TierConfig) -> Self {
        LiveSizes { batch: Cell::new(config.initial_batch_size()), group: Cell::new(config.effective_group_max()) }
    }

    pub fn batch(&self) -> usize {
        self.batch.get()
    }

    pub fn group(&self) -> usize {
        self.group.get()
    }
}

/// A tuner fed one window at a time from the tier's counts. A window lasts at least
/// `tuning.window_us`, and goes on until it holds `tuning.window_commits_min` commits or has
/// lasted `tuning.window_us_max`.
#[derive(Debug)]
pub struct TierTuner {
    tuner: Tuner,
    window_us: u64,
    window_commits_min: u64,
    window_us_max: u64,
    window_start_us: Option<u64>,
    next_window_us: u64,
    last: (u64, u64, u64),
}

impl TierTuner {
    /// A tuner over `config`'s knobs, or `None` when none of them is `auto`.
    pub fn new(config: &TierConfig) -> Result<Option<Self>> {
        let tuner = Tuner::new(&config.knobs(), config.tuning.history_len_max)
            .map_err(|e| PgError::invalid("tuning", e.to_string()))?;
        Ok(tuner.adapts().then_some(TierTuner {
            tuner,
            window_us: config.tuning.window_us,
            window_commits_min: config.tuning.window_commits_min,
            window_us_max: config.tuning.window_us_max,
            window_start_us: None,
            next_window_us: 0,
            last: (0, 0, 0),
        }))
    }

    /// When the current window may end.
    pub fn next_window_us(&self) -> u64 {
        self.next_window_us
    }

    /// At `now_us`: closes the window if it is long enough and holds enough commits (the first
    /// call only opens one) and sets the sizes the tuner chose into `sizes`; otherwise looks
    /// again one `window_us` later.
    pub fn observe(&mut self, now_us: u64, counts: &WindowCounts, sizes: &LiveSizes) {
        let totals = counts.totals();
        let committed = totals.0 - self.last.0;
        let lasted_us = self.window_start_us.map_or(0, |start| now_us.saturating_sub(start));
        self.next_window_us = now_us + self.window_us;
        if self.window_start_us.is_some() && committed < self.window_commits_min && lasted_us < self.window_us_max {
            return;
        }
        let aborted = totals.1 - self.last.1;
        let latency_us = (totals.2 - self.last.2).checked_div(committed).unwrap_or(0);
        self.last = totals;
        self.window_start_us = Some(now_us);
        self.tuner.observe(WindowObservation { now_us, committed, aborted, latency_us });
        if let Some(batch) = self.tuner.size_of(KNOB_BATCH) {
            sizes.batch.set(batch as usize);
        }
        if let Some(group) = self.tuner.size_of(KNOB_GROUP) {
            sizes.group.set(group as usize);
        }
    }

    /// The sizes chosen over time, for the run's result.
    pub fn samples(&self) -> Vec<BatchSizeSample> {
        let names = self.tuner.names();
        let of = |sizes: &[u32], name: &str| names.iter().position(|&n| n == name).map(|index| sizes[index]);
        self.tuner
            .history()
            .iter()
            .map(|(t_us, sizes)| BatchSizeSample {
                t_ms: t_us / 1000,
                batch: of(sizes, KNOB_BATCH),
                group: of(sizes, KNOB_GROUP),
                ..BatchSizeSample::default()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use ordo_batching::BatchSize;

    use super::*;
    use crate::connection::SessionConfig;
    use crate::dispatch::Mode;

    fn config() -> TierConfig {
        TierConfig::new(SessionConfig {
            url: "postgres://localhost/x".into(),
            isolation: crate::Isolation::Serializable,
            synchronous_commit: None,
            deadlock_timeout_ms: None,
        })
    }

    #[test]
    fn fixed_sizes_need_no_tuner_and_nobatch_has_no_knobs() {
        let mut fixed = config();
        fixed.batch_size = BatchSize::fixed(30).unwrap();
        fixed.group_max = BatchSize::fixed(4).unwrap();
        assert!(TierTuner::new(&fixed).unwrap().is_none());
        let nobatch = TierConfig { mode: Mode::NoBatch, ..config() };
        assert!(nobatch.knobs().is_empty());
        assert_eq!(nobatch.effective_group_max(), 1, "auto is 1 where nothing can be grouped");
    }

    #[test]
    fn an_auto_batch_starts_with_the_square_root_of_the_connections() {
        let start = |connections: usize, from_connections: bool| {
            let mut config = TierConfig { connections, ..config() };
            config.tuning.batch_initial_from_connections = from_connections;
            (config.initial_batch_size(), config.effective_clients())
        };
        assert_eq!(start(1, true), (25, 200));
        assert_eq!(start(2, true), (35, 200));
        assert_eq!(start(4, true), (50, 200), "the best fixed batch measured at 4 connections");
        assert_eq!(start(9, true), (75, 200));
        assert_eq!(start(16, true), (100, 200), "the top of the search from 16 connections up");
        assert_eq!(start(1000, true), (100, 200));
        assert_eq!(start(4, false), (100, 200), "off: the search's own initial size");
        let mut narrow = TierConfig { connections: 1, ..config() };
        narrow.tuning.batch.batch_size_min = 40;
        assert_eq!(narrow.initial_batch_size(), 40, "within the search's bounds");
        let fixed = TierConfig { connections: 4, batch_size: BatchSize::fixed(30).unwrap(), ..config() };
        assert_eq!((fixed.initial_batch_size(), fixed.effective_clients()), (30, 60), "a fixed size is kept");
    }

    #[test]
    fn windows_wait_for_enough_commits_and_set_the_sizes() {
        let config = config();
        let mut tuner = TierTuner::new(&config).unwrap().expect("auto by default");
        let counts = WindowCounts::default();
        let sizes = LiveSizes::initial(&config);
        assert_eq!((sizes.batch(), sizes.group()), (100, 64));
        tuner.observe(0, &counts, &sizes);
        assert_eq!(sizes.batch(), 100, "the first round starts on its up side, capped at the search's top: 100");
        assert_eq!(sizes.group(), 64, "the group knob holds while the batch knob's round runs");
        // Too few commits: the window goes on.
        counts.commit(1000);
        tuner.observe(250_000, &counts, &sizes);
        assert_eq!(tuner.samples().len(), 1);
        for _ in 0..3000 {
            counts.commit(1000);
        }
        tuner.observe(500_000, &counts, &sizes);
        assert_eq!(sizes.batch(), 100, "the first window closed: the round's second measures the centre");
        for _ in 0..3000 {
            counts.commit(1000);
        }
        tuner.observe(750_000, &counts, &sizes);
        assert_eq!(sizes.batch(), 67, "and its third the down side, 100 / 1.5");
        assert_eq!(sizes.group(), 64, "the group knob still holds");
        let samples = tuner.samples();
        assert_eq!((samples[0].batch, samples[0].group), (Some(100), Some(64)));
        assert!(samples[0].storage.is_none());
    }
}
