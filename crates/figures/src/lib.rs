//! # ordo-figures: charts and reports
//!
//! Turns measured data into the paper's kinds of figures and a report that sets each figure
//! beside the paper's claim. Data in, files out: running the experiments is the `ordo figures`
//! command's business, so everything here is testable with small fixed data.
//!
//! * [`chart`]: line charts (throughput, latency, abort rate against θ, threads, connections;
//!   optional log scale and error bars) and percentile-latency bar charts drawn as the paper
//!   draws them (one stacked bar per configuration: 90th, 99th, 99.9th, 99.99th percentile and
//!   maximum), as SVG and PNG. Text uses DejaVu Sans embedded in the binary, so charts render on
//!   a machine with no fonts installed.
//! * [`report`]: the Markdown report: per experiment, its charts, the paper's claim and what
//!   ordo measured, computed from the data files next to it.

pub mod chart;
pub mod report;

pub use chart::{LineChart, PercentileChart, PercentileGroup, Point, Series, render_line, render_percentiles};
pub use report::{Claim, ExperimentReport, Reference, Report};
