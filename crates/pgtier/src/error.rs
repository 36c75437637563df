//! What can go wrong talking to PostgreSQL, phrased as what to do about it.
//!
//! Retryable conflicts (SQLSTATE 40001, 40P01) never surface here: the tier retries them and
//! counts them. What does surface is something an operator must fix (the server is down, the
//! password is wrong, the schema is missing or stale) or bad input.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum PgError {
    /// Nothing answers at the address.
    #[error("cannot reach PostgreSQL at {url}: {reason}; start one with `ordo pg start` or pass --url")]
    Unreachable { url: String, reason: String },
    /// The server refused the credentials.
    #[error("PostgreSQL at {url} refused the credentials ({reason}); check the user and password in --url")]
    Authentication { url: String, reason: String },
    /// The server is starting up, shutting down or in recovery and did not come back in time.
    #[error("PostgreSQL at {url} is restarting and did not accept connections within {waited_s:.0} s: {reason}")]
    Restarting { url: String, waited_s: f64, reason: String },
    /// ordo's tables are not there.
    #[error(
        "the SmallBank schema is missing from the database; create it with `ordo pg load` (or `ordo bench --engine pg`)"
    )]
    SchemaMissing,
    /// ordo's tables are from another version of ordo.
    #[error(
        "the database holds ordo schema version {found}, this ordo needs version {expected}; recreate it with `ordo pg load`"
    )]
    SchemaVersion { found: i64, expected: i64 },
    /// The loaded data does not match the workload (another customer count).
    #[error(
        "the database holds {found} customers but the workload has {expected}; reload with `ordo pg load --keys {expected}`"
    )]
    SchemaSize { found: i64, expected: i64 },
    /// A transaction's outcome could not be established (the server never came back).
    #[error("{count} transaction(s) are in doubt (COMMIT sent, no answer) and the server could not be asked: {reason}")]
    InDoubt { count: usize, reason: String },
    /// Bad configuration.
    #[error("invalid {field}: {reason}")]
    InvalidConfig { field: &'static str, reason: String },
    /// Running the local cluster's programs (initdb, pg_ctl) failed.
    #[error("{0}")]
    Cluster(String),
    /// Any other error from the server, with the statement that caused it.
    #[error("PostgreSQL error while {context}: {detail}")]
    Database {
        context: String,
        detail: String,
        #[source]
        source: tokio_postgres::Error,
    },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl PgError {
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        PgError::InvalidConfig { field, reason: reason.into() }
    }

    pub fn database(context: impl Into<String>, source: tokio_postgres::Error) -> Self {
        let detail = match source.as_db_error() {
            Some(db) => format!("{} (SQLSTATE {}): {}", db.severity(), db.code().code(), db.message()),
            None => {
                let mut detail = source.to_string();
                let mut inner = std::error::Error::source(&source);
                while let Some(cause) = inner {
                    detail = format!("{detail}: {cause}");
                    inner = cause.source();
                }
                detail
            }
        };
        PgError::Database { context: context.into(), detail, source }
    }
}

pub type Result<T, E = PgError> = std::result::Result<T, E>;
