//! From a [`Fleet`] to a [`FleetReport`]: statistics, fit models,
//! recommendation, outliers, and the data the charts need.

use serde::Serialize;

use super::fit::{self, FitParams, Fits, Outlier, Recommendation};
use super::ingest::{Fleet, IngestReport};
use super::stats::{self, Bucket, Summary};

/// 2: `fit.mem_free` and `fit.mem_free_plus_swap` added, `mem_free_bytes`
/// added, medians interpolated (may end in .5), `recommendation.fits_percent`
/// and `size_bytes_fits_percent` count the headroom.
pub const SCHEMA_VERSION: u32 = 2;

/// The Kirkland survey's thresholds (1 MB, 10 MB, 100 MB, 1 GB, 4.8 GB), in binary units.
pub const DEFAULT_BUCKETS: [u64; 5] = [1 << 20, 10 << 20, 100 << 20, 1 << 30, 5_153_960_755];

#[derive(Debug, Clone, Serialize)]
pub struct SourceInfo {
    /// `files` or `prometheus`.
    pub kind: String,
    pub inputs: Vec<String>,
    /// `snapshot` (files: one reading per host), `peak` (max over the window) or `instant`.
    pub value: String,
    pub window_s: Option<u64>,
    /// PromQL that was run (Prometheus only).
    pub queries: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    pub fit: FitParams,
    pub target_percent: f64,
    pub headroom_percent: f64,
    pub buckets: Vec<u64>,
    /// At most this many host names per list (misfits, outliers).
    pub list: usize,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            fit: FitParams::default(),
            target_percent: 99.0,
            headroom_percent: 25.0,
            buckets: DEFAULT_BUCKETS.to_vec(),
            list: 100,
        }
    }
}

/// Sampled points for the HTML charts (not part of the JSON schema).
#[derive(Debug, Clone, Default)]
pub struct ChartData {
    /// (usage bytes, cumulative share 0..1), at most ~1000 points.
    pub cdf: Vec<(u64, f64)>,
    /// (RAM bytes, /tmp bytes), at most ~4000 hosts (an even sample).
    pub scatter: Vec<(u64, u64)>,
    /// Sorted RAM column quantiles for the histogram: (bin upper bound bytes, hosts).
    pub ram_hist: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FleetReport {
    pub schema_version: u32,
    pub source: SourceInfo,
    pub hosts: u64,
    pub input: IngestReport,
    pub tmp_used_bytes: Option<Summary>,
    /// Share of hosts under each threshold (the survey's and `--buckets`).
    pub tmp_used_buckets: Vec<Bucket>,
    pub tmp_inodes: Option<Summary>,
    pub mem_total_bytes: Option<Summary>,
    pub mem_available_bytes: Option<Summary>,
    pub mem_free_bytes: Option<Summary>,
    pub swap_total_bytes: Option<Summary>,
    pub swap_used_bytes: Option<Summary>,
    pub fit: Fits,
    pub recommendation: Recommendation,
    pub outliers: Vec<Outlier>,
    pub outliers_total: u64,
    /// True when the tmpfs-size model fits fewer hosts than `--target` (exit code 1).
    pub below_target: bool,
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub charts: ChartData,
}

/// Two buffers a thread sorts its columns in, one after the other: their
/// pages are faulted in once, not once a column (at 1 M hosts that was
/// 16 MB of fresh zeroed memory per column).
#[derive(Default)]
struct Columns {
    col: Vec<u64>,
    scratch: Vec<u64>,
}

impl Columns {
    /// The figure `get` picks from every row that has it, sorted.
    fn sorted(&mut self, f: &Fleet, get: impl Fn(&super::ingest::Row) -> u64) -> &[u64] {
        self.sort(f, get);
        &self.col
    }

