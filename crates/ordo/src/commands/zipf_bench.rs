//! `ordo zipf-bench`: nanoseconds per Zipfian draw, for each sampler the generator can use.

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use ordo_workload::{Zipf, rng_from_seed};

use ordo_harness::output::Table;

use super::bench::values::within;

#[derive(Debug, Args)]
pub struct ZipfBenchArgs {
    /// Key counts, comma separated, each at least 1.
    #[arg(long, value_delimiter = ',', default_value = "100000,10000000")]
    pub keys: Vec<u64>,
    /// Zipf skews, comma separated, each in [0, 1).
    #[arg(long, value_delimiter = ',', default_value = "0,0.5,0.9,0.99")]
    pub theta: Vec<f64>,
    /// Draws per measurement, 1..=10000000000.
    #[arg(long, default_value_t = 20_000_000)]
    pub samples: u64,
    /// Measurements per cell (1..=1000); the median is reported.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

/// Most draws per measurement (tens of seconds each).
const SAMPLES_MAX: u64 = 10_000_000_000;
/// Most cells (key counts x skews) in one command.
const CELLS_MAX: usize = 1_000;

/// Checks every flag before anything is measured.
pub fn validate(args: &ZipfBenchArgs) -> Result<()> {
    within("--samples", [args.samples], 1, SAMPLES_MAX)?;
    within("--runs", [args.runs], 1, super::bench::RUNS_MAX)?;
    let cells = args.keys.len().saturating_mul(args.theta.len());
    within("--keys x --theta cells", [cells], 1, CELLS_MAX)?;
    within("--keys", args.keys.iter().copied(), 1, u64::MAX)?;
    for &theta in &args.theta {
        if !(0.0..1.0).contains(&theta) {
            bail!("--theta {theta}: must be in [0, 1)");
        }
    }
    Ok(())
}

pub fn run(args: &ZipfBenchArgs) -> Result<()> {
    validate(args)?;
    let mut table = Table::new(&["sampler", "keys", "theta", "ns_per_sample"]);
    for &keys in &args.keys {
        for &theta in &args.theta {
            let mut samplers = vec![Zipf::new(keys, theta)?];
            if theta > 0.0 {
                // The other exact samplers beside the default, so the table shows what each
                // choice saves.
                samplers.push(Zipf::with_blocks(keys, theta)?);
                samplers.push(Zipf::with_rejection_inversion(keys, theta)?);
            }
            samplers.dedup_by(|a, b| a.sampler_name() == b.sampler_name());
            for zipf in samplers {
                let mut timings: Vec<f64> = (0..args.runs)
                    .map(|run| {
                        let mut rng = rng_from_seed(run as u64);
                        let start = Instant::now();
                        let mut sum = 0u64;
                        for _ in 0..args.samples {
                            sum = sum.wrapping_add(zipf.sample(&mut rng));
                        }
                        black_box(sum);
                        start.elapsed().as_nanos() as f64 / args.samples as f64
                    })
                    .collect();
                timings.sort_by(f64::total_cmp);
                let label = zipf.sampler_name();
                table.row(vec![
                    label.into(),
                    keys.to_string(),
                    format!("{theta}"),
                    format!("{:.1}", timings[timings.len() / 2]),
                ]);
            }
        }
    }
    print!("{}", table.render());
    Ok(())
}
