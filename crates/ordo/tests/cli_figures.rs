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

/// The claims table of `section` (its title's start) in a report: (quantity, source, ordo) per row.
fn claims(report: &str, section: &str) -> Vec<(String, String, String)> {
    let start = report.find(&format!("## {section}")).unwrap_or_else(|| panic!("no section {section:?} in\n{report}"));
    let text = &report[start..];
    let text = &text[..text[3..].find("\n## ").map_or(text.len(), |end| end + 3)];
    text.lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| quantity"))
        .map(|line| {
            let cells: Vec<&str> = line.split(" | ").collect();
            (cells[0].trim_start_matches("| ").to_owned(), cells[1].to_owned(), cells[2].to_owned())
        })
        .collect()
}

/// The row whose quantity starts with `quantity`.
fn row<'a>(claims: &'a [(String, String, String)], quantity: &str) -> &'a (String, String, String) {
    claims
        .iter()
        .find(|(q, _, _)| q.starts_with(quantity))
        .unwrap_or_else(|| panic!("no claim {quantity:?} in {claims:?}"))
}

/// A ratio as the seed 003 claims show it, or why there is none.
fn shown(numerator: f64, denominator: f64, why: &str) -> String {
    if denominator > 0.0 { format!("{:.2}x", numerator / denominator) } else { format!("undefined: {why} is 0") }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 { values[middle] } else { f64::midpoint(values[middle - 1], values[middle]) }
}

// Long enough that a point commits something on a loaded machine, short enough for a test.
const TINY: [&str; 4] = ["--duration", "0.2", "--warmup", "0.05"];

#[test]
fn tpcc_compares_bindings_with_seed_003() {
    let dir = tempfile::tempdir().unwrap();
    let output = ordo()
        .args(["figures", "tpcc", "--runs", "1"])
        .args(TINY)
        .arg("--out")
        .arg(dir.path())
        .timeout(std::time::Duration::from_mins(10))
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).into_owned();
    for binding in ["fixed", "random"] {
        for chart in ["tps", "tpmc", "abort"] {
            for extension in ["svg", "png"] {
                let file = format!("tpcc_{binding}_{chart}.{extension}");
                assert!(dir.path().join(&file).exists(), "missing {file}");
            }
        }
    }
    for file in ["tpcc.json", "tpcc.csv", "tpcc.runs.jsonl", "REPORT.md"] {
        assert!(dir.path().join(file).exists(), "missing {file}");
    }
    let report = std::fs::read_to_string(dir.path().join("REPORT.md")).unwrap();
    let claims = claims(&report, "Seed 003, TPC-C");
    // Every claim is read from the data: a value, or a reason there is none; never "n/a".
    for (quantity, source, ordo) in &claims {
        assert!(!ordo.contains("n/a") && !source.contains("n/a"), "{quantity}: {source} | {ordo}");
        assert!(stdout.contains(&format!("| {quantity} | {source} | {ordo} |")), "stdout lacks {quantity}");
    }
    assert_eq!(
        row(&claims, "mvcc_si / silo throughput, fixed binding").1,
        "0.90x (ERMIA-SI 10% below Silo at its peak)"
    );
    assert_eq!(row(&claims, "silo random / fixed binding").1, "~0.70x (Silo lost about 30%)");
    // The number shown is the one in the data file next to the report.
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("tpcc.json")).unwrap()).unwrap();
    assert_eq!(records.len(), 24, "6 protocols x 2 bindings x 2 thread counts");
    let most = records.iter().map(|r| r["config"]["threads"].as_u64().unwrap()).max().unwrap();
    let tps = |protocol: &str, binding: &str| {
        records
            .iter()
            .find(|r| r["mode"] == protocol && r["config"]["binding"] == binding && r["config"]["threads"] == most)
            .unwrap()["throughput_tps"]
            .as_f64()
            .unwrap()
    };
    let expected = shown(tps("silo", "random"), tps("silo", "fixed"), "silo's fixed-binding throughput");
    assert_eq!(row(&claims, "silo random / fixed binding").2, expected);
}

