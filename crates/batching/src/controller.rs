//! One knob's search: rounds that measure the centre and a side either way of it, in
//! interleaved windows, on a log scale.
//!
//! ```text
//!  one round, windows_per_side = 3 (three arms: up = centre * step, centre, down = centre / step)
//!     up   cen  down  down  cen   up    up   cen  down      the next round swaps up and down
//!  ──┬────┬────┬─────┬─────┬────┬─────┬────┬────┬──> time
//!    └ median goodput of each arm's windows; a side wins if it measured above the centre and
//!      by more than the tolerance above the centre or above the other side (a slope); after
//!      every third window the round ends early if its arms already differ by more than
//!      early_decision_ratio (both sides that far below the centre, or one that far above both):
//!        a side wins                            : the centre moves to it (both win: the better)
//!        no winner at a bound, inward side tied : the centre moves inward
//!        no winner elsewhere                    : the centre stays (the peak is within a step)
//!      and the next round's step
//!        a move the same way as the last one    : step * step, up to step_ratio_max
//!        a first move (after a stay or restart) : step kept
//!        a reversal, a stay, a clamped move     : sqrt(step), down to step_ratio_min
//! ```
//!
//! See the crate essay for why the arms are interleaved and why the centre is measured.

use crate::history::History;
use crate::{
    BATCH_SIZE_MAX, BATCH_SIZE_MIN, HISTORY_LEN_MAX, SPREAD_TOLERANCE_FACTOR_MAX, STEP_RATIO_MAX, WINDOWS_PER_SIDE_MAX,
};
use thiserror::Error;

/// Why a [`ControllerConfig`] is refused.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ConfigError {
    /// `min`, `initial` and `max` are not ordered within the allowed bounds.
    #[error(
        "batch sizes must satisfy {BATCH_SIZE_MIN} <= min <= initial <= max <= {BATCH_SIZE_MAX}, got min {min}, initial {initial}, max {max}"
    )]
    SizeBounds { min: u32, initial: u32, max: u32 },
    /// A step ratio is not in `(1, STEP_RATIO_MAX]`, or they are not ordered.
    #[error(
        "step ratios must satisfy 1 < step_ratio_min <= step_ratio_initial, step_ratio_reprobe <= step_ratio_max <= {STEP_RATIO_MAX}"
    )]
    StepRatios,
    /// The tolerance is not in `[0, 1)`.
    #[error("tolerance_ratio must be in [0, 1), got {0}")]
    Tolerance(f64),
    /// The spread factor is not positive and at most [`SPREAD_TOLERANCE_FACTOR_MAX`].
    #[error("spread_tolerance_factor must be in (0, {SPREAD_TOLERANCE_FACTOR_MAX}], got {0}")]
    SpreadTolerance(f64),
    /// `windows_per_side` is 0 or above the bound.
    #[error("windows_per_side must be in 1..={WINDOWS_PER_SIDE_MAX}, got {0}")]
    WindowsPerSide(u32),
    /// `reprobe_every_rounds` is 0.
    #[error("reprobe_every_rounds must be at least 1")]
    ReprobeEvery,
    /// The level-shift ratio is not positive and finite.
    #[error("level_shift_ratio must be positive and finite, got {0}")]
    LevelShift(f64),
    /// The early-decision ratio is not finite and above the tolerance.
    #[error("early_decision_ratio must be finite and above tolerance_ratio, got {0}")]
    EarlyDecision(f64),
    /// The return drop is not in `(0, 1)`.
    #[error("return_commit_ratio_drop must be in (0, 1), got {0}")]
    ReturnDrop(f64),
    /// The abort-ratio guard is not in `(0, 1]`.
    #[error("abort_ratio_max must be in (0, 1], got {0}")]
    AbortRatio(f64),
    /// The history length is below 2 or above the bound.
    #[error("history_len_max must be in 2..={HISTORY_LEN_MAX}, got {0}")]
    HistoryLen(usize),
}

