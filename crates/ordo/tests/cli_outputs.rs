//! `ordo bench`'s output files: checked before the first run, `-` for standard output, no two
//! on one path, and replaced whole.

use std::time::Duration;

use assert_cmd::Command;
use predicates::str::contains;

fn ordo() -> Command {
    Command::cargo_bin("ordo").unwrap()
}

/// A short threads-engine run (a fraction of a second).
const QUICK: [&str; 13] = [
    "bench",
    "--engine",
    "threads",
    "--workload",
    "micro",
    "--keys",
    "1000",
    "--duration",
    "0.1",
    "--warmup",
    "0",
    "--cooldown",
    "0",
];

#[test]
fn a_bad_output_path_fails_before_anything_runs() {
    // A run of a minute: the command must fail long before it would have finished one.
    let started = std::time::Instant::now();
    ordo()
        .args(["bench", "--duration", "60", "--json", "/no/such/dir/out.json"])
        .timeout(Duration::from_secs(20))
        .assert()
        .failure()
        .stderr(contains("--json: cannot write /no/such/dir/out.json"));
    assert!(started.elapsed() < Duration::from_secs(20));
    let dir = tempfile::tempdir().unwrap();
    ordo()
        .args(["bench", "--duration", "60", "--csv"])
        .arg(dir.path())
        .timeout(Duration::from_secs(20))
        .assert()
        .failure()
        .stderr(contains("is a directory"));
}

#[test]
fn two_outputs_may_not_share_a_path_or_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out");
    ordo()
        .args(["bench", "--json"])
        .arg(&file)
        .arg("--history")
        .arg(dir.path().join(".").join("out"))
        .assert()
        .failure()
        .stderr(contains("both name"));
    ordo().args(["bench", "--json", "-", "--csv", "-"]).assert().failure().stderr(contains("standard output"));
    ordo().args(["bench", "--csv", "-", "--history", "-"]).assert().failure().stderr(contains("standard output"));
    ordo().args(["bench", "--runs-log", "-"]).assert().failure().stderr(contains("must name a file"));
}

#[test]
fn history_dash_goes_to_standard_output_and_the_table_to_stderr() {
    let output = ordo().args(QUICK).args(["--history", "-"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(!lines.is_empty(), "no history on stdout");
    for line in &lines {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(entry["id"].is_u64(), "{line}");
    }
    assert!(String::from_utf8_lossy(&output.stderr).contains("commits/s"), "the table is on stderr");
    assert!(!std::path::Path::new("-").exists(), "no file named `-`");
}

#[test]
fn result_files_are_replaced_whole() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("results.json");
    // A longer old file: a non-atomic, non-truncating writer would leave its tail behind.
    std::fs::write(&json, "x".repeat(1 << 20)).unwrap();
    ordo().args(QUICK).arg("--json").arg(&json).assert().success();
    let results: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(results.as_array().map(Vec::len), Some(1));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temporary files left: {leftovers:?}");
}
