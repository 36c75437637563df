//! Zipfian key choice: rank `i` (0-based) of `n` is drawn with probability
//! `(i + 1)^-θ / ζ(n, θ)`, where `ζ(n, θ) = Σ_{j=1..n} j^-θ`, for `θ` in `[0, 1)`.
//!
//! This is the distribution of Gray et al. ("Quickly generating billion-record synthetic
//! databases", SIGMOD 1994) that YCSB and the paper use, but sampled *exactly*: the classic
//! closed-form generator is exact only for the two most popular ranks and approximates the
//! rest with an integral. ordo draws from the true probabilities in one of two ways:
//!
//! * **alias table** (Walker/Vose) for up to [`ALIAS_KEYS_MAX`] keys: one 64-bit random
//!   number, one multiply, one table entry (8 bytes per key);
//! * **block rejection** above that: the ranks are cut into a few hundred blocks whose widths
//!   grow with their first rank (1/32 of it); an alias table over the blocks, weighted by each
//!   block's envelope (its size times its first rank's probability), picks a block, a uniform
//!   draw picks a rank in it, and the rank is accepted with probability (first / rank)^θ,
//!   else the draw starts over. Every rank then comes out with probability proportional to
//!   `rank^-θ`, exactly; acceptance is above 97%, a linear squeeze decides it without
//!   `powf` for all but 0.03% of draws, and both tables fit in L1 (see `BlockRejection`). At θ = 0.99 over
//!   10M keys a draw takes about a third of the time of the previous method, rejection-inversion
//!   with an alias-table head (kept, with the plain rejection-inversion of Hörmann and Derflinger
//!   1996, as [`Zipf::with_head`] and [`Zipf::with_rejection_inversion`], for comparison and as
//!   independent samplers in the tests).
//!
//! `θ = 0` is the uniform distribution and takes a shortcut. Rank 0 is the most popular; a
//! workload maps ranks to keys (identity, or scrambled by a hash as YCSB optionally does).

use rand::Rng;

use crate::error::WorkloadError;

/// Largest key count served by an alias table (8 MiB at this size); above it, block
/// rejection.
pub const ALIAS_KEYS_MAX: u64 = 1 << 20;
/// Ranks in the alias-table head of rejection-inversion (512 KiB of table: it stays in cache),
/// the default above [`ALIAS_KEYS_MAX`] keys before block rejection; for comparisons.
pub const HEAD_RANKS: u64 = 1 << 16;

/// A Zipfian distribution over ranks `0..n`.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: u64,
    theta: f64,
    zeta_n: f64,
    sampler: Sampler,
}

#[derive(Debug, Clone)]
enum Sampler {
    Uniform,
    /// Per rank: `[threshold, alias]`; draw rank `i` uniformly, keep it if a uniform 32-bit
    /// fraction is below `threshold`, else take `alias`.
    Alias(Vec<[u32; 2]>),
    RejectionInversion(RejectionInversion),
    BlockRejection(BlockRejection),
}

/// Which sampler [`Zipf::build`] makes for `θ > 0`.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Alias,
    BlockRejection,
    RejectionInversion { head_ranks: Option<u64> },
}

impl Zipf {
    /// Zipf over `n >= 1` ranks with skew `theta` in `[0, 1)`, choosing the sampler by size:
    /// an alias table up to [`ALIAS_KEYS_MAX`] keys, block rejection above.
    pub fn new(n: u64, theta: f64) -> Result<Self, WorkloadError> {
        Self::build(n, theta, if n <= ALIAS_KEYS_MAX { Kind::Alias } else { Kind::BlockRejection })
    }

    /// Same, always with rejection-inversion (for tests and comparisons: it needs no table).
    pub fn with_rejection_inversion(n: u64, theta: f64) -> Result<Self, WorkloadError> {
        Self::build(n, theta, Kind::RejectionInversion { head_ranks: None })
    }

