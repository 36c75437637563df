//! A throwaway local PostgreSQL cluster for benchmarks and tests: `initdb` into a directory,
//! listen on a loopback port and a Unix socket inside that directory, with settings suited to
//! benchmarking. When ordo runs as root, the server's programs run as the `postgres` user
//! (PostgreSQL refuses to run as root) and the directory is handed to that user.
//!
//! ```text
//!   ordo pg start ──> initdb -D DIR (once) ──> DIR/ordo.conf = BENCHMARK_SETTINGS ──> pg_ctl start
//!   ordo pg stop  ──> pg_ctl stop -m fast
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::error::{PgError, Result};

/// The superuser the throwaway cluster is created with, and its password (loopback only).
pub const CLUSTER_USER: &str = "ordo";
pub const CLUSTER_PASSWORD: &str = "ordo";
/// The default port of `ordo pg start` (not 5432, so a system server is left alone).
pub const PORT_DEFAULT: u16 = 5433;

/// The file in the data directory that holds BENCHMARK_SETTINGS.
const SETTINGS_FILE: &str = "ordo.conf";

/// Settings the cluster runs with (rewritten into `ordo.conf` at every start), with why.
pub const BENCHMARK_SETTINGS: &[(&str, &str, &str)] = &[
    ("max_connections", "100", "the connection sweep goes to 32, plus tests and monitoring"),
    ("shared_buffers", "512MB", "SmallBank's 100K customers (~30 MB) and their indexes stay cached"),
    ("fsync", "on", "durable commits, as a production server; results state it"),
    ("synchronous_commit", "on", "the default; `--synchronous-commit off` changes it per session"),
    ("wal_buffers", "16MB", "room for group commit under 32 connections"),
    ("max_wal_size", "4GB", "no checkpoint storms inside a 10 s run"),
    ("checkpoint_timeout", "15min", "idem"),
    ("max_pred_locks_per_transaction", "128", "SERIALIZABLE's predicate locks never run out"),
    (
        "max_pred_locks_per_page",
        "64",
        "up to 64 row locks of a page before SSI makes them one page lock (default 2): the hottest customers share a page",
    ),
    ("listen_addresses", "'127.0.0.1'", "loopback only: the cluster has a well-known password"),
    ("log_min_messages", "warning", "quiet logs"),
];

/// The user's name for per-user paths: `$USER`, else `$LOGNAME`, else the process's user id
/// (containers and CI runners often set neither variable); see [`user_label`].
fn user_name() -> String {
    let name = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).ok();
    user_label(name.as_deref(), process_uid())
}

/// `name` reduced to characters safe in a file name, else `uid-N`, else `unknown`.
fn user_label(name: Option<&str>, uid: Option<u32>) -> String {
    let safe: String = name
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    match (safe.is_empty(), uid) {
        (false, _) => safe,
        (true, Some(uid)) => format!("uid-{uid}"),
        (true, None) => "unknown".to_owned(),
    }
}

/// The user id the process runs as: the owner of `/proc/self` (Linux); `None` elsewhere.
fn process_uid() -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").ok().map(|meta| meta.uid())
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Where a throwaway cluster lives and how it is reached.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub data_dir: PathBuf,
    pub port: u16,
}

impl Cluster {
    pub fn new(data_dir: impl Into<PathBuf>, port: u16) -> Self {
        Cluster { data_dir: data_dir.into(), port }
    }

    /// The default cluster of `ordo pg start`: `$TMPDIR/ordo-pg-$USER` (`ordo-pg-uid-N` when
    /// neither `$USER` nor `$LOGNAME` is set) on port 5433 (one per user, so two users of a
    /// machine do not share, or fight over, one data directory).
    pub fn default_local() -> Self {
        Cluster::new(std::env::temp_dir().join(format!("ordo-pg-{}", user_name())), PORT_DEFAULT)
    }

    /// The URL to reach it over TCP loopback.
    pub fn url(&self) -> String {
        format!("postgres://{CLUSTER_USER}:{CLUSTER_PASSWORD}@127.0.0.1:{}/postgres", self.port)
    }

    /// The directory holding the Unix socket (the data directory itself).
    pub fn socket_dir(&self) -> &Path {
        &self.data_dir
    }

    fn log_file(&self) -> PathBuf {
        self.data_dir.join("server.log")
    }

    /// Whether `initdb` already ran in the data directory.
    pub fn initialized(&self) -> bool {
        self.data_dir.join("PG_VERSION").exists()
    }

