//! `tmpfsctl collect` and `tmpfsctl fleet analyze`: would /tmp fit in
//! tmpfs, on one host and across a fleet, from files or from Prometheus.
//!
//! Public API for other commands (`advise`):
//! * [`collect::snapshot`] — one host's usage of given paths plus /proc/meminfo;
//! * [`fit::host_fit`] — one host's /tmp against the tmpfs size, MemAvailable,
//!   MemAvailable + SwapFree and nr_inodes;
//! * [`ingest`] + [`analyze::analyze`] — the fleet pipeline without any printing.

pub(crate) mod analyze;
pub mod collect;
pub(crate) mod export;
pub(crate) mod fit;
pub(crate) mod ingest;
pub(crate) mod prom;
mod prom_answer;
pub(crate) mod render;
pub(crate) mod stats;
mod svg;

use std::path::PathBuf;

use anyhow::{Context as _, Result};

pub use collect::{HostName, Snapshot};
pub use fit::{FitParams, HostFit, host_fit};
pub use ingest::{Fleet, HostRecord};

use crate::command::{Context, Request, warn};
use crate::sys::du;
use crate::term::{safe, safe_path};

impl HostRecord {
    /// The figures `fit` needs from a snapshot, for the collected path `path`.
    #[cfg(test)]
    pub fn from_snapshot(s: &Snapshot, path: &str) -> Option<HostRecord> {
        let p = s.paths.iter().find(|p| p.path == path)?;
        Some(HostRecord {
            host: s.host.clone(),
            timestamp_unix_s: Some(s.timestamp_unix_s),
            tmp_used_bytes: p.used_bytes,
            tmp_inodes: Some(p.inodes),
            mem_total_bytes: s.mem.mem_total_bytes,
            mem_available_bytes: Some(s.mem.mem_available_bytes),
            mem_free_bytes: Some(s.mem.mem_free_bytes),
            swap_total_bytes: Some(s.mem.swap_total_bytes),
            swap_free_bytes: Some(s.mem.swap_free_bytes),
        })
    }
}

/// `threads`, or when it is 0 the cores this process may run on
/// (`available_parallelism` follows the CPU affinity mask and cgroup quota,
/// so `taskset -c 0` means 1).
pub fn threads_or_cores(threads: usize) -> usize {
    if threads > 0 {
        return threads;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What `collect` is asked to do: the plain request the CLI hands over
/// (which format the snapshot is written in is the command line's
/// `Output`, checked against the paths and the name there).
#[derive(Debug, Clone)]
pub struct CollectRequest {
    /// Directories to measure.
    pub paths: Vec<PathBuf>,
    /// How the snapshot names the host.
    pub host: HostName,
}

/// Where `fleet analyze` reads hosts from.
#[derive(Debug, Clone)]
pub enum AnalyzeSource {
    /// Files (`-` is stdin), formats mixed.
    Files {
        files: Vec<PathBuf>,
        /// Skip malformed lines (counted) instead of stopping at the first.
        skip_bad: bool,
    },
    /// Peak (or, without a window, latest) figures from a Prometheus API.
    Prometheus(prom::PromOptions),
}

/// What `fleet analyze` is asked to do.
#[derive(Debug, Clone)]
pub struct AnalyzeRequest {
    pub source: AnalyzeSource,
    /// Which collected path is /tmp (JSON input; Prometheus has it in `PromOptions`).
    pub path: String,
    pub options: analyze::AnalyzeOptions,
}

/// `tmpfsctl collect`: one snapshot, in the format the command line chose.
impl Request for CollectRequest {
    type Report = Snapshot;

    fn run(&self, ctx: &Context) -> Result<Snapshot> {
        collect(ctx, self)
    }
}

fn collect(ctx: &Context, args: &CollectRequest) -> Result<Snapshot> {
    if let HostName::Fixed(h) = &args.host
        && h.trim().is_empty()
    {
        // An empty name is a line `fleet analyze` rejects later, far from here.
        anyhow::bail!("--host: the name is empty; give the host's name, e.g. --host web-1");
    }
    if let HostName::Anonymized { salt } = &args.host
        && salt.is_empty()
    {
        // Without a secret salt the hash is the same for everyone: hashing a
        // list of likely names finds the host again.
        warn(
            "--anonymize without a salt: anyone can hash a list of likely host names and find this one again; \
             set a secret salt, the same on every host, with --salt or TMPFSCTL_ANON_SALT",
        );
    }
    let spinner = walk_spinner(&args.paths);
    let done = std::sync::atomic::AtomicBool::new(false);
    let snap = std::thread::scope(|s| {
        if !spinner.is_hidden() {
            s.spawn(|| {
                use std::sync::atomic::Ordering::Relaxed;
                let start = du::ENTRIES_WALKED.load(Relaxed);
                while !done.load(Relaxed) {
                    spinner.set_position(du::ENTRIES_WALKED.load(Relaxed) - start);
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            });
        }
        let snap = collect::snapshot(&ctx.sysroot, &args.paths, &args.host);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        snap
    });
    spinner.finish_and_clear();
    let snap = snap?;
    for p in snap.paths.iter().filter(|p| p.unreadable_dirs > 0) {
        crate::command::warn(&format!(
            "{}: {} directories could not be read, their contents are not counted \
             (run as root for a full figure)",
            safe(&p.path),
            p.unreadable_dirs
        ));
    }
    Ok(snap)
}

/// What `collect` shows while it walks: on a terminal (stderr), a spinner
/// naming the paths with the entries counted so far, their rate and the time
/// spent; nothing when stderr is not a terminal. The walk learns the tree's
/// size only by walking it, so there is no total to show a share or an ETA
/// against.
fn walk_spinner(paths: &[PathBuf]) -> indicatif::ProgressBar {
    if !crate::render::stderr_is_tty() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new_spinner();
    if let Ok(st) = indicatif::ProgressStyle::with_template(
        "{spinner} measuring {msg}: {human_pos} entries ({per_sec}) [{elapsed}]",
    ) {
        pb.set_style(st);
    }
    let names: Vec<String> = paths.iter().map(|p| safe_path(p)).collect();
    pb.set_message(names.join(", "));
    // Cleared when the walk ends: the spinner never mixes with the output.
    pb.enable_steady_tick(std::time::Duration::from_millis(150));
    pb
}

/// Read all FILE arguments into one fleet.
pub fn read_files(
    files: &[PathBuf],
    opts: &ingest::IngestOptions,
) -> Result<(Fleet, ingest::IngestReport)> {
    let mut fleet = Fleet::default();
    fleet.set_threads(opts.threads);
    let mut report = ingest::IngestReport::default();
    if files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        anyhow::bail!("`-` (stdin) is given more than once; stdin can be read only once");
    }
    let total = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let opts = &ingest::IngestOptions {
        progress: ingest::read_bar(total),
        ..opts.clone()
    };
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
                    safe_path(f)
                )
            })?;
            if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
                anyhow::bail!(
                    "{} is a directory; give the files in it (e.g. {}/*.jsonl)",
                    safe_path(f),
                    safe_path(f)
                );
            }
            ingest::ingest_file(
                &f.display().to_string(),
                file,
                opts,
                &mut fleet,
                &mut report,
            )?;
        }
    }
    opts.progress.finish_and_clear();
    Ok((fleet, report))
}

