//! One workload's runs on one target turned into a result: its figures,
//! where its data most likely sat, and the flags a reader must see.

use super::engine::{self, CacheMode};
use super::report::{BenchResult, Ceiling, HostInfo, Latency};
use super::stats::{self, HIGH_RSD};
use super::target::Target;
use super::workload::{Op, Sync, Workload};

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