/// How one knob is searched. Every field has a unit or is a ratio.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerConfig {
    /// Smallest size the controller may use.
    pub batch_size_min: u32,
    /// Largest size the controller may use.
    pub batch_size_max: u32,
    /// Centre before the first round.
    pub batch_size_initial: u32,
    /// Step of the first round (the sides are `centre * step` and `centre / step`).
    pub step_ratio_initial: f64,
    /// Floor of the damped step.
    pub step_ratio_min: f64,
    /// Ceiling of the step as it grows while moves keep one direction.
    pub step_ratio_max: f64,
    /// Step restored every `reprobe_every_rounds` rounds, so a moved peak is noticed.
    pub step_ratio_reprobe: f64,
    /// Relative margin a side must clear, over the centre or over the other side, to win a
    /// round (it must measure above the centre in any case); two arms closer than this tie.
    pub tolerance_ratio: f64,
    /// When set, a round's tolerance is the larger of `tolerance_ratio` and this factor times
    /// the spread the round itself measured: the median, over its arms of at least two
    /// windows, of each arm's `(max - min) / median` goodput. Where windows are noisier than
    /// the differences between nearby sizes (a server's commits under a shared disk), a fixed
    /// tolerance lets the search walk on noise; this one keeps the centre until a side beats
    /// it by more than the round's own noise. The tie rule at a bound keeps `tolerance_ratio`.
    /// `None` = the fixed tolerance alone.
    pub spread_tolerance_factor: Option<f64>,
    /// Windows each arm of a round (the centre and each side) spans, scored by their median
    /// goodput: a round is three times this many windows, unless it ends early.
    pub windows_per_side: u32,
    /// A round ends early, at a point where every arm has measured as many windows as the
    /// others, when its arms already differ by more than this ratio: both sides below the
    /// centre by more (the centre stays), or a side above the centre and the other side by
    /// more (it wins). A round with no level before it (the search's first, or the first
    /// after a guard or a return to the anchor) never ends early. `None` = every round runs
    /// all its windows.
    pub early_decision_ratio: Option<f64>,
    /// Rounds between two re-probes.
    pub reprobe_every_rounds: u32,
    /// A round whose centre's goodput differs from what this knob's previous round measured at
    /// the same size by more than this ratio (either way) restarts the search with
    /// `step_ratio_initial`: the workload changed (a change of skew moves the peak as it moves
    /// the level). `None` = only the periodic re-probe.
    pub level_shift_ratio: Option<f64>,
    /// When set, the search keeps an *anchor*, a size and the commit ratio (commits per
    /// attempt) measured there, and a round that leaves the centre at a size whose commit ratio
    /// is more than this ratio below the anchor's sends the search back to the anchor, for a
    /// round that measures the two sizes side by side (see the crate essay). Under optimistic
    /// concurrency control the commit ratio of a batch size barely moves from run to run while
    /// goodput moves with the host, so it tells a search that noise carried off a sharp peak
    /// onto a plateau of worse sizes, where every round ties, from one that found a better
    /// size. `None` = no anchor.
    pub return_commit_ratio_drop: Option<f64>,
    /// Abort ratio (aborts / attempts) of a window above which the centre steps down at once;
    /// `None` = off.
    pub abort_ratio_max: Option<f64>,
    /// Window latency above which the centre steps down at once; `None` = off.
    pub latency_us_max: Option<u64>,
    /// Most `(t_us, centre)` entries the history keeps.
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
            step_ratio_max: 2.0,
            step_ratio_reprobe: 1.25,
            tolerance_ratio: 0.03,
            spread_tolerance_factor: None,
            windows_per_side: 3,
            early_decision_ratio: Some(0.15),
            reprobe_every_rounds: 8,
            level_shift_ratio: Some(0.5),
            return_commit_ratio_drop: None,
            abort_ratio_max: None,
            latency_us_max: None,
            history_len_max: 256,
        }
    }
}

