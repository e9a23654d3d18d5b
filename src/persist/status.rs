//! `persist status`: per persisted directory, what a power loss would cost
//! right now (the age of the last good sync, the files and bytes changed
//! since, found exactly by comparing DIR with the generation), and whether
//! the syncs are keeping up (exit 1 when the last good sync is older than
//! twice the interval, for monitoring).

use std::fmt::Write as _;
use std::os::fd::AsFd;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::registry::{Registered, Registry};
use super::store;
use super::{DEFAULT_INTERVAL_S, DEFAULT_KEEP, load, mount, open_dir, resolve_dir, units};
use crate::command::{Context, ExitCode};
use crate::render::color::{Tone, paint};
use crate::render::exposition::Exposition;
use crate::sys::zram;
use crate::term::{safe, safe_path};
use crate::units::fmt_bytes;

#[derive(Debug, Clone)]
pub struct StatusRequest {
    pub dir: Option<PathBuf>,
    pub store: Option<PathBuf>,
    pub interval_s: Option<u64>,
    pub registry: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
pub struct DirStatus {
    pub dir: PathBuf,
    pub store: PathBuf,
    /// A tmpfs is mounted on DIR.
    pub mounted: bool,
    pub persist: String,
    pub generation: Option<u64>,
    pub generations_kept: u64,
    pub last_sync_unix_s: Option<u64>,
    pub last_sync_age_s: Option<u64>,
    pub interval_s: u64,
    /// Never synced, or the last good sync is older than twice the interval.
    pub stale: bool,
    /// Entries (files, links, directories) changed, added or removed since
    /// the last good sync: what a power loss would lose now.
    pub changed_files: Option<u64>,
    pub changed_bytes: Option<u64>,
    pub timer_next_unix_s: Option<u64>,
    /// Files stored torn in the newest generation (changed in place
    /// throughout their copy, or journals journald had open).
    pub torn_files: u64,
    /// The last sync attempt committed a generation with every file whole
    /// or a consistent prefix.
    pub last_sync_complete: bool,
    /// Why the last sync attempt failed, when it did.
    pub last_sync_error: Option<String>,
    /// The binary DIR's units run as root (None with `--boot none`).
    pub unit_binary: Option<PathBuf>,
    /// Why that binary is gone or not safe for root to run, if it is.
    pub unit_binary_problem: Option<String>,
    /// `ok`, `not_mounted` (no tmpfs on DIR), `other_mount` (a tmpfs that
    /// is not the one persist mounted), `unsafe_unit` (the units' binary is
    /// gone or another user can change it), `failed` (last sync failed),
    /// `partial` (files stored torn), `at_risk` (changes older than one
    /// interval not synced), `stale`, `error`.
    pub state: &'static str,
    /// What to run about `state`, when something helps.
    pub fix: Option<String>,
    /// What could not be read (store missing, DIR unreadable).
    pub error: Option<String>,
    /// DIR's zram device and what it costs (`--on zram`); null on tmpfs.
    pub zram: Option<ZramStatus>,
}

/// A persisted DIR's zram device, as `mm_stat` shows it now.
#[derive(Debug, Clone, Serialize)]
pub struct ZramStatus {
    /// `zram3`; None while DIR's device is not mounted there.
    pub device: Option<String>,
    /// The back end in use (as enabled: None for the kernel's default).
    pub algorithm: Option<String>,
    pub disksize_bytes: u64,
    /// Data written to the device, uncompressed (files and ext4's metadata).
    pub orig_data_bytes: Option<u64>,
    /// The RAM the device holds now, allocator overhead included: what DIR costs.
    pub mem_used_total_bytes: Option<u64>,
    /// `orig_data_size / mem_used_total`: data stored per byte of RAM.
    pub data_per_ram_ratio: Option<f64>,
}

fn zram_status(mounts: &[crate::sys::MountInfo], e: &Registered) -> Option<ZramStatus> {
    let z = e.zram.as_ref()?;
    let device = mount::persisted_at(mounts, &e.dir, Some(z)).and_then(mount::zram_name);
    if device.is_some() {
        // What was written lately sits in the page cache, not yet in zram:
        // written out first, else the figures leave it out.
        if let Ok(f) = open_dir(&e.dir) {
            let _ = rustix::fs::syncfs(&f);
        }
    }
    let mm = device.as_deref().and_then(zram::mm_stat_of);
    let algorithm = device
        .as_deref()
        .and_then(|d| {
            std::fs::read_to_string(format!("/sys/block/{d}/comp_algorithm"))
                .ok()
                .and_then(|t| zram::parse_algorithms(&t).1)
        })
        .or_else(|| z.algorithm.clone());
    Some(ZramStatus {
        device,
        algorithm,
        disksize_bytes: z.disksize_bytes,
        orig_data_bytes: mm.map(|m| m.orig_data_bytes),
        mem_used_total_bytes: mm.map(|m| m.mem_used_total_bytes),
        data_per_ram_ratio: mm.and_then(|m| m.ratio()),
    })
}

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub schema_version: u32,
    pub dirs: Vec<DirStatus>,
}

