//! One connection of the tier: connect with clear errors, set the session up (isolation,
//! `synchronous_commit`), prepare the procedures, and classify what a failed statement means.

use std::time::{Duration, Instant};

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, Statement};

use crate::error::{PgError, Result};

/// Isolation level of every transaction the tier runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    Serializable,
    RepeatableRead,
}

impl Isolation {
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Serializable => "serializable",
            Isolation::RepeatableRead => "repeatable-read",
        }
    }

    fn sql(self) -> &'static str {
        match self {
            Isolation::Serializable => "SERIALIZABLE",
            Isolation::RepeatableRead => "REPEATABLE READ",
        }
    }
}

/// `--isolation` on the command line: the names of [`Isolation::name`].
#[cfg(feature = "clap")]
impl clap::ValueEnum for Isolation {
    fn value_variants<'a>() -> &'a [Self] {
        &[Isolation::Serializable, Isolation::RepeatableRead]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.name());
        Some(if *self == Isolation::RepeatableRead { value.alias("repeatable_read") } else { value })
    }
}

impl std::str::FromStr for Isolation {
    type Err = PgError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "serializable" => Ok(Isolation::Serializable),
            "repeatable-read" | "repeatable_read" => Ok(Isolation::RepeatableRead),
            other => Err(PgError::invalid("isolation", format!("`{other}`: expected serializable or repeatable-read"))),
        }
    }
}

/// How a session is set up.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub url: String,
    pub isolation: Isolation,
    /// `Some(on)`: `SET synchronous_commit` for the session; `None`: the server's setting.
    pub synchronous_commit: Option<bool>,
    /// `Some(ms)`: `SET deadlock_timeout` for the session (a superuser setting: where the
    /// server refuses, its own value stays, and the run's recorded settings show it); `None`:
    /// the server's setting (PostgreSQL's default is 1 s, which a deadlock between two groups
    /// then costs both connections).
    pub deadlock_timeout_ms: Option<u64>,
}

/// The statements every connection prepares.
#[derive(Debug)]
pub struct Prepared {
    /// Indexed by SmallBank procedure number.
    pub functions: [Statement; 6],
    /// `sb_group`: several transactions in one call (see `group`).
    pub group: Statement,
    pub read_account: Statement,
    pub read_savings: Statement,
    pub read_checking: Statement,
    pub write_savings: Statement,
    pub write_checking: Statement,
    pub record_txn: Statement,
    pub lookup_txn: Statement,
    /// The `ordo_txn` rows of several ids (an in-doubt group).
    pub lookup_txns: Statement,
}

/// A live connection: the client, its backend's pid (to know when it is gone), and its
/// prepared statements.
#[derive(Debug)]
pub struct Conn {
    pub client: Client,
    pub backend_pid: i32,
    pub prepared: Prepared,
}

/// What a failed statement means for the transaction that sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 40001: retry.
    Serialization,
    /// 40P01: retry.
    Deadlock,
    /// The connection broke (terminated backend, server shutdown or crash, network): if a
    /// COMMIT may have been sent, the outcome is unknown until looked up.
    ConnectionLost,
    /// Anything else: a bug or a broken schema, not retried.
    Other,
}

pub fn classify(error: &tokio_postgres::Error) -> Failure {
    match error.code() {
        Some(code) if *code == SqlState::T_R_SERIALIZATION_FAILURE => Failure::Serialization,
        Some(code) if *code == SqlState::T_R_DEADLOCK_DETECTED => Failure::Deadlock,
        // Class 57: operator intervention (admin shutdown, crash shutdown, cannot connect now),
        // class 08: connection exceptions.
        Some(code) if code.code().starts_with("57") || code.code().starts_with("08") => Failure::ConnectionLost,
        Some(_) => Failure::Other,
        None => Failure::ConnectionLost,
    }
}

fn connect_error(url: &str, error: &tokio_postgres::Error) -> PgError {
    let reason = error.to_string();
    match error.code() {
        Some(code) if *code == SqlState::INVALID_PASSWORD || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
            PgError::Authentication { url: redact(url), reason }
        }
        Some(code) if *code == SqlState::CANNOT_CONNECT_NOW => {
            PgError::Restarting { url: redact(url), waited_s: 0.0, reason }
        }
        _ => {
            // The chain holds the useful part (connection refused, no such host).
            let mut reason = reason;
            let mut source = std::error::Error::source(error);
            while let Some(inner) = source {
                reason = format!("{reason}: {inner}");
                source = inner.source();
            }
            if reason.contains("password") {
                PgError::Authentication { url: redact(url), reason }
            } else {
                PgError::Unreachable { url: redact(url), reason }
            }
        }
    }
}

/// The URL without its password, for messages.
pub fn redact(url: &str) -> String {
    if let Some(scheme_end) = url.find("://")
        && let Some(at) = url[scheme_end + 3..].find('@')
    {
        let credentials = &url[scheme_end + 3..scheme_end + 3 + at];
        if let Some(colon) = credentials.find(':') {
            return format!("{}{}:***{}", &url[..scheme_end + 3], &credentials[..colon], &url[scheme_end + 3 + at..]);
        }
    }
    url.to_owned()
}

