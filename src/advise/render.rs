//! Human and HTML output for `advise`: the verdict first, then the evidence.

use std::fmt::Write;

use super::Advice;
use crate::bench::{self, BenchReport};
use crate::command::{self, ExitCode, Format, Report};
use crate::render::color::{self, Tone};
use crate::render::html::page;
use crate::render::html_escape as esc;
use crate::sys::zram_estimate::Estimate;
use crate::units::{fmt_bytes, fmt_count};

/// Green when nothing needs doing, yellow when a change is recommended,
/// plain bold when the answer is to leave DIR where it is.
fn verdict_tone(k: super::Kind) -> Tone {
    use super::Kind;
    use crate::render::color::Tone;
    match k {
        Kind::NothingToChange => Tone::Good,
        Kind::Move | Kind::Resize | Kind::Persist => Tone::Warn,
        Kind::KeepOnDisk | Kind::NotWorthIt => Tone::Strong,
    }
}

fn yes_no(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "unknown",
    }
}

/// The sections after the headline, shared by text and HTML.
fn sections(a: &Advice) -> Vec<(String, Vec<String>)> {
    let l = &a.location;
    let u = &a.usage;
    let mut out = Vec::new();
    let mut where_ = vec![format!(
        "{} ({}){}",
        l.fstype,
        if l.ram_backed { "RAM" } else { "disk" },
        l.size_limit_bytes
            .map(|s| format!(", limit {}", fmt_bytes(s)))
            .unwrap_or_default()
    )];
    where_.push(match &l.fstab_line {
        Some(f) => format!("fstab: {f}"),
        None => "no fstab line for it".into(),
    });
    where_.push(format!("systemd {}: {}", l.systemd_unit, l.systemd_state));
    out.push((format!("Where {} is now", a.dir), where_));

    let mut usage = vec![format!(
        "now: {} in {} {}",
        fmt_bytes(u.current_bytes),
        fmt_count(u.current_inodes),
        crate::units::noun(u.current_inodes, "inode", "inodes")
    )];
    match u.peak_bytes {
        Some(p) => usage.push(format!(
            "peak from {}{}: {} — the verdict uses the peak",
            u.source,
            u.window.as_ref().map(|w| format!(" over {w}")).unwrap_or_default(),
            fmt_bytes(p)
        )),
        None => usage.push(
            "this is the current value, not a peak: give --history (collect snapshots) or --prometheus URL for the peak"
                .into(),
        ),
    }
    out.push(("Usage".into(), usage));

    let f = &a.fit;
    out.push((
        format!(
            "Fit of {} ({} of data)",
            a.dir,
            fmt_bytes(u.decided_on_bytes)
        ),
        vec![
            format!(
                "within the recommended tmpfs size {}: {}",
                fmt_bytes(f.tmpfs_size_bytes),
                yes_no(Some(f.fits_size))
            ),
            format!(
                "within MemAvailable {}: {}",
                f.mem_available_bytes.map(fmt_bytes).unwrap_or_default(),
                yes_no(f.fits_mem_available)
            ),
            format!(
                "within MemAvailable + free swap {}: {}",
                f.mem_available_plus_swap_bytes
                    .map(fmt_bytes)
                    .unwrap_or_default(),
                yes_no(f.fits_mem_available_plus_swap)
            ),
            format!(
                "inodes within nr_inodes {}: {}",
                f.nr_inodes,
                yes_no(f.fits_inodes)
            ),
        ],
    ));
    if let Some(h) = &a.options.huge {
        out.push((huge_title(h), h.rows.iter().map(huge_line).collect()));
    }
    out.push(("Why".into(), a.verdict.reasons.clone()));
    if !a.verdict.risks.is_empty() {
        out.push(("Risks".into(), a.verdict.risks.clone()));
    }
    let busy: Vec<String> = a
        .plan
        .busy
        .iter()
        .take(5)
        .map(|p| format!("{} {} has files open under {}", p.pid, p.comm, a.dir))
        .collect();
    if !busy.is_empty() {
        out.push(("Processes using it now".into(), busy));
    }
    let c = &a.commands;
    if !c.act.is_empty() {
        let mut act = c.act.clone();
        if let (Some(p), Some(cfg)) = (&c.config_path, &c.config) {
            act.push(format!("(apply writes this to {p}; to do it by hand:)"));
            act.extend(cfg.lines().map(|l| format!("    {l}")));
        }
        out.push(("Do it".into(), act));
        out.push(("Undo".into(), c.undo.clone()));
    }
    if !c.refused.is_empty() {
        let mut why: Vec<String> = c.refused.iter().map(|b| format!("- {b}")).collect();
        why.push(format!(
            "Fix that first, then run advise again (`tmpfsctl plan {}` shows the same)",
            crate::term::shell_word(&a.dir)
        ));
        out.push(("Apply would refuse".into(), why));
    }
    if let Some(z) = a.zram_estimate.as_ref().filter(|z| z.pages > 0) {
        out.push((
            "In zram (estimated, no device made)".into(),
            zram_lines(z, &a.dir),
        ));
    }
    if !a.notes.is_empty() {
        out.push(("Notes".into(), a.notes.clone()));
    }
    out
}

