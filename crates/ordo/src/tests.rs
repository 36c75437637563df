//! The whole command line, in process: every command README.md and BENCHMARKS.md show parses
//! and passes every check made before a run, and random arguments to every command end either
//! in a configuration ready to run or in a clear error, never in a panic.
//!
//! "Before a run" is what each command does before it measures or writes anything: parse
//! (after the `--engine` rewrite), validate every range, and plan the sweep (which builds the
//! workloads and the engines' configurations, but starts no engine, server or file).

use std::ffi::OsString;

use clap::{CommandFactory, Parser};
use proptest::prelude::*;

use crate::commands::bench::{EngineCommand, compat};
use crate::commands::{figures, fvs_bench, headline, zipf_bench};
use crate::{Cli, Command};

/// Everything `ordo argv...` checks before it runs; the error a user would see.
fn prepare(argv: &[String]) -> Result<(), String> {
    let args = compat::rewrite(argv.iter().map(OsString::from).collect()).map_err(|e| e.to_string())?;
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        // `--help` and `--version` print and succeed.
        Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion) => {
            return Ok(());
        }
        Err(e) => return Err(e.to_string()),
    };
    let checked: anyhow::Result<()> = match cli.command {
        Command::Bench(bench) => match bench.engine {
            EngineCommand::Pipeline(bench) => bench.validate().and_then(|()| bench.plan().map(drop)),
            EngineCommand::Threads(bench) => bench.validate().and_then(|()| bench.plan().map(drop)),
            EngineCommand::Pg(bench) => bench.validate().and_then(|()| {
                let session = ordo_pgtier::SessionConfig {
                    url: "postgres://ordo@127.0.0.1:5433/postgres".into(),
                    isolation: bench.engine.isolation,
                    synchronous_commit: bench.engine.synchronous_commit,
                    deadlock_timeout_ms: bench.engine.pg_deadlock_timeout_ms.ms(),
                };
                bench.configs(session).map(drop)
            }),
        },
        Command::Headline(args) => headline::sweep(&args).and_then(|bench| bench.plan().map(drop)),
        Command::Figures(args) => figures::validate(&args).map(drop),
        Command::Fvs(args) => args.reorder.config().map(drop),
        Command::FvsBench(args) => fvs_bench::validate(&args).map(drop),
        Command::ZipfBench(args) => zipf_bench::validate(&args),
        // Both read only what they are given, when they run.
        Command::Check(_) | Command::Pg(_) | Command::Recover(_) => Ok(()),
    };
    checked.map_err(|e| format!("{e:#}"))
}

/// The commands of a markdown file: every `ordo <command> ...` in its code (inline spans,
/// indented and fenced blocks; `\` continues a line; `&&` and `|` separate commands).
fn documented_commands(markdown: &str) -> Vec<String> {
    let mut code = Vec::new();
    let mut prose = String::new();
    let mut fenced = false;
    let mut block = String::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || line.starts_with("    ") {
            block.push_str(line.trim().trim_start_matches("$ ").trim_end_matches('\\'));
            block.push(' ');
            if !line.trim_end().ends_with('\\') {
                code.push(std::mem::take(&mut block));
            }
        } else {
            // Inline spans may run over a line break.
            prose.push_str(line);
            prose.push(' ');
        }
    }
    code.extend(prose.split('`').skip(1).step_by(2).map(str::to_owned));
    let known = ["bench", "headline", "figures", "check", "fvs", "fvs-bench", "zipf-bench", "pg", "recover"];
    let mut commands = Vec::new();
    for snippet in code {
        for part in snippet.split("&&").flat_map(|p| p.split('|')) {
            let words: Vec<&str> = part.split_whitespace().collect();
            let Some(at) = words.iter().position(|w| *w == "ordo" || w.ends_with("/ordo")) else {
                continue;
            };
            if words.get(at + 1).is_some_and(|w| known.contains(w)) {
                commands.push(words[at + 1..].join(" "));
            }
        }
    }
    commands
}

/// Splits a documented command into arguments (double and single quotes group words; `#`
/// starts a comment).
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    for c in command.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if word.is_empty() => break,
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// A placeholder in a documented command (`--threads T`, `NAME`, `$MODE`, `[--flag value]`,
/// `...`, `start\|stop`).
fn is_placeholder(word: &str) -> bool {
    word.starts_with('$')
        || ["[", "...", "…", "<", "\\"].iter().any(|mark| word.contains(mark))
        || word.chars().all(|c| c.is_ascii_uppercase())
}

