//! The directory a file is written in, reached so that no other user decides
//! where the file lands: the path is walked one component at a time by
//! descriptor, a symbolic link is followed only when root or the caller owns
//! it and no one else can write the directory it sits in, and the directory
//! reached is held open, so renaming anything on the way afterwards changes
//! nothing. What is at the file's name is judged here too: a FIFO or device
//! another user owns is never opened (opening a FIFO for writing waits for a
//! reader: a planted one would hang root and hand the report to whoever
//! reads it).
//!
//! Walked by hand on rustix's *at calls: openat2's RESOLVE_NO_SYMLINKS
//! refuses every link (`/var/run` is one), and no crate judges a link by
//! who could have put it there.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Result, bail};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;

use super::resolve::{caller_uids, writable_by_other};
use crate::term::safe_path;

/// Links followed at most in one path, the kernel's own limit (MAXSYMLINKS).
const MAX_LINKS: usize = 40;

/// A directory an output goes in, open for `*at` calls.
#[derive(Debug)]
pub struct OutDir {
    pub fd: OwnedFd,
    /// The path that reached it, links followed, for messages and for the
    /// checks that take a path (`findmnt --verify --tab-file`).
    pub path: PathBuf,
}

/// What is at a file's name in its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtName {
    /// Nothing, a regular file or a symbolic link: replaced by rename, never
    /// written through.
    Replaceable,
    /// A FIFO or character device root or the caller owns: written in place
    /// (opened non-blocking, so a FIFO without a reader is an error, not a
    /// hang).
    Stream,
}

/// The uids trusted with what root writes: root and the caller (also the one
/// behind sudo).
fn trusted(uid: u32) -> bool {
    uid == 0 || caller_uids().contains(&uid)
}

fn open_dir_path(at: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    loop {
        match rustix::fs::openat2(
            at,
            name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        ) {
            // The kernel asks for a retry when a rename raced the lookup.
            Err(Errno::AGAIN) | Err(Errno::INTR) => continue,
            r => return r,
        }
    }
}

impl OutDir {
    /// Open the directory `dest` is to be written in; `what` names the option
    /// (`--prom`) for the refusals, which say what to change. Fails when a
    /// directory on the way is missing or is not one, or when the way goes
    /// through a link another user controls.
    pub fn open(what: &str, dest: &Path) -> Result<OutDir> {
        let parent = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Self::walk(what, dest, parent)
    }

    /// Open the directory `dir` itself the same way (`bench`'s targets:
    /// root makes its scratch files in there).
    pub fn open_dir(what: &str, dir: &Path) -> Result<OutDir> {
        Self::walk(what, dir, dir)
    }

