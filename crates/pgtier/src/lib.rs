//! # ordo-pgtier: batching and reordering in a middle tier in front of PostgreSQL
//!
//! The paper's last experiment (Ding, Kot, Gehrke, PVLDB 2018, §5.7) puts batching and
//! reordering in a middle tier in front of a database it cannot change. This crate does that
//! for PostgreSQL, whose SERIALIZABLE level (serializable snapshot isolation) aborts
//! transactions with SQLSTATE 40001 under contention, much as an OCC validator would.
//!
//! ```text
//!   SmallBank generator (ordo-workload, same keys and footprints as the other engines)
//!        │
//!        ▼
//!   ┌──────────── middle tier (one current-thread tokio runtime) ─────────────┐
//!   │ nobatch : N clients, one transaction at a time each                      │
//!   │ batch   : batches of B (retries first), dealt round-robin to N queues    │
//!   │ reorder : batches of B; ThreadAssigner puts conflicting transactions on  │
//!   │           one queue; Reorderer defers a feedback vertex set of the       │
//!   │           cycles *between* queues to the next batch; serial plan order   │
//!   │ dispatch: rolling (default): 2B closed-loop clients; a batch goes out    │
//!   │           when B wait (or the oldest waited the max wait) and is         │
//!   │           appended to the connections' queues while earlier batches run; │
//!   │           reorder sends a queue to the connection already holding its    │
//!   │           hot keys (affinity) | barrier: send, wait for all, repeat      │
//!   └──────┬──────────────┬──────────────────────────────┬───────────────────┘
//!          │ conn 0       │ conn 1   ...                  │ conn N-1  (pipelined queue)
//!          ▼              ▼                               ▼
//!   PostgreSQL: SELECT sb_send_payment(id, ...)  -- one implicit transaction per call,
//!               which also inserts id into ordo_txn
//!           or, grouped (batch, reorder; auto G starts at 64): up to G consecutive queued
//!               transactions as one server transaction, SELECT sb_group(ids[], ...)
//! ```
//!
//! **Grouping** ([`group`]). With `synchronous_commit = on` every server transaction waits for
//! its own WAL flush; with it off the server's CPU per transaction is the limit. Conflicting
//! transactions already run one after another on one connection, so the tier runs a queue's
//! consecutive transactions as one SERIALIZABLE server transaction: one flush, one SSI
//! transaction and one round trip for G of them. Each stays atomic (they run serially inside
//! it; a user abort writes nothing and touches no other member); a serialization failure rolls
//! the group back and every member is retried, in smaller groups.
//!
//! **Why it can help.** Two conflicting transactions on different connections run at the same
//! time and SSI aborts one of them (or a deadlock detector does). Put on the same connection,
//! they run one after the other and both commit, so only dependencies between connections can
//! close a cycle; a feedback vertex set of those cycles is deferred to the next batch instead of
//! being run to a likely abort. BENCHMARKS.md measures how much of that turns into throughput on
//! PostgreSQL (the aborts drop by an order of magnitude; throughput is bounded by the WAL flush
//! or the server's CPU, not by the aborts).
//!
//! **Procedures.** Each SmallBank procedure is a PL/pgSQL function (one round trip per
//! transaction) or, with `Procedures::Statements`, an explicit transaction of plain statements
//! driven by the workload's own `step` (three round trips). BENCHMARKS.md has both measured;
//! functions are the default.
//!
//! **Exactly once.** A writing transaction inserts its ordo id into `ordo_txn` in the same
//! transaction. When a connection breaks, the in-flight transactions are in doubt: the tier
//! reconnects (waiting out a restarting server), waits until the old backend is gone, and looks
//! each id up. Found: committed, with the net it recorded. Absent: rolled back, so retrying is
//! safe. A group commits all or nothing, so it is decided as a whole: any of its writers found
//! means it committed (a writer without a row refused; a Balance committed), none means it
//! rolled back. Every run ends with an audit: the bank's total equals the loaded total plus the net
//! of the transactions ordo reported committed, and `ordo_txn` holds exactly the committed
//! writers of the run.
//!
//! **What the server must provide** (for `--url`): PostgreSQL's wire protocol, PL/pgSQL
//! (functions mode) or plain SQL (statements mode), SERIALIZABLE or REPEATABLE READ that
//! reports conflicts as SQLSTATE 40001 or 40P01, and `pg_stat_activity` (to know that a
//! broken connection's backend has exited).
//!
//! **Adaptive sizes.** The batch size and the group size are `auto` by default: the driver
//! measures the tier's goodput per window and ordo-batching's controller chooses them while
//! the run goes ([`tuning`]); a number fixes either one.
//!
//! Modules: [`cluster`] (throwaway local server), [`schema`] (tables, functions, loader,
//! audit), [`connection`] (sessions, error classes), [`attempt`] (one try of one
//! transaction or group), [`dispatch`] (the planner, no I/O), [`group`] (splitting queues into
//! server transactions and deciding in-doubt groups, no I/O), [`tuning`] (what the tier
//! measures for the batch-size controller and the sizes it sets, no I/O), [`run`] (the driver).

/// For an enum chosen by name on the command line: `ALL` (in the order an error lists them),
/// `name`, `FromStr` and (feature `clap`) `clap::ValueEnum`, from one list of variants and names.
macro_rules! named {
    ($ty:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl std::str::FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                crate::parse_named(s, Self::ALL, Self::name)
            }
        }

        #[cfg(feature = "clap")]
        impl clap::ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                Self::ALL
            }

            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(clap::builder::PossibleValue::new(self.name()))
            }
        }
    };
}

/// The value of `all` called `s`, or an error that lists the names.
fn parse_named<T: Copy>(s: &str, all: &[T], name: fn(T) -> &'static str) -> std::result::Result<T, String> {
    all.iter().copied().find(|&v| name(v) == s).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|&v| name(v)).collect();
        let (last, rest) = names.split_last().expect("a named enum has variants");
        if rest.is_empty() {
            format!("`{s}`: expected {last}")
        } else {
            format!("`{s}`: expected {} or {last}", rest.join(", "))
        }
    })
}

pub mod attempt;
pub mod cluster;
pub mod connection;
pub mod dispatch;
mod error;
pub mod group;
pub mod run;
pub mod schema;
pub mod tuning;

pub use attempt::Procedures;
pub use cluster::Cluster;
pub use connection::{Isolation, SessionConfig};
pub use dispatch::{BatchPlan, Busy, Dispatcher, Mode, Pin, Placement};
pub use error::{PgError, Result};
pub use group::{GroupForm, GroupRetry};
pub use ordo_batching::BatchSize;
pub use run::{Dispatch, LedgerEntry, Outcome, RunSpec, TierConfig, TierReport, TierTuning, run_blocking};

#[cfg(test)]
mod tests {
    #[test]
    fn names_parse_and_errors_list_them() {
        for &mode in crate::Mode::ALL {
            assert_eq!(mode.name().parse::<crate::Mode>(), Ok(mode));
        }
        assert_eq!("x".parse::<crate::Mode>().unwrap_err(), "`x`: expected nobatch, batch or reorder");
        assert_eq!("x".parse::<crate::Dispatch>().unwrap_err(), "`x`: expected barrier or rolling");
        assert_eq!("x".parse::<crate::Procedures>().unwrap_err(), "`x`: expected functions or statements");
    }
}
