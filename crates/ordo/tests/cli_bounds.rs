//! Inputs at and beyond every limit: each is refused with a message naming the limit, before
//! anything runs, and nothing panics or allocates without bound.

use assert_cmd::Command;

fn ordo() -> Command {
    Command::cargo_bin("ordo").unwrap()
}

/// Runs `ordo args` and returns (success, stderr).
fn run(args: &[&str], stdin: &str) -> (bool, String) {
    let output = ordo().args(args).write_stdin(stdin).timeout(std::time::Duration::from_mins(1)).output().unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn empty_batches_are_planned_not_panicked_on() {
    for input in ["[]", r#"{"vertices":0,"edges":[]}"#] {
        let output = ordo().arg("fvs").write_stdin(input).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{input}: {stderr}");
        assert!(String::from_utf8_lossy(&output.stdout).contains("transactions: 0"), "{input}");
    }
}

#[test]
fn huge_values_are_refused_with_the_limit() {
    // Fifteen thousand skews: a sweep too long to run, refused before it is built.
    let thetas = "0.5,".repeat(15_000).trim_end_matches(',').to_owned();
    let cases: &[(&[&str], &str)] = &[
        (&["bench", "--duration", "1e20"], "at most 86400 seconds"),
        (&["bench", "--warmup", "1e20"], "at most 86400 seconds"),
        (&["bench", "--cooldown", "1e20"], "at most 86400 seconds"),
        (&["bench", "--engine", "threads", "--duration", "1e20"], "at most 86400 seconds"),
        (&["bench", "--engine", "pg", "--duration", "1e20"], "at most 86400 seconds"),
        (&["headline", "--duration", "1e20"], "at most 86400 seconds"),
        (&["bench", "--concurrency", "1000000000000"], "--concurrency 1000000000000: must be in 1..=100000"),
        (&["bench", "--batch-size", "20000"], "--batch-size 20000: must be in 1..=10000"),
        (&["bench", "--batch-size", "1000000000000"], "expected `auto` or a whole number from 1 to 100000"),
        (&["bench", "--storage-batch-size", "20000"], "--storage-batch-size 20000: must be in 1..=10000"),
        (&["bench", "--flush-messages", "100000000"], "expected `auto` or a whole number from 1 to 100000"),
        (&["bench", "--processors", "100000"], "--processors 100000: must be in 1..=256"),
        (&["bench", "--batch-wait-us", "1e12"], "--batch-wait-us"),
        (&["bench", "--batch-wait-us", "1000000000000"], "--batch-wait-us 1000000000000: must be in 0..=1000000"),
        (&["bench", "--reads", "1000000000000000000"], "--reads 1000000000000000000: must be in 0..=64"),
        (&["bench", "--multi-factor", "1000000000"], "--multi-factor 1000000000: must be in 1..=10000"),
        (&["bench", "threads", "--workload", "ycsb", "--records", "1000000000000"], "must be in 1..=100000000"),
        (&["bench", "--keys", "1000000000000"], "--keys 1000000000000: must be in 1..=100000000"),
        (&["bench", "threads", "--protocol", "reorder", "--batch", "20000"], "--batch 20000: must be in 1..=10000"),
        (&["bench", "threads", "--versions", "1000000"], "--versions 1000000: must be in 2..=64"),
        (&["bench", "pg", "--connections", "100000"], "--connections 100000: must be in 1..=1000"),
        (&["bench", "pg", "--pg-batch", "10000000"], "expected `auto` or a whole number from 1 to 100000"),
        (&["bench", "pg", "--pipeline-depth", "10000000"], "--pipeline-depth 10000000: must be in 1..=1024"),
        (&["bench", "pg", "--reconnect-timeout-ms", "1000000000000"], "must be in 0..=3600000"),
        (&["bench", "--theta", &thetas], "at most 10000 per command"),
        (&["fvs-bench", "--batch-size", "100000000"], "1..=10000"),
        (&["fvs-bench", "--runs", "100000000"], "--runs 100000000: must be in 1..=1000"),
        (&["zipf-bench", "--samples", "100000000000000"], "must be in 1..=10000000000"),
        (&["figures", "fvs", "--runs", "100000000"], "--runs 100000000: must be in 1..=1000"),
        (&["figures", "adaptive", "--confirm-rounds", "0"], "--confirm-rounds 0: must be in 1..=1000"),
        (&["figures", "adaptive", "--confirm-rounds", "5000"], "--confirm-rounds 5000: must be in 1..=1000"),
        (&["fvs", "--search-budget", "100000000000000"], "--search-budget 100000000000000: must be in 1..=1000000000"),
        (&["bench", "--runs", "1000000000"], "1..=1000"),
        (&["headline", "--runs", "1000000000"], "1..=1000"),
        (&["headline", "--concurrency", "1000000000"], "--concurrency 1000000000: must be in 1..=100000"),
    ];
    for (args, expected) in cases {
        let (ok, stderr) = run(args, "");
        assert!(!ok, "{args:?} was accepted");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    }
}

#[test]
fn exact_search_on_a_huge_batch_falls_back_instead_of_exhausting_memory() {
    // 3,000 transactions over 60 keys: one dense component far above the exact search's limit.
    let batch: Vec<String> =
        (0..3_000u64).map(|i| format!(r#"{{"reads":[{}],"writes":[{}]}}"#, i % 60, (i * 7 + 1) % 60)).collect();
    let output =
        ordo().args(["fvs", "--algorithm", "search"]).write_stdin(format!("[{}]", batch.join(","))).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("transactions: 3000"));
}
