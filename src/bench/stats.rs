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
/// Returns the adjusted ratios in run order (drift between rounds is read
/// from that order) and the order effect m_even / m_odd (None when either
/// parity has fewer than two runs: nothing is adjusted then).
pub fn order_adjusted_ratios(a: &[f64], b: &[f64]) -> (Vec<f64>, Option<f64>) {
    let valid = |x: &f64, y: &f64| x.is_finite() && y.is_finite() && *x > 0.0 && *y > 0.0;
    let rounds: Vec<(usize, f64)> = a
        .iter()
        .zip(b)
        .enumerate()
        .filter(|(_, (x, y))| valid(x, y))
        .map(|(i, (x, y))| (i, x / y))
        .collect();
    let parity = |p: usize| -> Vec<f64> {
        let mut v: Vec<f64> = rounds
            .iter()
            .filter(|(i, _)| i % 2 == p)
            .map(|(_, r)| *r)
            .collect();
        v.sort_by(|x, y| x.total_cmp(y));
        v
    };
    let (even, odd) = (parity(0), parity(1));
    if even.len() < 2 || odd.len() < 2 {
        return (rounds.into_iter().map(|(_, r)| r).collect(), None);
    }
    let effect = median(&even) / median(&odd);
    let c = effect.sqrt();
    let adjusted = rounds
        .into_iter()
        .map(|(i, r)| if i % 2 == 0 { r / c } else { r * c })
        .collect();
    (adjusted, Some(effect))
}

/// Two-sided 97.5 % quantile of Student's t for `df` degrees of freedom
/// (standard tables; beyond 30 the normal's 1.96 is within 4 %). Written
/// out rather than pulling a statistics crate in for one quantile.
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        d if d <= 30 => T[d - 1],
        _ => 1.96,
    }
}

/// The most lag-1 correlation between rounds [`rerun_interval`] counts
/// (3 rounds then count as 1).
const MAX_DRIFT_CORRELATION: f64 = 0.5;

/// Where a rerun of the same length should put its median ratio, 95 %, from
/// one run's per-round ratios in run order. The interval of the median of
/// one run (the order statistics of [`median_ci`]) describes that run only:
/// on the shared test VM three back-to-back runs gave 1.80..2.02 and
/// 1.55..1.67, and of 20 back-to-back `--quick` runs under load the
/// cold random-read intervals overlapped in 137 of 190 pairs.
/// This one is built for the comparison a reader makes:
/// * the difference of two independent medians: sqrt(2/n) rather than
///   sqrt(1/n), and 1.2533 (sqrt(pi/2)) for a median's spread against a mean's;
/// * rounds as blocks: drift between rounds (a slow stretch of the disk, a
///   burst of load) makes neighbouring rounds alike, so they count as fewer
///   independent ones, n (1 - rho) / (1 + rho) with rho the lag-1
///   autocorrelation of the log ratios (clamped to 0..0.5: from a handful of
///   rounds rho is itself a rough guess, and at 0.9 five rounds counted as
///   a quarter of one gave intervals of 0..10^9);
/// * on the log scale (ratios are symmetric there), with Student's t for n - 1;
/// * never narrower than the rounds themselves (min..max): a rerun's median
///   lies inside the range its rounds can reach.
///
/// Fewer than 3 rounds: min..max. Empty: NaNs.
pub fn rerun_interval(in_order: &[f64]) -> (f64, f64) {
    let r: Vec<f64> = in_order
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let (min, max) = r
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        });
    let n = r.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    // All rounds alike (to rounding): nothing varies, nothing to widen.
    if n < 3 || max / min - 1.0 < 1e-9 {
        return (min, max);
    }
    let l: Vec<f64> = r.iter().map(|x| x.ln()).collect();
    let mean = l.iter().sum::<f64>() / n as f64;
    let c0: f64 = l.iter().map(|x| (x - mean).powi(2)).sum();
    let c1: f64 = l.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    let rho = (c1 / c0).clamp(0.0, MAX_DRIFT_CORRELATION);
    let blocks = n as f64 * (1.0 - rho) / (1.0 + rho);
    let sd = (c0 / (n - 1) as f64).sqrt();
    let mut sorted = l.clone();
    sorted.sort_by(|x, y| x.total_cmp(y));
    let mid = median(&sorted);
    let half = t975(n - 1) * 1.2533 * sd * (2.0 / blocks).sqrt();
    ((mid - half).exp().min(min), (mid + half).exp().max(max))
}

/// A target whose per-run figures fall into two groups: it changed speed
/// during the run (a disk's write cache filling and draining, a throttled
/// virtual disk, a CPU frequency step).
#[derive(Debug, Clone, PartialEq)]
pub struct Modes {
    /// Median of the slower runs and of the faster runs, in the samples' unit.
    pub slow: f64,
    pub fast: f64,
    /// Which runs (indices into the samples) were the fast ones.
    pub fast_runs: Vec<usize>,
    pub slow_runs: Vec<usize>,
}

