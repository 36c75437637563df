//! `ordo fvs` and `ordo fvs-bench` from the outside: plans, JSON, and errors on bad input.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

fn ordo() -> Command {
    Command::cargo_bin("ordo").unwrap()
}

#[test]
fn plans_a_batch_from_stdin() {
    // t0 and t1 form a cycle; t2 reads what t0 writes.
    let batch = r#"[{"reads":[1],"writes":[2]},{"reads":[2],"writes":[1],"restarts":3},{"reads":[2],"writes":[9]}]"#;
    let output = ordo().args(["fvs", "--json"]).write_stdin(batch).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let plan: Value = serde_json::from_slice(&output.stdout).unwrap();
    let abort: Vec<u64> = serde_json::from_value(plan["abort"].clone()).unwrap();
    let order: Vec<u64> = serde_json::from_value(plan["order"].clone()).unwrap();
    assert_eq!(abort.len(), 1);
    let mut all: Vec<u64> = abort.iter().chain(&order).copied().collect();
    all.sort_unstable();
    assert_eq!(all, vec![0, 1, 2]);
    if order.contains(&0) {
        // t2 read key 2, which t0 writes: t2 must go first.
        let position = |t| order.iter().position(|&x| x == t).unwrap();
        assert!(position(2) < position(0));
    }
}

#[test]
fn rct_spares_the_restarted_transaction() {
    let batch = r#"[{"reads":[1],"writes":[2]},{"reads":[2],"writes":[1],"restarts":3}]"#;
    let output = ordo()
        .args(["fvs", "--json", "--algorithm", "greedy_sort", "--policy", "rct"])
        .write_stdin(batch)
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(plan["abort"], serde_json::json!([0]));
}

#[test]
fn plans_a_graph_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.json");
    std::fs::write(&path, r#"{"vertices": 3, "edges": [[0,1],[1,2],[2,0]]}"#).unwrap();
    ordo().arg("fvs").arg(&path).assert().success().stdout(contains("abort (1)"));
}

#[test]
fn malformed_input_names_position_and_field() {
    let cases = [
        (r#"[{"reads":[1],"writes":[2]},{"reads":[1],"writes":["x"]}]"#, "[1].writes[0]"),
        (r#"[{"reads":[1]}]"#, "missing field `writes`"),
        (r#"[{"reads":[1],"writes":[],"colour":1}]"#, "unknown field `colour`"),
        (r#"[{"reads":[1],"writes":[],"value":-2}]"#, "[0].value"),
        (r#"{"vertices": 2, "edges": [[0,1],[1,5]]}"#, "edge 1"),
        (r#"{"vertices": 2}"#, "missing field `edges`"),
        ("", "empty"),
        ("hello", "expected a JSON array"),
        (r#"[{"reads":[1],"writes":[2]}"#, "EOF"),
    ];
    for (input, expected) in cases {
        ordo().args(["fvs"]).write_stdin(input).assert().code(1).stderr(contains(expected));
    }
}

#[test]
fn bad_flags_are_errors_not_panics() {
    // Values clap refuses (exit status 2) name the flag and what it takes.
    ordo()
        .args(["fvs", "--algorithm", "fastest"])
        .write_stdin("[]")
        .assert()
        .code(2)
        .stderr(contains("unknown algorithm"));
    ordo()
        .args(["fvs", "--policy", "nice"])
        .write_stdin("[]")
        .assert()
        .code(2)
        .stderr(contains("[possible values: random, max-degree, sum-degree, prod-degree, rct, rdeg, value]"));
    ordo()
        .args(["fvs", "--algorithm", "greedy_prod", "--policy", "rdeg"])
        .write_stdin("[]")
        .assert()
        .code(1)
        .stderr(contains("greedy_scc --policy rdeg"));
    ordo().args(["fvs", "--multi-factor", "0"]).write_stdin("[]").assert().code(1).stderr(contains("--multi-factor 0"));
    ordo().args(["fvs", "/no/such/file.json"]).assert().code(1).stderr(contains("cannot read"));
    ordo().args(["fvs-bench", "--theta", "1.5"]).assert().code(1).stderr(contains("theta"));
    ordo().args(["fvs-bench", "--batch-size", "0"]).assert().code(1).stderr(contains("batch-size"));
    ordo().args(["fvs-bench", "--keys", "5"]).assert().code(1).stderr(contains("keys"));
    ordo().args(["fvs-bench", "--batches", "many"]).assert().code(2);
}

#[test]
fn fvs_bench_writes_json_and_csv_records() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("fvs.json");
    let csv = dir.path().join("fvs.csv");
    ordo()
        .args(["fvs-bench", "--batches", "20", "--theta", "0.6,0.9", "--algorithms", "search,greedy_sort,random_3"])
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .assert()
        .success()
        .stdout(contains("greedy_sort"));
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(records.len(), 6);
    for record in &records {
        for field in ["algorithm", "theta", "batch_size", "batches", "fvs_mean", "time_us_median", "time_us_p99"] {
            assert!(record.get(field).is_some(), "missing {field} in {record}");
        }
        assert!(record["fvs_gap_mean"].as_f64().unwrap() >= 0.0, "no algorithm beats the exact search");
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 7);
    assert!(text.starts_with("algorithm,theta,batch_size"));
}
