//! Reading the machine for planning: the directory, what is mounted on it,
//! its fstab line and systemd unit, the memory and the other tmpfs limits.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use super::plan::{self, Facts};
use super::{Target, live, parse_mode};
use crate::context::Context;
use crate::sys::{self, MountInfo, Sysroot, statfs, systemd};
use crate::units::{Size, parse_count, parse_size};

/// Resolve DIR (relative to cwd, symlinks followed) to its absolute path on the
/// inspected system, with the error messages the issue asks for.
pub fn resolve_dir(root: &Sysroot, p: &Path) -> Result<PathBuf> {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    };
    let host = root.path(&abs);
    let md = match std::fs::metadata(&host) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "{}: no such directory; check the path, or create it first (mkdir -p {})",
            p.display(),
            p.display()
        ),
        Err(e) => bail!("{}: cannot be inspected: {e}", p.display()),
    };
    if !md.is_dir() {
        bail!(
            "{}: is a file, not a directory; tmpfs is mounted on a directory (give the directory that should hold the files)",
            p.display()
        );
    }
    let canon =
        std::fs::canonicalize(&host).with_context(|| format!("cannot resolve {}", p.display()))?;
    let resolved = if root.is_live() {
        canon
    } else {
        Path::new("/").join(canon.strip_prefix(root.root()).unwrap_or(&canon))
    };
    if resolved == Path::new("/") {
        bail!("refusing to put / on tmpfs; give a directory such as /tmp");
    }
    Ok(resolved)
}

/// The topmost mount exactly at `dir`, if any.
pub(crate) fn mount_at<'a>(mounts: &'a [MountInfo], dir: &Path) -> Option<&'a MountInfo> {
    mounts.iter().rev().find(|m| m.mount_point == dir)
}

fn current_mount(root: &Sysroot, m: &MountInfo, mem_total: u64) -> plan::CurrentMount {
    let stats = if root.is_live() {
        statfs::statfs(&m.mount_point).ok()
    } else {
        None
    };
    let size_opt = m
        .option("size")
        .and_then(|v| parse_size(v).ok())
        .map(|s| plan::resolve_size(s, mem_total));
    let size_bytes = match stats {
        Some(s) if m.fstype == "tmpfs" => (s.size_bytes > 0).then_some(s.size_bytes),
        _ if m.fstype == "tmpfs" => size_opt
            .or_else(|| Some(plan::resolve_size(Size::PercentOfRam(50.0), mem_total)))
            .filter(|&b| b > 0),
        _ => None,
    };
    let nr_inodes = match stats {
        Some(s) => (s.inodes_total > 0).then_some(s.inodes_total),
        None => m
            .option("nr_inodes")
            .and_then(|v| parse_count(v).ok())
            .filter(|&n| n > 0),
    };
    let num = |k: &str| m.option(k).and_then(|v| v.parse().ok()).unwrap_or(0);
    plan::CurrentMount {
        fstype: m.fstype.clone(),
        size_bytes,
        nr_inodes,
        mode: m
            .option("mode")
            .and_then(|v| parse_mode(v).ok())
            .unwrap_or(0o1777),
        uid: num("uid"),
        gid: num("gid"),
        nosuid: m.has_flag("nosuid"),
        nodev: m.has_flag("nodev"),
        noexec: m.has_flag("noexec"),
        noswap: m.has_flag("noswap"),
        huge: m.option("huge").map(str::to_string),
        options: m.all_options(),
    }
}

/// Relative --fstab/--unit-dir paths are shown and written as absolute ones.
fn absolute(p: &Path) -> PathBuf {
    std::env::current_dir()
        .map(|c| c.join(p))
        .unwrap_or_else(|_| p.to_path_buf())
}

pub(crate) fn fstab_file(root: &Sysroot, t: &Target) -> PathBuf {
    t.fstab
        .as_deref()
        .map(absolute)
        .unwrap_or_else(|| root.path("/etc/fstab"))
}

pub(crate) fn unit_dir(root: &Sysroot, t: &Target) -> PathBuf {
    t.unit_dir
        .as_deref()
        .map(absolute)
        .unwrap_or_else(|| root.path("/etc/systemd/system"))
}

pub(crate) fn read_fstab(path: &Path) -> Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn unit_for(root: &Sysroot, t: &Target, name: &str) -> systemd::UnitInfo {
    if let Some(d) = &t.unit_dir {
        let f = d.join(name);
        if f.exists() {
            let wanted = std::fs::read_dir(d).is_ok_and(|rd| {
                rd.flatten().any(|e| {
                    e.file_name().to_string_lossy().ends_with(".wants")
                        && e.path().join(name).exists()
                })
            });
            return systemd::UnitInfo {
                name: name.to_string(),
                state: if wanted {
                    systemd::UnitState::Enabled
                } else {
                    systemd::UnitState::Disabled
                },
                fragment: Some(f),
                dropins: Vec::new(),
            };
        }
    }
    let mut u = systemd::unit_info(root, name);
    // Keep the fragment readable from here (it is a path on the inspected system).
    u.fragment = u.fragment.map(|f| root.path(f));
    u
}

/// Read everything planning needs about `dir` from the machine (or --sysroot).
pub fn gather_facts(ctx: &Context, t: &Target) -> Result<Facts> {
    let root = &ctx.sysroot;
    let dir = resolve_dir(root, &t.dir)?;
    let host = root.path(&dir);
    let (mounts, _) = root.mountinfo()?;
    let (mem, _) = root.meminfo()?;
    let md = std::fs::metadata(&host)?;
    let usage =
        sys::du::usage(&host).with_context(|| format!("{}: cannot be read", dir.display()))?;
    let top = mount_at(&mounts, &dir);
    let current = top.map(|m| current_mount(root, m, mem.mem_total_bytes));

    // All tmpfs limits from `status`, minus the one at DIR (which we replace).
    let status = crate::status::gather(ctx, &crate::status::StatusQuery::default())?;
    let mut other = status.memory.tmpfs_limits_bytes;
    if let Some(m) = top.filter(|m| m.fstype == "tmpfs")
        && let Some(r) = status
            .mounts
            .iter()
            .find(|r| Path::new(&r.mountpoint) == dir)
        && !status
            .mounts
            .iter()
            .any(|o| o.device == r.device && Path::new(&o.mountpoint) != dir)
    {
        let _ = m;
        other = other.saturating_sub(r.size_bytes.unwrap_or(0));
    }

    let fstab_path = fstab_file(root, t);
    let fstab = sys::fstab::Fstab::parse(&read_fstab(&fstab_path)?);
    let unit_name = systemd::mount_unit_name(&dir);
    let nested = mounts
        .iter()
        .filter(|m| m.mount_point != dir && m.mount_point.starts_with(&dir))
        .map(|m| m.mount_point.clone())
        .collect();
    Ok(Facts {
        dir_fstype: sys::mountinfo::mount_for(&mounts, &dir)
            .map(|m| m.fstype.clone())
            .unwrap_or_else(|| "unknown".into()),
        dir_mode: md.mode(),
        dir_uid: md.uid(),
        dir_gid: md.gid(),
        used_bytes: usage.bytes,
        inodes: usage.inodes,
        mem,
        other_tmpfs_limits_bytes: other,
        current,
        fstab_entry: fstab.entry_for(&dir).cloned(),
        fstab_path,
        unit: unit_for(root, t, &unit_name),
        unit_dir: unit_dir(root, t),
        busy: live::users_of(&root.path("/proc"), &dir),
        nested_mounts: nested,
        dir,
    })
}
