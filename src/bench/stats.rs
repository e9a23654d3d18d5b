//! Summary statistics of repeated runs, hyperfine-style: median with min/max,
//! relative spread, and outliers by modified Z-score (MAD based), which a
//! single slow run cannot distort the way it distorts mean and stddev.

use serde::{Deserialize, Serialize};

/// Modified Z-score above which a run is an outlier (hyperfine uses the same idea).
pub const OUTLIER_Z: f64 = 3.5;
/// Robust relative standard deviation above which we warn.
pub const HIGH_RSD: f64 = 0.10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// (max - min) / median, in percent.
    pub spread_percent: f64,
    /// Robust relative standard deviation: 1.4826 x MAD / median, in percent
    /// (equals the usual one for normal noise, ignores a single wild run).
    pub rsd_percent: f64,
    pub outliers: usize,
}

pub fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Summarise samples (any unit, e.g. bytes/s). Empty input gives NaNs.
pub fn summarize(samples: &[f64]) -> Summary {
    let mut s: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(|a, b| a.total_cmp(b));
    let med = median(&s);
    let min = s.first().copied().unwrap_or(f64::NAN);
    let max = s.last().copied().unwrap_or(f64::NAN);
    let mean = if s.is_empty() {
        f64::NAN
    } else {
        s.iter().sum::<f64>() / s.len() as f64
    };
    let mut dev: Vec<f64> = s.iter().map(|x| (x - med).abs()).collect();
    dev.sort_by(|a, b| a.total_cmp(b));
    let mad = median(&dev);
    let outliers = if mad > 0.0 {
        s.iter()
            .filter(|x| 0.6745 * (*x - med).abs() / mad > OUTLIER_Z)
            .count()
    } else {
        0
    };
    Summary {
        median: med,
        min,
        max,
        mean,
        spread_percent: if med > 0.0 {
            (max - min) / med * 100.0
        } else {
            f64::NAN
        },
        rsd_percent: if med > 0.0 {
            1.4826 * mad / med * 100.0
        } else {
            f64::NAN
        },
        outliers,
    }
}

/// Distribution-free confidence interval of the median of `sorted` samples:
/// the order statistics x(k) and x(n+1-k) with the largest k for which
/// P(Binomial(n, 1/2) < k) <= (1 - conf) / 2. With few samples this is
/// simply [min, max]. Empty input gives NaNs.
pub fn median_ci(sorted: &[f64], conf: f64) -> (f64, f64) {
    let n = sorted.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let tail = (1.0 - conf) / 2.0;
    // cdf = P(X <= j) for X ~ Binomial(n, 1/2), built up term by term.
    let mut term = 0.5f64.powi(n as i32);
    let mut cdf = term;
    let mut k = 1;
    for j in 0..n / 2 {
        if cdf > tail {
            break;
        }
        // P(X <= j) <= tail: x(j+1) is still a valid lower bound.
        k = j + 1;
        term *= (n - j) as f64 / (j + 1) as f64;
        cdf += term;
    }
    (sorted[k - 1], sorted[n - k])
}

