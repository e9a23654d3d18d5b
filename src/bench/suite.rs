//! `run_suite`: the reusable core (no CLI code): check targets, measure the
//! ceiling, run every workload on every target, then label the results.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

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
    let mut results = Vec::new();
    for w in workloads {
        results.extend(run.workload(w, &w.label)?);
        pb.inc(1);
    }
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

/// What every workload of a suite is measured with.
struct Alternation<'a> {
    /// The suite's one progress bar: workloads done of all, with an ETA.
    pb: &'a ProgressBar,
    targets: &'a [Target],
    scratches: &'a [Scratch],
    plan: &'a Plan,
    pair: Option<(usize, usize)>,
    opts: &'a Options,
    ceiling: &'a Ceiling,
    host: &'a HostInfo,
}

impl Alternation<'_> {
    /// One workload on every target: prepare a session per target, run
    /// them in turns until [`done`], then the latency pass and the results.
    /// `what` names the workload in progress messages.
    fn workload(&self, w: &Workload, what: &str) -> Result<Vec<BenchResult>> {
        let (checked, opts) = (self.targets, self.opts);
        let what = |t: &Target| format!("{what} on {}", t.shown);
        let mut sessions = Vec::new();
        let pb = self.pb;
        for (t, s) in checked.iter().zip(self.scratches) {
            pb.set_message(format!("{}: preparing", what(t)));
            sessions.push(engine::Session::start(
                w,
                s.path(),
                t.info.ram_backed,
                self.plan,
                &opts.stop,
            )?);
        }
        // The targets take turns run by run, A B B A A B ...: both are
        // measured across the same stretch of time, so a burst of other
        // activity hits both (and the per-run ratio), and neither always runs
        // right after the other.
        pb.set_message(what(&checked[0]));
        let mut round = 0u32;
        let looped = Instant::now();
        while !done(&sessions, round, self.pair, opts, looped.elapsed()) {
            let order: Vec<usize> = if round.is_multiple_of(2) {
                (0..sessions.len()).collect()
            } else {
                (0..sessions.len()).rev().collect()
            };
            for i in order {
                pb.set_message(format!("{}: run {}", what(&checked[i]), round + 1));
                sessions[i].run_once()?;
            }
            round += 1;
        }
        let mut results = Vec::new();
        for ((t, sess), s) in checked.iter().zip(sessions).zip(self.scratches) {
            // Before finish, which removes the workload's files.
            let zram = t
                .info
                .zram
                .as_ref()
                .and_then(|_| super::zram::cost_at(s.path()));
            pb.set_message(format!("{}: latency pass", what(t)));
            let m = sess.finish()?;
            results.push(BenchResult {
                zram,
                ..to_result(w, t, &m, self.ceiling, self.host)
            });
        }
        Ok(results)
    }
}

/// Whether a workload's alternation may stop: the minimums are met (see
/// [`minimums_met`]); then, for the compared pair, only after an even number
/// of rounds (as many A-first as B-first) and once the ratio is as precise
/// as asked, max_time has passed, or a session reached max_runs.
fn done(
    sessions: &[engine::Session],
    rounds: u32,
    pair: Option<(usize, usize)>,
    opts: &Options,
    elapsed: Duration,
) -> bool {
    let progress: Vec<(u32, Duration)> =
        sessions.iter().map(|s| (s.runs(), s.measured())).collect();
    if !minimums_met(&progress, opts) {
        return false;
    }
    let Some((a, b)) = pair else { return true };
    precise_enough(
        sessions[a].run_ns(),
        sessions[b].run_ns(),
        rounds,
        opts,
        elapsed,
    )
}

/// Every target has --min-runs runs, and the workload has run --min-time:
/// on its slowest target, since the targets run in lockstep. Asking it of
/// every target made the slow one repeat until the fast one had filled
/// --min-time with its short runs (advise: 34 rounds of a 0.5 s disk run to
/// give tmpfs its 300 ms); the ratio's own precision decides beyond this.
fn minimums_met(progress: &[(u32, Duration)], opts: &Options) -> bool {
    progress.iter().all(|(n, _)| *n >= opts.min_runs.max(1))
        && progress
            .iter()
            .any(|(n, t)| *t >= opts.min_time || *n >= opts.max_runs)
}

