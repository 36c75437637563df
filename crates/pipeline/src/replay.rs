//! The serial-replay check: commit-timestamp order is a valid serial order, and the store the
//! engine ended with is the store that order produces.
//!
//! Replays the committed transactions one at a time in timestamp order against a fresh copy of
//! the loaded database, with the workload's own procedures. Each replayed transaction must read
//! exactly the versions the engine's transaction read and write exactly the values it wrote;
//! at the end every key must hold the engine's final value and version.

use ordo_workload::{Key, Step, Value, Workload, execute};

use crate::message::{CommitRecord, Ts};

/// Replays `history` (any order) and compares with `store`; returns the first discrepancy.
pub fn check_serial_replay(
    workload: &dyn Workload,
    history: &[CommitRecord],
    store: &[(Value, Ts)],
) -> Result<(), String> {
    let mut records: Vec<&CommitRecord> = history.iter().collect();
    records.sort_by_key(|r| r.ts);
    for pair in records.windows(2) {
        if pair[0].ts == pair[1].ts {
            return Err(format!(
                "transactions {} and {} share commit timestamp {}",
                pair[0].id, pair[1].id, pair[0].ts
            ));
        }
    }
    let mut replay: Vec<(Value, Ts)> = (0..workload.key_count()).map(|k| (workload.initial_value(k), 0)).collect();
    let (mut values, mut reads, mut writes) = (Vec::new(), Vec::new(), Vec::new());
    for record in records {
        let mut seen: Vec<(Key, Ts)> = Vec::new();
        let outcome = execute(
            workload,
            &record.txn,
            |key| {
                let (value, version) = replay[key as usize];
                seen.push((key, version));
                value
            },
            &mut values,
            &mut reads,
            &mut writes,
        );
        if outcome != Step::Commit {
            return Err(format!(
                "transaction {} (ts {}) does not commit when replayed: {outcome:?}",
                record.id, record.ts
            ));
        }
        if seen != record.reads {
            return Err(format!(
                "transaction {} (ts {}) read {:?} in the engine but {:?} in timestamp order",
                record.id, record.ts, record.reads, seen
            ));
        }
        if writes != record.writes {
            return Err(format!(
                "transaction {} (ts {}) wrote {:?} in the engine but {:?} in timestamp order",
                record.id, record.ts, record.writes, writes
            ));
        }
        for &(key, value) in &writes {
            replay[key as usize] = (value, record.ts);
        }
    }
    for (key, (expected, actual)) in replay.iter().zip(store).enumerate() {
        if expected != actual {
            return Err(format!("key {key}: the engine ended with {actual:?}, the serial replay with {expected:?}"));
        }
    }
    Ok(())
}
