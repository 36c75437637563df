//! Per-thread recorders.
//!
//! Each engine thread owns a [`Recorder`] and writes to it without synchronization; the driver
//! merges them when the run ends. Every event carries the time it happened (microseconds since
//! the run started) and counts only inside the [`Window`]: warm-up and cool-down are excluded.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest latency the histograms track (60 s); longer ones are clamped.
pub const LATENCY_US_MAX: u64 = 60_000_000;
/// Latencies under this many microseconds are counted in an array of their own and added to
/// the histogram when it is read. Recording into the HDR histogram took about 50 instructions
/// of a 4,000-instruction transaction on the flat-array ablation (callgrind), an array slot
/// takes a few; at three significant digits the histogram keeps every value under 2048
/// exactly, so nothing is lost.
const SHORT_LATENCY_US: usize = 1024;

/// Why a transaction attempt was aborted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AbortCause {
    /// Pipeline: stale read found by pre-validation, before reordering.
    PreValidation,
    /// Pipeline and middle tier: in the batch's feedback vertex set.
    Reorder,
    /// Pipeline: stale read found by (final) validation.
    FinalValidation,
    /// Thread-per-worker protocols: validation failed, a lock was busy, or a newer version won.
    Conflict,
    /// Wait-die: an older transaction held the lock.
    Die,
    /// PostgreSQL: SQLSTATE 40001 (serialization failure); `ssi`: the Serial Safety Net's
    /// exclusion window was violated (the commit could close a dependency cycle).
    Serialization,
    /// PostgreSQL: SQLSTATE 40P01 (deadlock detected).
    Deadlock,
    /// PostgreSQL: the connection was lost and the transaction did not commit.
    ConnectionLost,
    /// Multi-version protocols: the version the snapshot needed was cut off (its record kept
    /// more versions than allowed), so the attempt read nothing wrong and stopped.
    SnapshotTooOld,
}

