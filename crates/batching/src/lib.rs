//! Adaptive batch size: choose a batch-size cap within `[min, max]` online.
//!
//! The paper (Ding, Kot, Gehrke, PVLDB 2018) measures a sweet spot in batch size (§5.3,
//! storage and validator batching; Table 1: larger batches give reordering more freedom but
//! add latency), and §7 names adaptive batching, adjusting the size to the workload, as
//! future work. Our BENCHMARKS.md finds the best fixed size moving with skew and
//! concurrency. This crate is that choice as an I/O-free core (STYLE.md rule 1): a driver feeds one
//! [`WindowObservation`] per measurement window (commits, aborts, a latency figure and the
//! explicit `now_ms`) and reads back [`AdaptiveBatchSize::batch_size`].
//!
//! # Mechanism: hill climbing on goodput
//!
//! ```text
//!  goodput            peak
//!    ^                 __
//!    |              _-    -_
//!    |           _-   <->   -_      steps shrink (sqrt of the ratio) at every reversal,
//!    |        _-  ->->        -_    and grow back to the re-probe step every
//!    |     _-                   -_  `reprobe_every_probes` probes, so a moved peak is found
//!    +------------------------------> batch size (log scale)
//! ```
//!
//! * A *probe* holds one size for `windows_per_probe` windows and scores it by the median
//!   goodput (commits per second) of those windows, so one noisy window cannot steer it.
//! * Steps are multiplicative (`size *= step_ratio` or `/=`): batch sizes that matter span
//!   10 to 150 and more, so the search is on a log scale.
//! * If a probe beats the previous one by more than `tolerance_ratio`, the direction is kept;
//!   if it is worse by more than the tolerance, the direction reverses and the step is damped
//!   (its log halves, down to `step_ratio_min`); within the tolerance the step is damped and
//!   the direction kept, so the controller settles into a small oscillation around the peak.
//! * Guards: a window whose abort ratio exceeds `abort_ratio_max` or whose latency exceeds
//!   `latency_us_max` forces a step down at once, whatever goodput says.
//! * Re-probing: after `reprobe_every_probes` probes the step goes back to
//!   `step_ratio_reprobe`, so a change of skew (which moves the peak) is followed.
//!
//! The anchors: TiDB's PD client grows and shrinks its timestamp-request batch additively
//! from what it observes; Omid closes a commit batch on size or on idle time; PostgreSQL's
//! `commit_delay` waits for siblings only when enough of them are active. All three adapt a
//! batch to load with a simple local rule. Here the quantity of interest (goodput) has one
//! peak in batch size (small batches lose the reordering benefit, large ones add conflicts
//! and wait), which is what hill climbing needs; multiplicative steps reach either end of
//! `[10, 150]` in a few probes where additive ones would need dozens.
//!
//! # Invariants
//!
//! * `min <= batch_size() <= max` at all times (asserted after every decision).
//! * The size history holds at most `history_len_max` entries: when full it drops every
//!   other entry and records half as often, so it spans the whole run at coarser grain.
//!
//! Hand-written: no crate implements this small rule; it needs only `thiserror`.

use thiserror::Error;

/// Smallest batch-size cap a configuration may name.
pub const BATCH_SIZE_MIN: u32 = 1;
/// Largest batch-size cap a configuration may name.
pub const BATCH_SIZE_MAX: u32 = 100_000;
/// Largest number of windows a probe may span.
pub const WINDOWS_PER_PROBE_MAX: u32 = 64;
/// Largest size history a configuration may ask for.
pub const HISTORY_LEN_MAX: usize = 1 << 16;
/// Largest multiplicative step a configuration may name.
pub const STEP_RATIO_MAX: f64 = 4.0;

