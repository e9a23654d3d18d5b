//! Does `huge=within_size` help here? Two private tmpfs mounts, one with
//! `huge=within_size` and one with `huge=never` (the kernel's default), run
//! the same temp-file workloads in alternation; the option is recommended
//! only where it is faster beyond the 95% interval of the paired ratio on
//! some operation and slower beyond it on none.

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::bench::{self, BenchReport, target};
use crate::command::Context;

/// The mount options compared: the candidate first (the ratio's numerator).
pub const CANDIDATE: &str = "huge=within_size";
pub const BASELINE: &str = "huge=never";
/// What is measured, for progress and reports.
pub const TITLE: &str = "huge=within_size vs huge=never";

/// How one operation came out, judged on the ratio's 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The whole interval is above 1.
    Faster,
    /// The whole interval is below 1.
    Slower,
    /// The interval contains 1: no difference shown.
    Same,
    /// No interval (the runs could not be paired): nothing shown either way.
    NoInterval,
}

/// `huge=within_size` over `huge=never` on one operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HugeRow {
    pub workload: String,
    pub label: String,
    /// within_size / never throughput (higher: within_size is faster).
    pub ratio: f64,
    pub ratio_ci95_low: Option<f64>,
    pub ratio_ci95_high: Option<f64>,
    pub outcome: Outcome,
}

/// The JSON `options.huge` of advise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HugeAdvice {
    /// "huge=within_size vs huge=never".
    pub compared: String,
    pub rows: Vec<HugeRow>,
    /// Measured with `--quick`: the figures are not meaningful and never
    /// lead to a recommendation.
    pub quick: bool,
    pub recommended: bool,
    /// Why it is (or is not) recommended, with the figures.
    pub reason: String,
}

impl HugeRow {
    pub fn new(workload: &str, label: &str, ratio: f64, ci95: Option<(f64, f64)>) -> HugeRow {
        let outcome = match ci95 {
            Some((lo, _)) if lo > 1.0 => Outcome::Faster,
            Some((_, hi)) if hi < 1.0 => Outcome::Slower,
            Some((lo, hi)) if lo.is_finite() && hi.is_finite() => Outcome::Same,
            _ => Outcome::NoInterval,
        };
        HugeRow {
            workload: workload.into(),
            label: label.into(),
            ratio,
            ratio_ci95_low: ci95.map(|c| c.0),
            ratio_ci95_high: ci95.map(|c| c.1),
            outcome,
        }
    }

    /// "seq write …: 1.84× (95% interval 1.70..1.99)".
    fn cited(&self) -> String {
        match (self.ratio_ci95_low, self.ratio_ci95_high) {
            (Some(lo), Some(hi)) => format!(
                "{}: {:.2}× (95% interval {lo:.2}..{hi:.2})",
                self.label, self.ratio
            ),
            _ => format!("{}: {:.2}× (no interval)", self.label, self.ratio),
        }
    }
}

/// The decision, a pure function of the rows.
pub fn decide(rows: Vec<HugeRow>, quick: bool) -> HugeAdvice {
    let pick = |o: Outcome| -> Vec<String> {
        rows.iter()
            .filter(|r| r.outcome == o)
            .map(HugeRow::cited)
            .collect()
    };
    let (faster, slower) = (pick(Outcome::Faster), pick(Outcome::Slower));
    let (recommended, reason) = if quick {
        (
            false,
            "measured with --quick: the figures are not meaningful, so huge=within_size is not recommended from them; run advise without --quick".to_string(),
        )
    } else if !slower.is_empty() {
        (
            false,
            format!(
                "huge=within_size was slower than huge=never beyond the 95% interval at {}: keep huge=never",
                slower.join("; ")
            ),
        )
    } else if faster.is_empty() {
        (
            false,
            "huge=within_size was not faster than huge=never beyond the 95% interval on any measured operation (the intervals include 1.0): keep huge=never".to_string(),
        )
    } else {
        (
            true,
            format!(
                "measured: a tmpfs with huge=within_size is faster than with huge=never at {} and slower at none (2 MiB pages for files that large; the default writes 4 KiB pages one at a time)",
                faster.join("; ")
            ),
        )
    };
    HugeAdvice {
        compared: format!("{CANDIDATE} vs {BASELINE}"),
        rows,
        quick,
        recommended,
        reason,
    }
}

