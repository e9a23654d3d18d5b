//! `tmpfsctl advise`: one answer for this machine, composed from the other
//! commands' library code (mounts' planner, fleet's fit and history readers,
//! bench's suite) — no second copy of their logic here, only the verdict.

mod huge;
mod render;
mod verdict;

pub use huge::{HugeAdvice, HugeRow, Outcome};
pub use verdict::{Facts, Kind, Verdict, decide};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::bench::{self, BenchReport, Scale};
use crate::command::{self, Context};
use crate::fleet::{self, FitParams, HostFit, HostRecord};
use crate::mounts::{self, plan};
use crate::sys;
use crate::sys::zram_estimate::Estimate;
use crate::units::Size;

pub const SCHEMA_VERSION: u32 = 1;

/// What `advise` is asked: the plain request `cli::advise` builds.
#[derive(Debug, Clone, Default)]
pub struct AdviseRequest {
    /// The directory to advise about.
    pub dir: PathBuf,
    /// Measure for under 10 s (smaller files, fewer runs).
    pub quick: bool,
    /// Run the full default bench suite.
    pub thorough: bool,
    /// Do not measure; decide from sizes alone.
    pub no_bench: bool,
    /// Earlier `collect` snapshots of this host: their peak usage is used.
    pub history: Vec<PathBuf>,
    /// Prometheus base URL: the peak usage over `window` is used.
    pub prometheus: Option<String>,
    /// History window for `prometheus` (e.g. 7d), as written: the command
    /// line checked it with the one duration grammar.
    pub window: String,
    /// This host's name in `history` / its instance label in Prometheus.
    pub host: Option<String>,
    /// DIR holds secrets: advise noswap where there is swap.
    pub secrets: bool,
}

/// The whole answer, as printed with --json.
#[derive(Debug, Serialize)]
pub struct Advice {
    pub schema_version: u32,
    pub dir: String,
    pub verdict: Verdict,
    pub location: Location,
    pub usage: Usage,
    pub memory: sys::MemInfo,
    pub fit: HostFit,
    pub plan: plan::Plan,
    /// Measured tmpfs speed-up per operation (tmpfs / DIR's filesystem).
    pub speedups: Vec<Speedup>,
    pub commands: Commands,
    /// The kernel's tmpfs options beyond size=: what was measured, what is recommended.
    pub options: OptionAdvice,
    pub bench: Option<BenchReport>,
    /// What DIR's files would cost in zram, estimated in this process (no
    /// root, no device): a bounded sample, page by page.
    pub zram_estimate: Option<Estimate>,
    /// What could not be done (e.g. no RAM target to measure), in words.
    pub notes: Vec<String>,
}

