//! `tmpfsctl status`: what is RAM-backed here, how full, and what it costs in RAM.

pub mod kernel;
mod render;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::command::Context;
use crate::sys::{self, MemInfo, MountInfo, ParseWarning, Sysroot, mountinfo, statfs, systemd};

/// 2: a ramfs's `used_bytes`/`inodes_used` (and so `memory.ram_fs_used_bytes`)
/// come from walking its files instead of statfs's 0; `usage_source`, `huge`,
/// `noswap`, `quota` and `memory.ramfs_used_bytes` are new.
/// 3: a temp directory's `used_bytes`/`inodes` come from statfs where it is
/// its own mount, from a walk only with `--du`, and are null otherwise
/// (`paths[].usage_source` says which); `mounts[].hidden_below` is new.
/// 4: `zram` (devices with algorithm, data, RAM cost, ratio, use; the
/// kernel's zram features), `tmpfs_features` and `swap` (tmpfs data out in
/// swap now) are new.
pub const SCHEMA_VERSION: u32 = 4;

use crate::render::color::NEARLY_FULL_PERCENT;

pub use crate::sys::statfs::UsageSource;

/// What `status` is asked about: the plain request the CLI (or another
/// capability) hands to [`gather`].
#[derive(Debug, Clone, Default)]
pub struct StatusQuery {
    /// Extra directories to report on, besides /tmp, /var/tmp and $TMPDIR.
    pub paths: Vec<PathBuf>,
    /// Also list hugetlbfs and devtmpfs mounts.
    pub all: bool,
    /// Walk each directory that is not its own mount to count its data.
    pub du: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct MountReport {
    pub mountpoint: String,
    pub fstype: String,
    pub source: String,
    /// Size limit; null when the filesystem has none (ramfs, tmpfs size=0).
    pub size_bytes: Option<u64>,
    /// Null only when statfs could not be run (a --sysroot that is not the live system).
    pub used_bytes: Option<u64>,
    pub avail_bytes: Option<u64>,
    pub use_percent: Option<f64>,
    /// Inode limit; null when unlimited.
    pub inodes_total: Option<u64>,
    pub inodes_used: Option<u64>,
    pub inodes_use_percent: Option<f64>,
    /// Where `used_bytes` and `inodes_used` come from.
    pub usage_source: UsageSource,
    /// tmpfs's `huge=` option (never, always, within_size, advise); null
    /// when absent (the kernel's default, never, unless changed with
    /// transparent_hugepage/shmem_enabled).
    pub huge: Option<String>,
    /// tmpfs `noswap` (Linux 6.4+): pages stay in RAM.
    pub noswap: bool,
    /// tmpfs quota options (usrquota, grpquota, their limits; Linux 6.6+).
    pub quota: Vec<String>,
    /// All mount and superblock options, as the kernel shows them.
    pub options: Vec<String>,
    /// The options that matter for a RAM filesystem (nosuid, noswap, huge=, ...).
    pub key_options: Vec<String>,
    /// `major:minor` of the superblock; bind mounts of one tmpfs share it.
    pub device: String,
    pub bind: bool,
    /// Entries the covered filesystem holds at this mount point, hidden by
    /// the mount; null when not looked at (not root, a --sysroot, or past
    /// the first [`HIDDEN_CHECKS`] mounts).
    pub hidden_below_entries: Option<u64>,
}

/// Mounts whose covered directory status looks into: one open_tree and one
/// getdents each, so a host with tens of thousands of container mounts is
/// not slowed down by it.
pub const HIDDEN_CHECKS: usize = 256;

#[derive(Debug, Clone, Serialize)]
pub struct FstabReport {
    pub spec: String,
    pub vfstype: String,
    pub options: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PathReport {
    pub path: String,
    pub resolved: String,
    pub mountpoint: String,
    pub fstype: String,
    pub ram_backed: bool,
    /// Bytes under the path: statfs's figure where the path is its own
    /// mount, else (with `--du`) a walk like `du -s -x -B1`; null when not
    /// counted.
    pub used_bytes: Option<u64>,
    pub inodes: Option<u64>,
    /// Where `used_bytes` and `inodes` come from.
    pub usage_source: UsageSource,
    pub unreadable_dirs: u64,
    /// The /etc/fstab entry for the path's mount point, if any.
    pub fstab: Option<FstabReport>,
    /// systemd's mount unit for the path itself (`tmp.mount` for /tmp).
    pub systemd_unit: String,
    pub systemd_state: systemd::UnitState,
    pub systemd_dropins: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MemoryReport {
    pub mem_total_bytes: u64,
    pub mem_available_bytes: u64,
    pub shmem_bytes: u64,
    pub swap_total_bytes: u64,
    pub swap_free_bytes: u64,
    /// Data held by all tmpfs/ramfs superblocks (each counted once).
    pub ram_fs_used_bytes: u64,
    /// Sum of tmpfs size limits (each superblock once).
    pub tmpfs_limits_bytes: u64,
    /// Data held by ramfs superblocks (counted by walking their files), part
    /// of `ram_fs_used_bytes`; /proc/meminfo counts it in Cached and
    /// Unevictable, not in Shmem.
    pub ramfs_used_bytes: u64,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    pub schema_version: u32,
    pub sysroot: String,
    pub mounts: Vec<MountReport>,
    pub paths: Vec<PathReport>,
    pub memory: MemoryReport,
    pub swap: kernel::SwappedReport,
    pub zram: kernel::ZramReport,
    pub tmpfs_features: kernel::TmpfsFeatures,
    pub warnings: Vec<Warning>,
}

/// Options worth showing for a RAM filesystem, picked from all of a mount's
/// options (computed once per mount: status lists tens of thousands).
fn key_options(all: &[String]) -> Vec<String> {
    let mut v: Vec<String> = all
        .iter()
        .filter(|o| {
            matches!(o.as_str(), "ro" | "nosuid" | "nodev" | "noexec" | "noswap")
                || is_quota(o)
                || ["huge=", "mode=", "nr_inodes=", "size="]
                    .iter()
                    .any(|p| o.starts_with(p))
        })
        .cloned()
        .collect();
    v.dedup();
    v
}

fn is_quota(o: &str) -> bool {
    let key = o.split('=').next().unwrap_or(o);
    matches!(key, "quota" | "usrquota" | "grpquota")
        || key.starts_with("usrquota_")
        || key.starts_with("grpquota_")
}

fn percent(used: u64, total: u64) -> Option<f64> {
    (total > 0).then(|| (used as f64 * 1000.0 / total as f64).round() / 10.0)
}

/// The report of mount `m`, which it consumes: its strings move into the
/// report instead of being copied (tens of thousands of mounts on hosts with
/// many containers).
fn mount_report(root: &Sysroot, m: MountInfo, mem: &MemInfo) -> MountReport {
    let statfs::Limits {
        size_bytes: size,
        used_bytes: mut used,
        avail_bytes: avail,
        inodes_total: itotal,
        inodes_used: mut iused,
    } = statfs::limits(&m, root.is_live(), mem.mem_total_bytes);
    let mut usage_source = if used.is_some() {
        UsageSource::Statfs
    } else {
        UsageSource::Unknown
    };
    if m.fstype == "ramfs" {
        // statfs on ramfs says 0 used whatever it holds; its files say how
        // much (st_blocks is kept for ramfs pages).
        let walked = root
            .is_live()
            .then(|| sys::du::usage(&m.mount_point).ok())
            .flatten();
        (used, iused, usage_source) = match walked {
            Some(u) => (Some(u.bytes), Some(u.inodes), UsageSource::Walk),
            None => (None, None, UsageSource::Unknown),
        };
    }
    let bind = m.is_bind();
    let device = format!("{}:{}", m.major, m.minor);
    let tmpfs = m.fstype == "tmpfs";
    let huge = m.option("huge").filter(|_| tmpfs).map(str::to_string);
    // As MountInfo::all_options: mount options first, then the superblock's
    // that are not among them.
    let mut options = m.mount_options;
    for o in m.super_options {
        if !options.contains(&o) {
            options.push(o);
        }
    }
    MountReport {
        mountpoint: m
            .mount_point
            .into_os_string()
            .into_string()
            .unwrap_or_else(|p| p.to_string_lossy().into_owned()),
        fstype: m.fstype,
        source: m.source,
        size_bytes: size,
        used_bytes: used,
        avail_bytes: avail,
        use_percent: match (used, size) {
            (Some(u), Some(s)) => percent(u, s),
            _ => None,
        },
        inodes_total: itotal,
        inodes_used: iused,
        inodes_use_percent: match (iused, itotal) {
            (Some(u), Some(t)) => percent(u, t),
            _ => None,
        },
        usage_source,
        huge,
        noswap: tmpfs && options.iter().any(|o| o == "noswap"),
        quota: options
            .iter()
            .filter(|o| tmpfs && is_quota(o))
            .cloned()
            .collect(),
        key_options: key_options(&options),
        options,
        device,
        bind,
        hidden_below_entries: None,
    }
}

#[cfg(test)]
fn visible(mounts: &[MountInfo]) -> Vec<&MountInfo> {
    mounts
        .iter()
        .zip(mountinfo::visible_mask(mounts))
        .filter_map(|(m, v)| v.then_some(m))
        .collect()
}

fn resolve_in(root: &Sysroot, p: &Path) -> Result<PathBuf> {
    root.resolve(p).with_context(|| {
        format!(
            "{}: no such directory; give an existing PATH (or create it first)",
            p.display()
        )
    })
}

fn path_report(
    root: &Sysroot,
    shown: &str,
    p: &Path,
    mounts: &[MountInfo],
    fstab: &sys::fstab::Fstab,
    walk: bool,
) -> Result<PathReport> {
    let resolved = resolve_in(root, p)?;
    let m = sys::mountinfo::mount_for(mounts, &resolved);
    let (used_bytes, inodes, usage_source, unreadable_dirs) =
        path_usage(root, p, &resolved, m, walk)?;
    let mp = m
        .map(|m| m.mount_point.clone())
        .unwrap_or_else(|| "/".into());
    let fstab = fstab.entry_for(&mp).map(|e| FstabReport {
        spec: e.spec.clone(),
        vfstype: e.vfstype.clone(),
        options: e.options.clone(),
    });
    let unit = systemd::unit_info(root, &systemd::mount_unit_name(&resolved));
    let fstype = m
        .map(|m| m.fstype.clone())
        .unwrap_or_else(|| "unknown".into());
    Ok(PathReport {
        path: shown.to_string(),
        resolved: resolved.to_string_lossy().into_owned(),
        mountpoint: mp.to_string_lossy().into_owned(),
        ram_backed: sys::is_ram_backed(&fstype),
        fstype,
        used_bytes,
        inodes,
        usage_source,
        unreadable_dirs,
        fstab,
        systemd_unit: unit.name,
        systemd_state: unit.state,
        systemd_dropins: unit
            .dropins
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect(),
    })
}

/// How much data is under a temp directory, without walking it unless asked:
/// where the directory is its own mount (and not ramfs, whose statfs says 0)
/// statfs answers in one call, as `df`; a walk costs a stat per file.
fn path_usage(
    root: &Sysroot,
    shown: &Path,
    resolved: &Path,
    m: Option<&MountInfo>,
    walk: bool,
) -> Result<(Option<u64>, Option<u64>, UsageSource, u64)> {
    if let Some(m) = m.filter(|m| m.mount_point == resolved && m.fstype != "ramfs") {
        let l = statfs::limits(m, root.is_live(), 0);
        if let (Some(b), Some(i)) = (l.used_bytes, l.inodes_used) {
            return Ok((Some(b), Some(i), UsageSource::Statfs, 0));
        }
    }
    if !walk {
        return Ok((None, None, UsageSource::NotCounted, 0));
    }
    let usage = sys::du::usage(&root.path(resolved)).with_context(|| {
        format!(
            "{}: cannot be read; run as a user who can read it",
            shown.display()
        )
    })?;
    Ok((
        Some(usage.bytes),
        Some(usage.inodes),
        UsageSource::Walk,
        usage.unreadable_dirs,
    ))
}

/// Everything `status` reports, gathered without printing anything.
pub fn gather(ctx: &Context, args: &StatusQuery) -> Result<StatusReport> {
    let root = &ctx.sysroot;
    let (mounts, mut parse_warnings) = root.mountinfo()?;
    let (mem, w) = root.meminfo()?;
    parse_warnings.extend(w);
    let fstab = root.fstab()?;
    parse_warnings.extend(fstab.warnings.iter().cloned());

    // Defaults first; a default that does not exist is not an error.
    let mut wanted: Vec<(String, PathBuf, bool)> = vec![
        ("/tmp".into(), "/tmp".into(), false),
        ("/var/tmp".into(), "/var/tmp".into(), false),
    ];
    if let Some(t) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
        let t = PathBuf::from(t);
        wanted.push((format!("$TMPDIR ({})", t.display()), t, false));
    }
    for p in &args.paths {
        wanted.push((p.display().to_string(), p.clone(), true));
    }
    let mut paths: Vec<PathReport> = Vec::new();
    for (label, p, explicit) in wanted {
        if !explicit && !root.path(&p).exists() {
            continue;
        }
        let r = path_report(root, &label, &p, &mounts, &fstab, args.du)?;
        if !explicit && paths.iter().any(|o| o.resolved == r.resolved) {
            continue;
        }
        paths.push(r);
    }

    // Last, as it consumes the mount table.
    let keep = mountinfo::visible_mask(&mounts);
    let look_below = root.is_live() && rustix::process::geteuid().is_root();
    let mut checks = 0usize;
    let below: Vec<Option<u64>> = mounts
        .iter()
        .zip(&keep)
        .map(|(m, visible)| {
            let ram = matches!(m.fstype.as_str(), "tmpfs" | "ramfs");
            if !(look_below && *visible && ram && checks < HIDDEN_CHECKS) {
                return None;
            }
            checks += 1;
            sys::hidden::open(&mounts, m).ok().map(|b| b.entries())
        })
        .collect();
    let shown: Vec<MountReport> = mounts
        .into_iter()
        .zip(keep)
        .zip(below)
        .filter(|((m, visible), _)| {
            *visible
                && match m.fstype.as_str() {
                    "tmpfs" | "ramfs" => true,
                    "hugetlbfs" | "devtmpfs" => args.all,
                    _ => false,
                }
        })
        .map(|((m, _), below)| MountReport {
            hidden_below_entries: below,
            ..mount_report(root, m, &mem)
        })
        .collect();

    let memory = memory_report(&shown, &mem);
    let mut warnings = warnings(&shown, &paths, &memory, &parse_warnings);
    warnings.extend(interrupted_runs(root));
    let zram = kernel::zram_report(root);
    let swap = kernel::swapped(
        memory.ram_fs_used_bytes - memory.ramfs_used_bytes,
        &mem,
        &zram,
    );
    Ok(StatusReport {
        schema_version: SCHEMA_VERSION,
        sysroot: root.root().to_string_lossy().into_owned(),
        mounts: shown,
        paths,
        memory,
        swap,
        zram,
        tmpfs_features: kernel::tmpfs_features(root),
        warnings,
    })
}

fn memory_report(mounts: &[MountReport], mem: &MemInfo) -> MemoryReport {
    let mut seen = HashSet::new();
    let (mut used, mut limits, mut ramfs) = (0u64, 0u64, 0u64);
    for m in mounts
        .iter()
        .filter(|m| m.fstype == "tmpfs" || m.fstype == "ramfs")
    {
        if seen.insert(m.device.clone()) {
            used += m.used_bytes.unwrap_or(0);
            if m.fstype == "tmpfs" {
                limits += m.size_bytes.unwrap_or(0);
            } else {
                ramfs += m.used_bytes.unwrap_or(0);
            }
        }
    }
    let mut notes = vec![
        "tmpfs data is counted as Shmem: free's \"shared\" column, and inside \"buff/cache\"; \
         it does not show as \"used\" in free or htop, yet it cannot be dropped like cache."
            .to_string(),
        if mem.swap_total_bytes > 0 {
            "tmpfs pages can be swapped out under memory pressure unless the mount has `noswap` (Linux 6.4+)."
                .into()
        } else {
            "There is no swap: every tmpfs page stays in RAM until its file is deleted.".into()
        },
    ];
    let ceiling = mem.mem_total_bytes.saturating_add(mem.swap_total_bytes);
    if limits > ceiling {
        notes.push(format!(
            "tmpfs size limits add up to {}, more than RAM + swap ({}), as on any stock systemd machine: \
             a limit is not a reservation, so that alone is no risk (tmpfs_overcommit says when one mount \
             filling up would be).",
            crate::units::fmt_bytes(limits),
            crate::units::fmt_bytes(ceiling)
        ));
    }
    if mounts.iter().any(|m| m.fstype == "ramfs") {
        notes.push(
            "ramfs usage is counted by walking its files (ramfs keeps no figure for statfs). \
             ramfs data is not Shmem: /proc/meminfo counts it in Cached and Unevictable \
             (free's \"buff/cache\"), and it can be neither dropped nor swapped."
                .into(),
        );
    }
    MemoryReport {
        mem_total_bytes: mem.mem_total_bytes,
        mem_available_bytes: mem.mem_available_bytes,
        shmem_bytes: mem.shmem_bytes,
        swap_total_bytes: mem.swap_total_bytes,
        swap_free_bytes: mem.swap_free_bytes,
        ram_fs_used_bytes: used,
        tmpfs_limits_bytes: limits,
        ramfs_used_bytes: ramfs,
        notes,
    }
}

/// Warnings, each saying what to do. Pure: tested on hand-made reports.
/// An apply or revert killed part way (its journal note outlived its
/// process): the user should finish or undo it by running it again.
fn interrupted_runs(root: &Sysroot) -> Vec<Warning> {
    use crate::term::safe;
    sys::journal::pending(root)
        .into_iter()
        .map(|p| Warning {
            code: "interrupted_run".into(),
            message: format!(
                "`tmpfsctl {} {}` (pid {}) was interrupted part way; run the same command again: \
                 it finishes or undoes what the killed run left{}",
                safe(&p.op),
                safe(&p.dir),
                p.pid,
                p.fstab
                    .map(|f| format!(" (it was editing {})", safe(&f)))
                    .unwrap_or_default()
            ),
        })
        .collect()
}

pub fn warnings(
    mounts: &[MountReport],
    paths: &[PathReport],
    mem: &MemoryReport,
    parse_warnings: &[ParseWarning],
) -> Vec<Warning> {
    use crate::units::fmt_bytes;
    let mut out = Vec::new();
    let mut w = |code: &str, message: String| {
        out.push(Warning {
            code: code.into(),
            message,
        })
    };
    for m in mounts.iter().filter(|m| m.fstype == "ramfs") {
        w(
            "ramfs_unlimited",
            format!(
                "{} is ramfs: it has no size limit, so a runaway writer can take all RAM (and ramfs is never swapped). \
                 Use tmpfs with a size= instead: `tmpfsctl plan {}`.",
                m.mountpoint, m.mountpoint
            ),
        );
    }
    if let Some(message) = overcommit(mounts, mem) {
        w("tmpfs_overcommit", message);
    }
    for m in mounts.iter().filter(|m| m.fstype == "tmpfs") {
        if m.huge.as_deref() == Some("always") {
            w(
                "tmpfs_huge_always",
                format!(
                    "{} is mounted with huge=always: every file that grows past 4 KiB can take a whole \
                     2 MiB huge page, so many small files fill it (and RAM) far faster than their sizes say. \
                     Use huge=within_size (`mount -o remount,huge=within_size {}`, and in its fstab line).",
                    m.mountpoint, m.mountpoint
                ),
            );
        }
        if let Some(n) = m.hidden_below_entries.filter(|n| *n > 0) {
            w(
                "tmpfs_hides_data",
                format!(
                    "{} hides {n} entries on the filesystem below it: they still use that disk's space, \
                     and neither `ls` nor `du` sees them while the mount is there. \
                     `tmpfsctl explain {} --json` counts them (hidden_below); to reach them, \
                     `mount --bind PARENT_MOUNT /mnt/below` (without --rbind) and look in /mnt/below.",
                    m.mountpoint, m.mountpoint
                ),
            );
        }
        if let Some(p) = m.use_percent.filter(|p| *p > NEARLY_FULL_PERCENT) {
            w(
                "tmpfs_nearly_full",
                format!(
                    "{} is {} ({} of {}): {}. \
                     `tmpfsctl top {}` shows who holds it, `tmpfsctl explain PATH` why a write there fails; \
                     delete old files or grow it (`mount -o remount,size=NEW {}`).",
                    m.mountpoint,
                    fullness(p),
                    fmt_bytes(m.used_bytes.unwrap_or(0)),
                    fmt_bytes(m.size_bytes.unwrap_or(0)),
                    if is_full(p, m.avail_bytes) {
                        "writers there already get ENOSPC (No space left on device)"
                    } else {
                        "writers will soon get ENOSPC"
                    },
                    m.mountpoint,
                    m.mountpoint
                ),
            );
        }
        if let Some(p) = m.inodes_use_percent.filter(|p| *p > NEARLY_FULL_PERCENT) {
            let free = m
                .inodes_total
                .zip(m.inodes_used)
                .map(|(t, u)| t.saturating_sub(u));
            w(
                "tmpfs_inodes_nearly_full",
                format!(
                    "{} has used {p:.0}% of its inodes ({} of {}): {}. \
                     `tmpfsctl top {}` shows who holds them, `tmpfsctl explain PATH` why a create fails; \
                     raise nr_inodes (`mount -o remount,nr_inodes=NEW {}`) or remove small files.",
                    m.mountpoint,
                    m.inodes_used.unwrap_or(0),
                    m.inodes_total.unwrap_or(0),
                    if is_full(p, free) {
                        "creating a file there already fails with ENOSPC"
                    } else {
                        "creating files will soon fail with ENOSPC"
                    },
                    m.mountpoint,
                    m.mountpoint
                ),
            );
        }
    }
    if let Some(tmp) = paths.iter().find(|p| p.resolved == "/tmp")
        && !tmp.ram_backed
        && mem.mem_total_bytes >= 2 << 30
        && tmp
            .used_bytes
            .is_none_or(|u| mem.mem_available_bytes / 4 > u)
    {
        // Uncounted (no --du), the advice stands but the size is `plan`'s
        // to measure before anything moves.
        let holds = match tmp.used_bytes {
            Some(u) => format!(" and /tmp holds only {}", fmt_bytes(u)),
            None => String::new(),
        };
        w(
            "tmp_on_disk",
            format!(
                "/tmp is on {} (disk) while {} of RAM is available{holds}. \
                 `tmpfsctl bench` shows what tmpfs would gain; `tmpfsctl plan /tmp` shows how to move it.",
                tmp.fstype,
                fmt_bytes(mem.mem_available_bytes),
            ),
        );
    }
    for pw in parse_warnings {
        w(
            "parse_skipped",
            format!("skipped line {}: {}", pw.line, pw.reason),
        );
    }
    out
}

/// Nothing left (or less than shows as 0.1%): a write fails now, not soon.
fn is_full(percent: f64, left: Option<u64>) -> bool {
    left == Some(0) || percent >= 99.95
}

fn fullness(percent: f64) -> String {
    if percent >= 99.95 {
        "full".into()
    } else {
        format!("{percent:.0}% full")
    }
}

/// A tmpfs nobody fills: read-only, or a kernel interface under /sys or
/// /proc (e.g. cgroup v1's /sys/fs/cgroup); its size= is a number, not a risk.
fn writable_tmpfs(m: &MountReport) -> bool {
    m.fstype == "tmpfs"
        && !m.options.iter().any(|o| o == "ro")
        && !["/sys", "/proc"]
            .iter()
            .any(|k| Path::new(&m.mountpoint).starts_with(k))
}

/// What the RAM filesystems hold now: Shmem (tmpfs, shm, memfd) plus ramfs,
/// or the sum of their usage when that is larger (a capture without Shmem).
fn ram_fs_held(mem: &MemoryReport) -> u64 {
    mem.ram_fs_used_bytes
        .max(mem.shmem_bytes.saturating_add(mem.ramfs_used_bytes))
}

/// The real risk behind tmpfs limits that add up to more than RAM + swap.
/// That sum alone means nothing: a stock systemd machine has /dev/shm and
/// /tmp at 50% each, /run at 20% and each /run/user/UID at 10%, and limits
/// are not reservations. What can happen is one runaway writer filling one
/// mount. Its free room is a risk when it is more than memory can still give
/// (MemAvailable + SwapFree), or when what RAM filesystems hold now plus
/// that room is more than RAM + swap: the OOM killer then runs before ENOSPC
/// stops the writer. Those mounts are named, largest room first.
fn overcommit(mounts: &[MountReport], mem: &MemoryReport) -> Option<String> {
    use crate::units::fmt_bytes;
    let ceiling = mem.mem_total_bytes.saturating_add(mem.swap_total_bytes);
    let held = ram_fs_held(mem);
    // The most one mount may still take before memory runs out.
    let can_give = MemInfo {
        mem_total_bytes: mem.mem_total_bytes,
        mem_available_bytes: mem.mem_available_bytes,
        swap_total_bytes: mem.swap_total_bytes,
        swap_free_bytes: mem.swap_free_bytes,
        ..MemInfo::default()
    }
    .left_for_tmpfs(held);
    let mut seen = HashSet::new();
    let mut risky: Vec<(&MountReport, u64)> = mounts
        .iter()
        .filter(|m| writable_tmpfs(m) && seen.insert(m.device.clone()))
        .filter_map(|m| {
            let room = m.size_bytes?.saturating_sub(m.used_bytes.unwrap_or(0));
            (room > can_give).then_some((m, room))
        })
        .collect();
    if risky.is_empty() {
        return None;
    }
    risky.sort_by_key(|(_, room)| std::cmp::Reverse(*room));
    let names: Vec<String> = risky
        .iter()
        .take(3)
        .map(|(m, room)| format!("{} ({} free)", m.mountpoint, fmt_bytes(*room)))
        .collect();
    let (first, _) = risky[0];
    let safe = first.used_bytes.unwrap_or(0).saturating_add(can_give);
    let half = mem.mem_total_bytes / 2;
    let lower = if half < safe {
        format!(
            "below {}, e.g. to tmpfs's default of 50% of RAM ({})",
            fmt_bytes(safe),
            fmt_bytes(half)
        )
    } else {
        format!("below {}", fmt_bytes(safe))
    };
    Some(format!(
        "one writer filling {} would need more memory than is left ({}: MemAvailable + SwapFree, at most \
         RAM + swap {} less the {} of shared memory and ramfs now), so the OOM killer would run before the writer \
         gets ENOSPC. \
         Lower size= on {} {lower} (`mount -o remount,size=NEW {}`, and in its fstab line or unit).",
        names.join(" or "),
        fmt_bytes(can_give),
        fmt_bytes(ceiling),
        fmt_bytes(held),
        first.mountpoint,
        first.mountpoint
    ))
}

/// `tmpfsctl status`.
impl crate::command::Request for StatusQuery {
    type Report = StatusReport;

    fn run(&self, ctx: &Context) -> Result<StatusReport> {
        gather(ctx, self)
    }
}

#[cfg(test)]
mod tests;
