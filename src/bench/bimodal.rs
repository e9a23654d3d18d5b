//! A target that changed speed during a run: which of the compared pair,
//! its two speeds, the ratio at each, and how the warning lists them.

use super::ratio::fmt_ratio;
use super::report::{BenchReport, BenchResult, Bimodal, target_name};
use super::stats;

/// What the `ratio_bimodal` warning says before its list.
pub(crate) const WARNING: &str = "a target changed speed during the run (bimodal: its runs fall into two groups far apart), so one ratio does not describe it and a rerun may land on either mode; \
         a disk's write cache filling and draining, or a throttled virtual disk, does this: rerun with a larger --min-time to see which speed holds";

/// The compared pair's two speeds, when one target (the denominator, the
/// disk, first) changed speed during the run; the ratio at each speed is
/// the median of the order-adjusted ratios of that speed's rounds.
pub(crate) fn of(x: &BenchResult, y: &BenchResult) -> Option<Bimodal> {
    let (r, _) = stats::order_adjusted_ratios(&x.samples, &y.samples);
    // Rounds with a missing figure were skipped: modes only on complete runs.
    if r.len() != x.samples.len() {
        return None;
    }
    let (res, m) = [y, x]
        .into_iter()
        .find_map(|t| stats::modes(&t.samples).map(|m| (t, m)))?;
    let ratio_of = |runs: &[usize]| {
        let mut v: Vec<f64> = runs.iter().map(|&i| r[i]).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        stats::median(&v)
    };
    let bytes = res.unit == "bytes_per_s";
    Some(Bimodal {
        target: res.target.clone(),
        slow_mode_bytes_per_s: bytes.then_some(m.slow),
        fast_mode_bytes_per_s: bytes.then_some(m.fast),
        slow_mode_ops_per_s: (!bytes).then_some(m.slow),
        fast_mode_ops_per_s: (!bytes).then_some(m.fast),
        slow_runs: m.slow_runs.len(),
        fast_runs: m.fast_runs.len(),
        ratio_when_slow: ratio_of(&m.slow_runs),
        ratio_when_fast: ratio_of(&m.fast_runs),
    })
}

/// Each bimodal ratio as the warning lists it: the target's two speeds and
/// the ratio at each.
pub(crate) fn listed(r: &BenchReport) -> Vec<String> {
    r.ratios
        .iter()
        .filter_map(|x| {
            let b = x.bimodal.as_ref()?;
            let w = r.workloads.iter().find(|w| w.id == x.workload);
            let fmt = |bytes: Option<f64>, ops: Option<f64>| match (bytes, ops) {
                (Some(v), _) => crate::units::fmt_rate(v),
                (_, Some(v)) => super::render::fmt_ops(v, super::render::ops_unit(w)),
                _ => "?".into(),
            };
            Some(format!(
                "{}: {} ran at {} in {} runs and {} in {} (ratio {} or {})",
                x.workload,
                target_name(r, &b.target),
                fmt(b.slow_mode_bytes_per_s, b.slow_mode_ops_per_s),
                b.slow_runs,
                fmt(b.fast_mode_bytes_per_s, b.fast_mode_ops_per_s),
                b.fast_runs,
                fmt_ratio(b.ratio_when_slow),
                fmt_ratio(b.ratio_when_fast),
            ))
        })
        .collect()
}