/// The rows of a two-target report whose first target is the candidate.
pub fn rows_of(r: &BenchReport) -> Vec<HugeRow> {
    r.ratios
        .iter()
        .map(|x| {
            let label = r
                .workloads
                .iter()
                .find(|w| w.id == x.workload)
                .map(|w| w.label.clone())
                .unwrap_or_default();
            let ci = x.ratio_ci95_low.zip(x.ratio_ci95_high);
            HugeRow::new(&x.workload, &label, x.ratio, ci)
        })
        .collect()
}

/// Mount the two private tmpfs (root only; they live in this process's
/// own mount namespace) and measure `workloads` on both in alternation.
pub fn measure(
    ctx: &Context,
    workloads: &[bench::Workload],
    opts: &bench::Options,
    size_bytes: u64,
) -> Result<(HugeAdvice, BenchReport)> {
    let mut mounts = Vec::new();
    let mut specs = Vec::new();
    for o in [CANDIDATE, BASELINE] {
        let parsed = target::TmpfsOptions::parse(o)?;
        let m = target::PrivateTmpfs::mount_with(size_bytes, Some(&parsed))?;
        specs.push(target::PrivateSpec {
            zram: None,
            path: m.path.clone(),
            options: Some(o.to_string()),
        });
        mounts.push(m);
    }
    let paths: Vec<PathBuf> = specs.iter().map(|s| s.path.clone()).collect();
    let r = bench::suite::run_suite_on(ctx, &paths, &specs, workloads, opts);
    drop(mounts);
    let r = r?;
    Ok((decide(rows_of(&r), r.quick), r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ratio: f64, ci: Option<(f64, f64)>) -> HugeRow {
        HugeRow::new("seq-write-1m-fsync", "seq write 1 MiB", ratio, ci)
    }

    #[test]
    fn outcome_follows_the_interval_not_the_ratio() {
        assert_eq!(row(1.8, Some((1.6, 2.0))).outcome, Outcome::Faster);
        assert_eq!(row(0.7, Some((0.6, 0.8))).outcome, Outcome::Slower);
        // A large ratio whose interval still reaches below 1 shows nothing.
        assert_eq!(row(1.8, Some((0.95, 2.6))).outcome, Outcome::Same);
        assert_eq!(row(1.8, None).outcome, Outcome::NoInterval);
        assert_eq!(
            row(1.8, Some((f64::NAN, f64::NAN))).outcome,
            Outcome::NoInterval
        );
    }

    #[test]
    fn recommended_only_when_faster_beyond_the_interval_and_never_slower() {
        let faster = row(1.8, Some((1.6, 2.0)));
        let same = row(1.0, Some((0.97, 1.03)));
        let slower = row(0.8, Some((0.7, 0.9)));
        let a = decide(vec![faster.clone(), same.clone()], false);
        assert!(a.recommended, "{}", a.reason);
        assert!(
            a.reason.contains("1.80× (95% interval 1.60..2.00)"),
            "{}",
            a.reason
        );
        // Overlapping intervals: not recommended.
        let a = decide(vec![same.clone(), row(1.3, Some((0.9, 1.7)))], false);
        assert!(!a.recommended);
        assert!(a.reason.contains("intervals include 1.0"), "{}", a.reason);
        // Faster at one operation but slower at another: not recommended.
        let a = decide(vec![faster.clone(), slower], false);
        assert!(!a.recommended);
        assert!(a.reason.contains("slower"), "{}", a.reason);
        // Quick figures never recommend, however clear they look.
        let a = decide(vec![faster], true);
        assert!(!a.recommended);
        assert!(a.reason.contains("--quick"), "{}", a.reason);
        // Unpaired runs (no interval) recommend nothing.
        assert!(!decide(vec![row(3.0, None)], false).recommended);
    }
}
