//! The run clock: microseconds since a run started, read once per commit by every worker.
//!
//! A worker reads the clock when a transaction ends (the end of one is the start of the next),
//! so the reading is on the path of every transaction. On this repository's machines (KVM guests
//! with the TSC as clock source) `Instant::now` with the subtraction and conversion to
//! microseconds took about 42 ns, through the vDSO's `clock_gettime`; reading the time-stamp
//! counter and scaling it took about 14 ns. On the flat-array ablation a transaction takes 1-2 µs,
//! so the difference is 1.5-3% of what a worker does, a cost that says nothing about concurrency
//! control.
//!
//! [`RunClock`] reads the counter through the `quanta` crate, which checks that the CPU's
//! counter is invariant (it runs at one rate in every power state and is synchronized across
//! cores), calibrates it against the monotonic clock once per process (0.5-200 ms, before any
//! run's clock starts), and falls back to the monotonic clock where the counter cannot be
//! trusted. Calibrating a time-stamp counter is subtle work a well-kept crate does better than a
//! few lines here would.

use std::time::Duration;

/// Microseconds since the run started; cheap to read, shared by all of a run's workers.
#[derive(Debug, Clone)]
pub struct RunClock {
    clock: quanta::Clock,
    /// The counter's reading at the start.
    start: u64,
}

impl RunClock {
    /// A clock starting now.
    pub fn start() -> RunClock {
        let clock = quanta::Clock::new();
        let start = clock.raw();
        RunClock { clock, start }
    }

    /// Microseconds since the start (0 for a reading that is not later than it).
    #[inline]
    pub fn now_us(&self) -> u64 {
        self.clock.delta_as_nanos(self.start, self.clock.raw()) / 1000
    }

    /// Time since the start.
    pub fn elapsed(&self) -> Duration {
        self.clock.delta(self.start, self.clock.raw())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn the_clock_follows_the_monotonic_clock() {
        let clock = RunClock::start();
        let reference = Instant::now();
        let first = clock.now_us();
        std::thread::sleep(Duration::from_millis(30));
        let (later, since) = (clock.now_us(), reference.elapsed());
        assert!(later >= first + 30_000, "{first} µs, then {later} µs after a 30 ms sleep");
        // Within 5 ms plus 2% of the monotonic clock's reading over the same span (a loaded
        // machine may stop the thread between the two readings).
        let expected = since.as_micros() as u64;
        assert!(later.abs_diff(expected) <= 5000 + expected / 50, "{later} µs against {expected} µs");
        assert!(clock.elapsed() >= Duration::from_micros(later));
    }

    #[test]
    fn readings_never_go_backwards_on_one_thread() {
        let clock = RunClock::start();
        let mut last = 0;
        for _ in 0..100_000 {
            let now = clock.now_us();
            assert!(now >= last, "{now} µs after {last} µs");
            last = now;
        }
    }
}