    /// [`Columns::sorted`] into `self.col`.
    fn sort(&mut self, f: &Fleet, get: impl Fn(&super::ingest::Row) -> u64) {
        self.col.clear();
        self.col
            .extend(f.rows.iter().map(get).filter(|&x| x != u64::MAX));
        stats::sort_column_with(&mut self.col, &mut self.scratch);
    }
}

fn sample_even<T: Copy>(v: &[T], max: usize) -> Vec<T> {
    if v.len() <= max {
        return v.to_vec();
    }
    (0..max).map(|i| v[i * v.len() / max]).collect()
}

pub fn analyze(
    f: &Fleet,
    input: IngestReport,
    source: SourceInfo,
    o: &AnalyzeOptions,
) -> FleetReport {
    let mut warnings = Vec::new();
    let mut charts = ChartData::default();
    // The columns are independent: sorted on two threads, half the wall time
    // on a two-core machine, one extra column alive at a time.
    let (mine, memory) = std::thread::scope(|s| {
        let memory = s.spawn(|| memory_columns(f));
        (tmp_columns(f, o), memory.join())
    });
    let memory = memory.unwrap_or_else(|p| std::panic::resume_unwind(p));
    let TmpColumns {
        tmp_used_bytes,
        tmp_used_buckets,
        cdf,
        tmp_inodes,
        fit,
        recommendation,
    } = mine;
    charts.cdf = cdf;
    charts.ram_hist = memory.ram_hist;
    // Sampled straight from the rows: a (RAM, /tmp) copy of all of them would be 16 bytes a host.
    charts.scatter = sample_even(&f.rows, 4000)
        .into_iter()
        .map(|r| (r.mem_total, r.tmp_used))
        .collect();
    let (outliers, outliers_total) = fit::outliers(f, &recommendation, o.list);
    if f.is_empty() {
        warnings.push(
            "no hosts were read: check the input files (or the Prometheus query with --verbose)"
                .into(),
        );
    }
    for (figure, evaluated) in [
        ("MemFree", fit.mem_free.evaluated),
        ("MemAvailable", fit.mem_available.evaluated),
    ] {
        let missing = f.len() as u64 - evaluated;
        if missing > 0 {
            warnings.push(format!(
                "{} {} no {figure} figure: the {figure} models only count the {evaluated} that do",
                super::stats::hosts(missing),
                if missing == 1 { "has" } else { "have" },
            ));
        }
    }
    if input.skipped > 0 {
        warnings.push(format!(
            "{} input lines were skipped (--skip-bad); see input.skip_reasons",
            input.skipped
        ));
    }
    if input.duplicates_dropped > 0 {
        warnings.push(format!(
            "{} duplicate host snapshots were dropped, keeping each host's latest",
            input.duplicates_dropped
        ));
    }
    if source.value == "snapshot" {
        warnings.push(
            "these are one-off snapshots: /tmp at its peak may be much larger. Collect on a timer \
             (examples/systemd) into Prometheus and use --prometheus for the peak over a window"
                .into(),
        );
    }
    if !recommendation.target_reached {
        warnings.push(format!(
            "no size up to {}% of RAM (tmpfs's default; more competes with applications for RAM) fits {}% of \
             hosts; handle the outliers below by hand, or lower --target",
            fit::MAX_PERCENT_OF_RAM,
            o.target_percent
        ));
    }
    let below_target = !f.is_empty() && fit.half_ram.percent < o.target_percent;
    FleetReport {
        schema_version: SCHEMA_VERSION,
        source,
        hosts: f.len() as u64,
        input,
        tmp_used_bytes,
        tmp_used_buckets,
        tmp_inodes,
        mem_total_bytes: memory.mem_total_bytes,
        mem_available_bytes: memory.mem_available_bytes,
        mem_free_bytes: memory.mem_free_bytes,
        swap_total_bytes: memory.swap_total_bytes,
        swap_used_bytes: memory.swap_used_bytes,
        fit,
        recommendation,
        outliers,
        outliers_total,
        below_target,
        warnings,
        charts,
    }
}

/// What [`analyze`] takes from the /tmp columns, and the fits.
struct TmpColumns {
    tmp_used_bytes: Option<Summary>,
    tmp_used_buckets: Vec<Bucket>,
    cdf: Vec<(u64, f64)>,
    tmp_inodes: Option<Summary>,
    fit: Fits,
    recommendation: Recommendation,
}

fn tmp_columns(f: &Fleet, o: &AnalyzeOptions) -> TmpColumns {
    let mut cols = Columns::default();
    cols.sort(f, |r| r.tmp_used);
    let tmp_sorted = &cols.col;
    let tmp_used_bytes = stats::summarize(tmp_sorted);
    let mut limits = o.buckets.clone();
    limits.sort_unstable();
    limits.dedup();
    let tmp_used_buckets = stats::buckets(tmp_sorted, &limits);
    let n = tmp_sorted.len();
    let mut cdf = Vec::new();
    if n > 0 {
        let step = (n / 1000).max(1);
        cdf = (0..n)
            .step_by(step)
            .chain(std::iter::once(n - 1))
            .map(|i| (tmp_sorted[i], (i + 1) as f64 / n as f64))
            .collect();
    }
    let recommendation = fit::recommend_with(
        f,
        tmp_sorted,
        &mut cols.scratch,
        o.target_percent,
        o.headroom_percent,
    );
    let tmp_inodes = stats::summarize(cols.sorted(f, |r| r.inodes));
    TmpColumns {
        tmp_used_bytes,
        tmp_used_buckets,
        cdf,
        tmp_inodes,
        fit: fit::fleet_fits(f, &o.fit, o.list),
        recommendation,
    }
}

/// What [`analyze`] takes from the memory and swap columns.
struct MemoryColumns {
    mem_total_bytes: Option<Summary>,
    ram_hist: Vec<(u64, u64)>,
    mem_available_bytes: Option<Summary>,
    mem_free_bytes: Option<Summary>,
    swap_total_bytes: Option<Summary>,
    swap_used_bytes: Option<Summary>,
}

fn memory_columns(f: &Fleet) -> MemoryColumns {
    let mut cols = Columns::default();
    // RAM and swap sizes take few values: counted, not sorted, where they do.
    let (mem_total_bytes, ram_hist) =
        match stats::distinct_counts(f.rows.iter().map(|r| r.mem_total)) {
            Some(d) => (stats::summarize_counts(&d), ram_histogram(d.into_iter())),
            None => {
                let sorted = cols.sorted(f, |r| r.mem_total);
                (
                    stats::summarize(sorted),
                    ram_histogram(sorted.iter().map(|&m| (m, 1))),
                )
            }
        };
    let swap_total_bytes = match stats::distinct_counts(f.rows.iter().map(|r| r.swap_total)) {
        Some(d) => stats::summarize_counts(&d),
        None => stats::summarize(cols.sorted(f, |r| r.swap_total)),
    };
    MemoryColumns {
        mem_total_bytes,
        ram_hist,
        mem_available_bytes: stats::summarize(cols.sorted(f, |r| r.mem_avail)),
        mem_free_bytes: stats::summarize(cols.sorted(f, |r| r.mem_free)),
        swap_total_bytes,
        swap_used_bytes: stats::summarize(cols.sorted(f, |r| {
            if r.swap_total == u64::MAX || r.swap_free == u64::MAX {
                u64::MAX
            } else {
                r.swap_total.saturating_sub(r.swap_free)
            }
        })),
    }
}

/// Hosts per power-of-two RAM size (rounded up: 7.8 GiB counts as 8 GiB),
/// from the RAM figures ascending, each with how many hosts have it.
fn ram_histogram(ascending: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (m, hosts) in ascending {
        // MemTotal is a bit under the installed RAM, so rounding up lands on it.
        let b = m.max(1).checked_next_power_of_two().unwrap_or(u64::MAX);
        match out.last_mut() {
            Some((ub, c)) if *ub == b => *c += hosts,
            _ => out.push((b, hosts)),
        }
    }
    out
}
