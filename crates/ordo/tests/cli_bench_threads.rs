//! `ordo bench --engine threads` from the outside: results, sweeps, verification, history, and
//! bad flags (a clear error and exit code 1, never a panic).

use assert_cmd::Command;
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;
use serde_json::Value;

fn ordo() -> Command {
    Command::cargo_bin("ordo").unwrap()
}

const SHORT: [&str; 4] = ["--duration", "0.2", "--warmup", "0.05"];
const SMALL_YCSB: [&str; 6] = ["--workload", "ycsb", "--records", "20000", "--payload-bytes", "16"];

#[test]
fn sweeps_protocols_threads_and_theta() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    ordo()
        .args(["bench", "--engine", "threads", "--protocol", "silo,serial,reorder", "--threads", "1,2"])
        .args(["--theta", "0,0.99"])
        .args(SMALL_YCSB)
        .args(SHORT)
        .arg("--json")
        .arg(&json)
        .assert()
        .success()
        .stdout(contains("reorder"));
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // serial runs once per θ (one thread), the others twice.
    assert_eq!(records.len(), 2 * (2 + 1 + 2));
    for record in &records {
        assert_eq!(record["engine"], "threads");
        assert_eq!(record["workload"], "ycsb");
        assert!(record["commits"].as_f64().unwrap() > 0.0, "{record}");
        assert!(record["latency_us"]["p99"].as_f64().is_some());
        assert_eq!(record["config"]["ops"], 16);
    }
    assert!(records.iter().any(|r| r["mode"] == "serial" && r["config"]["threads"] == 1));
}

#[test]
fn verify_checks_serializability_and_the_conserved_total() {
    ordo()
        .args(["bench", "--engine", "threads", "--protocol", "tictoc,ssi,reorder+no_wait", "--workload", "smallbank"])
        .args(["--mix", "conserved", "--keys", "500", "--theta", "0.9", "--verify"])
        .args(SHORT)
        .assert()
        .success()
        .stderr(contains("verified:"))
        .stderr(contains("conserved total hold"));
    // The flat store, an ablation named explicitly, checks the same.
    ordo()
        .args(["bench", "--engine", "threads", "--protocol", "tictoc,reorder", "--workload", "smallbank"])
        .args(["--index", "array", "--mix", "conserved", "--keys", "500", "--theta", "0.9", "--verify"])
        .args(SHORT)
        .assert()
        .success()
        .stderr(contains("verified:"))
        .stderr(contains("conserved total exact"));
}

#[test]
fn verify_checks_snapshot_isolation_for_mvcc_si() {
    // Tables with scans and inserts, and the flat store: both histories are checked for the
    // isolation mvcc_si promises, not for serializability.
    let tables: &[&str] = &["--workload", "ycsb", "--ycsb", "e", "--records", "2000"];
    let flat: &[&str] = &["--workload", "micro", "--keys", "200", "--index", "array"];
    for workload in [tables, flat] {
        ordo()
            .args(["bench", "--engine", "threads", "--protocol", "mvcc_si", "--theta", "0.9", "--verify"])
            .args(workload)
            .args(SHORT)
            .assert()
            .success()
            .stderr(contains("committed transactions snapshot isolation"));
    }
}

#[test]
fn history_feeds_the_checker() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("h.jsonl");
    ordo()
        .args(["bench", "--engine", "threads", "--protocol", "wait_die", "--workload", "micro", "--keys", "1000"])
        .args(SHORT)
        .arg("--history")
        .arg(&history)
        .assert()
        .success();
    ordo().arg("check").arg(&history).assert().success();
}

#[test]
fn bad_flags_fail_clearly() {
    // Exit status 2: clap refuses the value and lists the ones it takes; 1: out of range.
    let cases: [(&[&str], i32, &str); 12] = [
        (&["--mode", "srvc"], 1, "takes --protocol"),
        (&["--protocol", "occ"], 2, "invalid value 'occ' for '--protocol <PROTOCOL>'"),
        (&["--protocol", "reorder+serial"], 2, "possible values: silo, tictoc"),
        (&["--threads", "0"], 1, "--threads 0: must be in 1..=256"),
        (&["--threads", "1000"], 1, "--threads 1000: must be in 1..=256"),
        (&["--workload", "ycsb", "--records", "10", "--ops", "16"], 1, "distinct keys"),
        (&["--workload", "ycsb", "--read-ratio", "2"], 1, "read-ratio"),
        (&["--workload", "ycsb", "--write-kind", "sideways"], 2, "[possible values: rmw, blind]"),
        (&["--protocol", "reorder", "--batch", "0"], 2, "expected `auto` or a whole number from 1 to 100000"),
        (&["--protocol", "reorder", "--batch", "20000"], 1, "--batch 20000: must be in 1..=10000"),
        (&["--protocol", "reorder", "--threads", "4", "--batch", "auto,3"], 1, "3 transactions cannot feed 4 threads"),
        (&["--protocol", "reorder", "--index", "array", "--batch", "8,auto"], 1, "or use --index tree, where auto"),
    ];
    for (args, status, expected) in cases {
        for engine in [&["bench", "--engine", "threads"][..], &["bench", "threads"]] {
            ordo()
                .args(engine)
                .args(args)
                .args(SHORT)
                .assert()
                .code(status)
                .stderr(contains(expected))
                .stderr(contains("panicked").not());
        }
    }
    ordo()
        .args(["bench", "--engine", "threadz"])
        .args(SHORT)
        .assert()
        .code(1)
        .stderr(contains("expected pipeline, threads or pg"));
}

