//! Threads that take turns: real threads, exactly one of which runs at a time, handing control
//! back at every yield point ([`crate::interleave::point`]) so that a driver decides who runs
//! next.
//!
//! ```text
//!   driver                          thread i
//!   resume(i) ── running = i ──>    runs protocol code ... interleave::point()
//!             <── running = none ──   (hook: stop = Point, wait for the next turn)
//!   resume(j) ...
//!   resume(i) ── running = i ──>    returns from point(), runs on ... body returns
//!             <── stop = Finished ─
//! ```
//!
//! One mutex and one condition variable hold the whole state; a thread only ever runs while
//! `running` names it, so the threads' protocol code executes in exactly the order the driver
//! chose, whatever the operating system does. A body that panics finishes with the panic's
//! message. [`Turns::abandon`] ends a run early (a livelock, a failed step budget): every thread
//! that has not finished unwinds out of its next yield point, releasing what its attempt held
//! through the attempt's `Drop`.
//!
//! Blocking outside yield points (an OS mutex held across a yield) would stall the driver; every
//! wait in the protocols goes through `Spin::wait`, a yield point, so none does. A turn that
//! takes longer than [`TURN_S_MAX`] is reported as exactly that bug.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Duration;

use crate::interleave;

/// Longest a driver waits for one turn to end before declaring the thread stuck outside the
/// yield points.
pub const TURN_S_MAX: u64 = 120;

/// Where a thread stopped when its turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Stop {
    /// At a yield point inside its work.
    Point,
    /// Between two steps of its work ([`Seat::boundary`]).
    Boundary,
    /// Its body returned (`Ok`) or panicked (`Err` with the message; `"abandoned"` when the run
    /// was abandoned).
    Finished(Result<(), String>),
}

/// The panic payload that unwinds an abandoned thread.
#[derive(Debug)]
struct Abandoned;

#[derive(Debug)]
struct State {
    /// The thread whose turn it is.
    running: Option<usize>,
    /// Where each thread stopped last (`None` while it runs or before its first turn).
    stops: Vec<Option<Stop>>,
    abandon: bool,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends thread `index`'s turn with `stop` and waits for its next turn; unwinds if the run is
    /// abandoned meanwhile.
    fn pass(&self, index: usize, stop: Stop) {
        let mut state = self.lock();
        state.stops[index] = Some(stop);
        state.running = None;
        self.changed.notify_all();
        let state = self.wait_turn(state, index);
        if state.abandon {
            drop(state);
            std::panic::resume_unwind(Box::new(Abandoned));
        }
    }

    /// Waits until `running` names `index`.
    fn wait_turn<'a>(&self, state: MutexGuard<'a, State>, index: usize) -> MutexGuard<'a, State> {
        self.changed.wait_while(state, |state| state.running != Some(index)).unwrap_or_else(PoisonError::into_inner)
    }

    fn finish(&self, index: usize, result: Result<(), String>) {
        let mut state = self.lock();
        state.stops[index] = Some(Stop::Finished(result));
        state.running = None;
        self.changed.notify_all();
    }
}

/// A set of threads that run one at a time, each when the driver gives it the turn.
#[derive(Debug)]
pub struct Turns {
    shared: Arc<Shared>,
}

/// What a thread's body holds: its index, and its way to mark a boundary between steps.
#[derive(Debug)]
pub struct Seat {
    shared: Arc<Shared>,
    index: usize,
}

impl Seat {
    /// This thread's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Ends the turn between two steps of the body's work (a scripted step done, say): the
    /// driver sees [`Stop::Boundary`] instead of [`Stop::Point`].
    pub fn boundary(&self) {
        self.shared.pass(self.index, Stop::Boundary);
    }
}

impl Turns {
    /// Room for `threads` threads, indexed `0..threads`.
    pub fn new(threads: usize) -> Self {
        Turns {
            shared: Arc::new(Shared {
                state: Mutex::new(State { running: None, stops: vec![None; threads], abandon: false }),
                changed: Condvar::new(),
            }),
        }
    }

