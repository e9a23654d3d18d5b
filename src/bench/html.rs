//! Self-contained HTML report and standalone SVG charts: one bar chart per
//! workload (targets side by side, min..max whiskers, the memcpy ceiling as a
//! line), and for the iozone preset a heat map per operation and target.
//! No scripts, fonts or external assets: the file renders offline as is.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result};

use super::ratio::fmt_ratio;
use super::render::{fmt_value, ops_unit, summary_line};
use super::report::{BenchReport, BenchResult};
use super::workload::{Op, Workload, fmt_size};
use crate::render::html_escape as esc;
use crate::units::{fmt_bytes, fmt_rate};

const PALETTE: [&str; 6] = [
    "#d9480f", "#1971c2", "#2f9e44", "#9c36b5", "#e67700", "#495057",
];

pub use super::report::target_label as target_name;
use crate::render::html::page;
use crate::sys::atomic::AtomicWrite;

/// The ceiling in the workload's unit (ops/s for op workloads: bytes / bs).
fn ceiling_in_unit(r: &BenchReport, w: &Workload) -> Option<f64> {
    if w.reports_bytes() {
        Some(r.ceiling.memcpy_bytes_per_s)
    } else if matches!(w.op, Op::RandRead | Op::RandWrite) && w.bs_bytes > 0 {
        Some(r.ceiling.memcpy_bytes_per_s / w.bs_bytes as f64)
    } else {
        None
    }
}

fn fmt_in_unit(x: f64, w: &Workload) -> String {
    if w.reports_bytes() {
        fmt_rate(x)
    } else {
        super::render::fmt_ops(x, ops_unit(Some(w)))
    }
}

