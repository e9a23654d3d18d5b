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
    /// Threads the input is read and the columns are worked on (0: the
    /// cores available). The report is the same for any count.
    pub threads: usize,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            fit: FitParams::default(),
            target_percent: 99.0,
            headroom_percent: 25.0,
            buckets: DEFAULT_BUCKETS.to_vec(),
            list: 100,
            threads: 0,
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

/// The buffers a thread sorts its columns in, one after the other: their
/// pages are faulted in once, not once a column (at 1 M hosts that was
/// 16 MB of fresh zeroed memory per column). `scratch` stays empty while
/// the columns' values differ in 32 bits or fewer (see
/// [`stats::sort_column_with`]).
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
    let (mine, memory, fit) = columns(f, o);
    let TmpColumns {
        tmp_used_bytes,
        tmp_used_buckets,
        cdf,
        tmp_inodes,
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

/// What [`analyze`] takes from the /tmp columns.
struct TmpColumns {
    tmp_used_bytes: Option<Summary>,
    tmp_used_buckets: Vec<Bucket>,
    cdf: Vec<(u64, f64)>,
    tmp_inodes: Option<Summary>,
    recommendation: Recommendation,
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

/// One column's work, or the fits: what a [`Task`] gives back.
enum Part {
    Tmp {
        summary: Option<Summary>,
        buckets: Vec<Bucket>,
        cdf: Vec<(u64, f64)>,
        recommendation: Recommendation,
    },
    Fits(Box<Fits>),
    Summary(Option<Summary>),
    Counted(Option<Summary>, Vec<(u64, u64)>),
}

/// The work on the columns, in the order the pool takes it: the longest
/// first (the /tmp column is sorted and then scanned twice for the
/// recommendation), so no thread is left with a long task at the end.
#[derive(Clone, Copy)]
enum Task {
    Tmp,
    Fits,
    Inodes,
    MemAvail,
    MemFree,
    SwapUsed,
    MemTotal,
    SwapTotal,
}

const TASKS: [Task; 8] = [
    Task::Tmp,
    Task::Fits,
    Task::Inodes,
    Task::MemAvail,
    Task::MemFree,
    Task::SwapUsed,
    Task::MemTotal,
    Task::SwapTotal,
];

/// Every statistic of every column, and the fits, on a pool of
/// `o.threads` threads (the cores available when 0) that each take the
/// next task as they finish one. Each task is computed alone from the
/// rows, so the results do not depend on the thread count; the pool is
/// bounded by the number of tasks and by the longest (the /tmp column).
fn columns(f: &Fleet, o: &AnalyzeOptions) -> (TmpColumns, MemoryColumns, Fits) {
    let threads = super::threads_or_cores(o.threads).min(TASKS.len());
    let mut parts: Vec<(usize, Part)> = if threads <= 1 {
        let mut cols = Columns::default();
        TASKS
            .iter()
            .enumerate()
            .map(|(k, t)| (k, task(*t, f, o, &mut cols)))
            .collect()
    } else {
        use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        // Each thread's sort buffers serve all its columns.
                        let mut cols = Columns::default();
                        let mut mine = Vec::new();
                        loop {
                            let k = next.fetch_add(1, Relaxed);
                            let Some(t) = TASKS.get(k) else { break mine };
                            mine.push((k, task(*t, f, o, &mut cols)));
                        }
                    })
                })
                .collect();
            hs.into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    parts.sort_unstable_by_key(|p| p.0);
    let mut it = parts.into_iter().map(|p| p.1);
    let summary = |it: &mut dyn Iterator<Item = Part>| match it.next() {
        Some(Part::Summary(s)) => s,
        _ => unreachable!("the tasks are in TASKS order"),
    };
    let (
        Some(Part::Tmp {
            summary: tmp_used_bytes,
            buckets,
            cdf,
            recommendation,
        }),
        Some(Part::Fits(fit)),
    ) = (it.next(), it.next())
    else {
        unreachable!("the tasks are in TASKS order")
    };
    let tmp_inodes = summary(&mut it);
    let mem_available_bytes = summary(&mut it);
    let mem_free_bytes = summary(&mut it);
    let swap_used_bytes = summary(&mut it);
    let (Some(Part::Counted(mem_total_bytes, ram_hist)), Some(Part::Summary(swap_total_bytes))) =
        (it.next(), it.next())
    else {
        unreachable!("the tasks are in TASKS order")
    };
    (
        TmpColumns {
            tmp_used_bytes,
            tmp_used_buckets: buckets,
            cdf,
            tmp_inodes,
            recommendation,
        },
        MemoryColumns {
            mem_total_bytes,
            ram_hist,
            mem_available_bytes,
            mem_free_bytes,
            swap_total_bytes,
            swap_used_bytes,
        },
        *fit,
    )
}

