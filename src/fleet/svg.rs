//! The fleet report's inline SVG charts: the CDF of /tmp usage, /tmp
//! against RAM, and the RAM histogram. Each is drawn in a fixed viewBox and
//! scaled to the page width by the stylesheet; labels are placed from an
//! estimate of their width so none is clipped or printed over another
//! (the Chromium layout test in tests/it/reports.rs checks the result).

use crate::render::html_escape as esc;
use std::fmt::Write as _;

use super::analyze::FleetReport;
use crate::units::fmt_bytes;

const W: f64 = 960.0;
const H: f64 = 420.0;
const MR: f64 = 44.0;
const MT: f64 = 34.0;
const MB: f64 = 58.0;
/// Font size in viewBox units: about 16 px at desktop width, 10.5 px at 800.
const FS: f64 = 13.0;

/// A generous width estimate for `s` at `FS` (DejaVu Sans, the widest common
/// sans-serif, averages under 0.62 em for digits and units).
fn text_w(s: &str) -> f64 {
    s.chars().count() as f64 * FS * 0.62 + 2.0
}

/// Left margin wide enough for the widest y label.
fn margin_left(labels: &[String]) -> f64 {
    labels.iter().map(|l| text_w(l)).fold(40.0, f64::max) + 12.0
}

/// An x label centred on `x`, pulled inwards so it stays inside the chart.
fn x_label(o: &mut String, x: f64, y: f64, s: &str) {
    let half = text_w(s) / 2.0;
    let cx = x.clamp(half + 2.0, W - half - 2.0);
    let _ = write!(
        o,
        "<text x=\"{cx:.1}\" y=\"{y:.1}\" text-anchor=\"middle\">{}</text>",
        esc(s)
    );
}

/// A box in viewBox units: left, top, right, bottom.
#[derive(Clone, Copy)]
struct Rect(f64, f64, f64, f64);

impl Rect {
    fn hits(&self, o: &Rect) -> bool {
        self.0 < o.2 && o.0 < self.2 && self.1 < o.3 && o.1 < self.3
    }
    fn holds(&self, x: f64, y: f64) -> bool {
        x >= self.0 && x <= self.2 && y >= self.1 && y <= self.3
    }
}

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
        let span = self.hi / self.lo;
        let mult = if span > 1024.0 * 64.0 {
            1024
        } else if span > 64.0 {
            16
        } else {
            2
        };
        self.ticks_every(mult)
    }
    /// The densest ticks (powers of 2, 4, 16 or 1024) whose labels, as
    /// `fmt_bytes` writes them, fit side by side: a column of dots per RAM
    /// size wants a label under each, not two for nine.
    fn ticks_labelled(&self) -> Vec<u64> {
        for mult in [2, 4, 16, 1024] {
            let t = self.ticks_every(mult);
            let fits = t.windows(2).all(|p| {
                let gap = self.at(p[1]) - self.at(p[0]);
                gap >= (text_w(&fmt_bytes(p[0])) + text_w(&fmt_bytes(p[1]))) / 2.0 + 8.0
            });
            if fits {
                return t;
            }
        }
        self.ticks()
    }
    fn ticks_every(&self, mult: u64) -> Vec<u64> {
        let mut v = Vec::new();
        let mut x = 1u64;
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

fn svg_open(o: &mut String, class: &str, title: &str, desc: &str, ml: f64) {
    // width 100% with a viewBox: the chart fills the page column and keeps
    // its proportions; the font is set here so the page's CSS cannot shrink it.
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"fleet-chart {class}\" width=\"100%\" viewBox=\"0 0 {W} {H}\" \
         font-family=\"sans-serif\" font-size=\"{FS}\" role=\"img\" aria-label=\"{t}\">\
         <title>{t}</title><desc>{}</desc><text x=\"{ml}\" y=\"22\" font-weight=\"bold\">{t}</text>",
        esc(desc),
        t = esc(title),
    );
    let _ = write!(
        o,
        "<rect x=\"{ml:.1}\" y=\"{MT}\" width=\"{:.1}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
        W - ml - MR,
        H - MT - MB
    );
}

/// The axis title under the tick labels, and the end of the chart.
fn svg_close(o: &mut String, ml: f64, title: &str) {
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text></svg>",
        (ml + W - MR) / 2.0,
        H - 4.0,
        esc(title)
    );
}

/// A y axis title, turned to run up the left edge.
fn y_title(o: &mut String, title: &str) {
    let y = (MT + H - MB) / 2.0;
    let _ = write!(
        o,
        "<text class=\"axis-title\" x=\"14\" y=\"{y:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {y:.1})\">{}</text>",
        esc(title)
    );
}

fn x_ticks(o: &mut String, ax: &LogAxis, ticks: &[u64]) {
    for &tk in ticks {
        let x = ax.at(tk);
        let _ = write!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{MT}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#eee\"/>",
            H - MB
        );
        x_label(o, x, H - MB + 20.0, &fmt_bytes(tk));
    }
}

