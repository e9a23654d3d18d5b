//! The measuring loop. A run does a fixed amount of work between two clock
//! reads (no clock read per I/O); latency is sampled in a separate pass that
//! reads the clock around every op and subtracts the measured cost of doing so.
//!
//! A [`Session`] runs one workload on one target with one [`worker::Worker`]
//! per thread; a worker does the untimed work around each run and hands the
//! timed part to its I/O backend ([`backend::Backend`]: `psync.rs`, `uring.rs`).

mod backend;
mod io;
mod psync;
mod uring;
mod worker;

#[cfg(test)]
mod tests;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use hdrhistogram::Histogram;

use super::stock::Stock;
use super::workload::{CacheWant, Op, Workload};
pub use backend::Engine;
use backend::{Setup, file_bytes};
pub use io::CacheMode;
use io::{check_stop, direct_supported, evict, io_err, resident_fraction};
use worker::Worker;
/// Op-counted runs are sized so that about this many fit into --min-time.
pub const OP_RUNS_PER_MIN_TIME: u32 = 10;
/// Untimed warm-up of op-counted workloads: this share of --min-time ...
const WARMUP_SHARE_OF_MIN_TIME: u64 = 5;
/// ... but never more runs than this.
const MAX_WARMUP_RUNS: u32 = 20;

/// Ops (the unit of a result) and bytes moved by one run of `ops`.
pub fn run_volume(w: &Workload, ops: u64) -> (u64, u64) {
    let per_thread = match w.op {
        Op::SeqWrite if w.ops > 0 => {
            let blocks = (ops / w.files).max(1) * w.files;
            (blocks, blocks * w.bs_bytes)
        }
        Op::SeqWrite | Op::Rewrite | Op::SeqRead => {
            let blocks = file_bytes(w) / w.bs_bytes * w.files;
            (blocks, blocks * w.bs_bytes)
        }
        Op::RandRead | Op::RandWrite | Op::SmallFiles => (ops, ops * w.bs_bytes),
        Op::Metadata => (3 * ops, 0),
    };
    let t = w.threads as u64;
    (per_thread.0 * t, per_thread.1 * t)
}

/// One measured (workload, target) pair before statistics.
pub struct Measured {
    /// The workload as run (queue depth emulated with threads when io_uring is missing).
    pub effective: Workload,
    pub engine: Engine,
    /// Nanoseconds of each measured run.
    pub run_ns: Vec<u64>,
    /// Per run: share of its time this thread was runnable but not running
    /// (another program had the CPU); empty for multi-thread workloads.
    pub cpu_wait: Vec<f64>,
    pub ops_per_run: u64,
    pub latency: Option<Histogram<u64>>,
    pub cache_mode: CacheMode,
    /// Resident fraction seen after eviction (max over runs), or before warm runs.
    pub resident: Option<f64>,
}

pub struct Plan {
    pub min_runs: u32,
    pub min_time: Duration,
    pub warmup: bool,
    pub latency: bool,
    pub clock_ns: u64,
    /// Per-run time bound for op-counted workloads (`--runtime`).
    pub runtime: Option<Duration>,
}

/// The workload to run and how: queue depth via io_uring, or the stated fallback.
fn effective(w: &Workload) -> (Workload, Engine) {
    if w.iodepth <= 1 {
        return (w.clone(), Engine::Psync);
    }
    if uring::available() {
        return (w.clone(), Engine::IoUring);
    }
    let q = w.iodepth as u64;
    let mut e = w.clone();
    e.threads = w.threads * w.iodepth;
    e.iodepth = 1;
    // Same total bytes and ops, split over the extra threads.
    e.size_bytes = ((w.size_bytes / q) / (w.bs_bytes * w.files)).max(1) * w.bs_bytes * w.files;
    e.ops = if w.ops > 0 { (w.ops / q).max(1) } else { 0 };
    (e, Engine::PsyncThreads)
}

/// Median cost of one `Instant::now()` pair, subtracted from latency samples.
pub fn clock_overhead_ns() -> u64 {
    let mut v: Vec<u64> = (0..1001)
        .map(|_| {
            let t = Instant::now();
            t.elapsed().as_nanos() as u64
        })
        .collect();
    v.sort_unstable();
    v[v.len() / 2]
}

fn new_hist() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).context("histogram")
}

/// This thread's time spent runnable but waiting for a CPU, from
/// /proc/thread-self/schedstat (its second field, ns); None where unavailable.
fn runqueue_wait_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().nth(1)?.parse().ok()
}

