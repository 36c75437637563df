//! `ordo check` from the outside: a serializable history, a write skew (refused as
//! serializable, accepted as snapshot isolation), a lost update, a timestamp-order violation,
//! and malformed input.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

fn ordo() -> Command {
    Command::cargo_bin("ordo").unwrap()
}

/// Writes `lines` to a temporary history file; the directory lives as long as the guard.
fn history_file(lines: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    (dir, path)
}

/// T1 installs x@1; T3 (ts 2) reads it and y@0; T2 (ts 3) reads x@1 and installs x@3.
const SERIAL: [&str; 3] = [
    r#"{"id": 1, "reads": [[1, 0]], "writes": [[1, 1]], "ts": 1}"#,
    r#"{"id": 2, "reads": [[1, 1]], "writes": [[1, 3]], "ts": 3}"#,
    r#"{"id": 3, "reads": [[1, 1], [2, 0]], "writes": [], "ts": 2}"#,
];

#[test]
fn a_serializable_history_passes_with_a_summary() {
    let (_dir, path) = history_file(&SERIAL);
    ordo()
        .arg("check")
        .arg(&path)
        .arg("--timestamps")
        .assert()
        .success()
        .stdout(contains("serializable: 3 transactions, 6 operations (4 reads, 2 writes)"))
        .stdout(contains("4 edges (1 ww, 2 wr, 1 rw) and no cycle"))
        .stdout(contains("Commit-timestamp order is a valid serial order."));
}

#[test]
fn json_report_from_stdin() {
    let output = ordo().args(["check", "-", "--json"]).write_stdin(SERIAL.join("\n")).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["serializable"], true);
    assert_eq!(report["transactions"], 3);
    assert_eq!(report["reads"], 4);
    assert_eq!(report["writes"], 2);
    assert_eq!(report["operations"], 6);
    assert_eq!(report["write_write_edges"], 1);
    assert_eq!(report["write_read_edges"], 2);
    assert_eq!(report["read_write_edges"], 1);
    assert_eq!(report["edges"], 4);
    assert_eq!(report["timestamp_order_checked"], false);
}

#[test]
fn write_skew_fails_and_names_the_cycle() {
    let (_dir, path) = history_file(&[
        r#"{"id": 1, "reads": [[10, 0], [20, 0]], "writes": [[10, 1]]}"#,
        r#"{"id": 2, "reads": [[10, 0], [20, 0]], "writes": [[20, 2]]}"#,
    ]);
    let assert = ordo().arg("check").arg(&path).assert().code(1);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.starts_with("error: not serializable: cycle: T"), "{stderr}");
    assert!(stderr.contains("-rw(k=10)->") && stderr.contains("-rw(k=20)->"), "{stderr}");
}

/// `ordo check PATH --isolation snapshot` with `extra` flags, run.
fn check_snapshot(path: &std::path::Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    ordo().arg("check").arg(path).args(["--isolation", "snapshot"]).args(extra).assert()
}

#[test]
fn snapshot_isolation_accepts_write_skew_and_refuses_a_lost_update() {
    let (_skew_dir, skew) = history_file(&[
        r#"{"id": 1, "reads": [[10, 0], [20, 0]], "writes": [[10, 1]]}"#,
        r#"{"id": 2, "reads": [[10, 0], [20, 0]], "writes": [[20, 2]]}"#,
    ]);
    check_snapshot(&skew, &[])
        .success()
        .stdout(contains("snapshot isolation: 2 transactions"))
        .stdout(contains("no cycle without two anti-dependencies in a row (not serializable: cycle: T"));
    let json = check_snapshot(&skew, &["--json"]).success();
    let report: Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!((&report["isolation"], &report["serializable"]), (&Value::from("snapshot"), &Value::from(false)));
    // A serializable history is snapshot isolation too, and says so.
    let (_serial_dir, serial) = history_file(&SERIAL);
    check_snapshot(&serial, &[]).success().stdout(contains("no cycle (the history is also serializable)"));
    // Both read x@0 and both overwrote it: the second writer lost the first's update.
    let (_lost_dir, lost) = history_file(&[
        r#"{"id": 1, "reads": [[10, 0]], "writes": [[10, 1]]}"#,
        r#"{"id": 2, "reads": [[10, 0]], "writes": [[10, 2]]}"#,
    ]);
    check_snapshot(&lost, &[])
        .code(1)
        .stderr(contains("error: not snapshot isolation: cycle: T2 -rw(k=10)-> T1 -ww(k=10)-> T2"));
    check_snapshot(&serial, &["--timestamps"])
        .code(2)
        .stderr(contains("drop one of --timestamps and --isolation snapshot"));
}

#[test]
fn timestamp_order_is_checked_only_when_asked() {
    // Serializable as T1, T2, but T1 committed after T2 and missed T2's write.
    let (_dir, path) = history_file(&[
        r#"{"id": 1, "reads": [[1, 0]], "writes": [[2, 2]], "ts": 2}"#,
        r#"{"id": 2, "reads": [], "writes": [[1, 1]], "ts": 1}"#,
    ]);
    ordo().arg("check").arg(&path).assert().success();
    ordo().arg("check").arg(&path).arg("--timestamps").assert().code(1).stderr(contains(
        "error: not serializable in timestamp order: T1 committed at ts 2 but read version 0 of key 1",
    ));
}

#[test]
fn malformed_input_names_the_line() {
    let (_dir, path) = history_file(&[SERIAL[0], "", r#"{"id": 2, "reads": [[1, 1]]}"#]);
    ordo().arg("check").arg(&path).assert().code(2).stderr(contains("error: line 3: missing field `writes`"));
    ordo()
        .args(["check", "-"])
        .write_stdin("{\"id\": 1, \"reads\": [], \"writes\": [[1, 1], [1, 2]]}\n")
        .assert()
        .code(2)
        .stderr(contains("line 1: transaction 1 writes key 1 twice"));
    let missing = ordo().args(["check", "/no/such/history.jsonl"]).assert().code(2);
    let stderr = String::from_utf8_lossy(&missing.get_output().stderr).into_owned();
    assert!(stderr.contains("cannot open history file"), "{stderr}");
    assert_eq!(stderr.matches("No such file or directory").count(), 1, "the OS error once: {stderr}");
}

#[test]
fn an_empty_history_is_an_error_unless_allowed() {
    let (_dir, path) = history_file(&[]);
    ordo().arg("check").arg(&path).assert().code(2).stderr(contains("holds no transactions"));
    ordo().args(["check", "-"]).write_stdin("\n\n").assert().code(2);
    ordo().arg("check").arg(&path).arg("--allow-empty").assert().success().stdout(contains("0 transactions"));
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let with_bom = format!("\u{feff}{}\n{}\n", SERIAL[0], SERIAL[1]);
    ordo()
        .args(["check", "-"])
        .write_stdin(with_bom)
        .assert()
        .success()
        .stdout(contains("serializable: 2 transactions"));
}

/// A reader that closed the pipe (`ordo ... | head -1`) ends ordo the way it ends Unix tools,
/// by SIGPIPE, not with a panic from `println!`.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_ordo_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let (_dir, path) = history_file(&SERIAL);
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin("ordo"))
        .arg("check")
        .arg(&path)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.signal(), Some(13), "expected SIGPIPE, got {:?}: {stderr}", output.status);
}