/// Why a [`ControllerConfig`] is refused.
#[derive(Debug, Error, PartialEq)]
pub enum ConfigError {
    /// `min`, `initial` and `max` are not ordered within the allowed bounds.
    #[error(
        "batch sizes must satisfy {BATCH_SIZE_MIN} <= min <= initial <= max <= {BATCH_SIZE_MAX}, got min {min}, initial {initial}, max {max}"
    )]
    SizeBounds { min: u32, initial: u32, max: u32 },
    /// A step ratio is not in `(1, STEP_RATIO_MAX]` or the minimum exceeds the others.
    #[error(
        "step ratios must satisfy 1 < step_ratio_min <= step_ratio_reprobe, step_ratio_initial <= {STEP_RATIO_MAX}"
    )]
    StepRatios,
    /// The tolerance is not in `[0, 1)`.
    #[error("tolerance_ratio must be in [0, 1), got {0}")]
    Tolerance(f64),
    /// `windows_per_probe` is 0 or above the bound.
    #[error("windows_per_probe must be in 1..={WINDOWS_PER_PROBE_MAX}, got {0}")]
    WindowsPerProbe(u32),
    /// `reprobe_every_probes` is 0.
    #[error("reprobe_every_probes must be at least 1")]
    ReprobeEvery,
    /// The abort-ratio guard is not in `(0, 1]`.
    #[error("abort_ratio_max must be in (0, 1], got {0}")]
    AbortRatio(f64),
    /// The history length is 0 or above the bound.
    #[error("history_len_max must be in 2..={HISTORY_LEN_MAX}, got {0}")]
    HistoryLen(usize),
}

/// How the controller searches. Every field has a unit or is a ratio.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerConfig {
    /// Smallest cap the controller may choose.
    pub batch_size_min: u32,
    /// Largest cap the controller may choose.
    pub batch_size_max: u32,
    /// Cap before the first observation.
    pub batch_size_initial: u32,
    /// First multiplicative step.
    pub step_ratio_initial: f64,
    /// Floor of the damped step.
    pub step_ratio_min: f64,
    /// Step restored at every re-probe.
    pub step_ratio_reprobe: f64,
    /// Relative goodput change below which two probes count as equal.
    pub tolerance_ratio: f64,
    /// Windows one probe spans (scored by their median goodput).
    pub windows_per_probe: u32,
    /// Probes between two re-probes.
    pub reprobe_every_probes: u32,
    /// Abort ratio (aborts / attempts) above which the size steps down at once; `None` = off.
    pub abort_ratio_max: Option<f64>,
    /// Window latency above which the size steps down at once; `None` = off.
    pub latency_us_max: Option<u64>,
    /// Most `(t_ms, size)` entries the history keeps.
    pub history_len_max: usize,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            batch_size_min: 10,
            batch_size_max: 150,
            batch_size_initial: 40,
            step_ratio_initial: 1.5,
            step_ratio_min: 1.05,
            step_ratio_reprobe: 1.25,
            tolerance_ratio: 0.03,
            windows_per_probe: 3,
            reprobe_every_probes: 12,
            abort_ratio_max: None,
            latency_us_max: None,
            history_len_max: 256,
        }
    }
}

impl ControllerConfig {
    /// Checks every field against its bound.
    ///
    /// # Errors
    /// The first field out of bounds, as a [`ConfigError`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        let (min, initial, max) = (self.batch_size_min, self.batch_size_initial, self.batch_size_max);
        if !(BATCH_SIZE_MIN <= min && min <= initial && initial <= max && max <= BATCH_SIZE_MAX) {
            return Err(ConfigError::SizeBounds { min, initial, max });
        }
        let ratio_ok = |r: f64| r > 1.0 && r <= STEP_RATIO_MAX;
        if !(ratio_ok(self.step_ratio_min)
            && ratio_ok(self.step_ratio_initial)
            && ratio_ok(self.step_ratio_reprobe)
            && self.step_ratio_min <= self.step_ratio_initial
            && self.step_ratio_min <= self.step_ratio_reprobe)
        {
            return Err(ConfigError::StepRatios);
        }
        if !(0.0..1.0).contains(&self.tolerance_ratio) {
            return Err(ConfigError::Tolerance(self.tolerance_ratio));
        }
        if self.windows_per_probe == 0 || self.windows_per_probe > WINDOWS_PER_PROBE_MAX {
            return Err(ConfigError::WindowsPerProbe(self.windows_per_probe));
        }
        if self.reprobe_every_probes == 0 {
            return Err(ConfigError::ReprobeEvery);
        }
        if let Some(ratio) = self.abort_ratio_max
            && !(ratio > 0.0 && ratio <= 1.0)
        {
            return Err(ConfigError::AbortRatio(ratio));
        }
        if self.history_len_max < 2 || self.history_len_max > HISTORY_LEN_MAX {
            return Err(ConfigError::HistoryLen(self.history_len_max));
        }
        Ok(())
    }
}

