//! `ordo bench` from the outside: the result contract, verification, history, and errors.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

fn ordo() -> Command {
    Command::cargo_bin("ordo").unwrap()
}

const SHORT: [&str; 4] = ["--duration", "0.3", "--warmup", "0.1"];

#[test]
fn json_and_csv_follow_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    ordo()
        .args(["bench", "--engine", "pipeline", "--workload", "micro", "--mode", "base,srvc", "--theta", "0.8"])
        .args(["--concurrency", "100"])
        .args(SHORT)
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .assert()
        .success()
        .stdout(contains("srvc"));
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(records.len(), 2);
    for record in &records {
        for field in ["engine", "workload", "mode", "theta", "commits", "throughput_tps", "abort_rate", "latency_us"] {
            assert!(record.get(field).is_some(), "missing {field}");
        }
        for field in ["mean", "p50", "p95", "p99", "max"] {
            assert!(record["latency_us"].get(field).is_some(), "missing latency_us.{field}");
        }
        assert!(record["commits"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(records[1]["mode"], "srvc");
    assert!(records[1]["batches"]["count"].as_u64().unwrap() > 0, "srvc plans batches");
    // Every batching point is auto by default, and the result records what the controller
    // chose over time; each mode's flush interval starts at its own measured best (base's
    // follows the concurrency: 64 at 100 live transactions).
    assert_eq!(records[0]["config"]["messages_per_flush"], "auto");
    assert_eq!(records[1]["config"]["batch_size"], "auto");
    assert_eq!(records[0]["batch_sizes"][0]["flush"], 64);
    assert_eq!(records[1]["batch_sizes"][0]["flush"], 256);
    assert_eq!(records[1]["batch_sizes"][0]["validator"], 50, "auto batches start at half the concurrency");
    assert!(records[0]["batch_sizes"][0].get("validator").is_none(), "base has no validator batch");
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(text.starts_with("engine,workload,mode,theta"));
}

#[test]
fn verify_checks_the_run_and_history_feeds_the_checker() {
    ordo()
        .args([
            "bench",
            "--workload",
            "smallbank",
            "--mix",
            "conserved",
            "--keys",
            "1000",
            "--theta",
            "0.9",
            "--verify",
        ])
        .args(SHORT)
        .assert()
        .success()
        .stderr(contains("verified:"));
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("h.jsonl");
    ordo()
        .args(["bench", "--mode", "vc", "--keys", "2000"])
        .args(SHORT)
        .arg("--history")
        .arg(&history)
        .assert()
        .success();
    ordo().arg("check").arg(&history).arg("--timestamps").assert().success();
}

#[test]
fn bad_configuration_fails_before_running() {
    // Exit status 2: the command line does not parse (clap names the flag and the values it
    // takes); 1: it parses, but a value is out of range or the combination cannot run.
    let cases: [(&[&str], i32, &str); 14] = [
        (&["--theta", "1.5"], 1, "--theta"),
        (&["--mode", "fast"], 2, "invalid value 'fast' for '--mode <MODE>'"),
        (&["--mode", "fast"], 2, "[possible values: base, batch, sr, vc, srvc]"),
        (&["--batch-size", "0"], 2, "expected `auto` or a whole number from 1 to 100000"),
        (&["--batch-size", "20000"], 1, "--batch-size 20000: must be in 1..=10000"),
        (&["--keys", "5"], 1, "keys"),
        (&["--workload", "tpch"], 2, "invalid value 'tpch' for '--workload <WORKLOAD>'"),
        (&["--engine", "quantum"], 1, "unknown engine"),
        (&["--cooldown=-1"], 1, "--cooldown"),
        (&["--placement", "client,processor"], 2, "no thread hosts"),
        (&["--policy", "kind"], 2, "invalid value 'kind' for '--policy <POLICY>'"),
        (&["--theta", "0.5,0.6", "--history", "h.jsonl"], 1, "--history records one run"),
        (&["--workload", "smallbank", "--mix", "1,2,3"], 1, "six weights"),
        (&["--protocol", "silo"], 2, "unexpected argument '--protocol'"),
    ];
    for (args, status, expected) in cases {
        ordo().arg("bench").args(args).args(SHORT).assert().code(status).stderr(contains(expected));
    }
    ordo().args(["bench", "--concurrency", "lots"]).assert().code(2);
    ordo().args(["bench", "--duration", "0"]).assert().code(1).stderr(contains("--duration"));
    // The subcommand form takes the same flags.
    ordo().args(["bench", "pipeline", "--mode", "fast"]).assert().code(2);
    ordo().args(["bench", "pipeline", "--engine", "threads"]).assert().code(1).stderr(contains("give one of them"));
}

#[test]
fn the_engine_flag_and_the_subcommand_run_the_same_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let mut records = Vec::new();
    for form in [&["bench", "--engine", "threads"][..], &["bench", "threads"]] {
        let json = dir.path().join(format!("{}.json", form.len()));
        ordo()
            .args(form)
            .args(["--workload", "micro", "--keys", "1000", "--protocol", "silo,tictoc", "--json"])
            .arg(&json)
            .args(SHORT)
            .assert()
            .success();
        let results: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        records.push(results.iter().map(|r| (r["mode"].clone(), r["config"].clone())).collect::<Vec<_>>());
    }
    assert_eq!(records[0], records[1]);
    assert_eq!(records[0].len(), 2);
}

#[test]
fn flush_messages_overrides_the_mode_default() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    ordo()
        .args(["bench", "--engine", "pipeline", "--mode", "base", "--theta", "0.5", "--flush-messages", "8,32"])
        .args(SHORT)
        .arg("--json")
        .arg(&json)
        .assert()
        .success()
        .stdout(contains("flush"));
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let flushes: Vec<&Value> = records.iter().map(|r| &r["config"]["messages_per_flush"]).collect();
    assert_eq!(flushes, [8, 32]);
    // 0 no longer means "the mode's default": leave the flag out for that.
    ordo().args(["bench", "--flush-messages", "0"]).assert().code(2).stderr(contains("--flush-messages"));
}

