//! `tmpfsctl bench`: tmpfs vs disk, side by side, measured honestly,
//! with the memory-bandwidth ceiling measured in the same run.
//!
//! The command takes a [`BenchRequest`] (built from the command line in
//! `cli::bench`). Library use (e.g. from `advise`): build workloads with [`preset`] or
//! [`temp_file_workloads`], then call [`run_suite`] with [`Options`]; it
//! returns a [`BenchReport`] and writes nothing but its scratch directories.

mod ceiling;
mod chart;
pub mod compare;
mod engine;
pub mod html;
mod html_table;
mod leftover;
pub mod notes;
mod ratio;
pub mod render;
pub mod report;
pub mod stats;
mod stock;
pub mod suite;
pub mod target;
pub mod workload;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_marks;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};

pub use report::{BenchReport, BenchResult, SCHEMA_VERSION};
pub use suite::{Options, need, run_suite, run_suite_with};
pub use workload::{CacheWant, Op, Preset, Scale, Sync, Workload, preset, temp_file_workloads};

use crate::context::{Context, ExitCode};

use crate::sys::signals::Interrupted;

/// What `tmpfsctl bench` is asked to do.
#[derive(Debug, Clone)]
pub enum BenchRequest {
    /// Measure the workloads on the targets and write the report.
    Measure(Box<Measure>),
    /// Show two saved `--json` reports side by side (and write them as HTML).
    Compare {
        a: PathBuf,
        b: PathBuf,
        html: Option<PathBuf>,
    },
}

/// A measuring run: where, what, how, and where the report goes.
#[derive(Debug, Clone)]
pub struct Measure {
    /// Directories (or private tmpfs mounts with options) to compare; empty =
    /// a private tmpfs (root) or /dev/shm vs the default disk.
    pub targets: Vec<target::TargetSpec>,
    pub workloads: Vec<Workload>,
    pub options: Options,
    pub outputs: Outputs,
}

/// Files the report is written to besides (or instead of) the terminal
/// table; "-" is stdout.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// The JSON report on stdout instead of the table.
    pub json_stdout: bool,
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub html: Option<PathBuf>,
    /// A directory for one SVG file per chart.
    pub svg: Option<PathBuf>,
}

impl Outputs {
    /// Every path writable and at most one output on stdout: checked before
    /// anything is measured, so a typo costs a second, not a whole suite.
    pub fn check(&self) -> Result<()> {
        let files = [
            ("--export-json", &self.json),
            ("--export-csv", &self.csv),
            ("--export-markdown", &self.markdown),
            ("--html", &self.html),
        ];
        let mut stdout: Vec<&str> = Vec::new();
        if self.json_stdout {
            stdout.push("--json");
        }
        for (what, p) in files {
            let Some(p) = p else { continue };
            if p == Path::new("-") {
                stdout.push(what);
            } else {
                crate::sys::atomic::check_writable(what, p)?;
            }
        }
        anyhow::ensure!(
            stdout.len() <= 1,
            "{} all write to stdout; give all but one a file name",
            stdout.join(" and ")
        );
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
            crate::sys::atomic::check_writable("--svg", &probe)?;
        }
        Ok(())
    }
}

/// Write `text` to FILE (whole, via the shared atomic writer), or stdout for "-".
fn emit(what: &str, dest: &Path, text: &[u8]) -> Result<()> {
    if dest == Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(text)?;
        out.flush()?;
        return Ok(());
    }
    // Reports are for reading by others too (a CI artifact, a web server).
    crate::sys::atomic::AtomicWrite::report(what).write(dest, text)
}

fn output(out: &Outputs, r: &BenchReport) -> Result<()> {
    let mut stdout_taken = out.json_stdout;
    let mut json = serde_json::to_vec_pretty(r)?;
    json.push(b'\n');
    if out.json_stdout {
        emit("--json", Path::new("-"), &json)?;
    }
    if let Some(p) = &out.json {
        emit("--export-json", p, &json)?;
        stdout_taken |= p == Path::new("-");
    }
    if let Some(p) = &out.csv {
        emit("--export-csv", p, render::csv(r).as_bytes())?;
        stdout_taken |= p == Path::new("-");
    }
    if let Some(p) = &out.markdown {
        emit("--export-markdown", p, render::markdown(r).as_bytes())?;
        stdout_taken |= p == Path::new("-");
    }
    if let Some(p) = &out.html {
        emit("--html", p, html::html(r).as_bytes())?;
        stdout_taken |= p == Path::new("-");
    }
    if let Some(d) = &out.svg {
        html::write_svgs(r, d)?;
    }
    if !stdout_taken {
        let mut out = std::io::stdout().lock();
        out.write_all(render::table(r).as_bytes())?;
        out.flush()?;
    }
    for w in &r.warnings {
        // Explanations went under the table already.
        if stdout_taken || !notes::CODES.contains(&w.code.as_str()) {
            let tag = crate::render::color::paint_err(crate::render::color::Tone::Warn, "warning:");
            eprintln!(
                "{}",
                crate::render::paragraph("", &format!("{tag} {}", w.message))
            );
        }
    }
    Ok(())
}

