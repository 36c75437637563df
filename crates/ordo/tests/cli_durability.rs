//! `ordo bench --engine threads --wal DIR` and `ordo recover DIR` from the outside: a real
//! child process is killed with SIGKILL at seeded random moments, many times, on the same log
//! directory; after each kill the directory recovers, every transaction its history file
//! holds (the child appends it as it acknowledges commits) is in the recovered state, and
//! SmallBank's total is conserved; TPC-C's consistency conditions hold after a kill.
//!
//! The moments derive from one seed: `ORDO_SEED=<n> cargo test -p ordo --test cli_durability`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use ordo_history::HistoryEntry;
use ordo_workload::smallbank::CONSERVED_MIX;
use ordo_workload::{SmallBank, SmallBankConfig, Workload};
use predicates::str::contains;
use serde_json::Value;

fn ordo() -> Command {
    Command::cargo_bin("ordo").unwrap()
}

fn seed() -> u64 {
    std::env::var("ORDO_SEED").map_or(17, |s| s.parse().expect("ORDO_SEED is a u64"))
}

/// splitmix64, for the kill moments.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const CUSTOMERS: u64 = 300;

fn smallbank_args(wal: &Path) -> Vec<String> {
    let mut args: Vec<String> = ["bench", "--engine", "threads", "--workload", "smallbank", "--mix", "conserved"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    args.extend(["--keys".into(), CUSTOMERS.to_string(), "--threads".into(), "2".into(), "--payload-bytes".into()]);
    args.extend(["16".into(), "--epoch-ms".into(), "3".into(), "--durability".into(), "sync".into()]);
    args.extend(["--wal".into(), wal.display().to_string(), "--warmup".into(), "0".into(), "--cooldown".into()]);
    args.push("0".into());
    args
}

/// The dump of `ordo recover DIR --dump`: `(table name or "", key)` -> (version, value).
fn recover_and_dump(wal: &Path, dump: &Path) -> BTreeMap<(String, u64), (u64, Value)> {
    ordo()
        .args(["recover", &wal.display().to_string(), "--dump", &dump.display().to_string()])
        .assert()
        .success()
        .stdout(contains("recovered"));
    std::fs::read_to_string(dump)
        .unwrap()
        .lines()
        .map(|line| {
            let row: Value = serde_json::from_str(line).unwrap();
            let table = row["table"].as_str().unwrap_or("").to_owned();
            ((table, row["key"].as_u64().unwrap()), (row["version"].as_u64().unwrap(), row["value"].clone()))
        })
        .collect()
}

/// The complete lines of a history a killed child left (its last line may be torn).
fn acknowledged(history: &Path) -> Vec<HistoryEntry> {
    let text = std::fs::read_to_string(history).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
    complete.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

#[test]
fn sigkilled_runs_keep_every_acknowledged_transaction_and_the_total() {
    let seed = seed();
    let hint = format!("replay: ORDO_SEED={seed} cargo test -p ordo --test cli_durability");
    let temp = tempfile::tempdir().unwrap();
    let wal = temp.path().join("wal");
    let bank = SmallBank::new(SmallBankConfig {
        customers: CUSTOMERS,
        theta: 0.8,
        mix: CONSERVED_MIX,
        seed: 1,
        ..SmallBankConfig::default()
    })
    .unwrap();
    let keys = bank.conserved_keys().unwrap();
    let initial: i64 = keys.clone().map(|key| bank.initial_value(key)).sum();
    let mut random = seed;
    let mut checked = 0;
    let started = Instant::now();
    for kill in 0..8 {
        let history = temp.path().join(format!("history-{kill}.jsonl"));
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ordo"))
            .args(smallbank_args(&wal))
            .args(["--duration", "60", "--history", &history.display().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Some kills land while the child loads or recovers, most while it commits.
        std::thread::sleep(Duration::from_millis(50 + next_random(&mut random) % 700));
        child.kill().unwrap(); // SIGKILL, by the child's PID
        child.wait().unwrap();
        let rows = recover_and_dump(&wal, &temp.path().join(format!("dump-{kill}.jsonl")));
        for entry in acknowledged(&history) {
            for (access, _) in entry.all_writes() {
                let version = rows.get(&(String::new(), access.key)).map(|(version, _)| *version);
                assert!(
                    version.is_some_and(|version| version >= access.version),
                    "kill {kill}: transaction {} (acknowledged) wrote key {} at version {}, recovery has {version:?}; \
                     {hint}",
                    entry.id,
                    access.key,
                    access.version
                );
            }
            checked += 1;
        }
        let total: i64 = keys.clone().map(|key| rows[&(String::new(), key)].1.as_i64().unwrap()).sum();
        assert_eq!(total, initial, "kill {kill}: the total moved; {hint}");
    }
    assert!(checked > 0, "no kill came after an acknowledged commit; {hint}");
    // The directory still runs, and the engine's own checks hold after all that.
    ordo()
        .args(smallbank_args(&wal))
        .args(["--duration", "0.3"])
        .assert()
        .success()
        .stderr(contains("conserved total"))
        .stderr(contains("write-ahead log: recovered"));
    eprintln!("{checked} acknowledged transactions checked over 8 kills in {:?}", started.elapsed());
}

#[test]
fn tpcc_keeps_its_consistency_conditions_after_a_kill() {
    let temp = tempfile::tempdir().unwrap();
    let wal = temp.path().join("wal").display().to_string();
    let args = ["bench", "--engine", "threads", "--workload", "tpcc", "--threads", "2", "--epoch-ms", "5"];
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ordo"))
        .args(args)
        .args(["--wal", &wal, "--duration", "60", "--warmup", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill it once it has committed for a while: after its first progress report.
    let deadline = Instant::now() + Duration::from_mins(1);
    while Instant::now() < deadline && !Path::new(&wal).join("segment-00000000000000000000.log").exists() {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(400));
    child.kill().unwrap();
    child.wait().unwrap();
    ordo()
        .args(args)
        .args(["--wal", &wal, "--duration", "0.3", "--warmup", "0"])
        .assert()
        .success()
        .stderr(contains("write-ahead log: recovered"))
        .stderr(contains("1: W_YTD = sum(D_YTD)"));
    let dump = temp.path().join("tpcc.jsonl");
    let rows = recover_and_dump(Path::new(&wal), &dump);
    let (version, warehouse) = &rows[&("warehouse".to_owned(), 1)];
    assert!(*version > 0, "the warehouse row was paid into");
    assert!(warehouse["w_ytd"].as_i64().unwrap() > 0 && warehouse["w_name"].is_string(), "{warehouse}");
}

#[test]
fn recover_reports_where_the_log_was_cut() {
    let temp = tempfile::tempdir().unwrap();
    let wal = temp.path().join("wal");
    ordo().args(smallbank_args(&wal)).args(["--duration", "0.2"]).assert().success();
    // Tear the log's last bytes, as a crash mid-write would.
    let segment = std::fs::read_dir(&wal)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "log"))
        .max()
        .unwrap();
    let len = std::fs::metadata(&segment).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&segment).unwrap().set_len(len - 5).unwrap();
    ordo()
        .args(["recover", &wal.display().to_string()])
        .assert()
        .success()
        .stdout(contains("log cut at segment-"))
        .stdout(contains("transactions in"));
    ordo().args(["recover", &wal.display().to_string()]).assert().success().stdout(contains("log intact"));
}

#[test]
fn durability_flags_are_checked_before_anything_runs() {
    let temp = tempfile::tempdir().unwrap();
    let wal = temp.path().join("wal").display().to_string();
    let bench = ["bench", "--engine", "threads", "--workload", "smallbank", "--duration", "0.1"];
    ordo().args(bench).args(["--durability", "sync"]).assert().failure().stderr(contains("needs --wal"));
    ordo().args(bench).args(["--wal", &wal, "--durability", "off"]).assert().failure().stderr(contains("logs nothing"));
    ordo().args(bench).args(["--wal", &wal, "--index", "array"]).assert().failure().stderr(contains("--index tree"));
    // The flat store has no epochs; tables (the default index) do.
    ordo().args(bench).args(["--index", "array", "--epoch-ms", "5"]).assert().failure().stderr(contains("--epoch-ms"));
    ordo().args(bench).args(["--wal", &wal, "--durability", "fast"]).assert().failure().stderr(contains("fast"));
    ordo()
        .args(bench)
        .args(["--wal", &wal, "--checkpoint-log-mib", "0"])
        .assert()
        .failure()
        .stderr(contains("unbounded"));
    ordo().args(bench).args(["--wal", &wal, "--epoch-ms", "0"]).assert().failure().stderr(contains("epoch-ms"));
    ordo().args(["recover", "/nonexistent/wal"]).assert().failure().stderr(contains("not a directory"));
    ordo().args(["recover", &temp.path().display().to_string()]).assert().failure().stderr(contains("no checkpoint"));
    // A directory made for one seed's data refuses another's.
    ordo().args(bench).args(["--wal", &wal, "--keys", "100"]).assert().success();
    ordo()
        .args(bench)
        .args(["--wal", &wal, "--keys", "100", "--seed", "2"])
        .assert()
        .failure()
        .stderr(contains("\"seed\":1"));
    ordo().args(bench).args(["--wal", &wal, "--keys", "200"]).assert().failure().stderr(contains("differs"));
    // A history checked from the initial rows cannot start on an existing log.
    ordo()
        .args(bench)
        .args(["--wal", &wal, "--keys", "100", "--verify"])
        .assert()
        .failure()
        .stderr(contains("--verify checks a history from the initial rows"));
}

#[test]
fn results_record_durability_epoch_and_directory() {
    let temp = tempfile::tempdir().unwrap();
    let wal = temp.path().join("wal");
    let json = temp.path().join("r.json");
    ordo()
        .args(smallbank_args(&wal))
        .args(["--duration", "0.2", "--json", &json.display().to_string()])
        .assert()
        .success();
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let config = &records[0]["config"];
    assert_eq!(config["durability"], "sync");
    assert_eq!(config["epoch_ms"], 3);
    assert_eq!(config["wal"], wal.display().to_string());
    assert_eq!(config["index"], "tree");
    let off = temp.path().join("off.json");
    ordo()
        .args(["bench", "--engine", "threads", "--workload", "smallbank", "--index", "tree", "--duration", "0.1"])
        .args(["--json", &off.display().to_string()])
        .assert()
        .success();
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&off).unwrap()).unwrap();
    assert_eq!(records[0]["config"]["durability"], "off");
    assert_eq!(records[0]["config"]["wal"], Value::Null);
}

#[test]
fn the_pipeline_logs_its_validator_and_a_second_run_continues_the_log() {
    let temp = tempfile::tempdir().unwrap();
    let wal = temp.path().join("wal").display().to_string();
    let json = temp.path().join("p.json");
    let bench = ["bench", "--engine", "pipeline", "--workload", "smallbank", "--keys", "200", "--mix", "conserved"];
    for _ in 0..2 {
        ordo()
            .args(bench)
            .args(["--wal", &wal, "--epoch-ms", "2", "--duration", "0.3", "--warmup", "0"])
            .args(["--json", &json.display().to_string()])
            .assert()
            .success();
    }
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(records[0]["config"]["durability"], "sync");
    assert_eq!(records[0]["config"]["epoch_ms"], 2);
    let rows = recover_and_dump(Path::new(&wal), &temp.path().join("dump.jsonl"));
    assert_eq!(rows.len(), 600, "every key of 200 customers' three accounts");
    assert!(rows.values().any(|(version, _)| *version > 0), "commits were logged");
    ordo()
        .args(bench)
        .args(["--wal", &wal, "--checkpoint-ms", "100", "--duration", "0.1"])
        .assert()
        .failure()
        .stderr(contains("unexpected argument '--checkpoint-ms'"));
    // PostgreSQL logs itself: the pg engine has no log flags.
    ordo()
        .args(["bench", "--engine", "pg", "--wal", &wal])
        .assert()
        .failure()
        .stderr(contains("unexpected argument '--wal'"));
}
