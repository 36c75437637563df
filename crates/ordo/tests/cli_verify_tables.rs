//! `ordo bench --engine threads --ycsb e --verify` on tables, for every protocol that runs
//! there: the run records its committed transactions in the history format with tables (YCSB
//! E's scans and inserts included), the checker passes it, `ordo check` reads the same file,
//! and a history doctored into a phantom fails.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

/// The protocols that run on tables. Adding one is one line.
const TABLE_PROTOCOLS: &[&str] = &["silo"];

const SHORT: [&str; 6] = ["--duration", "0.3", "--warmup", "0.1", "--cooldown", "0"];

fn ordo() -> Command {
    Command::cargo_bin("ordo").unwrap()
}

fn history_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// Turns the first scan row inserted during the run (version > 0) into a phantom: the scan
/// no longer lists the row, but the same transaction reads it at that version by key. No
/// serial order explains a transaction that saw a row and missed it in a scan over it.
fn plant_phantom(entries: &mut [Value]) -> bool {
    for entry in entries {
        let Some(scans) = entry.get_mut("scans").and_then(Value::as_array_mut) else { continue };
        let mut planted = None;
        for scan in scans.iter_mut() {
            let table = scan["table"].as_u64().unwrap_or(0);
            let rows = scan["rows"].as_array_mut().unwrap();
            if let Some(at) = rows.iter().position(|row| row[1].as_u64() > Some(0)) {
                let row = rows.remove(at);
                planted = Some(Value::from(vec![Value::from(table), row[0].clone(), row[1].clone()]));
                break;
            }
        }
        if let Some(read) = planted {
            entry["reads"].as_array_mut().unwrap().push(read);
            return true;
        }
    }
    false
}

#[test]
fn ycsb_e_histories_on_tables_verify_for_every_protocol() {
    let dir = tempfile::tempdir().unwrap();
    for protocol in TABLE_PROTOCOLS {
        let history = dir.path().join(format!("{protocol}.jsonl"));
        ordo()
            .args(["bench", "--engine", "threads", "--workload", "ycsb", "--ycsb", "e", "--records", "2000"])
            .args(["--protocol", protocol, "--threads", "2", "--verify", "--history"])
            .arg(&history)
            .args(SHORT)
            .assert()
            .success()
            .stderr(contains("verified:"))
            .stderr(contains("scans of"));
        let mut entries = history_lines(&history);
        assert!(!entries.is_empty(), "{protocol}: an empty history");
        let with = |field: &str| {
            entries.iter().filter(|e| e.get(field).is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty()))).count()
        };
        assert!(with("scans") > 0 && with("inserts") > 0, "{protocol}: YCSB E's history holds scans and inserts");
        ordo().arg("check").arg(&history).assert().success().stdout(contains("no cycle"));

        assert!(plant_phantom(&mut entries), "{protocol}: some scan returned a row inserted during the run");
        let doctored = dir.path().join(format!("{protocol}-phantom.jsonl"));
        let lines: Vec<String> = entries.iter().map(Value::to_string).collect();
        std::fs::write(&doctored, lines.join("\n") + "\n").unwrap();
        ordo().arg("check").arg(&doctored).assert().failure().stderr(contains("phantom"));
    }
}