/// One horizontal bar chart: a bar per target with a min..max whisker.
pub fn bar_chart(r: &BenchReport, w: &Workload) -> String {
    let rows: Vec<(usize, &BenchResult)> = r
        .targets
        .iter()
        .enumerate()
        .filter_map(|(i, t)| r.result(&w.id, &t.path).map(|x| (i, x)))
        .collect();
    let (left, width, bar_h, gap, top) = (230.0, 760.0, 26.0, 10.0, 34.0);
    let plot = width - left - 150.0;
    let height = top + rows.len() as f64 * (bar_h + gap) + 30.0;
    let vmax = rows
        .iter()
        .map(|(_, x)| x.max.max(x.median))
        .fold(0.0_f64, f64::max);
    let ceiling = ceiling_in_unit(r, w);
    // Draw the ceiling on the same linear scale when it does not squash the bars.
    let ceiling_on_scale = ceiling.filter(|c| *c <= vmax * 3.0);
    let scale_max = ceiling_on_scale.unwrap_or(0.0).max(vmax).max(1e-9) * 1.05;
    let lo = rows
        .iter()
        .map(|(_, x)| x.min.min(x.median))
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    // Figures more than 10x apart go on a log axis, or the slow bar is a sliver.
    let log = super::chart::wants_log(lo, vmax);
    let floor = lo / 2.0;
    let x = |v: f64| {
        if log {
            left + (v.max(floor) / floor).log10() / (scale_max / floor).log10() * plot
        } else {
            left + v / scale_max * plot
        }
    };
    let mut s = String::new();
    let mut label_end: f64 = 0.0;
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-workload="{id}" data-scale="{scale}" width="@W@" height="{height}" viewBox="0 0 @W@ {height}" role="img" aria-label="{label}">"#,
        id = esc(&w.id),
        label = esc(&w.label),
        scale = if log { "log" } else { "linear" },
    );
    let _ = write!(
        s,
        r#"<style>text{{font:12px sans-serif;fill:#212529}} .t{{font-weight:bold;font-size:13px}}</style><text class="t" x="4" y="18">{}{}</text>"#,
        esc(&w.label),
        if log { " (log scale)" } else { "" }
    );
    for (row, (i, res)) in rows.iter().enumerate() {
        let y = top + row as f64 * (bar_h + gap);
        let color = PALETTE[i % PALETTE.len()];
        let _ = write!(
            s,
            r#"<text x="{tx}" y="{ty}" text-anchor="end">{short}</text><rect class="bar" data-target="{path}" x="{left}" y="{y}" width="{bw:.1}" height="{bar_h}" fill="{color}"><title>{name}: median {val}, min {min}, max {max}, {runs} runs</title></rect>"#,
            tx = left - 6.0,
            ty = y + bar_h * 0.65,
            name = esc(&target_name(r, *i)),
            short = esc(&super::chart::fit_end(
                &target_name(r, *i),
                ((left - 10.0) / 7.5) as usize
            )),
            path = esc(&res.target),
            bw = (x(res.median) - left).max(1.0),
            val = esc(&fmt_value(res, Some(w))),
            min = esc(&fmt_in_unit(res.min, w)),
            max = esc(&fmt_in_unit(res.max, w)),
            runs = res.runs,
        );
        // min..max whisker
        let wy = y + bar_h / 2.0;
        let _ = write!(
            s,
            r##"<line x1="{:.1}" x2="{:.1}" y1="{wy}" y2="{wy}" stroke="#212529" stroke-width="1.5"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#212529"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#212529"/>"##,
            x(res.min),
            x(res.max),
            x(res.min),
            x(res.min),
            wy - 5.0,
            wy + 5.0,
            x(res.max),
            x(res.max),
            wy - 5.0,
            wy + 5.0,
        );
        let mut label = fmt_value(res, Some(w));
        if res.flags.iter().any(|f| f == "above_memory_ceiling") {
            label.push_str(" (above ceiling!)");
        }
        if res.cache_state == "warm" {
            label.push_str(" (warm)");
        }
        // Right of the whisker, or right of the ceiling line when the label
        // would sit across it: never inside the bar, where the whisker runs.
        // The chart widens for a label that ends past its right edge.
        let est = label.chars().count() as f64 * 12.0 * 0.62 + 4.0;
        let mut lx = x(res.max.max(res.median)) + 6.0;
        if let Some(cx) = ceiling_on_scale.map(x)
            && cx > lx - 3.0
            && cx < lx + est + 3.0
        {
            lx = cx + 6.0;
        }
        let (anchor, fill) = ("start", "#212529");
        label_end = label_end.max(lx + est);
        let _ = write!(
            s,
            r#"<text x="{lx:.1}" y="{:.1}" text-anchor="{anchor}" style="fill:{fill}">{}</text>"#,
            y + bar_h * 0.65,
            esc(&label)
        );
    }
    let bottom = top + rows.len() as f64 * (bar_h + gap);
    match (ceiling, ceiling_on_scale) {
        (Some(c), Some(_)) => {
            let _ = write!(
                s,
                r##"<line class="ceiling" x1="{cx:.1}" x2="{cx:.1}" y1="{y1}" y2="{bottom}" stroke="#c92a2a" stroke-width="2" stroke-dasharray="6 4"/><text x="{cx:.1}" y="{ty}" text-anchor="end" style="fill:#c92a2a">memcpy ceiling {v}</text>"##,
                cx = x(c),
                y1 = top - 6.0,
                ty = bottom + 16.0,
                v = esc(&fmt_in_unit(c, w))
            );
        }
        (Some(c), None) => {
            let _ = write!(
                s,
                r##"<text class="ceiling-note" x="{left}" y="{ty}" style="fill:#c92a2a">memcpy ceiling {v} (off this scale)</text>"##,
                ty = bottom + 16.0,
                v = esc(&fmt_in_unit(c, w))
            );
        }
        _ => {}
    }
    let full = width.max((label_end + 4.0).ceil());
    if let Some(rt) = r.ratios.iter().find(|x| x.workload == w.id) {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="18" text-anchor="end">{}</text>"#,
            full - 4.0,
            esc(&fmt_ratio(rt.ratio))
        );
    }
    s.push_str("</svg>");
    s.replace("@W@", &format!("{full}"))
}

/// The iozone operations, in the order the heat maps show them.
const IOZONE_OPS: [&str; 6] = [
    "write",
    "rewrite",
    "read",
    "reread",
    "randread",
    "randwrite",
];

/// iozone workloads parsed back into (operation, file size, record size).
fn iozone_cells(r: &BenchReport) -> Vec<(&'static str, &Workload)> {
    r.workloads
        .iter()
        .filter_map(|w| {
            let rest = w.id.strip_prefix("iozone-")?;
            let op = IOZONE_OPS
                .iter()
                .find(|o| rest.starts_with(&format!("{o}-")))?;
            Some((*op, w))
        })
        .collect()
}

fn heat_color(f: f64) -> String {
    // Light yellow (slow) to dark blue (fast), on a log scale across all cells.
    let f = f.clamp(0.0, 1.0);
    let (r0, g0, b0) = (255.0, 243.0, 191.0);
    let (r1, g1, b1) = (24.0, 100.0, 171.0);
    format!(
        "rgb({:.0},{:.0},{:.0})",
        r0 + (r1 - r0) * f,
        g0 + (g1 - g0) * f,
        b0 + (b1 - b0) * f
    )
}

