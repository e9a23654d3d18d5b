//! The result of a benchmark run: one value, serialised as the `--json` schema
//! and read back by `--compare`. Field names carry their units.

use serde::{Deserialize, Serialize};

use super::workload::Workload;
use crate::sys::zram::MmStat;

/// Bumped on any incompatible change of the JSON below.
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchReport {
    pub schema_version: u32,
    /// A `--quick` smoke test: tiny sizes and no minimum time, so the figures
    /// show that the targets work, not how fast they are.
    #[serde(default)]
    pub quick: bool,
    pub tool_version: String,
    pub host: HostInfo,
    /// Wall time of the whole run.
    pub elapsed_ns: u64,
    /// Cost of one pair of clock reads, subtracted from each latency sample.
    pub clock_overhead_ns: u64,
    pub min_runs: u32,
    pub min_time_ns: u64,
    pub targets: Vec<TargetInfo>,
    pub ceiling: Ceiling,
    pub workloads: Vec<Workload>,
    pub results: Vec<BenchResult>,
    /// First RAM-backed target vs first disk target, per workload.
    pub ratios: Vec<Ratio>,
    pub warnings: Vec<Warning>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostInfo {
    pub kernel: String,
    pub cpus: usize,
    pub mem_total_bytes: u64,
    /// Largest CPU cache per /sys (a VM may report the host's figure).
    pub llc_bytes: Option<u64>,
    /// Per-core level-2 cache.
    pub l2_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetInfo {
    /// The directory as given (or chosen by default).
    pub path: String,
    pub fstype: String,
    pub mountpoint: String,
    pub ram_backed: bool,
    /// True when tmpfsctl mounted this tmpfs itself for the run (and removed it).
    pub private_mount: bool,
    /// A private tmpfs target's mount options as given (`tmpfs:OPTIONS`,
    /// e.g. "huge=within_size"); absent for directories and the default mount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<String>,
    /// tmpfs only: its huge= setting as mounted ("never" when the kernel
    /// shows none): whether file data sits in 4 KiB or 2 MiB pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub huge: Option<String>,
    pub free_bytes: u64,
    pub free_inodes: Option<u64>,
    /// Peak bytes / inodes the suite needed here (checked before writing).
    pub need_bytes: u64,
    pub need_inodes: u64,
    /// ext4 only: whether it has a journal (from /sys/fs/ext4/DEV/journal_task);
    /// absent when not ext4 or unknown. Without one, ext4 will not reuse an
    /// inode deleted in the last minutes (see the `ext4_recently_deleted` warning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext4_journal: Option<bool>,
    /// A zram device made for the run (`zram[:ALG]`): which, with what back end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zram: Option<ZramTargetInfo>,
}

impl TargetInfo {
    /// The target named by what it is: a private tmpfs (with its options) by
    /// that, not by the temporary directory it was mounted on; else its path.
    pub fn label(&self) -> String {
        if let Some(z) = &self.zram {
            return format!("zram {}", z.algorithm);
        }
        match (&self.options, self.private_mount) {
            (Some(o), _) => format!("private tmpfs {o}"),
            (None, true) => "private tmpfs".into(),
            (None, false) => self.path.clone(),
        }
    }

    /// The target as a reader knows it: "private tmpfs huge=never",
    /// "/var/tmp on ext4".
    pub fn describe(&self) -> String {
        if self.private_mount {
            self.label()
        } else {
            format!("{} on {}", self.path, self.fstype)
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ceiling {
    /// Single-thread memcpy: bytes copied per second (each byte read once and
    /// written once is counted once; STREAM "copy" would count it twice).
    pub memcpy_bytes_per_s: f64,
    /// All threads copying disjoint halves of the same buffers, bytes copied per second.
    pub all_core_copy_bytes_per_s: f64,
    /// STREAM Triad (a = b + q*c, f64) on one thread, bytes per second
    /// counted the STREAM way: 24 bytes per element (2 reads + 1 write).
    #[serde(default)]
    pub stream_triad_bytes_per_s: Option<f64>,
    /// The same on all threads, each on its own slice.
    #[serde(default)]
    pub all_core_stream_triad_bytes_per_s: Option<f64>,
    pub threads: usize,
    pub buffer_bytes: u64,
    pub runs: u32,
    /// False when the buffer is not at least twice the largest CPU cache.
    pub buffer_exceeds_llc: bool,
    /// `memcpy_bytes_per_s` measured again after the last workload. More
    /// than 10% away from the first: flagged `memory_bandwidth_moved`.
    #[serde(default)]
    pub memcpy_end_bytes_per_s: Option<f64>,
}

impl Ceiling {
    /// How far the end-of-run memcpy figure moved from the first, in percent.
    pub fn moved_percent(&self) -> Option<f64> {
        self.memcpy_end_bytes_per_s
            .map(|e| (e / self.memcpy_bytes_per_s - 1.0) * 100.0)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Latency {
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
    pub samples: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchResult {
    pub workload: String,
    pub label: String,
    pub target: String,
    /// "bytes_per_s" or "ops_per_s": the unit of median/min/max.
    pub unit: String,
    /// Median throughput; for op workloads ops x block size.
    pub throughput_bytes_per_s: Option<f64>,
    pub ops_per_s: Option<f64>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// (max - min) / median.
    pub spread_percent: f64,
    /// 1.4826 x median absolute deviation / median: the "±" shown in tables.
    pub rsd_percent: f64,
    pub outliers: usize,
    pub runs: u32,
    /// Per-run figures in `unit`, in run order.
    pub samples: Vec<f64>,
    pub bytes_per_run: u64,
    pub ops_per_run: u64,
    pub latency_ns: Option<Latency>,
    /// "cold", "warm" or "n/a" (writes; RAM-backed reads have no cold state).
    pub cache_state: String,
    /// How the cache state was reached and checked.
    pub cache_method: String,
    /// Where the data most likely sat: cpu-cache (working set <= L2), llc
    /// (<= last-level cache), ram (RAM-backed target), page-cache (disk, not
    /// cold / not durable), device (disk, cold read or durable write), n/a.
    pub tier: String,
    /// How requests were issued: psync, io_uring, or psync-threads (queue depth emulated).
    pub engine: String,
    /// Median throughput / memcpy ceiling of the same run.
    pub ceiling_fraction: Option<f64>,
    /// Median over runs of the share of the run this (single) benchmark
    /// thread was runnable but waiting for a CPU another program had, from
    /// /proc/thread-self/schedstat. None for multi-thread workloads.
    #[serde(default)]
    pub cpu_wait_percent: Option<f64>,
    /// Machine-readable caveats: above_memory_ceiling, not_durable_page_cache,
    /// warm_not_cold, high_spread, outliers, cpu_contention, ...
    pub flags: Vec<String>,
    /// zram targets: the RAM the workload's data cost there, read after its
    /// runs with its files still in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zram: Option<ZramCost>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ratio {
    pub workload: String,
    pub numerator_target: String,
    pub denominator_target: String,
    /// numerator / denominator, higher is better for both units. Paired: the
    /// targets ran in alternation (A B, B A, A B, ...) and this is the median
    /// of the per-run ratios after taking out the order effect (see
    /// `order_effect`); else the ratio of the two medians.
    pub ratio: f64,
    /// True when `ratio` comes from paired runs.
    #[serde(default)]
    pub paired: bool,
    /// Runs paired (per target).
    #[serde(default)]
    pub pairs: usize,
    /// Median per-run ratio of the rounds in which the numerator ran first
    /// over that of the rounds in which it ran second (1.0 = the order made
    /// no difference). The per-run ratios were scaled so both kinds of round
    /// centre on their geometric mean before the median was taken.
    #[serde(default)]
    pub order_effect: Option<f64>,
    /// Distribution-free 95% confidence interval of the median per-run ratio.
    #[serde(default)]
    pub ratio_ci95_low: Option<f64>,
    #[serde(default)]
    pub ratio_ci95_high: Option<f64>,
    /// Smallest and largest (order-adjusted) per-run ratio.
    #[serde(default)]
    pub ratio_min: Option<f64>,
    #[serde(default)]
    pub ratio_max: Option<f64>,
    /// Robust relative std dev of the per-run ratios (1.4826 x MAD / median).
    #[serde(default)]
    pub ratio_rsd_percent: Option<f64>,
    /// Larger side of the 95% interval relative to the ratio: how far a rerun
    /// may plausibly land. Above 10% the ratio is flagged `ratio_uncertain`.
    #[serde(default)]
    pub ratio_uncertainty_percent: Option<f64>,
    #[serde(default)]
    pub flags: Vec<String>,
}

impl BenchReport {
    pub fn result(&self, workload: &str, target: &str) -> Option<&BenchResult> {
        self.results
            .iter()
            .find(|r| r.workload == workload && r.target == target)
    }
}

/// How warnings name a target: a private tmpfs by what it is, not by the
/// temporary directory it was mounted on (gone when the run ends).
pub fn target_name(r: &BenchReport, path: &str) -> String {
    match r.targets.iter().find(|t| t.path == path) {
        Some(t) if t.private_mount => format!("{} (RAM)", t.label()),
        _ => path.to_string(),
    }
}

/// How charts and tables name the i-th target: a private tmpfs by what it
/// is, a directory with its filesystem.
pub fn target_label(r: &BenchReport, i: usize) -> String {
    let t = &r.targets[i];
    if t.private_mount {
        t.label()
    } else {
        format!("{} ({})", t.path, t.fstype)
    }
}

/// What the report says about a zram target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZramTargetInfo {
    /// `zram3`.
    pub device: String,
    /// The back end in use, as the device names it.
    pub algorithm: String,
    /// The back ends the device offered.
    pub algorithms: Vec<String>,
    pub disksize_bytes: u64,
}

/// The RAM a zram target's data cost right after a workload's runs, with its
/// files still there and written out (syncfs first, else part of it would
/// still sit in the page cache, not in zram).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ZramCost {
    /// `orig_data_size`: bytes written to the device, uncompressed (file
    /// data plus the file system's own metadata).
    pub orig_data_bytes: u64,
    /// `mem_used_total`: the RAM the device holds, allocator overhead included.
    pub mem_used_total_bytes: u64,
    /// `orig_data_size / mem_used_total`: data stored per byte of RAM.
    pub data_per_ram_ratio: Option<f64>,
}

impl ZramCost {
    pub fn of(m: &MmStat) -> ZramCost {
        ZramCost {
            orig_data_bytes: m.orig_data_bytes,
            mem_used_total_bytes: m.mem_used_total_bytes,
            data_per_ram_ratio: m.ratio(),
        }
    }
}
