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

mod extents;
mod metadata;
mod verify;

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, SeekFrom, Stat};
use rustix::io::Errno;

pub use extents::{Extents, Mover};
pub use metadata::copy_root_meta;
pub use verify::{EntrySig, content_hash, differences, snapshot};

use extents::{CHUNK, RW_BUF};
use metadata::{Obj, copy_dir_meta, owner, perm, sync_xattrs, times};

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

/// Show a name relative to the tree root for messages: lossy, but escaped so a
/// newline in a file name cannot forge a line of output.
pub fn show(rel: &[u8]) -> String {
    if rel.is_empty() {
        return ".".into();
    }
    String::from_utf8_lossy(rel).escape_debug().to_string()
}

pub(super) fn join(rel: &[u8], name: &[u8]) -> Vec<u8> {
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

/// Open `name` under `dir` for reading only if it is still the regular file
/// `st` describes. O_NOFOLLOW|O_NONBLOCK: a symlink or a FIFO swapped in since
/// the stat can neither redirect nor block the open; the fstat then catches
/// any other swap (another inode, or not a regular file any more).
pub fn open_regular(
    dir: BorrowedFd<'_>,
    name: &CStr,
    st: &Stat,
    noatime: bool,
) -> rustix::io::Result<OwnedFd> {
    let ro = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    // O_NOATIME keeps the source's access times as they were; it is refused
    // for files we do not own when we lack CAP_FOWNER.
    let fd = match noatime {
        true => match rustix::fs::openat(dir, name, ro | OFlags::NOATIME, Mode::empty()) {
            Err(Errno::PERM) => rustix::fs::openat(dir, name, ro, Mode::empty()),
            r => r,
        },
        false => rustix::fs::openat(dir, name, ro, Mode::empty()),
    }?;
    let now = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(now.st_mode) != FileType::RegularFile
        || (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino)
    {
        // Replaced between the stat and the open: not what was listed.
        return Err(Errno::STALE);
    }
    // Reads at explicit offsets never block on a regular file; clear the flag
    // anyway so nothing downstream sees EAGAIN.
    rustix::fs::fcntl_setfl(&fd, OFlags::RDONLY)?;
    Ok(fd)
}

/// Entry names of a directory, `.` and `..` excluded, sorted (deterministic order).
pub(crate) fn names(dir: BorrowedFd<'_>) -> rustix::io::Result<Vec<CString>> {
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

impl Copier<'_> {
    fn copy_dir(&mut self, src: BorrowedFd<'_>, dst: BorrowedFd<'_>, rel: &[u8]) -> Result<()> {
        let list = names(src).with_context(|| format!("cannot list {}", show(rel)))?;
        for name in list {
            if self.cancel.load(Ordering::Relaxed) {
                bail!("interrupted");
            }
            self.copy_entry(src, dst, &name, join(rel, name.to_bytes()))?;
        }
        Ok(())
    }

    /// Copy `name` (a directory with everything below it, or any other
    /// entry) from `src` into `dst`, where it must not exist yet. `path` is
    /// its path from the tree root, for messages and hard links.
    fn copy_entry(
        &mut self,
        src: BorrowedFd<'_>,
        dst: BorrowedFd<'_>,
        name: &CStr,
        path: Vec<u8>,
    ) -> Result<()> {
        let fail = |what: &str, e: Errno| anyhow::anyhow!("{}: cannot {what}: {e}", show(&path));
        let st = rustix::fs::statat(src, name, AtFlags::SYMLINK_NOFOLLOW)
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
                let first = CString::new(first.clone()).map_err(|_| fail("link", Errno::INVAL))?;
                rustix::fs::linkat(self.dst_root, &first, dst, name, AtFlags::empty())
                    .map_err(|e| fail(&format!("hard-link to {}", show(first.as_bytes())), e))?;
                self.stats.hard_links += 1;
                return Ok(());
            }
        }
        match ft {
            FileType::Directory => {
                rustix::fs::mkdirat(dst, name, Mode::RWXU)
                    .map_err(|e| fail("create directory", e))?;
                let s = open_dir_at(src, name).map_err(|e| fail("open directory", e))?;
                let d = open_dir_at(dst, name).map_err(|e| fail("open the copied directory", e))?;
                self.copy_dir(s.as_fd(), d.as_fd(), &path)?;
                copy_dir_meta(s.as_fd(), d.as_fd(), &st, &mut self.stats)
                    .map_err(|(what, e)| fail(&format!("copy {what}"), e))?;
                self.stats.dirs += 1;
            }
            FileType::RegularFile => {
                self.copy_file(src, dst, name, &st, &path)?;
                self.stats.files += 1;
            }
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(src, name, Vec::new())
                    .map_err(|e| fail("read symlink", e))?;
                rustix::fs::symlinkat(&target, dst, name).map_err(|e| fail("create symlink", e))?;
                self.finish_special(src, dst, name, &st, false)
                    .map_err(|(what, e)| fail(&format!("copy {what}"), e))?;
                self.stats.symlinks += 1;
            }
            FileType::Fifo
            | FileType::Socket
            | FileType::CharacterDevice
            | FileType::BlockDevice => {
                rustix::fs::mknodat(dst, name, ft, perm(&st), st.st_rdev)
                    .map_err(|e| fail("create special file", e))?;
                self.finish_special(src, dst, name, &st, true)
                    .map_err(|(what, e)| fail(&format!("copy {what}"), e))?;
                self.stats.special_files += 1;
            }
            FileType::Unknown => bail!("{}: unknown file type {:o}", show(&path), st.st_mode),
        }
        if ft != FileType::Directory && st.st_nlink > 1 {
            self.links.insert((st.st_dev, st.st_ino), path);
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
        let s = open_regular(src, name, st, true).map_err(|e| match e {
            Errno::STALE => anyhow::anyhow!(
                "{}: was replaced while copying (now not the regular file listed); stop the programs changing it and retry",
                show(path)
            ),
            e => fail("open", e.into()),
        })?;
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

pub mod delta;

#[cfg(test)]
mod tests;
