//! `ordo figures` from the outside: an experiment writes its data, charts and report; bad names
//! are errors.

use assert_cmd::Command;
use predicates::str::contains;

fn ordo() -> Command {
    Command::cargo_bin("ordo").unwrap()
}

#[test]
fn an_experiment_writes_data_charts_and_a_report() {
    let dir = tempfile::tempdir().unwrap();
    ordo().args(["figures", "fvs", "--quick", "--out"]).arg(dir.path()).assert().success();
    for file in ["fvs.json", "fvs.csv", "fvs_size.svg", "fvs_size.png", "fvs_time.svg", "fvs_time.png", "REPORT.md"] {
        assert!(dir.path().join(file).exists(), "missing {file}");
    }
    let report = std::fs::read_to_string(dir.path().join("REPORT.md")).unwrap();
    assert!(report.contains("Figures 5-6"));
    assert!(report.contains("![Mean FVS size per 40-transaction batch](fvs_size.png)"));
    // The claim's number is the one in the data file next to the report.
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("fvs.json")).unwrap()).unwrap();
    let random = records.iter().find(|r| r["algorithm"] == "random" && r["theta"] == 0.9).unwrap();
    let shown = format!("| mean FVS size of random at θ=0.9 | 6.08 | {:.2} |", random["fvs_mean"].as_f64().unwrap());
    assert!(report.contains(&shown), "report lacks {shown:?}");
}

#[test]
fn pipeline_experiments_resume_from_their_runs_log() {
    let dir = tempfile::tempdir().unwrap();
    let run = || {
        ordo()
            .args(["figures", "batch-size", "--quick", "--out"])
            .arg(dir.path())
            .timeout(std::time::Duration::from_mins(5))
            .assert()
            .success()
    };
    run();
    let log = std::fs::read_to_string(dir.path().join("batch-size.runs.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 20, "4 batch sizes x 5 skews, one run each");
    run();
    // A finished experiment is reused, not rerun: no run was added to the log.
    assert_eq!(std::fs::read_to_string(dir.path().join("batch-size.runs.jsonl")).unwrap(), log);
    for file in ["batch-size_tps.png", "batch-size_percentiles.svg", "batch-size.csv"] {
        assert!(dir.path().join(file).exists(), "missing {file}");
    }
    // Runs of another revision are not reused: the report names one revision.
    let stamp = dir.path().join("batch-size.runs.rev");
    let revision = std::fs::read_to_string(&stamp).unwrap();
    std::fs::write(&stamp, "0000000\n").unwrap();
    run().stderr(contains("earlier runs are from 0000000"));
    let measured_again = std::fs::read_to_string(dir.path().join("batch-size.runs.jsonl")).unwrap();
    assert_eq!(measured_again.lines().count(), 20);
    assert_ne!(measured_again, log, "the runs were measured again");
    assert_eq!(std::fs::read_to_string(&stamp).unwrap(), revision);
}

#[test]
fn unknown_experiments_are_errors() {
    ordo().args(["figures", "fig99"]).assert().code(2).stderr(contains("invalid value 'fig99'"));
    ordo().args(["figures", "fvs", "--runs", "0"]).assert().code(1).stderr(contains("--runs"));
}
