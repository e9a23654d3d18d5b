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
}
