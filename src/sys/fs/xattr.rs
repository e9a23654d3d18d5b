//! Extended attributes (so POSIX ACLs and file capabilities) of an open file,
//! or of an entry that must not be opened, read and written exactly.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use rustix::fs::XattrFlags;
use rustix::io::Errno;

use super::cstr;

/// A file-system object whose xattrs we read or write: an open fd (files,
/// dirs) or, for objects that cannot be opened without side effects
/// (symlinks, FIFOs, devices), the name under a directory fd reached through
/// /proc/self/fd without following the last component.
pub enum Obj<'a> {
    Fd(BorrowedFd<'a>),
    At(PathBuf),
    /// `/proc/self/fd/N` of an `O_PATH` descriptor: followed, it is the
    /// entry itself (see [`super::Created`]).
    Proc(PathBuf),
}

impl Obj<'_> {
    pub fn at(dir: BorrowedFd<'_>, name: &[u8]) -> Obj<'static> {
        let mut p = format!("/proc/self/fd/{}/", dir.as_raw_fd()).into_bytes();
        p.extend_from_slice(name);
        Obj::At(PathBuf::from(OsStr::from_bytes(&p)))
    }

    fn list(&self) -> rustix::io::Result<Vec<CString>> {
        loop {
            let n = match self {
                Obj::Fd(fd) => rustix::fs::flistxattr_query(fd)?,
                Obj::At(p) => rustix::fs::llistxattr_query(p)?,
                Obj::Proc(p) => rustix::fs::listxattr_query(p)?,
            };
            if n == 0 {
                return Ok(Vec::new());
            }
            let mut buf = vec![0u8; n];
            let got = match self {
                Obj::Fd(fd) => rustix::fs::flistxattr(fd, &mut buf[..]),
                Obj::At(p) => rustix::fs::llistxattr(p, &mut buf[..]),
                Obj::Proc(p) => rustix::fs::listxattr(p, &mut buf[..]),
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
                Obj::Proc(p) => rustix::fs::getxattr_query(p, name)?,
            };
            let mut buf = vec![0u8; n];
            if n == 0 {
                return Ok(buf);
            }
            let got = match self {
                Obj::Fd(fd) => rustix::fs::fgetxattr(fd, name, &mut buf[..]),
                Obj::At(p) => rustix::fs::lgetxattr(p, name, &mut buf[..]),
                Obj::Proc(p) => rustix::fs::getxattr(p, name, &mut buf[..]),
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
            Obj::Proc(p) => rustix::fs::setxattr(p, name, value, XattrFlags::empty()),
        }
    }

    fn remove(&self, name: &CStr) -> rustix::io::Result<()> {
        match self {
            Obj::Fd(fd) => rustix::fs::fremovexattr(fd, name),
            Obj::At(p) => rustix::fs::lremovexattr(p, name),
            Obj::Proc(p) => rustix::fs::removexattr(p, name),
        }
    }

    /// All xattrs, sorted by name. A filesystem without xattr support (or
    /// that refuses to list them) has none.
    pub fn all(&self) -> rustix::io::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let names = match self.list() {
            Ok(n) => n,
            Err(Errno::NOTSUP | Errno::PERM) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut v = Vec::with_capacity(names.len());
        for n in names {
            match self.get(&n) {
                Ok(val) => v.push((n.into_bytes(), val)),
                Err(Errno::NODATA) => {} // removed meanwhile
                Err(e) => return Err(e),
            }
        }
        Ok(v)
    }

    /// Add these xattrs (the object is new: it has none to remove).
    pub fn set_all(&self, xattrs: &[(Vec<u8>, Vec<u8>)]) -> std::io::Result<()> {
        for (n, v) in xattrs {
            self.set(&cstr(n)?, v)?;
        }
        Ok(())
    }
}

/// Make `dst`'s xattrs exactly `src`'s (extra ones on `dst` removed); returns
/// how many were set. An error says what failed (for the caller's message).
pub fn sync_xattrs(src: &Obj<'_>, dst: &Obj<'_>) -> Result<u64, (String, Errno)> {
    let want = src.all().map_err(|e| ("list xattrs".to_string(), e))?;
    let have = match dst.list() {
        Ok(h) => h,
        Err(Errno::NOTSUP) if want.is_empty() => return Ok(0),
        Err(e) => return Err(("list xattrs of the copy".into(), e)),
    };
    for h in have {
        if !want.iter().any(|(n, _)| n.as_slice() == h.to_bytes()) {
            dst.remove(&h)
                .map_err(|e| (format!("remove xattr {}", h.to_string_lossy()), e))?;
        }
    }
    let mut set = 0;
    for (n, v) in &want {
        let show = || String::from_utf8_lossy(n).into_owned();
        let c = CString::new(n.as_slice())
            .map_err(|_| (format!("set xattr {}", show()), Errno::INVAL))?;
        dst.set(&c, v)
            .map_err(|e| (format!("set xattr {}", show()), e))?;
        set += 1;
    }
    Ok(set)
}
