//! Renderers of a [`BenchReport`]: terminal table, CSV, Markdown.
//! Each is a pure function from the report to text.

use super::ratio::{SAME, fmt_ratio, interval_holds_one, ratio_pair};
use super::report::{BenchReport, BenchResult};
use super::workload::{Op, Workload};
use crate::units::{fmt_bytes, fmt_ns, fmt_rate};

/// "12.3k IOPS", "1.52M ops/s".
pub fn fmt_ops(x: f64, unit: &str) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    if x >= 1e6 {
        format!("{:.2}M {unit}", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1}k {unit}", x / 1e3)
    } else if x >= 100.0 {
        format!("{x:.0} {unit}")
    } else {
        format!("{x:.1} {unit}")
    }
}

pub fn ops_unit(w: Option<&Workload>) -> &'static str {
    match w.map(|w| w.op) {
        Some(Op::RandRead | Op::RandWrite) => "IOPS",
        Some(Op::SmallFiles) => "files/s",
        _ => "ops/s",
    }
}

/// The median in readable units.
pub fn fmt_value(r: &BenchResult, w: Option<&Workload>) -> String {
    if r.unit == "bytes_per_s" {
        fmt_rate(r.median)
    } else {
        fmt_ops(r.median, ops_unit(w))
    }
}

fn cell(r: &BenchResult, w: Option<&Workload>) -> String {
    let mut s = format!("{} ±{:.0}%", fmt_value(r, w), r.rsd_percent);
    for (flag, tag) in [
        ("above_memory_ceiling", " >ceiling!"),
        ("warm_not_cold", " (warm!)"),
        ("not_durable_page_cache", " (page cache)"),
    ] {
        if r.flags.iter().any(|f| f == flag) {
            s.push_str(tag);
        }
    }
    s
}

fn target_header(r: &BenchReport, i: usize) -> String {
    let t = &r.targets[i];
    if t.private_mount {
        return format!("{} (RAM)", t.label());
    }
    format!(
        "{} ({}{})",
        t.path,
        t.fstype,
        if t.ram_backed { ", RAM" } else { "" }
    )
}

pub fn ratio_header(r: &BenchReport) -> Option<String> {
    let (a, b) = ratio_pair(&r.targets)?;
    let name = |i: usize| {
        let t = &r.targets[i];
        if t.ram_backed && !r.targets[if i == a { b } else { a }].ram_backed && !t.private_mount {
            t.fstype.clone()
        } else {
            t.label()
        }
    };
    Some(format!("{} vs {}", name(a), name(b)))
}

/// The ratio cell: "24.1× faster ±6%" (± = the wider side of the 95%
/// interval of the paired per-run ratio; above 100 % the interval's ends,
/// "[2.62..33.90]"), with "?" when that exceeds 10%; "bimodal: 3398.3×
/// faster or 45.2× faster ?" when a target changed speed during the run;
/// "same within the interval (0.85..1.16)" when the interval holds 1, since
/// then neither target is shown faster.
pub fn fmt_ratio_cell(x: &super::report::Ratio) -> String {
    // Two speeds: a single ratio and interval would describe neither.
    if let Some(b) = &x.bimodal {
        return format!(
            "bimodal: {} or {} ?",
            fmt_ratio(b.ratio_when_slow),
            fmt_ratio(b.ratio_when_fast)
        );
    }
    if let (true, Some(lo), Some(hi)) = (
        interval_holds_one(x.ratio_ci95_low, x.ratio_ci95_high),
        x.ratio_ci95_low,
        x.ratio_ci95_high,
    ) {
        return format!("{SAME} ({lo:.2}..{hi:.2})");
    }
    let mut s = fmt_ratio(x.ratio);
    match (
        x.ratio_uncertainty_percent.filter(|u| u.is_finite()),
        x.ratio_ci95_low,
        x.ratio_ci95_high,
    ) {
        // A symmetric ± above 100 % would hide how lopsided such an
        // interval is (2.6×..33.9× is not "±985 %"): its ends instead.
        (Some(u), Some(lo), Some(hi)) if u > 100.0 => {
            s.push_str(&format!(" [{lo:.2}..{hi:.2}]"));
        }
        (Some(u), _, _) if u <= 100.0 => s.push_str(&format!(" ±{u:.0}%")),
        _ => {}
    }
    if x.flags.iter().any(|f| f == "ratio_uncertain") {
        s.push_str(" ?");
    }
    s
}

/// The ratio cell coloured by what it says: uncertain, faster, slower.
fn paint_ratio(cell: &str) -> String {
    use crate::render::color::{Tone, paint};
    let tone = if cell.ends_with('?') {
        Tone::Warn
    } else if cell.contains("faster") {
        Tone::Good
    } else if cell.contains("slower") {
        Tone::Bad
    } else {
        return cell.to_string();
    };
    paint(tone, cell)
}