/// Per-run ratios a[i] / b[i] of two targets run in alternation (round 2k:
/// A then B, round 2k+1: B then A), with the order effect taken out. The
/// runs of a pair ran seconds apart, so noise that moves both (another
/// program's burst, a slow stretch of the host) cancels out of the ratio;
/// a run with a missing or zero figure is skipped, not divided by. On this
/// project's VM an ext4 fsync-per-file run is 1.4x faster right after
/// another ext4 run than after a tmpfs run, and a tmpfs run is faster right
/// after tmpfs: the per-run ratios alternate high, low, high, and their
/// median jumps with the parity of the run count. Scaling the even rounds'
/// ratios by sqrt(m_odd / m_even) and the odd rounds' by its inverse (m =
/// median of the rounds of that parity) centres both on sqrt(m_even x m_odd),
/// where each target ran as often after itself as after the other. Unlike
/// averaging rounds in pairs, a single disturbed run moves one value only.
/// Returns the adjusted ratios and the order effect m_even / m_odd (None
/// when either parity has fewer than two runs: nothing is adjusted then).
pub fn order_adjusted_ratios(a: &[f64], b: &[f64]) -> (Vec<f64>, Option<f64>) {
    let valid = |x: &f64, y: &f64| x.is_finite() && y.is_finite() && *x > 0.0 && *y > 0.0;
    let parity = |p: usize| -> Vec<f64> {
        a.iter()
            .zip(b)
            .enumerate()
            .filter(|(i, (x, y))| i % 2 == p && valid(x, y))
            .map(|(_, (x, y))| x / y)
            .collect()
    };
    let (mut even, mut odd) = (parity(0), parity(1));
    if even.len() < 2 || odd.len() < 2 {
        even.extend(odd);
        return (even, None);
    }
    let sorted_median = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(|x, y| x.total_cmp(y));
        median(&s)
    };
    let effect = sorted_median(&even) / sorted_median(&odd);
    let c = effect.sqrt();
    even.iter_mut().for_each(|x| *x /= c);
    odd.iter_mut().for_each(|x| *x *= c);
    even.extend(odd);
    (even, Some(effect))
}

/// The paired ratio of two targets: median of the order-adjusted per-run
/// ratios, with its 95% confidence interval and robust relative spread.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedRatio {
    pub median: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub min: f64,
    pub max: f64,
    pub rsd_percent: f64,
    /// Runs paired (per target).
    pub pairs: usize,
    /// Median ratio of the A-first rounds over that of the B-first rounds
    /// (1.0 = running order made no difference), when there were enough.
    pub order_effect: Option<f64>,
}

impl PairedRatio {
    pub fn of(a: &[f64], b: &[f64]) -> Option<PairedRatio> {
        let (mut r, order_effect) = order_adjusted_ratios(a, b);
        if r.is_empty() {
            return None;
        }
        r.sort_by(|x, y| x.total_cmp(y));
        let s = summarize(&r);
        let (lo, hi) = median_ci(&r, 0.95);
        Some(PairedRatio {
            median: s.median,
            ci_low: lo,
            ci_high: hi,
            min: s.min,
            max: s.max,
            rsd_percent: s.rsd_percent,
            pairs: r.len(),
            order_effect,
        })
    }