fn zram_lines(z: &Estimate, dir: &str) -> Vec<String> {
    use crate::units::fmt_bytes;
    let pct = |n: u64| 100.0 * n as f64 / z.pages as f64;
    vec![
        format!(
            "{} of {}'s files ({} {}{}) would cost {} of RAM in zram with {}: {:.2}x data per byte of RAM",
            fmt_bytes(z.bytes_sampled),
            crate::term::safe(dir),
            z.files_sampled,
            crate::units::noun(z.files_sampled, "file", "files"),
            if z.truncated { ", a sample" } else { "" },
            fmt_bytes(z.ram_bytes),
            z.algorithm,
            z.data_per_ram_ratio.unwrap_or(0.0)
        ),
        format!(
            "{:.0}% of its 4 KiB pages do not compress (stored whole), {:.0}% are zero pages (cost nothing); tmpfs would cost {}",
            pct(z.huge_pages),
            pct(z.same_pages),
            fmt_bytes(z.bytes_sampled)
        ),
        format!(
            "Computed here with {} page by page; file-system metadata is not counted, so trees of small files cost more; `sudo tmpfsctl bench zram:{} tmpfs:huge=never` measures a real device's speed",
            z.computed_with, z.algorithm
        ),
    ]
}

fn huge_title(h: &super::HugeAdvice) -> String {
    format!(
        "Measured: {} (private tmpfs, 95% intervals){}",
        h.compared,
        if h.quick {
            " — quick run: figures not meaningful"
        } else {
            ""
        }
    )
}

fn huge_line(r: &super::HugeRow) -> String {
    use super::Outcome;
    let interval = match (r.ratio_ci95_low, r.ratio_ci95_high) {
        (Some(lo), Some(hi)) => format!("{lo:.2}..{hi:.2}"),
        _ => "no interval".into(),
    };
    let said = match r.outcome {
        Outcome::Faster => "faster",
        Outcome::Slower => "slower",
        Outcome::Same => "same within the interval",
        Outcome::NoInterval => "not shown either way",
    };
    format!("{}: {:.2}× ({interval}): {said}", r.label, r.ratio)
}

impl Report for Advice {
    command::its_own_document!();

    fn render(&self, f: Format) -> Option<anyhow::Result<Vec<u8>>> {
        match f {
            Format::TEXT => command::text(text(self)),
            Format::HTML => command::text(html(self)),
            _ => None,
        }
    }

    fn exit_code(&self) -> ExitCode {
        self.verdict.kind.exit_code()
    }
}

/// The measurement advise ran, as bench shows it in `format` (text and
/// HTML renderers cannot fail; a format bench lacked would show nothing).
fn shown(r: &BenchReport, format: Format) -> String {
    match command::render(r, format) {
        Some(Ok(b)) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    }
}

pub fn text(a: &Advice) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Verdict: {}\n",
        color::paint(verdict_tone(a.verdict.kind), &a.verdict.headline)
    );
    let secs = sections(a);
    // The measurement goes right after the usage, before the fit.
    for (i, (title, lines)) in secs.iter().enumerate() {
        let _ = writeln!(s, "{title}");
        for l in lines {
            if l.starts_with(' ') {
                // A command or config line to copy: kept whole.
                let _ = writeln!(s, "  {l}");
            } else {
                let _ = writeln!(s, "{}", crate::render::paragraph("  ", l));
            }
        }
        let _ = writeln!(s);
        if i == 1
            && let Some(r) = &a.bench
        {
            let _ = writeln!(s, "Measured side by side (same run; higher is better)");
            let _ = writeln!(s, "{}", shown(r, Format::TEXT));
        }
    }
    let _ = writeln!(s, "(sizes in binary units: KiB, MiB, GiB)");
    s
}

pub fn html(a: &Advice) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<p class="verdict" id="verdict" data-kind="{}">{}</p>"#,
        esc(&serde_json::to_value(a.verdict.kind)
            .map(|v| v.as_str().unwrap_or("").to_string())
            .unwrap_or_default()),
        esc(&a.verdict.headline)
    );
    for (title, lines) in sections(a) {
        // Commands are for copying: one code block, not bullets.
        if title == "Do it" || title == "Undo" {
            let _ = write!(
                s,
                "<h2>{}</h2><pre><code>{}</code></pre>",
                esc(&title),
                esc(&lines.join("\n"))
            );
            continue;
        }
        let _ = write!(s, "<h2>{}</h2><ul>", esc(&title));
        for l in lines {
            let _ = write!(s, "<li>{}</li>", esc(&l));
        }
        s.push_str("</ul>");
    }
    if let Some(r) = &a.bench {
        s.push_str("<h2>Measured side by side</h2>");
        s.push_str(&shown(r, bench::CHARTS));
    }
    page("tmpfsctl advise", &s)
}
