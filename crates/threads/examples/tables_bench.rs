//! Measures the table engine (Silo over `ordo-storage`): load time and throughput.
//!
//! ```text
//! cargo run --release -p ordo-threads --example tables_bench -- tpcc [warehouses] [threads] [seconds]
//! cargo run --release -p ordo-threads --example tables_bench -- ycsb [records] [threads] [seconds] [tree|array]
//! ```
//!
//! TPC-C runs the full standard mix at the specification's scale with fixed binding; ycsb runs
//! the default mix (16 operations, θ = 0.99, 100-byte payloads) through `KvTables`.

use std::sync::Arc;
use std::time::Duration;

use ordo_threads::tables::{Index, TableRunSpec, TablesConfig, run};
use ordo_workload::{KvTables, TableWorkload, Tpcc, TpccConfig, Ycsb, YcsbConfig};

fn arg<T: std::str::FromStr>(args: &[String], position: usize, default: T) -> T {
    args.get(position).map_or(default, |text| {
        text.parse().unwrap_or_else(|_| {
            eprintln!("argument {position} (`{text}`) is not a valid number");
            std::process::exit(2)
        })
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = args.first().map_or("tpcc", String::as_str);
    let threads: usize = arg(&args, 2, 1);
    let seconds: f64 = arg(&args, 3, 5.0);
    let index = match args.get(4).map(String::as_str) {
        None | Some("tree") => Index::Tree,
        Some("array") => Index::Array,
        Some(other) => {
            eprintln!("unknown index `{other}`: expected tree or array");
            std::process::exit(2)
        }
    };
    let workload: Arc<dyn TableWorkload> = match kind {
        "tpcc" => {
            let warehouses: u32 = arg(&args, 1, 1);
            Arc::new(Tpcc::new(TpccConfig { warehouses, ..TpccConfig::default() }).expect("a valid TPC-C config"))
        }
        "ycsb" => {
            let records: u64 = arg(&args, 1, 10_000_000);
            let ycsb = Ycsb::new(YcsbConfig { records, ..YcsbConfig::default() }).expect("a valid ycsb config");
            Arc::new(KvTables::new(Arc::new(ycsb), YcsbConfig::default().payload_bytes))
        }
        other => {
            eprintln!("unknown workload `{other}`: expected tpcc or ycsb");
            std::process::exit(2)
        }
    };
    let config = TablesConfig { threads, index, ..TablesConfig::default() };
    let spec = TableRunSpec {
        seed: 1,
        warmup: Duration::from_millis(500),
        duration: Duration::from_secs_f64(seconds),
        cooldown: Duration::ZERO,
        record_history: false,
    };
    let report = match run(&config, &workload, &spec, |_, _| {}) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1)
        }
    };
    let commits = report.recorder.commits();
    println!("workload {} index {} threads {threads}", workload.name(), index.name());
    println!("load_s {:.2}", report.load_s);
    println!("commits {commits} tx_per_s {:.0}", commits as f64 / report.measured_s);
    println!("aborts {} user_aborts {}", report.recorder.total_aborts(), report.recorder.user_aborts());
    for (name, committed) in workload.procedure_names().iter().zip(report.recorder.commits_by_procedure()) {
        println!("  {name}: {committed}");
    }
    match report.consistency {
        Ok(checked) => println!("consistency ok: {:?}", checked.checked),
        Err(error) => println!("consistency FAILED: {error}"),
    }
}