#[test]
fn placement_given_twice_sweeps_both() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (two, one) = ("processor,storage;client,validator,reorder", "processor,storage,client,validator,reorder");
    ordo()
        .args(["bench", "--engine", "pipeline", "--mode", "base", "--theta", "0.5"])
        .args(["--placement", two, "--placement", one])
        .args(SHORT)
        .arg("--json")
        .arg(&json)
        .assert()
        .success()
        .stdout(contains("placement"));
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runtimes: Vec<(&Value, &Value)> =
        records.iter().map(|r| (&r["config"]["placement"], &r["config"]["threads"])).collect();
    assert_eq!(runtimes, [(&Value::from(two), &Value::from(2)), (&Value::from(one), &Value::from(1))]);
}

#[test]
fn headline_compares_both_deployments() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("h.json");
    let output = ordo()
        .args(["headline", "--theta", "0.8", "--duration", "0.2", "--runs", "2", "--json"])
        .arg(&json)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(output).unwrap();
    let rows: Vec<&str> = text.lines().filter(|line| line.trim_start().starts_with("0.8")).collect();
    assert_eq!(rows.len(), 2, "one row per deployment:\n{text}");
    for (row, threads) in rows.iter().zip(["2", "1"]) {
        assert_eq!(row.split_whitespace().nth(1), Some(threads), "{row}");
        assert!(row.contains('x'), "a speed-up in {row}");
    }
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(records.len(), 4, "base and srvc on two deployments");
    for record in &records {
        assert_eq!(record["runs"], 2, "every point runs twice");
        assert!(record["median"]["throughput_tps"].as_f64().unwrap() > 0.0, "medians are reported");
    }
    // The notes are computed from the table: each mode is named with the deployment that won.
    for mode in ["base", "srvc"] {
        assert!(text.contains(&format!("{mode} was faster on ")), "{text}");
    }
    assert!(text.contains("srvc/base ranged from"), "{text}");
    // srvc/base pairs the runs of each round: the range column holds two ratios.
    for row in &rows {
        let range = row.split_whitespace().nth(7).unwrap();
        let bounds: Vec<f64> = range.split('-').map(|x| x.parse().unwrap()).collect();
        assert!(bounds.len() == 2 && bounds[0] <= bounds[1], "per-round range in {row}");
    }
    // On two or more cores the machine's cross-core round trip is measured before each run.
    if std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2) {
        assert!(text.contains("Cross-core round trip of a cache line"), "{text}");
    }
}