    /// Spawns thread `index` in `scope`. It waits for its first turn, then runs `body` with the
    /// yield hook installed; it returns `body`'s value, or `None` if the body panicked or the
    /// run was abandoned.
    pub fn spawn<'scope, T: Send + 'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        index: usize,
        body: impl FnOnce(&Seat) -> T + Send + 'scope,
    ) -> ScopedJoinHandle<'scope, Option<T>> {
        let shared = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name(format!("sim-worker-{index}"))
            .spawn_scoped(scope, move || {
                let abandoned = shared.wait_turn(shared.lock(), index).abandon;
                if abandoned {
                    shared.finish(index, Err("abandoned".into()));
                    return None;
                }
                let hook_shared = Arc::clone(&shared);
                let hook = interleave::install(Box::new(move || hook_shared.pass(index, Stop::Point)));
                let seat = Seat { shared: Arc::clone(&shared), index };
                let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| body(&seat)));
                drop(hook);
                match outcome {
                    Ok(value) => {
                        shared.finish(index, Ok(()));
                        Some(value)
                    }
                    Err(payload) => {
                        shared.finish(index, Err(panic_message(payload.as_ref())));
                        None
                    }
                }
            })
            .expect("spawning a simulated worker")
    }

    /// Whether thread `index` has finished.
    pub fn finished(&self, index: usize) -> bool {
        matches!(self.shared.lock().stops[index], Some(Stop::Finished(_)))
    }

    /// Gives thread `index` (not finished) the turn and waits until the turn ends.
    ///
    /// # Panics
    ///
    /// If the turn does not end within [`TURN_S_MAX`] (the thread blocked outside a yield
    /// point), or if `index` has finished.
    pub fn resume(&self, index: usize) -> Stop {
        let mut state = self.shared.lock();
        assert!(state.running.is_none(), "a turn is already running");
        assert!(!matches!(state.stops[index], Some(Stop::Finished(_))), "thread {index} has finished");
        state.running = Some(index);
        state.stops[index] = None;
        self.shared.changed.notify_all();
        let (state, timeout) = self
            .shared
            .changed
            .wait_timeout_while(state, Duration::from_secs(TURN_S_MAX), |state| state.running.is_some())
            .unwrap_or_else(PoisonError::into_inner);
        assert!(
            !timeout.timed_out(),
            "thread {index} neither reached a yield point nor finished within {TURN_S_MAX} s: it blocks outside \
             the yield points"
        );
        state.stops[index].clone().expect("a turn ends with a stop")
    }

    /// Abandons the run: every unfinished thread unwinds at its next turn, which this gives it.
    pub fn abandon(&self) {
        let threads = {
            let mut state = self.shared.lock();
            state.abandon = true;
            state.stops.len()
        };
        for index in 0..threads {
            if !self.finished(index) {
                self.resume(index);
            }
        }
    }
}

/// The message of a panic payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if payload.is::<Abandoned>() {
        "abandoned".into()
    } else if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic without a message".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_run_one_at_a_time_in_the_order_the_driver_picks() {
        let turns = Turns::new(2);
        let log = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..2)
                .map(|index| {
                    let log = &log;
                    turns.spawn(scope, index, move |seat| {
                        for step in 0..3 {
                            log.lock().unwrap().push((seat.index(), step));
                            interleave::point();
                        }
                        seat.boundary();
                        index * 10
                    })
                })
                .collect();
            for index in [1, 0, 0, 1, 1, 0] {
                assert_eq!(turns.resume(index), Stop::Point);
            }
            assert_eq!(turns.resume(0), Stop::Boundary);
            assert_eq!(turns.resume(0), Stop::Finished(Ok(())));
            assert_eq!(turns.resume(1), Stop::Boundary);
            assert_eq!(turns.resume(1), Stop::Finished(Ok(())));
            let values: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            assert_eq!(values, vec![Some(0), Some(10)]);
        });
        assert_eq!(log.into_inner().unwrap(), vec![(1, 0), (0, 0), (0, 1), (1, 1), (1, 2), (0, 2)]);
    }

    #[test]
    fn panics_finish_a_thread_and_abandoning_unwinds_the_others() {
        let turns = Turns::new(3);
        std::thread::scope(|scope| {
            let spinner = turns.spawn(scope, 0, |_| {
                loop {
                    interleave::point();
                }
            });
            let panicker = turns.spawn(scope, 1, |_| {
                interleave::point();
                panic!("on purpose");
            });
            let idle = turns.spawn(scope, 2, |_| ());
            assert_eq!(turns.resume(0), Stop::Point);
            assert_eq!(turns.resume(1), Stop::Point);
            assert_eq!(turns.resume(1), Stop::Finished(Err("on purpose".into())));
            turns.abandon();
            assert!((0..3).all(|index| turns.finished(index)));
            assert!(spinner.join().unwrap().is_none());
            assert!(panicker.join().unwrap().is_none());
            assert!(idle.join().unwrap().is_none(), "a thread that never ran is abandoned too");
        });
    }
}