fn one(ctx: &Context, e: &Registered, now_s: u64) -> DirStatus {
    let mut s = DirStatus {
        dir: e.dir.clone(),
        store: e.store.clone(),
        mounted: false,
        persist: e.persist.clone(),
        generation: None,
        generations_kept: 0,
        last_sync_unix_s: None,
        last_sync_age_s: None,
        interval_s: e.interval_s,
        stale: true,
        changed_files: None,
        changed_bytes: None,
        timer_next_unix_s: None,
        torn_files: 0,
        last_sync_complete: false,
        last_sync_error: None,
        unit_binary: None,
        unit_binary_problem: None,
        state: "ok",
        fix: None,
        error: None,
        zram: None,
    };
    if let Ok((m, _)) = ctx.sysroot.mountinfo() {
        s.mounted = mount::persisted_at(&m, &e.dir, e.zram.as_ref()).is_some();
        s.zram = zram_status(&m, e);
    }
    if e.persist != "none" {
        s.timer_next_unix_s = units::next_run_unix_s(&e.dir);
        if let Some(ud) = &e.unit_dir {
            s.unit_binary = units::unit_bin(ud, &e.dir);
            s.unit_binary_problem = match &s.unit_binary {
                Some(b) => units::binary_problem(b),
                None => Some(format!(
                    "no ExecStart can be read from {}",
                    ud.join(&units::names(&e.dir)[0]).display()
                )),
            };
        }
    }
    if let Err(err) = fill(&mut s, e, now_s) {
        s.error = Some(format!("{err:#}"));
    }
    judge(&mut s, e);
    s
}

/// The one state a directory is in, worst first, and what to run about it.
fn judge(s: &mut DirStatus, e: &Registered) {
    let d = crate::term::safe_path(&e.dir);
    let fs = if e.zram.is_some() {
        "zram file system"
    } else {
        "tmpfs"
    };
    let ours = s.mounted && {
        // The tmpfs the last sync read, or the one the last restore filled.
        let opened = store::open(&e.store).ok();
        let known: Vec<u64> = [
            opened
                .as_ref()
                .and_then(|st| super::record::LastSync::load(st.fd()))
                .and_then(|r| r.dir_dev),
            opened.as_ref().and_then(|st| st.live_index_dev()),
        ]
        .into_iter()
        .flatten()
        .collect();
        known.is_empty() || rustix::fs::stat(&e.dir).is_ok_and(|st| known.contains(&st.st_dev))
    };
    let at_risk = s.changed_files.unwrap_or(0) > 0
        && s.last_sync_age_s
            .is_some_and(|a| a > e.interval_s + TIMER_SLACK_S);
    (s.state, s.fix) = if !s.mounted {
        (
            "not_mounted",
            Some(format!(
                "no {fs} on {d}: writes go to the disk below and nothing is synced; run `tmpfsctl persist restore {d}`"
            )),
        )
    } else if !ours {
        (
            "other_mount",
            Some(format!(
                "the {fs} on {d} is not the one persist filled; unmount it and run `tmpfsctl persist restore {d}`"
            )),
        )
    } else if let Some(why) = &s.unit_binary_problem {
        (
            "unsafe_unit",
            Some(format!(
                "its units run, as root, a binary that cannot be relied on: {why}; install the \
                 package (or copy a built tmpfsctl with `sudo install -m755` into /usr/local/bin), \
                 then run `persist disable {d}` and `persist enable {d}` with that binary"
            )),
        )
    } else if s.error.is_some() {
        ("error", None)
    } else if s.last_sync_error.is_some() {
        (
            "failed",
            Some(format!(
                "the last sync failed; run `tmpfsctl persist sync {d}` to see why"
            )),
        )
    } else if s.torn_files > 0 {
        (
            "partial",
            Some(format!(
                "{} file(s) stored torn; the next sync stores them again (`tmpfsctl persist sync {d}`)",
                s.torn_files
            )),
        )
    } else if s.stale {
        (
            "stale",
            Some(format!(
                "run `tmpfsctl persist sync {d}`; is its timer running?"
            )),
        )
    } else if at_risk {
        (
            "at_risk",
            Some(format!(
                "changes older than one interval are not synced; run `tmpfsctl persist sync {d}`"
            )),
        )
    } else {
        ("ok", None)
    };
}