/// Opens a plain client (no session setup): for loading, auditing and administration.
pub async fn connect_plain(url: &str) -> Result<Client> {
    let config: tokio_postgres::Config =
        url.parse().map_err(|e| PgError::invalid("url", format!("`{}`: {e}", redact(url))))?;
    let (client, connection) = config.connect(NoTls).await.map_err(|e| connect_error(url, &e))?;
    tokio::spawn(async move {
        // Errors surface on the client's next request; nothing to do with them here.
        let _ = connection.await;
    });
    Ok(client)
}

impl Conn {
    /// Connects and sets the session up.
    pub async fn open(session: &SessionConfig) -> Result<Conn> {
        let client = connect_plain(&session.url).await?;
        let mut setup = format!(
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {}; SET default_transaction_isolation = '{}';",
            session.isolation.sql(),
            session.isolation.sql().to_lowercase()
        );
        if let Some(on) = session.synchronous_commit {
            setup.push_str(&format!(" SET synchronous_commit = {};", if on { "on" } else { "off" }));
        }
        client.batch_execute(&setup).await.map_err(|e| PgError::database("setting the session up", e))?;
        if let Some(ms) = session.deadlock_timeout_ms {
            match client.batch_execute(&format!("SET deadlock_timeout = '{ms}ms'")).await {
                Ok(()) => {}
                Err(e) if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) => {}
                Err(e) => return Err(PgError::database("setting deadlock_timeout", e)),
            }
        }
        let backend_pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .map_err(|e| PgError::database("asking the backend's pid", e))?
            .get(0);
        let prepare = |sql: &'static str| {
            let client = &client;
            async move {
                client.prepare(sql).await.map_err(|e| match e.code() {
                    Some(code) if *code == SqlState::UNDEFINED_FUNCTION || *code == SqlState::UNDEFINED_TABLE => {
                        PgError::SchemaMissing
                    }
                    _ => PgError::database(format!("preparing `{sql}`"), e),
                })
            }
        };
        let prepared = Prepared {
            functions: [
                prepare("SELECT sb_amalgamate($1, $2, $3)").await?,
                prepare("SELECT sb_balance($1, $2)").await?,
                prepare("SELECT sb_deposit_checking($1, $2, $3)").await?,
                prepare("SELECT sb_send_payment($1, $2, $3, $4)").await?,
                prepare("SELECT sb_transact_savings($1, $2, $3)").await?,
                prepare("SELECT sb_write_check($1, $2, $3)").await?,
            ],
            group: prepare("SELECT sb_group($1, $2, $3, $4, $5)").await?,
            read_account: prepare("SELECT custid FROM sb_accounts WHERE name = $1").await?,
            read_savings: prepare("SELECT bal FROM sb_savings WHERE custid = $1").await?,
            read_checking: prepare("SELECT bal FROM sb_checking WHERE custid = $1").await?,
            write_savings: prepare("UPDATE sb_savings SET bal = $2 WHERE custid = $1").await?,
            write_checking: prepare("UPDATE sb_checking SET bal = $2 WHERE custid = $1").await?,
            record_txn: prepare("INSERT INTO ordo_txn VALUES ($1, $2)").await?,
            lookup_txn: prepare("SELECT net_cents FROM ordo_txn WHERE id = $1").await?,
            lookup_txns: prepare("SELECT id, net_cents FROM ordo_txn WHERE id = ANY($1)").await?,
        };
        Ok(Conn { client, backend_pid, prepared })
    }

    /// Reconnects after the connection broke, waiting up to `timeout` for a restarting server,
    /// then waits until the old backend has exited so its last transaction is settled (committed
    /// and visible, or rolled back) before anyone looks its id up.
    pub async fn reopen(session: &SessionConfig, old_backend_pid: i32, timeout: Duration) -> Result<Conn> {
        let started = Instant::now();
        // A server that refuses connections outright was stopped (or never ran): say so, not
        // that it is restarting, which only a server answering "cannot connect now" is.
        let give_up = |error: PgError| match error {
            PgError::Unreachable { url, reason } => PgError::Unreachable {
                url,
                reason: format!(
                    "{reason} (still, after waiting {:.0} s for it to come back)",
                    started.elapsed().as_secs_f64()
                ),
            },
            other => PgError::Restarting {
                url: redact(&session.url),
                waited_s: started.elapsed().as_secs_f64(),
                reason: other.to_string(),
            },
        };
        loop {
            let conn = match Conn::open(session).await {
                Ok(conn) => conn,
                Err(
                    error @ (PgError::Authentication { .. } | PgError::SchemaMissing | PgError::InvalidConfig { .. }),
                ) => {
                    return Err(error);
                }
                Err(error) if started.elapsed() >= timeout => return Err(give_up(error)),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // The new connection can break too (another kill, a restart): then start over.
            loop {
                match conn
                    .client
                    .query_one("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", &[&old_backend_pid])
                    .await
                {
                    Ok(row) if row.get::<_, i64>(0) == 0 => return Ok(conn),
                    Ok(_) if started.elapsed() >= timeout => {
                        return Err(PgError::InDoubt {
                            count: 1,
                            reason: format!("backend {old_backend_pid} did not exit within {timeout:?}"),
                        });
                    }
                    Ok(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                    Err(error) if classify(&error) != Failure::ConnectionLost => {
                        return Err(PgError::database("waiting for the old backend to exit", error));
                    }
                    Err(error) if started.elapsed() >= timeout => {
                        return Err(give_up(PgError::database("waiting for the old backend to exit", error)));
                    }
                    Err(_) => break,
                }
            }
        }
    }
}
