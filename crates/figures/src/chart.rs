//! Line and percentile charts with plotters, to SVG and PNG.
//!
//! ```text
//!  LineChart { series: [name, (x, y, ±std)] } ──render_line──> <stem>.svg, <stem>.png
//!  PercentileChart { groups: [θ: [(series, [p90, p99, ...])]] } ──render_percentiles──> ...
//! ```
//!
//! Axis titles carry units, legends carry full names, and a y axis whose data spans more than
//! two decades switches to a log scale by itself.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, register_font};
use thiserror::Error;

/// DejaVu Sans (license in `fonts/LICENSE-DejaVu.txt`).
const FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
const WIDTH: u32 = 900;
const HEIGHT: u32 = 560;
/// Data spanning more than this ratio (max / min positive) is drawn on a log scale.
const LOG_SCALE_SPAN_MIN: f64 = 100.0;

#[derive(Debug, Error)]
pub enum ChartError {
    #[error("chart `{title}` has no data")]
    Empty { title: String },
    #[error("drawing `{path}`: {reason}")]
    Draw { path: PathBuf, reason: String },
}

/// One point of a series; `error` is a standard deviation drawn as an error bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub error: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// `None`: log scale when the data spans more than two decades.
    pub log_y: Option<bool>,
}

/// Latency percentiles of several configurations at several points (e.g. θ values).
#[derive(Debug, Clone, PartialEq)]
pub struct PercentileChart {
    pub title: String,
    pub y_label: String,
    /// Names of the stacked levels, lowest first (e.g. `90`, `99`, `99.9`, `99.99`, `max`).
    pub levels: Vec<String>,
    pub groups: Vec<PercentileGroup>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PercentileGroup {
    /// Shown under the group (e.g. `θ=0.8`).
    pub label: String,
    /// One bar per configuration: its name and one value per level (non-decreasing).
    pub bars: Vec<(String, Vec<f64>)>,
}

fn register_embedded_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is compiled in and known to parse; if registration ever failed, text would
        // be missing from charts, which the render tests would catch.
        let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// The colors of series and levels: distinguishable, print-safe.
const COLORS: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

fn draw_error(path: &Path, error: impl std::fmt::Display) -> ChartError {
    ChartError::Draw { path: path.to_owned(), reason: error.to_string() }
}

/// Renders `chart` to `<stem>.svg` and `<stem>.png`; returns both paths.
pub fn render_line(chart: &LineChart, stem: &Path) -> Result<(PathBuf, PathBuf), ChartError> {
    register_embedded_font();
    let points: Vec<&Point> = chart.series.iter().flat_map(|s| &s.points).collect();
    if points.is_empty() {
        return Err(ChartError::Empty { title: chart.title.clone() });
    }
    let svg = stem.with_extension("svg");
    let png = stem.with_extension("png");
    draw_line(chart, &SVGBackend::new(&svg, (WIDTH, HEIGHT)).into_drawing_area()).map_err(|e| draw_error(&svg, e))?;
    draw_line(chart, &BitMapBackend::new(&png, (WIDTH, HEIGHT)).into_drawing_area())
        .map_err(|e| draw_error(&png, e))?;
    Ok((svg, png))
}

fn y_bounds(values: impl Iterator<Item = f64>) -> (f64, f64, f64) {
    let (mut low, mut high, mut positive_low) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        low = low.min(v);
        high = high.max(v);
        if v > 0.0 {
            positive_low = positive_low.min(v);
        }
    }
    (low, high, positive_low)
}

