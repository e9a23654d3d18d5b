//! Rendering a [`FleetReport`]: the report is first laid out as a few neutral
//! blocks (headings, paragraphs, tables), then written as terminal text,
//! Markdown or HTML; HTML adds inline SVG charts.

use crate::render::color;
use crate::render::html_escape as esc;
use crate::term::safe;
use std::fmt::Write as _;

use super::Analyzed;
use super::analyze::FleetReport;
use super::stats::Summary;
use crate::command::{self, ExitCode, Format, Report, noted};
use crate::units::fmt_bytes;

/// Said (in colour on a terminal) when no size reaches the target share.
const TARGET_NOT_REACHED: &str = "TARGET NOT REACHED";

enum Block {
    Heading(String),
    Para(String),
    /// A paragraph the terminal shows in the warning colour.
    Warning(String),
    Table {
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
}

fn t(h: &[&str], rows: Vec<Vec<String>>) -> Block {
    Block::Table {
        header: h.iter().map(|s| s.to_string()).collect(),
        rows,
    }
}

pub use super::stats::hosts;
use crate::render::html::page;

fn names(v: &[String], total: u64, show: usize) -> String {
    if total == 0 {
        return "-".into();
    }
    let mut s = v.iter().take(show).cloned().collect::<Vec<_>>().join(", ");
    if total as usize > show.min(v.len()) {
        let _ = write!(s, " (+{} more)", total as usize - show.min(v.len()));
    }
    s
}

fn blocks(r: &FleetReport) -> Vec<Block> {
    let mut b = Vec::new();
    let value = match r.source.value.as_str() {
        "peak" => format!(
            "PEAK over the last {} (max_over_time)",
            r.source.window_s.map(fmt_secs).unwrap_or_default()
        ),
        "instant" => "latest value (instant query)".to_string(),
        _ => "one snapshot per host".to_string(),
    };
    b.push(Block::Heading(
        "Would /tmp fit in tmpfs across the fleet?".into(),
    ));
    b.push(Block::Para(format!(
        "{} from {} ({}); /tmp figures: {}. Sizes in binary units (1 MiB = 1024 KiB).",
        hosts(r.hosts),
        r.source.kind,
        r.source.inputs.join(", "),
        value
    )));
    input_blocks(r, &mut b);
    stats_blocks(r, &mut b);
    fit_blocks(r, &mut b);
    outlier_blocks(r, &mut b);
    if !r.warnings.is_empty() {
        b.push(Block::Heading("Warnings".into()));
        for w in &r.warnings {
            b.push(Block::Warning(format!("warning: {w}")));
        }
    }
    b
}

/// What was skipped or dropped on input, when anything was.
fn input_blocks(r: &FleetReport, b: &mut Vec<Block>) {
    if r.input.skipped > 0 || r.input.duplicates_dropped > 0 {
        let mut rows: Vec<Vec<String>> = r
            .input
            .skip_reasons
            .iter()
            .map(|s| {
                vec![
                    format!("skipped: {}", s.reason),
                    s.count.to_string(),
                    s.first.clone(),
                ]
            })
            .collect();
        if r.input.duplicates_dropped > 0 {
            rows.push(vec![
                "duplicate host, older snapshot dropped".into(),
                r.input.duplicates_dropped.to_string(),
                r.input
                    .duplicate_examples
                    .first()
                    .cloned()
                    .unwrap_or_default(),
            ]);
        }
        b.push(Block::Heading("Input".into()));
        b.push(t(&["what", "lines", "first case"], rows));
    }
}

/// The statistics table and the usage buckets.
fn stats_blocks(r: &FleetReport, b: &mut Vec<Block>) {
    b.push(Block::Heading("Statistics".into()));
    let row = |name: &str, s: &Option<Summary>, bytes: bool| -> Vec<String> {
        let f = |v: u64| if bytes { fmt_bytes(v) } else { v.to_string() };
        match s {
            None => vec![name.to_string(), "no data".into()],
            Some(s) => vec![
                name.to_string(),
                f(s.max),
                f(s.min),
                if bytes {
                    fmt_bytes(s.mean as u64)
                } else {
                    format!("{:.0}", s.mean)
                },
                if bytes {
                    fmt_bytes(s.median as u64)
                } else {
                    fmt_count(s.median)
                },
                format!("{} (x{})", f(s.mode), s.mode_count),
                f(s.p90),
                f(s.p99),
            ],
        }
    };
    b.push(t(
        &[
            "figure", "max", "min", "mean", "median", "mode", "p90", "p99",
        ],
        vec![
            row("/tmp used", &r.tmp_used_bytes, true),
            row("/tmp inodes", &r.tmp_inodes, false),
            row("RAM (MemTotal)", &r.mem_total_bytes, true),
            row("MemFree", &r.mem_free_bytes, true),
            row("MemAvailable", &r.mem_available_bytes, true),
            row("swap total", &r.swap_total_bytes, true),
            row("swap used", &r.swap_used_bytes, true),
        ],
    ));
    b.push(Block::Para(
        "median: the middle value, for an even count the mean of the two middle ones \
         (interpolated); p90, p99: nearest rank, one host's figure."
            .into(),
    ));
    b.push(Block::Heading("Hosts by /tmp usage".into()));
    b.push(t(
        &["/tmp used under", "hosts", "share"],
        r.tmp_used_buckets
            .iter()
            .map(|k| {
                vec![
                    fmt_bytes(k.under_bytes),
                    k.count.to_string(),
                    format!("{:.1}%", k.percent),
                ]
            })
            .collect(),
    ));
}

/// The fit models and the recommendation.
fn fit_blocks(r: &FleetReport, b: &mut Vec<Block>) {
    b.push(Block::Heading("Fit models".into()));
    let f = &r.fit;
    b.push(t(
        &["model", "fit", "of", "share", "do not fit (largest first)"],
        [
            &f.half_ram,
            &f.mem_free,
            &f.mem_free_plus_swap,
            &f.mem_available,
            &f.mem_available_plus_swap,
            &f.inodes,
        ]
        .iter()
        .map(|m| {
            vec![
                m.model.clone(),
                m.count.to_string(),
                m.evaluated.to_string(),
                format!("{:.1}%", m.percent),
                names(&m.misfits, m.misfits_total, m.misfits.len()),
            ]
        })
        .collect(),
    ));
    b.push(Block::Para(
        "MemFree: memory nothing uses, so /tmp fits without evicting any cache \
         (the Kirkland study's \"free memory\"). MemAvailable adds the page cache \
         the kernel may evict to make room. + SwapFree: tmpfs pages may be swapped out."
            .into(),
    ));
    let rec = &r.recommendation;
    b.push(Block::Heading("Recommendation".into()));
    b.push(Block::Para(format!(
        "size={}% of RAM fits {:.1}% of hosts with {}% headroom over the {} (target {}%; {:.1}% without headroom){}.\n\
         fstab: {}\n\
         Or one fixed size for all: size={} fits {:.1}% of hosts with the headroom ({:.1}% without); it is more than half the RAM of {}{}.",
        rec.size_percent_of_ram,
        rec.fits_percent,
        rec.headroom_percent,
        if r.source.value == "peak" { "peak" } else { "observed usage" },
        rec.target_percent,
        rec.fits_without_headroom_percent,
        if rec.target_reached { String::new() } else { format!(" - {TARGET_NOT_REACHED}") },
        rec.fstab_line,
        crate::units::tmpfs_size_option(rec.size_bytes),
        rec.size_bytes_fits_percent,
        rec.size_bytes_fits_without_headroom_percent,
        hosts(rec.size_bytes_over_half_ram_hosts),
        if rec.size_bytes_advisable { "" } else { " - not advisable, use the share of RAM" }
    )));
}

/// The hosts that do not fit the recommended share of RAM.
fn outlier_blocks(r: &FleetReport, b: &mut Vec<Block>) {
    let rec = &r.recommendation;
    if r.outliers_total > 0 {
        b.push(Block::Heading(format!(
            "Outliers to handle by hand ({} {} not fit {}% of RAM{})",
            hosts(r.outliers_total),
            if r.outliers_total == 1 { "does" } else { "do" },
            rec.size_percent_of_ram,
            if r.outliers_total as usize > r.outliers.len() {
                format!(", largest {} shown", r.outliers.len())
            } else {
                String::new()
            }
        )));
        b.push(t(
            &[
                "host",
                "/tmp used",
                "RAM",
                "/tmp % of RAM",
                "fits MemAvailable+SwapFree",
            ],
            r.outliers
                .iter()
                .map(|o| {
                    vec![
                        o.host.clone(),
                        fmt_bytes(o.tmp_used_bytes),
                        fmt_bytes(o.mem_total_bytes),
                        format!("{:.1}%", o.tmp_percent_of_ram),
                        match o.fits_mem_available_plus_swap {
                            Some(true) => "yes".into(),
                            Some(false) => "NO".into(),
                            None => "unknown".into(),
                        },
                    ]
                })
                .collect(),
        ));
    }
}

/// A count that may be a median half-way between two counts: 64, 64.5.
fn fmt_count(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

pub fn fmt_secs(s: u64) -> String {
    if s.is_multiple_of(86400) {
        format!("{}d", s / 86400)
    } else if s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

impl Report for Analyzed {
    type Document<'a> = &'a FleetReport;

    fn document(&self) -> Option<&FleetReport> {
        Some(&self.report)
    }

    fn render(&self, f: Format) -> Option<anyhow::Result<Vec<u8>>> {
        let r = &self.report;
        match f {
            Format::TEXT => command::text(text(r)),
            Format::MARKDOWN => command::text(markdown(r)),
            Format::HTML => command::text(html(r)),
            Format::CSV => Some(super::export::hosts_csv(
                &self.fleet,
                &self.fit,
                &r.recommendation,
            )),
            _ => None,
        }
    }

    /// Short of the target share: the problem the user asked about.
    fn exit_code(&self) -> ExitCode {
        ExitCode::problem_if(self.report.below_target)
    }

    fn after(&self, _stdout: Option<Format>) -> String {
        let dups = self.report.input.duplicate_examples.iter().take(3);
        dups.map(|d| noted(&format!("duplicate host: {}", safe(d))))
            .collect()
    }
}

pub fn text(r: &FleetReport) -> String {
    let mut o = String::new();
    for b in blocks(r) {
        match b {
            Block::Heading(h) if h == "Warnings" => {
                let _ = writeln!(o, "\n{}", color::warnings_heading());
            }
            Block::Heading(h) => {
                let _ = writeln!(o, "\n{}", safe(&h));
            }
            Block::Para(p) => {
                // Paragraphs break lines on purpose; each line is escaped.
                for l in p.split('\n') {
                    let l = safe(l).replace(
                        TARGET_NOT_REACHED,
                        &color::paint(color::Tone::Bad, TARGET_NOT_REACHED),
                    );
                    let _ = writeln!(o, "{}", crate::render::paragraph("", &l));
                }
            }
            Block::Warning(p) => {
                let l = color::paint(color::Tone::Warn, &safe(&p));
                let _ = writeln!(o, "{}", crate::render::paragraph("", &l));
            }
            Block::Table { header, rows } => {
                let h: Vec<&str> = header.iter().map(String::as_str).collect();
                let mut tb = crate::render::table(&h);
                for r in rows {
                    tb.add_row(r.iter().map(|c| safe(c).into_owned()));
                }
                crate::render::fit_to_terminal(&mut tb);
                let _ = writeln!(o, "{tb}");
            }
        }
    }
    o.trim_start().to_string()
}

/// Markdown text: HTML-escaped (a renderer would obey a `<script>` in a
/// host name) and terminal-safe (Markdown is read in terminals too).
fn md_text(s: &str) -> String {
    safe(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn md_cell(s: &str) -> String {
    md_text(&s.replace('|', "\\|").replace('\n', " "))
}

pub fn markdown(r: &FleetReport) -> String {
    let mut o = String::new();
    let mut first = true;
    for b in blocks(r) {
        match b {
            Block::Heading(h) => {
                let _ = writeln!(o, "\n{} {}\n", if first { "#" } else { "##" }, md_text(&h));
                first = false;
            }
            Block::Para(p) | Block::Warning(p) => {
                for l in p.lines() {
                    let _ = writeln!(o, "{}  ", md_text(l.trim_end()));
                }
                o.push('\n');
            }
            Block::Table { header, rows } => {
                let _ = writeln!(
                    o,
                    "| {} |",
                    header
                        .iter()
                        .map(|h| md_cell(h))
                        .collect::<Vec<_>>()
                        .join(" | ")
                );
                let _ = writeln!(o, "|{}", "---|".repeat(header.len()));
                for r in rows {
                    let mut cells: Vec<String> = r.iter().map(|c| md_cell(c)).collect();
                    cells.resize(header.len(), String::new());
                    let _ = writeln!(o, "| {} |", cells.join(" | "));
                }
                o.push('\n');
            }
        }
    }
    o.trim_start().to_string()
}

pub fn html(r: &FleetReport) -> String {
    let mut o = String::new();
    for b in blocks(r) {
        match b {
            Block::Heading(h) => {
                let _ = writeln!(o, "<h2>{}</h2>", esc(&h));
            }
            Block::Para(p) | Block::Warning(p) => {
                let _ = writeln!(o, "<p>{}</p>", esc(&p).replace('\n', "<br>"));
            }
            Block::Table { header, rows } => {
                o.push_str("<table><tr>");
                for h in header {
                    let _ = write!(o, "<th>{}</th>", esc(&h));
                }
                o.push_str("</tr>\n");
                for r in rows {
                    o.push_str("<tr>");
                    for c in r {
                        let _ = write!(o, "<td>{}</td>", esc(&c));
                    }
                    o.push_str("</tr>\n");
                }
                o.push_str("</table>\n");
            }
        }
    }
    o.push_str("<h2>Charts</h2><div class=\"charts\">\n");
    o.push_str(&super::svg::cdf(r));
    o.push_str(&super::svg::scatter(r));
    o.push_str(&super::svg::ram_hist(r));
    o.push_str("</div>");
    page("tmpfsctl fleet report", &o)
}