/// Rows = workloads, columns = targets, then the ratio, then the ceiling row.
fn rows(r: &BenchReport) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["workload".to_string()];
    header.extend((0..r.targets.len()).map(|i| target_header(r, i)));
    let rh = ratio_header(r);
    if let Some(h) = &rh {
        header.push(h.clone());
    }
    let mut rows = Vec::new();
    for w in &r.workloads {
        let mut row = vec![w.label.clone()];
        for t in &r.targets {
            row.push(
                r.result(&w.id, &t.path)
                    .map_or("-".into(), |x| cell(x, Some(w))),
            );
        }
        if rh.is_some() {
            row.push(
                r.ratios
                    .iter()
                    .find(|x| x.workload == w.id)
                    .map_or("-".into(), fmt_ratio_cell),
            );
        }
        rows.push(row);
    }
    let mut ceil = vec!["memory ceiling: memcpy, bytes copied (1 thread / all cores)".to_string()];
    ceil.push(format!(
        "{} / {}",
        fmt_rate(r.ceiling.memcpy_bytes_per_s),
        fmt_rate(r.ceiling.all_core_copy_bytes_per_s)
    ));
    while ceil.len() < header.len() {
        ceil.push(String::new());
    }
    rows.push(ceil);
    if let (Some(one), Some(all)) = (
        r.ceiling.stream_triad_bytes_per_s,
        r.ceiling.all_core_stream_triad_bytes_per_s,
    ) {
        let mut triad = vec![
            "STREAM Triad, 24 bytes per element counted the STREAM way (1 thread / all cores)"
                .to_string(),
            format!("{} / {}", fmt_rate(one), fmt_rate(all)),
        ];
        triad.resize(header.len(), String::new());
        rows.push(triad);
    }
    (header, rows)
}

fn latency_rows(r: &BenchReport) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["latency p50 / p99 / p99.9".to_string()];
    header.extend(r.targets.iter().map(|t| t.label()));
    let mut rows = Vec::new();
    for w in &r.workloads {
        let mut row = vec![w.label.clone()];
        let mut any = false;
        for t in &r.targets {
            row.push(
                r.result(&w.id, &t.path)
                    .and_then(|x| x.latency_ns.as_ref())
                    .map_or("-".into(), |l| {
                        any = true;
                        format!(
                            "{} / {} / {}",
                            fmt_ns(l.p50 as f64),
                            fmt_ns(l.p99 as f64),
                            fmt_ns(l.p999 as f64)
                        )
                    }),
            );
        }
        if any {
            rows.push(row);
        }
    }
    (header, rows)
}

/// The RAM each zram target's data cost, per workload: data written
/// (`orig_data_size`, file-system metadata included), RAM held
/// (`mem_used_total`) and data per byte of RAM. Empty without zram targets.
fn zram_rows(r: &BenchReport) -> (Vec<String>, Vec<Vec<String>>) {
    let zt: Vec<_> = r.targets.iter().filter(|t| t.zram.is_some()).collect();
    let mut header =
        vec!["zram: data written / RAM it costs (mem_used_total) = data per RAM byte".to_string()];
    header.extend(zt.iter().map(|t| t.label()));
    let mut rows = Vec::new();
    for w in &r.workloads {
        let mut row = vec![w.label.clone()];
        let mut any = false;
        for t in &zt {
            row.push(
                r.result(&w.id, &t.path)
                    .and_then(|x| x.zram.as_ref())
                    .map_or("-".into(), |z| {
                        any = true;
                        format!(
                            "{} / {} = {}",
                            fmt_bytes(z.orig_data_bytes),
                            fmt_bytes(z.mem_used_total_bytes),
                            z.data_per_ram_ratio
                                .map_or("-".into(), |x| format!("{x:.2}x"))
                        )
                    }),
            );
        }
        if any {
            rows.push(row);
        }
    }
    (header, rows)
}

/// How every output of a `--quick` report marks its figures.
pub const QUICK_NOTE: &str = "quick run: figures not meaningful";

/// The line that heads a `--quick` report, saying why its figures are not meaningful.
pub fn quick_line(r: &BenchReport) -> Option<String> {
    r.quick.then(|| {
        format!("{QUICK_NOTE} (--quick: tiny files, no minimum time; a smoke test that the targets work, not a measurement)")
    })
}

