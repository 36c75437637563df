//! Turning result records into chart data: one series per configuration, points along an axis.
//! A view reads any kind of record (`R`): the engines' results as the harness writes them, or
//! points computed from them (TPC-C's medians over runs, ratios to a baseline).

use ordo_figures::{LineChart, PercentileChart, PercentileGroup, Point, Series};
use ordo_harness::RunResult;
use ordo_pipeline::Mode;

/// How to read a chart out of a set of records (`R`: e.g. the results of one engine,
/// `RunResult<C>`).
pub struct View<'a, R> {
    pub results: &'a [R],
    /// The series (legend entry) a record belongs to.
    pub series: &'a dyn Fn(&R) -> String,
    /// Its position on the x axis.
    pub x: &'a dyn Fn(&R) -> f64,
}

/// A measurement drawn on the y axis, with its standard deviation over runs if known.
pub struct Measure<R> {
    pub label: &'static str,
    pub value: fn(&R) -> f64,
    pub std: Option<fn(&R) -> f64>,
}

pub fn throughput<C>() -> Measure<RunResult<C>> {
    Measure {
        label: "Throughput (committed transactions/s)",
        value: |r| r.throughput_tps,
        std: Some(|r| r.std.map_or(0.0, |s| s.throughput_tps)),
    }
}

pub fn latency_mean<C>() -> Measure<RunResult<C>> {
    Measure {
        label: "Average latency (µs)",
        value: |r| r.latency_us.mean,
        std: Some(|r| r.std.map_or(0.0, |s| s.latency_us_mean)),
    }
}

pub fn latency_p99<C>() -> Measure<RunResult<C>> {
    Measure {
        label: "99th percentile latency (µs)",
        value: |r| r.latency_us.p99,
        std: Some(|r| r.std.map_or(0.0, |s| s.latency_us_p99)),
    }
}

pub fn abort_rate<C>() -> Measure<RunResult<C>> {
    Measure {
        label: "Abort rate (% of attempts)",
        value: |r| 100.0 * r.abort_rate,
        std: Some(|r| 100.0 * r.std.map_or(0.0, |s| s.abort_rate)),
    }
}

pub fn latency_max<C>() -> Measure<RunResult<C>> {
    Measure { label: "Maximum latency (µs)", value: |r| r.latency_us.max, std: None }
}

impl<R> View<'_, R> {
    /// Series in order of first appearance, points sorted by x.
    pub fn line(&self, title: &str, x_label: &str, measure: &Measure<R>) -> LineChart {
        let mut series: Vec<Series> = Vec::new();
        for result in self.results {
            let name = (self.series)(result);
            let point = Point {
                x: (self.x)(result),
                y: (measure.value)(result),
                error: measure.std.map(|std| std(result)).filter(|&e| e > 0.0),
            };
            match series.iter_mut().find(|s| s.name == name) {
                Some(existing) => existing.points.push(point),
                None => series.push(Series { name, points: vec![point] }),
            }
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.x.total_cmp(&b.x));
        }
        LineChart { title: title.into(), x_label: x_label.into(), y_label: measure.label.into(), series, log_y: None }
    }
}

impl<C> View<'_, RunResult<C>> {
    /// One group per x value (labelled by `group_label`), one bar per series: 90th, 99th,
    /// 99.9th, 99.99th percentile and maximum latency, as the paper draws them.
    pub fn percentiles(&self, title: &str, group_label: &dyn Fn(f64) -> String) -> PercentileChart {
        let mut xs: Vec<f64> = self.results.iter().map(|r| (self.x)(r)).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let groups = xs
            .iter()
            .map(|&x| PercentileGroup {
                label: group_label(x),
                bars: self
                    .results
                    .iter()
                    .filter(|r| (self.x)(r) == x)
                    .map(|r| {
                        let l = &r.latency_us;
                        ((self.series)(r), vec![l.p90, l.p99, l.p999, l.p9999, l.max])
                    })
                    .collect(),
            })
            .collect();
        PercentileChart {
            title: title.into(),
            y_label: "Latency (µs)".into(),
            levels: ["90th", "99th", "99.9th", "99.99th", "max"].map(String::from).to_vec(),
            groups,
        }
    }
}

/// The paper's modes with the full names its reviewers asked for.
pub fn mode_name(mode: Mode) -> String {
    match mode {
        Mode::Base => "base: no batching".into(),
        Mode::Batch => "batch: batching, no reordering".into(),
        Mode::Sr => "sr: storage batching + reordering".into(),
        Mode::Vc => "vc: validator batching + reordering".into(),
        Mode::Srvc => "srvc: storage + validator reordering".into(),
    }
}
