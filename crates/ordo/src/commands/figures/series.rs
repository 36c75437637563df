//! Turning result records into chart data: one series per configuration, points along an axis.

use ordo_figures::{LineChart, PercentileChart, PercentileGroup, Point, Series};
use ordo_harness::RunResult;

/// How to read a chart out of a set of results.
pub struct View<'a> {
    pub results: &'a [RunResult],
    /// The series (legend entry) a result belongs to.
    pub series: &'a dyn Fn(&RunResult) -> String,
    /// Its position on the x axis.
    pub x: &'a dyn Fn(&RunResult) -> f64,
}

/// A measurement drawn on the y axis, with its standard deviation over runs if known.
pub struct Measure {
    pub label: &'static str,
    pub value: fn(&RunResult) -> f64,
    pub std: Option<fn(&RunResult) -> f64>,
}

pub const THROUGHPUT: Measure = Measure {
    label: "Throughput (committed transactions/s)",
    value: |r| r.throughput_tps,
    std: Some(|r| r.std.map_or(0.0, |s| s.throughput_tps)),
};
pub const LATENCY_MEAN: Measure = Measure {
    label: "Average latency (µs)",
    value: |r| r.latency_us.mean,
    std: Some(|r| r.std.map_or(0.0, |s| s.latency_us_mean)),
};
pub const LATENCY_P99: Measure = Measure {
    label: "99th percentile latency (µs)",
    value: |r| r.latency_us.p99,
    std: Some(|r| r.std.map_or(0.0, |s| s.latency_us_p99)),
};
pub const ABORT_RATE: Measure = Measure {
    label: "Abort rate (% of attempts)",
    value: |r| 100.0 * r.abort_rate,
    std: Some(|r| 100.0 * r.std.map_or(0.0, |s| s.abort_rate)),
};

impl View<'_> {
    /// Series in order of first appearance, points sorted by x.
    pub fn line(&self, title: &str, x_label: &str, measure: &Measure) -> LineChart {
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
pub fn mode_name(mode: &str) -> String {
    match mode {
        "base" => "base: no batching".into(),
        "batch" => "batch: batching, no reordering".into(),
        "sr" => "sr: storage batching + reordering".into(),
        "vc" => "vc: validator batching + reordering".into(),
        "srvc" => "srvc: storage + validator reordering".into(),
        other => other.into(),
    }
}

/// A string knob of a result's configuration.
pub fn knob(result: &RunResult, name: &str) -> String {
    result.info.config.get(name).map_or_else(String::new, |v| v.to_string().trim_matches('"').to_owned())
}