/// The JSON `options`: tmpfs mount options advise recommends, and why.
#[derive(Debug, Serialize)]
pub struct OptionAdvice {
    /// `huge=within_size` measured against `huge=never` on two private tmpfs
    /// (root, when advise measures); null when not measured (`notes` says why).
    pub huge: Option<HugeAdvice>,
    /// `noswap` is recommended: only with `--secrets`, where there is swap
    /// and the tmpfs lacks it.
    pub noswap: bool,
    /// The options recommended beyond size=, as the kernel spells them.
    pub recommended: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Location {
    pub fstype: String,
    pub ram_backed: bool,
    pub mountpoint: Option<String>,
    pub size_limit_bytes: Option<u64>,
    pub fstab_line: Option<String>,
    pub systemd_unit: String,
    pub systemd_state: sys::systemd::UnitState,
}

#[derive(Debug, Serialize)]
pub struct Usage {
    pub current_bytes: u64,
    pub current_inodes: u64,
    /// The peak from history where there is one, else null.
    pub peak_bytes: Option<u64>,
    pub peak_inodes: Option<u64>,
    /// "prometheus", "history" or "current".
    pub source: String,
    pub window: Option<String>,
    /// The figure the verdict used.
    pub decided_on_bytes: u64,
}

#[derive(Debug, Serialize)]
pub struct Speedup {
    pub workload: String,
    pub label: String,
    pub ratio: f64,
    /// The ratio's 95% interval, when measured in alternation.
    pub ratio_ci95_low: Option<f64>,
    pub ratio_ci95_high: Option<f64>,
    /// The interval is wider than bench's 10%: cite the ratio only with it.
    pub uncertain: bool,
}

#[derive(Debug, Serialize, Default)]
pub struct Commands {
    /// What to run to act on the verdict.
    pub act: Vec<String>,
    /// The configuration `apply` would write (fstab line or drop-in), for doing it by hand.
    pub config_path: Option<String>,
    pub config: Option<String>,
    /// How to undo it.
    pub undo: Vec<String>,
    /// Why `apply` would refuse the change (`plan`'s blockers, each with its
    /// fix); when not empty, `act`, `config` and `undo` are empty: the fix
    /// comes first.
    pub refused: Vec<String>,
}

fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// Peak usage of this host from history files or Prometheus.
fn history_peak(args: &AdviseRequest, dir: &Path) -> Result<Option<(u64, Option<u64>, String)>> {
    let host = args.host.clone().unwrap_or_else(hostname);
    if !args.history.is_empty() {
        let opts = fleet::ingest::IngestOptions {
            path: dir.to_string_lossy().into_owned(),
            ..Default::default()
        };
        let (f, _) = fleet::read_files(&args.history, &opts)?;
        // Every snapshot of this host, not just the latest: the peak is the point.
        let mine: Vec<HostRecord> = (0..f.len())
            .map(|i| f.record(i))
            .filter(|r| r.host == host)
            .collect();
        if mine.is_empty() {
            anyhow::bail!(
                "no snapshot of host {host:?} in {}; pass --host NAME as `collect` recorded it",
                args.history
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let peak = mine.iter().map(|r| r.tmp_used_bytes).max().unwrap_or(0);
        let inodes = mine.iter().filter_map(|r| r.tmp_inodes).max();
        return Ok(Some((peak, inodes, "history".into())));
    }
    if let Some(url) = &args.prometheus {
        let window_s = crate::units::parse_seconds(&args.window)
            .map_err(|e| anyhow::anyhow!("--window {:?}: {e}", args.window))?;
        let o = fleet::prom::PromOptions {
            url: url.clone(),
            window_s: Some(window_s),
            host_label: "instance".into(),
            path: dir.to_string_lossy().into_owned(),
            timeout_s: 10,
            verbose: false,
        };
        let (f, _, _) = fleet::prom::fetch(&o)?;
        let recs: Vec<HostRecord> = (0..f.len()).map(|i| f.record(i)).collect();
        let pick = match (&args.host, recs.len()) {
            (None, 1) => recs.first(),
            (None, _) => recs
                .iter()
                .find(|r| r.host == host || r.host.starts_with(&format!("{host}:"))),
            (Some(h), _) => recs.iter().find(|r| &r.host == h),
        };
        let Some(r) = pick else {
            anyhow::bail!(
                "Prometheus at {url} has no instance {host:?} ({} instances); pass --host INSTANCE",
                recs.len()
            );
        };
        return Ok(Some((r.tmp_used_bytes, r.tmp_inodes, "prometheus".into())));
    }
    Ok(None)
}

/// The private scratch pair to measure: (RAM target, DIR's filesystem target).
/// DIR already on RAM is compared with the disk directory bench would pick.
fn bench_targets(
    ctx: &Context,
    dir: &Path,
    ram_backed: bool,
    need: u64,
) -> Result<(PathBuf, PathBuf, Option<bench::target::PrivateTmpfs>)> {
    if ram_backed {
        return Ok((
            dir.to_path_buf(),
            bench::target::default_disk_dir(ctx)?,
            None,
        ));
    }
    if rustix::process::geteuid().is_root() {
        let m = bench::target::PrivateTmpfs::mount(
            need + bench::target::margin_bytes(need) + (8 << 20),
        )?;
        return Ok((m.path.clone(), dir.to_path_buf(), Some(m)));
    }
    Ok((PathBuf::from("/dev/shm"), dir.to_path_buf(), None))
}

fn scale_and_options(args: &AdviseRequest) -> (Vec<bench::Workload>, bench::Options) {
    let mut o = bench::Options {
        latency: false,
        // stderr only: with --json on stdout the bar still shows on a terminal.
        progress: crate::render::stderr_is_tty(),
        stop: Arc::new(AtomicBool::new(false)),
        ..Default::default()
    };
    if args.thorough {
        o.latency = true;
        return (bench::preset(bench::Preset::Default, Scale::DEFAULT), o);
    }
    // advise needs the order of magnitude, not a ratio to 5%.
    o.max_time = Duration::from_secs(1);
    let scale = if args.quick {
        o.quick = true;
        o.ratio_precision_percent = 0.0;
        o.min_time = Duration::ZERO;
        o.runtime = Some(Duration::from_millis(100));
        o.ceiling_buffer_bytes = Some(64 << 20);
        Scale {
            size_bytes: 32 << 20,
            files: 500,
            rand_ops: 4096,
        }
    } else {
        o.min_time = Duration::from_millis(300);
        o.runtime = Some(Duration::from_millis(500));
        o.ceiling_buffer_bytes = Some(256 << 20);
        Scale {
            size_bytes: 128 << 20,
            files: 2000,
            rand_ops: 16384,
        }
    };
    (bench::temp_file_workloads(scale), o)
}

pub fn gather(ctx: &Context, args: &AdviseRequest) -> Result<Advice> {
    let facts = mounts::gather_facts(ctx, &mounts::Target::dir(&args.dir))?;
    let dir = facts.dir.clone();
    let shown = dir.display().to_string();
    let mut notes = Vec::new();

    let peak = history_peak(args, &dir)?;
    let (decided, decided_inodes) = match &peak {
        Some((b, i, _)) => ((*b).max(facts.used_bytes), i.unwrap_or(0).max(facts.inodes)),
        None => (facts.used_bytes, facts.inodes),
    };

    // What a fresh tmpfs for DIR would be, sized for the peak: the planner
    // decides (ignoring a tmpfs already here, whose size is what we judge).
    let mut fresh = facts.clone();
    fresh.used_bytes = decided;
    fresh.inodes = decided_inodes;
    fresh.current = None;
    let recommended =
        plan::plan(&fresh, &plan::Request::default()).map_err(|e| anyhow::anyhow!(e.0))?;
    let recommended_bytes = recommended.size_bytes.unwrap_or(0);
    // The plan shown to the user is for DIR as it is (with its current mount).
    let shown_plan =
        plan::plan(&facts, &plan::Request::default()).unwrap_or_else(|_| recommended.clone());

    let record = HostRecord {
        host: args.host.clone().unwrap_or_else(hostname),
        timestamp_unix_s: None,
        tmp_used_bytes: decided,
        tmp_inodes: Some(decided_inodes),
        mem_total_bytes: facts.mem.mem_total_bytes,
        mem_available_bytes: Some(facts.mem.mem_available_bytes),
        mem_free_bytes: Some(facts.mem.mem_free_bytes),
        swap_total_bytes: Some(facts.mem.swap_total_bytes),
        swap_free_bytes: Some(facts.mem.swap_free_bytes),
    };
    let fit = fleet::host_fit(
        &record,
        &FitParams {
            size: Size::Bytes(recommended_bytes),
            nr_inodes: recommended.nr_inodes,
        },
    );

    let ram_backed = sys::is_ram_backed(&facts.dir_fstype);
    let (report, huge_advice) = measure(ctx, args, &facts, ram_backed, &mut notes)?;
    let speedups = report.as_ref().map(speedups_of).unwrap_or_default();

    let vfacts = Facts {
        fstype: facts.dir_fstype.clone(),
        used_bytes: decided,
        used_is_peak: peak.is_some(),
        inodes: decided_inodes,
        current_limit_bytes: facts.current.as_ref().and_then(|c| c.size_bytes),
        recommended_bytes,
        recommended_option: recommended
            .size_option
            .clone()
            .unwrap_or_else(|| crate::units::tmpfs_size_option(recommended_bytes)),
        recommended_inodes: recommended
            .nr_inodes
            .unwrap_or_else(|| fleet::fit::default_nr_inodes(facts.mem.mem_total_bytes)),
        mem_total_bytes: facts.mem.mem_total_bytes,
        mem_available_bytes: facts.mem.mem_available_bytes,
        swap_total_bytes: facts.mem.swap_total_bytes,
        swap_free_bytes: facts.mem.swap_free_bytes,
        speedups: if ram_backed {
            vec![]
        } else {
            speedups.iter().map(Speedup::cited).collect()
        },
        quick: report.as_ref().is_some_and(|r| r.quick),
        persistent: facts.fstab_entry.is_some()
            || facts.unit.state == sys::systemd::UnitState::Enabled,
        secrets: args.secrets,
        noswap_now: facts.current.as_ref().is_some_and(|c| c.noswap),
        huge_now: facts.current.as_ref().and_then(|c| c.huge.clone()),
        huge_measured: huge_advice.clone(),
    };
    let verdict = decide(&shown, &vfacts);
    // Persisting keeps the tmpfs as it is, so its configuration is the plan
    // for DIR as mounted now, not a fresh one.
    let for_commands = if verdict.kind == Kind::Persist {
        &shown_plan
    } else {
        &recommended
    };
    let huge_recommended = huge_advice.as_ref().is_some_and(|h| h.recommended);
    let with_huge;
    let for_commands = if huge_recommended && verdict.kind == Kind::Move {
        let req = plan::Request {
            huge: Some(plan::Huge::WithinSize),
            ..Default::default()
        };
        with_huge = plan::plan(&fresh, &req).map_err(|e| anyhow::anyhow!(e.0))?;
        &with_huge
    } else {
        for_commands
    };
    let mut commands = commands(&shown, &verdict, for_commands, facts.dir_fstype == "ramfs");
    if huge_recommended {
        huge_commands(&mut commands, &shown, &verdict, &facts);
    }
    refuse_as_plan_does(&mut commands, &verdict, for_commands);
    let noswap = verdict::noswap_recommended(&vfacts);
    let options = OptionAdvice {
        recommended: [
            huge_recommended.then(|| huge::CANDIDATE.to_string()),
            noswap.then(|| "noswap".to_string()),
        ]
        .into_iter()
        .flatten()
        .collect(),
        huge: huge_advice,
        noswap,
    };

    Ok(Advice {
        schema_version: SCHEMA_VERSION,
        dir: shown,
        verdict,
        location: location(&facts, &dir, ram_backed),
        usage: Usage {
            current_bytes: facts.used_bytes,
            current_inodes: facts.inodes,
            peak_bytes: peak.as_ref().map(|p| p.0),
            peak_inodes: peak.as_ref().and_then(|p| p.1),
            source: peak
                .as_ref()
                .map(|p| p.2.clone())
                .unwrap_or_else(|| "current".into()),
            window: args.prometheus.as_ref().map(|_| args.window.clone()),
            decided_on_bytes: decided,
        },
        memory: facts.mem.clone(),
        fit,
        plan: shown_plan,
        speedups,
        commands,
        options,
        bench: report,
        // No root and no device needed: what zram would cost is estimated
        // from DIR's own files, so it is said wherever zram cannot be made.
        zram_estimate: Some(sys::zram_estimate::estimate(
            &dir,
            if args.quick { 16 << 20 } else { 64 << 20 },
        )),
        notes,
    })
}

/// Measure DIR against tmpfs (and, where it may help, huge=within_size
/// against huge=never) unless `--no-bench`; what could not be measured is
/// said in `notes`.
fn measure(
    ctx: &Context,
    args: &AdviseRequest,
    facts: &mounts::Facts,
    ram_backed: bool,
    notes: &mut Vec<String>,
) -> Result<(Option<BenchReport>, Option<HugeAdvice>)> {
    let dir = &facts.dir;
    let shown = dir.display().to_string();
    let mut report = None;
    let mut huge_advice = None;
    if args.no_bench {
        notes.push("not measured (--no-bench): the verdict rests on sizes alone".into());
    } else {
        let (workloads, opts) = scale_and_options(args);
        let (need, _) = bench::need(&workloads);
        let (ram, disk, private) = bench_targets(ctx, dir, ram_backed, need)?;
        let private_paths: Vec<PathBuf> = private.iter().map(|m| m.path.clone()).collect();
        let huge_why_not = huge_why_not(facts);
        let steps = if huge_why_not.is_none() { 2 } else { 1 };
        step(
            &opts,
            1,
            steps,
            &format!("{shown} ({}) against tmpfs", facts.dir_fstype),
        );
        let r = bench::run_suite_with(ctx, &[ram, disk], &private_paths, &workloads, &opts);
        drop(private);
        report = Some(r.with_context(|| format!("measuring {shown} against tmpfs"))?);
        match huge_why_not {
            Some(why) => notes.extend(why),
            None => {
                step(&opts, 2, 2, huge::TITLE);
                huge_advice = measure_huge(ctx, &workloads, &opts, need, notes);
            }
        }
    }
    Ok((report, huge_advice))
}

/// On a terminal, which measurement runs now (bench's bar below it shows
/// the workloads done of all and the ETA of this step).
fn step(opts: &bench::Options, n: u32, of: u32, what: &str) {
    if opts.progress {
        command::say(&format!("advise: measuring {n} of {of}: {what}"));
    }
}

/// Whether huge=within_size is measured against huge=never: only as root
/// (private mounts), and not where DIR uses huge pages already. Some(note)
/// says why not; Some(None) needs no note.
fn huge_why_not(facts: &mounts::Facts) -> Option<Option<String>> {
    let huge_now = facts.current.as_ref().and_then(|c| c.huge.as_deref());
    if huge_now.is_some_and(|h| h != "never") {
        return Some(None);
    }
    if !rustix::process::geteuid().is_root() {
        return Some(Some(
            "huge=within_size not measured: that mounts two private tmpfs, which needs root".into(),
        ));
    }
    None
}

fn measure_huge(
    ctx: &Context,
    workloads: &[bench::Workload],
    opts: &bench::Options,
    need: u64,
    notes: &mut Vec<String>,
) -> Option<HugeAdvice> {
    let size = need + bench::target::margin_bytes(need) + (8 << 20);
    match huge::measure(ctx, workloads, opts, size) {
        Ok((h, _)) => Some(h),
        Err(e) => {
            notes.push(format!("huge=within_size not measured: {e:#}"));
            None
        }
    }
}

/// Where huge=within_size is recommended: how to get it. A new tmpfs gets
/// it from apply (its plan was made with it); a tmpfs already there by a
/// remount, which keeps the files, and in its fstab line or unit.
fn huge_commands(c: &mut Commands, dir: &str, v: &Verdict, facts: &mounts::Facts) {
    let q = crate::term::shell_word(dir);
    match v.kind {
        Kind::Move => {
            for a in &mut c.act {
                if let Some(i) = a.find(" --size ") {
                    let end = a[i + 8..].find(' ').map_or(a.len(), |j| i + 8 + j);
                    a.insert_str(end, " --huge within_size");
                }
            }
        }
        _ if facts.dir_fstype == "tmpfs" => {
            c.act
                .push(format!("sudo mount -o remount,huge=within_size {q}"));
            c.act.push(format!(
                "add huge=within_size to the options of {dir} in its fstab line or mount unit, so a reboot keeps it"
            ));
            c.undo.push(format!("sudo mount -o remount,huge=never {q}"));
        }
        _ => {}
    }
}

/// The measured tmpfs-vs-DIR ratios, named by workload.
fn speedups_of(r: &bench::BenchReport) -> Vec<Speedup> {
    r.ratios
        .iter()
        .map(|x| Speedup {
            label: r
                .workloads
                .iter()
                .find(|w| w.id == x.workload)
                .map(|w| w.label.clone())
                .unwrap_or_default(),
            workload: x.workload.clone(),
            ratio: x.ratio,
            ratio_ci95_low: x.ratio_ci95_low,
            ratio_ci95_high: x.ratio_ci95_high,
            uncertain: x.flags.iter().any(|f| f == "ratio_uncertain"),
        })
        .collect()
}

impl Speedup {
    /// As the verdict cites it: an uncertain ratio always with its interval.
    fn cited(&self) -> (String, f64, Option<verdict::Interval>) {
        let interval = match (self.uncertain, self.ratio_ci95_low, self.ratio_ci95_high) {
            (true, Some(lo), Some(hi)) => Some((lo, hi)),
            (true, _, _) => Some((f64::NAN, f64::NAN)),
            _ => None,
        };
        (self.label.clone(), self.ratio, interval)
    }
}

/// Where DIR lives and how it is configured.
fn location(facts: &mounts::Facts, dir: &Path, ram_backed: bool) -> Location {
    Location {
        fstype: facts.dir_fstype.clone(),
        ram_backed,
        mountpoint: facts.current.as_ref().map(|_| dir.display().to_string()),
        size_limit_bytes: facts.current.as_ref().and_then(|c| c.size_bytes),
        fstab_line: facts.fstab_entry.as_ref().map(|e| {
            format!(
                "{} {} {} {}",
                e.spec,
                e.file.display(),
                e.vfstype,
                e.options.join(",")
            )
        }),
        systemd_unit: facts.unit.name.clone(),
        systemd_state: facts.unit.state,
    }
}

fn commands(dir: &str, v: &Verdict, p: &plan::Plan, ramfs: bool) -> Commands {
    let size = p.size_option.clone().unwrap_or_default();
    let q = crate::term::shell_word(dir);
    let mut c = Commands::default();
    match v.kind {
        Kind::Move => {
            c.act.push(format!(
                "tmpfsctl plan {q} --size {size}    # review first; changes nothing"
            ));
            c.act.push(format!("sudo tmpfsctl apply {q} --size {size}"));
            c.config_path = Some(p.persist.path.clone());
            c.config = Some(p.persist.content.clone());
            c.undo.push(format!("sudo tmpfsctl revert {q} --keep-data"));
        }
        Kind::Resize if ramfs => {
            c.act.push(format!("sudo tmpfsctl revert {q} --keep-data"));
            c.act.push(format!("sudo tmpfsctl apply {q} --size {size}"));
            c.undo.push(format!("sudo tmpfsctl revert {q} --keep-data"));
        }
        Kind::Resize => {
            c.act
                .push(format!("sudo tmpfsctl apply {q} --resize {size}"));
            c.undo
                .push(format!("sudo tmpfsctl apply {q} --resize <previous size>"));
        }
        Kind::Persist => {
            // apply on a tmpfs that already matches mounts nothing and only
            // writes the configuration.
            c.act.push(format!(
                "tmpfsctl plan {q}    # review first; changes nothing"
            ));
            c.act.push(format!(
                "sudo tmpfsctl apply {q} --boot {}",
                p.persist.via.name()
            ));
            c.config_path = Some(p.persist.path.clone());
            c.config = Some(p.persist.content.clone());
            c.undo.push(format!(
                "remove what apply wrote for {dir} to {} (`sudo tmpfsctl revert {q} --keep-data` also unmounts it)",
                p.persist.path
            ));
        }
        Kind::NothingToChange | Kind::KeepOnDisk | Kind::NotWorthIt => {}
    }
    c
}

/// A move or a persist is carried out by `apply`, which refuses what `plan`
/// lists as blockers (mount points inside DIR, files from packages, a tmpfs
/// with other options...): instead of a command that would fail, say why and
/// what to do first, in plan's words. A resize (`--resize`) changes only
/// the size and is not subject to them.
fn refuse_as_plan_does(c: &mut Commands, v: &Verdict, p: &plan::Plan) {
    if !matches!(v.kind, Kind::Move | Kind::Persist) || p.blockers.is_empty() {
        return;
    }
    *c = Commands {
        refused: p.blockers.clone(),
        ..Commands::default()
    };
}

/// `tmpfsctl advise`: exit 0 when nothing should change, 1 when a change
/// is recommended.
impl crate::command::Request for AdviseRequest {
    type Report = Advice;

    fn run(&self, ctx: &Context) -> Result<Advice> {
        gather(ctx, self)
    }
}
