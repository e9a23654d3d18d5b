//! Putting DIR's file system on it for persist, filled before anyone can
//! see it: a tmpfs, or an ext4 on a zram device (`--on zram`).
//!
//! [`mount_dir`] is the one place persist mounts: a file system created
//! detached (a tmpfs by the one tmpfs maker, [`crate::sys::tmpfs`]; a zram
//! device with its ext4 by [`crate::sys::zram`]), `nosuid,nodev` like every
//! file system tmpfsctl makes, filled by the caller from the store, then
//! moved onto DIR in one step. What was in DIR on disk stays underneath,
//! untouched, and is already in the store: nothing is hidden that is not in
//! the new file system, nothing is lost.

use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use anyhow::{Context as _, Result};

use super::registry::ZramSetup;
use crate::sys::MountInfo;
use crate::sys::tmpfs::{self, Allow};
use crate::sys::zram::{self, ZramDevice};

/// The tmpfs mounted exactly on `dir`, if the visible mount there is one.
pub fn tmpfs_at<'a>(mounts: &'a [MountInfo], dir: &Path) -> Option<&'a MountInfo> {
    mounts
        .iter()
        .rev()
        .find(|m| m.mount_point == dir)
        .filter(|m| m.fstype == "tmpfs")
}

/// The file system persist keeps `dir` on, if it is the visible mount
/// there: a tmpfs, or (`zram` given) the ext4 on a zram device carrying
/// persist's label for it.
pub fn persisted_at<'a>(
    mounts: &'a [MountInfo],
    dir: &Path,
    zram: Option<&ZramSetup>,
) -> Option<&'a MountInfo> {
    let Some(z) = zram else {
        return tmpfs_at(mounts, dir);
    };
    mounts
        .iter()
        .rev()
        .find(|m| m.mount_point == dir)
        .filter(|m| m.fstype == "ext4" && zram_name(m).is_some())
        .filter(|m| zram::ext_label(Path::new(&m.source)).as_deref() == Some(z.label.as_str()))
}

/// `zramN` when the mount's source is a zram device.
pub fn zram_name(m: &MountInfo) -> Option<String> {
    let n = m.source.strip_prefix("/dev/")?;
    (n.strip_prefix("zram")?.parse::<u32>().is_ok()).then(|| n.to_string())
}

/// What to mount on DIR.
#[derive(Debug, Clone, Copy)]
pub enum Backing<'a> {
    /// `size` as tmpfs takes it (`512M`, `50%`); None: the kernel's default.
    Tmpfs { size: Option<&'a str> },
    /// A new zram device with an ext4 on it, as recorded at enable.
    Zram(&'a ZramSetup),
}

/// Mount a new file system on `dir`, after `fill` has written its content
/// through the root fd it is given. `allow` lifts `nosuid`/`nodev` only
/// when the user asked for it by name. A zram device made here is kept
/// only once mounted on DIR; on any failure before that it is removed.
pub fn mount_dir(
    dir: &Path,
    backing: Backing<'_>,
    allow: Allow,
    fill: impl FnOnce(BorrowedFd<'_>) -> Result<()>,
) -> Result<()> {
    match backing {
        Backing::Tmpfs { size } => {
            let options = size.map(|s| format!("size={s}")).unwrap_or_default();
            let t = tmpfs::mount_detached(&options, allow)?;
            fill(t.root.as_fd())?;
            tmpfs::attach(&t, dir)
        }
        Backing::Zram(z) => {
            let device = ZramDevice::make(&zram::Spec {
                algorithm: z.algorithm.clone(),
                disksize_bytes: z.disksize_bytes,
                label: z.label.clone(),
            })?;
            // The detached mount goes (its fds closed) before the device,
            // which is busy while it is mounted.
            let attached = (|| {
                let t = zram::mount_detached(&device.path(), allow)?;
                // mkfs's lost+found is no file of DIR's: it would be synced
                // into every generation (e2fsck makes one again if it needs it).
                rustix::fs::unlinkat(&t.root, "lost+found", rustix::fs::AtFlags::REMOVEDIR)
                    .context("removing lost+found from the new file system")?;
                fill(t.root.as_fd())?;
                tmpfs::attach(&t, dir)
            })();
            attached?;
            device.keep_for_persist()?;
            Ok(())
        }
    }
}