    /// Rejection-inversion with its first `head_ranks` ranks served by an alias table (what
    /// [`Zipf::new`] used above [`ALIAS_KEYS_MAX`] keys with [`HEAD_RANKS`] before block
    /// rejection); for tests and comparisons.
    pub fn with_head(n: u64, theta: f64, head_ranks: u64) -> Result<Self, WorkloadError> {
        Self::build(n, theta, Kind::RejectionInversion { head_ranks: Some(head_ranks) })
    }

    /// Always block rejection (an alias table over blocks of ranks, uniform within a block,
    /// then an acceptance test; see the module's essay): what [`Zipf::new`] uses above
    /// [`ALIAS_KEYS_MAX`] keys; for tests and comparisons at any size.
    pub fn with_blocks(n: u64, theta: f64) -> Result<Self, WorkloadError> {
        Self::build(n, theta, Kind::BlockRejection)
    }

    /// Which sampler draws: `uniform`, `alias`, `alias-blocks`, `rejection-inversion` or
    /// `alias-head+rejection-inversion`.
    pub fn sampler_name(&self) -> &'static str {
        match &self.sampler {
            Sampler::Uniform => "uniform",
            Sampler::Alias(_) => "alias",
            Sampler::BlockRejection(_) => "alias-blocks",
            Sampler::RejectionInversion(RejectionInversion { head: None, .. }) => "rejection-inversion",
            Sampler::RejectionInversion(_) => "alias-head+rejection-inversion",
        }
    }

    fn build(n: u64, theta: f64, kind: Kind) -> Result<Self, WorkloadError> {
        if n == 0 {
            return Err(WorkloadError::invalid("keys", "must be at least 1"));
        }
        if !(0.0..1.0).contains(&theta) {
            return Err(WorkloadError::invalid("theta", format!("{theta} is outside [0, 1)")));
        }
        // Only `probability` needs ζ(n); no sampler but the alias table does.
        let zeta_n = if n <= ALIAS_KEYS_MAX { zeta(n, theta) } else { zeta_approx(n, theta) };
        let sampler = match kind {
            _ if theta == 0.0 => Sampler::Uniform,
            Kind::Alias => Sampler::Alias(alias_table(n, theta, zeta_n)),
            Kind::BlockRejection => Sampler::BlockRejection(BlockRejection::new(n, theta)),
            Kind::RejectionInversion { head_ranks } => {
                Sampler::RejectionInversion(RejectionInversion::new(n, theta, head_ranks))
            }
        };
        Ok(Zipf { n, theta, zeta_n, sampler })
    }

    pub fn keys(&self) -> u64 {
        self.n
    }

    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// The analytic probability of `rank`.
    pub fn probability(&self, rank: u64) -> f64 {
        if rank >= self.n {
            return 0.0;
        }
        ((rank + 1) as f64).powf(-self.theta) / self.zeta_n
    }

    /// Draws a rank in `0..n`; 0 is the most popular.
    #[inline]
    pub fn sample(&self, rng: &mut impl Rng) -> u64 {
        match &self.sampler {
            Sampler::Uniform => rng.random_range(0..self.n),
            Sampler::Alias(table) => alias_draw(table, rng),
            Sampler::RejectionInversion(sampler) => sampler.sample(rng),
            Sampler::BlockRejection(sampler) => sampler.sample(rng),
        }
    }

    /// Fills `ranks` with independent draws, each distributed as one [`Zipf::sample`] (and the
    /// same draws, in order, for the same generator state): one dispatch for the batch, and
    /// the generator's state stays in registers between draws.
    pub fn sample_into(&self, rng: &mut impl Rng, ranks: &mut [u64]) {
        match &self.sampler {
            Sampler::Uniform => ranks.iter_mut().for_each(|rank| *rank = rng.random_range(0..self.n)),
            Sampler::Alias(table) => ranks.iter_mut().for_each(|rank| *rank = alias_draw(table, rng)),
            Sampler::RejectionInversion(sampler) => ranks.iter_mut().for_each(|rank| *rank = sampler.sample(rng)),
            Sampler::BlockRejection(sampler) => ranks.iter_mut().for_each(|rank| *rank = sampler.sample(rng)),
        }
    }
}

