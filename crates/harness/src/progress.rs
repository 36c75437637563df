//! Progress bars for long runs, on stderr (hidden when stderr is not a terminal).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `total_s` seconds of a timed run, labelled with `label`; update it with
/// [`ProgressBar::set_position`] in milliseconds and [`ProgressBar::set_message`].
pub fn timed(label: &str, total_s: f64) -> ProgressBar {
    let bar = ProgressBar::new((total_s * 1000.0).round() as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {elapsed_precise} / {duration_precise} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_owned());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// A bar over `total` steps (sweep points, batches).
pub fn steps(label: &str, total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({eta} left)")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_owned());
    bar
}
