//! `ordo bench --engine threads` on the storage engine's tables: TPC-C, its hybrid analytic
//! workload, and key-value workloads behind the ordered index, from the outside.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

fn ordo() -> Command {
    Command::cargo_bin("ordo").unwrap()
}

// Long enough that a loaded machine still commits some of every kind of transaction.
const SHORT: [&str; 6] = ["--duration", "1", "--warmup", "0.1", "--cooldown", "0"];

fn results(json: &std::path::Path) -> Vec<Value> {
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

#[test]
fn tpcc_runs_on_tables_and_reports_its_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("tpcc.json");
    ordo()
        .args(["bench", "--engine", "threads", "--workload", "tpcc", "--warehouses", "2", "--binding", "random"])
        .args(["--threads", "2", "--verify", "--json"])
        .arg(&json)
        .args(SHORT)
        .assert()
        .success()
        .stderr(contains("1: W_YTD = sum(D_YTD)"))
        .stderr(contains("verified:"));
    let records = results(&json);
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(record["workload"], "tpcc");
    assert_eq!(record["config"]["index"], "tree");
    assert_eq!(record["config"]["warehouses"], 2);
    assert_eq!(record["config"]["binding"], "random");
    assert!(record["tpmc"].as_f64().unwrap() > 0.0, "NewOrders per minute: {record}");
    for procedure in ["new_order", "payment"] {
        assert!(record["commits_by_procedure"][procedure].as_f64().unwrap() > 0.0, "{procedure}: {record}");
    }
}

#[test]
fn bindings_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bindings.json");
    ordo()
        .args(["bench", "--engine", "threads", "--workload", "tpcc", "--warehouses", "2", "--binding", "fixed,random"])
        .args(["--threads", "2", "--json"])
        .arg(&json)
        .args(SHORT)
        .assert()
        .success();
    let bindings: Vec<Value> = results(&json).iter().map(|r| r["config"]["binding"].clone()).collect();
    assert_eq!(bindings, vec![Value::from("fixed"), Value::from("random")]);
}

#[test]
fn the_hybrid_workload_counts_its_analytic_transaction_apart() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("hybrid.json");
    ordo()
        .args(["bench", "--engine", "threads", "--workload", "tpcc-hybrid", "--analytic-range", "0.01,0.05"])
        .args(["--threads", "1", "--json"])
        .arg(&json)
        .args(SHORT)
        .assert()
        .success();
    let records = results(&json);
    assert_eq!(records.len(), 2, "one run per contention degree");
    for record in &records {
        assert!(record["commits_by_procedure"]["analytic"].as_f64().unwrap() > 0.0, "{record}");
        assert!(record["config"]["analytic_range"].is_f64());
    }
}

#[test]
fn key_value_workloads_run_on_either_index_and_say_which() {
    let dir = tempfile::tempdir().unwrap();
    for index in ["tree", "array"] {
        let json = dir.path().join(format!("{index}.json"));
        ordo()
            .args(["bench", "--engine", "threads", "--workload", "smallbank", "--mix", "conserved", "--keys", "1000"])
            .args(["--index", index, "--verify", "--json"])
            .arg(&json)
            .args(SHORT)
            .assert()
            .success();
        assert_eq!(results(&json)[0]["config"]["index"], index);
    }
}

#[test]
fn every_protocol_and_reorder_run_tpcc_serializably() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("protocols.json");
    ordo()
        .args(["bench", "--engine", "threads", "--workload", "tpcc", "--warehouses", "2", "--binding", "random"])
        .args(["--protocol", "tictoc,no_wait,wait_die,ssi,serial,reorder", "--threads", "2", "--verify", "--json"])
        .arg(&json)
        .args(["--duration", "0.3", "--warmup", "0.05", "--cooldown", "0"])
        .assert()
        .success();
    let protocols: Vec<String> = results(&json).iter().map(|r| r["mode"].as_str().unwrap().to_owned()).collect();
    assert_eq!(protocols, ["tictoc", "no_wait", "wait_die", "ssi", "serial", "reorder"]);
}

#[test]
fn what_cannot_run_on_tables_is_refused_before_anything_runs() {
    ordo()
        .args(["bench", "--engine", "pipeline", "--workload", "tpcc"])
        .assert()
        .failure()
        .stderr(contains("run it with --engine threads"));
    ordo()
        .args(["bench", "--engine", "threads", "--workload", "tpcc", "--index", "array"])
        .args(SHORT)
        .assert()
        .failure()
        .stderr(contains("dense keys"));
    ordo()
        .args(["bench", "--engine", "threads", "--workload", "tpcc", "--binding", "fixed,sideways"])
        .assert()
        .failure()
        .stderr(contains("binding"));
    ordo()
        .args(["bench", "--engine", "threads", "--workload", "tpcc", "--index", "hash"])
        .assert()
        .code(2)
        .stderr(contains("[possible values: tree, array]"));
}

#[test]
fn ycsb_core_workloads_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("e.json");
    ordo()
        .args(["bench", "--engine", "threads", "--workload", "ycsb", "--ycsb", "e", "--records", "20000", "--verify"])
        .args(["--json"])
        .arg(&json)
        .args(SHORT)
        .assert()
        .success();
    let record = &results(&json)[0];
    assert_eq!(record["config"]["ycsb"], "e");
    assert_eq!(record["config"]["index"], "tree", "scans and inserts run on tables");
    // a, b, c and f are key-value mixes: every engine runs them.
    ordo()
        .args(["bench", "--engine", "threads", "--workload", "ycsb", "--ycsb", "b", "--records", "20000"])
        .args(["--protocol", "silo,tictoc,no_wait"])
        .args(SHORT)
        .assert()
        .success();
    ordo()
        .args(["bench", "--engine", "pipeline", "--workload", "ycsb", "--ycsb", "e"])
        .assert()
        .failure()
        .stderr(contains("needs scans and inserts"));
    ordo().args(["bench", "--workload", "micro", "--ycsb", "a"]).assert().failure().stderr(contains("--workload ycsb"));
    ordo().args(["bench", "--workload", "ycsb", "--ycsb", "g"]).assert().failure();
}