fn load(p: &Path) -> Result<BenchReport> {
    let text =
        std::fs::read(p).with_context(|| format!("--compare {}: cannot read", p.display()))?;
    let r: BenchReport = serde_json::from_slice(&text).with_context(|| {
        format!(
            "--compare {}: not a `tmpfsctl bench --json` report (schema_version {SCHEMA_VERSION})",
            p.display()
        )
    })?;
    anyhow::ensure!(
        r.schema_version == SCHEMA_VERSION,
        "--compare {}: schema_version {} is not {SCHEMA_VERSION}; rerun the benchmark with this tmpfsctl",
        p.display(),
        r.schema_version
    );
    Ok(r)
}

pub fn run(ctx: &Context, req: &BenchRequest) -> Result<ExitCode> {
    match req {
        BenchRequest::Compare { a, b, html } => {
            if let Some(h) = html {
                crate::sys::atomic::check_writable("--html", h)?;
            }
            let (ra, rb) = (load(a)?, load(b)?);
            print!("{}", compare::text(&ra, &rb, a, b));
            if let Some(h) = html {
                crate::sys::atomic::AtomicWrite::report("--html")
                    .write(h, compare::html(&ra, &rb, a, b).as_bytes())?;
            }
            Ok(ExitCode::Ok)
        }
        BenchRequest::Measure(m) => measure(ctx, m),
    }
}

/// A private tmpfs mounted for the run, and the options it was asked for.
type Mounted = (target::PrivateTmpfs, Option<String>);

/// The target directories, mounting the private tmpfs ones (the default
/// pair when none is named). Called on the main thread before any
/// benchmark thread starts, as the private mount namespace needs.
fn mount_targets(
    ctx: &Context,
    specs: &[target::TargetSpec],
    workloads: &[Workload],
) -> Result<(Vec<PathBuf>, Vec<Mounted>)> {
    let (nb, _) = need(workloads);
    let size = nb + target::margin_bytes(nb) + (8 << 20);
    let root = rustix::process::geteuid().is_root();
    let mut private: Vec<Mounted> = Vec::new();
    let mut targets = Vec::new();
    if specs.is_empty() {
        let disk = target::default_disk_dir(ctx)?;
        if root {
            let t = target::PrivateTmpfs::mount(size)?;
            targets.push(t.path.clone());
            private.push((t, None));
        } else {
            targets.push(PathBuf::from("/dev/shm"));
        }
        targets.push(disk);
        return Ok((targets, private));
    }
    for spec in specs {
        match spec {
            target::TargetSpec::Dir(d) => targets.push(d.clone()),
            target::TargetSpec::Tmpfs(o) => {
                anyhow::ensure!(
                    root,
                    "target tmpfs:{}: mounting a private tmpfs needs root; run with sudo, or name a directory",
                    o.text
                );
                let t = target::PrivateTmpfs::mount_with(size, Some(o))?;
                targets.push(t.path.clone());
                private.push((t, Some(o.text.clone())));
            }
        }
    }
    Ok((targets, private))
}

fn measure(ctx: &Context, m: &Measure) -> Result<ExitCode> {
    m.outputs.check()?;
    let (workloads, opts) = (&m.workloads, &m.options);
    let stop = Arc::clone(&opts.stop);
    use crate::sys::signals::Interrupt;
    let _signals = Interrupt::install_on(stop, true).context("cannot install signal handlers")?;

    let (targets, private) = mount_targets(ctx, &m.targets, workloads)?;
    let specs: Vec<target::PrivateSpec> = private
        .iter()
        .map(|(t, options)| target::PrivateSpec {
            path: t.path.clone(),
            options: options.clone(),
        })
        .collect();
    let res = suite::run_suite_on(ctx, &targets, &specs, workloads, opts);
    // Unmounted here, before the report is written: nothing outlives the run.
    drop(private);
    match res {
        Ok(r) => {
            output(&m.outputs, &r)?;
            Ok(ExitCode::Ok)
        }
        Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
            Err(e.context("scratch directories removed, nothing left behind"))
        }
        Err(e) => Err(e),
    }
}