/// One workload on one target, prepared and ready to be run again and again,
/// so a suite can interleave the targets run by run (A B B A ...) and both see
/// the same state of the machine.
pub struct Session<'a> {
    wdir: PathBuf,
    w: Workload,
    engine: Engine,
    workers: Vec<Worker>,
    direct: bool,
    mode: CacheMode,
    ram_backed: bool,
    resident: Option<f64>,
    ops: u64,
    plan: &'a Plan,
    stop: &'a AtomicBool,
    run_ns: Vec<u64>,
    cpu_wait: Vec<f64>,
    measured: Duration,
    removed: bool,
    stock: Stock,
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if !self.removed {
            self.workers.clear();
            let _ = std::fs::remove_dir_all(&self.wdir);
        }
    }
}

impl<'a> Session<'a> {
    /// Create the workload's directory in `scratch`, write its files, check
    /// the cache state, size its runs and do the warm-up (all untimed).
    pub fn start(
        w: &Workload,
        scratch: &Path,
        ram_backed: bool,
        plan: &'a Plan,
        stop: &'a AtomicBool,
    ) -> Result<Session<'a>> {
        let wdir = scratch.join(&w.id);
        std::fs::create_dir(&wdir).map_err(|e| io_err(e, "creating", &wdir))?;
        let (eff, engine) = effective(w);
        let mut sess = Session {
            wdir,
            w: eff,
            engine,
            workers: Vec::new(),
            direct: w.direct,
            mode: CacheMode::NotApplicable("write"),
            ram_backed,
            resident: None,
            ops: 0,
            plan,
            stop,
            run_ns: Vec::new(),
            cpu_wait: Vec::new(),
            measured: Duration::ZERO,
            removed: false,
            stock: Stock::in_scratch(scratch),
        };
        // On error the session is dropped, which removes its directory.
        sess.init()?;
        Ok(sess)
    }

    fn init(&mut self) -> Result<()> {
        let wdir = self.wdir.clone();
        if self.direct && !direct_supported(&wdir) {
            anyhow::ensure!(
                self.ram_backed,
                "O_DIRECT is not supported on {}; drop --direct for this target",
                wdir.display()
            );
            // Older tmpfs refuses O_DIRECT; its data is RAM either way.
            self.direct = false;
        }
        let w = self.w.clone();
        self.mode = if !w.op.is_read() {
            CacheMode::NotApplicable("write")
        } else if self.ram_backed {
            CacheMode::NotApplicable("RAM-backed: the data is the cache")
        } else if self.direct {
            CacheMode::Direct
        } else if w.cache == CacheWant::Warm {
            CacheMode::Warm
        } else {
            CacheMode::Evict
        };
        self.workers = (0..w.threads)
            .map(|t| {
                let dir = wdir.join(format!("t{t}"));
                Worker::new(dir, &w, 0x7e57_0000 + t as u64, self.engine)
            })
            .collect::<Result<_>>()?;
        let setup = Setup {
            w: &w,
            stop: self.stop,
            direct: self.direct,
        };
        // Keep only stocked files this workload can use: it must not write
        // its own while another workload's are still there.
        self.stock.trim(w.takes_stock().then(|| file_bytes(&w)))?;
        for wk in &mut self.workers {
            wk.prepare(&setup, &self.stock)?;
        }
        // Check once that eviction really empties the cache; if not, O_DIRECT, else say "warm".
        if self.mode == CacheMode::Evict {
            let f = File::open(&self.workers[0].st.files[0])?;
            evict(&f)?;
            let r = resident_fraction(&f)?;
            self.resident = Some(r);
            if r > 0.01 {
                if direct_supported(&wdir) {
                    self.mode = CacheMode::Direct;
                    self.direct = true;
                } else {
                    self.mode = CacheMode::Warm;
                }
            }
        }
        let resident_between_runs =
            matches!(self.mode, CacheMode::NotApplicable(_) | CacheMode::Warm) && !self.direct;
        if resident_between_runs && matches!(w.op, Op::RandRead | Op::RandWrite) {
            for wk in &mut self.workers {
                wk.touch(2, self.stop)?;
            }
        }
        // How many ops a run does: whole files for streaming, otherwise sized
        // so that a run lasts about min_time / min_runs (bounded by the nominal count).
        let adaptive = w.ops > 0;
        self.ops = if adaptive { w.ops } else { 0 };
        if adaptive {
            let probe = w.ops.min(64);
            let (ns, _) = self.run_all(probe, false)?;
            let per_op = ns as f64 / probe as f64;
            // Many short runs rather than a few long ones: a median of many
            // resists the stalls a virtual disk has every few hundred ms.
            let mut target_ns = self.plan.min_time.as_nanos() as f64
                / self.plan.min_runs.max(OP_RUNS_PER_MIN_TIME) as f64;
            if let Some(rt) = self.plan.runtime {
                target_ns = rt.as_nanos() as f64;
            }
            if target_ns > 0.0 {
                self.ops = ((target_ns / per_op) as u64).clamp(probe, w.ops);
            }
        }
        if self.plan.warmup {
            if adaptive {
                // The rate of short runs climbs for the first ~100 ms even
                // over pages in their steady state (tmpfs 4 KiB random reads:
                // 770k, 820k, 850k, 880k, then flat near 900k IOPS); untimed
                // runs take that climb, or it lands in the first pairs.
                let budget = self.plan.min_time.as_nanos() as u64 / WARMUP_SHARE_OF_MIN_TIME;
                let mut spent = 0;
                for _ in 0..MAX_WARMUP_RUNS {
                    if spent >= budget {
                        break;
                    }
                    spent += self.run_all(self.ops, false)?.0;
                }
            } else {
                self.run_all(self.ops, false)?;
            }
        }
        if self.mode == CacheMode::Warm && !self.ram_backed {
            let f = File::open(&self.workers[0].st.files[0])?;
            self.resident = Some(resident_fraction(&f)?);
        }
        Ok(())
    }

    /// One run of every worker: untimed preparation, the timed part, untimed
    /// cleanup. Returns the run's ns and, in the latency pass, its histogram.
    fn run_all(&mut self, ops: u64, lat: bool) -> Result<(u64, Option<Histogram<u64>>)> {
        let setup = Setup {
            w: &self.w,
            stop: self.stop,
            direct: self.direct,
        };
        let clock_ns = self.plan.clock_ns;
        for wk in self.workers.iter_mut() {
            wk.before_run(&setup, &self.mode, ops)?;
        }
        let mut hists: Vec<Option<Histogram<u64>>> = (0..self.workers.len())
            .map(|_| if lat { new_hist().ok() } else { None })
            .collect();
        let single = self.workers.len() == 1;
        let wait0 = if single { runqueue_wait_ns() } else { None };
        let t = Instant::now();
        if single {
            self.workers[0].run(&setup, ops, hists[0].as_mut(), clock_ns)?;
        } else {
            let setup = &setup;
            std::thread::scope(|sc| -> Result<()> {
                let hs: Vec<_> = self
                    .workers
                    .iter_mut()
                    .zip(hists.iter_mut())
                    .map(|(wk, h)| sc.spawn(move || wk.run(setup, ops, h.as_mut(), clock_ns)))
                    .collect();
                for h in hs {
                    h.join()
                        .map_err(|_| anyhow::anyhow!("benchmark thread panicked"))??;
                }
                Ok(())
            })?;
        }
        let ns = t.elapsed().as_nanos() as u64;
        if let (Some(a), Some(b), false) = (wait0, runqueue_wait_ns().filter(|_| single), lat) {
            self.cpu_wait
                .push(b.saturating_sub(a) as f64 / ns.max(1) as f64);
        }
        for wk in self.workers.iter_mut() {
            wk.after_run(&setup)?;
        }
        let mut merged: Option<Histogram<u64>> = None;
        for h in hists.into_iter().flatten() {
            match merged.as_mut() {
                None => merged = Some(h),
                Some(m) => {
                    let _ = m.add(&h);
                }
            }
        }
        Ok((ns.max(1), merged))
    }

    /// One measured run; returns its nanoseconds.
    pub fn run_once(&mut self) -> Result<u64> {
        check_stop(self.stop)?;
        let (ns, _) = self.run_all(self.ops, false)?;
        self.run_ns.push(ns);
        self.measured += Duration::from_nanos(ns);
        Ok(ns)
    }

    pub fn run_ns(&self) -> &[u64] {
        &self.run_ns
    }

    pub fn runs(&self) -> u32 {
        self.run_ns.len() as u32
    }

    /// Measured time so far (all runs).
    pub fn measured(&self) -> Duration {
        self.measured
    }

    /// The latency pass (when planned), the last eviction check, and removal
    /// of the workload's files.
    pub fn finish(mut self) -> Result<Measured> {
        let latency = if self.plan.latency {
            self.run_all(self.ops, true)?.1
        } else {
            None
        };
        if self.mode == CacheMode::Evict {
            let f = File::open(&self.workers[0].st.files[0])?;
            evict(&f)?;
            self.resident = Some(self.resident.unwrap_or(0.0).max(resident_fraction(&f)?));
        }
        // Complete data files go to the stock for the next workload; the
        // rest goes, so each workload starts from the same free space.
        if self.w.op.leaves_complete_files() && self.w.bs_bytes > 0 && self.w.files > 0 {
            let files: Vec<PathBuf> = self
                .workers
                .iter()
                .flat_map(|w| w.st.files.clone())
                .collect();
            self.stock.put(&files, file_bytes(&self.w))?;
        }
        self.workers.clear();
        self.removed = true;
        std::fs::remove_dir_all(&self.wdir).map_err(|e| io_err(e, "removing", &self.wdir))?;
        Ok(Measured {
            effective: self.w.clone(),
            engine: self.engine,
            run_ns: std::mem::take(&mut self.run_ns),
            cpu_wait: std::mem::take(&mut self.cpu_wait),
            ops_per_run: self.ops,
            latency,
            cache_mode: self.mode.clone(),
            resident: self.resident,
        })
    }
}