/// Where a threshold's label goes: the first spot, right or left of its
/// line, that stays inside the plot and clear of the curve, the other
/// labels, the other thresholds' lines and the grid lines. Rows near the
/// empty corner of the CDF are tried first: above the curve where few hosts
/// are under the threshold, below it where most are.
fn place_label(
    x: f64,
    w: f64,
    upper_first: bool,
    plot: Rect,
    curve: &[(f64, f64)],
    taken: &[Rect],
    lines: &[f64],
) -> Option<(f64, f64, bool)> {
    let mut rows: Vec<f64> = Vec::new();
    let mut b = plot.1 + 16.0;
    while b + 4.0 < plot.3 {
        rows.push(b);
        b += 17.0;
    }
    if !upper_first {
        rows.reverse();
    }
    // Never across another line: a label that fits nowhere is left out.
    for &base in &rows {
        for right in [true, false] {
            let l = if right { x + 4.0 } else { x - 4.0 - w };
            let r = Rect(l, base - 13.0, l + w, base + 4.0);
            let inside = r.0 >= plot.0 + 2.0 && r.2 <= plot.2 - 2.0;
            if !inside
                || curve.iter().any(|&(cx, cy)| r.holds(cx, cy))
                || taken.iter().any(|t| t.hits(&r))
                || lines.iter().any(|&lx| lx > r.0 - 1.0 && lx < r.2 + 1.0)
            {
                continue;
            }
            return Some((l, base, right));
        }
    }
    None
}

/// The curve as points every couple of units, for collision tests.
fn dense(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for pair in points.windows(2) {
        let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
        let steps = ((x1 - x0).hypot(y1 - y0) / 2.0).ceil().max(1.0) as usize;
        for i in 0..steps {
            let t = i as f64 / steps as f64;
            out.push((x0 + (x1 - x0) * t, y0 + (y1 - y0) * t));
        }
    }
    out.extend(points.last().copied());
    out
}

pub fn cdf(r: &FleetReport) -> String {
    let mut o = String::new();
    let shares = [0.0, 0.25, 0.5, 0.75, 0.9, 1.0];
    // Room for the tick labels and, left of them, the axis title.
    let ml = margin_left(&["100%".to_string()]) + 18.0;
    svg_open(
        &mut o,
        "cdf",
        "CDF of /tmp usage (log axis)",
        "Share of hosts whose /tmp usage is at most x; dashed lines are the bucket thresholds",
        ml,
    );
    let pts = &r.charts.cdf;
    let max = pts.last().map(|p| p.0).unwrap_or(1);
    let bmax = r
        .tmp_used_buckets
        .iter()
        .map(|b| b.under_bytes)
        .max()
        .unwrap_or(1);
    let ax = LogAxis::new(1024, max.max(bmax), ml, W - MR);
    let ticks = ax.ticks();
    x_ticks(&mut o, &ax, &ticks);
    y_title(&mut o, "hosts at or below x (%)");
    let y = |s: f64| H - MB - s * (H - MT - MB);
    for s in shares {
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{:.0}%</text>",
            ml - 6.0,
            y(s) + 4.0,
            s * 100.0
        );
    }
    let curve: Vec<(f64, f64)> = pts.iter().map(|(v, s)| (ax.at(*v), y(*s))).collect();
    let mut path = String::new();
    for (i, (px, py)) in curve.iter().enumerate() {
        let _ = write!(path, "{}{px:.1},{py:.1}", if i == 0 { "M" } else { " L" });
    }
    let _ = write!(
        o,
        "<path class=\"cdf\" d=\"{path}\" fill=\"none\" stroke=\"#1f6fb4\" stroke-width=\"2\"/>"
    );
    let plot = Rect(ml, MT, W - MR, H - MB);
    // The curve plus its stroke and a little air on each side.
    let mut near = Vec::new();
    for (cx, cy) in dense(&curve) {
        near.extend([
            (cx, cy),
            (cx - 3.0, cy),
            (cx + 3.0, cy),
            (cx, cy - 3.0),
            (cx, cy + 3.0),
        ]);
    }
    let lines: Vec<f64> = r
        .tmp_used_buckets
        .iter()
        .map(|b| ax.at(b.under_bytes))
        .collect();
    let grid: Vec<f64> = ticks.iter().map(|t| ax.at(*t)).collect();
    let mut taken = Vec::new();
    for (i, b) in r.tmp_used_buckets.iter().enumerate() {
        let x = lines[i];
        let label = format!("<{} {:.1}%", fmt_bytes(b.under_bytes), b.percent);
        let _ = write!(
            o,
            "<line class=\"bucket\" x1=\"{x:.1}\" y1=\"{MT}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#c33\" stroke-dasharray=\"4 3\"><title>{}</title></line>",
            H - MB,
            esc(&label)
        );
        let others: Vec<f64> = lines
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, l)| *l)
            .chain(grid.iter().copied())
            .collect();
        let w = text_w(&label);
        // A label that fits nowhere is left out: the table above has the figure.
        if let Some((l, base, _)) =
            place_label(x, w, b.percent < 50.0, plot, &near, &taken, &others)
        {
            taken.push(Rect(l - 2.0, base - 13.0, l + w + 2.0, base + 4.0));
            let _ = write!(
                o,
                "<text class=\"bucket-label\" x=\"{l:.1}\" y=\"{base:.1}\" fill=\"#c33\" stroke=\"#fff\" stroke-width=\"4\" paint-order=\"stroke\">{}</text>",
                esc(&label)
            );
        }
    }
    svg_close(&mut o, ml, "/tmp used (bytes, log scale)");
    o
}

