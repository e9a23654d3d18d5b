//! How a suite runs (everything but what and where), and the room the
//! workloads need on a target: read by the suite and by the alternation
//! that runs its rounds.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::workload::Workload;

/// How to run a suite (everything except what and where).
#[derive(Debug, Clone)]
pub struct Options {
    /// At least this many measured runs per workload and target.
    pub min_runs: u32,
    /// Keep running until one target (the slowest, in lockstep) has this much
    /// measured time (bounded by max_runs).
    pub min_time: Duration,
    pub max_runs: u32,
    /// After min_runs and min_time, keep alternating (in A B B A blocks)
    /// until the ratio's 95% interval is within this many percent of it ...
    /// (0 = stop at min_runs/min_time).
    pub ratio_precision_percent: f64,
    /// ... or a workload's alternation has run this long (wall time), or max_runs.
    pub max_time: Duration,
    /// One untimed run first (streaming workloads; op-counted ones use their probe run).
    pub warmup: bool,
    /// A separate pass with a clock read around every op, for p50/p99/p99.9.
    pub latency: bool,
    /// memcpy ceiling buffer; None = well beyond the last-level cache.
    pub ceiling_buffer_bytes: Option<u64>,
    pub ceiling_runs: u32,
    /// Per-run time bound for op-counted workloads (fio's --runtime).
    pub runtime: Option<Duration>,
    /// Progress bars on stderr (the CLI sets this only when stderr is a terminal).
    pub progress: bool,
    /// Set by a signal handler (or a caller) to stop early; scratch is then removed.
    pub stop: Arc<AtomicBool>,
    /// A smoke test (`--quick`): recorded in the report, which marks every
    /// figure as not meaningful.
    pub quick: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min_runs: 5,
            min_time: Duration::from_millis(500),
            max_runs: 40,
            ratio_precision_percent: DEFAULT_RATIO_PRECISION_PERCENT,
            max_time: Duration::from_secs(3),
            warmup: true,
            latency: true,
            ceiling_buffer_bytes: None,
            ceiling_runs: 3,
            runtime: None,
            progress: false,
            stop: Arc::new(AtomicBool::new(false)),
            quick: false,
        }
    }
}

/// Default of [`Options::ratio_precision_percent`]: half the 10% within which
/// back-to-back suites should agree, as the interval is of one suite's ratio.
pub const DEFAULT_RATIO_PRECISION_PERCENT: f64 = 5.0;

/// Peak bytes and inodes the workloads need on each target.
pub fn need(workloads: &[Workload]) -> (u64, u64) {
    let b = workloads
        .iter()
        .map(|w| w.footprint_bytes())
        .max()
        .unwrap_or(0);
    let i = workloads
        .iter()
        .map(|w| w.footprint_inodes())
        .max()
        .unwrap_or(0);
    (b, i)
}