    /// Half the width of the 95% interval, relative to the median, in
    /// percent: the larger of the two sides (the interval is not symmetric).
    pub fn uncertainty_percent(&self) -> f64 {
        ((self.ci_high - self.median).max(self.median - self.ci_low)) / self.median * 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 9.0]), 3.0);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn summary_and_outliers() {
        let s = summarize(&[100.0, 101.0, 99.0, 100.0, 100.5, 30.0]);
        assert_eq!(s.median, 100.0);
        assert_eq!(s.min, 30.0);
        assert_eq!(s.max, 101.0);
        assert_eq!(s.outliers, 1);
        assert!((s.spread_percent - 71.0).abs() < 1e-9);
        let s = summarize(&[5.0, 5.0, 5.0]);
        assert_eq!(s.outliers, 0);
        assert_eq!(s.spread_percent, 0.0);
    }

    #[test]
    fn median_ci_uses_binomial_order_statistics() {
        let x: Vec<f64> = (1..=10).map(f64::from).collect();
        // n = 10, 95%: ranks 2 and 9 (P(X <= 1) = 11/1024 <= 2.5% < P(X <= 2)).
        assert_eq!(median_ci(&x, 0.95), (2.0, 9.0));
        let x: Vec<f64> = (1..=20).map(f64::from).collect();
        // n = 20: ranks 6 and 15 (P(X <= 5) = 2.07%, P(X <= 6) = 5.77%).
        assert_eq!(median_ci(&x, 0.95), (6.0, 15.0));
        // Too few samples for 95%: the whole range.
        assert_eq!(median_ci(&[1.0, 2.0, 3.0], 0.95), (1.0, 3.0));
        assert_eq!(median_ci(&[4.0], 0.95), (4.0, 4.0));
        assert!(median_ci(&[], 0.95).0.is_nan());
    }

    #[test]
    fn paired_ratio_cancels_common_noise() {
        // Both targets slowed by the same factor in the same pair: the
        // ratio of medians would move, the per-pair ratios do not.
        let a = [100.0, 50.0, 100.0, 50.0, 100.0, 50.0];
        let b = [10.0, 5.0, 10.0, 5.0, 10.0, 5.0];
        let p = PairedRatio::of(&a, &b).unwrap();
        assert_eq!(p.median, 10.0);
        assert_eq!((p.ci_low, p.ci_high), (10.0, 10.0));
        assert_eq!(p.rsd_percent, 0.0);
        assert_eq!(p.pairs, 6);
        assert_eq!(p.order_effect, Some(1.0));
        assert_eq!(p.uncertainty_percent(), 0.0);
        // A zero or missing denominator is skipped, not divided by.
        assert_eq!(
            order_adjusted_ratios(&[1.0, 2.0, 3.0], &[1.0, 0.0]),
            (vec![1.0], None)
        );
        assert!(PairedRatio::of(&[1.0], &[0.0]).is_none());
    }

    #[test]
    fn order_effect_is_taken_out() {
        // Round 2k runs A then B, round 2k+1 B then A. B is 1.5x faster right
        // after itself (odd rounds), A 1.2x faster right after itself (even
        // rounds): per-run ratios alternate 12 and 6.67.
        let a = [120.0, 100.0, 120.0, 100.0, 120.0, 100.0, 120.0];
        let b = [10.0, 15.0, 10.0, 15.0, 10.0, 15.0, 10.0];
        // The plain median depends on how many runs there were ...
        let plain = |n: usize| {
            let mut r: Vec<f64> = a[..n].iter().zip(&b[..n]).map(|(x, y)| x / y).collect();
            r.sort_by(|x, y| x.total_cmp(y));
            median(&r)
        };
        assert_eq!(plain(7), 12.0);
        assert!((plain(6) - 9.3333).abs() < 1e-3);
        // ... the adjusted one does not, and has no spread left.
        let want = (12.0f64 * (100.0 / 15.0)).sqrt();
        for n in [6, 7] {
            let p = PairedRatio::of(&a[..n], &b[..n]).unwrap();
            assert!((p.median - want).abs() < 1e-9, "n={n}: {}", p.median);
            assert!(p.uncertainty_percent() < 1e-9);
            assert!((p.order_effect.unwrap() - 1.8).abs() < 1e-9);
        }
        // Too few rounds of one parity: nothing adjusted.
        let (r, e) = order_adjusted_ratios(&[6.0, 4.0, 6.0], &[2.0, 2.0, 2.0]);
        assert_eq!((r, e), (vec![3.0, 3.0, 2.0], None));
    }

    #[test]
    fn one_disturbed_run_moves_one_ratio() {
        // Steady ratio 2, the disk (b) stalls once: only that run's ratio
        // moves, so the median and most of the interval stay at 2.
        let a = [200.0; 12];
        let mut b = [100.0; 12];
        b[5] = 25.0;
        let (r, _) = order_adjusted_ratios(&a, &b);
        assert_eq!(r.iter().filter(|x| (**x - 2.0).abs() > 1e-9).count(), 1);
        let p = PairedRatio::of(&a, &b).unwrap();
        assert!((p.median - 2.0).abs() < 1e-9);
        assert_eq!(p.max, 8.0);
    }

    #[test]
    fn paired_ratio_uncertainty_is_the_wider_side() {
        let a = [9.0, 10.0, 10.0, 10.0, 13.0];
        let b = [1.0; 5];
        let p = PairedRatio::of(&a, &b).unwrap();
        // Even rounds 9, 10, 13 (median 10), odd 10, 10 (median 10): no order effect.
        assert_eq!(p.order_effect, Some(1.0));
        assert_eq!((p.min, p.median, p.max), (9.0, 10.0, 13.0));
        // n = 5: the interval is [min, max]; the upper side is 30% away.
        assert!((p.uncertainty_percent() - 30.0).abs() < 1e-9);
    }
}
