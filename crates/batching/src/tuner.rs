//! Several knobs of one engine tuned on one goodput signal, taking turns.
//!
//! ```text
//!  knobs:    storage (auto)   validator (auto)   flush (auto)   … fixed knobs just report their size
//!  rounds:   [ storage round ][ validator round ][ flush round ][ storage round ] …
//!            the knob whose round it is measures its centre and two sides; the others hold theirs
//! ```
//!
//! A round compares three sizes of one knob measured in the same few windows, with every other
//! knob held, so a move of another knob never enters the comparison; knobs simply take turns,
//! one round each (coordinate search). A single auto knob runs round after round.

use crate::controller::{AdaptiveBatchSize, ConfigError, ControllerConfig, Decision, WindowObservation};
use crate::history::History;
use crate::size::BatchSize;

/// One knob as the engine configures it.
#[derive(Debug, Clone, PartialEq)]
pub struct Knob {
    /// Name in reports (`storage`, `validator`, `flush`, `batch`, `group`).
    pub name: &'static str,
    pub setting: BatchSize,
    /// The search when `setting` is `auto` (ignored when fixed).
    pub controller: ControllerConfig,
}

/// The knobs of one engine and whose turn it is.
#[derive(Debug, Clone)]
pub struct Tuner {
    names: Vec<&'static str>,
    /// Per knob: its fixed size, or its controller.
    knobs: Vec<Setting>,
    /// The auto knob whose round runs, if any knob is auto.
    active: Option<usize>,
    history: History<Vec<u32>>,
}

#[derive(Debug, Clone)]
enum Setting {
    Fixed(u32),
    Auto(Box<AdaptiveBatchSize>),
}

impl Setting {
    fn size(&self) -> u32 {
        match self {
            Setting::Fixed(size) => *size,
            Setting::Auto(controller) => controller.batch_size(),
        }
    }

    fn centre(&self) -> u32 {
        match self {
            Setting::Fixed(size) => *size,
            Setting::Auto(controller) => controller.centre_size(),
        }
    }
}

impl Tuner {
    /// A tuner over `knobs`; its history keeps at most `history_len_max` entries.
    ///
    /// # Errors
    /// The [`ConfigError`] of an auto knob's controller, or of `history_len_max`.
    pub fn new(knobs: &[Knob], history_len_max: usize) -> Result<Self, ConfigError> {
        if !(2..=crate::HISTORY_LEN_MAX).contains(&history_len_max) {
            return Err(ConfigError::HistoryLen(history_len_max));
        }
        let mut settings = Vec::with_capacity(knobs.len());
        let mut active = None;
        for (index, knob) in knobs.iter().enumerate() {
            settings.push(match knob.setting.get() {
                Some(size) => Setting::Fixed(size),
                None => {
                    let mut controller = AdaptiveBatchSize::new(knob.controller.clone())?;
                    if active.is_some() {
                        controller.hold();
                    } else {
                        active = Some(index);
                    }
                    Setting::Auto(Box::new(controller))
                }
            });
        }
        Ok(Tuner {
            names: knobs.iter().map(|knob| knob.name).collect(),
            knobs: settings,
            active,
            history: History::new(history_len_max),
        })
    }

    /// Whether any knob is auto (otherwise observing does nothing).
    pub fn adapts(&self) -> bool {
        self.active.is_some()
    }

