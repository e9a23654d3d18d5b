//! The fleet report's inline SVG charts: the CDF of /tmp usage, /tmp
//! against RAM, and the RAM histogram.

use crate::render::html_escape as esc;
use std::fmt::Write as _;

use super::analyze::FleetReport;
use crate::units::fmt_bytes;

const W: f64 = 720.0;
const H: f64 = 360.0;
const ML: f64 = 70.0;
const MR: f64 = 20.0;
const MT: f64 = 30.0;
const MB: f64 = 45.0;

/// A log10 axis over bytes; values below `lo` are drawn at `lo`.
struct LogAxis {
    lo: f64,
    hi: f64,
    from: f64,
    to: f64,
}

impl LogAxis {
    fn new(lo: u64, hi: u64, from: f64, to: f64) -> LogAxis {
        let lo = (lo.max(1) as f64).log2().floor().exp2();
        let hi = (hi.max(2) as f64).log2().ceil().exp2().max(lo * 2.0);
        LogAxis { lo, hi, from, to }
    }
    fn at(&self, v: u64) -> f64 {
        let v = (v as f64).max(self.lo);
        self.from
            + (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
                * (self.to - self.from)
    }
    /// Tick values: powers of 1024, or of 2 when the range is narrow.
    fn ticks(&self) -> Vec<u64> {
        let mut v = Vec::new();
        let mut x = 1u64;
        let span = self.hi / self.lo;
        let mult = if span > 1024.0 * 64.0 {
            1024
        } else if span > 64.0 {
            16
        } else {
            2
        };
        while (x as f64) <= self.hi {
            if (x as f64) >= self.lo {
                v.push(x);
            }
            match x.checked_mul(mult) {
                Some(n) => x = n,
                None => break,
            }
        }
        v
    }
}

fn svg_open(o: &mut String, title: &str, desc: &str) {
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\">\
         <title>{}</title><desc>{}</desc><text x=\"{}\" y=\"18\" font-weight=\"bold\">{}</text>",
        esc(title),
        esc(desc),
        ML,
        esc(title)
    );
    let _ = write!(
        o,
        "<rect x=\"{ML}\" y=\"{MT}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
        W - ML - MR,
        H - MT - MB
    );
}

fn x_ticks(o: &mut String, ax: &LogAxis) {
    for tk in ax.ticks() {
        let x = ax.at(tk);
        let _ = write!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#eee\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            MT,
            H - MB,
            H - MB + 14.0,
            esc(&fmt_bytes(tk))
        );
    }
}

pub fn cdf(r: &FleetReport) -> String {
    let mut o = String::new();
    svg_open(
        &mut o,
        "CDF of /tmp usage (log axis)",
        "Share of hosts whose /tmp usage is at most x; dashed lines are the bucket thresholds",
    );
    let pts = &r.charts.cdf;
    let max = pts.last().map(|p| p.0).unwrap_or(1);
    let bmax = r
        .tmp_used_buckets
        .iter()
        .map(|b| b.under_bytes)
        .max()
        .unwrap_or(1);
    let ax = LogAxis::new(1024, max.max(bmax), ML, W - MR);
    x_ticks(&mut o, &ax);
    let y = |s: f64| H - MB - s * (H - MT - MB);
    for s in [0.0, 0.25, 0.5, 0.75, 0.9, 1.0] {
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{:.0}%</text>",
            ML - 4.0,
            y(s) + 4.0,
            s * 100.0
        );
    }
    for (i, b) in r.tmp_used_buckets.iter().enumerate() {
        let x = ax.at(b.under_bytes);
        // Staggered so neighbouring thresholds' labels do not overprint.
        let ly = MT + 12.0 + 13.0 * (i % 4) as f64;
        let _ = write!(
            o,
            "<line class=\"bucket\" x1=\"{x:.1}\" y1=\"{MT}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#c33\" stroke-dasharray=\"4 3\"/>\
             <text x=\"{:.1}\" y=\"{ly:.1}\" fill=\"#c33\">&lt;{} {:.1}%</text>",
            H - MB,
            x + 2.0,
            esc(&fmt_bytes(b.under_bytes)),
            b.percent
        );
    }
    let mut path = String::new();
    for (i, (v, s)) in pts.iter().enumerate() {
        let _ = write!(
            path,
            "{}{:.1},{:.1}",
            if i == 0 { "M" } else { " L" },
            ax.at(*v),
            y(*s)
        );
    }
    let _ = write!(
        o,
        "<path class=\"cdf\" d=\"{path}\" fill=\"none\" stroke=\"#1f6fb4\" stroke-width=\"2\"/>"
    );
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">/tmp used (log scale)</text></svg>",
        (ML + W - MR) / 2.0,
        H - 8.0
    );
    o
}

