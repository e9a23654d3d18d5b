//! `tmpfsctl collect` and `tmpfsctl fleet analyze` (issue 4): would /tmp fit in
//! tmpfs, on one host and across a fleet, from files or from Prometheus.
//!
//! Public API for other commands (`advise`):
//! * [`collect::snapshot`] — one host's usage of given paths plus /proc/meminfo;
//! * [`fit::host_fit`] — one host's /tmp against the tmpfs size, MemAvailable,
//!   MemAvailable + SwapFree and nr_inodes ([`HostRecord::from_snapshot`] bridges the two);
//! * [`ingest`] + [`analyze::analyze`] — the fleet pipeline without any printing.

pub mod analyze;
pub mod collect;
pub mod fit;
pub mod ingest;
pub mod prom;
pub mod render;
pub mod stats;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context as _, Result};

pub use collect::{HostName, Snapshot, snapshot};
pub use fit::{FitParams, HostFit, host_fit};
pub use ingest::{Fleet, HostRecord};

use crate::context::{Context, ExitCode};
use crate::sys::atomic::AtomicWrite;
use crate::units::{self, Size};

impl HostRecord {
    /// The figures `fit` needs from a snapshot, for the collected path `path`.
    pub fn from_snapshot(s: &Snapshot, path: &str) -> Option<HostRecord> {
        let p = s.paths.iter().find(|p| p.path == path)?;
        Some(HostRecord {
            host: s.host.clone(),
            timestamp_unix_s: Some(s.timestamp_unix_s),
            tmp_used_bytes: p.used_bytes,
            tmp_inodes: Some(p.inodes),
            mem_total_bytes: s.mem.mem_total_bytes,
            mem_available_bytes: Some(s.mem.mem_available_bytes),
            swap_total_bytes: Some(s.mem.swap_total_bytes),
            swap_free_bytes: Some(s.mem.swap_free_bytes),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CollectFormat {
    /// One JSON object per line (what `fleet analyze` reads)
    Json,
    /// Seed 001's 12 tab-separated columns in KiB
    Kirkland,
    /// node_exporter textfile-collector metrics
    Prom,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  tmpfsctl collect >> fleet.jsonl\n  tmpfsctl collect --format kirkland\n  \
tmpfsctl collect --format prom --output /var/lib/prometheus/node-exporter/tmpfsctl.prom\n  \
tmpfsctl collect --anonymize --path /tmp --path /var/tmp\n\n\
Usage is counted like `du -s -x -B1` (allocated blocks, hard links once, other mounts not crossed); \
when the path is its own mount point, from statfs (which also sees files in unreadable directories). \
Runs unprivileged: unreadable directories are counted and reported, not fatal.\n\
examples/systemd/ has a service and timer that refresh the textfile every 5 minutes."
)]
pub struct CollectArgs {
    /// Directory to measure (repeat for several)
    #[arg(long = "path", value_name = "DIR", default_value = "/tmp")]
    pub paths: Vec<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = CollectFormat::Json)]
    pub format: CollectFormat,
    /// Write to FILE atomically (temp file, fsync, rename) instead of stdout
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace the host name with a stable salted hash (anon-<16 hex>)
    #[arg(long)]
    pub anonymize: bool,
    /// Salt for --anonymize; keep it secret and the same across the fleet
    #[arg(
        long,
        env = "TMPFSCTL_ANON_SALT",
        default_value = "",
        hide_env_values = true
    )]
    pub salt: String,
    /// Use NAME as the host name (default: the kernel's; with --sysroot DIR, DIR/proc/sys/kernel/hostname or DIR/etc/hostname)
    #[arg(long, value_name = "NAME", conflicts_with = "anonymize")]
    pub host: Option<String>,
}

