//! The interleaving simulator (`ordo_threads::tables::simulate`) over every protocol on tables,
//! many seeds each, and over deliberately broken protocols, which it must catch.
//!
//! ```text
//!   cargo test -p ordo-threads --test simulate                       SEEDS_DEFAULT seeds per protocol
//!   ORDO_SIM_SEEDS=100000 cargo test -p ordo-threads --release --test simulate -- silo    many more
//!   ORDO_SIM_FIRST=123456 ...                                        another range of seeds
//!   ORDO_SIM_SEED=123 cargo test -p ordo-threads --test simulate -- --exact silo::seeds  replay one
//! ```
//!
//! A failing seed panics with what broke and the command that replays it; the replay runs the
//! same schedule to the same outcome. Adding a protocol is one line in `protocols!` below.

use std::time::Instant;

use ordo_threads::ProtocolKind;
use ordo_threads::tables::mvcc::VERSIONS_DEFAULT;
use ordo_threads::tables::simulate::{SimFailure, SimReport, simulate};
use ordo_threads::tables::{
    Epochs, Index, Isolation, MvccTables, SiloFaults, SiloTables, TableProtocol, TicTocTables, TwoPhaseTables,
};
use ordo_workload::TableWorkload;

/// Seeds per protocol in a plain `cargo test`: about 5 s per protocol in a debug build on the
/// 2-core machine, so the seven protocols' share of the suite stays near 30 s of one core.
const SEEDS_DEFAULT: u64 = 600;
/// Seeds a broken protocol gets to show its bug.
const CAUGHT_WITHIN_SEEDS: u64 = 1_000;

/// The seeds to run: `ORDO_SIM_SEED` alone, or `ORDO_SIM_SEEDS` (default `default`) from
/// `ORDO_SIM_FIRST` (default 0).
fn seeds(default: u64) -> (std::ops::Range<u64>, bool) {
    let var = |name: &str| {
        std::env::var(name).ok().map(|value| {
            value.trim().parse::<u64>().unwrap_or_else(|_| panic!("{name}={value}: expected an unsigned integer"))
        })
    };
    match var("ORDO_SIM_SEED") {
        Some(seed) => (seed..seed + 1, true),
        None => {
            let first = var("ORDO_SIM_FIRST").unwrap_or(0);
            let count = var("ORDO_SIM_SEEDS").unwrap_or(default);
            (first..first.checked_add(count).expect("ORDO_SIM_FIRST + ORDO_SIM_SEEDS overflows"), false)
        }
    }
}

fn replay_command(seed: u64, test: &str) -> String {
    format!("ORDO_SIM_SEED={seed} cargo test -p ordo-threads --test simulate -- --exact {test} --nocapture")
}

/// Totals over the seeds of one test.
#[derive(Debug, Default)]
struct Totals {
    seeds: u64,
    transactions: usize,
    commits: usize,
    aborts: usize,
    user_aborts: usize,
    steps: u64,
    scans: usize,
    ambiguous_absences: usize,
    backtracks: usize,
}

impl Totals {
    fn add(&mut self, report: &SimReport) {
        self.seeds += 1;
        self.transactions += report.transactions;
        self.commits += report.commits;
        self.aborts += report.aborts;
        self.user_aborts += report.user_aborts;
        self.steps += report.steps;
        self.scans += report.check.scans;
        self.ambiguous_absences += report.check.ambiguous_absences;
        self.backtracks += report.placements.saturating_sub(report.commits);
    }
}

/// Runs the seeds on the protocol `build` makes; panics on the first failure with its replay
/// command.
fn run_seeds<P: TableProtocol>(test: &str, build: impl Fn(&dyn TableWorkload, Epochs) -> P) {
    let (seeds, one) = seeds(SEEDS_DEFAULT);
    let started = Instant::now();
    let mut totals = Totals::default();
    for seed in seeds.clone() {
        match simulate(seed, &build) {
            Ok(report) => {
                if one {
                    println!("{report:#?}");
                }
                totals.add(&report);
            }
            Err(failure) => panic!("{failure}\nreplay: {}", replay_command(seed, test)),
        }
    }
    println!("{test}: seeds {seeds:?} passed in {:.1} s: {totals:?}", started.elapsed().as_secs_f64());
    assert!(totals.commits > 0, "nothing committed");
    assert!(
        one || totals.commits * 2 > totals.transactions,
        "{} of {} transactions committed: a protocol that aborts everything cannot pass",
        totals.commits,
        totals.transactions
    );
}

/// Runs seeds of a deliberately broken protocol until one fails; the failure must replay
/// identically.
fn expect_caught<P: TableProtocol>(test: &str, build: impl Fn(&dyn TableWorkload, Epochs) -> P) -> SimFailure {
    expect_caught_by(test, None, build)
}