/// Modes at least this far apart (fast / slow) count as two speeds.
pub const BIMODAL_SEPARATION: f64 = 1.5;

/// Whether `samples` (positive figures in run order) come from two speeds.
/// The rule, on log values sorted: cut at the widest gap that leaves at
/// least max(2, n/5) runs on each side; two modes when the two sides'
/// medians are at least [`BIMODAL_SEPARATION`] apart and the gap is at least
/// twice the wider side's own range (two tight groups far apart, not one
/// spread-out group: noise under load spreads runs evenly and has no such
/// gap). Needs 4 runs.
pub fn modes(samples: &[f64]) -> Option<Modes> {
    let mut l: Vec<(f64, usize)> = samples
        .iter()
        .enumerate()
        .filter(|(_, x)| x.is_finite() && **x > 0.0)
        .map(|(i, x)| (x.ln(), i))
        .collect();
    let n = l.len();
    let side = 2.max(n.div_ceil(5));
    if n < 2 * side {
        return None;
    }
    l.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (gap, k) = (side..=n - side).map(|k| (l[k].0 - l[k - 1].0, k)).fold(
        (f64::NEG_INFINITY, 0),
        |best, c| {
            if c.0 > best.0 { c } else { best }
        },
    );
    let (lo, hi) = l.split_at(k);
    let logs = |v: &[(f64, usize)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
    let (mlo, mhi) = (median(&logs(lo)), median(&logs(hi)));
    let range = |v: &[(f64, usize)]| v[v.len() - 1].0 - v[0].0;
    if mhi - mlo < BIMODAL_SEPARATION.ln() || gap < 2.0 * range(lo).max(range(hi)) {
        return None;
    }
    let runs = |v: &[(f64, usize)]| {
        let mut i: Vec<usize> = v.iter().map(|x| x.1).collect();
        i.sort_unstable();
        i
    };
    // The modes from the figures themselves (exp(ln x) is not always x).
    let of = |v: &[(f64, usize)]| {
        let mut x: Vec<f64> = v.iter().map(|x| samples[x.1]).collect();
        x.sort_by(|a, b| a.total_cmp(b));
        median(&x)
    };
    Some(Modes {
        slow: of(lo),
        fast: of(hi),
        slow_runs: runs(lo),
        fast_runs: runs(hi),
    })
}

/// The paired ratio of two targets: median of the order-adjusted per-run
/// ratios, with the interval a rerun should land in and the robust spread.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedRatio {
    pub median: f64,
    /// 95 % rerun interval ([`rerun_interval`]).
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
        let (r, order_effect) = order_adjusted_ratios(a, b);
        if r.is_empty() {
            return None;
        }
        let (lo, hi) = rerun_interval(&r);
        let s = summarize(&r);
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
        assert_eq!((r, e), (vec![3.0, 2.0, 3.0], None));
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
        // The interval holds every round, and is wider above (13 is further).
        assert!(p.ci_low <= 9.0 && p.ci_high >= 13.0, "{p:?}");
        let up = (p.ci_high - 10.0) / 10.0 * 100.0;
        assert!((p.uncertainty_percent() - up).abs() < 1e-9);
        assert!(p.ci_high - 10.0 > 10.0 - p.ci_low);
    }

    /// Deterministic normal deviates (Box-Muller over a 64-bit LCG).
    struct Noise(u64);
    impl Noise {
        fn unit(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            (-2.0 * self.unit().ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
        }
    }

    #[test]
    fn rerun_interval_holds_every_round_and_widens_with_drift() {
        assert_eq!(rerun_interval(&[2.0, 2.0, 2.0, 2.0]), (2.0, 2.0));
        assert_eq!(rerun_interval(&[2.0, 3.0]), (2.0, 3.0));
        assert!(rerun_interval(&[]).0.is_nan());
        // The same five ratios, alternating (no drift) and drifting upwards:
        // rounds that follow a trend are fewer independent blocks.
        let flat = rerun_interval(&[1.0, 1.2, 1.05, 1.15, 1.1]);
        let drift = rerun_interval(&[1.0, 1.05, 1.1, 1.15, 1.2]);
        assert!(flat.0 <= 1.0 && flat.1 >= 1.2, "{flat:?}");
        assert!(drift.1 / drift.0 > flat.1 / flat.0, "{drift:?} vs {flat:?}");
        // A zero or missing figure is skipped, not divided by.
        assert_eq!(rerun_interval(&[0.0, f64::NAN, 4.0]), (4.0, 4.0));
    }

    /// Runs of `rounds` ratios from one continuing process: log ratio =
    /// a slow AR(1) drift (a disk's state, the host's load) plus round noise.
    fn reruns(seed: u64, runs: usize, rounds: usize) -> Vec<Vec<f64>> {
        let mut z = Noise(seed);
        let mut drift = 0.0;
        (0..runs)
            .map(|_| {
                (0..rounds)
                    .map(|_| {
                        drift = 0.7 * drift + 0.05 * z.normal();
                        (0.7 + drift + 0.05 * z.normal()).exp()
                    })
                    .collect()
            })
            .collect()
    }

    fn overlapping_pairs(iv: &[(f64, f64)]) -> (usize, usize) {
        let mut ok = 0;
        let mut all = 0;
        for i in 0..iv.len() {
            for j in i + 1..iv.len() {
                all += 1;
                ok += usize::from(iv[i].0 <= iv[j].1 && iv[j].0 <= iv[i].1);
            }
        }
        (ok, all)
    }

    #[test]
    fn twenty_reruns_intervals_overlap_where_the_median_interval_did_not() {
        for (seed, rounds) in [(1, 6), (2, 10), (3, 20)] {
            let runs = reruns(seed, 20, rounds);
            let rerun: Vec<(f64, f64)> = runs.iter().map(|r| rerun_interval(r)).collect();
            let within: Vec<(f64, f64)> = runs
                .iter()
                .map(|r| {
                    let mut s = r.clone();
                    s.sort_by(|x, y| x.total_cmp(y));
                    median_ci(&s, 0.95)
                })
                .collect();
            let (ok, all) = overlapping_pairs(&rerun);
            let (old, _) = overlapping_pairs(&within);
            assert!(
                ok * 100 >= all * 99,
                "seed {seed}, {rounds} rounds: {ok}/{all} overlap"
            );
            assert!(
                old < ok,
                "seed {seed}: the median's interval overlapped {old}/{all}"
            );
            // Not by being uselessly wide: under 1.6x end to end.
            let mut w: Vec<f64> = rerun.iter().map(|(l, h)| h / l).collect();
            w.sort_by(|x, y| x.total_cmp(y));
            assert!(median(&w) < 1.6, "seed {seed}: median width {}", median(&w));
        }
    }

    #[test]
    fn two_speeds_are_found_and_named() {
        // A disk at ~200 IOPS in three runs and ~15k IOPS in two.
        let m = modes(&[14900.0, 210.0, 15100.0, 190.0, 205.0]).unwrap();
        assert_eq!(m.slow, 205.0);
        assert_eq!(m.fast, 15000.0);
        assert_eq!((m.slow_runs, m.fast_runs), (vec![1, 3, 4], vec![0, 2]));
        // One slow run is an outlier, not a mode.
        assert_eq!(modes(&[100.0, 101.0, 99.0, 100.0, 20.0]), None);
        // Runs spread evenly over a wide range: noise, not two speeds.
        assert_eq!(modes(&[100.0, 130.0, 170.0, 220.0, 290.0]), None);
        // Two groups closer than 1.5x: not two speeds.
        assert_eq!(modes(&[100.0, 101.0, 140.0, 141.0]), None);
        assert_eq!(modes(&[1.0, 50.0, 1.0]), None, "too few runs");
    }

    #[test]
    fn the_two_speed_rule_rarely_fires_on_noise_and_finds_real_modes() {
        let mut z = Noise(42);
        // 1000 runs of 5 rounds with 15 % noise under load: few false alarms.
        let false_alarms = (0..1000)
            .filter(|_| {
                let r: Vec<f64> = (0..5).map(|_| (0.15 * z.normal()).exp() * 100.0).collect();
                modes(&r).is_some()
            })
            .count();
        assert!(
            false_alarms <= 20,
            "{false_alarms} of 1000 unimodal runs flagged"
        );
        // 1000 runs of 10 rounds where the disk is 20x faster in 3 to 7 of
        // them (5 % noise): found nearly always, with modes near 100 and 2000.
        let mut found = 0;
        for t in 0..1000 {
            let fast = 3 + t % 5;
            let r: Vec<f64> = (0..10)
                .map(|i| (0.05 * z.normal()).exp() * if i < fast { 2000.0 } else { 100.0 })
                .collect();
            if let Some(m) = modes(&r) {
                found += 1;
                assert!(
                    (m.slow / 100.0 - 1.0).abs() < 0.15 && (m.fast / 2000.0 - 1.0).abs() < 0.15,
                    "{m:?} from {r:?}"
                );
                assert_eq!(m.fast_runs, (0..fast).collect::<Vec<_>>());
            }
        }
        assert!(found >= 990, "{found} of 1000 two-speed runs found");
    }
}
