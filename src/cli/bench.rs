//! `tmpfsctl bench` arguments: parsed and validated here, then handed to
//! the library as a [`BenchRequest`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use super::output::{Structured, json_help};
use crate::bench::target::{self, TargetSpec};
use crate::bench::{
    BenchRequest, CacheWant, Measure, Op, Options, Preset, Scale, Sync, Workload, preset,
};
use crate::command::{Format, Output};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  tmpfsctl bench                       # private tmpfs (root) or /dev/shm vs /var/tmp's disk\n  \
tmpfsctl bench /dev/shm ~/build       # any directories\n  \
tmpfsctl bench tmpfs:huge=within_size tmpfs:huge=never   # does huge= help here? (root)\n  \
tmpfsctl bench tmpfs:huge=never zram:lz4 /var/tmp   # tmpfs, zram and disk side by side, with zram's RAM cost (root)\n  \
tmpfsctl bench --preset dd            # dd done right: buffered vs conv=fsync vs oflag=dsync\n  \
tmpfsctl bench --rw rand-read --bs 4k --size 1G /dev/shm /var/tmp\n  \
tmpfsctl bench --json > run.json       # or --export-json run.json --export-markdown run.md\n  \
tmpfsctl bench --compare before.json after.json\n  \
tmpfsctl bench --show run.json --html run.html   # a saved run as a page\n\n\
Methodology: data is random; writes include fsync/O_DSYNC when the label says so; disk reads labelled \
cold are evicted (posix_fadvise, checked with mincore) or O_DIRECT, else labelled warm; the targets run in \
alternation (A B, B A, ...) and, where all their files fit at once, the workloads take turns round by round, >= --min-runs runs each and >= --min-time on the slowest (op-counted runs last about --min-time / 10, \
after an untimed warm-up), then on until the ratio's 95% interval is within --ratio-precision or --max-time has passed; \
the ratio is the median of per-run ratios with the running-order effect taken out; latency is a separate pass; every \
figure is compared with memcpy measured in the same run, and memcpy is measured again at the end to catch a host whose \
memory bandwidth moved. Free space and inodes are checked before anything is written. Units are binary (MiB = 2^20)."
)]
pub struct BenchArgs {
    // The help line lists the kinds of target bench can make (bench::KINDS).
    #[arg(value_name = "TARGET", help = target::help())]
    pub targets: Vec<PathBuf>,

    /// Workload set
    #[arg(long, value_enum, default_value = "default")]
    pub preset: Preset,

    /// Tiny sizes and no minimum time: a smoke test in seconds (figures are not meaningful)
    #[arg(long)]
    pub quick: bool,

    /// File size of streaming workloads (default 512M; --quick 8M)
    #[arg(long, value_name = "SIZE", value_parser = crate::units::parse_bytes)]
    pub size: Option<u64>,

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
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub min_time: Option<Duration>,

    /// After --min-runs and --min-time, keep alternating the targets until the tmpfs/disk ratio's 95% interval is within PCT% of it (0 = off; default 5; --quick: 0)
    #[arg(long, value_name = "PCT")]
    pub ratio_precision: Option<f64>,

    /// Stop a workload's alternation after this long even if --ratio-precision is not reached (default 3s)
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub max_time: Option<Duration>,

    /// Skip the separate per-op latency pass
    #[arg(long)]
    pub no_latency: bool,

    /// Buffer size for the memcpy ceiling (default: >= 1 GiB and >= 2x the last-level cache)
    #[arg(long, value_name = "SIZE", value_parser = crate::units::parse_bytes)]
    pub ceiling_size: Option<u64>,

    #[command(flatten)]
    pub custom: Box<CustomArgs>,

    #[command(flatten)]
    pub out: Box<OutputArgs>,

    /// Show two saved JSON reports side by side instead of measuring (with --html FILE: also as a page)
    #[arg(long, num_args = 2, value_names = ["A.json", "B.json"], conflicts_with_all = ["targets", "rw", "quick", "json", "export_json", "export_csv", "export_markdown", "svg"])]
    pub compare: Option<Vec<PathBuf>>,

    /// Show a saved JSON report again instead of measuring: the table, or with --html/--export-* the files (e.g. a page from a run saved with --json)
    #[arg(long, value_name = "REPORT.json", conflicts_with_all = ["targets", "rw", "quick", "json", "svg", "compare"])]
    pub show: Option<PathBuf>,
}

// fio-like knobs for one custom workload (`--rw` and friends). (A plain
// comment: as a doc comment it would replace the about of `bench`.)
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CustomArgs {
    /// Custom workload: seq-write, rewrite, seq-read, rand-read, rand-write, small-files, metadata
    #[arg(long, value_enum, value_name = "OP")]
    pub rw: Option<Op>,
    /// Custom workload: block size (default 1M for seq, 4k for random, 1k for small files)
    #[arg(long, value_name = "SIZE", requires = "rw", value_parser = crate::units::parse_bytes)]
    pub bs: Option<u64>,
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
    #[arg(long, value_name = "DURATION", requires = "rw", value_parser = crate::units::parse_duration)]
    pub runtime: Option<Duration>,
}