/// One draw from an alias table over `table.len()` ranks.
#[inline]
fn alias_draw(table: &[[u32; 2]], rng: &mut impl Rng) -> u64 {
    let product = u128::from(rng.next_u64()) * table.len() as u128;
    let rank = (product >> 64) as usize;
    // The low half of the product is a uniform fraction independent of `rank`.
    let fraction = ((product as u64) >> 32) as u32;
    let [threshold, alias] = table[rank];
    if fraction < threshold { rank as u64 } else { u64::from(alias) }
}

/// `ζ(n, θ) = Σ_{j=1..n} j^-θ`, summed smallest terms first for accuracy.
fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).rev().map(|j| (j as f64).powf(-theta)).sum()
}

/// `ζ(n, θ)` for very large `n`: exact head plus Euler–Maclaurin for the tail.
fn zeta_approx(n: u64, theta: f64) -> f64 {
    let head = ALIAS_KEYS_MAX.min(n);
    let mut sum = zeta(head, theta);
    if n > head {
        let f = |x: f64| x.powf(-theta);
        let integral = |a: f64, b: f64| (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
        let (a, b) = ((head + 1) as f64, n as f64);
        // Σ_{j=a..b} f(j) ≈ ∫ f + (f(a) + f(b)) / 2 + (f'(b) - f'(a)) / 12
        let derivative = |x: f64| -theta * x.powf(-theta - 1.0);
        sum += integral(a, b) + f64::midpoint(f(a), f(b)) + (derivative(b) - derivative(a)) / 12.0;
    }
    sum
}

/// Vose's alias method with 32-bit thresholds.
fn alias_table(n: u64, theta: f64, zeta_n: f64) -> Vec<[u32; 2]> {
    // Scaled probabilities: mean 1.
    let scaled: Vec<f64> = (0..n).map(|i| ((i + 1) as f64).powf(-theta) / zeta_n * n as f64).collect();
    vose(scaled).into_iter().map(|(keep, alias)| [threshold(keep), alias]).collect()
}

/// Vose's construction over `scaled` probabilities (mean 1): per slot, the probability of
/// keeping the slot and the slot to take otherwise.
fn vose(mut scaled: Vec<f64>) -> Vec<(f64, u32)> {
    let mut table = vec![(1.0, 0u32); scaled.len()];
    let mut small = Vec::new();
    let mut large = Vec::new();
    for (i, &p) in scaled.iter().enumerate() {
        if p < 1.0 { small.push(i) } else { large.push(i) }
    }
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        table[s] = (scaled[s], l as u32);
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    // Whatever is left has probability 1 up to rounding: always keep it.
    for i in small.into_iter().chain(large) {
        table[i] = (1.0, i as u32);
    }
    table
}

fn threshold(p: f64) -> u32 {
    (p * 4_294_967_296.0).round().clamp(0.0, f64::from(u32::MAX)) as u32
}

/// `2^64` as a float.
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

/// A probability as a 64-bit fraction: a uniform `u64` is below it with that probability (up
/// to `2^-64`); 1 and above map to `u64::MAX`.
fn threshold_64(p: f64) -> u64 {
    if p >= 1.0 { u64::MAX } else { (p.max(0.0) * TWO_POW_64) as u64 }
}

/// A block's last rank is at most `first + first / 2^BLOCK_WIDTH_SHIFT`, so within a block the
/// probability falls by at most a factor `(1 + 2^-5)^-θ`: at θ < 1 every draw from a block is
/// accepted with probability above 0.969, and ranks below 32 are blocks of their own.
const BLOCK_WIDTH_SHIFT: u32 = 5;

/// Block rejection for `P(k) ∝ k^-θ` on `k = 1..=n` (returned 0-based).
///
/// The ranks are cut into blocks `[a, b]` with `b <= a + a / 32` (a few hundred blocks for any
/// `n` up to 10^8). A draw picks block `[a, b]` from an alias table with the block's *envelope*
/// weight `(b - a + 1) · a^-θ` (each rank of the block counted at the block's highest
/// probability), picks a rank `k` uniformly in the block, and accepts it with probability
/// `(a / k)^θ`; a rejected draw starts over. One round yields rank `k` with probability
/// `a^-θ · (a / k)^θ / W = k^-θ / W` (`W` the envelope total), the same constant for every
/// rank, so accepted ranks follow the Zipf probabilities exactly: no `ζ(n)`, no integral, no
/// approximation enters. The acceptance test needs a `powf` only when the uniform `u` lies
/// between the tangent `1 - θ (k - a) / a` and `(a / k)^θ` (convexity puts the tangent below;
/// in 64-bit integers, `u64::MAX - slope · (k - a)` with the block's `slope` rounded up), a
/// gap of second order, `θ (θ + 1) x² / 2` at `x = (k - a) / a <= 1/32`: about 0.03% of
/// draws. Single-rank blocks always accept.
///
/// ```text
///   k^-θ  |‾‾|__                     envelope: one level per block
///         |  |‾‾|__|‾‾‾|___          pmf under it; the sliver between them is rejected
///         +----------------------- k
///          1  2  3 .. 32 33-34 ...   blocks (widths grow by 1/32 of their first rank)
/// ```
///
/// A draw costs two 64-bit random numbers, three multiplications and two loads from tables
/// that fit in L1 (about 500 blocks at 10^7 ranks), and almost never a transcendental
/// function. The only departures from the exact probabilities are the rounding of
/// `f64` arithmetic and the 64-bit resolution of the alias thresholds and uniforms.
#[derive(Debug, Clone)]
struct BlockRejection {
    theta: f64,
    /// Per slot of the alias table: keep the slot's block if a 64-bit uniform fraction is
    /// below the threshold, else take the alias block.
    alias: Vec<AliasSlot>,
    blocks: Vec<Block>,
}

#[derive(Debug, Clone, Copy)]
struct AliasSlot {
    threshold: u64,
    alias: u32,
}

/// Ranks `first..first + size` (1-based) and the block's squeeze: a 64-bit uniform below
/// `u64::MAX - slope · (k - first)` accepts rank `k` at once (that is below
/// `(first / k)^θ · 2^64`).
#[derive(Debug, Clone, Copy)]
struct Block {
    first: u64,
    size: u64,
    slope: u64,
}

impl BlockRejection {
    fn new(n: u64, theta: f64) -> Self {
        let mut blocks = Vec::new();
        let mut weights = Vec::new();
        let mut first = 1u64;
        while first <= n {
            let last = (first + (first >> BLOCK_WIDTH_SHIFT)).min(n);
            let size = last - first + 1;
            // θ / first in 64-bit fixed point, rounded up with a margin for the float's own
            // rounding (a steeper tangent only sends a few more draws to the exact test).
            let slope = (theta / first as f64 * TWO_POW_64 * (1.0 + 1e-12)).ceil() as u64;
            blocks.push(Block { first, size, slope });
            weights.push(size as f64 * (first as f64).powf(-theta));
            first = last + 1;
        }
        let total: f64 = weights.iter().sum();
        let scaled = weights.iter().map(|weight| weight / total * blocks.len() as f64).collect();
        let alias =
            vose(scaled).into_iter().map(|(keep, alias)| AliasSlot { threshold: threshold_64(keep), alias }).collect();
        BlockRejection { theta, alias, blocks }
    }

    // Always inlined, so a batch keeps the generator in registers.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn sample(&self, rng: &mut impl Rng) -> u64 {
        loop {
            let product = u128::from(rng.next_u64()) * self.alias.len() as u128;
            let slot = (product >> 64) as usize;
            // The low half is a uniform fraction independent of `slot` (resolution
            // slots / 2^64).
            let AliasSlot { threshold, alias } = self.alias[slot];
            // Branch-free select: the comparison is a coin flip for most slots.
            let keep = usize::from((product as u64) < threshold).wrapping_neg();
            let block = (slot & keep) | (alias as usize & !keep);
            let Block { first, size, slope } = self.blocks[block];
            let product = u128::from(rng.next_u64()) * u128::from(size);
            let rank = first + (product >> 64) as u64;
            let fraction = product as u64;
            // At most θ/32 · 2^64: no overflow.
            let squeeze = u64::MAX - slope * (rank - first);
            if fraction < squeeze || self.accepts(first, rank, fraction) {
                return rank - 1;
            }
        }
    }

    /// The exact acceptance test of `rank` in the block starting at `first`: a uniform
    /// `fraction / 2^64` below `(first / rank)^θ`.
    #[cold]
    fn accepts(&self, first: u64, rank: u64, fraction: u64) -> bool {
        (fraction as f64 / TWO_POW_64) < (first as f64 / rank as f64).powf(self.theta)
    }
}

