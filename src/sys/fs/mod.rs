//! The one filesystem toolkit `apply`, `revert` and `persist` are built from:
//! listing a directory, opening without following symlinks, xattrs, data
//! extents (holes), moving data between files, owners/modes/ns times, and
//! tree removal. Everything works relative to open directory descriptors, so
//! a name swapped for a symlink by another process is never followed.
//!
//! Written by hand on rustix's *at calls rather than with a crate: the copy
//! crates (fs_extra, copy_dir, walkdir-based ones) work by path and drop hard
//! links, xattrs, special files and ns times.

mod extents;
mod meta;
mod remove;
mod xattr;

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{Dir, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;

pub use extents::{CHUNK, Extents, Mover, move_data};
pub use meta::{Created, owner, perm, stat_times, times, ts};
pub use remove::{clear_dir, remove_tree};
pub use xattr::{Obj, sync_xattrs};

pub fn os(b: &[u8]) -> &OsStr {
    OsStr::from_bytes(b)
}

pub fn cstr(b: &[u8]) -> std::io::Result<CString> {
    CString::new(b).map_err(|_| std::io::Error::other("a path holds a NUL byte"))
}

/// Show a name relative to the tree root for messages: lossy, but escaped so a
/// newline in a file name cannot forge a line of output.
pub fn show(rel: &[u8]) -> String {
    if rel.is_empty() {
        return ".".into();
    }
    String::from_utf8_lossy(rel).escape_debug().to_string()
}

/// `rel/name`, or `name` at the root.
pub fn join(rel: &[u8], name: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(rel.len() + name.len() + 1);
    v.extend_from_slice(rel);
    if !rel.is_empty() {
        v.push(b'/');
    }
    v.extend_from_slice(name);
    v
}

/// Split `a/b/c` into (`a/b`, `c`).
pub fn split(rel: &[u8]) -> (&[u8], &[u8]) {
    match rel.iter().rposition(|&c| c == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (b"", rel),
    }
}

/// Entry names of a directory, `.` and `..` excluded, sorted (deterministic order).
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

/// The directory `name` under `at`, never through a symlink.
pub fn open_dir_at(at: BorrowedFd<'_>, name: &CStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        at,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// A directory opened for reading with O_NOATIME where allowed (the owner,
/// or CAP_FOWNER), so that reading it does not make it look used: tmpfiles
/// ages directories by atime. `follow`: whether a symlink at `path` is
/// followed (as opendir does) or refused.
pub fn open_dir_noatime<P: rustix::path::Arg + Copy>(
    at: BorrowedFd<'_>,
    path: P,
    follow: bool,
) -> rustix::io::Result<OwnedFd> {
    let mut f = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow {
        f |= OFlags::NOFOLLOW;
    }
    match rustix::fs::openat(at, path, f | OFlags::NOATIME, Mode::empty()) {
        Err(Errno::PERM) => rustix::fs::openat(at, path, f, Mode::empty()),
        r => r,
    }
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

/// `rel` (several components) under `root`, refusing symlinks anywhere on the
/// way and any escape from `root` or crossing of a mount: what is opened is
/// what was walked, or nothing. An empty `rel` is `root` itself.
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

/// A regular file beneath `root` for reading: O_NONBLOCK so a FIFO swapped
/// in meanwhile cannot block us, then fstat to be sure it is still a
/// regular file.
pub fn open_regular_beneath(
    root: BorrowedFd<'_>,
    rel: &[u8],
) -> rustix::io::Result<(OwnedFd, Stat)> {
    let fd = open_beneath(root, rel, OFlags::RDONLY | OFlags::NONBLOCK)?;
    let st = rustix::fs::fstat(&fd)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(Errno::NOTSUP);
    }
    Ok((fd, st))
}