// Where the report goes besides (or instead of) the terminal table. (A plain
// comment: as a doc comment it would replace the about of `bench`.)
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_args(json_help("Print the JSON report (schema_version 2) on stdout instead of the table", &[])))]
pub struct OutputArgs {
    #[command(flatten)]
    pub structured: Structured,
    /// Write the JSON report to FILE, - (stdout) or fd:N
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write CSV (one line per workload and target) to FILE, - (stdout) or fd:N
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Write a Markdown table to FILE, - (stdout) or fd:N
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Write a self-contained HTML report (results table, bar charts, iozone heat map, ceiling line) to FILE, - (stdout) or fd:N
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write each chart as an SVG file into DIR
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
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

/// The workloads the arguments ask for.
fn workloads_from_args(a: &BenchArgs) -> Result<Vec<Workload>> {
    let mut scale = if a.quick {
        Scale::QUICK
    } else {
        Scale::DEFAULT
    };
    if let Some(s) = a.size {
        scale.size_bytes = s;
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
    let bs = match a.custom.bs {
        Some(b) => b,
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

fn options_from_args(a: &BenchArgs) -> Result<Options> {
    let mut o = Options {
        quick: a.quick,
        ..Options::default()
    };
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
    if let Some(t) = a.min_time {
        o.min_time = t;
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
    if let Some(t) = a.max_time {
        o.max_time = t;
    }
    anyhow::ensure!(a.min_runs >= 1, "--min-runs must be >= 1");
    o.min_runs = a.min_runs;
    o.max_runs = a.max_runs.max(a.min_runs);
    o.latency = !a.no_latency;
    if let Some(b) = a.ceiling_size {
        anyhow::ensure!(b >= 1 << 20, "--ceiling-size must be at least 1M");
        o.ceiling_buffer_bytes = Some(b);
    }
    if let Some(r) = a.custom.runtime {
        o.runtime = Some(r);
    }
    o.progress = crate::render::stderr_is_tty();
    Ok(o)
}

/// The same directory (after symlinks) or the same private tmpfs twice
/// would compare a target with itself: a ratio of 1 that says nothing.
fn refuse_a_target_twice(args: &[PathBuf], specs: &[TargetSpec]) -> Result<()> {
    let key = |arg: &PathBuf, spec: &TargetSpec| match spec {
        TargetSpec::Dir(d) => std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()),
        _ => arg.clone(),
    };
    let keys: Vec<PathBuf> = args.iter().zip(specs).map(|(a, s)| key(a, s)).collect();
    for (i, k) in keys.iter().enumerate() {
        if let Some(j) = keys[..i].iter().position(|x| x == k) {
            anyhow::bail!(
                "targets {} and {} are the same ({}): a target compared with itself measures nothing; \
                 give two different directories (e.g. a tmpfs and a disk: `tmpfsctl bench /dev/shm /var/tmp`)",
                crate::term::safe_path(&args[j]),
                crate::term::safe_path(&args[i]),
                crate::term::safe_path(k)
            );
        }
    }
    Ok(())
}

impl BenchArgs {
    /// The library request: every argument parsed and checked, nothing touched yet.
    pub fn request(&self) -> Result<BenchRequest> {
        if let Some(files) = &self.compare
            && let [a, b] = files.as_slice()
        {
            return Ok(BenchRequest::Compare {
                a: a.clone(),
                b: b.clone(),
            });
        }
        if let Some(saved) = &self.show {
            return Ok(BenchRequest::Show(saved.clone()));
        }
        let targets: Vec<TargetSpec> = self
            .targets
            .iter()
            .map(|t| TargetSpec::parse(t))
            .collect::<Result<_>>()?;
        refuse_a_target_twice(&self.targets, &targets)?;
        Ok(BenchRequest::Measure(Box::new(Measure {
            targets,
            workloads: workloads_from_args(self)?,
            options: options_from_args(self)?,
            svg: self.out.svg.clone(),
        })))
    }

    /// Where the report goes: the table (or `--json`) on stdout, and the
    /// files named; `--compare` writes its table and, with `--html`, a page.
    pub fn output(&self) -> Output {
        let o = &self.out;
        if self.compare.is_some() {
            return Output::stdout(Format::TEXT).export("--html", Format::HTML, o.html.as_ref());
        }
        o.structured.on(Output::stdout(Format::TEXT)).report_files(
            o.export_json.as_ref(),
            o.export_csv.as_ref(),
            o.export_markdown.as_ref(),
            o.html.as_ref(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_modes_parse() {
        assert_eq!(parse_sync("dsync").unwrap(), Sync::Dsync);
        assert_eq!(parse_sync("100").unwrap(), Sync::FsyncEvery(100));
        assert!(parse_sync("0").is_err());
        assert!(parse_sync("sometimes").is_err());
    }
}
