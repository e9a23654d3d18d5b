//! `run_suite`: the reusable core (no CLI code): check targets, measure the
//! ceiling, run every workload on every target, then label the results.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

use super::alternation::{Alternation, interleave_fits};
use super::engine::{self, CacheMode, Plan};
use super::ratio::{fmt_ratio, ratio_pair};
use super::report::target_name;
use super::report::*;
use super::stats::{self, HIGH_RSD};
use super::target::{self, Scratch, Target};
use super::workload::{Op, Sync, Workload};
use crate::command::Context;

/// How to run a suite (everything except what and where).
#[derive(Debug, Clone)]
pub struct Options {
    /// At least this many measured runs per workload and target.
    pub min_runs: u32,
    /// Keep running until one target (the slowest, in lockstep) has this much
    /// measured time (bounded by max_runs).
    pub min_time: Duration,
    pub max_runs: u32,
    /// After min_runs and min_time, keep alternating (in A B B A blocks)
    /// until the ratio's 95% interval is within this many percent of it ...
    /// (0 = stop at min_runs/min_time).
    pub ratio_precision_percent: f64,
    /// ... or a workload's alternation has run this long (wall time), or max_runs.
    pub max_time: Duration,
    /// One untimed run first (streaming workloads; op-counted ones use their probe run).
    pub warmup: bool,
    /// A separate pass with a clock read around every op, for p50/p99/p99.9.
    pub latency: bool,
    /// memcpy ceiling buffer; None = well beyond the last-level cache.
    pub ceiling_buffer_bytes: Option<u64>,
    pub ceiling_runs: u32,
    /// Per-run time bound for op-counted workloads (fio's --runtime).
    pub runtime: Option<Duration>,
    /// Progress bars on stderr (the CLI sets this only when stderr is a terminal).
    pub progress: bool,
    /// Set by a signal handler (or a caller) to stop early; scratch is then removed.
    pub stop: Arc<AtomicBool>,
    /// A smoke test (`--quick`): recorded in the report, which marks every
    /// figure as not meaningful.
    pub quick: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min_runs: 5,
            min_time: Duration::from_millis(500),
            max_runs: 40,
            ratio_precision_percent: DEFAULT_RATIO_PRECISION_PERCENT,
            max_time: Duration::from_secs(3),
            warmup: true,
            latency: true,
            ceiling_buffer_bytes: None,
            ceiling_runs: 3,
            runtime: None,
            progress: false,
            stop: Arc::new(AtomicBool::new(false)),
            quick: false,
        }
    }
}

/// Default of [`Options::ratio_precision_percent`]: half the 10% within which
/// back-to-back suites should agree, as the interval is of one suite's ratio.
pub const DEFAULT_RATIO_PRECISION_PERCENT: f64 = 5.0;

/// Peak bytes and inodes the workloads need on each target.
pub fn need(workloads: &[Workload]) -> (u64, u64) {
    let b = workloads
        .iter()
        .map(|w| w.footprint_bytes())
        .max()
        .unwrap_or(0);
    let i = workloads
        .iter()
        .map(|w| w.footprint_inodes())
        .max()
        .unwrap_or(0);
    (b, i)
}

/// As [`run_suite`]; `private` lists targets that are tmpfs mounts made for this run.
pub fn run_suite_with(
    ctx: &Context,
    targets: &[PathBuf],
    private: &[PathBuf],
    workloads: &[Workload],
    opts: &Options,
) -> Result<BenchReport> {
    let private: Vec<target::PrivateSpec> = private
        .iter()
        .map(|p| target::PrivateSpec {
            path: p.clone(),
            options: None,
            zram: None,
        })
        .collect();
    run_suite_on(ctx, targets, &private, workloads, opts)
}