#[test]
fn hybrid_normalizes_to_mvcc_si_and_a_renamed_key_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = || {
        ordo()
            .args(["figures", "hybrid", "--runs", "2"])
            .args(TINY)
            .arg("--out")
            .arg(dir.path())
            .timeout(std::time::Duration::from_mins(10))
            .assert()
    };
    run().success();
    for chart in ["total_relative", "analytic_relative", "tps", "analytic_tps", "analytic_abort"] {
        for extension in ["svg", "png"] {
            let file = format!("hybrid_{chart}.{extension}");
            assert!(dir.path().join(&file).exists(), "missing {file}");
        }
    }
    for file in ["hybrid.json", "hybrid.csv", "REPORT.md"] {
        assert!(dir.path().join(file).exists(), "missing {file}");
    }
    let report = std::fs::read_to_string(dir.path().join("REPORT.md")).unwrap();
    let claims = claims(&report, "Seed 003, the hybrid workload");
    for (quantity, source, ordo) in &claims {
        assert!(!ordo.contains("n/a") && !source.contains("n/a"), "{quantity}: {source} | {ordo}");
    }
    assert_eq!(
        row(&claims, "silo / mvcc_si total throughput at 60%").1,
        "0.59x (Silo's throughput is 59% of ERMIA-SI's)"
    );
    assert_eq!(row(&claims, "silo / mvcc_si analytic throughput at 1%").1, "0.65x");
    // The analytic ratio is the medians' of the logged runs: each run's rate split as its
    // commits are, by the `analytic` key.
    let log = dir.path().join("hybrid.runs.jsonl");
    let runs: Vec<serde_json::Value> =
        std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(runs.len(), 24, "3 protocols x 4 contention degrees x 2 runs");
    let analytic = |protocol: &str, range: f64| {
        median(
            runs.iter()
                .filter(|r| r["mode"] == protocol && r["config"]["analytic_range"] == range)
                .map(|r| {
                    let commits = r["commits"].as_f64().unwrap();
                    let analytic = r["commits_by_procedure"].get("analytic").map_or(0.0, |v| v.as_f64().unwrap());
                    if commits > 0.0 { r["throughput_tps"].as_f64().unwrap() * analytic / commits } else { 0.0 }
                })
                .collect(),
        )
    };
    let expected = shown(analytic("silo", 0.6), analytic("mvcc_si", 0.6), "mvcc_si's analytic throughput");
    assert_eq!(row(&claims, "silo / mvcc_si analytic throughput at 60%").2, expected);

    // Rename the analytic transaction in the logged runs: the same command reuses them, and
    // reading them must fail and say why, not print "n/a".
    let renamed = std::fs::read_to_string(&log).unwrap().replace("\"analytic\":", "\"analytics\":");
    std::fs::write(&log, renamed).unwrap();
    run().failure().stderr(contains("`analytics`")).stderr(contains("not a transaction type"));
}