/// How late a timer sync may be (systemd's default AccuracySec) before the
/// changes it would take count as at risk beyond one interval.
const TIMER_SLACK_S: u64 = 60;

fn fill(s: &mut DirStatus, e: &Registered, now_s: u64) -> Result<()> {
    let store = store::open(&e.store)?;
    s.generations_kept = store.generations()?.len() as u64;
    let g = store.newest_complete()?;
    s.generation = g;
    let last = super::record::LastSync::load(store.fd());
    s.last_sync_error = last.as_ref().and_then(|r| r.error.clone());
    if let Some(g) = g {
        let (entries, synced_ns) = store.manifest(g)?;
        s.torn_files = entries.iter().filter(|e| e.torn).count() as u64;
        s.last_sync_complete = s.torn_files == 0
            && last
                .as_ref()
                .is_none_or(|r| r.complete() && r.generation == Some(g));
        let t = (synced_ns / 1_000_000_000).max(0) as u64;
        s.last_sync_unix_s = Some(t);
        let age = now_s.saturating_sub(t);
        s.last_sync_age_s = Some(age);
        s.stale = age > 2 * e.interval_s;
    }
    let dfd = open_dir(&e.dir)?;
    let d = load::diff(dfd.as_fd(), &*store, g)?;
    s.changed_files = Some(d.changed_files());
    s.changed_bytes = Some(d.changed_bytes);
    Ok(())
}

pub fn status_cmd(ctx: &Context, req: &StatusRequest) -> Result<StatusReport> {
    let reg = Registry::load(&req.registry)?;
    let targets: Vec<Registered> = match &req.dir {
        Some(d) => {
            let dir = resolve_dir(d)?;
            let mut e = match (reg.get(&dir), &req.store) {
                (Some(e), _) => e.clone(),
                (None, Some(st)) => Registered {
                    dir: dir.clone(),
                    store: st.clone(),
                    size: None,
                    interval_s: DEFAULT_INTERVAL_S,
                    keep: DEFAULT_KEEP,
                    persist: "none".into(),
                    unit_dir: None,
                    fstab: None,
                    fstab_line: None,
                    trust: None,
                    zram: None,
                },
                (None, None) => anyhow::bail!(
                    "{} is not a persisted directory (not in {}); give --store",
                    safe_path(&dir),
                    safe_path(&req.registry)
                ),
            };
            if let Some(st) = &req.store {
                e.store = st.clone();
            }
            vec![e]
        }
        None => reg.dirs.clone(),
    };
    let now_s = (super::sync::now_unix_ns() / 1_000_000_000) as u64;
    let dirs: Vec<DirStatus> = targets
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if let Some(i) = req.interval_s {
                e.interval_s = i;
            }
            one(ctx, &e, now_s)
        })
        .collect();
    let report = StatusReport {
        schema_version: 1,
        dirs,
    };
    Ok(report)
}

impl StatusReport {
    /// Exit 1 when any directory is not syncing as it should.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::problem_if(self.dirs.iter().any(|d| d.state != "ok"))
    }
}

fn age(s: u64) -> String {
    match s {
        0..120 => format!("{s} s ago"),
        120..7200 => format!("{} min ago", s / 60),
        7200..172_800 => format!("{} h ago", s / 3600),
        _ => format!("{} days ago", s / 86400),
    }
}

/// Green when all is well, yellow when a sync is behind or partial (data
/// at risk but nothing lost yet), red when syncing cannot work as it is.
fn state_tone(state: &str) -> Tone {
    match state {
        "ok" => Tone::Good,
        "stale" | "at_risk" | "partial" => Tone::Warn,
        _ => Tone::Bad,
    }
}