/// As [`run_suite_with`], with the mount options of each private tmpfs.
pub fn run_suite_on(
    ctx: &Context,
    targets: &[PathBuf],
    private: &[target::PrivateSpec],
    workloads: &[Workload],
    opts: &Options,
) -> Result<BenchReport> {
    let started = Instant::now();
    anyhow::ensure!(!targets.is_empty(), "no targets to benchmark");
    anyhow::ensure!(!workloads.is_empty(), "no workloads to run");
    for w in workloads {
        w.validate()?;
    }
    let (need_b, need_i) = need(workloads);
    let checked: Vec<Target> = targets
        .iter()
        .map(|t| {
            let p = private.iter().find(|p| &p.path == t);
            target::check(ctx, t, need_b, need_i, p)
        })
        .collect::<Result<_>>()?;

    let (mem, _) = ctx.sysroot.meminfo()?;
    let llc = super::ceiling::llc_bytes();
    let host = HostInfo {
        kernel: rustix::system::uname()
            .release()
            .to_string_lossy()
            .into_owned(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        mem_total_bytes: mem.mem_total_bytes,
        llc_bytes: llc,
        l2_bytes: super::ceiling::cache_bytes(Some(2)),
    };
    let buf = opts
        .ceiling_buffer_bytes
        .unwrap_or_else(|| super::ceiling::auto_buffer_bytes(llc, mem.mem_available_bytes));
    let spinner = bar(
        opts.progress,
        "memory ceiling: memcpy of ".to_string() + &crate::units::fmt_bytes(buf),
    );
    let ceiling = super::ceiling::measure(buf, opts.ceiling_runs, llc, &opts.stop)?;
    spinner.finish_and_clear();
    let clock_ns = engine::clock_overhead_ns();

    let plan = Plan {
        min_runs: opts.min_runs,
        min_time: opts.min_time,
        warmup: opts.warmup,
        latency: opts.latency,
        clock_ns,
        runtime: opts.runtime,
    };

    let infos: Vec<TargetInfo> = checked.iter().map(|t| t.info.clone()).collect();
    let pair = ratio_pair(&infos);
    // Scratch directories live until the end; dropping them (error, signal) removes them.
    let scratches: Vec<Scratch> = checked.iter().map(Scratch::create).collect::<Result<_>>()?;
    let pb = overall_bar(opts.progress, workloads.len() as u64);
    let run = Alternation {
        pb: &pb,
        targets: &checked,
        scratches: &scratches,
        plan: &plan,
        pair,
        opts,
        ceiling: &ceiling,
        host: &host,
    };
    let interleave = interleave_fits(&infos, workloads, mem.mem_available_bytes);
    let results = run.run(workloads, interleave)?;
    pb.finish_and_clear();
    for s in scratches {
        s.remove()?;
    }
    let mut ceiling = ceiling;
    let spinner = bar(opts.progress, "memory ceiling again".to_string());
    ceiling.memcpy_end_bytes_per_s = Some(super::ceiling::recheck(
        super::ceiling::recheck_buffer_bytes(buf, llc),
        opts.ceiling_runs,
        &opts.stop,
    )?);
    spinner.finish_and_clear();

    let mut report = BenchReport {
        schema_version: SCHEMA_VERSION,
        quick: opts.quick,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        host,
        elapsed_ns: started.elapsed().as_nanos() as u64,
        clock_overhead_ns: clock_ns,
        min_runs: plan.min_runs,
        min_time_ns: plan.min_time.as_nanos() as u64,
        targets: infos,
        ceiling,
        workloads: workloads.to_vec(),
        results,
        ratios: Vec::new(),
        warnings: Vec::new(),
    };
    report.ratios = ratios(&report);
    report.warnings = warnings(&report);
    report.warnings.extend(super::notes::notes(&report));
    Ok(report)
}

/// A bar over the suite's workloads: what runs, done/total and an ETA from
/// the workloads done so far. Hidden unless asked (stderr is a terminal).
fn overall_bar(show: bool, total: u64) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(total);
    if let Ok(st) = ProgressStyle::with_template(
        "{spinner} [{bar:24}] {pos}/{len} workloads, ETA {eta} [{elapsed}] {wide_msg}",
    ) {
        pb.set_style(st.progress_chars("=> "));
    }
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

fn bar(show: bool, msg: String) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    if let Ok(st) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
        pb.set_style(st);
    }
    pb.set_message(msg);
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// Where a result's data most likely sat (see [`BenchResult::tier`]).
pub fn tier(w: &Workload, ram_backed: bool, cache_state: &str, host: &HostInfo) -> &'static str {
    if matches!(w.op, Op::SmallFiles | Op::Metadata) {
        return "n/a";
    }
    let disk_io = if w.op.is_read() {
        cache_state == "cold"
    } else {
        w.sync.durable() || w.direct
    };
    if !ram_backed && disk_io {
        return "device";
    }
    // A disk target's data that did not come from the device came from the
    // page cache, whatever CPU cache also held it: that is the tier to name.
    if !ram_backed {
        return "page-cache";
    }
    let ws = w.size_bytes / w.threads.max(1) as u64;
    if host.l2_bytes.is_some_and(|l| ws <= l) {
        "cpu-cache"
    } else if host.llc_bytes.is_some_and(|l| ws <= l) {
        "llc"
    } else if ram_backed {
        "ram"
    } else {
        "page-cache"
    }
}