fn draw_line<DB: DrawingBackend>(chart: &LineChart, root: &DrawingArea<DB, Shift>) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let points: Vec<&Point> = chart.series.iter().flat_map(|s| &s.points).collect();
    let x_low = points.iter().map(|p| p.x).fold(f64::INFINITY, f64::min);
    let x_high = points.iter().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max);
    let x_pad = ((x_high - x_low) * 0.05).max(1e-9);
    let (y_low, y_high, y_positive_low) =
        y_bounds(points.iter().flat_map(|p| [p.y - p.error.unwrap_or(0.0), p.y + p.error.unwrap_or(0.0), p.y]));
    let log_y = chart.log_y.unwrap_or(y_positive_low.is_finite() && y_high / y_positive_low > LOG_SCALE_SPAN_MIN);
    let (low, high) = if log_y {
        (y_positive_low / 1.5, y_high * 1.5)
    } else {
        (if y_low >= 0.0 { 0.0 } else { y_low * 1.1 }, if y_high > 0.0 { y_high * 1.1 } else { 1.0 })
    };
    // The legend goes where the curves are not: top right when they mostly fall, top left
    // when they mostly rise.
    let falling = chart
        .series
        .iter()
        .filter(|s| s.points.len() > 1)
        .map(|s| if s.points[s.points.len() - 1].y < s.points[0].y { 1i32 } else { -1 })
        .sum::<i32>()
        > 0;
    let legend = if falling { SeriesLabelPosition::UpperRight } else { SeriesLabelPosition::UpperLeft };
    let mut builder = ChartBuilder::on(root);
    builder.caption(&chart.title, ("sans-serif", 22)).margin(16).x_label_area_size(48).y_label_area_size(80);
    let x_range = (x_low - x_pad)..(x_high + x_pad);
    // The same drawing on a linear or a logarithmic y axis (different coordinate types).
    macro_rules! lines {
        ($ctx:expr) => {{
            let mut ctx = $ctx;
            ctx.configure_mesh()
                .x_desc(&chart.x_label)
                .y_desc(&chart.y_label)
                .axis_desc_style(("sans-serif", 16))
                .label_style(("sans-serif", 13))
                .y_label_formatter(&|v| format_number(*v))
                .draw()
                .map_err(|e| e.to_string())?;
            for (i, series) in chart.series.iter().enumerate() {
                let data: Vec<(f64, f64)> =
                    series.points.iter().filter(|p| !log_y || p.y > 0.0).map(|p| (p.x, p.y)).collect();
                ctx.draw_series(LineSeries::new(data.clone(), color(i).stroke_width(2)))
                    .map_err(|e| e.to_string())?
                    .label(&series.name)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color(i).stroke_width(3)));
                // Past the palette's ten colors, the marker tells series apart.
                match i / COLORS.len() {
                    0 => ctx.draw_series(data.iter().map(|&(x, y)| Circle::new((x, y), 4, color(i).filled()))),
                    1 => ctx.draw_series(data.iter().map(|&(x, y)| TriangleMarker::new((x, y), 6, color(i).filled()))),
                    _ => ctx.draw_series(data.iter().map(|&(x, y)| Cross::new((x, y), 5, color(i).stroke_width(2)))),
                }
                .map_err(|e| e.to_string())?;
                ctx.draw_series(
                    series.points.iter().filter(|p| p.error.is_some_and(|e| e > 0.0) && (!log_y || p.y > 0.0)).map(
                        |p| {
                            let e = p.error.unwrap_or(0.0);
                            ErrorBar::new_vertical(p.x, (p.y - e).max(low), p.y, p.y + e, color(i).stroke_width(1), 8)
                        },
                    ),
                )
                .map_err(|e| e.to_string())?;
            }
            ctx.configure_series_labels()
                .label_font(("sans-serif", 14))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(legend)
                .draw()
                .map_err(|e| e.to_string())?;
        }};
    }
    if log_y {
        lines!(builder.build_cartesian_2d(x_range, (low..high).log_scale()).map_err(|e| e.to_string())?);
    } else {
        lines!(builder.build_cartesian_2d(x_range, low..high).map_err(|e| e.to_string())?);
    }
    root.present().map_err(|e| e.to_string())
}

/// Short numbers for axis labels: 1200000 -> 1.2M, 25000 -> 25K, 0.005 -> 0.005.
pub fn format_number(value: f64) -> String {
    let magnitude = value.abs();
    let (scaled, suffix) = if magnitude >= 1e9 {
        (value / 1e9, "G")
    } else if magnitude >= 1e6 {
        (value / 1e6, "M")
    } else if magnitude >= 1e4 {
        (value / 1e3, "K")
    } else {
        (value, "")
    };
    let digits = if scaled.abs() >= 100.0 || scaled.fract() == 0.0 {
        0
    } else if scaled.abs() >= 1.0 {
        1
    } else {
        3
    };
    let mut text = format!("{scaled:.digits$}");
    if text.contains('.') {
        let trimmed = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(trimmed);
    }
    text + suffix
}