pub fn collect_cmd(ctx: &Context, args: &CollectArgs) -> Result<ExitCode> {
    if args.format == CollectFormat::Kirkland && args.paths.len() != 1 {
        anyhow::bail!("--format kirkland has a single /tmp column; give exactly one --path");
    }
    if args.format == CollectFormat::Prom && (args.anonymize || args.host.is_some()) {
        // Silently ignoring these would let someone believe the metrics hide
        // or rename the host, while Prometheus labels them with the scrape
        // target's `instance`.
        anyhow::bail!(
            "--{} has no effect with --format prom: the textfile carries no host name, Prometheus labels the samples with the scrape target (`instance`); \
             rename or hash that label in Prometheus (relabel_configs), or use --format json / kirkland",
            if args.anonymize { "anonymize" } else { "host" }
        );
    }
    if args.host.as_deref().is_some_and(|h| h.trim().is_empty()) {
        // An empty name is a line `fleet analyze` rejects later, far from here.
        anyhow::bail!("--host: the name is empty; give the host's name, e.g. --host web-1");
    }
    let name = match (&args.host, args.anonymize) {
        (Some(h), _) => HostName::Fixed(h.clone()),
        // The metrics carry no host name: do not fail for want of one (a sysroot
        // with neither hostname file) when nothing would print it.
        (None, _) if args.format == CollectFormat::Prom => HostName::Unused,
        (None, true) => HostName::Anonymized {
            salt: args.salt.clone(),
        },
        (None, false) => HostName::Real,
    };
    let snap = collect::snapshot(&ctx.sysroot, &args.paths, &name)?;
    for p in snap.paths.iter().filter(|p| p.unreadable_dirs > 0) {
        eprintln!(
            "tmpfsctl: warning: {}: {} directories could not be read, their contents are not counted \
             (run as root for a full figure)",
            p.path, p.unreadable_dirs
        );
    }
    let data = match args.format {
        CollectFormat::Json => collect::render_json_line(&snap)?,
        CollectFormat::Kirkland => collect::render_kirkland(&snap)?,
        CollectFormat::Prom => collect::render_prom(&snap)?,
    };
    match &args.output {
        Some(f) => AtomicWrite::report("--output").write(f, &data)?,
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(&data)?;
            o.flush()?;
        }
    }
    Ok(ExitCode::Ok)
}

#[derive(Debug, clap::Args)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub command: FleetCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum FleetCommand {
    /// Statistics, fit models and a tmpfs size recommendation for many hosts
    Analyze(AnalyzeArgs),
}

fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage; write e.g. 99% or 99.5"))?;
    if !(v > 0.0 && v <= 100.0) {
        return Err(format!("{s:?} must be more than 0% and at most 100%"));
    }
    Ok(v)
}

fn parse_headroom(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage; write e.g. 25%"))?;
    if !(0.0..=1000.0).contains(&v) {
        return Err(format!("{s:?} must be between 0% and 1000%"));
    }
    Ok(v)
}

fn parse_size_arg(s: &str) -> Result<Size, String> {
    units::parse_size(s).map_err(|e| e.to_string())
}

fn parse_count_arg(s: &str) -> Result<u64, String> {
    units::parse_count(s).map_err(|e| e.to_string())
}

fn parse_bytes_arg(s: &str) -> Result<u64, String> {
    units::parse_bytes(s).map_err(|e| e.to_string())
}

