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

mod metadata;
mod verify;

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

pub use crate::sys::fs::Mover;
pub use metadata::copy_root_meta;
pub use verify::{EntrySig, differences, snapshot};

use crate::sys::deep::{self, show_long};
use crate::sys::fs::{
    CHUNK, Created, Extents, Obj, join, move_data, names, open_dir_at, open_regular, owner, perm,
    times,
};
use crate::sys::signals::Interrupted;
use metadata::{copy_dir_meta, sync_xattrs};

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

pub struct Copier<'c> {
    src_dev: u64,
    /// First copy of each multiply-linked inode: (dev, ino) -> path under dst root.
    links: HashMap<(u64, u64), Vec<u8>>,
    dst_root: BorrowedFd<'c>,
    cancel: &'c AtomicBool,
    /// Told about every chunk of data moved (bytes), for a progress bar.
    progress: &'c (dyn Fn(u64) + Sync),
    /// The deepest directory copied ([`deep::depth_limit`]).
    max_depth: usize,
    mover: Mover,
    buf: Vec<u8>,
    pub stats: CopyStats,
}

/// Copy everything under `src` into the (empty) directory `dst`. With
/// `root_meta`, `dst` itself also gets `src`'s owner, mode, xattrs and times.
/// The first error stops the copy; the caller discards `dst`. `progress` is
/// called with the number of data bytes moved, chunk by chunk. A tree of
/// any depth a user can make is copied (a descriptor per level, never a
/// path), up to [`deep::MAX_DEPTH`] levels; a deeper directory stops the
/// copy with an error naming it.
pub fn copy_tree(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    root_meta: bool,
    cancel: &AtomicBool,
    progress: &(dyn Fn(u64) + Sync),
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
    progress: &(dyn Fn(u64) + Sync),
    mover: Mover,
) -> Result<CopyStats> {
    let st = rustix::fs::fstat(src).context("stat of the source directory")?;
    deep::on_deep_stack(|| {
        let mut c = Copier {
            src_dev: st.st_dev,
            links: HashMap::new(),
            dst_root: dst,
            cancel,
            progress,
            max_depth: deep::depth_limit(FDS_PER_LEVEL),
            mover,
            buf: Vec::new(),
            stats: CopyStats::default(),
        };
        let rel = Vec::new();
        c.copy_dir(src, dst, &rel)?;
        if root_meta {
            copy_dir_meta(src, dst, &st, &mut c.stats).map_err(|(what, e)| {
                anyhow::anyhow!("cannot copy the directory's own {what}: {e}")
            })?;
        }
        Ok(c.stats)
    })
}

/// Descriptors the copy holds open per level: the source and the copy.
pub(crate) const FDS_PER_LEVEL: u64 = 2;

/// How many directories deep `rel` (a directory's path from the top) is.
fn depth(rel: &[u8]) -> usize {
    rel.iter().filter(|&&b| b == b'/').count() + 1
}

impl Copier<'_> {
    fn copy_dir(&mut self, src: BorrowedFd<'_>, dst: BorrowedFd<'_>, rel: &[u8]) -> Result<()> {
        let list = names(src).with_context(|| format!("cannot list {}", show_long(rel)))?;
        for name in list {
            if self.cancel.load(Ordering::Relaxed) {
                bail!(Interrupted);
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
        let fail =
            |what: &str, e: Errno| anyhow::anyhow!("{}: cannot {what}: {e}", show_long(&path));
        let st = rustix::fs::statat(src, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| fail("stat", e))?;
        if st.st_dev != self.src_dev {
            bail!(
                "{}: is a mount point inside the tree; unmount it first (it would be hidden)",
                show_long(&path)
            );
        }
        let ft = FileType::from_raw_mode(st.st_mode);
        if ft != FileType::Directory
            && st.st_nlink > 1
            && let Some(first) = self.links.get(&(st.st_dev, st.st_ino))
        {
            {
                let first = CString::new(first.clone()).map_err(|_| fail("link", Errno::INVAL))?;
                rustix::fs::linkat(self.dst_root, &first, dst, name, AtFlags::empty()).map_err(
                    |e| fail(&format!("hard-link to {}", show_long(first.as_bytes())), e),
                )?;
                self.stats.hard_links += 1;
                return Ok(());
            }
        }
        match ft {
            FileType::Directory => {
                if depth(&path) > self.max_depth {
                    return Err(deep::too_deep(&path, self.max_depth));
                }
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
                self.finish_special(src, dst, name, &st)
                    .map_err(|(what, e)| fail(&format!("copy {what}"), e))?;
                self.stats.symlinks += 1;
            }
            FileType::Fifo
            | FileType::Socket
            | FileType::CharacterDevice
            | FileType::BlockDevice => {
                rustix::fs::mknodat(dst, name, ft, perm(&st), st.st_rdev)
                    .map_err(|e| fail("create special file", e))?;
                self.finish_special(src, dst, name, &st)
                    .map_err(|(what, e)| fail(&format!("copy {what}"), e))?;
                self.stats.special_files += 1;
            }
            FileType::Unknown => bail!("{}: unknown file type {:o}", show_long(&path), st.st_mode),
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
        let fail = |what: &str, e: std::io::Error| {
            anyhow::anyhow!("{}: cannot {what}: {e}", show_long(path))
        };
        let s = open_regular(src, name, st, true).map_err(|e| match e {
            Errno::STALE => anyhow::anyhow!(
                "{}: was replaced while copying (now not the regular file listed); stop the programs changing it and retry",
                show_long(path)
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
                    bail!(Interrupted);
                }
                let n = move_data(
                    &mut self.mover,
                    &mut self.buf,
                    sf.as_fd(),
                    df.as_fd(),
                    off,
                    (r.end - off).min(CHUNK),
                )
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

    /// Owner, xattrs, mode and times of a symlink or special file just
    /// created as `name` in `dst`, set through a descriptor of that very
    /// entry: a name swapped meanwhile (a symlink renamed over it by the
    /// owner of a shared sticky directory) is refused, never followed.
    fn finish_special(
        &mut self,
        src: BorrowedFd<'_>,
        dst: BorrowedFd<'_>,
        name: &CStr,
        st: &Stat,
    ) -> Result<(), (String, Errno)> {
        let ft = FileType::from_raw_mode(st.st_mode);
        let new = Created::open(dst, name, ft).map_err(|e| {
            (
                "metadata (the new entry was replaced meanwhile; it was left untouched)"
                    .to_string(),
                e,
            )
        })?;
        let (u, g) = owner(st);
        new.chown(u, g).map_err(|e| ("owner".to_string(), e))?;
        // After chown: chown drops security.capability.
        sync_xattrs(&Obj::at(src, name.to_bytes()), &new.obj(), &mut self.stats)?;
        if ft != FileType::Symlink {
            // mknod applied our umask; restate the mode. After chown: chown
            // clears setuid/setgid bits.
            new.chmod(perm(st)).map_err(|e| ("mode".to_string(), e))?;
        }
        new.set_times(&times(st))
            .map_err(|e| ("timestamps".to_string(), e))?;
        Ok(())
    }
}

pub mod delta;

#[cfg(test)]
mod tests;