pub(super) fn to_result(
    w: &Workload,
    t: &Target,
    m: &engine::Measured,
    ceiling: &Ceiling,
    host: &HostInfo,
) -> BenchResult {
    let (ops, bytes) = engine::run_volume(&m.effective, m.ops_per_run);
    let by_bytes = w.reports_bytes();
    let samples: Vec<f64> = m
        .run_ns
        .iter()
        .map(|&ns| (if by_bytes { bytes } else { ops }) as f64 * 1e9 / ns as f64)
        .collect();
    let s = stats::summarize(&samples);
    let bytes_per_s = (bytes > 0).then_some(if by_bytes {
        s.median
    } else {
        s.median * w.bs_bytes as f64
    });
    let mut flags = Vec::new();
    let (cache_state, cache_method) = match &m.cache_mode {
        CacheMode::NotApplicable(why) => ("n/a".to_string(), why.to_string()),
        CacheMode::Direct => ("cold".into(), "O_DIRECT (bypasses the page cache)".into()),
        CacheMode::Evict => (
            "cold".into(),
            format!(
                "posix_fadvise(DONTNEED) before each run; mincore showed {:.1}% resident",
                m.resident.unwrap_or(0.0) * 100.0
            ),
        ),
        CacheMode::Warm => {
            flags.push("page_cache_read".to_string());
            if w.cache == super::workload::CacheWant::Cold {
                flags.push("warm_not_cold".to_string());
            }
            (
                "warm".into(),
                format!(
                    "served from the page cache ({:.0}% resident)",
                    m.resident.unwrap_or(1.0) * 100.0
                ),
            )
        }
    };
    if !t.info.ram_backed
        && !w.op.is_read()
        && w.op != Op::Metadata
        && w.sync == Sync::None
        && !w.direct
    {
        flags.push("not_durable_page_cache".into());
    }
    let ceiling_fraction = bytes_per_s.map(|b| b / ceiling.memcpy_bytes_per_s);
    if ceiling_fraction.is_some_and(|f| f > 1.0) {
        flags.push("above_memory_ceiling".into());
    }
    if s.rsd_percent > HIGH_RSD * 100.0 {
        flags.push("high_spread".into());
    }
    if s.outliers > 0 {
        flags.push("outliers".into());
    }
    if m.engine == engine::Engine::PsyncThreads {
        flags.push("iodepth_emulated_with_threads".into());
    }
    let cpu_wait_percent = (!m.cpu_wait.is_empty()).then(|| {
        let mut v: Vec<f64> = m.cpu_wait.iter().map(|x| x * 100.0).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        stats::median(&v)
    });
    if cpu_wait_percent.is_some_and(|p| p > CPU_WAIT_FLAG_PERCENT) {
        flags.push("cpu_contention".into());
    }
    let latency = m
        .latency
        .as_ref()
        .filter(|h| !h.is_empty())
        .map(|h| Latency {
            p50: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
            samples: h.len(),
        });
    let tier = tier(w, t.info.ram_backed, &cache_state, host).to_string();
    BenchResult {
        tier,
        workload: w.id.clone(),
        label: w.label.clone(),
        target: t.shown.clone(),
        unit: if by_bytes { "bytes_per_s" } else { "ops_per_s" }.into(),
        throughput_bytes_per_s: bytes_per_s,
        ops_per_s: (!by_bytes).then_some(s.median),
        median: s.median,
        min: s.min,
        max: s.max,
        spread_percent: s.spread_percent,
        rsd_percent: s.rsd_percent,
        outliers: s.outliers,
        runs: m.run_ns.len() as u32,
        samples,
        bytes_per_run: bytes,
        ops_per_run: ops,
        latency_ns: latency,
        cache_state,
        cache_method,
        engine: m.engine.name().into(),
        ceiling_fraction,
        cpu_wait_percent,
        flags,
        zram: None,
    }
}