fn task(t: Task, f: &Fleet, o: &AnalyzeOptions, cols: &mut Columns) -> Part {
    match t {
        Task::Tmp => tmp_column(f, o, cols),
        Task::Fits => Part::Fits(Box::new(fit::fleet_fits(f, &o.fit, o.list))),
        Task::Inodes => Part::Summary(stats::summarize(cols.sorted(f, |r| r.inodes))),
        Task::MemAvail => Part::Summary(stats::summarize(cols.sorted(f, |r| r.mem_avail))),
        Task::MemFree => Part::Summary(stats::summarize(cols.sorted(f, |r| r.mem_free))),
        Task::SwapUsed => Part::Summary(stats::summarize(cols.sorted(f, |r| {
            if r.swap_total == u64::MAX || r.swap_free == u64::MAX {
                u64::MAX
            } else {
                r.swap_total.saturating_sub(r.swap_free)
            }
        }))),
        // RAM and swap sizes take few values: counted, not sorted, where they do.
        Task::MemTotal => match stats::distinct_counts(f.rows.iter().map(|r| r.mem_total)) {
            Some(d) => Part::Counted(stats::summarize_counts(&d), ram_histogram(d.into_iter())),
            None => {
                let sorted = cols.sorted(f, |r| r.mem_total);
                Part::Counted(
                    stats::summarize(sorted),
                    ram_histogram(sorted.iter().map(|&m| (m, 1))),
                )
            }
        },
        Task::SwapTotal => Part::Summary(
            match stats::distinct_counts(f.rows.iter().map(|r| r.swap_total)) {
                Some(d) => stats::summarize_counts(&d),
                None => stats::summarize(cols.sorted(f, |r| r.swap_total)),
            },
        ),
    }
}

fn tmp_column(f: &Fleet, o: &AnalyzeOptions, cols: &mut Columns) -> Part {
    cols.sort(f, |r| r.tmp_used);
    let tmp_sorted = &cols.col;
    let summary = stats::summarize(tmp_sorted);
    let mut limits = o.buckets.clone();
    limits.sort_unstable();
    limits.dedup();
    let buckets = stats::buckets(tmp_sorted, &limits);
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
    let at_target = (n > 0).then(|| stats::percentile(tmp_sorted, o.target_percent));
    // The sorted column is done with: its buffer takes the shares of RAM.
    let recommendation = fit::recommend_with(
        f,
        at_target,
        &mut cols.col,
        o.target_percent,
        o.headroom_percent,
    );
    Part::Tmp {
        summary,
        buckets,
        cdf,
        recommendation,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::ingest::{self, IngestOptions};

    /// A survey TSV of `n` hosts in no name order, some listed twice, with
    /// mostly distinct figures: enough rows for the parallel paths (blocks,
    /// deduplication passes while reading, radix sorts).
    fn survey(n: u64) -> String {
        let mut s = String::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for i in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let host = (i * 7919) % (n - n / 50);
            let ram = [1_012_548, 4_039_088, 16_337_372][(x % 3) as usize];
            let free = x % (ram / 2);
            let swap = [0, 2_097_148][(x >> 8) as usize % 2];
            s += &format!(
                "h{host}\t{}\t{ram}\t{}\t{free}\t0\t{}\t{}\t{swap}\t0\t{}\t{}\n",
                (x >> 20) % (ram / 2),
                ram - free,
                (x >> 3) % 1000,
                (x >> 5) % 5000,
                swap / 3 + (x >> 11) % 1000 * (swap > 0) as u64,
                (x >> 30) % 100_000,
            );
        }
        s
    }

    fn report(text: &str, threads: usize) -> String {
        let opts = IngestOptions {
            threads,
            ..Default::default()
        };
        let (mut f, mut r) = (Fleet::default(), IngestReport::default());
        f.set_threads(threads);
        ingest::ingest("s.tsv", Box::new(text.as_bytes()), &opts, &mut f, &mut r).unwrap();
        let (dups, ex) = f.dedup(5);
        (r.duplicates_dropped, r.duplicate_examples) = (dups, ex);
        r.finish();
        let source = SourceInfo {
            kind: "files".into(),
            inputs: vec!["s.tsv".into()],
            value: "snapshot".into(),
            window_s: None,
            queries: vec![],
        };
        let o = AnalyzeOptions {
            threads,
            ..Default::default()
        };
        let rep = analyze(&f, r, source, &o);
        let c = &rep.charts;
        format!(
            "{}\n{:?}\n{:?}\n{:?}",
            serde_json::to_string(&rep).unwrap(),
            c.cdf,
            c.scatter,
            c.ram_hist
        )
    }

    #[test]
    fn one_thread_and_many_give_the_same_report() {
        let text = survey(300_000);
        let one = report(&text, 1);
        assert!(
            one.contains("\"duplicates_dropped\":6000"),
            "{}",
            &one[..600]
        );
        for threads in [2, 3, 16] {
            assert!(
                report(&text, threads) == one,
                "{threads} threads differ from 1"
            );
        }
    }
}
