//! Files hidden below a mount: what the filesystem underneath holds at the
//! mount point, out of sight of `ls` and `du` but still using its space (a
//! directory applied as tmpfs keeps its old disk contents there).
//!
//! Read through `open_tree(OPEN_TREE_CLONE)` of the mount below, without
//! `AT_RECURSIVE`: a detached copy of that one mount with nothing mounted on
//! it, gone when its fd is closed. Nothing is mounted in the caller's
//! namespace, so nothing is left behind however the process ends.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use rustix::fs::{CWD, Mode, OFlags, RawDir};
use rustix::mount::{OpenTreeFlags, open_tree};
use serde::Serialize;

use crate::sys::{MountInfo, du};

/// What lies below a mount point, on the filesystem it covers.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HiddenBelow {
    /// Files, directories and links below the mount point (not counting it).
    pub files: u64,
    /// Their allocated bytes, as `du -s -x -B1` would count them there.
    pub bytes: u64,
}

/// Why the filesystem below could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blind {
    /// open_tree needs CAP_SYS_ADMIN.
    NotPrivileged,
    /// Another mount on the same point, or the covered mount is itself
    /// covered: its path does not lead to it.
    Unreachable,
}

impl Blind {
    pub fn reason(&self) -> &'static str {
        match self {
            Blind::NotPrivileged => "unreadable: run as root to look below the mount",
            Blind::Unreachable => "unreadable: the mount below is itself covered",
        }
    }
}

/// The mount point's directory on the mount that `m` covers, opened; with
/// a path through /proc/self/fd that walks inside that detached copy.
pub struct Below {
    _tree: OwnedFd,
    dir: OwnedFd,
}

impl Below {
    /// A path for path-based readers (the du walk): `/proc/self/fd/N/.`.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}/.", self.dir.as_raw_fd()))
    }

    /// Entries directly in the directory (one getdents pass, no stat).
    pub fn entries(&self) -> u64 {
        let mut buf = Vec::with_capacity(8 << 10);
        let mut d = RawDir::new(&self.dir, buf.spare_capacity_mut());
        let mut n = 0;
        while let Some(Ok(e)) = d.next() {
            let b = e.file_name().to_bytes();
            if b != b"." && b != b".." {
                n += 1;
            }
        }
        n
    }

    /// Files and bytes below, counted by the du walk.
    pub fn measure(&self) -> Option<HiddenBelow> {
        let u = du::usage(&self.path()).ok()?;
        let own = rustix::fs::fstat(&self.dir).map_or(0, |s| s.st_blocks as u64 * 512);
        Some(HiddenBelow {
            files: u.inodes.saturating_sub(1),
            bytes: u.bytes.saturating_sub(own),
        })
    }
}

/// Open what `m` covers. `mounts` is the whole table (to find the parent).
pub fn open(mounts: &[MountInfo], m: &MountInfo) -> Result<Below, Blind> {
    let parent = mounts
        .iter()
        .find(|p| p.mount_id == m.parent_id)
        .ok_or(Blind::Unreachable)?;
    // The parent's path must lead to the parent: the last mount on that
    // point, and not the same point as `m` (then the path leads to `m`).
    let top_at_parent = mounts
        .iter()
        .rev()
        .find(|o| o.mount_point == parent.mount_point);
    if parent.mount_point == m.mount_point
        || top_at_parent.map(|o| o.mount_id) != Some(parent.mount_id)
    {
        return Err(Blind::Unreachable);
    }
    let rel = m
        .mount_point
        .strip_prefix(&parent.mount_point)
        .map_err(|_| Blind::Unreachable)?;
    let tree = open_tree(
        CWD,
        &parent.mount_point,
        OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )
    .map_err(|e| match e {
        rustix::io::Errno::PERM | rustix::io::Errno::ACCESS => Blind::NotPrivileged,
        _ => Blind::Unreachable,
    })?;
    let rel: &Path = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let dir = rustix::fs::openat(
        &tree,
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        rustix::io::Errno::ACCESS => Blind::NotPrivileged,
        _ => Blind::Unreachable,
    })?;
    Ok(Below { _tree: tree, dir })
}

/// The directory that `top` (mounted at `dir`) hides, opened through a
/// private non-recursive clone of the mount below: the clone carries no
/// submounts, so `dir` in it is the plain directory on disk.
pub struct Underlying {
    _clone: OwnedFd,
    pub dir: OwnedFd,
}

pub fn open_underlying(mounts: &[MountInfo], top: &MountInfo, dir: &Path) -> Result<Underlying> {
    let parent = mounts
        .iter()
        .find(|m| m.mount_id == top.parent_id)
        .with_context(|| format!("cannot find the mount below {} in mountinfo", dir.display()))?;
    if parent.mount_point == dir {
        bail!(
            "{} is a mount stacked on another mount at the same place ({}); copy the data by hand",
            dir.display(),
            parent.fstype
        );
    }
    let rel = dir.strip_prefix(&parent.mount_point).with_context(|| {
        format!(
            "{} is not under {}",
            dir.display(),
            parent.mount_point.display()
        )
    })?;
    let clone = open_tree(
        CWD,
        &parent.mount_point,
        OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )
    .with_context(|| format!("cannot clone the mount at {}", parent.mount_point.display()))?;
    let rel: &Path = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let d = rustix::fs::openat(
        &clone,
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open the directory underneath {}", dir.display()))?;
    Ok(Underlying {
        _clone: clone,
        dir: d,
    })
}
