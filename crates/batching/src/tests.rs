//! Unit tests of each rule, and a synthetic plant with one goodput peak and seeded noise.

use super::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const WINDOW_MS: u64 = 100;

fn quiet_config() -> ControllerConfig {
    ControllerConfig { windows_per_probe: 1, reprobe_every_probes: 1000, ..ControllerConfig::default() }
}

/// Feeds one window of `goodput_per_s` ending `WINDOW_MS` after `t_ms`.
fn feed(controller: &mut AdaptiveBatchSize, t_ms: &mut u64, goodput_per_s: u64, aborted: u64) -> Decision {
    *t_ms += WINDOW_MS;
    controller.observe(WindowObservation {
        now_ms: *t_ms,
        committed: goodput_per_s * WINDOW_MS / 1000,
        aborted,
        latency_us: 1000,
    })
}

fn opened(config: ControllerConfig) -> (AdaptiveBatchSize, u64) {
    let mut controller = AdaptiveBatchSize::new(config).expect("valid config");
    assert_eq!(
        controller.observe(WindowObservation { now_ms: 0, committed: 0, aborted: 0, latency_us: 0 }),
        Decision::Measuring
    );
    (controller, 0)
}

#[test]
fn default_config_is_valid_and_bad_fields_are_refused() {
    assert_eq!(ControllerConfig::default().validate(), Ok(()));
    let bad = ControllerConfig { batch_size_min: 50, ..ControllerConfig::default() };
    assert!(matches!(bad.validate(), Err(ConfigError::SizeBounds { .. })));
    let bad = ControllerConfig { step_ratio_min: 1.0, ..ControllerConfig::default() };
    assert_eq!(bad.validate(), Err(ConfigError::StepRatios));
    let bad = ControllerConfig { tolerance_ratio: 1.0, ..ControllerConfig::default() };
    assert_eq!(bad.validate(), Err(ConfigError::Tolerance(1.0)));
    let bad = ControllerConfig { windows_per_probe: 0, ..ControllerConfig::default() };
    assert_eq!(bad.validate(), Err(ConfigError::WindowsPerProbe(0)));
    let bad = ControllerConfig { reprobe_every_probes: 0, ..ControllerConfig::default() };
    assert_eq!(bad.validate(), Err(ConfigError::ReprobeEvery));
    let bad = ControllerConfig { abort_ratio_max: Some(0.0), ..ControllerConfig::default() };
    assert_eq!(bad.validate(), Err(ConfigError::AbortRatio(0.0)));
    let bad = ControllerConfig { history_len_max: 1, ..ControllerConfig::default() };
    assert_eq!(bad.validate(), Err(ConfigError::HistoryLen(1)));
    assert!(
        AdaptiveBatchSize::new(ControllerConfig { batch_size_max: BATCH_SIZE_MAX + 1, ..ControllerConfig::default() })
            .is_err()
    );
}

#[test]
fn improving_goodput_keeps_the_direction_with_multiplicative_steps() {
    let (mut controller, mut t_ms) = opened(quiet_config());
    assert_eq!(feed(&mut controller, &mut t_ms, 1000, 0), Decision::Continue);
    assert_eq!(controller.batch_size(), 60);
    assert_eq!(feed(&mut controller, &mut t_ms, 1200, 0), Decision::Continue);
    assert_eq!(controller.batch_size(), 90);
}

#[test]
fn dropping_goodput_reverses_and_damps_the_step() {
    let (mut controller, mut t_ms) = opened(quiet_config());
    feed(&mut controller, &mut t_ms, 1000, 0);
    assert_eq!(feed(&mut controller, &mut t_ms, 800, 0), Decision::Reverse);
    let damped = 1.5_f64.sqrt();
    assert!((controller.step_ratio() - damped).abs() < 1e-9);
    assert_eq!(controller.batch_size(), (60.0 / damped).round() as u32);
}

#[test]
fn equal_goodput_within_tolerance_damps_and_keeps_the_direction() {
    let (mut controller, mut t_ms) = opened(quiet_config());
    feed(&mut controller, &mut t_ms, 1000, 0);
    assert_eq!(feed(&mut controller, &mut t_ms, 1020, 0), Decision::Plateau);
    assert!(controller.batch_size() > 60);
    for _ in 0..20 {
        feed(&mut controller, &mut t_ms, 1020, 0);
    }
    assert!((controller.step_ratio() - 1.05).abs() < 1e-9, "step floors at step_ratio_min");
}

#[test]
fn the_median_of_a_probe_ignores_one_outlier_window() {
    let config = ControllerConfig { windows_per_probe: 3, ..quiet_config() };
    let (mut controller, mut t_ms) = opened(config);
    for goodput in [1000, 1000, 1000] {
        feed(&mut controller, &mut t_ms, goodput, 0);
    }
    assert_eq!(controller.batch_size(), 60);
    assert_eq!(feed(&mut controller, &mut t_ms, 1100, 0), Decision::Measuring);
    assert_eq!(feed(&mut controller, &mut t_ms, 10, 0), Decision::Measuring);
    assert_eq!(feed(&mut controller, &mut t_ms, 1100, 0), Decision::Continue, "the 10 window is an outlier");
}