/// [`expect_caught`], by the oracle named `by` if given (failures by other oracles are passed
/// over).
fn expect_caught_by<P: TableProtocol>(
    test: &str,
    by: Option<&str>,
    build: impl Fn(&dyn TableWorkload, Epochs) -> P,
) -> SimFailure {
    let (seeds, _) = seeds(CAUGHT_WITHIN_SEEDS);
    for seed in seeds.clone() {
        if let Err(failure) = simulate(seed, &build)
            && by.is_none_or(|oracle| oracle == failure.oracle)
        {
            println!("{test} caught on seed {seed} by the {} oracle:\n{failure}", failure.oracle);
            println!("replay: {}", replay_command(seed, test));
            let again = simulate(seed, &build).expect_err("the failing seed fails again");
            assert_eq!(
                (again.oracle, &again.detail, &again.events),
                (failure.oracle, &failure.detail, &failure.events),
                "seed {seed} failed differently on replay"
            );
            return failure;
        }
    }
    panic!("{test}: no seed in {seeds:?} caught the broken protocol");
}

/// Two runs of one seed are the same run.
fn replays_deterministically<P: TableProtocol>(build: impl Fn(&dyn TableWorkload, Epochs) -> P) {
    for seed in [1, 2, 3, 0xdead_beef] {
        let first = simulate(seed, &build).unwrap_or_else(|failure| panic!("{failure}"));
        let second = simulate(seed, &build).unwrap_or_else(|failure| panic!("{failure}"));
        assert_eq!(first, second, "seed {seed} ran differently twice");
        assert!(first.steps > 0 && first.commits > 0, "{first:?}");
    }
}

/// One line per protocol on tables: its name and how to build it over a workload with a
/// manual epoch. Each gets `<name>::seeds` and `<name>::replays_deterministically`.
macro_rules! protocols {
    ($($name:ident => $build:expr,)*) => {
        $(
            mod $name {
                use super::*;

                #[test]
                fn seeds() {
                    run_seeds(concat!(stringify!($name), "::seeds"), $build);
                }

                #[test]
                fn replays_deterministically() {
                    super::replays_deterministically($build);
                }
            }
        )*
    };
}

protocols! {
    silo => |workload: &dyn TableWorkload, epochs| SiloTables::load(workload, Index::Tree, 1, epochs).unwrap(),
    tictoc => |workload: &dyn TableWorkload, epochs| TicTocTables::load(workload, Index::Tree, 1, epochs).unwrap(),
    no_wait => |workload: &dyn TableWorkload, epochs| {
        TwoPhaseTables::load(workload, Index::Tree, 1, epochs, ProtocolKind::NoWait).unwrap()
    },
    wait_die => |workload: &dyn TableWorkload, epochs| {
        TwoPhaseTables::load(workload, Index::Tree, 1, epochs, ProtocolKind::WaitDie).unwrap()
    },
    ssi => |workload: &dyn TableWorkload, epochs| {
        MvccTables::load(workload, Index::Tree, 1, epochs, Isolation::SerialSafetyNet, VERSIONS_DEFAULT).unwrap()
    },
    mvcc_si => |workload: &dyn TableWorkload, epochs| {
        MvccTables::load(workload, Index::Tree, 1, epochs, Isolation::Snapshot, VERSIONS_DEFAULT).unwrap()
    },
}

fn broken_silo(faults: SiloFaults) -> impl Fn(&dyn TableWorkload, Epochs) -> SiloTables {
    move |workload, epochs| SiloTables::load(workload, Index::Tree, 1, epochs).unwrap().with_faults(faults)
}

#[test]
fn silo_without_node_validation_is_caught() {
    let faults = SiloFaults { skip_node_validation: true, ..SiloFaults::default() };
    let failure = expect_caught("silo_without_node_validation_is_caught", broken_silo(faults));
    assert!(["history check", "replay", "final state", "invariants"].contains(&failure.oracle), "{failure}");
}

#[test]
fn silo_without_read_validation_is_caught() {
    let faults = SiloFaults { skip_read_validation: true, ..SiloFaults::default() };
    let failure = expect_caught("silo_without_read_validation_is_caught", broken_silo(faults));
    assert!(["history check", "replay", "final state", "invariants"].contains(&failure.oracle), "{failure}");
}

/// Needs the yield points between Silo's validation and install: without them no seed shows it.
#[test]
fn silo_ignoring_locks_of_committers_in_progress_is_caught() {
    let faults = SiloFaults { ignore_foreign_locks: true, ..SiloFaults::default() };
    let failure = expect_caught("silo_ignoring_locks_of_committers_in_progress_is_caught", broken_silo(faults));
    assert!(["history check", "replay", "final state", "invariants"].contains(&failure.oracle), "{failure}");
}

/// The history cannot say which absence a scan saw once a key has more than one absent
/// version (initially absent, then inserted and deleted, say), so the checker draws no edge
/// for it; the replay compares the rows themselves and finds no serial order.
#[test]
fn the_replay_catches_phantoms_the_history_check_is_blind_to() {
    let faults = SiloFaults { skip_node_validation: true, ..SiloFaults::default() };
    let test = "the_replay_catches_phantoms_the_history_check_is_blind_to";
    expect_caught_by(test, Some("replay"), broken_silo(faults));
}