impl ControllerConfig {
    /// The default search over `[min, max]` starting at `initial`.
    pub fn with_bounds(min: u32, initial: u32, max: u32) -> Self {
        ControllerConfig { batch_size_min: min, batch_size_initial: initial, batch_size_max: max, ..Self::default() }
    }

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
        let ordered = |r: f64| self.step_ratio_min <= r && r <= self.step_ratio_max;
        if !(ratio_ok(self.step_ratio_min)
            && ratio_ok(self.step_ratio_max)
            && ordered(self.step_ratio_initial)
            && ordered(self.step_ratio_reprobe))
        {
            return Err(ConfigError::StepRatios);
        }
        if !(0.0..1.0).contains(&self.tolerance_ratio) {
            return Err(ConfigError::Tolerance(self.tolerance_ratio));
        }
        if let Some(factor) = self.spread_tolerance_factor
            && !(factor > 0.0 && factor <= SPREAD_TOLERANCE_FACTOR_MAX)
        {
            return Err(ConfigError::SpreadTolerance(factor));
        }
        if self.windows_per_side == 0 || self.windows_per_side > WINDOWS_PER_SIDE_MAX {
            return Err(ConfigError::WindowsPerSide(self.windows_per_side));
        }
        if self.reprobe_every_rounds == 0 {
            return Err(ConfigError::ReprobeEvery);
        }
        if let Some(ratio) = self.level_shift_ratio
            && !(ratio > 0.0 && ratio.is_finite())
        {
            return Err(ConfigError::LevelShift(ratio));
        }
        if let Some(drop) = self.return_commit_ratio_drop
            && !(drop > 0.0 && drop < 1.0)
        {
            return Err(ConfigError::ReturnDrop(drop));
        }
        if let Some(ratio) = self.abort_ratio_max
            && !(ratio > 0.0 && ratio <= 1.0)
        {
            return Err(ConfigError::AbortRatio(ratio));
        }
        if let Some(ratio) = self.early_decision_ratio
            && !(ratio > self.tolerance_ratio && ratio.is_finite())
        {
            return Err(ConfigError::EarlyDecision(ratio));
        }
        if self.history_len_max < 2 || self.history_len_max > HISTORY_LEN_MAX {
            return Err(ConfigError::HistoryLen(self.history_len_max));
        }
        Ok(())
    }
}

/// What the driver measured over one window ending at `now_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowObservation {
    /// End of the window (any monotonic clock, microseconds).
    pub now_us: u64,
    /// Transactions (or requests) committed in the window.
    pub committed: u64,
    /// Attempts aborted in the window.
    pub aborted: u64,
    /// A latency figure of the window (mean or a percentile), microseconds.
    pub latency_us: u64,
}

/// What an observation led to (for tests and reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The round is still collecting windows (or the controller is held).
    Measuring,
    /// The larger side won (or the centre left the lower bound on a tie): the centre moved up.
    Larger,
    /// The smaller side won (or the centre left the upper bound on a tie): the centre moved
    /// down.
    Smaller,
    /// No side won (the peak lies within a step of the centre): the centre stayed and the step
    /// was damped.
    Stay,
    /// An abort or latency guard fired: the centre stepped down at once, the round restarted.
    Guard,
    /// The round left the centre at a size that commits a clearly smaller share of its
    /// attempts than the anchor: the centre went back to the anchor, and the next round
    /// measures it against that size (see [`ControllerConfig::return_commit_ratio_drop`]).
    Return,
}

impl Decision {
    /// Whether a round (or a guard) ended with this decision.
    pub fn ends_round(self) -> bool {
        self != Decision::Measuring
    }
}

/// A side of the centre: where a side arm measures, and which way a move goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Up,
    Down,
}

/// What one window of a round measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arm {
    Centre,
    Side(Side),
}

/// The arms of a round's windows, repeated: each arm's windows in a block of six are placed
/// symmetrically about the block's middle (up at 0 and 5, centre at 1 and 4, down at 2 and 3),
/// so a drift that is linear over the block adds the same to every arm's mean.
const ARM_PATTERN: [Arm; 6] =
    [Arm::Side(Side::Up), Arm::Centre, Arm::Side(Side::Down), Arm::Side(Side::Down), Arm::Centre, Arm::Side(Side::Up)];