/// Prometheus-style duration: `7d`, `12h`, `90m`, `1w`, `1h30m`.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let err = || format!("{s:?} is not a duration; write e.g. 7d, 12h, 30m or 1h30m");
    let mut total: u64 = 0;
    let mut num = String::new();
    let mut any = false;
    for c in s.trim().chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let mult = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86400,
            'w' => 7 * 86400,
            'y' => 365 * 86400,
            _ => return Err(err()),
        };
        let n: u64 = num.parse().map_err(|_| err())?;
        total = n
            .checked_mul(mult)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(err)?;
        num.clear();
        any = true;
    }
    if !num.is_empty() || !any || total == 0 {
        return Err(err());
    }
    Ok(total)
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  tmpfsctl fleet analyze fleet.jsonl\n  \
tmpfsctl fleet analyze kirkland-tmpfs.txt --size 25% --target 99%\n  \
cat */snap.jsonl | tmpfsctl fleet analyze - --json | jq .recommendation\n  \
tmpfsctl fleet analyze --prometheus http://prometheus:9090 --window 14d --html report.html\n\n\
Input: JSON lines from `tmpfsctl collect`, seed 001's Kirkland TSV (12 columns, KiB), or CSV with a \
header (host, tmp_used_bytes, mem_total_bytes, optional tmp_inodes, mem_available_bytes, \
swap_total_bytes, swap_free_bytes, timestamp_unix_s; `_kb` variants accepted). A host seen twice \
keeps its newest snapshot.\n\
Exit codes: 0 the tmpfs size fits at least --target of the hosts, 1 it fits fewer, 2 error.")]
pub struct AnalyzeArgs {
    /// Input files (`-` for stdin); formats may be mixed
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Read peak /tmp usage and memory from this Prometheus (or Thanos, Mimir, VictoriaMetrics) URL
    #[arg(long, value_name = "URL", conflicts_with = "files")]
    pub prometheus: Option<String>,
    /// Window for the peak (max_over_time) with --prometheus
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = parse_duration)]
    pub window: u64,
    /// With --prometheus: use the latest value instead of the peak over --window
    #[arg(long, requires = "prometheus")]
    pub instant: bool,
    /// Label that names a host in Prometheus
    #[arg(long, value_name = "LABEL", default_value = "instance")]
    pub host_label: String,
    /// HTTP timeout for --prometheus
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub timeout: u64,
    /// Print the PromQL queries (to stderr) as they run
    #[arg(long, short)]
    pub verbose: bool,
    /// Which collected path is /tmp (JSON input and Prometheus labels)
    #[arg(long, value_name = "DIR", default_value = "/tmp")]
    pub path: String,
    /// Skip malformed lines (counted and reported) instead of stopping at the first
    #[arg(long)]
    pub skip_bad: bool,
    /// tmpfs size to test against: a share of each host's RAM or bytes
    #[arg(long, value_name = "SIZE", default_value = "50%", value_parser = parse_size_arg)]
    pub size: Size,
    /// tmpfs nr_inodes to test against (default: the kernel's, RAM pages / 2)
    #[arg(long, value_name = "N", value_parser = parse_count_arg)]
    pub nr_inodes: Option<u64>,
    /// Share of hosts the recommended size must fit
    #[arg(long, value_name = "PERCENT", default_value = "99%", value_parser = parse_percent)]
    pub target: f64,
    /// Room added on top of observed usage for the recommendation
    #[arg(long, value_name = "PERCENT", default_value = "25%", value_parser = parse_headroom)]
    pub headroom: f64,
    /// Extra usage thresholds for the "hosts under" table, e.g. 512M,2G
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = parse_bytes_arg)]
    pub buckets: Vec<u64>,
    /// At most this many host names per list (misfits, outliers)
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub list: usize,
    /// Print a JSON document (schema_version 1)
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print Markdown
    #[arg(long)]
    pub markdown: bool,
    /// Also write an HTML report with charts to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

pub fn fleet_cmd(_ctx: &Context, args: &FleetArgs) -> Result<ExitCode> {
    match &args.command {
        FleetCommand::Analyze(a) => analyze_cmd(a),
    }
}

fn analyze_options(a: &AnalyzeArgs) -> analyze::AnalyzeOptions {
    let mut buckets = analyze::DEFAULT_BUCKETS.to_vec();
    buckets.extend(a.buckets.iter().copied());
    analyze::AnalyzeOptions {
        fit: FitParams {
            size: a.size,
            nr_inodes: a.nr_inodes,
        },
        target_percent: a.target,
        headroom_percent: a.headroom,
        buckets,
        list: a.list,
    }
}

/// Read all FILE arguments into one fleet.
pub fn read_files(
    files: &[PathBuf],
    opts: &ingest::IngestOptions,
) -> Result<(Fleet, ingest::IngestReport)> {
    let mut fleet = Fleet::default();
    let mut report = ingest::IngestReport::default();
    if files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        anyhow::bail!("`-` (stdin) is given more than once; stdin can be read only once");
    }
    for f in files {
        if f.as_os_str() == "-" {
            ingest::ingest(
                "<stdin>",
                Box::new(std::io::stdin().lock()),
                opts,
                &mut fleet,
                &mut report,
            )?;
        } else {
            let file = std::fs::File::open(f).with_context(|| {
                format!(
                    "cannot open {}; give files written by `tmpfsctl collect`, a Kirkland TSV or a CSV",
                    f.display()
                )
            })?;
            if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
                anyhow::bail!(
                    "{} is a directory; give the files in it (e.g. {}/*.jsonl)",
                    f.display(),
                    f.display()
                );
            }
            ingest::ingest(
                &f.display().to_string(),
                Box::new(file),
                opts,
                &mut fleet,
                &mut report,
            )?;
        }
    }
    Ok((fleet, report))
}

