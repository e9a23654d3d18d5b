//! Copying a directory tree with everything a filesystem can say about a file:
//! owners, modes (setuid/sticky), ns timestamps, symlinks (dangling too), hard
//! links, xattrs (so POSIX ACLs and file capabilities), FIFOs, sockets, device
//! nodes, names that are not UTF-8, and holes (a sparse file stays sparse:
//! `plan` sizes the tmpfs from allocated blocks, so an expanded copy could
//! not fit). Plus a tree comparison used to verify the copy, and a remove that
//! never follows a symlink.
//!
//! Written by hand on rustix's *at calls rather than with a crate: the copy
//! crates (fs_extra, copy_dir, walkdir-based ones) work by path and drop hard
//! links, xattrs, special files and ns times; `cp -a` does most of it but
//! cannot write into a detached mount (no path) and gives no structured error.
//! Every operation here is relative to an open directory, so a rename or a
//! symlink swapped in during the copy cannot redirect it outside the trees.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{CStr, CString, OsStr};
use std::hash::Hasher;
use std::ops::Range;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, SeekFrom, Stat, Timestamps, XattrFlags};
use rustix::io::Errno;

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CopyStats {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    /// Extra names for an inode already copied (recreated with link(2)).
    pub hard_links: u64,
    /// FIFOs, sockets, character and block devices.
    pub special_files: u64,
    pub xattrs: u64,
    /// File content bytes copied (apparent size, holes included).
    pub content_bytes: u64,
    /// Bytes of file data actually moved: `content_bytes` minus the holes
    /// that were skipped (what the copy occupies, up to block rounding).
    pub data_bytes: u64,
    /// Regular files that had at least one hole, kept as a hole in the copy.
    pub sparse_files: u64,
}

/// The data extents of an open file below `len`, from `SEEK_DATA`/`SEEK_HOLE`,
/// in order; holes are left out. Where the filesystem cannot tell (`lseek`
/// answers EINVAL or EOPNOTSUPP), the whole file is one extent, which is the
/// plain copy. Moves the file offset; every user here reads at explicit
/// offsets.
pub struct Extents<'f> {
    fd: BorrowedFd<'f>,
    pos: u64,
    len: u64,
    /// Ask the filesystem; false yields `0..len` at once.
    probe: bool,
}

impl<'f> Extents<'f> {
    pub fn new(fd: BorrowedFd<'f>, len: u64) -> Self {
        Extents {
            fd,
            pos: 0,
            len,
            probe: true,
        }
    }

    /// Probe only when st_blocks says the file may have holes (as GNU cp
    /// does): fewer allocated bytes than its length. A dense file then costs
    /// no lseek calls at all, which matters for trees of many small files.
    pub fn for_stat(fd: BorrowedFd<'f>, st: &Stat) -> Self {
        let len = st.st_size as u64;
        let mut e = Extents::new(fd, len);
        e.probe = (st.st_blocks as u64).saturating_mul(512) < len;
        e
    }

    fn rest(&mut self) -> Option<std::io::Result<Range<u64>>> {
        let r = self.pos..self.len;
        self.pos = self.len;
        (!r.is_empty()).then_some(Ok(r))
    }
}

impl Iterator for Extents<'_> {
    type Item = std::io::Result<Range<u64>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.len {
            return None;
        }
        if !self.probe {
            return self.rest();
        }
        let start = match rustix::fs::seek(self.fd, SeekFrom::Data(self.pos)) {
            Ok(s) => s,
            // Nothing but a hole from pos to the end of the file.
            Err(Errno::NXIO) => {
                self.pos = self.len;
                return None;
            }
            Err(Errno::INVAL | Errno::OPNOTSUPP) if self.pos == 0 => {
                self.probe = false;
                return self.rest();
            }
            Err(e) => return Some(Err(e.into())),
        };
        if start >= self.len {
            self.pos = self.len;
            return None;
        }
        let end = match rustix::fs::seek(self.fd, SeekFrom::Hole(start)) {
            // A file that changed meanwhile may report a hole at or before
            // `start`; taking the rest as data is always correct.
            Ok(e) if e > start => e.min(self.len),
            Ok(_) | Err(Errno::NXIO) => self.len,
            Err(e) => return Some(Err(e.into())),
        };
        self.pos = end;
        Some(Ok(start..end))
    }
}

/// How file data moves between two open files. The first one the kernel
/// accepts for a pair of filesystems is kept for the rest of the tree (a tree
/// copy never changes filesystems on either side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mover {
    /// In-kernel, and reflinks where the filesystem can; one filesystem
    /// (or one type of filesystem) only.
    CopyFileRange,
    /// In-kernel page copy across filesystems (what std::io::copy falls back to).
    Sendfile,
    /// pread/pwrite through a buffer; works everywhere.
    ReadWrite,
}

/// At most this much per system call, so progress and Ctrl-C are seen
/// within a fraction of a second even inside one huge extent.
const CHUNK: u64 = 8 << 20;
const RW_BUF: usize = 1 << 20;

/// Show a name relative to the tree root for messages: lossy, but escaped so a
/// newline in a file name cannot forge a line of output.
pub fn show(rel: &[u8]) -> String {
    if rel.is_empty() {
        return ".".into();
    }
    String::from_utf8_lossy(rel).escape_debug().to_string()
}

