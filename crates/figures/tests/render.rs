//! Every chart type renders from small fixed data into valid SVG and PNG with the expected
//! series.

use ordo_figures::{LineChart, PercentileChart, PercentileGroup, Point, Series, render_line, render_percentiles};

fn series(name: &str, ys: &[f64], error: Option<f64>) -> Series {
    Series {
        name: name.into(),
        points: ys.iter().enumerate().map(|(i, &y)| Point { x: 0.5 + 0.1 * i as f64, y, error }).collect(),
    }
}

fn assert_png(path: &std::path::Path) {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.len() > 1000, "{} is suspiciously small", path.display());
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n".as_slice(), "{} is not a PNG", path.display());
}

#[test]
fn line_charts_render_with_legends_and_units() {
    let dir = tempfile::tempdir().unwrap();
    let chart = LineChart {
        title: "Throughput under Zipfian skew".into(),
        x_label: "Zipf θ".into(),
        y_label: "Throughput (commits/s)".into(),
        series: vec![
            series("base", &[800_000.0, 500_000.0, 300_000.0], Some(20_000.0)),
            series("batch and reorder at storage and validator", &[900_000.0, 700_000.0, 500_000.0], None),
        ],
        log_y: None,
    };
    let (svg, png) = render_line(&chart, &dir.path().join("tps")).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "not an SVG");
    assert!(text.trim_end().ends_with("</svg>"));
    for expected in [
        "Throughput under Zipfian skew",
        "Zipf θ",
        "Throughput (commits/s)",
        "base",
        "batch and reorder at storage and validator",
    ] {
        assert!(text.contains(expected), "SVG lacks {expected:?}");
    }
    assert_png(&png);
}

#[test]
fn wide_ranges_switch_to_a_log_scale() {
    let dir = tempfile::tempdir().unwrap();
    let chart = LineChart {
        title: "Time per batch".into(),
        x_label: "Zipf θ".into(),
        y_label: "Time (µs)".into(),
        series: vec![series("search", &[1.0, 10.0, 1000.0], None), series("greedy_sort", &[0.5, 0.7, 1.2], None)],
        log_y: None,
    };
    let (svg, png) = render_line(&chart, &dir.path().join("time")).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    // Decade labels appear on a log axis.
    let labels: Vec<&str> = text.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect();
    for decade in ["1", "10", "100", "1000"] {
        assert!(labels.contains(&decade), "no label {decade} on the log axis: {labels:?}");
    }

    assert_png(&png);
}

#[test]
fn percentile_charts_stack_levels_per_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let chart = PercentileChart {
        title: "Percentile latency".into(),
        y_label: "Latency (µs)".into(),
        levels: vec!["90th".into(), "99th".into(), "99.9th".into(), "99.99th".into(), "max".into()],
        groups: vec![
            PercentileGroup {
                label: "θ=0.7".into(),
                bars: vec![
                    ("base".into(), vec![100.0, 400.0, 900.0, 4000.0, 90_000.0]),
                    ("rdeg".into(), vec![90.0, 300.0, 600.0, 1000.0, 5_000.0]),
                ],
            },
            PercentileGroup {
                label: "θ=0.8".into(),
                bars: vec![("base".into(), vec![200.0, 800.0, 2000.0, 9000.0, 200_000.0])],
            },
        ],
    };
    let (svg, png) = render_percentiles(&chart, &dir.path().join("pct")).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    for expected in ["Percentile latency", "θ=0.7", "θ=0.8", "rdeg", "99.99th", "max"] {
        assert!(text.contains(expected), "SVG lacks {expected:?}");
    }
    assert!(text.matches("<rect").count() >= 15, "one rectangle per level and bar");
    assert_png(&png);
}

#[test]
fn empty_charts_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let chart =
        LineChart { title: "Nothing".into(), x_label: "x".into(), y_label: "y".into(), series: vec![], log_y: None };
    assert!(render_line(&chart, &dir.path().join("none")).is_err());
}