/// Where a search returns to after a walk-off, and the commit ratio last measured there (see
/// [`ControllerConfig::return_commit_ratio_drop`]).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Anchor {
    /// The centre, unrounded.
    size: f64,
    commit_ratio: f64,
}

/// Commits and attempts an arm measured over its windows of a round.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Attempts {
    committed: u64,
    attempted: u64,
}

impl Attempts {
    fn add(&mut self, observation: &WindowObservation) {
        self.committed += observation.committed;
        self.attempted += observation.committed + observation.aborted;
    }

    /// Commits per attempt; 1 for an arm that attempted nothing (no evidence of aborts).
    fn commit_ratio(self) -> f64 {
        #[expect(clippy::cast_precision_loss, reason = "counts are far below 2^52")]
        let ratio = if self.attempted == 0 { 1.0 } else { self.committed as f64 / self.attempted as f64 };
        ratio
    }
}

/// What one arm measured in the current round.
#[derive(Debug, Clone)]
struct ArmRecord {
    /// Goodput per window.
    goodputs: Vec<f64>,
    attempts: Attempts,
}

/// The current round's records, one per arm.
#[derive(Debug, Clone)]
struct Arms {
    up: ArmRecord,
    centre: ArmRecord,
    down: ArmRecord,
}

impl Arms {
    fn with_capacity(windows: usize) -> Self {
        let record = || ArmRecord { goodputs: Vec::with_capacity(windows), attempts: Attempts::default() };
        Arms { up: record(), centre: record(), down: record() }
    }

    fn get(&self, arm: Arm) -> &ArmRecord {
        match arm {
            Arm::Side(Side::Up) => &self.up,
            Arm::Centre => &self.centre,
            Arm::Side(Side::Down) => &self.down,
        }
    }

    fn get_mut(&mut self, arm: Arm) -> &mut ArmRecord {
        match arm {
            Arm::Side(Side::Up) => &mut self.up,
            Arm::Centre => &mut self.centre,
            Arm::Side(Side::Down) => &mut self.down,
        }
    }

    fn clear(&mut self) {
        for record in [&mut self.up, &mut self.centre, &mut self.down] {
            record.goodputs.clear();
            record.attempts = Attempts::default();
        }
    }
}

/// The controller of one knob. See the crate essay.
#[derive(Debug, Clone)]
pub struct AdaptiveBatchSize {
    config: ControllerConfig,
    /// Centre of the search (the size the controller currently believes best), unrounded.
    centre: f64,
    step_ratio: f64,
    /// Direction of the last move, if the last round moved.
    last_move: Option<Side>,
    /// Median goodput the last round measured at the size that is now the centre (its centre
    /// arm's, or the winning side's if it moved); `None` before the first round and after a
    /// guard.
    level: Option<f64>,
    /// What each arm of the current round measured.
    arms: Arms,
    /// The size the search returns to, when `return_commit_ratio_drop` is set.
    anchor: Option<Anchor>,
    /// Whether the current round is a challenge: centred on the anchor, with a side where the
    /// search had gone.
    challenge: bool,
    /// Windows of the current round so far.
    round_windows: u32,
    /// Whether the current round runs the pattern with its sides swapped (every other
    /// completed round does).
    mirrored: bool,
    rounds_since_reprobe: u32,
    /// Start of the current window; `None` until the first observation (or while held).
    window_start_us: Option<u64>,
    /// Between rounds at the centre, waiting for [`AdaptiveBatchSize::resume`].
    held: bool,
    history: History<u32>,
}

