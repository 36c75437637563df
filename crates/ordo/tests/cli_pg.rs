//! `ordo pg` and `ordo bench --engine pg` from the outside, on a throwaway cluster of their own
//! (skipped without PostgreSQL's programs, except under `CI=true`).

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

fn ordo() -> Command {
    Command::cargo_bin("ordo").unwrap()
}

#[test]
fn bad_pg_input_is_a_clear_error() {
    ordo()
        .args(["bench", "--engine", "pg", "--mode", "srvc"])
        .assert()
        .code(2)
        .stderr(contains("[possible values: nobatch, batch, reorder]"));
    ordo()
        .args(["bench", "--engine", "pg", "--workload", "micro"])
        .assert()
        .failure()
        .stderr(contains("runs smallbank"));
    ordo()
        .args(["bench", "--engine", "pg", "--isolation", "snapshot"])
        .assert()
        .code(2)
        .stderr(contains("[possible values: serializable, repeatable-read]"));
    // Grouping is for batch and reorder; nobatch runs one transaction at a time.
    ordo()
        .args(["bench", "--engine", "pg", "--mode", "nobatch,reorder", "--pg-group", "8"])
        .assert()
        .failure()
        .stderr(contains("nobatch runs one transaction at a time"));
    ordo()
        .args(["bench", "--engine", "pg", "--mode", "reorder", "--pg-group", "0"])
        .assert()
        .code(2)
        .stderr(contains("invalid value '0' for '--pg-group <PG_GROUP>'"));
    ordo()
        .args(["bench", "--engine", "pg", "--mode", "reorder", "--pg-group", "2000"])
        .assert()
        .code(1)
        .stderr(contains("--pg-group 2000: must be in 1..=1000"));
    ordo()
        .args(["bench", "pg", "--mode", "reorder", "--pg-group-form", "batched"])
        .assert()
        .code(2)
        .stderr(contains("[possible values: pipelined, function]"));
    ordo()
        .args(["bench", "pg", "--mode", "reorder", "--pg-group-retry", "twice"])
        .assert()
        .code(2)
        .stderr(contains("[possible values: keep, halve, single]"));
    ordo()
        .args(["bench", "pg", "--mode", "reorder", "--pg-placement", "spread"])
        .assert()
        .code(2)
        .stderr(contains("[possible values: auto, components, thread-aware]"));
    // No flag takes 0 for "the default" or "unbounded": those are said by name.
    ordo()
        .args(["bench", "pg", "--pg-affinity-backlog", "0"])
        .assert()
        .code(2)
        .stderr(contains("expected unbounded or a number"));
    ordo()
        .args(["bench", "pg", "--pg-deadlock-timeout-ms", "0"])
        .assert()
        .code(2)
        .stderr(contains("expected server or a number of milliseconds"));
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    ordo()
        .args(["bench", "--engine", "pg", "--url", &format!("postgres://ordo:secret@127.0.0.1:{closed}/postgres")])
        .assert()
        .failure()
        .stderr(contains("cannot reach PostgreSQL"))
        .stderr(contains("ordo:***@"));
}

/// Stops the cluster when the test ends, passed or not.
struct Stop(Vec<String>);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = ordo().arg("pg").arg("stop").args(&self.0).ok();
    }
}

#[test]
fn start_bench_status_stop() {
    if let Err(error) = ordo_pgtier::cluster::find_bin_dir() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "PostgreSQL is required under CI: {error}");
        eprintln!("skipping: {error}");
        return;
    }
    let dir = std::env::temp_dir().join(format!("ordo-cli-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let cluster = vec!["--dir".to_owned(), dir.display().to_string(), "--port".to_owned(), port.clone()];
    let _stop = Stop(cluster.clone());
    ordo().args(["pg", "start"]).args(&cluster).assert().success().stdout(contains("synchronous_commit = on"));
    let url = format!("postgres://ordo:ordo@127.0.0.1:{port}/postgres");
    ordo().args(["pg", "status"]).args(&cluster).assert().success().stdout(contains("schema is missing"));
    let json = dir.with_extension("json");
    ordo()
        .args(["bench", "--engine", "pg", "--url", &url, "--mode", "nobatch,reorder", "--connections", "2"])
        .args(["--keys", "1000", "--theta", "0.9", "--duration", "0.5", "--warmup", "0.1", "--json"])
        .arg(&json)
        .assert()
        .success()
        .stderr(contains("audit ok"));
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    assert_eq!(records.len(), 2);
    for record in &records {
        assert_eq!(record["engine"], "pg");
        assert_eq!(record["workload"], "smallbank");
        assert_eq!(record["config"]["synchronous_commit"], "on", "results state synchronous_commit");
        assert_eq!(record["config"]["isolation"], "serializable");
        assert!(record["commits"].as_f64().unwrap() > 0.0);
        // The group size is recorded: nobatch never groups, reorder's is auto by default, and
        // the sizes its controller chose are in the result, starting at batches of 35 (25 times
        // the square root of the 2 connections), groups of 64.
        let group = if record["mode"] == "nobatch" { Value::from(1) } else { Value::from("auto") };
        assert_eq!(record["config"]["group"], group, "results state the group size");
        if record["mode"] == "reorder" {
            assert_eq!(record["config"]["batch_size"], "auto");
            assert_eq!(record["batch_sizes"][0]["batch"], 35);
            assert_eq!(record["batch_sizes"][0]["group"], 64);
        } else {
            assert!(record.get("batch_sizes").is_none(), "nobatch has nothing to tune");
        }
        assert_eq!(record["config"]["deadlock_timeout"], "20ms", "results state the session's deadlock_timeout");
        assert_eq!(record["config"]["max_pred_locks_per_page"], "64", "the cluster runs with ordo.conf's settings");
        let placement = if record["mode"] == "reorder" { Value::from("components") } else { Value::Null };
        assert_eq!(record["config"]["placement"], placement, "reorder states its placement");
    }
    // Without grouping, auto placement is the paper's.
    ordo()
        .args(["bench", "--engine", "pg", "--url", &url, "--mode", "reorder", "--connections", "2", "--pg-group", "1"])
        .args(["--keys", "1000", "--theta", "0.9", "--duration", "0.3", "--warmup", "0.1", "--json"])
        .arg(&json)
        .assert()
        .success();
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    assert_eq!(records[0]["config"]["placement"], "thread-aware");
    ordo().args(["pg", "status"]).args(&cluster).assert().success().stdout(contains("1000 customers"));
    ordo().args(["pg", "stop"]).args(&cluster).assert().success().stdout(contains("stopped"));
    // A second start says it reuses the cluster, rewrites ordo.conf and includes it once.
    ordo().args(["pg", "start"]).args(&cluster).assert().success().stdout(contains("reusing the cluster"));
    // More connections than the server takes are refused before anything runs.
    ordo()
        .args(["bench", "--engine", "pg", "--url", &url, "--mode", "reorder", "--connections", "150"])
        .args(["--keys", "1000", "--duration", "0.3", "--warmup", "0"])
        .assert()
        .failure()
        .stderr(contains("max_connections 100"));
    let conf = std::fs::read_to_string(dir.join("postgresql.conf")).unwrap();
    assert_eq!(conf.matches("include_if_exists = 'ordo.conf'").count(), 1, "{conf}");
    assert!(std::fs::read_to_string(dir.join("ordo.conf")).unwrap().contains("max_pred_locks_per_page = 64"));
    ordo().args(["pg", "stop"]).args(&cluster).assert().success().stdout(contains("stopped"));
    let _ = std::fs::remove_dir_all(&dir);
}
