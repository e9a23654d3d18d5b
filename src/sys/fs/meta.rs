//! Everything about an entry but its data: owner, mode, ns times. And the
//! one way to set them on an entry that cannot be opened for I/O (a FIFO, a
//! socket, a device node, a symlink): through an `O_PATH|O_NOFOLLOW`
//! descriptor of the entry just created, checked to be that entry. By name,
//! a mode change follows a symlink; in a shared sticky DIR the entry's owner
//! can rename one over the new entry between two calls, and root would then
//! chmod a file outside DIR.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use rustix::fs::{AtFlags, FileType, Gid, Mode, OFlags, Stat, Timespec, Timestamps, Uid};
use rustix::io::Errno;

use super::Obj;

pub fn times(st: &Stat) -> Timestamps {
    Timestamps {
        last_access: ts((st.st_atime, st.st_atime_nsec as u32)),
        last_modification: ts((st.st_mtime, st.st_mtime_nsec as u32)),
    }
}

pub fn perm(st: &Stat) -> Mode {
    Mode::from_raw_mode(st.st_mode & 0o7777)
}

pub fn owner(st: &Stat) -> (Option<Uid>, Option<Gid>) {
    (
        Some(Uid::from_raw(st.st_uid)),
        Some(Gid::from_raw(st.st_gid)),
    )
}

pub fn ts(t: (i64, u32)) -> Timespec {
    Timespec {
        tv_sec: t.0,
        tv_nsec: t.1 as _,
    }
}

/// atime, mtime, ctime as (seconds, nanoseconds).
pub fn stat_times(st: &Stat) -> [(i64, u32); 3] {
    [
        (st.st_atime, st.st_atime_nsec as u32),
        (st.st_mtime, st.st_mtime_nsec as u32),
        (st.st_ctime, st.st_ctime_nsec as u32),
    ]
}

/// An entry this process just created by name (mknodat, symlinkat), held by
/// an `O_PATH|O_NOFOLLOW` descriptor. Every change goes through the
/// descriptor, so a name swapped afterwards is never acted on; and
/// [`Created::open`] refuses a name swapped before it was opened: the entry
/// must be of the type created, owned by this process's user (another user
/// cannot make an inode ours) and have one name (not a hard link to a file
/// elsewhere).
pub struct Created {
    fd: OwnedFd,
}

impl Created {
    /// `Err(Errno::STALE)`: the name no longer holds what was created.
    pub fn open(dir: BorrowedFd<'_>, name: &CStr, ft: FileType) -> rustix::io::Result<Created> {
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let st = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(st.st_mode) != ft
            || st.st_uid != rustix::process::geteuid().as_raw()
            || st.st_nlink != 1
        {
            return Err(Errno::STALE);
        }
        Ok(Created { fd })
    }

    /// The entry through /proc: following this magic link lands on the
    /// entry itself, even a symlink, never on what a symlink names.
    fn proc_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    pub fn chown(&self, uid: Option<Uid>, gid: Option<Gid>) -> rustix::io::Result<()> {
        rustix::fs::chownat(
            &self.fd,
            c"",
            uid,
            gid,
            AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
        )
    }

    /// Not for symlinks (they have no mode of their own).
    pub fn chmod(&self, mode: Mode) -> rustix::io::Result<()> {
        rustix::fs::chmod(self.proc_path(), mode)
    }

    pub fn set_times(&self, t: &Timestamps) -> rustix::io::Result<()> {
        rustix::fs::utimensat(rustix::fs::CWD, self.proc_path(), t, AtFlags::empty())
    }

    /// Its xattrs, read and written through the descriptor.
    pub fn obj(&self) -> Obj<'static> {
        Obj::Proc(self.proc_path())
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;

    /// Each of the three checks refuses on its own: a name that now holds
    /// another type, another user's entry, or a second name for it.
    #[test]
    fn created_refuses_a_name_that_no_longer_holds_what_was_made() {
        let t = tempfile::tempdir().unwrap();
        let dir =
            rustix::fs::open(t.path(), OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        let made = |name: &CStr| {
            rustix::fs::mknodat(dir.as_fd(), name, FileType::Fifo, Mode::RUSR, 0).unwrap();
        };
        let open = |name: &CStr, ft| Created::open(dir.as_fd(), name, ft).map(|_| ());
        made(c"p");
        assert_eq!(open(c"p", FileType::Fifo), Ok(()));
        assert_eq!(open(c"p", FileType::RegularFile), Err(Errno::STALE));
        made(c"linked");
        rustix::fs::linkat(
            dir.as_fd(),
            c"linked",
            dir.as_fd(),
            c"second",
            AtFlags::empty(),
        )
        .unwrap();
        assert_eq!(open(c"linked", FileType::Fifo), Err(Errno::STALE));
        // Another user's entry: only root can make one here.
        if rustix::process::geteuid().is_root() {
            made(c"theirs");
            rustix::fs::chownat(
                dir.as_fd(),
                c"theirs",
                Some(Uid::from_raw(65534)),
                None,
                AtFlags::SYMLINK_NOFOLLOW,
            )
            .unwrap();
            assert_eq!(open(c"theirs", FileType::Fifo), Err(Errno::STALE));
        }
    }
}
