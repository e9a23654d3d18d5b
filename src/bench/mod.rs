//! `tmpfsctl bench`: tmpfs vs disk, side by side, measured honestly,
//! with the memory-bandwidth ceiling measured in the same run.
//!
//! The command takes a [`BenchRequest`] (built from the command line in
//! `cli::bench`). Library use (e.g. from `advise`): build workloads with [`preset`] or
//! [`temp_file_workloads`], then call [`run_suite`] with [`Options`]; it
//! returns a [`BenchReport`] and writes nothing but its scratch directories.

mod alternation;
mod bimodal;
mod ceiling;
mod chart;
pub mod compare;
mod engine;
mod html;
mod html_table;
mod leftover;
mod notes;
mod options;
mod output;
pub use notes::{SMALL_PAGES_WHY, large_folios};
pub use output::CHARTS;
pub use render::QUICK_NOTE;
mod ratio;
mod render;
pub mod report;
mod result;
pub mod stats;
mod stock;
pub mod suite;
pub mod target;
pub mod workload;
pub mod zram;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_marks;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};

pub use options::{Options, need};
pub use report::{BenchReport, SCHEMA_VERSION};
pub use suite::run_suite_with;
pub use workload::{CacheWant, Op, Preset, Scale, Sync, Workload, preset, temp_file_workloads};

use crate::command::{Context, Request};

use crate::sys::atomic;
use crate::sys::signals::Interrupted;

/// What `tmpfsctl bench` is asked to do.
#[derive(Debug, Clone)]
pub enum BenchRequest {
    /// Measure the workloads on the targets.
    Measure(Box<Measure>),
    /// Show two saved `--json` reports side by side.
    Compare { a: PathBuf, b: PathBuf },
    /// Render one saved `--json` report again, in any format a run writes.
    Show(PathBuf),
}

/// A measuring run: where, what and how.
#[derive(Debug, Clone)]
pub struct Measure {
    /// Directories (or private tmpfs mounts with options) to compare; empty =
    /// a private tmpfs (root) or /dev/shm vs the default disk.
    pub targets: Vec<target::TargetSpec>,
    pub workloads: Vec<Workload>,
    pub options: Options,
    /// A directory for one SVG file per chart (not one file, so not an
    /// export of the report: written by the run itself).
    pub svg: Option<PathBuf>,
}

impl Measure {
    /// The SVG directory writable: checked before anything is measured, so
    /// a typo costs a second, not a whole suite.
    pub fn check(&self) -> Result<()> {
        if let Some(d) = &self.svg {
            let probe = if d.exists() {
                anyhow::ensure!(
                    d.is_dir(),
                    "--svg {}: not a directory; give a directory for the SVG files",
                    d.display()
                );
                d.join("x.svg")
            } else {
                d.clone()
            };
            atomic::check_writable("--svg", &probe)?;
        }
        Ok(())
    }
}

/// What `bench` hands back: a measurement, or two side by side.
#[derive(Debug)]
pub enum BenchOutcome {
    Measured(Box<BenchReport>),
    Compared {
        a: Box<BenchReport>,
        b: Box<BenchReport>,
        a_path: PathBuf,
        b_path: PathBuf,
    },
}

fn load(flag: &str, p: &Path) -> Result<BenchReport> {
    let text = std::fs::read(p).with_context(|| format!("{flag} {}: cannot read", p.display()))?;
    let r: BenchReport = serde_json::from_slice(&text).with_context(|| {
        format!(
            "{flag} {}: not a `tmpfsctl bench --json` report (schema_version {SCHEMA_VERSION})",
            p.display()
        )
    })?;
    anyhow::ensure!(
        r.schema_version == SCHEMA_VERSION,
        "{flag} {}: schema_version {} is not {SCHEMA_VERSION}; rerun the benchmark with this tmpfsctl",
        p.display(),
        r.schema_version
    );
    Ok(r)
}

/// `tmpfsctl bench`: measure (or load two saved reports).
impl Request for BenchRequest {
    type Report = BenchOutcome;

    fn run(&self, ctx: &Context) -> Result<BenchOutcome> {
        run(ctx, self)
    }
}