/// The short form of a series name for a bar label: what precedes `: `, if anything does.
fn short_name(name: &str) -> &str {
    name.split_once(": ").map_or(name, |(short, _)| short)
}

/// Renders a percentile chart to `<stem>.svg` and `<stem>.png`.
pub fn render_percentiles(chart: &PercentileChart, stem: &Path) -> Result<(PathBuf, PathBuf), ChartError> {
    register_embedded_font();
    if chart.groups.iter().all(|g| g.bars.is_empty()) {
        return Err(ChartError::Empty { title: chart.title.clone() });
    }
    let svg = stem.with_extension("svg");
    let png = stem.with_extension("png");
    draw_percentiles(chart, &SVGBackend::new(&svg, (WIDTH, HEIGHT)).into_drawing_area())
        .map_err(|e| draw_error(&svg, e))?;
    draw_percentiles(chart, &BitMapBackend::new(&png, (WIDTH, HEIGHT)).into_drawing_area())
        .map_err(|e| draw_error(&png, e))?;
    Ok((svg, png))
}

fn draw_percentiles<DB: DrawingBackend>(chart: &PercentileChart, root: &DrawingArea<DB, Shift>) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    // Bars of a group side by side, one empty slot between groups.
    let mut slots: Vec<(f64, &str, &[f64])> = Vec::new();
    let mut group_centers: Vec<(f64, &str)> = Vec::new();
    let mut x = 0.0;
    for group in &chart.groups {
        let first = x;
        for (name, values) in &group.bars {
            slots.push((x, name.as_str(), values.as_slice()));
            x += 1.0;
        }
        group_centers.push((f64::midpoint(first, x - 1.0), group.label.as_str()));
        x += 1.0;
    }
    let (_, y_high, y_positive_low) = y_bounds(slots.iter().flat_map(|(_, _, v)| v.iter().copied()));
    let log_y = y_positive_low.is_finite() && y_high / y_positive_low > LOG_SCALE_SPAN_MIN;
    let (low, high) = if log_y { (y_positive_low / 1.5, y_high * 1.5) } else { (0.0, y_high.max(1e-9) * 1.1) };
    let mut builder = ChartBuilder::on(root);
    builder.caption(&chart.title, ("sans-serif", 22)).margin(16).x_label_area_size(60).y_label_area_size(80);
    let x_range = -0.75..(x - 0.25);
    macro_rules! bars {
        ($ctx:expr) => {{
            let mut ctx = $ctx;
            ctx.configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .y_desc(&chart.y_label)
                .axis_desc_style(("sans-serif", 16))
                .label_style(("sans-serif", 13))
                .y_label_formatter(&|v| format_number(*v))
                .draw()
                .map_err(|e| e.to_string())?;
            for (level, name) in chart.levels.iter().enumerate() {
                let style = color(level).filled();
                ctx.draw_series(slots.iter().filter_map(|&(x, _, values)| {
                    let top = *values.get(level)?;
                    let bottom = if level == 0 { low } else { values.get(level - 1).copied().unwrap_or(low).max(low) };
                    (top > bottom).then(|| Rectangle::new([(x - 0.4, bottom), (x + 0.4, top)], style))
                }))
                .map_err(|e| e.to_string())?
                .label(name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], color(level).filled()));
            }
            ctx.configure_series_labels()
                .label_font(("sans-serif", 14))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(|e| e.to_string())?;
            // Bar names under the bars (their short form: the part before a colon), group
            // names under those.
            for &(position, name, _) in &slots {
                let (px, py) = ctx.backend_coord(&(position, low));
                let style = ("sans-serif", 11).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
                root.draw(&Text::new(short_name(name).to_owned(), (px, py + 6), style)).map_err(|e| e.to_string())?;
            }
            for &(center, label) in &group_centers {
                let (px, py) = ctx.backend_coord(&(center, low));
                let style = ("sans-serif", 15).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
                root.draw(&Text::new(label.to_owned(), (px, py + 26), style)).map_err(|e| e.to_string())?;
            }
        }};
    }
    if log_y {
        bars!(builder.build_cartesian_2d(x_range, (low..high).log_scale()).map_err(|e| e.to_string())?);
    } else {
        bars!(builder.build_cartesian_2d(x_range, low..high).map_err(|e| e.to_string())?);
    }
    root.present().map_err(|e| e.to_string())
}
