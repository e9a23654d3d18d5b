//! Which two targets a report compares, and how a ratio is written: used
//! by the suite (to compute and warn) and by every renderer.

use super::report::TargetInfo;

/// Which two targets the ratio column compares: the first RAM-backed one
/// against the first disk one; else the first against the second.
pub fn ratio_pair(targets: &[TargetInfo]) -> Option<(usize, usize)> {
    let ram = targets.iter().position(|t| t.ram_backed);
    let disk = targets.iter().position(|t| !t.ram_backed);
    match (ram, disk) {
        (Some(r), Some(d)) => Some((r, d)),
        _ if targets.len() >= 2 => Some((0, 1)),
        _ => None,
    }
}

/// "24.1× faster" or "3.0× slower"; "-" when there is no ratio.
pub fn fmt_ratio(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 1.0 {
        format!("{x:.1}× faster")
    } else {
        format!("{:.1}× slower", 1.0 / x)
    }
}
