//! Which two targets a report compares, and how a ratio is written: used
//! by the suite (to compute and warn) and by every renderer.

use super::report::TargetInfo;

/// Which two targets the ratio column compares: the first RAM-backed one
/// against the first disk one (a real disk before a zram device, which is
/// RAM behind a block device); else the first against the second.
pub fn ratio_pair(targets: &[TargetInfo]) -> Option<(usize, usize)> {
    let ram = targets.iter().position(|t| t.ram_backed);
    let disk = targets
        .iter()
        .position(|t| !t.ram_backed && t.zram.is_none())
        .or_else(|| targets.iter().position(|t| !t.ram_backed));
    match (ram, disk) {
        (Some(r), Some(d)) => Some((r, d)),
        _ if targets.len() >= 2 => Some((0, 1)),
        _ => None,
    }
}

/// "24.1× faster" or "3.0× slower"; "-" when there is no ratio. Below
/// 1.1× two decimals ("1.04× faster"), so a small difference is not
/// rounded to a "1.0× faster" that reads as none; within 0.5% of 1, "no
/// difference".
pub fn fmt_ratio(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        return "-".into();
    }
    let (factor, word) = if x >= 1.0 {
        (x, "faster")
    } else {
        (1.0 / x, "slower")
    };
    if factor < 1.005 {
        "1.00× (no difference)".into()
    } else if factor < 1.095 {
        format!("{factor:.2}× {word}")
    } else {
        format!("{factor:.1}× {word}")
    }
}

/// What a 95% interval lets a reader conclude: it must lie wholly on one
/// side of 1 for "faster" or "slower" to be true.
pub fn interval_holds_one(low: Option<f64>, high: Option<f64>) -> bool {
    matches!((low, high), (Some(lo), Some(hi)) if lo.is_finite() && hi.is_finite() && lo <= 1.0 && hi >= 1.0)
}

/// The words a ratio earns: "same within the interval" when its 95%
/// interval holds 1 (as advise's huge= table says), else [`fmt_ratio`].
pub fn fmt_ratio_judged(x: f64, low: Option<f64>, high: Option<f64>) -> String {
    if interval_holds_one(low, high) {
        SAME.into()
    } else {
        fmt_ratio(x)
    }
}

pub const SAME: &str = "same within the interval";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_is_faster_only_when_its_interval_says_so() {
        // The interval of the report that printed "1.1× faster ±19% ?".
        assert_eq!(
            fmt_ratio_judged(1.1, Some(0.85), Some(1.16)),
            "same within the interval"
        );
        assert_eq!(fmt_ratio_judged(1.1, Some(1.02), Some(1.16)), "1.1× faster");
        assert_eq!(fmt_ratio_judged(0.5, Some(0.4), Some(0.9)), "2.0× slower");
        // No interval (unpaired runs): the ratio as measured.
        assert_eq!(fmt_ratio_judged(2.0, None, None), "2.0× faster");
        assert_eq!(fmt_ratio(1.04), "1.04× faster");
        assert_eq!(fmt_ratio(1.001), "1.00× (no difference)");
        assert_eq!(fmt_ratio(0.96), "1.04× slower");
        assert_eq!(fmt_ratio(24.13), "24.1× faster");
        assert_eq!(fmt_ratio(f64::NAN), "-");
    }
}
