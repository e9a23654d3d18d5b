//! A horizontal bar chart over many rows (one per workload cell and target),
//! on a log axis when the figures span more than 10×, so a 7.5k IOPS bar is
//! not a sliver beside a 10 GiB/s one. Used for the iozone matrix, one chart
//! per operation.

use std::fmt::Write as _;

use super::report::{BenchReport, BenchResult};
use super::workload::Workload;
use crate::render::html_escape as esc;

/// One bar: its label, the target's colour index, the result and its workload.
pub struct Bar<'a> {
    pub label: String,
    pub target: usize,
    pub result: &'a BenchResult,
    pub workload: &'a Workload,
}

/// Whether figures from `lo` to `hi` need a log axis to all stay readable.
pub fn wants_log(lo: f64, hi: f64) -> bool {
    lo > 0.0 && hi / lo > 10.0
}

/// `s` cut to at most `max` characters, keeping its end (a target's
/// "second (tmpfs)" tells more than its "/tmp/..." start) after an ellipsis.
/// Chart labels are fitted so that none runs off the chart; the full text
/// stays in the bar's tooltip.
pub fn fit_end(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let tail: String = s.chars().skip(n + 1 - max.max(2)).collect();
    format!("…{tail}")
}

/// The chart as an SVG element with class "chart" and one `rect.bar` per bar.
pub fn bars(r: &BenchReport, title: &str, bars: &[Bar]) -> String {
    const PALETTE: [&str; 6] = [
        "#d9480f", "#1971c2", "#2f9e44", "#9c36b5", "#e67700", "#495057",
    ];
    let (left, width, bar_h, gap, top) = (300.0, 1000.0, 14.0, 3.0, 30.0);
    let plot = width - left - 130.0;
    let height = top + bars.len() as f64 * (bar_h + gap) + 24.0;
    let vals: Vec<f64> = bars
        .iter()
        .map(|b| b.result.median)
        .filter(|v| *v > 0.0 && v.is_finite())
        .collect();
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(0.0_f64, f64::max).max(1e-9);
    let log = wants_log(lo, hi);
    // On a log axis the shortest bar still shows a tenth of the plot.
    let floor = lo / 10f64.powf(((hi / lo).log10() / 9.0).max(0.1));
    let x = |v: f64| -> f64 {
        if log {
            ((v.max(floor) / floor).log10() / (hi * 1.05 / floor).log10()) * plot
        } else {
            v / (hi * 1.05) * plot
        }
    };
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-scale="{scale}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{t}"><style>text{{font:12px sans-serif;fill:#212529}} .t{{font-weight:bold;font-size:13px}}</style><text class="t" x="4" y="18">{t}{note}</text>"#,
        scale = if log { "log" } else { "linear" },
        t = esc(title),
        note = if log { " (log scale)" } else { "" },
    );
    // Legend: which colour is which target.
    let mut shown: Vec<usize> = bars.iter().map(|b| b.target).collect();
    shown.sort_unstable();
    shown.dedup();
    let mut lx = left;
    for ti in shown {
        let name = fit_end(&super::report::target_label(r, ti), 40);
        let _ = write!(
            s,
            r#"<rect class="legend" x="{lx:.1}" y="8" width="10" height="10" fill="{c}"/><text x="{tx:.1}" y="17">{n}</text>"#,
            c = PALETTE[ti % PALETTE.len()],
            tx = lx + 14.0,
            n = esc(&name)
        );
        lx += 24.0 + 7.5 * name.chars().count() as f64;
    }
    for (i, b) in bars.iter().enumerate() {
        let y = top + i as f64 * (bar_h + gap);
        let w = x(b.result.median).max(1.0);
        let val = super::render::fmt_value(b.result, Some(b.workload));
        let name = super::report::target_label(r, b.target);
        let _ = write!(
            s,
            r#"<text x="{tx}" y="{ty:.1}" text-anchor="end">{label}</text><rect class="bar" data-target="{path}" x="{left}" y="{y:.1}" width="{w:.1}" height="{bar_h}" fill="{c}"><title>{label} on {name}: {val}</title></rect><text x="{vx:.1}" y="{ty:.1}">{val}</text>"#,
            tx = left - 6.0,
            ty = y + bar_h * 0.8,
            label = esc(&fit_end(&b.label, ((left - 10.0) / 7.5) as usize)),
            path = esc(&b.result.target),
            c = PALETTE[b.target % PALETTE.len()],
            name = esc(&name),
            val = esc(&val),
            vx = left + w + 4.0,
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn log_axis_only_beyond_ten_times() {
        assert!(!super::wants_log(1.0, 10.0));
        assert!(super::wants_log(7.5e3, 1e10));
        assert!(!super::wants_log(0.0, 5.0));
    }

    #[test]
    fn long_labels_keep_their_end() {
        assert_eq!(super::fit_end("short", 10), "short");
        assert_eq!(super::fit_end("/tmp/abc/second (tmpfs)", 10), "…d (tmpfs)");
        assert_eq!(
            super::fit_end("/tmp/abc/second (tmpfs)", 10)
                .chars()
                .count(),
            10
        );
    }
}