/// What the driver measured over one window ending at `now_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowObservation {
    /// End of the window (any monotonic clock, milliseconds).
    pub now_ms: u64,
    /// Transactions committed in the window.
    pub committed: u64,
    /// Transactions aborted in the window.
    pub aborted: u64,
    /// A latency figure of the window (p95 or mean), microseconds.
    pub latency_us: u64,
}

/// Why the last decision was taken (for tests and reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The probe is still collecting windows; the size is unchanged.
    Measuring,
    /// Goodput improved (or first probe): step on in the same direction.
    Continue,
    /// Goodput dropped: reverse and damp the step.
    Reverse,
    /// Goodput equal within tolerance: damp the step, keep the direction.
    Plateau,
    /// An abort or latency guard fired: step down at once.
    Guard,
}

/// The controller. See the module essay.
#[derive(Debug, Clone)]
pub struct AdaptiveBatchSize {
    config: ControllerConfig,
    size: f64,
    growing: bool,
    step_ratio: f64,
    previous_goodput: Option<f64>,
    probe_goodputs: Vec<f64>,
    probes_since_reprobe: u32,
    window_start_ms: Option<u64>,
    history: Vec<(u64, u32)>,
    history_stride: u64,
    decisions_seen: u64,
}

impl AdaptiveBatchSize {
    /// A controller at `batch_size_initial`.
    ///
    /// # Errors
    /// The configuration's [`ConfigError`].
    pub fn new(config: ControllerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let windows = config.windows_per_probe as usize;
        Ok(Self {
            size: f64::from(config.batch_size_initial),
            growing: true,
            step_ratio: config.step_ratio_initial,
            previous_goodput: None,
            probe_goodputs: Vec::with_capacity(windows),
            probes_since_reprobe: 0,
            window_start_ms: None,
            history: Vec::new(),
            history_stride: 1,
            decisions_seen: 0,
            config,
        })
    }