fn run(ctx: &Context, req: &BenchRequest) -> Result<BenchOutcome> {
    match req {
        BenchRequest::Compare { a, b } => Ok(BenchOutcome::Compared {
            a: Box::new(load("--compare", a)?),
            b: Box::new(load("--compare", b)?),
            a_path: a.clone(),
            b_path: b.clone(),
        }),
        BenchRequest::Show(p) => Ok(BenchOutcome::Measured(Box::new(load("--show", p)?))),
        BenchRequest::Measure(m) => measure(ctx, m).map(|r| BenchOutcome::Measured(Box::new(r))),
    }
}

/// The kinds of target bench makes for a run, as TARGET names them: the
/// one list that parsing, making, the root check and the help line read.
pub const KINDS: &[target::TargetKind] = &[target::TMPFS, zram::ZRAM];

/// What a run made for itself: held until the run ends, then taken away
/// (unmounted; for zram, the device removed) by drop, the last made first.
#[derive(Default)]
struct Held(Vec<Box<dyn Send>>);

impl Drop for Held {
    fn drop(&mut self) {
        while self.0.pop().is_some() {}
    }
}

/// The target directories, making the targets of the kinds (the default
/// pair when none is named), and what describes each one made. Called on
/// the main thread before any benchmark thread starts, as the private
/// mount namespace needs.
fn mount_targets(
    ctx: &Context,
    specs: &[target::TargetSpec],
    workloads: &[Workload],
) -> Result<(Vec<PathBuf>, Vec<target::PrivateSpec>, Held)> {
    let (mem, _) = ctx.sysroot.meminfo()?;
    let size = alternation::private_bytes(workloads, mem.mem_available_bytes);
    let root = rustix::process::geteuid().is_root();
    let mut held = Held::default();
    let mut private = Vec::new();
    let mut targets = Vec::new();
    if specs.is_empty() {
        let disk = target::default_disk_dir(ctx)?;
        if root {
            let t = target::PrivateTmpfs::mount(size)?;
            targets.push(t.path.clone());
            private.push(target::PrivateSpec {
                path: t.path.clone(),
                options: None,
                zram: None,
            });
            held.0.push(Box::new(t));
        } else {
            targets.push(PathBuf::from("/dev/shm"));
        }
        targets.push(disk);
        return Ok((targets, private, held));
    }
    // Checked before anything is mounted or made.
    if let Some(target::TargetSpec::Made(m)) = specs
        .iter()
        .find(|s| matches!(s, target::TargetSpec::Made(_)))
        && !root
    {
        anyhow::bail!(
            "target {}: {} needs root; run with sudo, or name a directory",
            m.shown(),
            target::doings()
        );
    }
    for spec in specs {
        match spec {
            target::TargetSpec::Dir(d) => targets.push(d.clone()),
            target::TargetSpec::Made(m) => {
                let (made, guard) = m.make(ctx, size)?;
                targets.push(made.path.clone());
                private.push(made);
                held.0.push(guard);
            }
        }
    }
    Ok((targets, private, held))
}

fn measure(ctx: &Context, m: &Measure) -> Result<BenchReport> {
    m.check()?;
    let (workloads, opts) = (&m.workloads, &m.options);
    let stop = Arc::clone(&opts.stop);
    use crate::sys::signals::Interrupt;
    let _signals = Interrupt::install_on(stop, true).context("cannot install signal handlers")?;

    let (targets, specs, private) = mount_targets(ctx, &m.targets, workloads)?;
    let res = suite::run_suite_on(ctx, &targets, &specs, workloads, opts);
    // Unmounted here, before the report is written: nothing outlives the run.
    drop(private);
    match res {
        Ok(r) => {
            if let Some(d) = &m.svg {
                html::write_svgs(&r, d)?;
            }
            Ok(r)
        }
        Err(e) if e.downcast_ref::<Interrupted>().is_some() => Err(e.context(
            "scratch directories removed, zram devices and private mounts taken away: nothing left behind",
        )),
        Err(e) => Err(e),
    }
}