/// The precision half of [`done`], on the run times of the two compared targets.
fn precise_enough(a: &[u64], b: &[u64], rounds: u32, opts: &Options, elapsed: Duration) -> bool {
    // --max-runs is a hard bound, even on an odd round count.
    if opts.ratio_precision_percent <= 0.0 || a.len().max(b.len()) >= opts.max_runs as usize {
        return true;
    }
    if !rounds.is_multiple_of(2) {
        return false;
    }
    if elapsed >= opts.max_time {
        return true;
    }
    // Work per run is fixed per session, so 1/time is the rate up to a
    // constant factor, which leaves the relative interval unchanged.
    let rate = |ns: &[u64]| -> Vec<f64> { ns.iter().map(|&n| 1.0 / n.max(1) as f64).collect() };
    stats::PairedRatio::of(&rate(a), &rate(b))
        .is_none_or(|p| p.uncertainty_percent() <= opts.ratio_precision_percent)
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

fn to_result(
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
                "{} {} (95% CI {}..{})",
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
            "the RAM/disk ratio of these workloads is uncertain by more than {RATIO_UNCERTAIN_PERCENT:.0}% (95% interval of the median of per-run ratios): a rerun may well differ by that much. \
             The per-run times of the disk vary on their own (shared or throttled virtual disk, flushes, other I/O: `FIO=1 bench/agreement.sh` probes the disk with fio between runs) or the CPU was busy; \
             trust the order of magnitude, or raise --max-time (default 3s per workload) for a narrower interval"
        ),
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

#[cfg(test)]
mod stop_tests {
    use super::*;

    #[test]
    fn minimums_are_runs_on_every_target_and_time_on_the_slowest() {
        let o = Options::default(); // 5 runs, 500 ms, max 40 runs
        let ms = Duration::from_millis;
        // The disk has its 500 ms, tmpfs only 90 ms: enough.
        assert!(minimums_met(&[(5, ms(90)), (5, ms(600))], &o));
        // Too few runs on one target.
        assert!(!minimums_met(&[(4, ms(900)), (5, ms(600))], &o));
        // Nobody has run 500 ms yet ...
        assert!(!minimums_met(&[(6, ms(90)), (6, ms(400))], &o));
        // ... unless max_runs says stop.
        assert!(minimums_met(&[(40, ms(90)), (40, ms(400))], &o));
        // One target alone: its own figures.
        assert!(minimums_met(&[(5, ms(500))], &o));
        assert!(!minimums_met(&[(5, ms(499))], &o));
    }

    #[test]
    fn alternation_runs_until_the_ratio_is_precise() {
        let o = Options::default();
        let t = Duration::from_millis(100);
        // 10 runs each, ratio exactly 2 in every block: precise, stop.
        let a = [50u64; 10];
        let b = [100u64; 10];
        assert!(precise_enough(&a, &b, 10, &o, t));
        // Only after as many A-first as B-first rounds.
        assert!(!precise_enough(&a[..9], &b[..9], 9, &o, t));
        // Ratio 2 in rounds 0-4, 3 in rounds 5-9: far from 5%, go on ...
        let b2: Vec<u64> = (0..10).map(|i| if i < 5 { 100 } else { 150 }).collect();
        assert!(!precise_enough(&a, &b2, 10, &o, t));
        // ... until max_time ...
        assert!(precise_enough(&a, &b2, 10, &o, o.max_time));
        // ... or max_runs ...
        let many_a = vec![50u64; o.max_runs as usize];
        let many_b: Vec<u64> = (0..o.max_runs)
            .map(|i| if i < o.max_runs / 2 { 100 } else { 150 })
            .collect();
        assert!(precise_enough(&many_a, &many_b, o.max_runs, &o, t));
        // (--max-runs bounds even an odd count) ...
        let odd = Options {
            max_runs: 9,
            ..Options::default()
        };
        assert!(precise_enough(&a[..9], &b2[..9], 9, &odd, t));
        // ... and never with --ratio-precision 0.
        let off = Options {
            ratio_precision_percent: 0.0,
            ..Options::default()
        };
        assert!(precise_enough(&a, &b2, 9, &off, t));
    }
}