/// What `fleet analyze` hands back: the report, and the deduplicated hosts
/// it was made from (for the per-host CSV).
#[derive(Debug)]
pub struct Analyzed {
    pub report: analyze::FleetReport,
    pub fleet: Fleet,
    pub fit: FitParams,
}

/// `tmpfsctl fleet analyze`: read, deduplicate, analyze.
impl Request for AnalyzeRequest {
    type Report = Analyzed;

    fn run(&self, _ctx: &Context) -> Result<Analyzed> {
        analyze_fleet(self)
    }
}

fn analyze_fleet(a: &AnalyzeRequest) -> Result<Analyzed> {
    let opts = &a.options;
    let (mut fleet, mut input, source) = match &a.source {
        AnalyzeSource::Prometheus(q) => {
            let (fleet, input, queries) = prom::fetch(q)?;
            let source = analyze::SourceInfo {
                kind: "prometheus".into(),
                inputs: vec![q.url.clone()],
                value: if q.window_s.is_none() {
                    "instant".into()
                } else {
                    "peak".into()
                },
                window_s: q.window_s,
                queries,
            };
            (fleet, input, source)
        }
        AnalyzeSource::Files { files, skip_bad } => {
            if files.is_empty() {
                anyhow::bail!(
                    "nothing to analyze: give FILE... (JSON lines, Kirkland TSV or CSV; `-` for stdin) or --prometheus URL"
                );
            }
            let io = ingest::IngestOptions {
                skip_bad: *skip_bad,
                path: a.path.clone(),
                threads: threads_or_cores(opts.threads),
                ..Default::default()
            };
            let (fleet, input) = read_files(files, &io)?;
            let source = analyze::SourceInfo {
                kind: "files".into(),
                inputs: files.iter().map(|f| f.display().to_string()).collect(),
                value: "snapshot".into(),
                window_s: None,
                queries: vec![],
            };
            (fleet, input, source)
        }
    };
    fleet.set_threads(opts.threads);
    let (dups, examples) = fleet.dedup(5);
    input.duplicates_dropped = dups;
    input.duplicate_examples = examples;
    input.finish();
    if fleet.is_empty() {
        anyhow::bail!(
            "no hosts to analyze in {}{}",
            safe(&source.inputs.join(", ")),
            if input.skipped > 0 {
                format!(" ({} lines skipped as malformed)", input.skipped)
            } else {
                String::new()
            }
        );
    }
    let report = analyze::analyze(&fleet, input, source, opts);
    Ok(Analyzed {
        report,
        fleet,
        fit: opts.fit,
    })
}
