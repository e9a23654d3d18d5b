//! Everything about a file but its data: owner, mode, times, xattrs.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use anyhow::Result;
use rustix::fs::{Mode, Stat, Timestamps, XattrFlags};
use rustix::io::Errno;

use super::CopyStats;

/// A file-system object whose xattrs we read or write: an open fd (files,
/// dirs) or, for objects that cannot be opened without side effects (symlinks,
/// FIFOs, devices), the name under a directory fd reached through /proc.
pub(super) enum Obj<'a> {
    Fd(BorrowedFd<'a>),
    At(PathBuf),
}

impl Obj<'_> {
    pub(super) fn at(dir: BorrowedFd<'_>, name: &CStr) -> Obj<'static> {
        let mut p = format!("/proc/self/fd/{}/", dir.as_raw_fd()).into_bytes();
        p.extend_from_slice(name.to_bytes());
        Obj::At(PathBuf::from(OsStr::from_bytes(&p)))
    }

    fn list(&self) -> rustix::io::Result<Vec<CString>> {
        loop {
            let n = match self {
                Obj::Fd(fd) => rustix::fs::flistxattr_query(fd)?,
                Obj::At(p) => rustix::fs::llistxattr_query(p)?,
            };
            if n == 0 {
                return Ok(Vec::new());
            }
            let mut buf = vec![0u8; n];
            let got = match self {
                Obj::Fd(fd) => rustix::fs::flistxattr(fd, &mut buf[..]),
                Obj::At(p) => rustix::fs::llistxattr(p, &mut buf[..]),
            };
            match got {
                Ok(len) => {
                    buf.truncate(len);
                    let mut v: Vec<CString> = buf
                        .split(|&b| b == 0)
                        .filter(|s| !s.is_empty())
                        .filter_map(|s| CString::new(s).ok())
                        .collect();
                    v.sort();
                    return Ok(v);
                }
                Err(Errno::RANGE) => continue, // grew between the calls
                Err(e) => return Err(e),
            }
        }
    }

    fn get(&self, name: &CStr) -> rustix::io::Result<Vec<u8>> {
        loop {
            let n = match self {
                Obj::Fd(fd) => rustix::fs::fgetxattr_query(fd, name)?,
                Obj::At(p) => rustix::fs::lgetxattr_query(p, name)?,
            };
            let mut buf = vec![0u8; n];
            if n == 0 {
                return Ok(buf);
            }
            let got = match self {
                Obj::Fd(fd) => rustix::fs::fgetxattr(fd, name, &mut buf[..]),
                Obj::At(p) => rustix::fs::lgetxattr(p, name, &mut buf[..]),
            };
            match got {
                Ok(len) => {
                    buf.truncate(len);
                    return Ok(buf);
                }
                Err(Errno::RANGE) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn set(&self, name: &CStr, value: &[u8]) -> rustix::io::Result<()> {
        match self {
            Obj::Fd(fd) => rustix::fs::fsetxattr(fd, name, value, XattrFlags::empty()),
            Obj::At(p) => rustix::fs::lsetxattr(p, name, value, XattrFlags::empty()),
        }
    }

    fn remove(&self, name: &CStr) -> rustix::io::Result<()> {
        match self {
            Obj::Fd(fd) => rustix::fs::fremovexattr(fd, name),
            Obj::At(p) => rustix::fs::lremovexattr(p, name),
        }
    }

    /// All xattrs, sorted by name. A filesystem without xattr support has none.
    pub(super) fn all(&self) -> rustix::io::Result<Vec<(CString, Vec<u8>)>> {
        let names = match self.list() {
            Ok(n) => n,
            Err(Errno::NOTSUP) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut v = Vec::with_capacity(names.len());
        for n in names {
            match self.get(&n) {
                Ok(val) => v.push((n, val)),
                Err(Errno::NODATA) => {} // removed meanwhile
                Err(e) => return Err(e),
            }
        }
        Ok(v)
    }
}

pub(super) fn times(st: &Stat) -> Timestamps {
    Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: st.st_atime,
            tv_nsec: st.st_atime_nsec as _,
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: st.st_mtime,
            tv_nsec: st.st_mtime_nsec as _,
        },
    }
}

pub(super) fn perm(st: &Stat) -> Mode {
    Mode::from_raw_mode(st.st_mode & 0o7777)
}

pub(super) fn owner(st: &Stat) -> (Option<rustix::fs::Uid>, Option<rustix::fs::Gid>) {
    // SAFETY-free: from_raw only wraps the number.
    (
        Some(rustix::fs::Uid::from_raw(st.st_uid)),
        Some(rustix::fs::Gid::from_raw(st.st_gid)),
    )
}

/// Make `dst`'s xattrs exactly `src`'s (extra ones on `dst` removed).
pub(super) fn sync_xattrs(
    src: &Obj<'_>,
    dst: &Obj<'_>,
    stats: &mut CopyStats,
) -> Result<(), (String, Errno)> {
    let want = src.all().map_err(|e| ("list xattrs".to_string(), e))?;
    let have = match dst.list() {
        Ok(h) => h,
        Err(Errno::NOTSUP) if want.is_empty() => return Ok(()),
        Err(e) => return Err(("list xattrs of the copy".into(), e)),
    };
    for h in have {
        if !want.iter().any(|(n, _)| *n == h) {
            dst.remove(&h)
                .map_err(|e| (format!("remove xattr {}", h.to_string_lossy()), e))?;
        }
    }
    for (n, v) in &want {
        dst.set(n, v)
            .map_err(|e| (format!("set xattr {}", n.to_string_lossy()), e))?;
        stats.xattrs += 1;
    }
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
