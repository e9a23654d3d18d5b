//! The pure planning step: what the machine looks like ([`Facts`]) plus what
//! the user asked for ([`Request`]) gives a [`Plan`]: mount options with the
//! reason for each, the fstab line or systemd drop-in, the live steps and the
//! warnings. No I/O here, so `advise` can call [`plan`] on any facts and the
//! rules are tested table-driven.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::sys::MemInfo;
use crate::sys::fstab::FstabEntry;
use crate::sys::systemd::{UnitInfo, UnitState};
use crate::units::{Size, fmt_bytes, tmpfs_size_option};

pub const SCHEMA_VERSION: u32 = 1;

/// How the result is made to survive a reboot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// A line in /etc/fstab
    Fstab,
    /// A drop-in for the directory's systemd mount unit (tmp.mount for /tmp)
    Systemd,
}

/// Transparent huge pages policy (tmpfs `huge=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Huge {
    Never,
    Always,
    WithinSize,
    Advise,
}

impl Huge {
    fn as_str(self) -> &'static str {
        match self {
            Huge::Never => "never",
            Huge::Always => "always",
            Huge::WithinSize => "within_size",
            Huge::Advise => "advise",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FsKind {
    Tmpfs,
    /// No size limit, never swapped: accepted by `plan` only to explain why not
    Ramfs,
}

/// What the user asked for; `None` means "recommend something".
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub size: Option<Size>,
    pub inodes: Option<u64>,
    pub noexec: bool,
    pub noswap: bool,
    pub huge: Option<Huge>,
    /// Permission bits of the mount's root, e.g. 0o1777.
    pub mode: Option<u32>,
    pub via: Option<Via>,
    pub ramfs: bool,
}

/// A tmpfs/ramfs mounted exactly at DIR right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CurrentMount {
    pub fstype: String,
    /// Size limit in bytes (statfs on a live system; from `size=` otherwise).
    pub size_bytes: Option<u64>,
    pub nr_inodes: Option<u64>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nosuid: bool,
    pub nodev: bool,
    pub noexec: bool,
    pub noswap: bool,
    pub huge: Option<String>,
    pub options: Vec<String>,
}

/// A process using something under DIR (open file, cwd or root).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcUse {
    pub pid: u32,
    pub comm: String,
    /// `cwd`, `root`, or `fd N: PATH` (first few only).
    pub uses: Vec<String>,
}

