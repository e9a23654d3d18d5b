//! Putting a tmpfs on DIR for persist, filled before anyone can see it.
//!
//! [`mount_dir`] is the one place persist mounts: a tmpfs created detached
//! by the one tmpfs maker ([`crate::sys::tmpfs`], so `nosuid,nodev` like
//! every tmpfs tmpfsctl makes), filled by the caller from the store, then
//! moved onto DIR in one step. What was in DIR on disk stays underneath,
//! untouched, and is already in the store: nothing is hidden that is not in
//! the tmpfs, nothing is lost.

use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use anyhow::Result;

use crate::sys::MountInfo;
use crate::sys::tmpfs::{self, Allow};

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
/// through the root fd it is given. `allow` lifts `nosuid`/`nodev` only
/// when the user asked for it by name.
pub fn mount_dir(
    dir: &Path,
    size: Option<&str>,
    allow: Allow,
    fill: impl FnOnce(BorrowedFd<'_>) -> Result<()>,
) -> Result<()> {
    let options = size.map(|s| format!("size={s}")).unwrap_or_default();
    let t = tmpfs::mount_detached(&options, allow)?;
    fill(t.root.as_fd())?;
    tmpfs::attach(&t, dir)
}