    /// The path under `/proc/self/fd` that reaches this very directory
    /// through the descriptor, for code that takes paths: renaming anything
    /// on the way no longer matters.
    pub fn fd_path(&self) -> PathBuf {
        PathBuf::from(format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(&self.fd)
        ))
    }

    /// Walk `parent` (named as `dest` in messages).
    fn walk(what: &str, dest: &Path, parent: &Path) -> Result<OutDir> {
        let shown = safe_path(dest);
        let start = |p: &Path| {
            rustix::fs::open(
                if p.is_absolute() { "/" } else { "." },
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
        };
        let mut cur = start(parent).map_err(|e| anyhow::anyhow!("{what} {shown}: {e}"))?;
        let mut path = if parent.is_absolute() {
            PathBuf::from("/")
        } else {
            std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
        };
        // A stack of components still to walk, the next one last.
        let mut todo: Vec<Vec<u8>> = comps(parent);
        let mut links = 0;
        while let Some(c) = todo.pop() {
            match c.as_slice() {
                b"" | b"." => continue,
                b".." => {
                    cur = open_dir_path(cur.as_fd(), OsStr::new(".."))
                        .map_err(|e| anyhow::anyhow!("{what} {shown}: {e}"))?;
                    path.pop();
                    continue;
                }
                _ => {}
            }
            let name = OsStr::from_bytes(&c);
            let here = path.join(name);
            match open_dir_path(cur.as_fd(), name) {
                Ok(fd) => {
                    cur = fd;
                    path = here;
                }
                Err(Errno::LOOP) | Err(Errno::XDEV) => {
                    let target = trusted_link(cur.as_fd(), name, &here, &path)
                        .map_err(|why| anyhow::anyhow!("{what} {shown}: {why}"))?;
                    links += 1;
                    if links > MAX_LINKS {
                        bail!("{what} {shown}: too many symbolic links on the way");
                    }
                    if target.first() == Some(&b'/') {
                        cur = start(Path::new("/"))
                            .map_err(|e| anyhow::anyhow!("{what} {shown}: {e}"))?;
                        path = PathBuf::from("/");
                    }
                    todo.extend(comps(Path::new(OsStr::from_bytes(&target))));
                }
                Err(Errno::NOENT) => bail!(
                    "{what} {shown}: directory {} does not exist; create it or give another path",
                    safe_path(&here)
                ),
                Err(Errno::NOTDIR) => bail!(
                    "{what} {shown}: {} is not a directory; give a path in a directory",
                    safe_path(&here)
                ),
                Err(e) => bail!("{what} {shown}: {}: {e}", safe_path(&here)),
            }
        }
        // Opened for reading where possible: fsync of the directory after a
        // rename needs a real descriptor, not an O_PATH one.
        let fd = rustix::fs::openat(
            &cur,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap_or(cur);
        Ok(OutDir { fd, path })
    }

    /// Judge what is at `name` in this directory before anything is written
    /// (`dest` and `what` for the messages): a directory, a block device or a
    /// socket is refused, and so is a FIFO or character device that neither
    /// root nor the caller owns.
    pub fn at_name(&self, what: &str, dest: &Path, name: &OsStr) -> Result<AtName> {
        let shown = safe_path(dest);
        let st = match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(AtName::Replaceable),
            Err(e) => bail!("{what} {shown}: {e}"),
        };
        let t = FileType::from_raw_mode(st.st_mode);
        let kind = match t {
            FileType::RegularFile | FileType::Symlink => return Ok(AtName::Replaceable),
            FileType::Directory => bail!(
                "{what} {shown}: is a directory; give a file name inside it, e.g. {}",
                safe_path(&dest.join("tmpfsctl.out"))
            ),
            FileType::BlockDevice => {
                bail!("{what} {shown}: is a block device; give a regular file name")
            }
            FileType::Socket => bail!("{what} {shown}: is a socket; give a regular file name"),
            FileType::Fifo => "a FIFO",
            FileType::CharacterDevice => "a device",
            FileType::Unknown => {
                bail!("{what} {shown}: not a regular file; give a regular file name")
            }
        };
        if !trusted(st.st_uid) {
            bail!(
                "{what} {shown}: is {kind} that uid {} owns, not a file: whoever put it there would \
                 read the report{}; remove it or give another path",
                st.st_uid,
                if t == FileType::Fifo {
                    " (and writing would wait for them)"
                } else {
                    ""
                }
            );
        }
        Ok(AtName::Stream)
    }

    /// Open the FIFO or device at `name` (judged by [`OutDir::at_name`]) for
    /// writing: never through a link, never waiting for a reader, and only
    /// if it still is what was judged.
    pub fn open_stream(&self, what: &str, dest: &Path, name: &OsStr) -> Result<OwnedFd> {
        let shown = safe_path(dest);
        let before = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| anyhow::anyhow!("{what} {shown}: {e}"))?;
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NXIO => anyhow::anyhow!(
                "{what} {shown}: is a FIFO no one is reading; start its reader first or give a file name"
            ),
            e => anyhow::anyhow!("{what} {shown}: cannot open: {e}"),
        })?;
        let st = rustix::fs::fstat(&fd).map_err(|e| anyhow::anyhow!("{what} {shown}: {e}"))?;
        if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino) || !trusted(st.st_uid) {
            bail!("{what} {shown}: was replaced while being opened; nothing was written");
        }
        // Written as a stream from here: a full pipe waits for its reader
        // like a shell redirection would.
        let fl = rustix::fs::fcntl_getfl(&fd)?;
        rustix::fs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK)?;
        Ok(fd)
    }
}

/// The target of the link `name` in `dir` (reached as `here`, in `dir_path`)
/// when root or the caller owns the link and no one else can change the
/// directory it is in; otherwise why not.
fn trusted_link(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    here: &Path,
    dir_path: &Path,
) -> std::result::Result<Vec<u8>, String> {
    let err = |e: Errno| format!("{}: {e}", safe_path(here));
    // The link itself, so its owner and its target come from one inode.
    let link = rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(err)?;
    let st: Stat = rustix::fs::fstat(&link).map_err(err)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::Symlink {
        return Err(format!(
            "{} changed while it was looked at; try again",
            safe_path(here)
        ));
    }
    if !trusted(st.st_uid) {
        return Err(format!(
            "{} is a symbolic link that uid {} owns; root does not write where another user's link leads: \
             give the path without it",
            safe_path(here),
            st.st_uid
        ));
    }
    let dst = rustix::fs::fstat(dir).map_err(err)?;
    if let Some(why) = writable_by_other(&dst, &caller_uids()) {
        return Err(format!(
            "{} is a symbolic link in {}, which {why}: another user can swap it; give the path without it",
            safe_path(here),
            safe_path(dir_path)
        ));
    }
    let target = rustix::fs::readlinkat(&link, "", Vec::new()).map_err(err)?;
    Ok(target.into_bytes())
}

/// The components of `p` as a stack: the first one last.
fn comps(p: &Path) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.as_bytes().to_vec()),
            Component::ParentDir => Some(b"..".to_vec()),
            _ => None,
        })
        .collect();
    v.reverse();
    v
}