/// Rejection-inversion for `P(k) ∝ k^-θ` on `k = 1..=n` (returned 0-based).
///
/// With `h(x) = x^-θ` and its antiderivative `H`, draw `u` uniformly in
/// `[H(n + 1/2), H(3/2) - 1]`, invert to `x = H⁻¹(u)`, round to `k`, and accept when
/// `u >= H(k + 1/2) - h(k)` (a cheap squeeze accepts most draws first).
#[derive(Debug, Clone)]
struct RejectionInversion {
    n: u64,
    theta: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    squeeze: f64,
    head: Option<Head>,
}

/// The first [`HEAD_RANKS`] ranks of a rejection-inversion sampler, served by an alias table.
#[derive(Debug, Clone)]
struct Head {
    /// `u` below this lies in the head's part of the inversion domain (`H(head + 1/2)`).
    boundary: f64,
    /// `u` below this (`H(3/2) - 1 + ζ(head)`) is accepted as a head draw: the head's ranks
    /// accept exactly `ζ(head)` of their part of the domain.
    accept: f64,
    /// The first rank of the tail (1-based).
    first_tail: f64,
    /// The head's conditional distribution.
    table: Vec<[u32; 2]>,
}

impl RejectionInversion {
    /// The sampler over `1..=n`, with the first `head_ranks` ranks (if any, and if the head
    /// leaves at least as many ranks to the tail) served by an alias table.
    fn new(n: u64, theta: f64, head_ranks: Option<u64>) -> Self {
        let mut sampler =
            RejectionInversion { n, theta, h_integral_x1: 0.0, h_integral_n: 0.0, squeeze: 0.0, head: None };
        sampler.h_integral_x1 = sampler.h_integral(1.5) - 1.0;
        sampler.h_integral_n = sampler.h_integral(n as f64 + 0.5);
        sampler.squeeze = 2.0 - sampler.h_integral_inverse(sampler.h_integral(2.5) - sampler.h(2.0));
        if let Some(head_ranks) = head_ranks.filter(|&head| theta > 0.0 && head >= 1 && n >= 2 * head) {
            let zeta_head = zeta(head_ranks, theta);
            let boundary = sampler.h_integral(head_ranks as f64 + 0.5);
            let accept = sampler.h_integral_x1 + zeta_head;
            // Each rank k >= 2 owns [H(k - 1/2), H(k + 1/2)) and accepts h(k) of it (h is
            // convex), rank 1 owns exactly h(1): the head accepts no more than its part.
            assert!(accept <= boundary, "the head accepts {accept} beyond its part of the domain {boundary}");
            sampler.head = Some(Head {
                boundary,
                accept,
                first_tail: head_ranks as f64 + 1.0,
                table: alias_table(head_ranks, theta, zeta_head),
            });
        }
        sampler
    }