/// One heat map per iozone operation and target: rows file sizes, columns record sizes.
pub fn heatmaps(r: &BenchReport) -> Vec<(String, String)> {
    let cells = iozone_cells(r);
    if cells.is_empty() {
        return Vec::new();
    }
    let vals: Vec<f64> = r
        .results
        .iter()
        .filter(|x| x.workload.starts_with("iozone-") && x.median > 0.0)
        .map(|x| x.median.log10())
        .collect();
    let (lo, hi) = (
        vals.iter().copied().fold(f64::INFINITY, f64::min),
        vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let mut sizes: Vec<u64> = cells.iter().map(|(_, w)| w.size_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut recs: Vec<u64> = cells.iter().map(|(_, w)| w.bs_bytes).collect();
    recs.sort_unstable();
    recs.dedup();
    let mut out = Vec::new();
    for op in IOZONE_OPS {
        for (ti, t) in r.targets.iter().enumerate() {
            let (cw, ch, left, top) = (120.0, 34.0, 80.0, 44.0);
            let width = left + cw * recs.len() as f64 + 10.0;
            let height = top + ch * sizes.len() as f64 + 10.0;
            let mut s = String::new();
            let _ = write!(
                s,
                r#"<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" data-op="{op}" width="{width}" height="{height}" viewBox="0 0 {width} {height}"><style>text{{font:11px sans-serif;fill:#212529}} .t{{font-weight:bold;font-size:13px}} .tier{{font-size:9px}}</style><text class="t" x="4" y="16">iozone {op}: {name}</text>"#,
                name = esc(&super::chart::fit_end(
                    &target_name(r, ti),
                    ((width - 8.0) / 8.5) as usize - op.len() - 8
                ))
            );
            for (ci, rec) in recs.iter().enumerate() {
                let _ = write!(
                    s,
                    r#"<text x="{:.1}" y="{}" text-anchor="middle">rec {}</text>"#,
                    left + cw * (ci as f64 + 0.5),
                    top - 6.0,
                    fmt_size(*rec)
                );
            }
            for (ri, size) in sizes.iter().enumerate() {
                let y = top + ch * ri as f64;
                let _ = write!(
                    s,
                    r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
                    left - 6.0,
                    y + ch * 0.6,
                    fmt_size(*size)
                );
                for (ci, rec) in recs.iter().enumerate() {
                    let x = left + cw * ci as f64;
                    let Some((_, w)) = cells
                        .iter()
                        .find(|(o, w)| *o == op && w.size_bytes == *size && w.bs_bytes == *rec)
                    else {
                        continue;
                    };
                    let Some(res) = r.result(&w.id, &t.path) else {
                        continue;
                    };
                    let f = if hi > lo {
                        (res.median.log10() - lo) / (hi - lo)
                    } else {
                        0.5
                    };
                    let _ = write!(
                        s,
                        r##"<rect class="cell" x="{x}" y="{y}" width="{cw}" height="{ch}" fill="{fill}" stroke="#fff"><title>{label}: {val} ({tier})</title></rect><text x="{tx:.1}" y="{ty:.1}" text-anchor="middle" style="fill:{tc}">{val}</text><text class="tier" x="{tx:.1}" y="{ty2:.1}" text-anchor="middle" style="fill:{tc}">{tier}</text>"##,
                        fill = heat_color(f),
                        label = esc(&w.label),
                        val = esc(&fmt_value(res, Some(w))),
                        tier = esc(&res.tier.replace('-', " ")),
                        tx = x + cw / 2.0,
                        ty = y + ch * 0.45,
                        ty2 = y + ch * 0.8,
                        tc = if f > 0.55 { "#fff" } else { "#212529" },
                    );
                }
            }
            s.push_str("</svg>");
            out.push((format!("iozone-{op}-t{ti}"), s));
        }
    }
    out
}

/// The iozone matrix as one list of bars per operation: file size, record
/// size, then target.
pub fn iozone_bars(r: &BenchReport) -> Vec<(&'static str, Vec<super::chart::Bar<'_>>)> {
    let cells = iozone_cells(r);
    let mut out = Vec::new();
    for op in IOZONE_OPS {
        let mut bars = Vec::new();
        for (_, w) in cells.iter().filter(|(o, _)| *o == op) {
            for (ti, t) in r.targets.iter().enumerate() {
                if let Some(res) = r.result(&w.id, &t.path) {
                    bars.push(super::chart::Bar {
                        label: format!(
                            "{} file, rec {}",
                            fmt_size(w.size_bytes),
                            fmt_size(w.bs_bytes)
                        ),
                        target: ti,
                        result: res,
                        workload: w,
                    });
                }
            }
        }
        if !bars.is_empty() {
            out.push((op, bars));
        }
    }
    out
}

/// The whole report as one HTML document.
pub fn html(r: &BenchReport) -> String {
    let mut s = String::new();
    if let Some(q) = super::render::quick_line(r) {
        let _ = write!(
            s,
            r#"<p class="warn quick" id="quick"><b>{}</b></p>"#,
            esc(&q)
        );
    }
    let _ = write!(
        s,
        "<p>kernel {} · {} CPUs · {} RAM · last-level cache {} · {}</p>",
        esc(&r.host.kernel),
        r.host.cpus,
        fmt_bytes(r.host.mem_total_bytes),
        r.host.llc_bytes.map_or("?".into(), fmt_bytes),
        esc(&summary_line(r))
    );
    s.push_str(&super::html_table::results(r));
    s.push_str("<h2>Targets</h2><table><tr><th>target</th><th>filesystem</th><th>RAM-backed</th><th>free</th><th>needed</th></tr>");
    for (i, t) in r.targets.iter().enumerate() {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&target_name(r, i)),
            esc(&t.fstype),
            if t.ram_backed { "yes" } else { "no" },
            fmt_bytes(t.free_bytes),
            fmt_bytes(t.need_bytes)
        );
    }
    let _ = write!(
        s,
        "</table><p><b>Memory ceiling</b> (bytes copied per second, buffer {}): memcpy one thread {}, all {} threads {}.</p>",
        fmt_bytes(r.ceiling.buffer_bytes),
        fmt_rate(r.ceiling.memcpy_bytes_per_s),
        r.ceiling.threads,
        fmt_rate(r.ceiling.all_core_copy_bytes_per_s)
    );
    if let (Some(one), Some(all)) = (
        r.ceiling.stream_triad_bytes_per_s,
        r.ceiling.all_core_stream_triad_bytes_per_s,
    ) {
        let _ = write!(
            s,
            "<p><b>STREAM Triad</b> (a = b + q·c; 24 bytes per element counted the STREAM way): one thread {}, all threads {}.</p>",
            fmt_rate(one),
            fmt_rate(all)
        );
    }
    let heat = heatmaps(r);
    if !heat.is_empty() {
        s.push_str("<h2>iozone matrix</h2><p>Colour: throughput on a log scale (light = slow, dark = fast). Under each value: where the data sat (cpu cache, llc, ram, page cache, device).</p><div class=\"grid\">");
        for (_, svg) in &heat {
            let _ = write!(s, "<figure>{svg}</figure>");
        }
        s.push_str("</div>");
    }
    if !heat.is_empty() {
        s.push_str("<h2>iozone bar charts</h2><p>One chart per operation: a bar per file size, record size and target (median).</p>");
        for (op, bars) in iozone_bars(r) {
            let _ = write!(
                s,
                "<figure>{}</figure>",
                super::chart::bars(r, &format!("iozone {op}"), &bars)
            );
        }
    }
    s.push_str("<h2>Workloads</h2><p>Bars: median; whiskers: min..max of the runs; dashed red line: memcpy ceiling of this run.</p>");
    for w in &r.workloads {
        if w.id.starts_with("iozone-") {
            continue;
        }
        let _ = write!(s, "<figure>{}</figure>", bar_chart(r, w));
    }
    page("tmpfsctl bench", &s)
}

