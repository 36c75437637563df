//! One scripted scenario per isolation anomaly, two transactions interleaved step by step
//! through the protocol interface, against every protocol.
//!
//! Expected: `mvcc_si` shows write skew and nothing else; every serializable protocol shows
//! none. `serial` admits no interleaving, so it runs each script's transactions one after the
//! other (the only schedule it has).
//!
//! Scripts start T1 before T2, so under wait-die T1 is the older transaction and every lock
//! conflict in these scripts makes the requester die rather than wait (a single-threaded script
//! cannot wait).

use ordo_threads::{Deadlock, Isolation, Mvcc, Protocol, Serial, Silo, TicToc, TwoPhaseLocking};
use ordo_workload::{Micro, MicroConfig, Value, Workload};

const X: u64 = 1;
const Y: u64 = 2;

#[derive(Debug, Clone, Copy)]
enum Op {
    Read(u64),
    /// Write the sum of everything this transaction read so far, plus a constant.
    Write(u64, Value),
    Commit,
    Abort,
}

/// What a script produced.
#[derive(Debug)]
struct Outcome {
    committed: [bool; 2],
    /// Values each transaction read, in order (while it was alive).
    reads: [Vec<Value>; 2],
    final_x: Value,
    final_y: Value,
}

fn run_script<P: Protocol>(protocol: &P, script: &[(usize, Op)]) -> Outcome {
    let mut workers = [protocol.worker(0, false), protocol.worker(1, false)];
    let mut alive = [false; 2];
    let mut begun = [false; 2];
    let mut committed = [false; 2];
    let mut reads: [Vec<Value>; 2] = [Vec::new(), Vec::new()];
    let mut ordered: Vec<(usize, Op)> = script.to_vec();
    if !P::CONCURRENT {
        ordered.sort_by_key(|&(t, _)| t);
    }
    for (t, op) in ordered {
        if !begun[t] {
            protocol.begin(&mut workers[t], false);
            begun[t] = true;
            alive[t] = true;
        }
        if !alive[t] {
            continue;
        }
        let result = match op {
            Op::Read(key) => protocol.read(&mut workers[t], key, false).map(|v| reads[t].push(v)),
            Op::Write(key, plus) => {
                let value = reads[t].iter().sum::<Value>() + plus;
                protocol.write(&mut workers[t], key, value)
            }
            Op::Commit => protocol.commit(&mut workers[t]).map(|()| {
                committed[t] = true;
                alive[t] = false;
            }),
            Op::Abort => {
                protocol.abort(&mut workers[t]);
                alive[t] = false;
                Ok(())
            }
        };
        if result.is_err() {
            protocol.abort(&mut workers[t]);
            alive[t] = false;
        }
    }
    Outcome { committed, reads, final_x: protocol.committed_value(X), final_y: protocol.committed_value(Y) }
}

/// T2 reads what T1 wrote before T1 aborts.
fn dirty_read<P: Protocol>(p: &P) -> bool {
    let o =
        run_script(p, &[(0, Op::Read(X)), (0, Op::Write(X, 100)), (1, Op::Read(X)), (0, Op::Abort), (1, Op::Commit)]);
    o.committed[1] && o.reads[1].contains(&100)
}

/// Both increment x from the same read; one increment disappears.
fn lost_update<P: Protocol>(p: &P) -> bool {
    let o = run_script(
        p,
        &[
            (0, Op::Read(X)),
            (1, Op::Read(X)),
            (0, Op::Write(X, 1)),
            (1, Op::Write(X, 1)),
            (0, Op::Commit),
            (1, Op::Commit),
        ],
    );
    o.committed == [true, true] && o.final_x != 2
}

/// T1 reads x before and y after T2 moves both: T1 sees half of T2.
fn read_skew<P: Protocol>(p: &P) -> bool {
    let o = run_script(
        p,
        &[
            (0, Op::Read(X)),
            (1, Op::Write(X, 5)),
            (1, Op::Write(Y, 5)),
            (1, Op::Commit),
            (0, Op::Read(Y)),
            (0, Op::Commit),
        ],
    );
    o.committed[0] && o.reads[0].len() == 2 && o.reads[0][0] != o.reads[0][1]
}

/// Both read x and y, each writes one of them: each commits without the other's effect.
fn write_skew<P: Protocol>(p: &P) -> bool {
    let o = run_script(
        p,
        &[
            (0, Op::Read(X)),
            (0, Op::Read(Y)),
            (1, Op::Read(X)),
            (1, Op::Read(Y)),
            (0, Op::Write(X, 1)),
            (1, Op::Write(Y, 1)),
            (0, Op::Commit),
            (1, Op::Commit),
        ],
    );
    // Both wrote 0 + 0 + 1: neither saw the other's write. (Run one after the other, the
    // second writes 0 + 1 + 1.)
    o.committed == [true, true] && (o.final_x, o.final_y) == (1, 1)
}

fn workload() -> Micro {
    Micro::new(MicroConfig { keys: 16, theta: 0.0, reads: 1, writes: 1, shared: 0 }).unwrap()
}

/// A named scenario: whether it observed its anomaly.
type Scenario<P> = (&'static str, fn(&P) -> bool);

/// Runs every scenario on a fresh store; returns the anomalies observed, by name.
fn anomalies<P: Protocol>(build: impl Fn(&dyn Workload) -> P) -> Vec<&'static str> {
    let w = workload();
    let scenarios: [Scenario<P>; 4] = [
        ("dirty_read", dirty_read),
        ("lost_update", lost_update),
        ("read_skew", read_skew),
        ("write_skew", write_skew),
    ];
    scenarios.into_iter().filter(|(_, scenario)| scenario(&build(&w))).map(|(name, _)| name).collect()
}

#[test]
fn snapshot_isolation_shows_write_skew_and_nothing_else() {
    assert_eq!(anomalies(|w| Mvcc::new(w, 16, 1, 4, Isolation::Snapshot)), vec!["write_skew"]);
}

#[test]
fn serializable_protocols_show_no_anomaly() {
    let none: Vec<&str> = Vec::new();
    assert_eq!(anomalies(|w| Silo::new(w, 16, 1)), none, "silo");
    assert_eq!(anomalies(|w| TicToc::new(w, 16, 1)), none, "tictoc");
    assert_eq!(anomalies(|w| TwoPhaseLocking::new(w, 16, 1, Deadlock::NoWait)), none, "no_wait");
    assert_eq!(anomalies(|w| TwoPhaseLocking::new(w, 16, 1, Deadlock::WaitDie)), none, "wait_die");
    assert_eq!(anomalies(|w| Mvcc::new(w, 16, 1, 4, Isolation::SerialSafetyNet)), none, "ssi");
    assert_eq!(anomalies(|w| Serial::new(w, 16, 1)), none, "serial");
}

/// The scripts are not vacuous: without interleaving (one after the other) every transaction
/// commits under every protocol.
#[test]
fn scripts_commit_when_run_alone() {
    let w = workload();
    let silo = Silo::new(&w, 16, 1);
    let o = run_script(&silo, &[(0, Op::Read(X)), (0, Op::Read(Y)), (0, Op::Write(X, 1)), (0, Op::Commit)]);
    assert_eq!(o.committed, [true, false]);
    assert_eq!(o.final_x, 1);
}