#[test]
fn every_documented_command_parses_and_passes_its_checks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut checked = 0;
    for file in ["README.md", "BENCHMARKS.md"] {
        let markdown = std::fs::read_to_string(root.join(file)).unwrap();
        for command in documented_commands(&markdown) {
            let words = shell_words(&command);
            if words.iter().any(|w| is_placeholder(w)) {
                continue;
            }
            let mut argv = vec!["ordo".to_owned()];
            argv.extend(words);
            if let Err(error) = prepare(&argv) {
                panic!("{file}: `ordo {command}` fails before running: {error}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 50, "only {checked} documented commands found");
}

/// The flags of the command at `path` (`["bench", "pipeline"]`), each with the values most
/// likely to find its edges: its names, its defaults, and every number its help mentions (the
/// documented bounds) with its neighbours.
fn flags_of(path: &[&str]) -> Vec<(String, Vec<String>)> {
    let mut command = Cli::command();
    for name in path {
        command = command.find_subcommand(name).expect("a known command").clone();
    }
    command
        .get_arguments()
        .filter_map(|arg| {
            let long = arg.get_long()?;
            let mut values: Vec<String> = arg.get_possible_values().iter().map(|v| v.get_name().to_owned()).collect();
            values.extend(arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()));
            let help = arg.get_long_help().or(arg.get_help()).map(ToString::to_string).unwrap_or_default();
            for number in help.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse::<u64>().ok()) {
                values.extend([number.saturating_sub(1), number, number.saturating_add(1)].map(|n| n.to_string()));
            }
            values.extend(
                ["auto", "unbounded", "server", "0", "-1", "18446744073709551615", "1e20", "NaN"].map(String::from),
            );
            Some((format!("--{long}"), values))
        })
        .collect()
}

/// Command paths the fuzzing covers (`bench` alone is the old form, rewritten).
const PATHS: [&[&str]; 14] = [
    &["bench"],
    &["bench", "pipeline"],
    &["bench", "threads"],
    &["bench", "pg"],
    &["headline"],
    &["figures"],
    &["fvs"],
    &["fvs-bench"],
    &["zipf-bench"],
    &["check"],
    &["recover"],
    &["pg", "start"],
    &["pg", "load"],
    &["pg", "status"],
];

/// Values a flag might be given: boundaries, huge and malformed numbers, lists, names.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "1",
            "-1",
            "2",
            "3",
            "16",
            "64",
            "65",
            "100",
            "256",
            "257",
            "1000",
            "10000",
            "10001",
            "100000",
            "1000000",
            "100000000",
            "100000001",
            "4294967295",
            "4294967296",
            "18446744073709551615",
            "18446744073709551616",
            "1e3",
            "1e20",
            "-1e20",
            "0.0",
            "0.5",
            "0.99",
            "1.0",
            "1.5",
            "NaN",
            "inf",
            "-inf",
            "",
            ",",
            "1,2",
            "0,0.5,0.9",
            "1,1,1,1,1,1",
            "auto",
            "unbounded",
            "server",
            "on",
            "off",
            "true",
            "false",
            "split",
            "single",
            "client",
            "processor,storage;client,validator,reorder",
            "greedy_sort",
            "hybrid_sort_32+min",
            "greedy_sort[rct]_k3",
            "random_0",
            "hybrid_0",
            "search",
            "standard",
            "conserved",
            "new_order,payment",
            "1,2,3,4,5",
            "a",
            "e",
            "tree",
            "array",
            "reorder",
            "reorder+serial",
            "-",
            "/dev/null",
            "/no/such/dir/x",
        ])
        .prop_map(String::from),
        "[a-z0-9_,.+-]{0,12}",
        any::<u64>().prop_map(|n| n.to_string()),
        (any::<f64>()).prop_map(|x| x.to_string()),
    ]
}

