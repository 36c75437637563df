//! Errors of workload configuration.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum WorkloadError {
    #[error("invalid {field}: {reason}")]
    InvalidConfig { field: &'static str, reason: String },
}

impl WorkloadError {
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        WorkloadError::InvalidConfig { field, reason: reason.into() }
    }
}