pub fn scatter(r: &FleetReport) -> String {
    let mut o = String::new();
    let pts = &r.charts.scatter;
    let rmin = pts.iter().map(|p| p.0).min().unwrap_or(1 << 30);
    let rmax = pts.iter().map(|p| p.0).max().unwrap_or(1 << 31);
    let umax = pts.iter().map(|p| p.1).max().unwrap_or(1 << 20);
    let ay = LogAxis::new(1024, umax.max(rmax / 2), H - MB, MT);
    let ylabels: Vec<(f64, String)> = ay
        .ticks()
        .into_iter()
        .map(|t| (ay.at(t), fmt_bytes(t)))
        .collect();
    let ml = margin_left(&ylabels.iter().map(|l| l.1.clone()).collect::<Vec<_>>()) + 18.0;
    svg_open(
        &mut o,
        "scatter",
        "/tmp usage vs RAM (log-log)",
        "One dot per host (an even sample when there are many); the line is 50% of RAM, tmpfs's default size",
        ml,
    );
    let ax = LogAxis::new(rmin, rmax, ml, W - MR);
    x_ticks(&mut o, &ax, &ax.ticks_labelled());
    y_title(&mut o, "/tmp used (bytes, log scale)");
    for (yy, l) in &ylabels {
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            ml - 6.0,
            yy + 4.0,
            esc(l)
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
        // Above the line's right end: the line falls away to the left.
        ay.at(x1 / 2) - 6.0
    );
    for (ram, used) in pts {
        let c = if *used > ram / 2 { "#c33" } else { "#1f6fb4" };
        let _ = write!(
            o,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{c}\" fill-opacity=\"0.6\"/>",
            ax.at(*ram),
            ay.at(*used)
        );
    }
    svg_close(
        &mut o,
        ml,
        "RAM (MemTotal, bytes, log scale); /tmp below 1 KiB drawn at 1 KiB",
    );
    o
}

pub fn ram_hist(r: &FleetReport) -> String {
    let mut o = String::new();
    let ml = 36.0;
    svg_open(
        &mut o,
        "ram-hist",
        "Hosts by RAM size",
        "Number of hosts per RAM size, rounded up to a power of two",
        ml,
    );
    let bins = &r.charts.ram_hist;
    let maxc = bins.iter().map(|b| b.1).max().unwrap_or(1).max(1);
    let n = bins.len().max(1) as f64;
    let bw = (W - ml - MR) / n;
    let labels: Vec<String> = bins
        .iter()
        .map(|b| format!("≤{}", fmt_bytes(b.0)))
        .collect();
    let widest = labels.iter().map(|l| text_w(l)).fold(0.0, f64::max) + 6.0;
    // Narrow bars: labels alternate between two rows; narrower still, only
    // every k-th bar is labelled (its neighbours are a power of two away).
    let (rows, every) = if widest <= bw {
        (1, 1)
    } else if widest <= 2.0 * bw {
        (2, 1)
    } else {
        (2, (widest / (2.0 * bw)).ceil() as usize)
    };
    for (i, (_, c)) in bins.iter().enumerate() {
        let h = *c as f64 / maxc as f64 * (H - MT - MB - 20.0);
        let x = ml + i as f64 * bw;
        let _ = write!(
            o,
            "<rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#1f6fb4\"><title>{}: {c}</title></rect>",
            x + bw * 0.1,
            H - MB - h,
            bw * 0.8,
            esc(&labels[i])
        );
        if text_w(&c.to_string()) <= bw {
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{c}</text>",
                x + bw / 2.0,
                H - MB - h - 4.0
            );
        }
        if i % every == 0 {
            let row = if rows == 2 { (i / every) % 2 } else { 0 };
            x_label(
                &mut o,
                x + bw / 2.0,
                H - MB + 20.0 + 16.0 * row as f64,
                &labels[i],
            );
        }
    }
    y_title(&mut o, "hosts");
    svg_close(
        &mut o,
        ml,
        "RAM (MemTotal, bytes, rounded up to a power of two)",
    );
    o
}