/// A random command line for the command at `path`: known flags with random or named values,
/// now and then an unknown flag or a bare word.
fn command_line() -> impl Strategy<Value = Vec<String>> {
    prop::sample::select(PATHS.to_vec()).prop_flat_map(|path| {
        let flags = flags_of(path);
        let flag_count = flags.len().max(1);
        let argument = (0..flag_count, value(), any::<prop::sample::Index>(), 0..12u8).prop_map(
            move |(which, value, pick, kind)| {
                let Some((flag, likely)) = flags.get(which) else { return vec![value] };
                match kind {
                    0 => vec!["--engine".into(), value],
                    1 => vec![value],
                    2 => vec![flag.clone()],
                    3..=7 => vec![flag.clone(), pick.get(likely).clone()],
                    8 => vec![flag.clone(), format!("{},{}", pick.get(likely), value)],
                    _ => vec![format!("{flag}={value}")],
                }
            },
        );
        let words: Vec<String> = path.iter().map(|w| (*w).to_owned()).collect();
        prop::collection::vec(argument, 0..5).prop_map(move |arguments| {
            let mut argv = vec!["ordo".to_owned()];
            argv.extend(words.iter().cloned());
            argv.extend(arguments.into_iter().flatten());
            argv
        })
    })
}

/// Every flag of every command, alone, with each of its likely values (names, defaults, the
/// bounds its help documents and their neighbours): a valid plan or a clear error.
#[test]
fn every_flag_at_its_edges_plans_or_fails_clearly() {
    let mut tried = 0;
    for path in PATHS {
        for (flag, likely) in flags_of(path) {
            for value in likely {
                let mut argv = vec!["ordo".to_owned()];
                argv.extend(path.iter().map(|w| (*w).to_owned()));
                argv.extend([flag.clone(), value]);
                if let Err(error) = prepare(&argv) {
                    assert!(!error.trim().is_empty(), "an empty error for {argv:?}");
                }
                tried += 1;
            }
        }
    }
    assert!(tried > 1000, "only {tried} command lines");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Random arguments to every command: a valid plan or a clear error, never a panic (a
    /// panic fails the property) or an allocation without bound (the sweep, lists, sizes and
    /// counts are all bounded before anything is built).
    #[test]
    fn random_arguments_plan_or_fail_clearly(argv in command_line()) {
        if let Err(error) = prepare(&argv) {
            prop_assert!(!error.trim().is_empty(), "an empty error for {:?}", argv);
        }
    }

    /// Random text as a batch or graph for `ordo fvs`: planned or refused, never a panic.
    #[test]
    fn random_batches_plan_or_fail_clearly(text in batch_text()) {
        use ordo_reorder::{Plan, Reorderer, VertexMeta};
        match crate::commands::fvs::parse_input(&text) {
            Ok(crate::commands::fvs::FvsInput::Batch(batch)) => {
                let mut plan = Plan::default();
                Reorderer::new(ordo_reorder::FvsConfig::default()).unwrap().plan_into(&batch, &mut plan);
                prop_assert_eq!(plan.abort.len() + plan.order.len(), batch.len());
            }
            Ok(crate::commands::fvs::FvsInput::Graph(graph)) => {
                let mut plan = Plan::default();
                let meta: Vec<VertexMeta> = Vec::new();
                Reorderer::new(ordo_reorder::FvsConfig::default()).unwrap().plan_graph(&graph, &meta, &mut plan);
                prop_assert_eq!(plan.abort.len() + plan.order.len(), graph.len());
            }
            Err(error) => {
                let message = format!("{error:#}");
                prop_assert!(!message.trim().is_empty());
            }
        }
    }

    /// Random text as a history for `ordo check`: read and checked, or refused, never a panic.
    #[test]
    fn random_histories_check_or_fail_clearly(text in history_text()) {
        match ordo_history::read_history(std::io::Cursor::new(text.as_bytes())) {
            Ok(entries) => {
                let serializable = ordo_history::check(&entries);
                let snapshot = ordo_history::check_snapshot_isolation(&entries);
                // Every serializable history is snapshot isolation, with the same graph.
                if let Ok(report) = serializable {
                    prop_assert_eq!(snapshot, Ok(report));
                }
                let _ = ordo_history::check_timestamp_order(&entries);
            }
            Err(error) => prop_assert!(!error.to_string().trim().is_empty()),
        }
    }
}

/// A command line for `ordo bench ENGINE` that is likely to be valid: each flag given once,
/// with one of its names, its default or a number its help documents.
fn bench_line() -> impl Strategy<Value = Vec<String>> {
    prop::sample::select(vec!["pipeline", "threads", "pg"]).prop_flat_map(|engine| {
        let flags: Vec<(String, Vec<String>)> = flags_of(&["bench", engine])
            .into_iter()
            .map(|(flag, likely)| {
                let plausible: Vec<String> = likely
                    .into_iter()
                    .filter(|v| !["0", "-1", "18446744073709551615", "1e20", "NaN", "auto"].contains(&v.as_str()))
                    .collect();
                (flag, plausible)
            })
            .filter(|(flag, plausible)| {
                !plausible.is_empty()
                    && !["--history", "--json", "--csv", "--runs-log", "--help"].contains(&flag.as_str())
            })
            .collect();
        prop::sample::subsequence(flags, 0..6).prop_flat_map(move |chosen| {
            let picks = prop::collection::vec(any::<prop::sample::Index>(), chosen.len());
            picks.prop_map(move |picks| {
                let mut argv = vec!["ordo".to_owned(), "bench".to_owned(), engine.to_owned()];
                for ((flag, plausible), pick) in chosen.iter().zip(picks) {
                    argv.extend([flag.clone(), pick.get(plausible).clone()]);
                }
                argv
            })
        })
    })
}

/// `ordo bench ENGINE` arguments printed back as flags (`Bench::flags`, what `ordo figures`
/// shows as each experiment's command) parse to the same arguments.
fn flags_print_back(argv: &[String]) -> Result<(), TestCaseError> {
    use crate::commands::bench::Bench;
    fn again<B: Bench + clap::Args + PartialEq + std::fmt::Debug>(bench: &B) -> Result<(), TestCaseError> {
        let mut argv = vec!["ordo".to_owned()];
        argv.extend(bench.flags());
        let parsed: B =
            crate::commands::bench::parse(&argv).map_err(|e| TestCaseError::fail(format!("{argv:?}: {e}")))?;
        prop_assert_eq!(&parsed, bench, "{:?}", argv);
        Ok(())
    }
    let Ok(args) = compat::rewrite(argv.iter().map(OsString::from).collect()) else { return Ok(()) };
    let Ok(Cli { command: Command::Bench(bench) }) = Cli::try_parse_from(args) else { return Ok(()) };
    match bench.engine {
        EngineCommand::Pipeline(bench) if bench.validate().is_ok() => again(bench.as_ref()),
        EngineCommand::Threads(bench) if bench.validate().is_ok() => again(bench.as_ref()),
        EngineCommand::Pg(bench) if bench.validate().is_ok() => again(bench.as_ref()),
        _ => Ok(()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn bench_flags_print_back_to_the_same_arguments(argv in bench_line()) {
        flags_print_back(&argv)?;
    }
}

/// Numbers a JSON field might hold: small, boundary, huge, negative, fractional.
fn json_number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..8).prop_map(|n| n.to_string()),
        prop::sample::select(vec![
            "-1",
            "0.5",
            "1e300",
            "-0",
            "4294967296",
            "18446744073709551615",
            "18446744073709551616",
            "20001",
            "1e9"
        ])
        .prop_map(String::from),
        any::<u64>().prop_map(|n| n.to_string()),
    ]
}