    /// The cap to use now.
    #[must_use]
    pub fn batch_size(&self) -> u32 {
        // In [min, max] by construction (clamped after every step); rounding keeps it there.
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "size is clamped to [min, max] of u32"
        )]
        let size = self.size.round() as u32;
        size
    }

    /// The current multiplicative step.
    #[must_use]
    pub fn step_ratio(&self) -> f64 {
        self.step_ratio
    }

    /// The `(t_ms, size)` decisions recorded so far, oldest first, at most `history_len_max`.
    #[must_use]
    pub fn history(&self) -> &[(u64, u32)] {
        &self.history
    }

    /// Feeds one window and returns what was decided. The first observation only opens the
    /// first window (its length is unknown); windows of zero length are ignored.
    pub fn observe(&mut self, observation: WindowObservation) -> Decision {
        let Some(start_ms) = self.window_start_ms.replace(observation.now_ms) else {
            self.record(observation.now_ms);
            return Decision::Measuring;
        };
        let Some(elapsed_ms) = observation.now_ms.checked_sub(start_ms).filter(|&ms| ms > 0) else {
            self.window_start_ms = Some(start_ms.max(observation.now_ms));
            return Decision::Measuring;
        };
        #[expect(clippy::cast_precision_loss, reason = "counts and milliseconds are far below 2^52")]
        let goodput = observation.committed as f64 * 1000.0 / elapsed_ms as f64;

        let decision = if self.guard_fires(&observation) {
            self.growing = false;
            self.probe_goodputs.clear();
            self.previous_goodput = None;
            self.step(self.step_ratio);
            Decision::Guard
        } else {
            self.probe_goodputs.push(goodput);
            if self.probe_goodputs.len() < self.config.windows_per_probe as usize {
                return Decision::Measuring;
            }
            let median = median(&mut self.probe_goodputs);
            self.probe_goodputs.clear();
            self.decide(median)
        };
        self.record(observation.now_ms);
        decision
    }

    fn guard_fires(&self, observation: &WindowObservation) -> bool {
        let attempts = observation.committed + observation.aborted;
        #[expect(clippy::cast_precision_loss, reason = "counts are far below 2^52")]
        let aborts_high = self
            .config
            .abort_ratio_max
            .is_some_and(|max| attempts > 0 && observation.aborted as f64 / attempts as f64 > max);
        let latency_high = self.config.latency_us_max.is_some_and(|max| observation.latency_us > max);
        (aborts_high || latency_high) && self.batch_size() > self.config.batch_size_min
    }

    fn decide(&mut self, goodput: f64) -> Decision {
        let tolerance = self.config.tolerance_ratio;
        let decision = match self.previous_goodput {
            None => Decision::Continue,
            Some(previous) if goodput > previous * (1.0 + tolerance) => Decision::Continue,
            Some(previous) if goodput < previous * (1.0 - tolerance) => Decision::Reverse,
            Some(_) => Decision::Plateau,
        };
        match decision {
            Decision::Reverse => {
                self.growing = !self.growing;
                self.damp();
            }
            Decision::Plateau => self.damp(),
            _ => {}
        }
        self.previous_goodput = Some(goodput);
        self.probes_since_reprobe += 1;
        if self.probes_since_reprobe >= self.config.reprobe_every_probes {
            self.probes_since_reprobe = 0;
            self.step_ratio = self.step_ratio.max(self.config.step_ratio_reprobe);
        }
        self.step(self.step_ratio);
        decision
    }

    /// Halves the step's logarithm, down to the floor.
    fn damp(&mut self) {
        self.step_ratio = self.step_ratio.sqrt().max(self.config.step_ratio_min);
    }

    /// Moves one step in the current direction; at a bound, turns around.
    fn step(&mut self, ratio: f64) {
        let (min, max) = (f64::from(self.config.batch_size_min), f64::from(self.config.batch_size_max));
        let next = if self.growing { self.size * ratio } else { self.size / ratio };
        if next >= max {
            self.growing = false;
        } else if next <= min {
            self.growing = true;
        }
        self.size = next.clamp(min, max);
        let size = self.batch_size();
        assert!(
            (self.config.batch_size_min..=self.config.batch_size_max).contains(&size),
            "batch size {size} left its bounds"
        );
    }

    /// Records `(now_ms, size)` every `history_stride`-th decision; halves the history when full.
    fn record(&mut self, now_ms: u64) {
        self.decisions_seen += 1;
        if !(self.decisions_seen - 1).is_multiple_of(self.history_stride) {
            return;
        }
        if self.history.len() >= self.config.history_len_max {
            let mut index = 0;
            self.history.retain(|_| {
                index += 1;
                index % 2 == 1
            });
            self.history_stride *= 2;
        }
        self.history.push((now_ms, self.batch_size()));
    }
}

/// Median of a non-empty slice (upper median for even lengths); sorts it in place.
fn median(values: &mut [f64]) -> f64 {
    assert!(!values.is_empty(), "median of no windows");
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[cfg(test)]
mod tests;