/// Share of a run spent waiting for a CPU above which a result is flagged:
/// the figure then measures the competition as much as the target.
pub const CPU_WAIT_FLAG_PERCENT: f64 = 10.0;
/// The end-of-run memcpy figure this far from the first is flagged.
pub const MEMORY_MOVED_PERCENT: f64 = 10.0;
/// A ratio whose 95% interval reaches further than this from it is flagged.
pub const RATIO_UNCERTAIN_PERCENT: f64 = 10.0;

/// Per workload, the first RAM-backed target against the first disk target:
/// the median of the per-run ratios when the runs were paired (same count,
/// run in alternation), else the ratio of the medians.
pub fn ratios(r: &BenchReport) -> Vec<Ratio> {
    let Some((a, b)) = ratio_pair(&r.targets) else {
        return Vec::new();
    };
    let (ta, tb) = (&r.targets[a].path, &r.targets[b].path);
    r.workloads
        .iter()
        .filter_map(|w| {
            let x = r.result(&w.id, ta)?;
            let y = r.result(&w.id, tb)?;
            let base = Ratio {
                workload: w.id.clone(),
                numerator_target: ta.clone(),
                denominator_target: tb.clone(),
                ratio: f64::NAN,
                paired: false,
                pairs: 0,
                order_effect: None,
                ratio_ci95_low: None,
                ratio_ci95_high: None,
                ratio_min: None,
                ratio_max: None,
                ratio_rsd_percent: None,
                ratio_uncertainty_percent: None,
                bimodal: None,
                flags: Vec::new(),
            };
            let paired = (x.samples.len() == y.samples.len())
                .then(|| stats::PairedRatio::of(&x.samples, &y.samples))
                .flatten();
            match paired {
                Some(p) => {
                    let u = p.uncertainty_percent();
                    let mut flags = Vec::new();
                    if u.is_finite() && u > RATIO_UNCERTAIN_PERCENT {
                        flags.push("ratio_uncertain".to_string());
                    }
                    let bimodal = super::bimodal::of(x, y);
                    flags.extend(bimodal.as_ref().map(|_| "ratio_bimodal".to_string()));
                    Some(Ratio {
                        ratio: p.median,
                        paired: true,
                        pairs: p.pairs,
                        order_effect: p.order_effect,
                        ratio_ci95_low: Some(p.ci_low),
                        ratio_ci95_high: Some(p.ci_high),
                        ratio_min: Some(p.min),
                        ratio_max: Some(p.max),
                        ratio_rsd_percent: Some(p.rsd_percent),
                        ratio_uncertainty_percent: Some(u),
                        bimodal,
                        flags,
                        ..base
                    })
                }
                None => (y.median > 0.0).then(|| Ratio {
                    ratio: x.median / y.median,
                    ..base
                }),
            }
        })
        .collect()
}

