//! `tmpfsctl bench` (issue 3): tmpfs vs disk, side by side, measured honestly,
//! with the memory-bandwidth ceiling measured in the same run.
//!
//! Library use (e.g. from `advise`): build workloads with [`preset`] or
//! [`temp_file_workloads`], then call [`run_suite`] with [`Options`]; it
//! returns a [`BenchReport`] and writes nothing but its scratch directories.

mod ceiling;
mod engine;
pub mod html;
pub mod render;
pub mod report;
pub mod stats;
mod stock;
pub mod suite;
pub mod target;
pub mod workload;

#[cfg(test)]
mod tests;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};

pub use report::{BenchReport, BenchResult, SCHEMA_VERSION};
pub use suite::{Options, need, run_suite, run_suite_with};
pub use workload::{CacheWant, Op, Preset, Scale, Sync, Workload, preset, temp_file_workloads};

use crate::context::{Context, ExitCode};

pub use crate::sys::signals::Interrupted;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  tmpfsctl bench                       # private tmpfs (root) or /dev/shm vs /var/tmp's disk\n  \
tmpfsctl bench /dev/shm ~/build       # any directories\n  \
tmpfsctl bench --preset dd            # dd done right: buffered vs conv=fsync vs oflag=dsync\n  \
tmpfsctl bench --rw rand-read --bs 4k --size 1G /dev/shm /var/tmp\n  \
tmpfsctl bench --json run.json --markdown -\n  \
tmpfsctl bench --compare before.json after.json\n\n\
Methodology: data is random; writes include fsync/O_DSYNC when the label says so; disk reads labelled \
cold are evicted (posix_fadvise, checked with mincore) or O_DIRECT, else labelled warm; the targets run in \
alternation (A B, B A, ...), >= --min-runs runs each and >= --min-time on the slowest (op-counted runs last about --min-time / 10, \
after an untimed warm-up), then on until the ratio's 95% interval is within --ratio-precision or --max-time has passed; \
the ratio is the median of per-run ratios with the running-order effect taken out; latency is a separate pass; every \
figure is compared with memcpy measured in the same run, and memcpy is measured again at the end to catch a host whose \
memory bandwidth moved. Free space and inodes are checked before anything is written. Units are binary (MiB = 2^20)."
)]
pub struct BenchArgs {
    /// Directories to compare (default: a private tmpfs when root, else /dev/shm, vs the disk under /var/tmp or $HOME)
    #[arg(value_name = "TARGET")]
    pub targets: Vec<PathBuf>,

    /// Workload set
    #[arg(long, value_enum, default_value = "default")]
    pub preset: Preset,

    /// Tiny sizes and no minimum time: a smoke test in seconds (figures are not meaningful)
    #[arg(long)]
    pub quick: bool,

    /// File size of streaming workloads (default 512M; --quick 8M)
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,

    /// Files per small-file/metadata run, or files a streaming workload spreads over with --rw
    #[arg(long, value_name = "N")]
    pub files: Option<u64>,

    /// Minimum measured runs per workload and target
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub min_runs: u32,

    /// Maximum measured runs per workload and target
    #[arg(long, value_name = "N", default_value_t = 40)]
    pub max_runs: u32,

    /// Keep running until the slowest target of a workload has this much measured time (default 500ms; e.g. 2s)
    #[arg(long, value_name = "DURATION")]
    pub min_time: Option<String>,

    /// After --min-runs and --min-time, keep alternating the targets until the tmpfs/disk ratio's 95% interval is within PCT% of it (0 = off; default 5; --quick: 0)
    #[arg(long, value_name = "PCT")]
    pub ratio_precision: Option<f64>,

    /// Stop a workload's alternation after this long even if --ratio-precision is not reached (default 3s)
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,

    /// Skip the separate per-op latency pass
    #[arg(long)]
    pub no_latency: bool,

    /// Buffer size for the memcpy ceiling (default: >= 1 GiB and >= 2x the last-level cache)
    #[arg(long, value_name = "SIZE")]
    pub ceiling_size: Option<String>,

    #[command(flatten)]
    pub custom: Box<CustomArgs>,

    #[command(flatten)]
    pub out: Box<OutputArgs>,

    /// Show two saved --json runs side by side instead of measuring
    #[arg(long, num_args = 2, value_names = ["A.json", "B.json"], conflicts_with_all = ["targets", "rw", "quick"])]
    pub compare: Option<Vec<PathBuf>>,
}