pub fn text(r: &StatusReport) -> String {
    let mut s = String::new();
    if r.dirs.is_empty() {
        s.push_str(
            "no persisted directories (`tmpfsctl persist enable DIR --store STORE` adds one)\n",
        );
        return s;
    }
    let mut t = crate::render::table(&[
        "dir",
        "on",
        "store",
        "gens",
        "last sync",
        "at risk now",
        "state",
    ]);
    for d in &r.dirs {
        let risk = match (d.changed_files, d.changed_bytes) {
            (Some(f), Some(b)) => format!("{f} entries, {}", fmt_bytes(b)),
            _ => "?".into(),
        };
        let state = match (&d.error, d.state) {
            (Some(e), "error") => format!("error: {}", safe(e)),
            (_, "stale") => format!("STALE (older than 2 x {} s)", d.interval_s),
            (_, "ok") => "ok".into(),
            (_, st) => st.to_uppercase(),
        };
        t.add_row(vec![
            safe_path(&d.dir),
            match (&d.zram, d.mounted) {
                (_, false) => "not mounted".to_string(),
                (Some(z), true) => z.device.clone().unwrap_or_else(|| "zram".into()),
                (None, true) => "tmpfs".to_string(),
            },
            safe_path(&d.store),
            d.generations_kept.to_string(),
            d.last_sync_age_s.map_or("never".into(), age),
            risk,
            paint(state_tone(d.state), &state),
        ]);
    }
    crate::render::fit_to_terminal(&mut t);
    let _ = writeln!(s, "{t}");
    for d in &r.dirs {
        if let Some(z) = &d.zram
            && let (Some(dev), Some(orig), Some(ram)) =
                (&z.device, z.orig_data_bytes, z.mem_used_total_bytes)
        {
            let _ = writeln!(
                s,
                "{}: on /dev/{dev} ({}, {} device): {} of data cost {} of RAM ({})",
                safe_path(&d.dir),
                z.algorithm.as_deref().unwrap_or("default algorithm"),
                fmt_bytes(z.disksize_bytes),
                fmt_bytes(orig),
                fmt_bytes(ram),
                z.data_per_ram_ratio
                    .map_or("nothing stored yet".into(), |r| format!(
                        "{r:.2}x data per byte of RAM"
                    ))
            );
        }
        if let Some(f) = &d.fix {
            let _ = writeln!(s, "{}: {}", safe_path(&d.dir), safe(f));
        }
    }
    s
}

/// node_exporter textfile metrics (one sample per directory and metric).
pub fn prom_text(r: &StatusReport) -> String {
    type Get = fn(&DirStatus) -> Option<f64>;
    let metrics: [(&str, &str, Get); 11] = [
        (
            "tmpfsctl_persist_last_sync_timestamp_seconds",
            "Unix time of the last good sync",
            |d| d.last_sync_unix_s.map(|v| v as f64),
        ),
        (
            "tmpfsctl_persist_last_sync_age_seconds",
            "Age of the last good sync",
            |d| d.last_sync_age_s.map(|v| v as f64),
        ),
        (
            "tmpfsctl_persist_interval_seconds",
            "The sync interval staleness is judged by (stale: last good sync older than twice this)",
            |d| Some(d.interval_s as f64),
        ),
        (
            "tmpfsctl_persist_changed_files",
            "Entries changed since the last good sync",
            |d| d.changed_files.map(|v| v as f64),
        ),
        (
            "tmpfsctl_persist_changed_bytes",
            "Bytes in files changed since the last good sync",
            |d| d.changed_bytes.map(|v| v as f64),
        ),
        (
            "tmpfsctl_persist_generations",
            "Complete generations in the store",
            |d| Some(d.generations_kept as f64),
        ),
        (
            "tmpfsctl_persist_stale",
            "1 when the last good sync is older than twice the interval",
            |d| Some(if d.stale { 1.0 } else { 0.0 }),
        ),
        (
            "tmpfsctl_persist_torn_files",
            "Files stored torn in the newest generation",
            |d| Some(d.torn_files as f64),
        ),
        (
            "tmpfsctl_persist_zram_mem_used_total_bytes",
            "RAM the zram device of a directory kept on zram holds (mm_stat mem_used_total)",
            |d| d.zram.as_ref()?.mem_used_total_bytes.map(|v| v as f64),
        ),
        (
            "tmpfsctl_persist_zram_orig_data_bytes",
            "Data written to that device, uncompressed (mm_stat orig_data_size)",
            |d| d.zram.as_ref()?.orig_data_bytes.map(|v| v as f64),
        ),
        (
            "tmpfsctl_persist_ok",
            "1 when the directory's state is ok (mounted, synced, nothing torn or at risk)",
            |d| Some(if d.state == "ok" { 1.0 } else { 0.0 }),
        ),
    ];
    let mut o = Exposition::new();
    for (name, help, get) in metrics {
        // Every family is printed, even with no directory registered, so a
        // rule over it sees "no sample" rather than "no such metric".
        o.gauge(name, &format!("{help}."));
        for d in &r.dirs {
            if let Some(v) = get(d) {
                o.sample(name, &[("dir", &d.dir.to_string_lossy())], v);
            }
        }
    }
    o.finish()
}
