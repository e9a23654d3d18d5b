//! Reading the machine for planning: the directory, what is mounted on it,
//! its fstab line and systemd unit, the memory and the other tmpfs limits.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use super::plan::{self, Facts};
use super::{Target, live, parse_mode};
use crate::command::Context;
use crate::sys::resolve::{self, OpenedDir, open_target, refuse_system_dir};
use crate::sys::{self, MountInfo, Sysroot, statfs, systemd};
use crate::units::{Size, parse_count, parse_size};

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
pub(crate) fn absolute(p: &Path) -> PathBuf {
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
                options: std::fs::read_to_string(&f)
                    .ok()
                    .and_then(|t| systemd::mount_options_in(&t)),
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

/// The size limits of all visible tmpfs mounts, each filesystem counted once
/// (as `status` adds them up), minus the one at DIR (which we replace) when
/// no other mount shows that filesystem.
fn other_tmpfs_limits(
    root: &Sysroot,
    mounts: &[MountInfo],
    mem_total: u64,
    dir: &Path,
    top: Option<&MountInfo>,
) -> u64 {
    let tmpfs: Vec<(&MountInfo, u64)> = mounts
        .iter()
        .zip(sys::mountinfo::visible_mask(mounts))
        .filter(|(m, visible)| *visible && m.fstype == "tmpfs")
        .map(|(m, _)| {
            let size = statfs::limits(m, root.is_live(), mem_total).size_bytes;
            (m, size.unwrap_or(0))
        })
        .collect();
    let dev = |m: &MountInfo| (m.major, m.minor);
    let mut seen = HashSet::new();
    let all: u64 = tmpfs
        .iter()
        .filter(|(m, _)| seen.insert(dev(m)))
        .map(|(_, size)| size)
        .sum();
    match tmpfs.iter().find(|(m, _)| m.mount_point == dir) {
        Some((r, size))
            if top.is_some_and(|m| m.fstype == "tmpfs")
                && !tmpfs
                    .iter()
                    .any(|(o, _)| dev(o) == dev(r) && o.mount_point != dir) =>
        {
            all.saturating_sub(*size)
        }
        _ => all,
    }
}

/// Read everything planning needs about `dir` from the machine (or --sysroot).
pub fn gather_facts(ctx: &Context, t: &Target) -> Result<Facts> {
    Ok(gather_facts_at(ctx, t)?.0)
}

/// [`gather_facts`], and DIR held open: apply acts on that descriptor.
pub fn gather_facts_at(ctx: &Context, t: &Target) -> Result<(Facts, OpenedDir)> {
    let root = &ctx.sysroot;
    let opened = open_target(root, &t.dir)?;
    let dir = opened.path.clone();
    refuse_system_dir(&dir)?;
    // Through the descriptor: the directory opened, not whatever the name
    // leads to by now.
    let host = opened.proc_path();
    let (mounts, _) = root.mountinfo()?;
    let (mem, _) = root.meminfo()?;
    let md = std::fs::metadata(&host)?;
    let usage =
        sys::du::usage(&host).with_context(|| format!("{}: cannot be read", dir.display()))?;
    let top = mount_at(&mounts, &dir);
    let current = top.map(|m| current_mount(root, m, mem.mem_total_bytes));

    let other = other_tmpfs_limits(root, &mounts, mem.mem_total_bytes, &dir, top);

    let fstab_path = fstab_file(root, t);
    let fstab = sys::fstab::Fstab::parse(&read_fstab(&fstab_path)?);
    let unit_name = systemd::mount_unit_name(&dir);
    let nested = mounts
        .iter()
        .filter(|m| m.mount_point != dir && m.mount_point.starts_with(&dir))
        .map(|m| m.mount_point.clone())
        .collect();
    let (package_files, package_files_total) = resolve::package_files(root.root(), &dir, 5);
    let facts = Facts {
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
        busy: sys::procfd::users_of(root, &dir),
        nested_mounts: nested,
        package_files,
        package_files_total,
        kernel_release: live::kernel_release(),
        tmpfs_quota: if root.is_live() {
            live::probe_tmpfs_quota()
        } else {
            plan::Support::Unknown("another system's root (--sysroot)".into())
        },
        dir,
    };
    Ok((facts, opened))
}