    /// The knob whose round runs now, if any knob is auto.
    pub fn active(&self) -> Option<&'static str> {
        self.active.map(|index| self.names[index])
    }

    pub fn names(&self) -> &[&'static str] {
        &self.names
    }

    /// The size knob `index` uses now.
    pub fn size(&self, index: usize) -> u32 {
        self.knobs[index].size()
    }

    /// The size knob `name` uses now, if there is such a knob.
    pub fn size_of(&self, name: &str) -> Option<u32> {
        self.names.iter().position(|&n| n == name).map(|index| self.size(index))
    }

    /// `(t_us, centre of every knob in order)` at the first window and after every round,
    /// oldest first (fixed knobs report their size).
    pub fn history(&self) -> &[(u64, Vec<u32>)] {
        self.history.entries()
    }

    /// Feeds one window to the knob whose round runs; when its round ends, the next auto knob's
    /// round begins. Returns whether any knob's size changed.
    pub fn observe(&mut self, observation: WindowObservation) -> bool {
        let Some(active) = self.active else {
            return false;
        };
        let before: Vec<u32> = self.knobs.iter().map(Setting::size).collect();
        let Setting::Auto(controller) = &mut self.knobs[active] else {
            unreachable!("the active knob is an auto knob");
        };
        let decision = controller.observe(observation);
        if self.history.entries().is_empty() {
            self.record(observation.now_us);
        }
        if decision.ends_round() {
            let next = (1..=self.knobs.len())
                .map(|offset| (active + offset) % self.knobs.len())
                .find(|&index| matches!(self.knobs[index], Setting::Auto(_)))
                .expect("the active knob itself is auto");
            if let Setting::Auto(controller) = &mut self.knobs[active] {
                controller.hold();
            }
            if let Setting::Auto(controller) = &mut self.knobs[next] {
                controller.resume(observation.now_us);
            }
            self.active = Some(next);
            self.record(observation.now_us);
        }
        debug_assert!(decision.ends_round() || decision == Decision::Measuring);
        self.knobs.iter().zip(before).any(|(knob, size)| knob.size() != size)
    }

    fn record(&mut self, now_us: u64) {
        let centres = self.knobs.iter().map(Setting::centre).collect();
        self.history.offer(now_us, centres);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knob(name: &'static str, setting: BatchSize) -> Knob {
        Knob { name, setting, controller: ControllerConfig { windows_per_side: 1, ..ControllerConfig::default() } }
    }

    fn window(now_us: u64, committed: u64) -> WindowObservation {
        WindowObservation { now_us, committed, aborted: 0, latency_us: 100 }
    }

    #[test]
    fn fixed_knobs_never_change_and_need_no_observations() {
        let fixed = BatchSize::fixed(64).unwrap();
        let mut tuner = Tuner::new(&[knob("a", fixed), knob("b", fixed)], 16).unwrap();
        assert!(!tuner.adapts());
        for t in 0..10 {
            assert!(!tuner.observe(window(t * 1000, 5)));
        }
        assert_eq!(tuner.size_of("a"), Some(64));
        assert_eq!(tuner.size_of("c"), None);
        assert!(tuner.history().is_empty());
    }

    #[test]
    fn knobs_take_turns_one_round_each_and_the_idle_ones_hold_their_centre() {
        let fixed = BatchSize::fixed(7).unwrap();
        let knobs = [knob("a", BatchSize::Auto), knob("fixed", fixed), knob("b", BatchSize::Auto)];
        let mut tuner = Tuner::new(&knobs, 64).unwrap();
        assert!(tuner.adapts());
        let mut t = 0;
        tuner.observe(window(t, 0));
        let mut turns = Vec::new();
        for _ in 0..60 {
            t += 1000;
            let centres = tuner.history().last().unwrap().1.clone();
            match tuner.active() {
                Some("a") => assert_eq!(tuner.size(2), centres[2], "b holds its centre during a's round"),
                Some("b") => assert_eq!(tuner.size(0), centres[0], "a holds its centre during b's round"),
                other => panic!("only auto knobs take turns, got {other:?}"),
            }
            if turns.last() != tuner.active().as_ref() {
                turns.push(tuner.active().unwrap());
            }
            // Goodput grows with a's size and ignores b's.
            tuner.observe(window(t, u64::from(tuner.size(0)) * 10));
            assert_eq!(tuner.size(1), 7);
        }
        assert_eq!(turns.len(), 20, "one round (three windows) per turn: {turns:?}");
        assert!(turns.windows(2).all(|pair| pair[0] != pair[1]));
        let last = &tuner.history().last().unwrap().1;
        assert_eq!(last[0], 150, "a climbed to its maximum");
        assert_eq!(last[2], 40, "b's arms tie, so its centre stays");
    }

    #[test]
    fn a_bad_auto_knob_is_refused() {
        let bad = Knob {
            name: "a",
            setting: BatchSize::Auto,
            controller: ControllerConfig { batch_size_min: 0, ..ControllerConfig::default() },
        };
        assert!(matches!(Tuner::new(&[bad], 16), Err(ConfigError::SizeBounds { .. })));
        assert_eq!(Tuner::new(&[], 1).unwrap_err(), ConfigError::HistoryLen(1));
    }
}
