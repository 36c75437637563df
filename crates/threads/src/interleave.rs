//! Yield points for the interleaving simulator.
//!
//! The simulator runs every worker on a thread of its own but lets exactly one of them run at
//! a time: a worker runs until it reaches a yield point, where it hands control back to the
//! scheduler, which picks (from its seed) the worker that runs next. Protocols mark their yield
//! points with [`point`]: between the operations of an attempt, inside commit between locking,
//! validating and installing, and in every wait ([`crate::protocol::Spin::wait`] calls it, so
//! a worker waiting for a lock lets the holder run instead of spinning forever).
//!
//! Outside the simulator, [`point`] is one relaxed load of a global flag and a predicted
//! branch. Inside, it calls the hook the simulator installed on the current thread.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Threads that have a hook installed (any: points check their own thread's hook).
static HOOKED_THREADS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static HOOK: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
}

/// A yield point: hands control to the simulator when one drives this thread.
#[inline]
pub fn point() {
    if HOOKED_THREADS.load(Ordering::Relaxed) != 0 {
        call_hook();
    }
}

#[cold]
fn call_hook() {
    HOOK.with(|hook| {
        if let Some(hook) = hook.borrow_mut().as_mut() {
            hook();
        }
    });
}

/// Installs `hook` on the current thread until the returned guard drops.
pub fn install(hook: Box<dyn FnMut()>) -> HookGuard {
    HOOK.with(|slot| {
        let mut slot = slot.borrow_mut();
        assert!(slot.is_none(), "a yield hook is already installed on this thread");
        *slot = Some(hook);
    });
    HOOKED_THREADS.fetch_add(1, Ordering::Relaxed);
    HookGuard { _not_send: std::marker::PhantomData }
}

/// Removes the current thread's hook when dropped.
#[derive(Debug)]
pub struct HookGuard {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        HOOK.with(|slot| slot.borrow_mut().take());
        HOOKED_THREADS.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;

    #[test]
    fn points_call_only_their_own_threads_hook() {
        point();
        let calls = Rc::new(Cell::new(0));
        let counter = Rc::clone(&calls);
        let guard = install(Box::new(move || counter.set(counter.get() + 1)));
        point();
        point();
        std::thread::spawn(point).join().unwrap();
        assert_eq!(calls.get(), 2);
        drop(guard);
        point();
        assert_eq!(calls.get(), 2);
    }
}
