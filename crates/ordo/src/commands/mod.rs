//! One module per `ordo` subcommand.

pub mod bench;
pub mod check;
pub mod figures;
pub mod fvs;
pub mod fvs_bench;
pub mod headline;
pub mod pg;
pub mod recover;
pub mod reorder_args;
pub mod zipf_bench;