/// What the machine looks like, as far as planning DIR is concerned.
#[derive(Debug, Clone)]
pub struct Facts {
    /// Absolute, symlinks resolved.
    pub dir: PathBuf,
    /// Filesystem DIR lives on now (`ext4`, or `tmpfs` when already applied).
    pub dir_fstype: String,
    pub dir_mode: u32,
    pub dir_uid: u32,
    pub dir_gid: u32,
    /// Allocated bytes under DIR (`du -s -x -B1`).
    pub used_bytes: u64,
    pub inodes: u64,
    pub mem: MemInfo,
    /// Sum of the size limits of all other tmpfs mounts (each superblock once).
    pub other_tmpfs_limits_bytes: u64,
    pub current: Option<CurrentMount>,
    pub fstab_path: PathBuf,
    /// The entry fstab has for DIR now, if any.
    pub fstab_entry: Option<FstabEntry>,
    pub unit: UnitInfo,
    /// Where a drop-in goes: `/etc/systemd/system` (or --unit-dir).
    pub unit_dir: PathBuf,
    pub busy: Vec<ProcUse>,
    /// Mount points below DIR (they would be hidden).
    pub nested_mounts: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OptionWhy {
    pub option: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MountState {
    /// DIR is not a tmpfs: apply mounts one.
    NotMounted,
    /// DIR already is a tmpfs with exactly these options: nothing to mount.
    Same,
    /// DIR is a tmpfs whose only difference is the size: `apply --resize` changes it live.
    SizeDiffers,
    /// DIR is a tmpfs/ramfs with other options: revert first.
    Conflict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PersistAction {
    Append,
    Replace,
    Unchanged,
    Write,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Persist {
    pub via: Via,
    /// fstab file, or the drop-in file.
    pub path: String,
    pub unit: String,
    /// The exact fstab line (no newline) or the whole drop-in file.
    pub content: String,
    pub action: PersistAction,
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub schema_version: u32,
    pub dir: String,
    pub fstype: FsKind,
    pub dir_fstype: String,
    pub used_bytes: u64,
    pub inodes: u64,
    pub mem_total_bytes: u64,
    pub swap_total_bytes: u64,
    pub other_tmpfs_limits_bytes: u64,
    /// Size limit as written in the options (`50%`, `2G`); null for ramfs.
    pub size_option: Option<String>,
    pub size_bytes: Option<u64>,
    pub nr_inodes: Option<u64>,
    pub mode: String,
    pub options: Vec<OptionWhy>,
    /// Comma-joined, as for `mount -o` / fstab / `Options=`.
    pub mount_options: String,
    pub mount_state: MountState,
    pub current: Option<CurrentMount>,
    pub persist: Persist,
    pub steps: Vec<String>,
    pub busy: Vec<ProcUse>,
    pub warnings: Vec<Warning>,
    /// Reasons `apply` would refuse; empty when it can go ahead.
    pub blockers: Vec<String>,
}

/// A bad request (exit 2): e.g. a size below what DIR holds now.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct PlanError(pub String);

const MIB: u64 = 1 << 20;
/// Kernel page size assumed for rounding size comparisons.
const PAGE: u64 = 4096;
/// Free room on top of current usage: half as much again, at least this.
const MIN_HEADROOM_BYTES: u64 = 64 * MIB;
const MIN_HEADROOM_INODES: u64 = 10_000;
/// systemd's tmp.mount default (nr_inodes=1m).
const DEFAULT_INODES: u64 = 1 << 20;

fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to).saturating_mul(to)
}

/// Bytes DIR needs: current usage plus headroom.
pub fn needed_bytes(used: u64) -> u64 {
    round_up(used.saturating_add((used / 2).max(MIN_HEADROOM_BYTES)), MIB)
}

/// Below this a limit is "tight": less than 10% (at least 1 MiB) free.
fn tight_bytes(used: u64) -> u64 {
    used.saturating_add((used / 10).max(MIB))
}

pub fn needed_inodes(inodes: u64) -> u64 {
    round_up(
        inodes.saturating_add((inodes / 2).max(MIN_HEADROOM_INODES)),
        1024,
    )
}

/// Size as tmpfs computes it: percentages of RAM in whole pages.
pub fn resolve_size(s: Size, mem_total: u64) -> u64 {
    match s {
        Size::Bytes(b) => round_up(b, PAGE),
        Size::PercentOfRam(p) => ((mem_total / PAGE) as f64 * p / 100.0) as u64 * PAGE,
    }
}

/// Escape a path for an fstab field (fstab(5): octal for space, tab, newline, backslash).
pub fn fstab_escape(p: &Path) -> String {
    let mut s = String::new();
    for &b in p.as_os_str().as_bytes() {
        if b.is_ascii_graphic() && b != b'\\' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\{b:03o}"));
        }
    }
    s
}

pub fn fstab_line(dir: &Path, fstype: &str, options: &str) -> String {
    format!("{fstype} {} {fstype} {options} 0 0", fstab_escape(dir))
}

pub const DROPIN_MARKER: &str = "# Written by `tmpfsctl apply`";

pub fn dropin_text(dir: &Path, options: &str) -> String {
    format!(
        "{DROPIN_MARKER}; `tmpfsctl revert {}` removes it.\n\
         # Every setting is restated so the result does not depend on the distribution's unit.\n\
         [Mount]\nWhat=tmpfs\nWhere={}\nType=tmpfs\nOptions={options}\n",
        dir.display(),
        dir.display()
    )
}

pub fn dropin_path(unit_dir: &Path, unit: &str) -> PathBuf {
    unit_dir.join(format!("{unit}.d")).join("override.conf")
}

fn is_shared_tmp(dir: &Path) -> bool {
    dir == Path::new("/tmp") || dir == Path::new("/var/tmp")
}

fn close(a: u64, b: u64) -> bool {
    a.abs_diff(b) < 16 * PAGE
}

/// Plan putting `facts.dir` on tmpfs. Pure; `Err` only for requests that can
/// never work (a limit below what DIR holds now).
pub fn plan(facts: &Facts, req: &Request) -> Result<Plan, PlanError> {
    let dir = &facts.dir;
    let shown = dir.display().to_string();
    let mem = &facts.mem;
    let ceiling = mem.mem_total_bytes.saturating_add(mem.swap_total_bytes);
    let mut options: Vec<OptionWhy> = Vec::new();
    let mut warnings: Vec<Warning> = Vec::new();
    let mut blockers: Vec<String> = Vec::new();
    let mut opt = |o: String, r: String| {
        options.push(OptionWhy {
            option: o,
            reason: r,
        })
    };
    let mut warn = |code: &str, m: String| {
        warnings.push(Warning {
            code: code.into(),
            message: m,
        })
    };
    let cur_tmpfs = facts.current.as_ref().filter(|c| c.fstype == "tmpfs");

    opt(
        "nosuid".into(),
        "a scratch directory has no business running setuid programs".into(),
    );
    opt(
        "nodev".into(),
        "device nodes in a writable scratch directory are a way around /dev permissions".into(),
    );
    if req.noexec {
        opt(
            "noexec".into(),
            "asked for; note that some installers and build tools execute from /tmp and then fail"
                .into(),
        );
    }

    let need_b = needed_bytes(facts.used_bytes);
    let need_i = needed_inodes(facts.inodes);
    let (mut size_option, mut size_bytes, mut nr_inodes) = (None, None, None);
    if !req.ramfs {
        // Size: the request if any (never below usage), else keep what a tmpfs
        // here already has, else tmpfs's own default of 50% of RAM unless that
        // is too small for what DIR holds.
        let (size, why) = match req.size {
            Some(s) => {
                let b = resolve_size(s, mem.mem_total_bytes);
                if b < facts.used_bytes {
                    return Err(PlanError(format!(
                        "--size {s} ({}) is below what {shown} holds now ({}); give at least {} \
                         (usage plus headroom), e.g. --size {}",
                        fmt_bytes(b),
                        fmt_bytes(facts.used_bytes),
                        fmt_bytes(need_b),
                        tmpfs_size_option(need_b)
                    )));
                }
                if b < tight_bytes(facts.used_bytes) {
                    warn(
                        "size_tight",
                        format!(
                            "size {} leaves less than the recommended headroom over the {} {shown} holds now; \
                             writers may hit ENOSPC (recommended at least {})",
                            fmt_bytes(b),
                            fmt_bytes(facts.used_bytes),
                            fmt_bytes(need_b)
                        ),
                    );
                }
                (s, "asked for".to_string())
            }
            // An existing tmpfs keeps its size (so a second apply is a no-op)
            // as long as what it holds fits.
            None => match cur_tmpfs
                .and_then(|c| c.size_bytes)
                .filter(|&b| b >= facts.used_bytes)
            {
                Some(b) => (
                    Size::Bytes(b),
                    "keeps the size the tmpfs here has now".to_string(),
                ),
                None => {
                    // Without swap a full tmpfs pins every page in RAM, so the
                    // default share is halved; with swap, tmpfs's own 50%.
                    let (pct, what) = if mem.swap_total_bytes == 0 {
                        (
                            25.0,
                            "a quarter of the RAM, since there is no swap to take a full tmpfs's pages",
                        )
                    } else {
                        (50.0, "tmpfs's default of half the RAM")
                    };
                    let share = resolve_size(Size::PercentOfRam(pct), mem.mem_total_bytes);
                    if share >= need_b {
                        (
                            Size::PercentOfRam(pct),
                            format!(
                                "{what} ({}): it is a limit, not a reservation, and \
                                 leaves room for {shown}'s {} now plus headroom",
                                fmt_bytes(share),
                                fmt_bytes(facts.used_bytes)
                            ),
                        )
                    } else {
                        (
                            Size::Bytes(need_b),
                            format!(
                                "{shown} holds {} now; {pct}% of the RAM ({}) would be too small, so usage + 50% (at least 64 MiB)",
                                fmt_bytes(facts.used_bytes),
                                fmt_bytes(share)
                            ),
                        )
                    }
                }
            },
        };
        let b = resolve_size(size, mem.mem_total_bytes);
        let why = if req.size.is_some() || cur_tmpfs.is_some_and(|c| c.size_bytes == Some(b)) {
            format!("{why} ({})", fmt_bytes(b))
        } else {
            why
        };
        opt(format!("size={size}"), why);
        size_option = Some(size.to_string());
        size_bytes = Some(b);
        if b > ceiling {
            warn(
                "size_exceeds_memory",
                format!(
                    "size {} is more than RAM + swap ({}): filling it would invoke the OOM killer; choose a smaller --size",
                    fmt_bytes(b),
                    fmt_bytes(ceiling)
                ),
            );
        }
        if need_b > ceiling {
            blockers.push(format!(
                "{shown} holds {} which with headroom ({}) does not fit in RAM + swap ({}); keep it on disk",
                fmt_bytes(facts.used_bytes),
                fmt_bytes(need_b),
                fmt_bytes(ceiling)
            ));
        }
        let total = facts.other_tmpfs_limits_bytes.saturating_add(b);
        if facts.other_tmpfs_limits_bytes > ceiling {
            warn(
                "tmpfs_overcommit",
                format!(
                    "the other tmpfs limits already add up to {}, more than RAM + swap ({}); this mount adds {}. \
                     Lower the size= of the largest ones (`tmpfsctl status`)",
                    fmt_bytes(facts.other_tmpfs_limits_bytes),
                    fmt_bytes(ceiling),
                    fmt_bytes(b)
                ),
            );
        } else if total > ceiling {
            warn(
                "tmpfs_overcommit",
                format!(
                    "with this mount, tmpfs limits add up to {} (other tmpfs {} + {}), more than RAM + swap ({}): \
                     if they all fill up the OOM killer runs. Lower --size, or the size= of other tmpfs mounts (`tmpfsctl status`)",
                    fmt_bytes(total),
                    fmt_bytes(facts.other_tmpfs_limits_bytes),
                    fmt_bytes(b),
                    fmt_bytes(ceiling)
                ),
            );
        }

        let (inodes, why) = match req.inodes {
            Some(n) => {
                if n < facts.inodes {
                    return Err(PlanError(format!(
                        "--inodes {n} is below the {} files and directories {shown} holds now; give at least {need_i}",
                        facts.inodes
                    )));
                }
                (n, "asked for".to_string())
            }
            None => match cur_tmpfs
                .and_then(|c| c.nr_inodes)
                .filter(|&n| n >= facts.inodes)
            {
                Some(n) => (
                    n,
                    "keeps the inode limit the tmpfs here has now".to_string(),
                ),
                None => {
                    let n = DEFAULT_INODES.max(need_i);
                    (
                        n,
                        format!(
                            "{} inodes in use now; {} allows that plus headroom (systemd's tmp.mount uses 1m); \
                             builds with many small files run out of inodes before bytes",
                            facts.inodes, n
                        ),
                    )
                }
            },
        };
        opt(format!("nr_inodes={inodes}"), why);
        nr_inodes = Some(inodes);
    }

    let mode = match req.mode {
        Some(m) => {
            opt(format!("mode={m:o}"), "asked for".into());
            m
        }
        None if is_shared_tmp(dir) => {
            let why = if facts.dir_mode & 0o7777 == 0o1777 {
                "as now: everyone may create files, the sticky bit stops them deleting each other's"
                    .to_string()
            } else {
                warn(
                    "tmp_mode",
                    format!(
                        "{shown} has mode {:o} now; shared temp directories need 1777 (sticky, world-writable)",
                        facts.dir_mode & 0o7777
                    ),
                );
                "shared temp directories need 1777: writable by all, sticky so users cannot delete each other's files".into()
            };
            opt("mode=1777".into(), why);
            0o1777
        }
        None => {
            let m = facts.dir_mode & 0o7777;
            opt(format!("mode={m:o}"), "as the directory has now".into());
            m
        }
    };
    if facts.dir_uid != 0 {
        opt(
            format!("uid={}", facts.dir_uid),
            "owner of the directory now".into(),
        );
    }
    if facts.dir_gid != 0 {
        opt(
            format!("gid={}", facts.dir_gid),
            "group of the directory now".into(),
        );
    }
    if let Some(h) = req.huge {
        opt(
            format!("huge={}", h.as_str()),
            "asked for: transparent huge pages for large files (fewer TLB misses, more memory per file)".into(),
        );
    }
    if req.noswap {
        opt(
            "noswap".into(),
            "asked for: pages never go to swap (Linux 6.4+); the limit then counts against RAM alone".into(),
        );
    }
    let mount_options = options
        .iter()
        .map(|o| o.option.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let fstype = if req.ramfs {
        FsKind::Ramfs
    } else {
        FsKind::Tmpfs
    };
    let fsname = if req.ramfs { "ramfs" } else { "tmpfs" };

    if req.ramfs {
        let m = format!(
            "ramfs has no size limit and is never swapped: one runaway writer in {shown} can take all RAM \
             and hang the machine. Use tmpfs with a size (drop --fstype ramfs); `apply` only sets up tmpfs"
        );
        warn("ramfs_requested", m);
        blockers.push("ramfs requested; apply only sets up tmpfs (it has a size limit)".into());
    }

    // What is mounted at DIR now.
    let mount_state = match &facts.current {
        None => MountState::NotMounted,
        Some(c) if c.fstype != "tmpfs" => {
            blockers.push(format!(
                "{shown} is already a {} mount; unmount it first (`umount {shown}`), then apply",
                c.fstype
            ));
            MountState::Conflict
        }
        Some(c) => {
            let flags_same = c.nosuid && c.nodev && c.noexec == req.noexec;
            let others_same = flags_same
                && c.mode & 0o7777 == mode
                && c.uid == facts.dir_uid
                && c.gid == facts.dir_gid
                && nr_inodes.is_none_or(|n| c.nr_inodes == Some(n))
                && c.noswap == req.noswap
                && req
                    .huge
                    .is_none_or(|h| c.huge.as_deref() == Some(h.as_str()));
            let size_same = match (size_bytes, c.size_bytes) {
                (Some(a), Some(b)) => close(a, b),
                _ => false,
            };
            match (others_same, size_same) {
                (true, true) => MountState::Same,
                (true, false) => MountState::SizeDiffers,
                _ => {
                    let mut d = Vec::new();
                    let yn = |b: bool| if b { "on" } else { "off" };
                    for (name, now, want) in [
                        ("nosuid", c.nosuid, true),
                        ("nodev", c.nodev, true),
                        ("noexec", c.noexec, req.noexec),
                        ("noswap", c.noswap, req.noswap),
                    ] {
                        if now != want {
                            d.push(format!("{name} {} (wanted {})", yn(now), yn(want)));
                        }
                    }
                    if c.mode & 0o7777 != mode {
                        d.push(format!("mode {:o} (wanted {mode:o})", c.mode & 0o7777));
                    }
                    if (c.uid, c.gid) != (facts.dir_uid, facts.dir_gid) {
                        d.push(format!(
                            "uid/gid {}:{} (wanted {}:{})",
                            c.uid, c.gid, facts.dir_uid, facts.dir_gid
                        ));
                    }
                    if let Some(n) = nr_inodes.filter(|&n| c.nr_inodes != Some(n)) {
                        d.push(format!(
                            "nr_inodes {} (wanted {n})",
                            c.nr_inodes.unwrap_or(0)
                        ));
                    }
                    if let Some(h) = req.huge.filter(|h| c.huge.as_deref() != Some(h.as_str())) {
                        d.push(format!(
                            "huge={} (wanted {})",
                            c.huge.as_deref().unwrap_or("never"),
                            h.as_str()
                        ));
                    }
                    blockers.push(format!(
                        "{shown} is already a tmpfs with other options: {}; only the size can change live \
                         (`tmpfsctl apply {shown} --resize SIZE`); for the rest run `tmpfsctl revert {shown} --keep-data` \
                         first, then apply",
                        d.join(", ")
                    ));
                    MountState::Conflict
                }
            }
        }
    };
    if !facts.nested_mounts.is_empty() {
        let list: Vec<String> = facts
            .nested_mounts
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        blockers.push(format!(
            "mount points inside {shown} would be hidden: {}; unmount them first",
            list.join(", ")
        ));
    }

    // Persistence.
    let unit = facts.unit.name.clone();
    let vendor_unit = facts.unit.fragment.is_some() && facts.unit.state != UnitState::Masked;
    let (via, via_why) = match req.via {
        Some(v) => (v, "asked for".to_string()),
        None if facts.fstab_entry.is_some() => (
            Via::Fstab,
            format!(
                "{} already has a line for {shown}",
                facts.fstab_path.display()
            ),
        ),
        None if vendor_unit && facts.unit.state == UnitState::Enabled => (
            Via::Systemd,
            format!(
                "systemd mounts {shown} with {unit} ({}); a drop-in keeps that and sets the options",
                facts
                    .unit
                    .fragment
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
        ),
        None => (
            Via::Fstab,
            format!("no systemd unit mounts {shown}; fstab is the usual place"),
        ),
    };
    let persist = match via {
        Via::Fstab => {
            let line = fstab_line(dir, fsname, &mount_options);
            let action = match &facts.fstab_entry {
                None => PersistAction::Append,
                Some(e)
                    if e.vfstype == fsname
                        && e.spec == fsname
                        && e.options.join(",") == mount_options =>
                {
                    PersistAction::Unchanged
                }
                Some(_) => PersistAction::Replace,
            };
            if facts.unit.state == UnitState::Enabled
                && facts
                    .unit
                    .fragment
                    .as_ref()
                    .is_some_and(|f| f.starts_with("/etc"))
            {
                warn(
                    "unit_overrides_fstab",
                    format!(
                        "{} in /etc overrides fstab for {shown}; use --via systemd or remove that unit",
                        unit
                    ),
                );
            }
            Persist {
                via,
                path: facts.fstab_path.display().to_string(),
                unit: unit.clone(),
                content: line,
                action,
                why: via_why,
            }
        }
        Via::Systemd => {
            if facts.unit.state == UnitState::Masked {
                blockers.push(format!(
                    "{unit} is masked, so a drop-in would never be used; `systemctl unmask {unit}` first, or --persist fstab"
                ));
            } else if facts.unit.fragment.is_none() {
                blockers.push(format!(
                    "no {unit} unit file exists to add a drop-in to; use --persist fstab (or --via fstab)"
                ));
            }
            if facts.fstab_entry.is_some() {
                warn(
                    "fstab_overrides_unit",
                    format!(
                        "{} has a line for {shown}, which systemd turns into {unit} and which wins over the vendor unit; \
                         remove that line or use --via fstab",
                        facts.fstab_path.display()
                    ),
                );
            }
            Persist {
                via,
                path: dropin_path(&facts.unit_dir, &unit).display().to_string(),
                unit: unit.clone(),
                content: dropin_text(dir, &mount_options),
                action: PersistAction::Write,
                why: via_why,
            }
        }
    };

    if !facts.busy.is_empty() {
        let mut list: Vec<String> = facts
            .busy
            .iter()
            .take(10)
            .map(|p| format!("{} ({})", p.pid, p.comm))
            .collect();
        if facts.busy.len() > 10 {
            list.push(format!("and {} more", facts.busy.len() - 10));
        }
        warn(
            "busy",
            format!(
                "processes use files under {shown}: {}. They keep using the old files on disk after the switch; \
                 restart them afterwards",
                list.join(", ")
            ),
        );
    }

    let mut steps = Vec::new();
    match mount_state {
        MountState::Same => steps.push(format!("{shown} already is a tmpfs with these options: mount nothing")),
        MountState::SizeDiffers => steps.push(format!(
            "{shown} already is a tmpfs; change its size live with `tmpfsctl apply {shown} --resize {}`",
            size_option.clone().unwrap_or_default()
        )),
        _ => {
            steps.push(format!(
                "create a new {fsname} ({mount_options}) as a detached mount that no other process can see"
            ));
            steps.push(format!(
                "copy {shown} into it ({} in {} entries), keeping owners, modes, ns timestamps, symlinks, hard links, \
                 xattrs/ACLs, FIFOs, sockets and device nodes",
                fmt_bytes(facts.used_bytes),
                facts.inodes
            ));
            steps.push(
                "compare the two trees entry by entry; on any error or difference discard the new mount (nothing changed)"
                    .into(),
            );
            steps.push(format!(
                "move the new mount onto {shown} in one step (move_mount); the old files stay on disk underneath"
            ));
        }
    }
    match (persist.via, persist.action) {
        (Via::Fstab, PersistAction::Unchanged) => {
            steps.push(format!("{} already has this line: leave it", persist.path))
        }
        (Via::Fstab, a) => steps.push(format!(
            "{} the line for {shown} {} {} atomically (backup {}.tmpfsctl.bak, other lines byte-for-byte), \
             checked with `findmnt --verify`",
            if a == PersistAction::Append { "append" } else { "replace" },
            if a == PersistAction::Append { "to" } else { "in" },
            persist.path,
            persist.path
        )),
        (Via::Systemd, _) => steps.push(format!(
            "write the drop-in {} (an existing one is kept as override.conf.tmpfsctl.bak), checked with `systemd-analyze verify`",
            persist.path
        )),
    }
    steps.push(format!(
        "re-read /proc/self/mountinfo to confirm {shown} is the new tmpfs"
    ));

    Ok(Plan {
        schema_version: SCHEMA_VERSION,
        dir: shown,
        fstype,
        dir_fstype: facts.dir_fstype.clone(),
        used_bytes: facts.used_bytes,
        inodes: facts.inodes,
        mem_total_bytes: mem.mem_total_bytes,
        swap_total_bytes: mem.swap_total_bytes,
        other_tmpfs_limits_bytes: facts.other_tmpfs_limits_bytes,
        size_option,
        size_bytes,
        nr_inodes,
        mode: format!("{mode:o}"),
        options,
        mount_options,
        mount_state,
        current: facts.current.clone(),
        persist,
        steps,
        busy: facts.busy.clone(),
        warnings,
        blockers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn facts(dir: &str, used: u64, inodes: u64) -> Facts {
        Facts {
            dir: dir.into(),
            dir_fstype: "ext4".into(),
            dir_mode: 0o41777,
            dir_uid: 0,
            dir_gid: 0,
            used_bytes: used,
            inodes,
            mem: MemInfo {
                mem_total_bytes: 8 * GIB,
                swap_total_bytes: 2 * GIB,
                ..Default::default()
            },
            other_tmpfs_limits_bytes: GIB,
            current: None,
            fstab_path: "/etc/fstab".into(),
            fstab_entry: None,
            unit: UnitInfo {
                name: "tmp.mount".into(),
                state: UnitState::Absent,
                fragment: None,
                dropins: vec![],
            },
            unit_dir: "/etc/systemd/system".into(),
            busy: vec![],
            nested_mounts: vec![],
        }
    }

    #[test]
    fn no_swap_defaults_to_a_quarter_of_ram() {
        let mut f = facts("/tmp", 100 * MIB, 100);
        f.mem.swap_total_bytes = 0;
        let p = plan(&f, &Request::default()).unwrap();
        assert_eq!(p.size_option.as_deref(), Some("25%"));
        assert_eq!(p.size_bytes, Some(2 * GIB));
        f.mem.swap_total_bytes = GIB;
        assert_eq!(
            plan(&f, &Request::default())
                .unwrap()
                .size_option
                .as_deref(),
            Some("50%")
        );
    }

    fn tmpfs_now(size: u64, inodes: u64) -> CurrentMount {
        CurrentMount {
            fstype: "tmpfs".into(),
            size_bytes: Some(size),
            nr_inodes: Some(inodes),
            mode: 0o1777,
            uid: 0,
            gid: 0,
            nosuid: true,
            nodev: true,
            noexec: false,
            noswap: false,
            huge: None,
            options: vec!["rw".into(), "nosuid".into(), "nodev".into()],
        }
    }

    fn codes(p: &Plan) -> Vec<&str> {
        p.warnings.iter().map(|w| w.code.as_str()).collect()
    }

    #[test]
    fn size_and_inode_rules() {
        // (used bytes, inodes, requested size, want size option, want nr_inodes)
        let cases: &[(u64, u64, Option<Size>, &str, u64)] = &[
            (10 << 20, 100, None, "50%", 1 << 20),
            // 5 GiB used: half of 8 GiB RAM is too small, so usage + 50%.
            (5 * GIB, 100, None, "7680M", 1 << 20),
            (
                10 << 20,
                3_000_000,
                None,
                "50%",
                4_500_000u64.div_ceil(1024) * 1024,
            ),
            (10 << 20, 100, Some(Size::Bytes(2 * GIB)), "2G", 1 << 20),
            (
                10 << 20,
                100,
                Some(Size::PercentOfRam(25.0)),
                "25%",
                1 << 20,
            ),
        ];
        for (used, inodes, size, want_size, want_inodes) in cases {
            let req = Request {
                size: *size,
                ..Default::default()
            };
            let p = plan(&facts("/tmp", *used, *inodes), &req).unwrap();
            assert_eq!(
                p.size_option.as_deref(),
                Some(*want_size),
                "used {used} size {size:?}"
            );
            assert_eq!(p.nr_inodes, Some(*want_inodes), "inodes {inodes}");
            assert!(p.size_bytes.unwrap() >= *used);
        }
    }

    #[test]
    fn refuses_limits_below_usage() {
        let f = facts("/tmp", GIB, 5000);
        let e = plan(
            &f,
            &Request {
                size: Some(Size::Bytes(512 << 20)),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.0.contains("below what /tmp holds now"), "{e}");
        assert!(e.0.contains("--size"), "{e}");
        let e = plan(
            &f,
            &Request {
                inodes: Some(100),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.0.contains("--inodes 100"), "{e}");
        // Just above usage: allowed but tight.
        let p = plan(
            &f,
            &Request {
                size: Some(Size::Bytes(GIB + (1 << 20))),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(codes(&p).contains(&"size_tight"), "{:?}", p.warnings);
    }

    #[test]
    fn tmp_gets_sticky_mode_nosuid_nodev() {
        let p = plan(&facts("/tmp", 0, 1), &Request::default()).unwrap();
        assert_eq!(
            p.mount_options,
            "nosuid,nodev,size=50%,nr_inodes=1048576,mode=1777"
        );
        assert_eq!(
            p.persist.content,
            "tmpfs /tmp tmpfs nosuid,nodev,size=50%,nr_inodes=1048576,mode=1777 0 0"
        );
        assert_eq!(p.persist.action, PersistAction::Append);
        assert!(p.blockers.is_empty());
        let mut f = facts("/tmp", 0, 1);
        f.dir_mode = 0o40755;
        let p = plan(&f, &Request::default()).unwrap();
        assert!(p.mount_options.contains("mode=1777"));
        assert!(codes(&p).contains(&"tmp_mode"));
        // Other directories keep their mode and owner.
        let mut f = facts("/srv/cache dir", 0, 1);
        f.dir_mode = 0o40750;
        f.dir_uid = 1000;
        f.dir_gid = 100;
        let p = plan(
            &f,
            &Request {
                noexec: true,
                noswap: true,
                huge: Some(Huge::WithinSize),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            p.mount_options,
            "nosuid,nodev,noexec,size=50%,nr_inodes=1048576,mode=750,uid=1000,gid=100,huge=within_size,noswap"
        );
        assert!(
            p.persist
                .content
                .starts_with("tmpfs /srv/cache\\040dir tmpfs "),
            "{}",
            p.persist.content
        );
    }

    #[test]
    fn overcommit_and_ramfs_warn() {
        let mut f = facts("/tmp", 0, 1);
        f.other_tmpfs_limits_bytes = 7 * GIB; // + 4 GiB (50%) > 10 GiB RAM + swap
        let p = plan(&f, &Request::default()).unwrap();
        assert!(codes(&p).contains(&"tmpfs_overcommit"), "{:?}", p.warnings);
        let f = facts("/tmp", 0, 1);
        assert!(!codes(&plan(&f, &Request::default()).unwrap()).contains(&"tmpfs_overcommit"));
        let p = plan(
            &f,
            &Request {
                ramfs: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(codes(&p).contains(&"ramfs_requested"));
        assert!(!p.blockers.is_empty());
        assert_eq!(p.size_option, None);
        assert!(p.persist.content.starts_with("ramfs /tmp ramfs "));
        // Does not fit at all.
        let p = plan(&facts("/tmp", 20 * GIB, 1), &Request::default()).unwrap();
        assert!(
            p.blockers.iter().any(|b| b.contains("does not fit")),
            "{:?}",
            p.blockers
        );
    }

    #[test]
    fn existing_mounts_and_idempotence() {
        let mut f = facts("/tmp", 10 << 20, 100);
        f.dir_fstype = "tmpfs".into();
        f.current = Some(tmpfs_now(GIB, 1 << 20));
        let p = plan(&f, &Request::default()).unwrap();
        assert_eq!(p.mount_state, MountState::Same);
        assert_eq!(p.size_option.as_deref(), Some("1G"));
        let p = plan(
            &f,
            &Request {
                size: Some(Size::Bytes(2 * GIB)),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(p.mount_state, MountState::SizeDiffers);
        assert!(p.blockers.is_empty());
        let p = plan(
            &f,
            &Request {
                noexec: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(p.mount_state, MountState::Conflict);
        assert!(
            p.blockers[0].contains("--resize") && p.blockers[0].contains("revert"),
            "{:?}",
            p.blockers
        );
        let mut other = tmpfs_now(GIB, 1);
        other.fstype = "ext4".into();
        f.current = Some(other);
        let p = plan(&f, &Request::default()).unwrap();
        assert_eq!(p.mount_state, MountState::Conflict);
        // The fstab line already there is left alone.
        let mut f = facts("/tmp", 0, 1);
        f.fstab_entry = crate::sys::fstab::parse_line(
            b"tmpfs /tmp tmpfs nosuid,nodev,size=50%,nr_inodes=1048576,mode=1777 0 0",
        )
        .unwrap();
        assert_eq!(
            plan(&f, &Request::default()).unwrap().persist.action,
            PersistAction::Unchanged
        );
        f.fstab_entry = crate::sys::fstab::parse_line(b"/dev/sdb1 /tmp ext4 defaults 0 2").unwrap();
        let p = plan(&f, &Request::default()).unwrap();
        assert_eq!(p.persist.action, PersistAction::Replace);
        assert_eq!(p.persist.via, Via::Fstab);
    }

    #[test]
    fn systemd_managed_tmp_gets_a_dropin() {
        let mut f = facts("/tmp", 0, 1);
        f.unit.state = UnitState::Enabled;
        f.unit.fragment = Some("/usr/lib/systemd/system/tmp.mount".into());
        let p = plan(&f, &Request::default()).unwrap();
        assert_eq!(p.persist.via, Via::Systemd);
        assert_eq!(
            p.persist.path,
            "/etc/systemd/system/tmp.mount.d/override.conf"
        );
        for l in [
            "What=tmpfs",
            "Where=/tmp",
            "Type=tmpfs",
            "Options=nosuid,nodev,size=50%,nr_inodes=1048576,mode=1777",
        ] {
            assert!(
                p.persist.content.lines().any(|x| x == l),
                "{l} in {}",
                p.persist.content
            );
        }
        assert!(p.blockers.is_empty());
        f.unit.state = UnitState::Masked;
        let p = plan(
            &f,
            &Request {
                via: Some(Via::Systemd),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(p.blockers.iter().any(|b| b.contains("masked")));
        // fstab wins when asked.
        f.unit.state = UnitState::Enabled;
        let p = plan(
            &f,
            &Request {
                via: Some(Via::Fstab),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(p.persist.via, Via::Fstab);
    }

    #[test]
    fn busy_and_nested_mounts() {
        let mut f = facts("/tmp", 0, 1);
        f.busy = vec![ProcUse {
            pid: 42,
            comm: "vim".into(),
            uses: vec!["cwd".into()],
        }];
        f.nested_mounts = vec!["/tmp/x".into()];
        let p = plan(&f, &Request::default()).unwrap();
        assert!(
            p.warnings
                .iter()
                .any(|w| w.code == "busy" && w.message.contains("42 (vim)"))
        );
        assert!(p.blockers.iter().any(|b| b.contains("/tmp/x")));
    }

    #[test]
    fn fstab_escapes_odd_paths() {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/a b\tc\nd\\e\xff"));
        let e = fstab_escape(p);
        assert_eq!(e, "/a\\040b\\011c\\012d\\134e\\377");
        assert_eq!(
            crate::sys::mountinfo::unescape(e.as_bytes()),
            p.as_os_str().as_bytes()
        );
    }
}