fn number_list() -> impl Strategy<Value = String> {
    prop::collection::vec(json_number(), 0..6).prop_map(|items| format!("[{}]", items.join(",")))
}

/// Random JSON shaped like (and unlike) `ordo fvs`'s input.
fn batch_text() -> impl Strategy<Value = String> {
    let entry =
        (number_list(), number_list(), prop::option::of(json_number()), prop::option::of(json_number()), 0..4u8)
            .prop_map(|(reads, writes, restarts, value, kind)| {
                let mut fields = vec![format!(r#""reads":{reads}"#), format!(r#""writes":{writes}"#)];
                if let Some(restarts) = restarts {
                    fields.push(format!(r#""restarts":{restarts}"#));
                }
                if let Some(value) = value {
                    fields.push(format!(r#""value":{value}"#));
                }
                match kind {
                    0 => fields.truncate(1),
                    1 => fields.push(r#""colour":1"#.into()),
                    _ => {}
                }
                format!("{{{}}}", fields.join(","))
            });
    let batch = prop::collection::vec(entry, 0..12).prop_map(|entries| format!("[{}]", entries.join(",")));
    let edge = (json_number(), json_number()).prop_map(|(a, b)| format!("[{a},{b}]"));
    let graph = (json_number(), prop::collection::vec(edge, 0..10))
        .prop_map(|(vertices, edges)| format!(r#"{{"vertices":{vertices},"edges":[{}]}}"#, edges.join(",")));
    prop_oneof![batch, graph, any::<String>(), "[\\[\\]{}\",:0-9a-z ]{0,40}"]
}

/// Random JSON lines shaped like (and unlike) a recorded history.
fn history_text() -> impl Strategy<Value = String> {
    let pairs = || {
        let pair = (json_number(), json_number()).prop_map(|(key, version)| format!("[{key},{version}]"));
        prop::collection::vec(pair, 0..4).prop_map(|p| format!("[{}]", p.join(",")))
    };
    let entry =
        (json_number(), pairs(), pairs(), prop::option::of(json_number())).prop_map(|(id, reads, writes, ts)| {
            let ts = ts.map_or_else(String::new, |ts| format!(r#","ts":{ts}"#));
            format!(r#"{{"id":{id},"reads":{reads},"writes":{writes}{ts}}}"#)
        });
    let lines = prop::collection::vec(prop_oneof![entry, "[\\[\\]{}\",:0-9a-z ]{0,30}"], 0..8);
    prop_oneof![lines.prop_map(|lines| lines.join("\n")), any::<String>(), Just("\u{feff}".to_owned()),]
}

#[test]
fn the_command_lines_of_documented_commands_are_found() {
    let found = documented_commands(
        "Run `ordo bench --mode srvc --theta 0.8 --history h.jsonl && ordo check h.jsonl`.\n\n    ordo bench \\\n      --engine pg\n",
    );
    assert_eq!(found, ["bench --engine pg", "bench --mode srvc --theta 0.8 --history h.jsonl", "check h.jsonl"]);
    assert_eq!(shell_words(r#"bench --placement "a;b" --x 'c d'"#), ["bench", "--placement", "a;b", "--x", "c d"]);
}

/// The command-line parser itself is well formed (clap's own consistency checks).
#[test]
fn the_command_line_is_well_formed() {
    Cli::command().debug_assert();
}

/// The result files in `docs/results` (written before results were typed) read as typed
/// results, and write back with the same keys and values.
#[test]
fn published_results_read_as_typed_results() {
    use crate::commands::bench::Described;
    use crate::commands::bench::pg::PgRun;
    use crate::commands::bench::pipeline::PipelineRun;
    use crate::commands::bench::threads::ThreadsRun;
    use ordo_harness::{Description, RunResult};

    fn same_after_typing<C: Described>(file: &str, text: &str) -> usize {
        let untyped: Vec<RunResult<Description>> = serde_json::from_str(text).unwrap();
        let typed: Vec<RunResult<C>> =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{file} does not read as {} results: {e}", C::ENGINE));
        for (before, after) in untyped.iter().zip(&typed) {
            let after: Description = after.info.run.clone().into();
            let mut expected = before.info.run.clone();
            // Written before the thread engine had tables: every run was on the flat store.
            if C::ENGINE == "threads" && !expected.config.contains_key("index") {
                expected.config.insert("index".into(), "array".into());
            }
            if C::ENGINE == "threads" && expected.workload == "ycsb" && !expected.config.contains_key("ycsb") {
                expected.config.insert("ycsb".into(), serde_json::Value::Null);
            }
            // Unbounded was written 0 before the typed flags, and is written by name now.
            if expected.config.get("affinity_backlog_max") == Some(&serde_json::Value::from(0)) {
                expected.config.insert("affinity_backlog_max".into(), "unbounded".into());
            }
            assert_eq!(after, expected, "{file}");
        }
        typed.len()
    }

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
    let mut read = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.extension().is_none_or(|e| e != "json") || file == "fvs.json" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let engine = serde_json::from_str::<serde_json::Value>(&text).unwrap()[0]["engine"].clone();
        read += match engine.as_str() {
            Some("pipeline") => same_after_typing::<PipelineRun>(&file, &text),
            Some("threads") => same_after_typing::<ThreadsRun>(&file, &text),
            Some("pg") => same_after_typing::<PgRun>(&file, &text),
            other => panic!("{file}: unknown engine {other:?}"),
        };
    }
    assert!(read > 50, "only {read} results read");
}