impl AdaptiveBatchSize {
    /// A controller centred on `batch_size_initial`.
    ///
    /// # Errors
    /// The configuration's [`ConfigError`].
    pub fn new(config: ControllerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let windows = config.windows_per_side as usize;
        Ok(Self {
            centre: f64::from(config.batch_size_initial),
            step_ratio: config.step_ratio_initial,
            last_move: None,
            level: None,
            arms: Arms::with_capacity(windows),
            anchor: None,
            challenge: false,
            round_windows: 0,
            mirrored: false,
            rounds_since_reprobe: 0,
            window_start_us: None,
            held: false,
            history: History::new(config.history_len_max),
            config,
        })
    }

    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }

    /// The size to use for the next window: the size of the round's arm that window measures
    /// (a side or the centre), the centre itself while held.
    #[must_use]
    pub fn batch_size(&self) -> u32 {
        if self.held {
            return self.centre_size();
        }
        match self.arm_of(self.round_windows) {
            Arm::Centre => self.centre_size(),
            Arm::Side(side) => self.side_size(side),
        }
    }

    /// The size of a side: `centre * step` or `centre / step`, rounded, and at least one away
    /// from the rounded centre (at small sizes a small step would otherwise round a side to
    /// the centre, and the round could tell them apart only by noise), within bounds. At a
    /// bound the outer side is the centre itself.
    fn side_size(&self, side: Side) -> u32 {
        let centre = self.centre_size();
        let (min, max) = (self.config.batch_size_min, self.config.batch_size_max);
        match side {
            Side::Up => self.size_at(self.centre * self.step_ratio).max(centre.saturating_add(1)).min(max),
            Side::Down => self.size_at(self.centre / self.step_ratio).min(centre.saturating_sub(1)).max(min),
        }
    }

    /// The centre of the search, rounded: the size the controller currently believes best.
    #[must_use]
    pub fn centre_size(&self) -> u32 {
        self.size_at(self.centre)
    }

    /// The current step (the sides are `centre * step` and `centre / step`).
    #[must_use]
    pub fn step_ratio(&self) -> f64 {
        self.step_ratio
    }

    /// `(t_us, centre)` after every round and guard, oldest first, at most `history_len_max`.
    #[must_use]
    pub fn history(&self) -> &[(u64, u32)] {
        self.history.entries()
    }

    /// Stops between rounds: drops a partial round and stays at the centre until
    /// [`AdaptiveBatchSize::resume`] (a [`crate::Tuner`] holds a knob while another knob's
    /// round runs).
    pub fn hold(&mut self) {
        self.held = true;
        self.window_start_us = None;
        self.clear_round();
    }

    /// Starts a new round whose first window begins at `now_us`.
    pub fn resume(&mut self, now_us: u64) {
        self.held = false;
        self.window_start_us = Some(now_us);
        self.clear_round();
    }

    /// Feeds one window. The first observation only opens a window (its start is unknown);
    /// windows of zero length, and every window while held, are ignored.
    pub fn observe(&mut self, observation: WindowObservation) -> Decision {
        if self.held {
            return Decision::Measuring;
        }
        let Some(start_us) = self.window_start_us.replace(observation.now_us) else {
            if self.history.entries().is_empty() {
                self.history.offer(observation.now_us, self.centre_size());
            }
            return Decision::Measuring;
        };
        let Some(elapsed_us) = observation.now_us.checked_sub(start_us).filter(|&us| us > 0) else {
            self.window_start_us = Some(start_us.max(observation.now_us));
            return Decision::Measuring;
        };
        if self.guard_fires(&observation) {
            self.centre = (self.centre / self.step_ratio).max(f64::from(self.config.batch_size_min));
            self.last_move = Some(Side::Down);
            // Nothing was measured at the new centre: the next round's level starts afresh.
            self.level = None;
            self.clear_round();
            self.history.offer(observation.now_us, self.centre_size());
            return Decision::Guard;
        }
        #[expect(clippy::cast_precision_loss, reason = "counts and microseconds are far below 2^52")]
        let goodput = observation.committed as f64 * 1e6 / elapsed_us as f64;
        let record = self.arms.get_mut(self.arm_of(self.round_windows));
        record.goodputs.push(goodput);
        record.attempts.add(&observation);
        self.round_windows += 1;
        if self.round_windows < 3 * self.config.windows_per_side && !self.clear_early() {
            return Decision::Measuring;
        }
        let decision = self.decide();
        self.clear_round();
        self.mirrored = !self.mirrored;
        self.history.offer(observation.now_us, self.centre_size());
        decision
    }

    /// The arm window `index` of the current round measures: up, centre, down, down, centre,
    /// up, repeated (so with `windows_per_side` windows an arm, a round of `3 *
    /// windows_per_side` windows gives each arm its share), with up and down swapped in a
    /// mirrored round. With an odd `windows_per_side` the last block is cut in half (up,
    /// centre, down) and leaves the sides one window off balance, up later than down; mirroring
    /// every other round turns that residue the other way, so a steady drift does not favour
    /// one side round after round.
    fn arm_of(&self, index: u32) -> Arm {
        match ARM_PATTERN[(index % 6) as usize] {
            Arm::Side(Side::Up) if self.mirrored => Arm::Side(Side::Down),
            Arm::Side(Side::Down) if self.mirrored => Arm::Side(Side::Up),
            arm => arm,
        }
    }

    /// Whether the round so far already decides itself by more than `early_decision_ratio`
    /// (see [`ControllerConfig::early_decision_ratio`]): asked where every arm has measured
    /// the same number of windows (every three windows), so no arm's median rests on fewer.
    fn clear_early(&self) -> bool {
        let Some(ratio) = self.config.early_decision_ratio else {
            return false;
        };
        if !self.round_windows.is_multiple_of(3) {
            return false;
        }
        // A round with no level before it (the search's first, or the first after a guard or a
        // return to the anchor) runs all its windows: nothing says yet how noisy one window is
        // here, and the first windows of a run measure an engine still settling.
        if self.level.is_none() {
            return false;
        }
        let (up, centre, down) = (
            median_of(&self.arms.up.goodputs),
            median_of(&self.arms.centre.goodputs),
            median_of(&self.arms.down.goodputs),
        );
        let centre_size = self.centre_size();
        let up_open = self.side_size(Side::Up) > centre_size;
        let down_open = self.side_size(Side::Down) < centre_size;
        let margin = 1.0 + ratio;
        // A clamped side measured the centre again: it stands for the centre.
        let (up_other, down_other) = (if down_open { down } else { centre }, if up_open { up } else { centre });
        let clearly_below = |side: f64, open: bool| !open || side * margin < centre;
        let clearly_wins = |side: f64, other: f64, open: bool| open && side > centre * margin && side > other * margin;
        let centre_stays = (up_open || down_open) && clearly_below(up, up_open) && clearly_below(down, down_open);
        centre_stays || clearly_wins(up, up_other, up_open) || clearly_wins(down, down_other, down_open)
    }

    fn clear_round(&mut self) {
        self.arms.clear();
        self.round_windows = 0;
    }

    fn guard_fires(&self, observation: &WindowObservation) -> bool {
        let attempts = observation.committed + observation.aborted;
        #[expect(clippy::cast_precision_loss, reason = "counts are far below 2^52")]
        let aborts_high = self
            .config
            .abort_ratio_max
            .is_some_and(|max| attempts > 0 && observation.aborted as f64 / attempts as f64 > max);
        let latency_high = self.config.latency_us_max.is_some_and(|max| observation.latency_us > max);
        (aborts_high || latency_high) && self.centre > f64::from(self.config.batch_size_min)
    }

    /// The tolerance of the round just measured: `tolerance_ratio`, or the round's spread
    /// times `spread_tolerance_factor` if that is larger.
    fn round_tolerance(&self) -> f64 {
        let Some(factor) = self.config.spread_tolerance_factor else {
            return self.config.tolerance_ratio;
        };
        let mut spreads: Vec<f64> = [&self.arms.up.goodputs, &self.arms.centre.goodputs, &self.arms.down.goodputs]
            .into_iter()
            .filter(|windows| windows.len() >= 2)
            .filter_map(|windows| {
                let (low, high) = windows.iter().fold((f64::INFINITY, 0.0_f64), |(l, h), &g| (l.min(g), h.max(g)));
                let middle = median_of(windows);
                (middle > 0.0).then(|| (high - low) / middle)
            })
            .collect();
        if spreads.is_empty() {
            return self.config.tolerance_ratio;
        }
        self.config.tolerance_ratio.max(factor * median(&mut spreads))
    }

    fn decide(&mut self) -> Decision {
        let tolerance = self.round_tolerance();
        let up = median(&mut self.arms.up.goodputs);
        let centre = median(&mut self.arms.centre.goodputs);
        let down = median(&mut self.arms.down.goodputs);
        // At a bound the outer side is clamped onto the centre: it measured the centre again,
        // so it cannot win, and stands for the centre in the comparisons.
        let centre_size = self.centre_size();
        let up_open = self.side_size(Side::Up) > centre_size;
        let down_open = self.side_size(Side::Down) < centre_size;
        let (up_other, down_other) = (if down_open { down } else { centre }, if up_open { up } else { centre });
        // A side wins by measuring above the centre: by more than the tolerance, or by any
        // margin if it also beats the other side, two steps away, by more than the tolerance
        // (a slope through the centre too shallow to clear the tolerance within one step). A
        // side that measured below the centre never wins, so the search does not leave a peak
        // for the better of two worse sides.
        // In a challenge (the centre is the anchor, a side where the search had gone) only the
        // plain test counts: the mirror side was never a candidate, so beating it says nothing.
        let margin = 1.0 + tolerance;
        let slope = !self.challenge;
        let beats =
            |side: f64, other: f64| side > centre && (side > centre * margin || (slope && side > other * margin));
        let tie_margin = 1.0 + self.config.tolerance_ratio;
        let up_wins = up_open && beats(up, up_other);
        let down_wins = down_open && beats(down, down_other);
        let winner = match (up_wins, down_wins) {
            // Both sides beat the centre (a dip at the centre: noise, or a plant with two
            // peaks): the better one.
            (true, true) => Some(if up >= down { Side::Up } else { Side::Down }),
            (true, false) => Some(Side::Up),
            (false, true) => Some(Side::Down),
            // A tie at a bound: the round could span only one step there, so a slope rising
            // inward that two steps would show stays hidden. Moving inward costs at most the
            // tolerance, and the next round, off the bound, spans two steps.
            (false, false) if !down_open && up_open && up * tie_margin >= centre => Some(Side::Up),
            (false, false) if !up_open && down_open && down * tie_margin >= centre => Some(Side::Down),
            (false, false) => None,
        };
        // The winning side becomes the centre (clamped to the bounds).
        let (size_min, size_max) = (f64::from(self.config.batch_size_min), f64::from(self.config.batch_size_max));
        let (decision, clamped) = match winner {
            Some(Side::Up) => {
                let side = (self.centre * self.step_ratio).max(f64::from(self.side_size(Side::Up)));
                self.centre = side.min(size_max);
                (Decision::Larger, side >= size_max)
            }
            Some(Side::Down) => {
                let side = (self.centre / self.step_ratio).min(f64::from(self.side_size(Side::Down)));
                self.centre = side.max(size_min);
                (Decision::Smaller, side <= size_min)
            }
            None => (Decision::Stay, false),
        };
        // The next round's step grows while moves keep one direction (a far peak is reached in
        // a few rounds), and shrinks at a reversal, a stay, or a move cut short by a bound (the
        // peak is near, or at the bound).
        let (min, max) = (self.config.step_ratio_min, self.config.step_ratio_max);
        match (winner, self.last_move) {
            (Some(side), Some(last)) if side == last && !clamped => self.step_ratio = self.step_ratio.powi(2).min(max),
            (Some(_), None) if !clamped => {}
            _ => self.step_ratio = self.step_ratio.sqrt().max(min),
        }
        self.last_move = winner;
        // The level: the centre's median against what the last round measured at the same
        // size, so neither the step (how far out the sides are) nor a move enters it.
        let shifted = match (self.level, self.config.level_shift_ratio) {
            (Some(previous), Some(ratio)) => centre > previous * (1.0 + ratio) || centre * (1.0 + ratio) < previous,
            _ => false,
        };
        self.level = Some(match winner {
            Some(Side::Up) => up,
            Some(Side::Down) => down,
            None => centre,
        });
        self.rounds_since_reprobe += 1;
        if shifted {
            // The workload changed: search again as from the start.
            self.rounds_since_reprobe = 0;
            self.step_ratio = self.step_ratio.max(self.config.step_ratio_initial);
            self.last_move = None;
        } else if self.rounds_since_reprobe >= self.config.reprobe_every_rounds {
            self.rounds_since_reprobe = 0;
            self.step_ratio = self.step_ratio.max(self.config.step_ratio_reprobe);
        }
        let commit_ratio = self.arms.get(winner.map_or(Arm::Centre, Arm::Side)).attempts.commit_ratio();
        let decision = if self.follow_anchor(winner, shifted, commit_ratio) { Decision::Return } else { decision };
        let centre = self.centre_size();
        assert!(
            (self.config.batch_size_min..=self.config.batch_size_max).contains(&centre),
            "centre {centre} left its bounds"
        );
        decision
    }

    /// Keeps the anchor after a round whose new centre (`winner`'s side, or the centre kept)
    /// measured `commit_ratio`, and sends the search back to it, for a challenge, when the
    /// round left it at a size that commits clearly less. Returns whether it did.
    ///
    /// * A shift of the level (the workload changed) forgets the anchor; the first round after
    ///   it (or the search's first round) sets it at the new centre.
    /// * At the anchor's size the anchor takes the round's commit ratio.
    /// * A centre whose commit ratio is more than `return_commit_ratio_drop` below the anchor's
    ///   sends the search back: the centre becomes the anchor again and the step the ratio
    ///   between the two sizes (within the step bounds), so the next round, the challenge,
    ///   measures the anchor against where the search went, side by side in interleaved
    ///   windows. A side must beat the centre to win, so a tie keeps the anchor.
    /// * A side that wins the challenge becomes the anchor: it beat the anchor on goodput in
    ///   the same windows, whatever its commit ratio (as at high skew, where a larger batch can
    ///   abort more and still commit more). Goodput is never compared across rounds, which the
    ///   host's drift would decide.
    /// * Elsewhere a centre becomes the anchor if its commit ratio is within the tolerance of
    ///   the anchor's; one a few points worse does not, so the anchor cannot creep, a round at a
    ///   time, down the slope of a peak onto a plateau.
    fn follow_anchor(&mut self, winner: Option<Side>, shifted: bool, commit_ratio: f64) -> bool {
        let Some(drop) = self.config.return_commit_ratio_drop else {
            return false;
        };
        let challenged = std::mem::take(&mut self.challenge);
        let here = Anchor { size: self.centre, commit_ratio };
        match self.anchor {
            _ if shifted => self.anchor = None,
            None => self.anchor = Some(here),
            Some(_) if challenged && winner.is_some() => self.anchor = Some(here),
            Some(anchor) if self.size_at(anchor.size) == self.centre_size() => {
                self.anchor = Some(Anchor { size: anchor.size, ..here });
            }
            Some(anchor) if commit_ratio < anchor.commit_ratio * (1.0 - drop) => {
                let apart = (self.centre / anchor.size).max(anchor.size / self.centre);
                self.centre = anchor.size;
                self.step_ratio = apart.clamp(self.config.step_ratio_min, self.config.step_ratio_max);
                self.last_move = None;
                self.level = None;
                self.challenge = true;
                return true;
            }
            Some(anchor) if commit_ratio >= anchor.commit_ratio * (1.0 - self.config.tolerance_ratio) => {
                self.anchor = Some(here);
            }
            Some(_) => {}
        }
        false
    }

    /// `size` rounded and clamped to the bounds.
    fn size_at(&self, size: f64) -> u32 {
        let (min, max) = (f64::from(self.config.batch_size_min), f64::from(self.config.batch_size_max));
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "clamped to [min, max] of u32")]
        let size = size.clamp(min, max).round() as u32;
        size
    }
}

/// Median of a non-empty slice, leaving it as it is.
fn median_of(values: &[f64]) -> f64 {
    median(&mut values.to_vec())
}

/// Median of a non-empty slice (mean of the middle two for even lengths); sorts it in place.
fn median(values: &mut [f64]) -> f64 {
    assert!(!values.is_empty(), "median of no windows");
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 { values[middle] } else { f64::midpoint(values[middle - 1], values[middle]) }
}