/// fio-like knobs for one custom workload (`--rw` and friends).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CustomArgs {
    /// Custom workload: seq-write, rewrite, seq-read, rand-read, rand-write, small-files, metadata
    #[arg(long, value_enum, value_name = "OP")]
    pub rw: Option<Op>,
    /// Custom workload: block size (default 1M for seq, 4k for random, 1k for small files)
    #[arg(long, value_name = "SIZE", requires = "rw")]
    pub bs: Option<String>,
    /// Custom workload: none, fsync-end, dsync, fsync-each, or a number N (fsync every N writes)
    #[arg(long, value_name = "MODE", requires = "rw")]
    pub sync: Option<String>,
    /// Custom workload: O_DIRECT
    #[arg(long, requires = "rw")]
    pub direct: bool,
    /// Custom workload: reads warm instead of cold
    #[arg(long, requires = "rw")]
    pub warm: bool,
    /// Custom workload: threads, each with its own files
    #[arg(long, value_name = "N", default_value_t = 1, requires = "rw")]
    pub threads: u32,
    /// Custom workload: requests in flight per thread
    #[arg(long, value_name = "N", default_value_t = 1, requires = "rw")]
    pub iodepth: u32,
    /// Custom workload: time per run for random/small-file/metadata workloads (e.g. 2s)
    #[arg(long, value_name = "DURATION", requires = "rw")]
    pub runtime: Option<String>,
}

/// Where the report goes besides (or instead of) the terminal table.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OutputArgs {
    /// Write the JSON report (schema_version 1) to FILE, or - for stdout
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write CSV (one line per workload and target) to FILE, or - for stdout
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write a Markdown table to FILE, or - for stdout
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// Write a self-contained HTML report (bar charts, iozone heat map, ceiling line) to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write each chart as an SVG file into DIR
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
}

/// "500ms", "2s", "1.5", "1m" -> Duration (plain numbers are seconds).
pub fn parse_duration(s: &str) -> Result<Duration> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .with_context(|| format!("duration {s:?}: write e.g. 500ms, 2s or 1.5"))?;
    Ok(Duration::from_secs_f64(v * mult))
}

fn parse_sync(s: &str) -> Result<Sync> {
    Ok(match s {
        "none" | "buffered" => Sync::None,
        "fsync-end" | "fsync" | "end" => Sync::FsyncEnd,
        "dsync" | "o_dsync" => Sync::Dsync,
        "fsync-each" => Sync::FsyncEach,
        n => match n.parse::<u64>() {
            Ok(k) if k > 0 => Sync::FsyncEvery(k),
            _ => anyhow::bail!(
                "--sync {s:?}: use none, fsync-end, dsync, fsync-each or a number N (fsync every N writes)"
            ),
        },
    })
}

fn size_arg(flag: &str, v: &str) -> Result<u64> {
    crate::units::parse_bytes(v).map_err(|e| anyhow::anyhow!("{flag}: {e}"))
}

/// The workloads the arguments ask for.
pub fn workloads_from_args(a: &BenchArgs) -> Result<Vec<Workload>> {
    let mut scale = if a.quick {
        Scale::QUICK
    } else {
        Scale::DEFAULT
    };
    if let Some(s) = &a.size {
        scale.size_bytes = size_arg("--size", s)?;
        anyhow::ensure!(scale.size_bytes > 0, "--size must be > 0");
    }
    if let Some(f) = a.files
        && a.custom.rw.is_none()
    {
        anyhow::ensure!(f > 0, "--files must be > 0");
        scale.files = f;
    }
    let Some(op) = a.custom.rw else {
        return Ok(preset(a.preset, scale));
    };
    let bs = match &a.custom.bs {
        Some(b) => size_arg("--bs", b)?,
        None => match op {
            Op::SeqWrite | Op::SeqRead | Op::Rewrite => 1 << 20,
            Op::RandRead | Op::RandWrite => 4096,
            Op::SmallFiles => 1024,
            Op::Metadata => 0,
        },
    };
    let sync = match &a.custom.sync {
        Some(s) => parse_sync(s)?,
        None => Sync::None,
    };
    let files = a
        .files
        .unwrap_or(if matches!(op, Op::SmallFiles | Op::Metadata) {
            scale.files
        } else {
            1
        });
    let mut w = Workload {
        id: "custom".into(),
        label: String::new(),
        op,
        bs_bytes: bs,
        size_bytes: scale.size_bytes,
        files,
        ops: 0,
        sync,
        direct: a.custom.direct,
        cache: if a.custom.warm {
            CacheWant::Warm
        } else {
            CacheWant::Cold
        },
        threads: a.custom.threads,
        iodepth: a.custom.iodepth,
    };
    if op.op_counted() {
        w.ops = match op {
            Op::SmallFiles | Op::Metadata => files,
            _ => (scale.size_bytes / bs.max(1)).clamp(1, 1 << 20),
        };
    } else if op == Op::SeqWrite && sync == Sync::Dsync {
        w.ops = scale.size_bytes / bs.max(1);
    }
    if op == Op::Metadata {
        w.bs_bytes = 1;
    }
    let w = w.labelled();
    w.validate()?;
    Ok(vec![w])
}

