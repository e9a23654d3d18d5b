//! Removing a tree: never through a symlink (every step is an
//! unlinkat/openat(O_NOFOLLOW) relative to an open directory) and never into
//! another filesystem. A filesystem mounted inside the tree (a bind mount of
//! someone's home, say) is not part of it: its files are refused up front,
//! named, before anything is removed, and every directory entered is checked
//! to be on the tree's own mount in case one appeared meanwhile.

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, FileType, StatxFlags};
use rustix::io::Errno;

use super::{names, open_dir_at, show};
use crate::sys::mountinfo;

/// Which mount a directory is on: the mount id where the kernel says it
/// (statx, Linux 5.8+; a bind mount of the same filesystem has the same
/// st_dev), else the device.
fn mount_of(dir: BorrowedFd<'_>) -> rustix::io::Result<(bool, u64)> {
    match rustix::fs::statx(dir, c"", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID) {
        Ok(x) if x.stx_mask & StatxFlags::MNT_ID.bits() != 0 => Ok((true, x.stx_mnt_id)),
        Ok(_) | Err(Errno::NOSYS) => {
            let st = rustix::fs::fstat(dir)?;
            Ok((false, st.st_dev))
        }
        Err(e) => Err(e),
    }
}

/// The mount points strictly inside the directory `dir`: mounts (in this
/// process's mountinfo) below the path `dir` has now that hang, through
/// their parents, from `dir`'s own mount. A mount elsewhere that shares
/// the path (`dir` reached through a private clone) is not one of them.
pub fn mounts_inside(dir: BorrowedFd<'_>) -> Vec<PathBuf> {
    let Ok((true, home)) = mount_of(dir) else {
        return Vec::new();
    };
    let Ok(at) = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())) else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let (mounts, _) = mountinfo::parse(&text);
    let parent: HashMap<u64, u64> = mounts.iter().map(|m| (m.mount_id, m.parent_id)).collect();
    let hangs_from_home = |mut id: u64| {
        for _ in 0..parent.len() {
            match parent.get(&id) {
                Some(&p) if p == home => return true,
                Some(&p) if p != id => id = p,
                _ => return false,
            }
        }
        false
    };
    let mut v: Vec<PathBuf> = mounts
        .iter()
        .filter(|m| m.mount_point != at && m.mount_point.starts_with(&at))
        .filter(|m| hangs_from_home(m.mount_id))
        .map(|m| m.mount_point.clone())
        .collect();
    v.sort();
    v.dedup();
    v
}

fn refuse_mounts(dir: BorrowedFd<'_>) -> Result<()> {
    let inside = mounts_inside(dir);
    if let Some(first) = inside.first() {
        let list: Vec<String> = inside
            .iter()
            .map(|p| show(p.as_os_str().as_bytes()))
            .collect();
        bail!(
            "{} {} mounted inside the tree to remove: its files are not part of it; \
             unmount {} first (`umount {}`). Nothing was removed",
            list.join(", "),
            if inside.len() == 1 {
                "is a filesystem"
            } else {
                "are filesystems"
            },
            if inside.len() == 1 { "it" } else { "them" },
            show(first.as_os_str().as_bytes())
        );
    }
    Ok(())
}

/// Remove `name` under `dir` and everything below it.
pub fn remove_tree(dir: BorrowedFd<'_>, name: &CStr) -> Result<()> {
    let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot stat {}", show(name.to_bytes()))),
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return unlink(dir, name, AtFlags::empty());
    }
    let sub =
        open_dir_at(dir, name).with_context(|| format!("cannot open {}", show(name.to_bytes())))?;
    refuse_mounts(sub.as_fd())?;
    let home = mount_of(dir)?;
    remove_dir(dir, name, home)
}

/// Remove everything inside `dir`, keeping `dir`.
pub fn clear_dir(dir: BorrowedFd<'_>) -> Result<()> {
    refuse_mounts(dir)?;
    let home = mount_of(dir)?;
    clear(dir, home)
}

fn clear(dir: BorrowedFd<'_>, home: (bool, u64)) -> Result<()> {
    for n in names(dir)? {
        let st = match rustix::fs::statat(dir, &n, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot stat {}", show(n.to_bytes())));
            }
        };
        if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
            remove_dir(dir, &n, home)?;
        } else {
            unlink(dir, &n, AtFlags::empty())?;
        }
    }
    Ok(())
}

fn remove_dir(dir: BorrowedFd<'_>, name: &CStr, home: (bool, u64)) -> Result<()> {
    let sub =
        open_dir_at(dir, name).with_context(|| format!("cannot open {}", show(name.to_bytes())))?;
    if mount_of(sub.as_fd())? != home {
        bail!(
            "{}: is a mount point; not removing (unmount it first)",
            show(name.to_bytes())
        );
    }
    clear(sub.as_fd(), home)?;
    unlink(dir, name, AtFlags::REMOVEDIR)
}

fn unlink(dir: BorrowedFd<'_>, name: &CStr, flags: AtFlags) -> Result<()> {
    match rustix::fs::unlinkat(dir, name, flags) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", show(name.to_bytes()))),
    }
}