fn join(rel: &[u8], name: &[u8]) -> Vec<u8> {
    let mut v = rel.to_vec();
    if !v.is_empty() {
        v.push(b'/');
    }
    v.extend_from_slice(name);
    v
}

pub fn open_dir_at(at: BorrowedFd<'_>, name: &CStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        at,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Entry names of a directory, `.` and `..` excluded, sorted (deterministic order).
fn names(dir: BorrowedFd<'_>) -> rustix::io::Result<Vec<CString>> {
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

/// A file-system object whose xattrs we read or write: an open fd (files,
/// dirs) or, for objects that cannot be opened without side effects (symlinks,
/// FIFOs, devices), the name under a directory fd reached through /proc.
enum Obj<'a> {
    Fd(BorrowedFd<'a>),
    At(PathBuf),
}

impl Obj<'_> {
    fn at(dir: BorrowedFd<'_>, name: &CStr) -> Obj<'static> {
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
    fn all(&self) -> rustix::io::Result<Vec<(CString, Vec<u8>)>> {
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

fn times(st: &Stat) -> Timestamps {
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

fn perm(st: &Stat) -> Mode {
    Mode::from_raw_mode(st.st_mode & 0o7777)
}

fn owner(st: &Stat) -> (Option<rustix::fs::Uid>, Option<rustix::fs::Gid>) {
    // SAFETY-free: from_raw only wraps the number.
    (
        Some(rustix::fs::Uid::from_raw(st.st_uid)),
        Some(rustix::fs::Gid::from_raw(st.st_gid)),
    )
}

/// Make `dst`'s xattrs exactly `src`'s (extra ones on `dst` removed).
fn sync_xattrs(src: &Obj<'_>, dst: &Obj<'_>, stats: &mut CopyStats) -> Result<(), (String, Errno)> {
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

pub struct Copier<'c> {
    src_dev: u64,
    /// First copy of each multiply-linked inode: (dev, ino) -> path under dst root.
    links: HashMap<(u64, u64), Vec<u8>>,
    dst_root: BorrowedFd<'c>,
    cancel: &'c AtomicBool,
    /// Told about every chunk of data moved (bytes), for a progress bar.
    progress: &'c dyn Fn(u64),
    mover: Mover,
    buf: Vec<u8>,
    pub stats: CopyStats,
}

/// Copy everything under `src` into the (empty) directory `dst`. With
/// `root_meta`, `dst` itself also gets `src`'s owner, mode, xattrs and times.
/// The first error stops the copy; the caller discards `dst`. `progress` is
/// called with the number of data bytes moved, chunk by chunk.
pub fn copy_tree(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    root_meta: bool,
    cancel: &AtomicBool,
    progress: &dyn Fn(u64),
) -> Result<CopyStats> {
    copy_tree_with(src, dst, root_meta, cancel, progress, Mover::CopyFileRange)
}

/// [`copy_tree`] starting from a given way of moving data (tests force the
/// fallbacks with it).
pub fn copy_tree_with(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    root_meta: bool,
    cancel: &AtomicBool,
    progress: &dyn Fn(u64),
    mover: Mover,
) -> Result<CopyStats> {
    let st = rustix::fs::fstat(src).context("stat of the source directory")?;
    let mut c = Copier {
        src_dev: st.st_dev,
        links: HashMap::new(),
        dst_root: dst,
        cancel,
        progress,
        mover,
        buf: Vec::new(),
        stats: CopyStats::default(),
    };
    let rel = Vec::new();
    c.copy_dir(src, dst, &rel)?;
    if root_meta {
        copy_dir_meta(src, dst, &st, &mut c.stats)
            .map_err(|(what, e)| anyhow::anyhow!("cannot copy the directory's own {what}: {e}"))?;
    }
    Ok(c.stats)
}

/// Give `dst` the owner, xattrs, mode and times of `src` (both directories).
pub fn copy_root_meta(src: BorrowedFd<'_>, dst: BorrowedFd<'_>) -> Result<()> {
    let st = rustix::fs::fstat(src)?;
    copy_dir_meta(src, dst, &st, &mut CopyStats::default())
        .map_err(|(what, e)| anyhow::anyhow!("{what}: {e}"))
}

fn copy_dir_meta(
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

impl Copier<'_> {
    fn copy_dir(&mut self, src: BorrowedFd<'_>, dst: BorrowedFd<'_>, rel: &[u8]) -> Result<()> {
        let list = names(src).with_context(|| format!("cannot list {}", show(rel)))?;
        for name in list {
            if self.cancel.load(Ordering::Relaxed) {
                bail!("interrupted");
            }
            let path = join(rel, name.to_bytes());
            let fail =
                |what: &str, e: Errno| anyhow::anyhow!("{}: cannot {what}: {e}", show(&path));
            let st = rustix::fs::statat(src, &name, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| fail("stat", e))?;
            if st.st_dev != self.src_dev {
                bail!(
                    "{}: is a mount point inside the tree; unmount it first (it would be hidden)",
                    show(&path)
                );
            }
            let ft = FileType::from_raw_mode(st.st_mode);
            if ft != FileType::Directory
                && st.st_nlink > 1
                && let Some(first) = self.links.get(&(st.st_dev, st.st_ino))
            {
                {
                    let first =
                        CString::new(first.clone()).map_err(|_| fail("link", Errno::INVAL))?;
                    rustix::fs::linkat(self.dst_root, &first, dst, &name, AtFlags::empty())
                        .map_err(|e| {
                            fail(&format!("hard-link to {}", show(first.as_bytes())), e)
                        })?;
                    self.stats.hard_links += 1;
                    continue;
                }
            }
            match ft {
                FileType::Directory => {
                    rustix::fs::mkdirat(dst, &name, Mode::RWXU)
                        .map_err(|e| fail("create directory", e))?;
                    let s = open_dir_at(src, &name).map_err(|e| fail("open directory", e))?;
                    let d = open_dir_at(dst, &name)
                        .map_err(|e| fail("open the copied directory", e))?;
                    self.copy_dir(s.as_fd(), d.as_fd(), &path)?;
                    copy_dir_meta(s.as_fd(), d.as_fd(), &st, &mut self.stats)
                        .map_err(|(what, e)| fail(&format!("copy {what}"), e))?;
                    self.stats.dirs += 1;
                }
                FileType::RegularFile => {
                    self.copy_file(src, dst, &name, &st, &path)?;
                    self.stats.files += 1;
                }
                FileType::Symlink => {
                    let target = rustix::fs::readlinkat(src, &name, Vec::new())
                        .map_err(|e| fail("read symlink", e))?;
                    rustix::fs::symlinkat(&target, dst, &name)
                        .map_err(|e| fail("create symlink", e))?;
                    self.finish_special(src, dst, &name, &st, false)
                        .map_err(|(what, e)| fail(&format!("copy {what}"), e))?;
                    self.stats.symlinks += 1;
                }
                FileType::Fifo
                | FileType::Socket
                | FileType::CharacterDevice
                | FileType::BlockDevice => {
                    rustix::fs::mknodat(dst, &name, ft, perm(&st), st.st_rdev)
                        .map_err(|e| fail("create special file", e))?;
                    self.finish_special(src, dst, &name, &st, true)
                        .map_err(|(what, e)| fail(&format!("copy {what}"), e))?;
                    self.stats.special_files += 1;
                }
                FileType::Unknown => bail!("{}: unknown file type {:o}", show(&path), st.st_mode),
            }
            if ft != FileType::Directory && st.st_nlink > 1 {
                self.links.insert((st.st_dev, st.st_ino), path);
            }
        }
        Ok(())
    }

    fn copy_file(
        &mut self,
        src: BorrowedFd<'_>,
        dst: BorrowedFd<'_>,
        name: &CStr,
        st: &Stat,
        path: &[u8],
    ) -> Result<()> {
        let fail =
            |what: &str, e: std::io::Error| anyhow::anyhow!("{}: cannot {what}: {e}", show(path));
        let ro = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        // O_NOATIME keeps the source's access times as they were; it is refused
        // for files we do not own when we lack CAP_FOWNER.
        let s = match rustix::fs::openat(src, name, ro | OFlags::NOATIME, Mode::empty()) {
            Err(Errno::PERM) => rustix::fs::openat(src, name, ro, Mode::empty()),
            r => r,
        }
        .map_err(|e| fail("open", e.into()))?;
        let d = rustix::fs::openat(
            dst,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::RUSR | Mode::WUSR,
        )
        .map_err(|e| fail("create the copy", e.into()))?;
        let sf = std::fs::File::from(s);
        let df = std::fs::File::from(d);
        let len = st.st_size as u64;
        // Only the data extents are written; what lies between stays a hole
        // in the copy, and the final length (a trailing hole) comes from
        // ftruncate.
        let mut end = 0;
        let mut data = 0;
        'extents: for r in Extents::for_stat(sf.as_fd(), st) {
            let r = r.map_err(|e| fail("find the data extents of", e))?;
            let mut off = r.start;
            while off < r.end {
                if self.cancel.load(Ordering::Relaxed) {
                    bail!("interrupted");
                }
                let n = self
                    .move_data(sf.as_fd(), df.as_fd(), off, (r.end - off).min(CHUNK))
                    .map_err(|e| fail("copy data", e))?;
                if n == 0 {
                    // Shrunk since the stat; the verification that follows
                    // every copy reports it.
                    break 'extents;
                }
                off += n;
                data += n;
                end = off;
                (self.progress)(n);
            }
        }
        if end < len {
            rustix::fs::ftruncate(&df, len).map_err(|e| fail("set the length of", e.into()))?;
        }
        self.stats.content_bytes += len;
        self.stats.data_bytes += data;
        if data < len {
            self.stats.sparse_files += 1;
        }
        let (u, g) = owner(st);
        let m = |what: &str, e: Errno| fail(what, e.into());
        rustix::fs::fchown(&df, u, g).map_err(|e| m("set owner", e))?;
        // After chown: chown drops security.capability, so set xattrs later.
        sync_xattrs(&Obj::Fd(sf.as_fd()), &Obj::Fd(df.as_fd()), &mut self.stats)
            .map_err(|(what, e)| m(&what, e))?;
        // After chown: chown clears setuid/setgid bits.
        rustix::fs::fchmod(&df, perm(st)).map_err(|e| m("set mode", e))?;
        rustix::fs::futimens(&df, &times(st)).map_err(|e| m("set timestamps", e))?;
        Ok(())
    }

    /// Copy up to `len` bytes at `off` in `s` to the same offset in `d`.
    /// Returns the bytes copied: 0 only at the end of `s`.
    fn move_data(
        &mut self,
        s: BorrowedFd<'_>,
        d: BorrowedFd<'_>,
        off: u64,
        len: u64,
    ) -> std::io::Result<u64> {
        let len = len.min(CHUNK) as usize;
        loop {
            match self.mover {
                Mover::CopyFileRange => {
                    let (mut i, mut o) = (off, off);
                    match rustix::fs::copy_file_range(s, Some(&mut i), d, Some(&mut o), len) {
                        Ok(n) => return Ok(n as u64),
                        // Across filesystem types (EXDEV), or not offered here.
                        Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                            self.mover = Mover::Sendfile
                        }
                        Err(Errno::INTR) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Mover::Sendfile => {
                    // sendfile writes at the output's file offset.
                    rustix::fs::seek(d, SeekFrom::Start(off))?;
                    let mut i = off;
                    match rustix::fs::sendfile(d, s, Some(&mut i), len) {
                        Ok(n) => return Ok(n as u64),
                        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                            self.mover = Mover::ReadWrite
                        }
                        Err(Errno::INTR) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Mover::ReadWrite => {
                    if self.buf.is_empty() {
                        self.buf = vec![0u8; RW_BUF];
                    }
                    let want = len.min(self.buf.len());
                    let n = match rustix::io::pread(s, &mut self.buf[..want], off) {
                        Ok(n) => n,
                        Err(Errno::INTR) => continue,
                        Err(e) => return Err(e.into()),
                    };
                    let mut done = 0;
                    while done < n {
                        match rustix::io::pwrite(d, &self.buf[done..n], off + done as u64) {
                            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                            Ok(w) => done += w,
                            Err(Errno::INTR) => {}
                            Err(e) => return Err(e.into()),
                        }
                    }
                    return Ok(n as u64);
                }
            }
        }
    }

    fn finish_special(
        &mut self,
        src: BorrowedFd<'_>,
        dst: BorrowedFd<'_>,
        name: &CStr,
        st: &Stat,
        chmod: bool,
    ) -> Result<(), (String, Errno)> {
        let (u, g) = owner(st);
        rustix::fs::chownat(dst, name, u, g, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| ("owner".to_string(), e))?;
        sync_xattrs(&Obj::at(src, name), &Obj::at(dst, name), &mut self.stats)?;
        if chmod {
            // mknod applied our umask; restate the mode.
            rustix::fs::chmodat(dst, name, perm(st), AtFlags::empty())
                .map_err(|e| ("mode".to_string(), e))?;
        }
        rustix::fs::utimensat(dst, name, &times(st), AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| ("timestamps".to_string(), e))?;
        Ok(())
    }
}

/// Remove `name` under `dir` and everything below it. Never follows a symlink:
/// every step is an unlinkat/openat(O_NOFOLLOW) relative to an open directory.
pub fn remove_tree(dir: BorrowedFd<'_>, name: &CStr) -> Result<()> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .with_context(|| format!("cannot stat {}", show(name.to_bytes())))?;
    if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
        let sub = open_dir_at(dir, name)
            .with_context(|| format!("cannot open {}", show(name.to_bytes())))?;
        if rustix::fs::fstat(&sub)?.st_dev != st.st_dev {
            bail!("{}: is a mount point; not removing", show(name.to_bytes()));
        }
        for n in names(sub.as_fd())? {
            remove_tree(sub.as_fd(), &n)?;
        }
        rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)
    } else {
        rustix::fs::unlinkat(dir, name, AtFlags::empty())
    }
    .with_context(|| format!("cannot remove {}", show(name.to_bytes())))
}

/// What a tree entry looks like, for comparing two trees. Leaves out what a
/// copy cannot or need not keep: inode numbers, ctime, atime (reading
/// changes it), directory sizes (filesystem-specific) and link counts (hard
/// links are compared as groups instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrySig {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: Option<u64>,
    pub mtime: (i64, u64),
    pub rdev: u64,
    pub link_target: Option<Vec<u8>>,
    pub xattrs: Vec<(Vec<u8>, Vec<u8>)>,
    pub content_hash: Option<u64>,
    /// For the 2nd.. name of a multiply-linked inode: the first name (sorted walk order).
    pub same_inode_as: Option<Vec<u8>>,
}

/// Every entry of a tree by path relative to the root (the root itself is "").
pub fn snapshot(root: BorrowedFd<'_>, cancel: &AtomicBool) -> Result<BTreeMap<Vec<u8>, EntrySig>> {
    let mut out = BTreeMap::new();
    let mut first: HashMap<(u64, u64), Vec<u8>> = HashMap::new();
    let st = rustix::fs::fstat(root)?;
    out.insert(Vec::new(), sig_of(&st, None, Obj::Fd(root), None, None)?);
    snap_dir(root, &[], &mut out, &mut first, cancel)?;
    Ok(out)
}

fn sig_of(
    st: &Stat,
    file: Option<BorrowedFd<'_>>,
    obj: Obj<'_>,
    link_target: Option<Vec<u8>>,
    same: Option<Vec<u8>>,
) -> Result<EntrySig> {
    let ft = FileType::from_raw_mode(st.st_mode);
    let content_hash = match file {
        Some(fd) => Some(content_hash(fd, st)?),
        None => None,
    };
    Ok(EntrySig {
        mode: st.st_mode,
        uid: st.st_uid,
        gid: st.st_gid,
        size: (ft != FileType::Directory).then_some(st.st_size as u64),
        mtime: (st.st_mtime, st.st_mtime_nsec),
        rdev: st.st_rdev,
        link_target,
        xattrs: obj
            .all()?
            .into_iter()
            .map(|(n, v)| (n.into_bytes(), v))
            .collect(),
        content_hash,
        same_inode_as: same,
    })
}

/// Zero runs are hashed as their length, so equal contents hash equal
/// whether the zeros are holes or written blocks (a sparse source and an
/// expanded copy compare equal, as do a dense source and a sparse copy).
const HASH_BLOCK: usize = 4096;

/// A hash of a regular file's bytes that does not depend on where its holes
/// are: the file is cut into 4 KiB blocks at fixed offsets; a block of zeros
/// adds to a run of zeros, any other block is hashed with its bytes. Holes are
/// zero runs without being read, so a 1 TiB sparse file costs what it holds.
pub fn content_hash(fd: BorrowedFd<'_>, st: &Stat) -> std::io::Result<u64> {
    fn flush(h: &mut std::hash::DefaultHasher, zeros: &mut u64) {
        if *zeros > 0 {
            h.write_u8(0);
            h.write_u64(*zeros);
            *zeros = 0;
        }
    }
    let len = st.st_size as u64;
    let bs = HASH_BLOCK as u64;
    let mut h = std::hash::DefaultHasher::new();
    let mut buf = vec![0u8; 16 * HASH_BLOCK];
    let mut zeros = 0u64;
    // Bytes before `next` are hashed or counted; `next` stays block-aligned
    // until the end of the file, so blocks sit at the same offsets whatever
    // the extent layout.
    let mut next = 0u64;
    for r in Extents::for_stat(fd, st) {
        let r = r?;
        let start = (r.start / bs * bs).max(next);
        let end = r.end.div_ceil(bs).saturating_mul(bs).min(len);
        if start >= end {
            continue;
        }
        zeros += start - next;
        next = start;
        while next < end {
            let want = ((end - next) as usize).min(buf.len());
            let mut got = 0;
            while got < want {
                match rustix::io::pread(fd, &mut buf[got..want], next + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            for b in buf[..got].chunks(HASH_BLOCK) {
                // OR-fold rather than `all`: no early exit, so it vectorises.
                if b.iter().fold(0u8, |a, &x| a | x) == 0 {
                    zeros += b.len() as u64;
                } else {
                    flush(&mut h, &mut zeros);
                    h.write_u8(1);
                    h.write(b);
                }
            }
            next += got as u64;
            if got < want {
                // Shrunk while reading: hash what is there; the size in the
                // signature came from an earlier stat, so it will not match.
                flush(&mut h, &mut zeros);
                return Ok(h.finish());
            }
        }
    }
    zeros += len - next;
    flush(&mut h, &mut zeros);
    Ok(h.finish())
}

fn snap_dir(
    dir: BorrowedFd<'_>,
    rel: &[u8],
    out: &mut BTreeMap<Vec<u8>, EntrySig>,
    first: &mut HashMap<(u64, u64), Vec<u8>>,
    cancel: &AtomicBool,
) -> Result<()> {
    for name in names(dir)? {
        if cancel.load(Ordering::Relaxed) {
            bail!("interrupted");
        }
        let path = join(rel, name.to_bytes());
        let st = rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW)
            .with_context(|| format!("cannot stat {}", show(&path)))?;
        let ft = FileType::from_raw_mode(st.st_mode);
        let same = if ft != FileType::Directory && st.st_nlink > 1 {
            match first.get(&(st.st_dev, st.st_ino)) {
                Some(f) => Some(f.clone()),
                None => {
                    first.insert((st.st_dev, st.st_ino), path.clone());
                    None
                }
            }
        } else {
            None
        };
        let ctx = || format!("cannot read {}", show(&path));
        let sig = match ft {
            FileType::Directory => {
                let d = open_dir_at(dir, &name).with_context(ctx)?;
                let s = sig_of(&st, None, Obj::Fd(d.as_fd()), None, None).with_context(ctx)?;
                snap_dir(d.as_fd(), &path, out, first, cancel)?;
                s
            }
            FileType::RegularFile if same.is_none() => {
                let f = rustix::fs::openat(
                    dir,
                    &name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .with_context(ctx)?;
                sig_of(&st, Some(f.as_fd()), Obj::Fd(f.as_fd()), None, None).with_context(ctx)?
            }
            FileType::Symlink => {
                let t = rustix::fs::readlinkat(dir, &name, Vec::new()).with_context(ctx)?;
                sig_of(&st, None, Obj::at(dir, &name), Some(t.into_bytes()), same)
                    .with_context(ctx)?
            }
            _ => sig_of(&st, None, Obj::at(dir, &name), None, same).with_context(ctx)?,
        };
        out.insert(path, sig);
    }
    Ok(())
}

/// Paths that differ between two snapshots (missing on either side or not equal), sorted.
pub fn differences(
    a: &BTreeMap<Vec<u8>, EntrySig>,
    b: &BTreeMap<Vec<u8>, EntrySig>,
) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for (k, sa) in a {
        match b.get(k) {
            None => v.push(format!("{}: missing in the copy", show(k))),
            Some(sb) if sa != sb => {
                v.push(format!("{}: differs ({})", show(k), what_differs(sa, sb)))
            }
            _ => {}
        }
    }
    for k in b.keys().filter(|k| !a.contains_key(*k)) {
        v.push(format!("{}: only in the copy", show(k)));
    }
    v
}

fn what_differs(a: &EntrySig, b: &EntrySig) -> String {
    let mut w = Vec::new();
    if a.mode != b.mode {
        w.push(format!("mode {:o} vs {:o}", a.mode, b.mode));
    }
    if (a.uid, a.gid) != (b.uid, b.gid) {
        w.push(format!("owner {}:{} vs {}:{}", a.uid, a.gid, b.uid, b.gid));
    }
    if a.size != b.size || a.content_hash != b.content_hash {
        w.push("content".into());
    }
    if a.mtime != b.mtime {
        w.push("mtime".into());
    }
    if a.xattrs != b.xattrs {
        w.push("xattrs".into());
    }
    if a.link_target != b.link_target {
        w.push("symlink target".into());
    }
    if a.rdev != b.rdev {
        w.push("device number".into());
    }
    if a.same_inode_as != b.same_inode_as {
        w.push("hard links".into());
    }
    w.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn dirfd(p: &std::path::Path) -> OwnedFd {
        rustix::fs::openat(
            rustix::fs::CWD,
            p,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap()
    }

    #[test]
    fn copies_a_tree_and_the_copy_compares_equal() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src");
        let dst = t.path().join("dst");
        std::fs::create_dir_all(src.join("a/b")).unwrap();
        std::fs::create_dir(&dst).unwrap();
        std::fs::write(src.join("a/f"), b"hello").unwrap();
        std::fs::hard_link(src.join("a/f"), src.join("a/b/g")).unwrap();
        std::os::unix::fs::symlink("nowhere", src.join("dangling")).unwrap();
        std::fs::write(src.join(OsStr::from_bytes(b"odd \n\xff")), b"x").unwrap();
        std::fs::set_permissions(src.join("a/b"), std::fs::Permissions::from_mode(0o1777)).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            src.join("fifo"),
            Mode::from_raw_mode(0o640),
        )
        .unwrap();
        let cancel = AtomicBool::new(false);
        let (s, d) = (dirfd(&src), dirfd(&dst));
        let stats = copy_tree(s.as_fd(), d.as_fd(), true, &cancel, &|_| {}).unwrap();
        assert_eq!(stats.files, 2);
        assert_eq!(stats.hard_links, 1);
        assert_eq!(stats.symlinks, 1);
        assert_eq!(stats.special_files, 1);
        assert_eq!(stats.dirs, 2);
        let a = snapshot(s.as_fd(), &cancel).unwrap();
        let b = snapshot(d.as_fd(), &cancel).unwrap();
        assert_eq!(differences(&a, &b), Vec::<String>::new());
        assert_eq!(
            std::fs::metadata(dst.join("a/b")).unwrap().mode() & 0o7777,
            0o1777
        );
        assert_eq!(
            std::fs::metadata(dst.join("a/f")).unwrap().ino(),
            std::fs::metadata(dst.join("a/b/g")).unwrap().ino()
        );
        // A change is seen.
        std::fs::write(dst.join("a/f"), b"HELLO").unwrap();
        let b = snapshot(d.as_fd(), &cancel).unwrap();
        let diff = differences(&a, &b);
        // a/b/g sorts first, so the hard-link group's content is compared there.
        assert!(
            diff.iter()
                .any(|d| d.starts_with("a/b/g: differs (content")),
            "{diff:?}"
        );
    }

    #[test]
    fn remove_tree_does_not_follow_symlinks() {
        let t = tempfile::tempdir().unwrap();
        let keep = t.path().join("keep");
        std::fs::create_dir(&keep).unwrap();
        std::fs::write(keep.join("precious"), b"1").unwrap();
        let gone = t.path().join("gone");
        std::fs::create_dir_all(gone.join("sub")).unwrap();
        std::os::unix::fs::symlink(&keep, gone.join("sub/link")).unwrap();
        let root = dirfd(t.path());
        remove_tree(root.as_fd(), c"gone").unwrap();
        assert!(!gone.exists());
        assert!(keep.join("precious").exists());
    }

    /// Deterministic non-zero-heavy bytes (never a whole zero block).
    fn noise(seed: u64, n: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8 | 1
            })
            .collect()
    }

    /// A file of length `len` whose only data is `data` (offset, length);
    /// everything else is a hole.
    fn make(path: &std::path::Path, len: u64, data: &[(u64, usize)]) {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::create(path).unwrap();
        f.set_len(len).unwrap();
        for (i, &(off, n)) in data.iter().enumerate() {
            f.write_all_at(&noise(i as u64 + off, n), off).unwrap();
        }
        f.sync_all().unwrap();
    }

    fn blocks(p: &std::path::Path) -> u64 {
        std::fs::metadata(p).unwrap().blocks()
    }

    /// Byte-for-byte comparison with plain reads (independent of the hash
    /// under test).
    fn same_bytes(a: &std::path::Path, b: &std::path::Path) -> bool {
        let (mut fa, mut fb) = (
            std::fs::File::open(a).unwrap(),
            std::fs::File::open(b).unwrap(),
        );
        // Two files without any data (ENXIO from offset 0) read as zeros
        // throughout: then only the lengths can differ, and reading a GiB of
        // zeros per mover would only slow the test down.
        let no_data =
            |f: &std::fs::File| rustix::fs::seek(f, SeekFrom::Data(0)) == Err(Errno::NXIO);
        if no_data(&fa) && no_data(&fb) {
            return fa.metadata().unwrap().len() == fb.metadata().unwrap().len();
        }
        for f in [&fa, &fb] {
            rustix::fs::seek(f, SeekFrom::Start(0)).unwrap();
        }
        let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
        loop {
            let na = std::io::Read::read(&mut fa, &mut ba).unwrap();
            let mut nb = 0;
            while nb < na {
                let n = std::io::Read::read(&mut fb, &mut bb[nb..na]).unwrap();
                if n == 0 {
                    return false;
                }
                nb += n;
            }
            if ba[..na] != bb[..na] {
                return false;
            }
            if na == 0 {
                return std::io::Read::read(&mut fb, &mut bb[..1]).unwrap() == 0;
            }
        }
    }

    fn extents_of(p: &std::path::Path, len: u64) -> Vec<Range<u64>> {
        let f = std::fs::File::open(p).unwrap();
        Extents::new(f.as_fd(), len)
            .collect::<std::io::Result<Vec<_>>>()
            .unwrap()
    }

    const MIB: u64 = 1 << 20;

    /// A test file: name, length, data extents (offset, length).
    type Layout = (&'static str, u64, Vec<(u64, usize)>);

    /// (name, length, data extents): holes at the start, middle and end; a
    /// fully sparse 1 GiB file; a dense file; data at both ends with a hole
    /// between; an empty file; a length that is not block-aligned.
    fn layouts() -> Vec<Layout> {
        vec![
            (
                "holes-start-middle-end",
                6 * MIB,
                vec![(MIB, 100 << 10), (3 * MIB, 8 << 10)],
            ),
            ("fully-sparse", 1 << 30, vec![]),
            ("dense", 300_000, vec![(0, 300_000)]),
            (
                "data-both-ends",
                4 * MIB,
                vec![(0, 4096), (4 * MIB - 5000, 5000)],
            ),
            ("empty", 0, vec![]),
            ("odd-length", 5 * MIB + 123, vec![(2 * MIB + 7, 999)]),
        ]
    }

    #[test]
    fn extents_skip_holes_and_cover_the_data() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        make(&p, 6 * MIB, &[(MIB, 100 << 10), (3 * MIB, 8 << 10)]);
        let bs = rustix::fs::statvfs(t.path()).unwrap().f_bsize;
        let e = extents_of(&p, 6 * MIB);
        assert_eq!(e.len(), 2, "{e:?}");
        // Reported at filesystem-block granularity around what was written.
        assert!(e[0].start <= MIB && e[0].start > MIB - bs, "{e:?}");
        assert!(e[0].end >= MIB + (100 << 10) && e[0].end < MIB + (100 << 10) + bs);
        assert!(e[1].start <= 3 * MIB && e[1].end >= 3 * MIB + (8 << 10));
        assert!(e[1].end < 3 * MIB + (8 << 10) + bs);
        // Asked for less than the whole file: clipped.
        let e = extents_of(&p, MIB + 10);
        assert_eq!(e, vec![e[0].start..MIB + 10]);
        // No data at all, and data right to the end.
        make(&p, 64 * MIB, &[]);
        assert_eq!(extents_of(&p, 64 * MIB), Vec::<Range<u64>>::new());
        make(&p, 8192, &[(0, 8192)]);
        assert_eq!(extents_of(&p, 8192), vec![0..8192]);
    }

    #[test]
    fn extents_fall_back_to_the_whole_file_without_seek_data() {
        // procfs files use seq_lseek, which answers EINVAL to SEEK_DATA.
        let f = std::fs::File::open("/proc/self/status").unwrap();
        let e: Vec<_> = Extents::new(f.as_fd(), 100)
            .collect::<std::io::Result<_>>()
            .unwrap();
        assert_eq!(e, vec![0..100]);
    }

    #[test]
    fn dense_files_are_not_probed() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        make(&p, 3 * MIB, &[(0, 3 << 20)]);
        let f = std::fs::File::open(&p).unwrap();
        let st = rustix::fs::fstat(&f).unwrap();
        let mut e = Extents::for_stat(f.as_fd(), &st);
        assert!(!e.probe);
        assert_eq!(e.next().unwrap().unwrap(), 0..3 * MIB);
        assert!(e.next().is_none());
    }

    fn hash_of(p: &std::path::Path) -> u64 {
        let f = std::fs::File::open(p).unwrap();
        content_hash(f.as_fd(), &rustix::fs::fstat(&f).unwrap()).unwrap()
    }

    #[test]
    fn content_hash_sees_bytes_not_holes() {
        use std::os::unix::fs::FileExt;
        let t = tempfile::tempdir().unwrap();
        let (sparse, dense) = (t.path().join("sparse"), t.path().join("dense"));
        make(&sparse, 5 * MIB + 3, &[(MIB + 5, 70_000)]);
        // The same bytes with the zeros written out.
        std::fs::write(&dense, std::fs::read(&sparse).unwrap()).unwrap();
        assert!(blocks(&dense) > 4 * blocks(&sparse));
        assert_eq!(hash_of(&sparse), hash_of(&dense));
        // One byte in a hole.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&dense)
            .unwrap();
        f.write_all_at(b"x", 4 * MIB).unwrap();
        assert_ne!(hash_of(&sparse), hash_of(&dense));
        // The same data one byte later.
        let shifted = t.path().join("shifted");
        std::fs::write(&shifted, {
            let mut v = std::fs::read(&sparse).unwrap();
            v.insert(0, 0);
            v.pop();
            v
        })
        .unwrap();
        assert_ne!(hash_of(&sparse), hash_of(&shifted));
        // All zeros of different lengths.
        let (z1, z2) = (t.path().join("z1"), t.path().join("z2"));
        make(&z1, MIB, &[]);
        make(&z2, MIB + 1, &[]);
        assert_ne!(hash_of(&z1), hash_of(&z2));
        // A file reading as zeros hashes as its hole twin.
        std::fs::write(&z2, vec![0u8; MIB as usize]).unwrap();
        assert_eq!(hash_of(&z1), hash_of(&z2));
    }

    fn copy_layouts_into(dst: BorrowedFd<'_>, dst_path: Option<&std::path::Path>, mover: Mover) {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src");
        std::fs::create_dir(&src).unwrap();
        let all = layouts();
        for (name, len, data) in &all {
            make(&src.join(name), *len, data);
        }
        let cancel = AtomicBool::new(false);
        let moved = std::cell::Cell::new(0u64);
        let s = dirfd(&src);
        let stats = copy_tree_with(
            s.as_fd(),
            dst,
            false,
            &cancel,
            &|n| moved.set(moved.get() + n),
            mover,
        )
        .unwrap();
        assert_eq!(stats.files, all.len() as u64);
        assert_eq!(moved.get(), stats.data_bytes);
        let logical: u64 = all.iter().map(|l| l.1).sum();
        assert_eq!(stats.content_bytes, logical);
        // Data moved: what was written, rounded out to blocks, nowhere near
        // the 1 GiB of holes.
        assert!(stats.data_bytes < 2 * MIB, "{stats:?}");
        assert_eq!(stats.sparse_files, 4, "{stats:?}");
        // The roots themselves were not copied (root_meta false).
        let mut a = snapshot(s.as_fd(), &cancel).unwrap();
        let mut b = snapshot(dst, &cancel).unwrap();
        a.remove(&Vec::new());
        b.remove(&Vec::new());
        assert_eq!(differences(&a, &b), Vec::<String>::new());
        // Through the path as well, with reads independent of the code under test.
        let dp = dst_path
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| PathBuf::from(format!("/proc/self/fd/{}", dst.as_raw_fd())));
        for (name, len, data) in &all {
            let (sp, cp) = (src.join(name), dp.join(name));
            assert_eq!(std::fs::metadata(&cp).unwrap().len(), *len, "{name}");
            assert!(same_bytes(&sp, &cp), "{name}: contents differ ({mover:?})");
            // A page per extent of slack for block/page rounding.
            let slack = 8 * data.len() as u64;
            assert!(
                blocks(&cp) <= blocks(&sp) + slack,
                "{name}: copy has {} blocks, source {} ({mover:?})",
                blocks(&cp),
                blocks(&sp)
            );
        }
    }

    #[test]
    fn sparse_files_copy_sparse_to_disk_with_every_mover() {
        for mover in [Mover::CopyFileRange, Mover::Sendfile, Mover::ReadWrite] {
            let t = tempfile::tempdir().unwrap();
            let d = dirfd(t.path());
            copy_layouts_into(d.as_fd(), Some(t.path()), mover);
        }
    }

    #[test]
    fn sparse_files_copy_sparse_into_a_tmpfs_with_every_mover() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("SKIP: needs root to create a tmpfs (CI runs as root)");
            return;
        }
        for mover in [Mover::CopyFileRange, Mover::Sendfile, Mover::ReadWrite] {
            // Far smaller than the 1 GiB of logical content.
            let m = super::super::live::mount_detached("size=16M").unwrap();
            copy_layouts_into(m.root.as_fd(), None, mover);
        }
    }
}