pub fn summary_line(r: &BenchReport) -> String {
    if r.quick {
        return format!(
            "{QUICK_NOTE}: {} runs per cell on tiny files; rerun without --quick to measure; units are binary (MiB = 2^20 bytes); took {:.1} s",
            r.min_runs,
            r.elapsed_ns as f64 / 1e9
        );
    }
    let size = r
        .workloads
        .iter()
        .filter(|w| w.reports_bytes())
        .map(|w| w.size_bytes)
        .max();
    format!(
        "median of >= {} runs per cell and >= {:.1} s on the slower target (± is the robust relative std dev); {}{}units are binary (MiB = 2^20 bytes); took {:.1} s",
        r.min_runs,
        r.min_time_ns as f64 / 1e9,
        size.map_or(String::new(), |s| format!(
            "streaming files of {}; ",
            fmt_bytes(s)
        )),
        if r.ratios.iter().any(|x| x.paired) {
            "targets ran in alternation and the ratio is the median of per-run ratios, running-order effect taken out (± = 95% interval, [lo..hi] where it is wider than ±100%, ? = wider than 10%); "
        } else {
            ""
        },
        r.elapsed_ns as f64 / 1e9
    )
}

/// The terminal table (plus the latency table).
pub fn table(r: &BenchReport) -> String {
    let (h, rs) = rows(r);
    let hs: Vec<&str> = h.iter().map(|s| s.as_str()).collect();
    let mut t = crate::render::table(&hs);
    let ratio_col = ratio_header(r).map(|_| r.targets.len() + 1);
    for mut row in rs {
        if let Some(cell) = ratio_col.and_then(|i| row.get_mut(i)) {
            *cell = paint_ratio(cell);
        }
        t.add_row(row);
    }
    crate::render::fit_to_terminal(&mut t);
    let (lh, lrs) = latency_rows(r);
    let para = |text: &str| crate::render::paragraph("", text);
    let mut out = quick_line(r).map_or(String::new(), |q| format!("{}\n", para(&q)));
    out.push_str(&format!("{t}\n"));
    if !lrs.is_empty() {
        let hs: Vec<&str> = lh.iter().map(|s| s.as_str()).collect();
        let mut lt = crate::render::table(&hs);
        for row in lrs {
            lt.add_row(row);
        }
        crate::render::fit_to_terminal(&mut lt);
        out.push_str(&format!("\n{lt}\n"));
    }
    let (zh, zrs) = zram_rows(r);
    if !zrs.is_empty() {
        let hs: Vec<&str> = zh.iter().map(|s| s.as_str()).collect();
        let mut zt = crate::render::table(&hs);
        for row in zrs {
            zt.add_row(row);
        }
        crate::render::fit_to_terminal(&mut zt);
        out.push_str(&format!("\n{zt}\n"));
    }
    out.push_str(&format!("\n{}\n", para(&summary_line(r))));
    for w in r
        .warnings
        .iter()
        .filter(|w| super::notes::CODES.contains(&w.code.as_str()))
    {
        out.push_str(&format!("\n{}\n", para(&format!("why: {}", w.message))));
    }
    out
}

pub fn markdown(r: &BenchReport) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = quick_line(r).map_or(String::new(), |q| format!("**{q}**\n\n"));
    for (h, rs) in [rows(r), latency_rows(r), zram_rows(r)] {
        if rs.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "| {} |\n",
            h.iter().map(|s| esc(s)).collect::<Vec<_>>().join(" | ")
        ));
        out.push_str(&format!("|{}\n", "---|".repeat(h.len())));
        for row in rs {
            out.push_str(&format!(
                "| {} |\n",
                row.iter().map(|s| esc(s)).collect::<Vec<_>>().join(" | ")
            ));
        }
        out.push('\n');
    }
    out.push_str(&format!("{}\n", summary_line(r)));
    for w in &r.warnings {
        out.push_str(&format!("\n> **{}**: {}\n", w.code, esc(&w.message)));
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn csv(r: &BenchReport) -> String {
    let mut out = String::from(
        "workload,label,target,fstype,ram_backed,unit,median,min,max,spread_percent,runs,throughput_bytes_per_s,ops_per_s,p50_ns,p99_ns,p999_ns,cache_state,ceiling_fraction,flags\n",
    );
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.3}"));
    for x in &r.results {
        let t = r.targets.iter().find(|t| t.path == x.target);
        let l = x.latency_ns.as_ref();
        let fields = [
            x.workload.clone(),
            x.label.clone(),
            x.target.clone(),
            t.map_or(String::new(), |t| t.fstype.clone()),
            t.map_or(String::new(), |t| t.ram_backed.to_string()),
            x.unit.clone(),
            format!("{:.3}", x.median),
            format!("{:.3}", x.min),
            format!("{:.3}", x.max),
            format!("{:.2}", x.spread_percent),
            x.runs.to_string(),
            opt(x.throughput_bytes_per_s),
            opt(x.ops_per_s),
            l.map_or(String::new(), |l| l.p50.to_string()),
            l.map_or(String::new(), |l| l.p99.to_string()),
            l.map_or(String::new(), |l| l.p999.to_string()),
            x.cache_state.clone(),
            opt(x.ceiling_fraction),
            x.flags.join(";"),
        ];
        out.push_str(
            &fields
                .iter()
                .map(|f| csv_field(f))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push('\n');
    }
    out
}
