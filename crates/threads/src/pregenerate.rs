//! Each worker's transactions drawn before the clock starts, for both drivers: one
//! [`TxnPool`] per worker, drawn on as many threads as there are workers, while nothing is
//! measured yet. A worker with a pool replays it instead of drawing; see `ordo_workload::pool`
//! for what that changes in a run.

use ordo_workload::{POOL_TRANSACTIONS_MAX, POOL_WORDS_MAX, Txn, TxnPool, WorkloadRng, rng_from_seed};

use crate::config::ConfigError;

/// Transactions a worker draws ahead when asked to without a number (the CLI's default).
pub const PREGENERATE_DEFAULT: usize = 1 << 18;

/// Checks a requested pool size: `None` (draw inline) or `1..=`[`POOL_TRANSACTIONS_MAX`].
pub fn validate(pregenerate: Option<usize>) -> Result<(), ConfigError> {
    match pregenerate {
        Some(count) if !(1..=POOL_TRANSACTIONS_MAX).contains(&count) => Err(ConfigError::invalid(
            "pregenerate",
            format!("{count}: must be 1..={POOL_TRANSACTIONS_MAX} transactions per worker"),
        )),
        _ => Ok(()),
    }
}

/// One pool of `count` transactions per worker (none when `count` is `None`), each drawn by
/// `generate` from a random stream of its own, seeded apart from the worker's (which then
/// only times backoffs). All pools together hold at most [`POOL_WORDS_MAX`] words.
pub(crate) fn draw(
    count: Option<usize>,
    workers: usize,
    seed: u64,
    generate: &(dyn Fn(&mut WorkloadRng, usize, &mut Txn) + Sync),
) -> Vec<Option<TxnPool>> {
    let Some(count) = count else { return (0..workers).map(|_| None).collect() };
    let words_max = POOL_WORDS_MAX / workers.max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                std::thread::Builder::new()
                    .name(format!("pool-{worker}"))
                    .spawn_scoped(scope, move || {
                        let mut rng = rng_from_seed(pool_seed(seed, worker));
                        TxnPool::draw(count, words_max, |txn| generate(&mut rng, worker, txn))
                    })
                    .expect("spawning a pool drawer")
            })
            .collect();
        handles.into_iter().map(|h| Some(h.join().expect("a pool drawer panicked"))).collect()
    })
}

/// The seed of worker `worker`'s pool: not the worker's own seed, so the pool's stream and the
/// worker's backoff draws are not the same numbers.
fn pool_seed(seed: u64, worker: usize) -> u64 {
    (seed ^ 0x5bd1_e995_0000_0000).rotate_left(23) ^ (worker as u64 + 1).wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_outside_its_range_is_refused_and_none_means_inline() {
        assert!(validate(None).is_ok());
        assert!(validate(Some(1)).is_ok());
        assert!(validate(Some(POOL_TRANSACTIONS_MAX)).is_ok());
        assert!(validate(Some(0)).unwrap_err().to_string().contains("pregenerate"));
        assert!(validate(Some(POOL_TRANSACTIONS_MAX + 1)).is_err());
    }

    #[test]
    fn each_worker_gets_its_own_pool_of_the_size_asked() {
        let generate = |rng: &mut WorkloadRng, worker: usize, txn: &mut Txn| {
            use rand::Rng;
            txn.keys.clear();
            txn.keys.push(worker as u64 * 1000 + rng.random_range(0..1000));
        };
        let pools = draw(Some(50), 3, 9, &generate);
        assert_eq!(pools.len(), 3);
        let mut txn = Txn::default();
        for (worker, pool) in pools.into_iter().enumerate() {
            let mut pool = pool.expect("asked for pools");
            assert_eq!(pool.len(), 50);
            pool.next_into(&mut txn);
            assert_eq!(txn.keys[0] / 1000, worker as u64, "worker {worker} drew for itself");
        }
        assert!(draw(None, 2, 9, &generate).iter().all(Option::is_none));
    }
}