pub(crate) fn warnings(r: &BenchReport) -> Vec<Warning> {
    let mut out = Vec::new();
    let with = |flag: &str| -> Vec<String> {
        r.results
            .iter()
            .filter(|x| x.flags.iter().any(|f| f == flag))
            .map(|x| format!("{} on {}", x.workload, target_name(r, &x.target)))
            .collect()
    };
    let uncertain: Vec<String> = r
        .ratios
        .iter()
        .filter(|x| x.flags.iter().any(|f| f == "ratio_uncertain"))
        .map(|x| {
            format!(
                "{} {} (95% rerun interval {}..{})",
                x.workload,
                fmt_ratio(x.ratio),
                x.ratio_ci95_low.map_or("?".into(), |v| format!("{v:.2}")),
                x.ratio_ci95_high.map_or("?".into(), |v| format!("{v:.2}"))
            )
        })
        .collect();
    let mut add = |code: &str, items: Vec<String>, msg: &str| {
        if !items.is_empty() {
            const SHOWN: usize = 6;
            let mut list = items
                .iter()
                .take(SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if items.len() > SHOWN {
                list.push_str(&format!(
                    " and {} more; see the flags in --json",
                    items.len() - SHOWN
                ));
            }
            out.push(Warning {
                code: code.into(),
                message: format!("{msg} ({list})"),
            });
        }
    };
    add(
        "above_memory_ceiling",
        with("above_memory_ceiling"),
        "faster than memcpy measured in the same run: this cannot be I/O to RAM or disk, so it measured a CPU cache or a shortcut; use a larger --size",
    );
    add(
        "warm_not_cold",
        with("warm_not_cold"),
        "could not make these reads cold (eviction did not empty the cache and O_DIRECT is unsupported): they read the page cache, so a disk looks as fast as RAM — the iozone 'reread' and sysbench 'seqrd after prepare' pitfall",
    );
    add(
        "page_cache_read",
        with("page_cache_read"),
        "warm reads of a disk target come from the page cache (RAM), not the disk; compare the cold rows to see the disk",
    );
    add(
        "not_durable",
        with("not_durable_page_cache"),
        "buffered writes without fsync on a disk land in the page cache: the disk did no work inside the timing (the dd-without-conv=fsync pitfall)",
    );
    add(
        "high_spread",
        with("high_spread"),
        "runs vary by more than 10% (robust relative std dev): other programs are competing for CPU or I/O; close them or raise --min-time",
    );
    add(
        "outliers",
        with("outliers"),
        "some runs were statistical outliers (modified Z-score > 3.5): interference during the run; rerun with a larger --min-time",
    );
    add(
        "cpu_contention",
        with("cpu_contention"),
        &format!(
            "other programs kept the benchmark waiting for a CPU more than {CPU_WAIT_FLAG_PERCENT:.0}% of the run time (cpu_wait_percent in --json): RAM-speed figures are understated and their ratios move with the load; rerun on an idle machine"
        ),
    );
    add(
        "ratio_uncertain",
        uncertain,
        &format!(
            "the RAM/disk ratio of these workloads is uncertain by more than {RATIO_UNCERTAIN_PERCENT:.0}% (95% rerun interval, from the per-run ratios and their drift): a rerun may well land anywhere in it. \
             The per-run times of the disk vary on their own (shared or throttled virtual disk, flushes, other I/O: fio run a few times on it, e.g. `fio --name=probe --directory=DIR --rw=randwrite --bs=4k --sync=dsync --size=8M`, shows whether its speed moves on its own) or the CPU was busy; \
             trust the order of magnitude, or raise --max-time (default 3s per workload) for a narrower interval"
        ),
    );
    add(
        "ratio_bimodal",
        super::bimodal::listed(r),
        super::bimodal::WARNING,
    );
    let ext4_churn: Vec<String> = r
        .results
        .iter()
        .filter(|x| {
            r.workloads
                .iter()
                .any(|w| w.id == x.workload && matches!(w.op, Op::SmallFiles | Op::Metadata))
                && r.targets
                    .iter()
                    .any(|t| t.path == x.target && t.ext4_journal == Some(false))
        })
        .map(|x| format!("{} on {}", x.workload, target_name(r, &x.target)))
        .collect();
    add(
        "ext4_recently_deleted",
        ext4_churn,
        "each run created its files in a fresh directory: ext4 without a journal (as here) will not reuse an inode deleted in the last 1-6 minutes and scans past each one, so in a directory whose block group saw many deletions (a busy /tmp) creating files was up to 25x slower on this project's VM; expect lower figures there",
    );
    add(
        "iodepth_emulated",
        with("iodepth_emulated_with_threads"),
        "io_uring is not available here (kernel.io_uring_disabled or seccomp): queue depth > 1 was emulated with one thread per in-flight request",
    );
    if let Some(m) = r
        .ceiling
        .moved_percent()
        .filter(|m| m.abs() > MEMORY_MOVED_PERCENT)
    {
        out.push(Warning {
            code: "memory_bandwidth_moved".into(),
            message: format!(
                "single-thread memcpy ran at {} at the start and {} at the end of this run ({m:+.0}%): something else competed for memory bandwidth (another program, or on a VM another guest on the same host), so the RAM-side figures and their ratios moved with it; rerun when the machine is quiet",
                crate::units::fmt_rate(r.ceiling.memcpy_bytes_per_s),
                crate::units::fmt_rate(r.ceiling.memcpy_end_bytes_per_s.unwrap_or(f64::NAN)),
            ),
        });
    }
    if !r.ceiling.buffer_exceeds_llc {
        out.push(Warning {
            code: "ceiling_buffer_small".into(),
            message: format!(
                "the memcpy buffer ({}) is not at least twice the last-level cache ({}): the ceiling may be a cache figure",
                crate::units::fmt_bytes(r.ceiling.buffer_bytes),
                r.host.llc_bytes.map_or("?".into(), crate::units::fmt_bytes)
            ),
        });
    }
    out
}
