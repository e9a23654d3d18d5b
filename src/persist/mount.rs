//! Putting a tmpfs on DIR for persist, filled before anyone can see it.
//!
//! [`mount_dir`] is the one place persist mounts: a tmpfs created detached
//! (new mount API: it has no path, so nothing can write into it or see it
//! half filled), filled by the caller from the store, then moved onto DIR in
//! one step. What was in DIR on disk stays underneath, untouched, and is
//! already in the store: nothing is hidden that is not in the tmpfs, nothing
//! is lost. It is deliberately one function so it can be routed through the
//! shared apply path later without touching the rest of persist.

use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use anyhow::{Context, Result};
use rustix::fs::{CWD, Mode, OFlags};
use rustix::mount::{FsMountFlags, FsOpenFlags, MountAttrFlags, MoveMountFlags, UnmountFlags};

use crate::sys::MountInfo;

/// The tmpfs mounted exactly on `dir`, if the visible mount there is one.
pub fn tmpfs_at<'a>(mounts: &'a [MountInfo], dir: &Path) -> Option<&'a MountInfo> {
    mounts
        .iter()
        .rev()
        .find(|m| m.mount_point == dir)
        .filter(|m| m.fstype == "tmpfs")
}

/// Mount a new tmpfs (`size` as tmpfs takes it, e.g. `512M` or `50%`; None
/// for the kernel's default) on `dir`, after `fill` has written its content
/// through the root fd it is given.
pub fn mount_dir(
    dir: &Path,
    size: Option<&str>,
    fill: impl FnOnce(BorrowedFd<'_>) -> Result<()>,
) -> Result<()> {
    let fs = rustix::mount::fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC)
        .context("fsopen(tmpfs) failed; this needs Linux 5.2+ and CAP_SYS_ADMIN (run as root)")?;
    rustix::mount::fsconfig_set_string(&fs, "source", "tmpfs")?;
    if let Some(s) = size {
        rustix::mount::fsconfig_set_string(&fs, "size", s)
            .with_context(|| format!("tmpfs rejected size={s}"))?;
    }
    rustix::mount::fsconfig_create(&fs).context("creating the tmpfs failed")?;
    let mnt = rustix::mount::fsmount(&fs, FsMountFlags::FSMOUNT_CLOEXEC, MountAttrFlags::empty())
        .context("fsmount failed")?;
    let root = rustix::fs::openat(
        &mnt,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    fill(root.as_fd())?;
    rustix::mount::move_mount(
        mnt.as_fd(),
        "",
        CWD,
        dir,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
    .with_context(|| format!("cannot move the new tmpfs onto {}", dir.display()))
}

/// Unmount the tmpfs on `dir`; busy is an error naming what to do.
pub fn unmount(dir: &Path) -> Result<()> {
    rustix::mount::unmount(dir, UnmountFlags::empty()).with_context(|| {
        format!(
            "cannot unmount {} (busy? `fuser -vm {}` shows who uses it; stop them and run again)",
            dir.display(),
            dir.display()
        )
    })
}
