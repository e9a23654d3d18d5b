//! The HTML report's results table (figure, ±, ratio with its interval,
//! latency) and the warnings folded under it, with the rows they concern
//! marked.

use std::fmt::Write as _;

use super::ratio::{fmt_ratio, fmt_ratio_judged};
use super::render::fmt_value;
use super::report::BenchReport;
use crate::render::html_escape as esc;
use crate::units::fmt_ns;

/// Result flags that a warning explains; a row carrying one is marked.
const WARNED: [&str; 6] = [
    "above_memory_ceiling",
    "warm_not_cold",
    "not_durable_page_cache",
    "high_spread",
    "outliers",
    "cpu_contention",
];

/// "2.0× faster (1.9..2.1)": the ratio with its 95% interval.
fn ratio_cell(x: &super::report::Ratio) -> String {
    match (x.ratio_ci95_low, x.ratio_ci95_high) {
        (Some(lo), Some(hi)) => format!(
            "{} ({lo:.2}..{hi:.2})",
            fmt_ratio_judged(x.ratio, Some(lo), Some(hi))
        ),
        _ => fmt_ratio(x.ratio),
    }
}

pub fn results(r: &BenchReport) -> String {
    let mut s = String::from("<h2>Results</h2><table class=\"results\"><tr><th>workload</th>");
    for t in &r.targets {
        let _ = write!(s, "<th>{}</th><th>±</th>", esc(&t.label()));
    }
    let pair = super::ratio::ratio_pair(&r.targets);
    if pair.is_some() {
        s.push_str("<th>ratio (95% interval)</th>");
    }
    s.push_str("<th>latency p50 / p99</th></tr>");
    for w in &r.workloads {
        let mut flagged = Vec::new();
        let mut cells = String::new();
        let mut lat = Vec::new();
        for t in &r.targets {
            match r.result(&w.id, &t.path) {
                Some(x) => {
                    let marks: Vec<&String> = x
                        .flags
                        .iter()
                        .filter(|f| WARNED.contains(&f.as_str()))
                        .collect();
                    flagged.extend(marks.iter().map(|f| f.to_string()));
                    let _ = write!(
                        cells,
                        "<td>{}{}</td><td>{:.0}%</td>",
                        esc(&fmt_value(x, Some(w))),
                        if marks.is_empty() { "" } else { " ⚠" },
                        x.rsd_percent
                    );
                    if let Some(l) = &x.latency_ns {
                        lat.push(format!(
                            "{} / {}",
                            fmt_ns(l.p50 as f64),
                            fmt_ns(l.p99 as f64)
                        ));
                    }
                }
                None => cells.push_str("<td>-</td><td></td>"),
            }
        }
        if pair.is_some() {
            let ratio = r.ratios.iter().find(|x| x.workload == w.id);
            if ratio.is_some_and(|x| x.flags.iter().any(|f| f == "ratio_uncertain")) {
                flagged.push("ratio_uncertain".into());
            }
            let _ = write!(
                cells,
                "<td>{}</td>",
                esc(&ratio.map_or("-".into(), ratio_cell))
            );
        }
        flagged.sort();
        flagged.dedup();
        let _ = write!(
            s,
            "<tr{}><td>{}</td>{cells}<td>{}</td></tr>",
            if flagged.is_empty() {
                String::new()
            } else {
                format!(
                    " class=\"flagged\" data-flags=\"{}\"",
                    esc(&flagged.join(" "))
                )
            },
            esc(&w.label),
            esc(&lat.join(" · "))
        );
    }
    s.push_str("</table>");
    if !r.warnings.is_empty() {
        let _ = write!(
            s,
            "<details class=\"warnings\"><summary>{} warning{} (rows marked ⚠)</summary>",
            r.warnings.len(),
            if r.warnings.len() == 1 { "" } else { "s" }
        );
        for w in &r.warnings {
            let _ = write!(
                s,
                r#"<div class="warn"><b>{}</b>: {}</div>"#,
                esc(&w.code),
                esc(&w.message)
            );
        }
        s.push_str("</details>");
    }
    s
}
