//! Record arenas under concurrent allocation and retirement: no id is handed out twice while
//! it is live, and retired ids are reused.

use std::sync::atomic::Ordering;

use ordo_storage::records::FRESH_BLOCK_RECORDS;
use ordo_storage::shard::SHARDS;
use ordo_storage::{Records, epoch};

const THREADS: u64 = 4;
const ROUNDS: u64 = 20_000;
const HELD_MAX: usize = 16;
const FLUSHES_MAX: usize = 100_000;

#[test]
fn no_id_is_handed_out_twice_while_live_and_ids_are_reused() {
    let records = Records::new(3, 256);
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let records = &records;
            scope.spawn(move || {
                let owner = thread + 1;
                let mut held: Vec<u64> = Vec::new();
                for round in 0..ROUNDS {
                    let id = records.alloc();
                    let claim = records.words(id)[0].compare_exchange(0, owner, Ordering::AcqRel, Ordering::Acquire);
                    assert_eq!(claim, Ok(0), "record {id} handed to thread {owner} while live");
                    records.words(id)[1].store(round, Ordering::Relaxed);
                    held.push(id);
                    if held.len() >= HELD_MAX || round % 3 == 0 || round == ROUNDS - 1 {
                        let guard = epoch::pin();
                        for id in held.drain(..) {
                            let words = records.words(id);
                            assert_eq!(words[0].load(Ordering::Acquire), owner, "record {id} changed owner while held");
                            words[0].store(0, Ordering::Release);
                            records.retire(id, &guard);
                        }
                    }
                }
            });
        }
    });
    let allocations = THREADS * ROUNDS;
    let high_water = records.allocated();
    assert!(high_water < allocations, "{high_water} ids for {allocations} allocations: retired ids were not reused");
    // Every id was retired: once the epoch has moved on, all are on free lists but those of
    // fresh blocks that shards took and did not hand out.
    let unhanded_max = (SHARDS as u64) * FRESH_BLOCK_RECORDS;
    for _ in 0..FLUSHES_MAX {
        if records.free_len() + unhanded_max >= high_water {
            break;
        }
        epoch::flush();
    }
    assert!(
        records.free_len() + unhanded_max >= high_water,
        "only {} of {high_water} ids came back after every record was retired",
        records.free_len()
    );
}

#[test]
fn dense_allocation_hands_out_the_ids_after_it() {
    let records = Records::new(8, 100);
    records.alloc_dense(1_000);
    assert_eq!(records.allocated(), 1_000);
    for id in 0..1_000 {
        records.words(id)[7].store(id, Ordering::Relaxed);
    }
    let next = records.alloc();
    assert!(next >= 1_000, "alloc after alloc_dense returned {next}");
    records.prefetch(next);
    assert_eq!(records.words(999)[7].load(Ordering::Relaxed), 999);
}
