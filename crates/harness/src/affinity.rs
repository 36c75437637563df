//! Where threads run, and what a message between two cores costs.
//!
//! Where the cores are decides what a message between them costs. On a virtual machine
//! the host may move the virtual CPUs: measured on the 2-vCPU machine ordo is developed on, a
//! cache line's round trip between the two took about 90 ns for minutes, then about 415 ns
//! for minutes, and the pipeline's two-thread deployment, which passes every message between
//! its cores, ran at a third of its speed in the slow spells while one thread was unaffected.
//! [`round_trip`] measures it, so a result can say which spell it ran in.
//!
//! Engines leave their threads' placement to the scheduler: pinning the pipeline's two
//! threads to the two cores was measured not to prevent those slow spells (the host moves the
//! virtual CPUs, not the guest its threads), and a pinned thread cannot move away from a core
//! another process is busy on. Only the probe pins its two threads.
//!
//! `core_affinity` does the system calls (`sched_getaffinity`/`sched_setaffinity` on Linux),
//! so no `unsafe` is needed here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use core_affinity::CoreId;

/// Round trips per [`probe`] sample.
pub const PROBE_TRIPS: u32 = 50_000;
/// Samples per [`probe`]; it reports their median.
pub const PROBE_SAMPLES: usize = 3;
/// A measurement that has not finished after this long gives up (a peer that
/// cannot run, e.g. on an overloaded machine).
const MEASUREMENT_TIMEOUT: Duration = Duration::from_secs(1);
/// The counter value that tells the peer to stop.
const STOP: u64 = u64::MAX;

/// The cores this process may run on, in order, or `None` when the system does not say.
#[must_use]
pub fn cores() -> Option<Vec<CoreId>> {
    core_affinity::get_core_ids().filter(|cores| !cores.is_empty())
}

/// Pins the calling thread to `core` (a no-op for `None`); whether it is pinned.
pub fn pin(core: Option<CoreId>) -> bool {
    core.is_some_and(core_affinity::set_for_current)
}

/// The mean time for a cache line to go from core `a` to core `b` and back, measured over
/// `trips` round trips by two threads pinned to them passing a counter; `None` when either
/// thread cannot be pinned or a trip times out.
#[must_use]
pub fn round_trip(a: CoreId, b: CoreId, trips: u32) -> Option<Duration> {
    #[repr(align(64))]
    struct Line(AtomicU64);
    let line = Line(AtomicU64::new(0));
    let counter = &line.0;
    std::thread::scope(|scope| {
        // The peer answers every odd value with the next even one.
        scope.spawn(move || {
            let pinned = pin(Some(b));
            loop {
                let value = counter.load(Ordering::Acquire);
                if value == STOP {
                    return;
                }
                if pinned && !value.is_multiple_of(2) {
                    counter.store(value + 1, Ordering::Release);
                }
                std::hint::spin_loop();
            }
        });
        let measured = scope
            .spawn(move || {
                if !pin(Some(a)) {
                    return None;
                }
                let start = Instant::now();
                for trip in 0..u64::from(trips) {
                    counter.store(2 * trip + 1, Ordering::Release);
                    let mut spins = 0_u32;
                    while counter.load(Ordering::Acquire) != 2 * trip + 2 {
                        spins = spins.wrapping_add(1);
                        if spins.is_multiple_of(4096) && start.elapsed() > MEASUREMENT_TIMEOUT {
                            return None;
                        }
                        std::hint::spin_loop();
                    }
                }
                Some(start.elapsed() / trips.max(1))
            })
            .join()
            .ok()
            .flatten();
        counter.store(STOP, Ordering::Release);
        measured
    })
}

/// The round trip between the first two cores this process may use (the median of
/// [`PROBE_SAMPLES`] samples of [`PROBE_TRIPS`] trips, some tens of milliseconds in all), or
/// `None` on a single core.
#[must_use]
pub fn probe() -> Option<Duration> {
    let cores = cores()?;
    let (&a, &b) = (cores.first()?, cores.get(1)?);
    let mut samples: Vec<Duration> =
        (0..PROBE_SAMPLES).map(|_| round_trip(a, b, PROBE_TRIPS)).collect::<Option<_>>()?;
    samples.sort();
    samples.get(samples.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_between_two_cores_is_measured_and_bounded() {
        let Some(cores) = cores().filter(|cores| cores.len() >= 2) else { return };
        // A measurement gives up when a peer cannot run within the timeout (a loaded machine,
        // or this test at a low priority beside other work); three tries must measure once.
        let trip = (0..3)
            .find_map(|_| round_trip(cores[0], cores[1], 1_000))
            .expect("two available cores can be pinned and measured within three tries");
        assert!(trip > Duration::ZERO && trip < MEASUREMENT_TIMEOUT, "round trip {trip:?}");
        assert!(probe().is_some());
    }

    #[test]
    fn pinning_to_an_available_core_takes_effect() {
        let Some(core) = cores().and_then(|cores| cores.first().copied()) else { return };
        let pinned = std::thread::spawn(move || pin(Some(core))).join().unwrap();
        assert!(pinned);
        assert!(!pin(None));
    }
}