pub fn options_from_args(a: &BenchArgs) -> Result<Options> {
    let mut o = Options::default();
    if a.quick {
        o.min_time = Duration::ZERO;
        // Bounded on any device: a slow disk shortens op-counted runs, not the test.
        o.runtime = Some(Duration::from_millis(50));
        o.ceiling_buffer_bytes = Some(32 << 20);
    }
    if a.preset == Preset::Iozone && !a.quick && a.custom.rw.is_none() {
        // 66 cells x targets: a shorter minimum per cell keeps the matrix to a few minutes.
        o.min_time = Duration::from_millis(150);
    }
    if let Some(t) = &a.min_time {
        o.min_time = parse_duration(t).context("--min-time")?;
    }
    if a.quick {
        o.ratio_precision_percent = 0.0;
    }
    if let Some(p) = a.ratio_precision {
        anyhow::ensure!(
            p.is_finite() && (0.0..100.0).contains(&p),
            "--ratio-precision {p}: give a percentage from 0 (off) to below 100, e.g. 5"
        );
        o.ratio_precision_percent = p;
    }
    if let Some(t) = &a.max_time {
        o.max_time = parse_duration(t).context("--max-time")?;
    }
    anyhow::ensure!(a.min_runs >= 1, "--min-runs must be >= 1");
    o.min_runs = a.min_runs;
    o.max_runs = a.max_runs.max(a.min_runs);
    o.latency = !a.no_latency;
    if let Some(c) = &a.ceiling_size {
        let b = size_arg("--ceiling-size", c)?;
        anyhow::ensure!(b >= 1 << 20, "--ceiling-size must be at least 1M");
        o.ceiling_buffer_bytes = Some(b);
    }
    if let Some(r) = &a.custom.runtime {
        o.runtime = Some(parse_duration(r).context("--runtime")?);
    }
    o.progress = crate::render::stderr_is_tty();
    Ok(o)
}

/// Write `text` to FILE (whole, via the shared atomic writer), or stdout for "-".
fn emit(what: &str, dest: &Path, text: &[u8]) -> Result<()> {
    if dest == Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(text)?;
        out.flush()?;
        return Ok(());
    }
    crate::sys::atomic::AtomicWrite {
        what,
        mode: crate::sys::atomic::NewMode::Exactly(0o600),
    }
    .write(dest, text)
}

fn output(a: &BenchArgs, r: &BenchReport) -> Result<()> {
    let mut stdout_taken = false;
    if let Some(p) = &a.out.json {
        let mut s = serde_json::to_vec_pretty(r)?;
        s.push(b'\n');
        emit("--json", p, &s)?;
        stdout_taken |= p == Path::new("-");
    }
    if let Some(p) = &a.out.csv {
        emit("--csv", p, render::csv(r).as_bytes())?;
        stdout_taken |= p == Path::new("-");
    }
    if let Some(p) = &a.out.markdown {
        emit("--markdown", p, render::markdown(r).as_bytes())?;
        stdout_taken |= p == Path::new("-");
    }
    if let Some(p) = &a.out.html {
        emit("--html", p, html::html(r).as_bytes())?;
        stdout_taken |= p == Path::new("-");
    }
    if let Some(d) = &a.out.svg {
        html::write_svgs(r, d)?;
    }
    if !stdout_taken {
        let mut out = std::io::stdout().lock();
        out.write_all(render::table(r).as_bytes())?;
        out.flush()?;
    }
    for w in &r.warnings {
        eprintln!("warning: {}", w.message);
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

pub fn run(ctx: &Context, args: &BenchArgs) -> Result<ExitCode> {
    if let Some(files) = &args.compare {
        let a = load(&files[0])?;
        let b = load(&files[1])?;
        print!("{}", render::compare(&a, &b, &files[0], &files[1]));
        return Ok(ExitCode::Ok);
    }
    // Parse and validate everything before touching the system.
    let workloads = workloads_from_args(args)?;
    let opts = options_from_args(args)?;
    let stop = Arc::clone(&opts.stop);
    use crate::sys::signals::Interrupt;
    let _signals = Interrupt::install_on(stop, true).context("cannot install signal handlers")?;

    let mut private = None;
    let targets: Vec<PathBuf> = if args.targets.is_empty() {
        let disk = target::default_disk_dir(ctx)?;
        let ram: PathBuf = if rustix::process::geteuid().is_root() {
            let (nb, _) = need(&workloads);
            let m = target::PrivateTmpfs::mount(nb + target::margin_bytes(nb) + (8 << 20))?;
            let p = m.path.clone();
            private = Some(m);
            p
        } else {
            PathBuf::from("/dev/shm")
        };
        vec![ram, disk]
    } else {
        args.targets.clone()
    };
    let private_paths: Vec<PathBuf> = private.iter().map(|m| m.path.clone()).collect();
    let res = run_suite_with(ctx, &targets, &private_paths, &workloads, &opts);
    drop(private);
    match res {
        Ok(r) => {
            output(args, &r)?;
            Ok(ExitCode::Ok)
        }
        Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
            eprintln!("tmpfsctl: interrupted; scratch directories removed, nothing left behind");
            Ok(ExitCode::Interrupted)
        }
        Err(e) => Err(e),
    }
}