#[test]
fn adaptive_sets_auto_against_the_best_fixed_size_from_its_own_runs() {
    let dir = tempfile::tempdir().unwrap();
    ordo()
        .args(["figures", "adaptive", "--runs", "2", "--confirm-rounds", "6", "--duration", "0.05", "--warmup", "0"])
        .arg("--out")
        .arg(dir.path())
        .timeout(std::time::Duration::from_mins(8))
        .assert()
        .success();
    let read = |file: &str| std::fs::read_to_string(dir.path().join(file)).unwrap();
    let records: Vec<serde_json::Value> = serde_json::from_str(&read("adaptive.json")).unwrap();
    assert_eq!(records.len(), 70, "2 concurrencies x 5 skews x (auto and 6 fixed sizes)");
    let runs: Vec<serde_json::Value> =
        read("adaptive.runs.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(runs.len(), 140);
    // Both batches take one size in every configuration (`--storage-batch-size same`).
    for record in records.iter().chain(&runs) {
        assert_eq!(record["config"]["batch_size"], record["config"]["storage_batch_size"], "{record}");
    }
    let report = read("REPORT.md");
    assert!(report.contains("| quantity | target | ordo | direction |"), "{report}");
    assert!(report.contains("--confirm-rounds 6"), "the report's command names the confirmation rounds");
    let claims = claims(&report, "Adaptive batch sizes");
    assert_eq!(claims.len(), 10);
    let tps = |r: &serde_json::Value| r["throughput_tps"].as_f64().unwrap();
    for concurrency in [100, 300] {
        for theta in [0.5, 0.6, 0.7, 0.8, 0.9] {
            let here = |r: &&serde_json::Value| r["config"]["concurrency"] == concurrency && r["theta"] == theta;
            let median_tps = |r: &serde_json::Value| r["median"]["throughput_tps"].as_f64().unwrap();
            let auto = records.iter().filter(here).find(|r| r["config"]["batch_size"] == "auto").unwrap();
            let best = records
                .iter()
                .filter(here)
                .filter(|r| r["config"]["batch_size"] != "auto")
                .max_by(|a, b| median_tps(a).total_cmp(&median_tps(b)))
                .unwrap();
            let size = &best["config"]["batch_size"];
            // The claim is decided on the confirmation's fresh rounds of auto and that size.
            let cell = format!("adaptive_confirmations/{concurrency}_{theta}");
            let confirmed: Vec<serde_json::Value> = serde_json::from_str(&read(&format!("{cell}.json"))).unwrap();
            assert_eq!(confirmed.len(), 2, "auto and the best fixed size");
            let find = |size: &serde_json::Value| {
                confirmed.iter().filter(here).find(|r| r["config"]["batch_size"] == *size).unwrap()
            };
            let (auto_again, best_again) = (find(&"auto".into()), find(size));
            let rounds: Vec<serde_json::Value> =
                read(&format!("{cell}.runs.jsonl")).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            assert_eq!(rounds.len(), 12, "6 rounds of 2 configurations");
            // A round whose fixed run committed nothing (a 50 ms run on a loaded machine can)
            // has no ratio, and the report leaves it out.
            let paired: Vec<f64> = rounds
                .iter()
                .filter(here)
                .filter(|r| r["config"]["batch_size"] == "auto")
                .filter_map(|a| {
                    let fixed = rounds
                        .iter()
                        .filter(here)
                        .find(|f| f["config"]["batch_size"] == *size && f["seed"] == a["seed"])
                        .unwrap();
                    (tps(fixed) > 0.0).then(|| tps(a) / tps(fixed))
                })
                .collect();
            assert!(!paired.is_empty() && paired.len() <= 6, "6 rounds paired by seed: {paired:?}");
            let quantity = format!("auto / best fixed size ({size}), {concurrency} live, θ={theta}");
            let (_, target, ordo) = row(&claims, &quantity);
            assert_eq!(target, "at least 0.95x");
            // Six rounds bound the median at 95% by their whole range; five are too few.
            let (low, high) = paired.iter().fold((f64::INFINITY, 0.0_f64), |(l, h), &r| (l.min(r), h.max(r)));
            let rounds = paired.len();
            let interval = if rounds == 6 {
                format!("95% interval {low:.2}-{high:.2}x over 6 rounds")
            } else {
                format!("{rounds} rounds, too few for a 95% interval")
            };
            let expected = format!(
                "{:.2}x (paired by round: {:.2}x, {interval}; in the sweep: {:.2}x;",
                median_tps(auto_again) / median_tps(best_again),
                median(paired),
                median_tps(auto) / median_tps(best)
            );
            assert!(ordo.starts_with(&expected), "{ordo:?} does not start with {expected:?}");
            let verdict = if rounds < 6 {
                "unresolved"
            } else if low >= 0.95 {
                "met"
            } else if high < 0.95 {
                "not met"
            } else {
                "unresolved"
            };
            let line = report.lines().find(|l| l.starts_with(&format!("| {quantity} |"))).unwrap();
            assert!(line.ends_with(&format!("| {verdict} |")), "{line:?} is not {verdict:?}");
        }
    }
    for file in ["adaptive_100_tps.png", "adaptive_300_sizes.svg", "adaptive.csv"] {
        assert!(dir.path().join(file).exists(), "missing {file}");
    }
}