/// A bar chart per workload, side by side, for another command's page.
pub fn charts(r: &BenchReport) -> String {
    let mut s = String::from(r#"<div class="grid">"#);
    for w in &r.workloads {
        s.push_str(&bar_chart(r, w));
    }
    s.push_str("</div>");
    s
}

/// Each chart as its own SVG file in `dir` (created if missing).
pub fn write_svgs(r: &BenchReport, dir: &Path) -> Result<usize> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--svg {}: cannot create the directory", dir.display()))?;
    let mut n = 0;
    for w in &r.workloads {
        if w.id.starts_with("iozone-") {
            continue;
        }
        let p = dir.join(format!("{}.svg", w.id));
        AtomicWrite::report("--svg").write(&p, bar_chart(r, w).as_bytes())?;
        n += 1;
    }
    for (op, bars) in iozone_bars(r) {
        let p = dir.join(format!("iozone-{op}-bars.svg"));
        let svg = super::chart::bars(r, &format!("iozone {op}"), &bars);
        AtomicWrite::report("--svg").write(&p, svg.as_bytes())?;
        n += 1;
    }
    for (name, svg) in heatmaps(r) {
        let p = dir.join(format!("{name}.svg"));
        AtomicWrite::report("--svg").write(&p, svg.as_bytes())?;
        n += 1;
    }
    Ok(n)
}
