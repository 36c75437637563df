//! Random input to the real binary, under a memory limit: `ordo fvs` and `ordo check` on random
//! JSON, and `ordo bench` on random flags, end with a clear error and a non-zero status (or
//! succeed), never with a panic (status 101) or an allocation failure (a signal). The in-process
//! property tests (`src/tests.rs`) cover many more cases; these check what the process does.

use std::io::Write;
use std::process::{Command, Stdio};

use proptest::prelude::*;

/// Address space each run may use: far more than any valid input needs, far less than an
/// unbounded allocation asks for.
const ADDRESS_SPACE_KB: u64 = 4 << 20;

/// Runs `ordo args` with `stdin` under the memory limit; (status code, stderr).
fn run_limited(args: &[String], stdin: &str) -> (Option<i32>, String) {
    let ordo = env!("CARGO_BIN_EXE_ordo");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {ADDRESS_SPACE_KB}; exec \"$0\" \"$@\""))
        .arg(ordo)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A process that exits before reading all of its input closes the pipe: not a failure.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let output = child.wait_with_output().unwrap();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

fn assert_clean(args: &[String], stdin: &str, status: Option<i32>, stderr: &str) {
    assert!(status.is_some(), "ordo {args:?} was killed by a signal (allocation failure?): {stderr}");
    assert!(!stderr.contains("panicked"), "ordo {args:?} panicked: {stderr}");
    assert_ne!(status, Some(101), "ordo {args:?} panicked");
    if status != Some(0) {
        assert!(stderr.starts_with("error"), "ordo {args:?} with {stdin:?} failed without saying why: {stderr}");
    }
}

fn json_number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..6).prop_map(|n| n.to_string()),
        prop::sample::select(vec!["-1", "0.5", "1e300", "20000", "20001", "4294967296", "18446744073709551616"])
            .prop_map(String::from),
        any::<u64>().prop_map(|n| n.to_string()),
    ]
}

fn batch_or_graph() -> impl Strategy<Value = String> {
    let list = || prop::collection::vec(json_number(), 0..5).prop_map(|n| format!("[{}]", n.join(",")));
    let entry = (list(), list()).prop_map(|(r, w)| format!(r#"{{"reads":{r},"writes":{w}}}"#));
    let batch = prop::collection::vec(entry, 0..8).prop_map(|e| format!("[{}]", e.join(",")));
    let edge = (json_number(), json_number()).prop_map(|(a, b)| format!("[{a},{b}]"));
    let graph = (json_number(), prop::collection::vec(edge, 0..6))
        .prop_map(|(v, e)| format!(r#"{{"vertices":{v},"edges":[{}]}}"#, e.join(",")));
    prop_oneof![batch, graph, "[\\[\\]{}\",:0-9a-z ]{0,40}"]
}

fn history() -> impl Strategy<Value = String> {
    let pair = (json_number(), json_number()).prop_map(|(k, v)| format!("[{k},{v}]"));
    let entry = (json_number(), prop::collection::vec(pair, 0..4))
        .prop_map(|(id, pairs)| format!(r#"{{"id":{id},"reads":[],"writes":[{}]}}"#, pairs.join(",")));
    prop::collection::vec(prop_oneof![entry, "[\\[\\]{}\",:0-9a-z ]{0,30}"], 0..6).prop_map(|l| l.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn fvs_on_random_json(input in batch_or_graph(), algorithm in prop::sample::select(vec!["search", "hybrid_sort_32", "greedy_sort", "random_3"])) {
        let args = vec!["fvs".to_owned(), "--algorithm".to_owned(), algorithm.to_owned()];
        let (status, stderr) = run_limited(&args, &input);
        assert_clean(&args, &input, status, &stderr);
        prop_assert!(matches!(status, Some(0 | 1)), "{status:?}: {stderr}");
    }

    #[test]
    fn check_on_random_json(input in history()) {
        let args = vec!["check".to_owned(), "-".to_owned()];
        let (status, stderr) = run_limited(&args, &input);
        assert_clean(&args, &input, status, &stderr);
        // 0 serializable, 1 not serializable, 2 unreadable (or empty).
        prop_assert!(matches!(status, Some(0..=2)), "{status:?}: {stderr}");
    }

    /// Random flags to `ordo bench` with a run so short it would finish at once if valid.
    #[test]
    fn bench_on_random_flags(
        flags in prop::collection::vec(
            (
                prop::sample::select(vec!["--concurrency", "--batch-size", "--keys", "--records", "--threads", "--theta", "--runs", "--pg-batch", "--engine", "--mode", "--protocol", "--workload"]),
                prop::sample::select(vec!["0", "1", "-1", "1e12", "1000000000000", "18446744073709551616", "auto", "threads", "pg", "ycsb", "0.5,0.9", "silo", "srvc", ""]),
            ),
            1..4,
        )
    ) {
        let mut args = vec!["bench".to_owned()];
        let pg = flags.iter().any(|&(flag, value)| flag == "--engine" && value == "pg");
        for (flag, value) in flags {
            args.extend([flag.to_owned(), value.to_owned()]);
        }
        // Keep a valid run short: a small table, a moment of running; the pg engine gets a
        // server address nothing listens on (it must fail cleanly, not start a cluster).
        args.extend(["--duration", "0.05", "--warmup", "0", "--cooldown", "0", "--records", "20000"].map(String::from));
        if pg {
            args.extend(["--url".to_owned(), "postgres://x@127.0.0.1:1/x".to_owned()]);
        }
        let (status, stderr) = run_limited(&args, "");
        assert_clean(&args, "", status, &stderr);
    }
}