    /// Creates the cluster if needed and starts it; returns whether it had to be started.
    pub fn start(&self) -> Result<bool> {
        let bin = find_bin_dir()?;
        if !self.initialized() {
            self.init(&bin)?;
        }
        if self.running()? {
            return Ok(false);
        }
        self.write_settings()?;
        let output = Self::run_as_server_user(
            &bin.join("pg_ctl"),
            &[
                "-D".as_ref(),
                self.data_dir.as_os_str(),
                "-l".as_ref(),
                self.log_file().as_os_str(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
                "-o".as_ref(),
                format!("-p {} -k {}", self.port, self.data_dir.display()).as_ref(),
                "start".as_ref(),
            ],
        )?;
        if !output.status.success() {
            let log = std::fs::read_to_string(self.log_file()).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(10).collect::<Vec<_>>().into_iter().rev().collect();
            return Err(PgError::Cluster(format!(
                "pg_ctl start failed ({}): {}\nserver log ({}):\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim(),
                self.log_file().display(),
                tail.join("\n")
            )));
        }
        Ok(true)
    }

    /// Stops the server (fast shutdown: open transactions are rolled back). Returns whether it
    /// was running.
    pub fn stop(&self) -> Result<bool> {
        self.stop_with("fast")
    }

    /// Stops the server with a `pg_ctl` shutdown mode (`smart`, `fast`, `immediate`).
    pub fn stop_with(&self, mode: &str) -> Result<bool> {
        if !self.initialized() || !self.running()? {
            return Ok(false);
        }
        let bin = find_bin_dir()?;
        let output = Self::run_as_server_user(
            &bin.join("pg_ctl"),
            &["-D".as_ref(), self.data_dir.as_os_str(), "-m".as_ref(), mode.as_ref(), "-w".as_ref(), "stop".as_ref()],
        )?;
        if !output.status.success() {
            return Err(PgError::Cluster(format!(
                "pg_ctl stop failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(true)
    }

    /// Whether a server runs on the data directory.
    pub fn running(&self) -> Result<bool> {
        if !self.initialized() {
            return Ok(false);
        }
        let bin = find_bin_dir()?;
        let output = Self::run_as_server_user(
            &bin.join("pg_ctl"),
            &["-D".as_ref(), self.data_dir.as_os_str(), "status".as_ref()],
        )?;
        // pg_ctl status: 0 running, 3 not running, 4 no data directory.
        Ok(output.status.success())
    }

    fn init(&self, bin: &Path) -> Result<()> {
        std::fs::create_dir_all(&self.data_dir)
            .map_err(|source| PgError::Io { context: format!("cannot create {}", self.data_dir.display()), source })?;
        let password_file = self.data_dir.with_extension("pwfile");
        std::fs::write(&password_file, CLUSTER_PASSWORD)
            .map_err(|source| PgError::Io { context: format!("cannot write {}", password_file.display()), source })?;
        self.hand_to_server_user(&password_file)?;
        let output = Self::run_as_server_user(
            &bin.join("initdb"),
            &[
                "-D".as_ref(),
                self.data_dir.as_os_str(),
                "-U".as_ref(),
                CLUSTER_USER.as_ref(),
                "--pwfile".as_ref(),
                password_file.as_os_str(),
                "--auth-local=trust".as_ref(),
                "--auth-host=scram-sha-256".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--no-sync".as_ref(),
            ],
        )?;
        let _ = std::fs::remove_file(&password_file);
        if !output.status.success() {
            return Err(PgError::Cluster(format!(
                "initdb into {} failed: {}",
                self.data_dir.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(())
    }

    /// Writes BENCHMARK_SETTINGS into `ordo.conf` in the data directory, and makes
    /// postgresql.conf include it last (once), so every start runs with this ordo's settings,
    /// also on a cluster an older ordo created.
    fn write_settings(&self) -> Result<()> {
        let mut conf = String::from("# written by `ordo pg start` at every start: settings for benchmarking\n");
        for (name, value, why) in BENCHMARK_SETTINGS {
            conf.push_str(&format!("{name} = {value}    # {why}\n"));
        }
        let ordo_conf = self.data_dir.join(SETTINGS_FILE);
        std::fs::write(&ordo_conf, conf)
            .map_err(|source| PgError::Io { context: format!("cannot write {}", ordo_conf.display()), source })?;
        let conf_path = self.data_dir.join("postgresql.conf");
        let mut existing = std::fs::read_to_string(&conf_path)
            .map_err(|source| PgError::Io { context: format!("cannot read {}", conf_path.display()), source })?;
        let include = format!("include_if_exists = '{SETTINGS_FILE}'");
        if !existing.lines().any(|line| line.trim() == include) {
            existing.push_str(&format!("\n# ordo pg start: benchmark settings (last, so they win)\n{include}\n"));
            std::fs::write(&conf_path, existing)
                .map_err(|source| PgError::Io { context: format!("cannot write {}", conf_path.display()), source })?;
        }
        self.hand_to_server_user(&ordo_conf)
    }

    /// As root, makes `path` and the data directory's parents usable by the `postgres` user.
    fn hand_to_server_user(&self, path: &Path) -> Result<()> {
        if !running_as_root() {
            return Ok(());
        }
        for dir in [&self.data_dir, path] {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir)
                .status()
                .map_err(|source| PgError::Io { context: "cannot run chown".into(), source })?;
            if !status.success() {
                return Err(PgError::Cluster(format!("chown postgres {} failed", dir.display())));
            }
        }
        Ok(())
    }

    fn run_as_server_user(program: &Path, args: &[&std::ffi::OsStr]) -> Result<Output> {
        let mut command = if running_as_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        command.args(args).stdin(std::process::Stdio::null());
        command.output().map_err(|source| PgError::Io {
            context: format!("cannot run {} (is PostgreSQL installed?)", program.display()),
            source,
        })
    }
}

fn running_as_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Finds PostgreSQL's server programs: `$ORDO_PG_BIN`, then the newest
/// `/usr/lib/postgresql/*/bin`, then `pg_config --bindir`.
pub fn find_bin_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("ORDO_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output()
        && output.status.success()
    {
        let bin = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if bin.join("initdb").exists() {
            return Ok(bin);
        }
    }
    Err(PgError::Cluster(
        "PostgreSQL's server programs (initdb, pg_ctl) were not found in /usr/lib/postgresql/*/bin or by pg_config; \
         install them (`apt-get install postgresql`) or set ORDO_PG_BIN"
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_label_is_the_safe_name_else_the_uid() {
        assert_eq!(user_label(Some("alice"), Some(1000)), "alice");
        assert_eq!(user_label(Some("a/b c"), Some(1000)), "abc", "path characters are dropped");
        assert_eq!(user_label(None, Some(1000)), "uid-1000");
        assert_eq!(user_label(Some("//"), Some(0)), "uid-0", "nothing safe left: the uid");
        assert_eq!(user_label(None, None), "unknown");
        #[cfg(target_os = "linux")]
        assert!(process_uid().is_some(), "/proc/self names the process's user");
    }
}