#[test]
fn abort_and_latency_guards_step_down_at_once() {
    let config = ControllerConfig { abort_ratio_max: Some(0.5), windows_per_probe: 3, ..quiet_config() };
    let (mut controller, mut t_ms) = opened(config);
    assert_eq!(feed(&mut controller, &mut t_ms, 1000, 200), Decision::Guard);
    assert!(controller.batch_size() < 40);
    let config = ControllerConfig { latency_us_max: Some(500), ..quiet_config() };
    let (mut controller, mut t_ms) = opened(config);
    assert_eq!(feed(&mut controller, &mut t_ms, 1000, 0), Decision::Guard);
    assert!(controller.batch_size() < 40);
}

#[test]
fn bounds_turn_the_search_around_and_are_never_left() {
    let (mut controller, mut t_ms) = opened(quiet_config());
    let mut goodput = 1000;
    for _ in 0..50 {
        goodput += 100;
        feed(&mut controller, &mut t_ms, goodput, 0);
        assert!((10..=150).contains(&controller.batch_size()));
    }
    assert!(controller.history().iter().any(|&(_, size)| size == 150));
}

#[test]
fn history_is_bounded_and_spans_the_run() {
    let config = ControllerConfig { history_len_max: 8, ..quiet_config() };
    let (mut controller, mut t_ms) = opened(config);
    for _ in 0..1000 {
        feed(&mut controller, &mut t_ms, 1000, 0);
        assert!(controller.history().len() <= 8);
    }
    let history = controller.history();
    assert_eq!(history[0].0, 0);
    assert!(history.last().expect("entries").0 > t_ms / 2, "history reaches the second half of the run");
    assert!(history.windows(2).all(|pair| pair[0].0 < pair[1].0));
}

#[test]
fn zero_length_windows_are_ignored() {
    let (mut controller, _) = opened(quiet_config());
    assert_eq!(
        controller.observe(WindowObservation { now_ms: 0, committed: 5, aborted: 0, latency_us: 0 }),
        Decision::Measuring
    );
    assert_eq!(controller.batch_size(), 40);
}

/// A plant whose goodput has one peak in log batch size, with ±`noise` multiplicative noise.
struct Plant {
    peak_size: f64,
    peak_goodput_per_s: f64,
    width_log: f64,
    noise: f64,
}

impl Plant {
    fn goodput(&self, size: u32) -> f64 {
        let distance = (f64::from(size) / self.peak_size).ln() / self.width_log;
        self.peak_goodput_per_s * (-0.5 * distance * distance).exp()
    }
}

const SEEDS: u64 = 20;
const WINDOWS_TO_CONVERGE: usize = 60;
const WINDOWS_PER_PHASE: usize = 300;

/// Runs one phase; returns the fraction of the windows after `WINDOWS_TO_CONVERGE` whose
/// noise-free goodput is within 5% of the peak.
fn run_phase(controller: &mut AdaptiveBatchSize, plant: &Plant, rng: &mut Xoshiro256PlusPlus, t_ms: &mut u64) -> f64 {
    let mut near_peak = 0_u32;
    for window in 0..WINDOWS_PER_PHASE {
        let size = controller.batch_size();
        let noisy = plant.goodput(size) * (1.0 + rng.random_range(-plant.noise..=plant.noise));
        *t_ms += WINDOW_MS;
        let committed = (noisy * WINDOW_MS as f64 / 1000.0).round() as u64;
        controller.observe(WindowObservation { now_ms: *t_ms, committed, aborted: 0, latency_us: 1000 });
        if window >= WINDOWS_TO_CONVERGE && plant.goodput(size) >= 0.95 * plant.peak_goodput_per_s {
            near_peak += 1;
        }
    }
    f64::from(near_peak) / (WINDOWS_PER_PHASE - WINDOWS_TO_CONVERGE) as f64
}

#[test]
fn converges_to_the_peak_stays_there_and_follows_a_moved_peak() {
    let first_seed = std::env::var("ORDO_BATCHING_SEED").ok().and_then(|s| s.parse().ok());
    let seeds: Vec<u64> = first_seed.map_or_else(|| (0..SEEDS).collect(), |seed| vec![seed]);
    for seed in seeds {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (mut controller, mut t_ms) = opened(ControllerConfig::default());
        let replay = format!("replay: ORDO_BATCHING_SEED={seed} cargo test -p ordo-batching converges_to_the_peak");
        let low_skew = Plant { peak_size: 120.0, peak_goodput_per_s: 50_000.0, width_log: 0.8, noise: 0.05 };
        let share = run_phase(&mut controller, &low_skew, &mut rng, &mut t_ms);
        assert!(share >= 0.8, "seed {seed}: only {share:.2} of windows near the first peak; {replay}");
        let high_skew = Plant { peak_size: 18.0, peak_goodput_per_s: 20_000.0, width_log: 0.8, noise: 0.05 };
        let share = run_phase(&mut controller, &high_skew, &mut rng, &mut t_ms);
        assert!(share >= 0.8, "seed {seed}: only {share:.2} of windows near the moved peak; {replay}");
    }
}
