//! `ordo pg start|stop|status|load`: a throwaway local PostgreSQL for the `pg` engine.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ordo_pgtier::cluster::{BENCHMARK_SETTINGS, PORT_DEFAULT};
use ordo_pgtier::{Cluster, schema};

use super::bench::workloads::KEYS_DEFAULT;

#[derive(Debug, Args)]
pub struct PgArgs {
    #[command(subcommand)]
    pub action: PgAction,
}

#[derive(Debug, Args, Clone)]
pub struct ClusterArgs {
    /// Data directory of the throwaway cluster (default: $TMPDIR/ordo-pg-$USER, or ordo-pg-uid-N without $USER, one per user).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Loopback port, 1..=65535.
    #[arg(long, default_value_t = PORT_DEFAULT, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
}

impl ClusterArgs {
    pub fn cluster(&self) -> Cluster {
        match &self.dir {
            Some(dir) => Cluster::new(dir.clone(), self.port),
            None => Cluster::new(Cluster::default_local().data_dir, self.port),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum PgAction {
    /// Create (initdb, first time) and start a local cluster with benchmark settings.
    Start(ClusterArgs),
    /// Stop the local cluster (fast shutdown).
    Stop(ClusterArgs),
    /// Say whether the local cluster runs, how to reach it, and what ordo's schema holds.
    Status(ClusterArgs),
    /// Create ordo's SmallBank schema and load the bank (COPY).
    Load(LoadArgs),
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Any PostgreSQL server instead of the local cluster.
    #[arg(long)]
    pub url: Option<String>,
    /// Customers.
    #[arg(long, default_value_t = KEYS_DEFAULT)]
    pub keys: u64,
    /// Seed of the initial balances.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Drop and recreate ordo's tables even if they are from another ordo version.
    #[arg(long)]
    pub recreate: bool,
}

pub fn run(args: &PgArgs) -> Result<()> {
    match &args.action {
        PgAction::Start(c) => {
            let cluster = c.cluster();
            if cluster.initialized() {
                println!(
                    "reusing the cluster in {} (created earlier; remove the directory for a fresh one)",
                    cluster.data_dir.display()
                );
            }
            let started = cluster.start()?;
            println!(
                "PostgreSQL {} in {} (port {})",
                if started { "started" } else { "already running" },
                cluster.data_dir.display(),
                cluster.port
            );
            println!("settings for benchmarking:");
            for (name, value, why) in BENCHMARK_SETTINGS {
                println!("  {name} = {value}  ({why})");
            }
            println!("connect: psql '{}'", cluster.url());
            println!("bench:   ordo bench --engine pg --url '{}'", cluster.url());
            Ok(())
        }
        PgAction::Stop(c) => {
            let cluster = c.cluster();
            let stopped = cluster.stop()?;
            println!("{}", if stopped { "PostgreSQL stopped" } else { "PostgreSQL was not running" });
            Ok(())
        }
        PgAction::Status(c) => {
            let cluster = c.cluster();
            if !cluster.running()? {
                println!("not running ({}); start it with `ordo pg start`", cluster.data_dir.display());
                return Ok(());
            }
            println!("running in {} on port {}: {}", cluster.data_dir.display(), cluster.port, cluster.url());
            let url = cluster.url();
            runtime()?.block_on(async {
                let client = ordo_pgtier::connection::connect_plain(&url).await?;
                match schema::inspect(&client).await {
                    Ok(loaded) => {
                        let audit = schema::audit(&client, None).await?;
                        println!(
                            "schema version {}: {} customers, {} cents loaded, {} cents now, {} cents recorded in ordo_txn",
                            schema::SCHEMA_VERSION,
                            loaded.customers,
                            loaded.loaded_total_cents,
                            audit.total_cents,
                            audit.recorded_net_cents
                        );
                    }
                    Err(error) => println!("schema: {error}"),
                }
                Ok::<_, anyhow::Error>(())
            })
        }
        PgAction::Load(load) => {
            let url = load.url.clone().unwrap_or_else(|| load.cluster.cluster().url());
            let workload = ordo_workload::SmallBank::new(ordo_workload::SmallBankConfig {
                customers: load.keys,
                seed: load.seed,
                ..ordo_workload::SmallBankConfig::default()
            })?;
            runtime()?.block_on(async {
                let client = ordo_pgtier::connection::connect_plain(&url).await?;
                if load.recreate {
                    schema::create(&client).await?;
                }
                let started = std::time::Instant::now();
                let loaded = schema::load(&client, &workload).await?;
                println!(
                    "loaded {} customers ({} cents) in {:.1} s",
                    loaded.customers,
                    loaded.loaded_total_cents,
                    started.elapsed().as_secs_f64()
                );
                Ok::<_, anyhow::Error>(())
            })
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the tokio runtime")
}