#[test]
fn reorder_batches_are_auto_by_default_and_a_number_fixes_them() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    ordo()
        .args(["bench", "threads", "--protocol", "silo,reorder", "--batch", "6,auto", "--workload", "smallbank"])
        .args(["--mix", "conserved", "--keys", "500", "--theta", "0.8", "--verify"])
        .args(["--duration", "1.5", "--warmup", "0.2", "--json"])
        .arg(&json)
        .assert()
        .success()
        .stderr(contains("verified:"));
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(records.len(), 3, "silo once (it has no batch), reorder once per batch");
    let silo = records.iter().find(|r| r["mode"] == "silo").unwrap();
    assert!(silo["config"].get("batch").is_none() && silo.get("batch_sizes").is_none(), "{silo}");
    let fixed = records.iter().find(|r| r["config"]["batch"] == 6).unwrap();
    assert!(fixed.get("batch_sizes").is_none(), "a fixed batch is not tuned: {fixed}");
    assert_eq!(fixed["batches"]["size_mean"], 6.0, "every batch held 6: {fixed}");
    let auto = records.iter().find(|r| r["config"]["batch"] == "auto").unwrap();
    let sizes: Vec<u64> =
        auto["batch_sizes"].as_array().unwrap().iter().map(|s| s["batch"].as_u64().unwrap()).collect();
    assert!(sizes.len() > 1, "at least one round of the controller: {auto}");
    assert_eq!(sizes[0], 16, "auto starts at 8 per thread");
    assert!(sizes.iter().all(|size| (2..=64).contains(size)), "within the threads and 32 per thread: {sizes:?}");
}

#[test]
fn reorder_assignment_sweeps_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    ordo()
        .args(["bench", "threads", "--protocol", "silo,reorder", "--assignment", "sticky,even"])
        .args(["--workload", "tpcc", "--warehouses", "1", "--verify"])
        .args(SHORT)
        .arg("--json")
        .arg(&json)
        .assert()
        .success()
        .stdout(contains("assignment"))
        .stderr(contains("verified:"));
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(records.len(), 3, "silo once (nothing to assign), reorder once per assignment");
    let silo = records.iter().find(|r| r["mode"] == "silo").unwrap();
    assert!(silo["config"].get("assignment").is_none(), "{silo}");
    for assignment in ["sticky", "even"] {
        let run = records.iter().find(|r| r["config"]["assignment"] == assignment).unwrap();
        assert_eq!(run["mode"], "reorder");
        assert!(run["commits"].as_f64().unwrap() > 0.0, "{run}");
    }
    ordo()
        .args(["bench", "threads", "--protocol", "reorder", "--assignment", "round-robin"])
        .args(SMALL_YCSB)
        .args(SHORT)
        .assert()
        .code(2)
        .stderr(contains("possible values: sticky, even"));
}

#[test]
fn pregenerated_pools_are_the_default_for_replayable_workloads_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let config_of = |args: &[&str]| -> Vec<Value> {
        let json = dir.path().join("p.json");
        ordo().args(["bench", "threads"]).args(args).args(SHORT).arg("--json").arg(&json).assert().success();
        let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        records.into_iter().map(|r| r["config"].clone()).collect()
    };
    for index in ["tree", "array"] {
        let configs = config_of(&[&SMALL_YCSB[..], &["--index", index]].concat());
        assert_eq!(configs[0]["pregenerate"], 262_144, "{index}: {configs:?}");
        let configs = config_of(&[&SMALL_YCSB[..], &["--index", index, "--pregenerate", "off"]].concat());
        assert!(configs[0].get("pregenerate").is_none(), "{index}: {configs:?}");
    }
    // TPC-C draws as it goes whatever the flag says, and its results say so.
    let configs = config_of(&["--workload", "tpcc", "--warehouses", "1", "--pregenerate", "1000"]);
    assert!(configs[0].get("pregenerate").is_none(), "{configs:?}");
    for bad in ["0", "16777217", "lots"] {
        ordo()
            .args(["bench", "threads", "--pregenerate", bad])
            .args(SMALL_YCSB)
            .args(SHORT)
            .assert()
            .code(2)
            .stderr(contains("expected off or a number of transactions per worker in 1..=16777216"));
    }
}
