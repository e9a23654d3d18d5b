//! Small file-system operations persist is built from: opening without
//! following symlinks, listing a directory, xattrs, sparse-aware copying that
//! hashes what it moves. Everything works on directory fds so a name swapped
//! for a symlink by another process is never followed.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use rustix::fs::{Dir, Mode, OFlags, ResolveFlags, SeekFrom, Stat, XattrFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

pub fn os(b: &[u8]) -> &OsStr {
    OsStr::from_bytes(b)
}

pub fn cstr(b: &[u8]) -> std::io::Result<CString> {
    CString::new(b).map_err(|_| std::io::Error::other("a path holds a NUL byte"))
}

/// `rel` (several components) under `root`, refusing symlinks anywhere on the
/// way and any escape from `root` or crossing of a mount: what a sync opens
/// is what it walked, or nothing. An empty `rel` is `root` itself.
pub fn open_beneath(
    root: BorrowedFd<'_>,
    rel: &[u8],
    flags: OFlags,
) -> rustix::io::Result<OwnedFd> {
    let rel: &[u8] = if rel.is_empty() { b"." } else { rel };
    rustix::fs::openat2(
        root,
        OsStr::from_bytes(rel),
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_XDEV,
    )
}

pub fn open_dir_beneath(root: BorrowedFd<'_>, rel: &[u8]) -> rustix::io::Result<OwnedFd> {
    open_beneath(root, rel, OFlags::RDONLY | OFlags::DIRECTORY)
}

/// A regular file for reading: O_NONBLOCK so a FIFO swapped in meanwhile
/// cannot block us, then fstat to be sure it is still a regular file.
pub fn open_regular(root: BorrowedFd<'_>, rel: &[u8]) -> rustix::io::Result<(OwnedFd, Stat)> {
    let fd = open_beneath(root, rel, OFlags::RDONLY | OFlags::NONBLOCK)?;
    let st = rustix::fs::fstat(&fd)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(Errno::NOTSUP);
    }
    Ok((fd, st))
}

/// Split `a/b/c` into (`a/b`, `c`).
pub fn split(rel: &[u8]) -> (&[u8], &[u8]) {
    match rel.iter().rposition(|&c| c == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (b"", rel),
    }
}

pub fn join(rel: &[u8], name: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(rel.len() + name.len() + 1);
    v.extend_from_slice(rel);
    if !rel.is_empty() {
        v.push(b'/');
    }
    v.extend_from_slice(name);
    v
}

/// Entry names of a directory, `.` and `..` excluded, sorted.
pub fn names(dir: BorrowedFd<'_>) -> rustix::io::Result<Vec<CString>> {
    let mut d = Dir::read_from(dir)?;
    let mut v = Vec::new();
    while let Some(e) = d.read() {
        let e = e?;
        let n = e.file_name();
        if n.to_bytes() != b"." && n.to_bytes() != b".." {
            v.push(n.to_owned());
        }
    }
    v.sort();
    Ok(v)
}

/// Something whose xattrs we read or write: an open fd, or (for symlinks,
/// FIFOs, devices, which must not be opened) a name under a directory fd
/// reached through /proc/self/fd without following the last component.
pub enum Obj<'a> {
    Fd(BorrowedFd<'a>),
    At(PathBuf),
}

impl Obj<'_> {
    pub fn at(dir: BorrowedFd<'_>, name: &[u8]) -> Obj<'static> {
        let mut p = format!("/proc/self/fd/{}/", dir.as_raw_fd()).into_bytes();
        p.extend_from_slice(name);
        Obj::At(PathBuf::from(OsStr::from_bytes(&p)))
    }

    fn list(&self) -> rustix::io::Result<Vec<CString>> {
        loop {
            let mut buf = vec![0u8; 65536];
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
                Err(Errno::RANGE) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn get(&self, name: &CStr) -> rustix::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; 65536];
        let len = match self {
            Obj::Fd(fd) => rustix::fs::fgetxattr(fd, name, &mut buf[..])?,
            Obj::At(p) => rustix::fs::lgetxattr(p, name, &mut buf[..])?,
        };
        buf.truncate(len);
        Ok(buf)
    }

    /// All xattrs, sorted by name; none where the filesystem has no xattrs.
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
                Err(Errno::NODATA) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(v)
    }

    pub fn set_all(&self, xattrs: &[(Vec<u8>, Vec<u8>)]) -> std::io::Result<()> {
        for (n, v) in xattrs {
            let n = cstr(n)?;
            match self {
                Obj::Fd(fd) => rustix::fs::fsetxattr(fd, &n, v, XattrFlags::empty()),
                Obj::At(p) => rustix::fs::lsetxattr(p, &n, v, XattrFlags::empty()),
            }?;
        }
        Ok(())
    }
}

