//! `bench --compare A B`: two saved runs side by side, per workload and
//! target kind, with "same" where the figures' 95% intervals overlap.

use std::fmt::Write as _;
use std::path::Path;

use super::ratio::fmt_ratio;
use super::render::fmt_value;
use super::report::{BenchReport, BenchResult};
use super::stats::median_ci;
use crate::render::color::{Tone, paint};
use crate::render::html::page;
use crate::render::html_escape as esc;
use crate::units::fmt_rate;

/// One workload and target of A with its match in B.
struct Row {
    workload: String,
    target_a: String,
    value_a: String,
    target_b: String,
    value_b: String,
    verdict: String,
    tone: Tone,
}

/// The 95% interval of a result's median, from its per-run figures.
fn interval(x: &BenchResult) -> (f64, f64) {
    let mut s = x.samples.clone();
    s.retain(|v| v.is_finite());
    if s.is_empty() {
        return (x.min, x.max);
    }
    s.sort_by(f64::total_cmp);
    median_ci(&s, 0.95)
}

/// B against A: "same" when the two medians' intervals overlap (a run
/// compared with itself, or a difference within the noise), else the ratio
/// with the range the intervals allow.
fn verdict(x: &BenchResult, y: &BenchResult) -> (String, Tone) {
    let ((alo, ahi), (blo, bhi)) = (interval(x), interval(y));
    if x.median <= 0.0 || !x.median.is_finite() {
        return ("-".into(), Tone::Dim);
    }
    if blo <= ahi && alo <= bhi {
        return ("same (intervals overlap)".into(), Tone::Dim);
    }
    let r = y.median / x.median;
    let text = format!("{} ({:.2}..{:.2})", fmt_ratio(r), blo / ahi, bhi / alo);
    (text, if r > 1.0 { Tone::Good } else { Tone::Bad })
}

fn describe(r: &BenchReport, path: &str) -> String {
    r.targets
        .iter()
        .find(|t| t.path == path)
        .map_or_else(|| path.to_string(), |t| t.describe())
}

fn rows(a: &BenchReport, b: &BenchReport) -> Vec<Row> {
    let mut out = Vec::new();
    for x in &a.results {
        let w = a.workloads.iter().find(|w| w.id == x.workload);
        let y = b.result(&x.workload, &x.target).or_else(|| {
            // Targets often differ between runs (a moved /tmp, a new private
            // mount each run): match by kind and options.
            let kind = a
                .targets
                .iter()
                .find(|t| t.path == x.target)
                .map(|t| (t.ram_backed, t.options.clone()));
            b.results.iter().find(|r| {
                r.workload == x.workload
                    && b.targets
                        .iter()
                        .find(|t| t.path == r.target)
                        .map(|t| (t.ram_backed, t.options.clone()))
                        == kind
            })
        });
        let (value_b, target_b, (verdict, tone)) = match y {
            Some(y) => (fmt_value(y, w), describe(b, &y.target), verdict(x, y)),
            None => ("-".into(), String::new(), ("-".into(), Tone::Dim)),
        };
        out.push(Row {
            workload: x.label.clone(),
            target_a: describe(a, &x.target),
            value_a: fmt_value(x, w),
            target_b,
            value_b,
            verdict,
            tone,
        });
    }
    out
}

fn footer(a: &BenchReport, b: &BenchReport, seen: bool) -> String {
    let mut out = String::new();
    if !seen {
        out.push_str("no workload appears in both runs; were they run with different presets?\n");
    }
    if a.quick || b.quick {
        out.push_str(&format!(
            "{}: A or B is a --quick run\n",
            super::render::QUICK_NOTE
        ));
    }
    out.push_str(&format!(
        "memcpy ceiling: A {} / B {}; \"same\" = the 95% intervals of the two medians overlap\n",
        fmt_rate(a.ceiling.memcpy_bytes_per_s),
        fmt_rate(b.ceiling.memcpy_bytes_per_s)
    ));
    out
}

/// The terminal table.
pub fn text(a: &BenchReport, b: &BenchReport, pa: &Path, pb: &Path) -> String {
    let ha = format!("A: {}", pa.display());
    let hb = format!("B: {}", pb.display());
    let mut t = crate::render::table(&["workload", "target", &ha, &hb, "B vs A"]);
    let rows = rows(a, b);
    let seen = rows.iter().any(|r| !r.target_b.is_empty());
    for r in &rows {
        let bv = if r.target_b.is_empty() || r.target_b == r.target_a {
            r.value_b.clone()
        } else {
            format!("{} ({})", r.value_b, r.target_b)
        };
        t.add_row(vec![
            r.workload.clone(),
            r.target_a.clone(),
            r.value_a.clone(),
            bv,
            paint(r.tone, &r.verdict),
        ]);
    }
    crate::render::fit_to_terminal(&mut t);
    format!("{t}\n\n{}", footer(a, b, seen))
}

/// The same as an HTML page.
pub fn html(a: &BenchReport, b: &BenchReport, pa: &Path, pb: &Path) -> String {
    let rows = rows(a, b);
    let seen = rows.iter().any(|r| !r.target_b.is_empty());
    let mut s = String::new();
    let _ = write!(
        s,
        "<table class=\"compare\"><tr><th>workload</th><th>target</th><th>A: {}</th><th>B: {}</th><th>B vs A</th></tr>",
        esc(&pa.display().to_string()),
        esc(&pb.display().to_string())
    );
    for r in &rows {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td><td class=\"verdict-{:?}\">{}</td></tr>",
            esc(&r.workload),
            esc(&r.target_a),
            esc(&r.value_a),
            esc(&r.value_b),
            if r.target_b.is_empty() || r.target_b == r.target_a {
                String::new()
            } else {
                format!(" ({})", esc(&r.target_b))
            },
            r.tone,
            esc(&r.verdict)
        );
    }
    s.push_str("</table>");
    for line in footer(a, b, seen).lines() {
        let _ = write!(s, "<p>{}</p>", esc(line));
    }
    page("tmpfsctl bench --compare", &s)
}