pub fn scatter(r: &FleetReport) -> String {
    let mut o = String::new();
    svg_open(
        &mut o,
        "/tmp usage vs RAM (log-log)",
        "One dot per host (an even sample when there are many); the line is 50% of RAM, tmpfs's default size",
    );
    let pts = &r.charts.scatter;
    let rmin = pts.iter().map(|p| p.0).min().unwrap_or(1 << 30);
    let rmax = pts.iter().map(|p| p.0).max().unwrap_or(1 << 31);
    let umax = pts.iter().map(|p| p.1).max().unwrap_or(1 << 20);
    let ax = LogAxis::new(rmin, rmax, ML, W - MR);
    let ay = LogAxis::new(1024, umax.max(rmax / 2), H - MB, MT);
    x_ticks(&mut o, &ax);
    for tk in ay.ticks() {
        let yy = ay.at(tk);
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            ML - 4.0,
            yy + 4.0,
            esc(&fmt_bytes(tk))
        );
    }
    // 50 % line: y = x / 2 is straight on log-log axes.
    let (x0, x1) = (ax.lo as u64, ax.hi as u64);
    let _ = write!(
        o,
        "<line class=\"half\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#c33\" stroke-dasharray=\"5 3\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#c33\" text-anchor=\"end\">50% of RAM</text>",
        ax.at(x0),
        ay.at(x0 / 2),
        ax.at(x1),
        ay.at(x1 / 2),
        ax.at(x1) - 4.0,
        ay.at(x1 / 2) + 14.0
    );
    for (ram, used) in pts {
        let c = if *used > ram / 2 { "#c33" } else { "#1f6fb4" };
        let _ = write!(
            o,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{c}\" fill-opacity=\"0.6\"/>",
            ax.at(*ram),
            ay.at(*used)
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">RAM (MemTotal, log scale); /tmp below 1 KiB drawn at 1 KiB</text></svg>",
        (ML + W - MR) / 2.0,
        H - 8.0
    );
    o
}

pub fn ram_hist(r: &FleetReport) -> String {
    let mut o = String::new();
    svg_open(
        &mut o,
        "Hosts by RAM size",
        "Number of hosts per RAM size, rounded up to a power of two",
    );
    let bins = &r.charts.ram_hist;
    let maxc = bins.iter().map(|b| b.1).max().unwrap_or(1).max(1);
    let n = bins.len().max(1) as f64;
    let bw = (W - ML - MR) / n;
    for (i, (ub, c)) in bins.iter().enumerate() {
        let h = *c as f64 / maxc as f64 * (H - MT - MB - 14.0);
        let x = ML + i as f64 * bw;
        let _ = write!(
            o,
            "<rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#1f6fb4\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{c}</text>\
             <text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">&lt;={}</text>",
            x + bw * 0.1,
            H - MB - h,
            bw * 0.8,
            x + bw / 2.0,
            H - MB - h - 3.0,
            x + bw / 2.0,
            H - MB + 14.0,
            esc(&fmt_bytes(*ub))
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">RAM (MemTotal)</text></svg>",
        (ML + W - MR) / 2.0,
        H - 8.0
    );
    o
}
