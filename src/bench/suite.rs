//! `run_suite`: the reusable core (no CLI code): check targets, measure the
//! ceiling, run every workload on every target, then label the results.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

use super::alternation::{Alternation, interleave_fits};
use super::engine::{self, Plan};
use super::options::{Options, need};
use super::ratio::{fmt_ratio, ratio_pair};
use super::report::target_name;
use super::report::*;
use super::result::CPU_WAIT_FLAG_PERCENT;
use super::stats;
use super::target::{self, Scratch, Target};
use super::workload::{Op, Workload};
use crate::command::Context;

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