impl AbortCause {
    pub const ALL: [AbortCause; 9] = [
        AbortCause::PreValidation,
        AbortCause::Reorder,
        AbortCause::FinalValidation,
        AbortCause::Conflict,
        AbortCause::Die,
        AbortCause::Serialization,
        AbortCause::Deadlock,
        AbortCause::ConnectionLost,
        AbortCause::SnapshotTooOld,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AbortCause::PreValidation => "pre_validation",
            AbortCause::Reorder => "reorder",
            AbortCause::FinalValidation => "final_validation",

            AbortCause::Conflict => "conflict",
            AbortCause::Die => "die",
            AbortCause::Serialization => "serialization",
            AbortCause::Deadlock => "deadlock",
            AbortCause::ConnectionLost => "connection_lost",
            AbortCause::SnapshotTooOld => "snapshot_too_old",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The measured part of a run, in microseconds since the run started: `[start_us, end_us)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_us: u64,
    pub end_us: u64,
}

impl Window {
    /// Everything counts.
    pub const ALL: Window = Window { start_us: 0, end_us: u64::MAX };

    /// Warm-up `warmup_us`, then `duration_us` measured.
    pub fn after_warmup(warmup_us: u64, duration_us: u64) -> Window {
        Window { start_us: warmup_us, end_us: warmup_us.saturating_add(duration_us) }
    }

    #[inline]
    pub fn contains(&self, now_us: u64) -> bool {
        now_us >= self.start_us && now_us < self.end_us
    }

    pub fn length_us(&self) -> u64 {
        self.end_us - self.start_us
    }
}

/// Counts for one thread (or, after [`Recorder::merge`], for a whole run).
#[derive(Debug, Clone)]
pub struct Recorder {
    window: Window,
    commits: u64,
    user_aborts: u64,
    aborts: [u64; AbortCause::ALL.len()],
    restarts_of_commits: u64,
    /// Latencies of at least [`SHORT_LATENCY_US`].
    latency_us: Histogram<u64>,
    /// Commits by latency, for latencies under [`SHORT_LATENCY_US`].
    short_latency_us: Box<[u64]>,
    batches: u64,
    batch_transactions: u64,
    batch_aborted: u64,
    reorder_ns: Histogram<u64>,
    /// Commits per procedure (index = procedure number).
    commits_by_procedure: Vec<u64>,
    /// Rows committed transactions read by point reads and returned by scans (engines that
    /// count them).
    point_reads: u64,
    scan_rows: u64,
}

impl Recorder {
    pub fn new(window: Window) -> Self {
        Recorder {
            window,
            commits: 0,
            user_aborts: 0,
            aborts: [0; AbortCause::ALL.len()],
            restarts_of_commits: 0,
            latency_us: Histogram::new_with_bounds(1, LATENCY_US_MAX, 3).expect("valid histogram bounds"),
            short_latency_us: vec![0; SHORT_LATENCY_US].into_boxed_slice(),
            batches: 0,
            batch_transactions: 0,
            batch_aborted: 0,
            reorder_ns: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds"),
            commits_by_procedure: Vec::new(),
            point_reads: 0,
            scan_rows: 0,
        }
    }

    pub fn window(&self) -> Window {
        self.window
    }

    /// A transaction committed at `now_us`, `latency_us` after its first submission, after
    /// `restarts` aborted attempts.
    #[inline]
    pub fn commit(&mut self, now_us: u64, latency_us: u64, restarts: u32, procedure: u8) {
        if !self.window.contains(now_us) {
            return;
        }
        self.commits += 1;
        self.restarts_of_commits += u64::from(restarts);
        let latency_us = latency_us.clamp(1, LATENCY_US_MAX);
        match self.short_latency_us.get_mut(latency_us as usize) {
            Some(count) => *count += 1,
            None => self.latency_us.saturating_record(latency_us),
        }
        let procedure = usize::from(procedure);
        if self.commits_by_procedure.len() <= procedure {
            self.commits_by_procedure.resize(procedure + 1, 0);
        }
        self.commits_by_procedure[procedure] += 1;
    }

    /// A transaction that committed at `now_us` read `point_reads` rows by point reads and was
    /// returned `scan_rows` rows by its scans.
    #[inline]
    pub fn rows(&mut self, now_us: u64, point_reads: u64, scan_rows: u64) {
        if self.window.contains(now_us) {
            self.point_reads += point_reads;
            self.scan_rows += scan_rows;
        }
    }

    /// An attempt was aborted by concurrency control (it will be retried).
    #[inline]
    pub fn abort(&mut self, now_us: u64, cause: AbortCause) {
        if self.window.contains(now_us) {
            self.aborts[cause.index()] += 1;
        }
    }

    /// The procedure's own logic gave up (not retried, not a concurrency-control abort).
    #[inline]
    pub fn user_abort(&mut self, now_us: u64) {
        if self.window.contains(now_us) {
            self.user_aborts += 1;
        }
    }

    /// A batch of `size` transactions was planned, `aborted` of them in its FVS, in `reorder_ns`.
    #[inline]
    pub fn batch(&mut self, now_us: u64, size: usize, aborted: usize, reorder_ns: u64) {
        if self.window.contains(now_us) {
            self.batches += 1;
            self.batch_transactions += size as u64;
            self.batch_aborted += aborted as u64;
            self.reorder_ns.saturating_record(reorder_ns.max(1));
        }
    }

    /// Adds `other`'s counts to this recorder.
    pub fn merge(&mut self, other: &Recorder) {
        self.commits += other.commits;
        self.user_aborts += other.user_aborts;
        for (mine, theirs) in self.aborts.iter_mut().zip(other.aborts) {
            *mine += theirs;
        }
        self.restarts_of_commits += other.restarts_of_commits;
        self.latency_us.add(&other.latency_us).expect("same histogram bounds");
        for (mine, theirs) in self.short_latency_us.iter_mut().zip(&other.short_latency_us) {
            *mine += theirs;
        }
        self.batches += other.batches;
        self.batch_transactions += other.batch_transactions;
        self.batch_aborted += other.batch_aborted;
        self.reorder_ns.add(&other.reorder_ns).expect("same histogram bounds");
        if self.commits_by_procedure.len() < other.commits_by_procedure.len() {
            self.commits_by_procedure.resize(other.commits_by_procedure.len(), 0);
        }
        for (mine, theirs) in self.commits_by_procedure.iter_mut().zip(&other.commits_by_procedure) {
            *mine += theirs;
        }
        self.point_reads += other.point_reads;
        self.scan_rows += other.scan_rows;
    }

    /// Rows read by point reads and returned by scans of committed transactions (0, 0 for
    /// engines that do not count them).
    pub fn rows_read(&self) -> (u64, u64) {
        (self.point_reads, self.scan_rows)
    }

    pub fn commits(&self) -> u64 {
        self.commits
    }

    pub fn user_aborts(&self) -> u64 {
        self.user_aborts
    }

    pub fn aborts(&self, cause: AbortCause) -> u64 {
        self.aborts[cause.index()]
    }

    /// All concurrency-control aborts.
    pub fn total_aborts(&self) -> u64 {
        self.aborts.iter().sum()
    }

    pub fn restarts_of_commits(&self) -> u64 {
        self.restarts_of_commits
    }

    /// The latencies of the commits counted, in microseconds.
    pub fn latency_us(&self) -> Histogram<u64> {
        let mut histogram = self.latency_us.clone();
        for (latency_us, &count) in self.short_latency_us.iter().enumerate().filter(|(_, count)| **count > 0) {
            histogram.saturating_record_n(latency_us as u64, count);
        }
        histogram
    }

    pub fn batches(&self) -> u64 {
        self.batches
    }

    pub fn batch_transactions(&self) -> u64 {
        self.batch_transactions
    }

    pub fn batch_aborted(&self) -> u64 {
        self.batch_aborted
    }

    pub fn reorder_ns(&self) -> &Histogram<u64> {
        &self.reorder_ns
    }

    pub fn commits_by_procedure(&self) -> &[u64] {
        &self.commits_by_procedure
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_window_counts() {
        let mut recorder = Recorder::new(Window::after_warmup(100, 1000));
        recorder.commit(50, 10, 0, 0);
        recorder.commit(150, 10, 2, 1);
        recorder.commit(1100, 10, 0, 0);
        recorder.abort(99, AbortCause::Reorder);
        recorder.abort(100, AbortCause::Reorder);
        recorder.user_abort(1099);
        assert_eq!(recorder.commits(), 1);
        assert_eq!(recorder.restarts_of_commits(), 2);
        assert_eq!(recorder.aborts(AbortCause::Reorder), 1);
        assert_eq!(recorder.user_aborts(), 1);
        assert_eq!(recorder.commits_by_procedure(), &[0, 1]);
    }

    #[test]
    fn short_and_long_latencies_read_back_as_one_histogram() {
        let mut recorder = Recorder::new(Window::ALL);
        let latencies = [0, 1, 7, 7, SHORT_LATENCY_US as u64 - 1, SHORT_LATENCY_US as u64, 5000, LATENCY_US_MAX * 2];
        for latency in latencies {
            recorder.commit(1, latency, 0, 0);
        }
        let mut expected = Histogram::<u64>::new_with_bounds(1, LATENCY_US_MAX, 3).unwrap();
        for latency in latencies {
            expected.saturating_record(latency.clamp(1, LATENCY_US_MAX));
        }
        let histogram = recorder.latency_us();
        assert_eq!(histogram.len(), latencies.len() as u64);
        for quantile in [0.0, 0.1, 0.3, 0.5, 0.6, 0.7, 0.9, 1.0] {
            assert_eq!(histogram.value_at_quantile(quantile), expected.value_at_quantile(quantile), "at {quantile}");
        }
        assert_eq!(histogram.mean(), expected.mean());
        assert_eq!((histogram.min(), histogram.max()), (1, expected.max()));
    }

    #[test]
    fn merge_adds_everything() {
        let mut a = Recorder::new(Window::ALL);
        let mut b = Recorder::new(Window::ALL);
        a.commit(1, 100, 1, 0);
        b.commit(1, 300, 0, 2);
        b.abort(1, AbortCause::FinalValidation);
        b.batch(1, 40, 3, 5000);
        a.merge(&b);
        assert_eq!(a.commits(), 2);
        assert_eq!(a.total_aborts(), 1);
        assert_eq!(a.latency_us().len(), 2);
        assert_eq!((a.latency_us().min(), a.latency_us().max()), (100, 300));
        assert_eq!((a.batches(), a.batch_transactions(), a.batch_aborted()), (1, 40, 3));
        assert_eq!(a.commits_by_procedure(), &[1, 0, 1]);
    }
}