/// Data extents of `fd` below `len` (holes skipped) via SEEK_DATA/SEEK_HOLE;
/// probed only when st_blocks says the file may have holes, so a dense file
/// costs no lseek at all.
pub fn extents(fd: BorrowedFd<'_>, st: &Stat) -> std::io::Result<Vec<(u64, u64)>> {
    let len = st.st_size as u64;
    if len == 0 {
        return Ok(Vec::new());
    }
    if (st.st_blocks as u64).saturating_mul(512) >= len {
        return Ok(vec![(0, len)]);
    }
    let mut v = Vec::new();
    let mut pos = 0;
    while pos < len {
        let start = match rustix::fs::seek(fd, SeekFrom::Data(pos)) {
            Ok(s) => s,
            Err(Errno::NXIO) => break,
            Err(Errno::INVAL | Errno::OPNOTSUPP) if pos == 0 => return Ok(vec![(0, len)]),
            Err(e) => return Err(e.into()),
        };
        if start >= len {
            break;
        }
        let end = match rustix::fs::seek(fd, SeekFrom::Hole(start)) {
            Ok(e) if e > start => e.min(len),
            Ok(_) | Err(Errno::NXIO) => len,
            Err(e) => return Err(e.into()),
        };
        v.push((start, end));
        pos = end;
    }
    Ok(v)
}

pub const BUF: usize = 1 << 20;

/// Copy `src`'s data extents into `dst` (holes stay holes; the length is set
/// with ftruncate) and return the content identity: SHA-256 over each
/// extent's offset and bytes, cut to 16 bytes. `dst` None only hashes.
pub fn copy_hash(
    src: BorrowedFd<'_>,
    st: &Stat,
    dst: Option<BorrowedFd<'_>>,
    buf: &mut Vec<u8>,
) -> std::io::Result<[u8; 16]> {
    buf.resize(BUF, 0);
    let mut h = Sha256::new();
    let mut copied_to = 0u64;
    for (start, end) in extents(src, st)? {
        h.update(start.to_le_bytes());
        let mut off = start;
        while off < end {
            let want = ((end - off) as usize).min(BUF);
            let n = rustix::io::pread(src, &mut buf[..want], off)?;
            if n == 0 {
                // Shrunk while we read: the caller sees it in the second fstat.
                break;
            }
            h.update(&buf[..n]);
            if let Some(d) = dst {
                let mut w = 0;
                while w < n {
                    w += rustix::io::pwrite(d, &buf[w..n], off + w as u64)?;
                }
            }
            off += n as u64;
        }
        copied_to = off;
    }
    if let Some(d) = dst
        && copied_to != st.st_size as u64
    {
        rustix::fs::ftruncate(d, st.st_size as u64)?;
    }
    let d = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    Ok(out)
}

/// Remove `name` under `dir` and everything below it, never following a
/// symlink (directories are opened O_NOFOLLOW; anything else is unlinked).
pub fn remove_tree(dir: BorrowedFd<'_>, name: &CStr) -> std::io::Result<()> {
    match rustix::fs::unlinkat(dir, name, rustix::fs::AtFlags::empty()) {
        Ok(()) => return Ok(()),
        Err(Errno::ISDIR | Errno::PERM) => {}
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    }
    let sub = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    clear_dir(sub.as_fd())?;
    rustix::fs::unlinkat(dir, name, rustix::fs::AtFlags::REMOVEDIR)?;
    Ok(())
}

/// Remove everything inside `dir`, keeping `dir`.
pub fn clear_dir(dir: BorrowedFd<'_>) -> std::io::Result<()> {
    for n in names(dir)? {
        remove_tree(dir, &n)?;
    }
    Ok(())
}

pub fn ts(t: (i64, u32)) -> rustix::fs::Timespec {
    rustix::fs::Timespec {
        tv_sec: t.0,
        tv_nsec: t.1 as _,
    }
}

pub fn stat_times(st: &Stat) -> [(i64, u32); 3] {
    [
        (st.st_atime, st.st_atime_nsec as u32),
        (st.st_mtime, st.st_mtime_nsec as u32),
        (st.st_ctime, st.st_ctime_nsec as u32),
    ]
}
