//! A directory's own metadata copied from another (owner, xattrs, mode,
//! times), counting xattrs for the copy's statistics.

use std::os::fd::BorrowedFd;

use anyhow::Result;
use rustix::fs::Stat;
use rustix::io::Errno;

use super::CopyStats;
use crate::sys::fs::{self, Obj, owner, perm, times};

/// Make `dst`'s xattrs exactly `src`'s, counting them in `stats`.
pub(super) fn sync_xattrs(
    src: &Obj<'_>,
    dst: &Obj<'_>,
    stats: &mut CopyStats,
) -> Result<(), (String, Errno)> {
    stats.xattrs += fs::sync_xattrs(src, dst)?;
    Ok(())
}

/// Give `dst` the owner, xattrs, mode and times of `src` (both directories).
pub fn copy_root_meta(src: BorrowedFd<'_>, dst: BorrowedFd<'_>) -> Result<()> {
    let st = rustix::fs::fstat(src)?;
    copy_dir_meta(src, dst, &st, &mut CopyStats::default())
        .map_err(|(what, e)| anyhow::anyhow!("{what}: {e}"))
}

pub(super) fn copy_dir_meta(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    st: &Stat,
    stats: &mut CopyStats,
) -> Result<(), (String, Errno)> {
    let (u, g) = owner(st);
    rustix::fs::fchown(dst, u, g).map_err(|e| ("owner".to_string(), e))?;
    sync_xattrs(&Obj::Fd(src), &Obj::Fd(dst), stats)?;
    rustix::fs::fchmod(dst, perm(st)).map_err(|e| ("mode".to_string(), e))?;
    rustix::fs::futimens(dst, &times(st)).map_err(|e| ("timestamps".to_string(), e))?;
    Ok(())
}
