//! Errors of the reorder library: bad input, never a conflict.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum ReorderError {
    #[error("edge {index} ({from} -> {to}) names a vertex outside 0..{vertices}")]
    EdgeOutOfRange { index: usize, from: usize, to: usize, vertices: usize },
    #[error("unknown algorithm `{name}`; expected one of {expected}")]
    UnknownAlgorithm { name: String, expected: &'static str },
    #[error("unknown policy `{name}`; expected one of {expected}")]
    UnknownPolicy { name: String, expected: &'static str },
    #[error("invalid {field}: {reason}")]
    InvalidConfig { field: &'static str, reason: String },
    #[error("thread capacities sum to {capacity} but the batch holds {batch} transactions")]
    CapacityMismatch { capacity: usize, batch: usize },
}