fn analyze_cmd(a: &AnalyzeArgs) -> Result<ExitCode> {
    if let Some(h) = &a.html
        && h.is_dir()
    {
        anyhow::bail!(
            "--html {}: is a directory; give a file name such as report.html",
            h.display()
        );
    }
    let opts = analyze_options(a);
    let (mut fleet, mut input, source) = match &a.prometheus {
        Some(url) => {
            let q = prom::PromOptions {
                url: url.clone(),
                window_s: (!a.instant).then_some(a.window),
                host_label: a.host_label.clone(),
                path: a.path.clone(),
                timeout_s: a.timeout,
                verbose: a.verbose,
            };
            let (fleet, input, queries) = prom::fetch(&q)?;
            let source = analyze::SourceInfo {
                kind: "prometheus".into(),
                inputs: vec![url.clone()],
                value: if a.instant {
                    "instant".into()
                } else {
                    "peak".into()
                },
                window_s: (!a.instant).then_some(a.window),
                queries,
            };
            (fleet, input, source)
        }
        None => {
            if a.files.is_empty() {
                anyhow::bail!(
                    "nothing to analyze: give FILE... (JSON lines, Kirkland TSV or CSV; `-` for stdin) or --prometheus URL"
                );
            }
            let io = ingest::IngestOptions {
                skip_bad: a.skip_bad,
                path: a.path.clone(),
                ..Default::default()
            };
            let (fleet, input) = read_files(&a.files, &io)?;
            let source = analyze::SourceInfo {
                kind: "files".into(),
                inputs: a.files.iter().map(|f| f.display().to_string()).collect(),
                value: "snapshot".into(),
                window_s: None,
                queries: vec![],
            };
            (fleet, input, source)
        }
    };
    let (dups, examples) = fleet.dedup(5);
    input.duplicates_dropped = dups;
    input.duplicate_examples = examples;
    input.finish();
    if fleet.is_empty() {
        anyhow::bail!(
            "no hosts to analyze in {}{}",
            source.inputs.join(", "),
            if input.skipped > 0 {
                format!(" ({} lines skipped as malformed)", input.skipped)
            } else {
                String::new()
            }
        );
    }
    let report = analyze::analyze(&fleet, input, source, &opts);
    drop(fleet);
    if let Some(h) = &a.html {
        AtomicWrite::report("--html")
            .write(h, render::html(&report).as_bytes())
            .with_context(|| format!("--html {}", h.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        drop(out);
        crate::render::print_json(&report)?;
    } else if a.markdown {
        out.write_all(render::markdown(&report).as_bytes())?;
    } else {
        out.write_all(render::text(&report).as_bytes())?;
    }
    for d in report.input.duplicate_examples.iter().take(3) {
        eprintln!("tmpfsctl: note: duplicate host: {d}");
    }
    Ok(if report.below_target {
        ExitCode::Problem
    } else {
        ExitCode::Ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_prometheus_syntax() {
        assert_eq!(parse_duration("7d"), Ok(7 * 86400));
        assert_eq!(parse_duration("1h30m"), Ok(5400));
        assert_eq!(parse_duration("90s"), Ok(90));
        assert!(parse_duration("7").is_err());
        assert!(parse_duration("0d").is_err());
        assert!(parse_duration("3x").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn percent_arguments() {
        assert_eq!(parse_percent("99%"), Ok(99.0));
        assert_eq!(parse_percent("99.5"), Ok(99.5));
        assert!(parse_percent("0").is_err());
        assert!(parse_percent("101%").is_err());
        assert_eq!(parse_bytes_arg("512M"), Ok(512 << 20));
        assert!(parse_bytes_arg("50%").is_err());
    }
}