    #[inline]
    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    /// `H(x) = (x^(1-θ) - 1) / (1 - θ)`, computed stably.
    #[inline]
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        expm1_over_x((1.0 - self.theta) * log_x) * log_x
    }

    #[inline]
    fn h_integral_inverse(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.theta)).max(-1.0);
        (ln1p_over_x(t) * y).exp()
    }

    #[inline]
    fn sample(&self, rng: &mut impl Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.random::<f64>() * (self.h_integral_x1 - self.h_integral_n);
            let mut first = 1.0;
            if let Some(head) = &self.head {
                if u < head.boundary {
                    if u < head.accept {
                        return alias_draw(&head.table, rng);
                    }
                    continue;
                }
                first = head.first_tail;
            }
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(first, self.n as f64);
            if k - x <= self.squeeze || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64 - 1;
            }
        }
    }
}

/// `(e^x - 1) / x`, continuous at 0.
#[inline]
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 { x.exp_m1() / x } else { 1.0 + x / 2.0 * (1.0 + x / 3.0) }
}

/// `ln(1 + x) / x`, continuous at 0.
#[inline]
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 { x.ln_1p() / x } else { 1.0 - x * (0.5 - x / 3.0) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Pearson's chi-square of `samples` draws against the analytic probabilities, with the
    /// first `head` ranks as their own bins and the rest grouped into bins of about equal mass.
    fn chi_square(zipf: &Zipf, samples: usize, seed: u64) -> (f64, usize) {
        let n = zipf.keys();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..samples {
            counts[zipf.sample(&mut rng) as usize] += 1;
        }
        // Bins with an expected count of at least 50.
        let mut statistic = 0.0;
        let mut bins = 0;
        let (mut expected, mut observed) = (0.0, 0u64);
        for rank in 0..n {
            expected += zipf.probability(rank) * samples as f64;
            observed += counts[rank as usize];
            if expected >= 50.0 || rank == n - 1 {
                statistic += (observed as f64 - expected).powi(2) / expected;
                bins += 1;
                expected = 0.0;
                observed = 0;
            }
        }
        (statistic, bins - 1)
    }

    fn assert_fits(zipf: &Zipf, label: &str) {
        let (statistic, degrees) = chi_square(zipf, 2_000_000, 42);
        // Mean `degrees`, standard deviation `sqrt(2 degrees)`: six deviations is a fit.
        let limit = degrees as f64 + 6.0 * (2.0 * degrees as f64).sqrt();
        assert!(statistic <= limit, "{label}: chi-square {statistic:.1} over {degrees} degrees (limit {limit:.1})");
    }

    #[test]
    fn every_sampler_matches_the_analytic_distribution() {
        for theta in [0.0, 0.5, 0.8, 0.9, 0.99] {
            for n in [1, 2, 10, 33, 1000, 100_000] {
                assert_fits(&Zipf::new(n, theta).unwrap(), &format!("alias n={n} θ={theta}"));
                assert_fits(&Zipf::with_blocks(n, theta).unwrap(), &format!("alias-blocks n={n} θ={theta}"));
                assert_fits(
                    &Zipf::with_rejection_inversion(n, theta).unwrap(),
                    &format!("rejection-inversion n={n} θ={theta}"),
                );
            }
        }
    }

    /// The mass on the lower half of every multi-rank block, empirical against exact: a
    /// sampler that drew uniformly within blocks (no acceptance test) or tested against the
    /// wrong end of the block would move it by tens of standard deviations.
    #[test]
    fn block_rejection_is_exact_within_blocks() {
        for (n, theta) in [(100_000u64, 0.99), (5_000_000, 0.99), (100_000, 0.5)] {
            let zipf = Zipf::with_blocks(n, theta).unwrap();
            let Sampler::BlockRejection(blocks) = &zipf.sampler else { panic!("block sampler") };
            // Per rank (0-based): whether it lies in the lower half of a block of two or more.
            let lower_half = |rank: u64| {
                let index = blocks.blocks.partition_point(|block| block.first <= rank + 1) - 1;
                let block = blocks.blocks[index];
                block.size > 1 && rank + 1 < block.first + block.size / 2
            };
            let in_blocks = |rank: u64| {
                let index = blocks.blocks.partition_point(|block| block.first <= rank + 1) - 1;
                blocks.blocks[index].size > 1
            };
            let weight = |rank: u64| ((rank + 1) as f64).powf(-theta);
            let (mut lower, mut multi) = (0.0, 0.0);
            for rank in 0..n {
                if in_blocks(rank) {
                    multi += weight(rank);
                    if lower_half(rank) {
                        lower += weight(rank);
                    }
                }
            }
            let p_lower = lower / multi;
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
            let (mut drawn_lower, mut drawn_multi) = (0u64, 0u64);
            for _ in 0..4_000_000 {
                let rank = zipf.sample(&mut rng);
                if in_blocks(rank) {
                    drawn_multi += 1;
                    drawn_lower += u64::from(lower_half(rank));
                }
            }
            let expected = p_lower * drawn_multi as f64;
            let sigma = (expected * (1.0 - p_lower)).sqrt();
            // The effect being guarded: uniform within blocks would put about half on each side.
            let uniform_within = blocks
                .blocks
                .iter()
                .filter(|block| block.size > 1)
                .map(|block| (block.size / 2) as f64 / block.size as f64)
                .sum::<f64>()
                / blocks.blocks.iter().filter(|block| block.size > 1).count() as f64;
            assert!(
                (drawn_lower as f64 - expected).abs() < 6.0 * sigma,
                "n={n} θ={theta}: {drawn_lower} of {drawn_multi} in lower halves, expected {expected:.0} ± {sigma:.0} \
                 (uniform within blocks: about {:.0})",
                uniform_within * drawn_multi as f64
            );
        }
    }

    #[test]
    fn blocks_are_narrow_and_cover_every_rank_once() {
        for n in [1u64, 31, 32, 33, 1000, 10_000_000, 100_000_000] {
            let Sampler::BlockRejection(blocks) = Zipf::with_blocks(n, 0.99).unwrap().sampler else {
                panic!("block sampler")
            };
            let mut next = 1;
            for block in &blocks.blocks {
                assert_eq!(block.first, next, "n={n}: blocks leave a gap or overlap");
                assert!(block.size >= 1 && block.size - 1 <= block.first >> BLOCK_WIDTH_SHIFT, "n={n}: {block:?}");
                next += block.size;
            }
            assert_eq!(next, n + 1, "n={n}: blocks do not end at n");
            assert!(blocks.blocks.len() <= 700, "n={n}: {} blocks", blocks.blocks.len());
        }
    }

    #[test]
    fn the_alias_head_keeps_every_rank_exact() {
        // Small heads over small key spaces, so the chi-square bins see single ranks on both
        // sides of the head's boundary.
        for theta in [0.5, 0.8, 0.99] {
            for (n, head) in [(100_000, 256), (10_000, 1), (10_000, 5_000), (1_000, 100)] {
                let zipf = Zipf::with_head(n, theta, head).unwrap();
                assert_eq!(zipf.sampler_name(), "alias-head+rejection-inversion");
                assert_fits(&zipf, &format!("alias head {head} + rejection-inversion n={n} θ={theta}"));
                // The head's total mass, which a wrong acceptance of head draws would move.
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
                let draws = 1_000_000u32;
                let in_head = (0..draws).filter(|_| zipf.sample(&mut rng) < head).count() as f64;
                let p_head: f64 = (0..head).map(|rank| zipf.probability(rank)).sum();
                let expected = p_head * f64::from(draws);
                let sigma = (expected * (1.0 - p_head)).sqrt().max(1.0);
                assert!(
                    (in_head - expected).abs() < 6.0 * sigma,
                    "head {head} n={n} θ={theta}: {in_head} vs {expected:.0}"
                );
            }
        }
        // The boundary ranks themselves, with many draws: the last head rank and the first tail rank.
        let (n, head, theta) = (100_000u64, 64u64, 0.9);
        let zipf = Zipf::with_head(n, theta, head).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let draws = 4_000_000u32;
        let (mut last_head, mut first_tail) = (0u64, 0u64);
        for _ in 0..draws {
            match zipf.sample(&mut rng) {
                r if r == head - 1 => last_head += 1,
                r if r == head => first_tail += 1,
                _ => {}
            }
        }
        for (observed, rank) in [(last_head, head - 1), (first_tail, head)] {
            let expected = zipf.probability(rank) * f64::from(draws);
            assert!(
                (observed as f64 - expected).abs() < 6.0 * expected.sqrt(),
                "rank {rank}: {observed} vs {expected:.0}"
            );
        }
    }

    #[test]
    fn gray_closed_form_would_fail_the_same_test() {
        // Guards the test itself: the closed-form generator misplaces mass on ranks >= 2.
        let (n, theta) = (1000u64, 0.9);
        let zipf = Zipf::new(n, theta).unwrap();
        let zeta_2 = 1.0 + 0.5f64.powf(theta);
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta_2 / zipf.zeta_n);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
        let samples = 2_000_000u32;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..samples {
            let u: f64 = rng.random();
            let uz = u * zipf.zeta_n;
            let rank = if uz < 1.0 {
                0
            } else if uz < zeta_2 {
                1
            } else {
                ((n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64).min(n - 1)
            };
            counts[rank as usize] += 1;
        }
        let expected = zipf.probability(2) * f64::from(samples);
        let deviation = (counts[2] as f64 - expected).abs() / expected.sqrt();
        assert!(deviation > 6.0, "closed form put {} on rank 2, expected {expected:.0}", counts[2]);
    }

    #[test]
    fn large_key_spaces_use_block_rejection_and_stay_in_range() {
        let zipf = Zipf::new(10_000_000, 0.99).unwrap();
        assert_eq!(zipf.sampler_name(), "alias-blocks");
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut zeros = 0;
        for _ in 0..100_000 {
            let rank = zipf.sample(&mut rng);
            assert!(rank < 10_000_000);
            zeros += u32::from(rank == 0);
        }
        let expected = zipf.probability(0) * 100_000.0;
        assert!((f64::from(zeros) - expected).abs() < 6.0 * expected.sqrt(), "{zeros} vs {expected}");
    }

    #[test]
    fn a_batch_draws_what_single_draws_would() {
        for zipf in [
            Zipf::new(1000, 0.0).unwrap(),
            Zipf::new(1000, 0.9).unwrap(),
            Zipf::with_blocks(1000, 0.9).unwrap(),
            Zipf::with_rejection_inversion(1000, 0.9).unwrap(),
            Zipf::with_head(100_000, 0.9, 64).unwrap(),
        ] {
            let (mut batch_rng, mut single_rng) =
                (Xoshiro256PlusPlus::seed_from_u64(9), Xoshiro256PlusPlus::seed_from_u64(9));
            let mut batch = [0u64; 100];
            zipf.sample_into(&mut batch_rng, &mut batch);
            let single: Vec<u64> = (0..100).map(|_| zipf.sample(&mut single_rng)).collect();
            assert_eq!(batch.as_slice(), single.as_slice(), "{}", zipf.sampler_name());
            assert_eq!(batch_rng.next_u64(), single_rng.next_u64(), "{}: generator states differ", zipf.sampler_name());
        }
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(Zipf::new(0, 0.5).is_err());
        assert!(Zipf::new(10, 1.0).is_err());
        assert!(Zipf::new(10, -0.1).is_err());
        assert!(Zipf::new(10, f64::NAN).is_err());
    }
}
