//! Removing a plain-directory scratch without touching anything else.
//!
//! CMD can do anything inside the scratch, including mounting another
//! directory there (a bind mount of the user's data) or planting symlinks to
//! it. Removal therefore
//! * first detaches every mount at or below the scratch (`umount2` with
//!   `MNT_DETACH`, deepest first, found in /proc/self/mountinfo), so their
//!   files are left alone;
//! * then walks the tree by descriptor (`openat` with `O_NOFOLLOW`, `unlinkat`),
//!   never through a path, so a symlink is removed as a link and never
//!   followed, and a directory swapped for a link between two steps is not
//!   entered;
//! * and never enters anything on another mount than the scratch's own
//!   (device and mount id of each entry, checked with `statx`), should a
//!   mount appear after the detach step or fail to be detached.
//!
//! The scratch of a tmpfsctl that was killed is found by the next run in the
//! same place and removed the same way ([`sweep`]).

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FlockOperation, Mode as FsMode, OFlags, StatxFlags};
use rustix::io::Errno;

use crate::sys::{Sysroot, proc, unmount};
use crate::term::safe_path;

/// Deeper than this, the rest of a tree is left in place (and reported):
/// each level holds a descriptor open.
const MAX_DEPTH: usize = 256;

/// Where an inode lives: a device, and a mount when the kernel says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    dev: u64,
    mnt_id: Option<u64>,
    ino: u64,
}

impl Place {
    fn of(dir: impl AsFd, name: &CStr) -> io::Result<(Place, bool)> {
        let flags = AtFlags::SYMLINK_NOFOLLOW
            | if name.is_empty() {
                AtFlags::EMPTY_PATH
            } else {
                AtFlags::empty()
            };
        let want = StatxFlags::TYPE | StatxFlags::INO | StatxFlags::MNT_ID;
        let st = rustix::fs::statx(dir, name, flags, want)?;
        let dev = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor);
        let mnt_id = (st.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(st.stx_mnt_id);
        let is_dir = u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFDIR;
        Ok((
            Place {
                dev,
                mnt_id,
                ino: st.stx_ino,
            },
            is_dir,
        ))
    }

    /// The same filesystem and mount as `root` (the inode aside).
    fn same_mount(&self, root: &Place) -> bool {
        self.dev == root.dev && (self.mnt_id.is_none() || self.mnt_id == root.mnt_id)
    }
}

/// The identity of a scratch directory, taken when it was made (before CMD
/// could touch it).
pub fn place_of(fd: impl AsFd) -> io::Result<Place> {
    Ok(Place::of(fd, c"")?.0)
}

/// What removing a scratch did.
#[derive(Debug, Default)]
pub struct Removed {
    /// Mounts found at or below the scratch, detached.
    pub detached: Vec<PathBuf>,
    /// Entries left in place because they sit on another mount or too deep.
    pub left: Vec<PathBuf>,
    /// The scratch directory itself is gone.
    pub removed: bool,
}

impl Removed {
    /// Human notes on what was done besides deleting the scratch's own files.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.detached.is_empty() {
            let list: Vec<String> = self.detached.iter().map(|p| safe_path(p)).collect();
            notes.push(format!(
                "CMD left {} mount{} inside the scratch: detached without touching {} files: {}",
                self.detached.len(),
                if self.detached.len() == 1 { "" } else { "s" },
                if self.detached.len() == 1 {
                    "its"
                } else {
                    "their"
                },
                list.join(", ")
            ));
        }
        notes
    }
}

fn open_dir(dir: impl AsFd, name: &CStr) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        FsMode::empty(),
    )?)
}

/// Delete everything inside `dir` that is on `root`'s mount; whatever is
/// not (or is too deep) is added to `left` and kept.
fn empty_dir(
    dir: &OwnedFd,
    root: &Place,
    at: &Path,
    depth: usize,
    left: &mut Vec<PathBuf>,
) -> io::Result<()> {
    if depth > MAX_DEPTH {
        left.push(at.to_path_buf());
        return Ok(());
    }
    // Names first: changing a directory while reading it may skip entries.
    let mut names: Vec<CString> = Vec::new();
    for e in rustix::fs::Dir::read_from(dir)? {
        let e = e?;
        let n = e.file_name();
        if n != c"." && n != c".." {
            names.push(n.to_owned());
        }
    }
    for name in names {
        let path = at.join(OsStr::from_bytes(name.to_bytes()));
        let (place, is_dir) = match Place::of(dir, &name) {
            Ok(x) => x,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => return Err(e),
        };
        if !place.same_mount(root) {
            left.push(path);
            continue;
        }
        if is_dir {
            let sub = match open_dir(dir, &name) {
                Ok(fd) => fd,
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) => return Err(e),
            };
            // Swapped (for a link, a mount) since the statx: not entered.
            if place_of(&sub)? != place {
                left.push(path);
                continue;
            }
            let before = left.len();
            empty_dir(&sub, root, &path, depth + 1, left)?;
            if left.len() > before {
                continue;
            }
            remove_entry(dir, &name, AtFlags::REMOVEDIR)?;
        } else {
            // A symlink is removed as a link: unlinkat never follows it.
            remove_entry(dir, &name, AtFlags::empty())?;
        }
    }
    Ok(())
}

fn remove_entry(dir: &OwnedFd, name: &CStr, flags: AtFlags) -> io::Result<()> {
    match rustix::fs::unlinkat(dir, name, flags) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A scratch directory to remove: its parent and name, a descriptor of it
/// and its identity from when it was made.
pub struct Target<'a> {
    pub parent: &'a OwnedFd,
    pub name: &'a OsStr,
    pub dir: &'a OwnedFd,
    pub place: Place,
    /// The canonical path, to find mounts below it.
    pub real: &'a Path,
}

/// Detach what is mounted inside, delete what is the scratch's own, then the
/// directory itself (only if its name still leads to the same directory).
pub fn remove(t: &Target<'_>) -> (Removed, Option<String>) {
    let mut out = Removed::default();
    match unmount::detach_below(t.real, false) {
        Ok(d) => out.detached = d,
        // Whatever stays mounted is caught by the mount check below.
        Err(e) => {
            return (
                out,
                Some(format!("detaching mounts below the scratch: {e}")),
            );
        }
    }
    if let Err(e) = empty_dir(t.dir, &t.place, t.real, 0, &mut out.left) {
        return (out, Some(format!("emptying {}: {e}", safe_path(t.real))));
    }
    if !out.left.is_empty() {
        let list: Vec<String> = out.left.iter().take(5).map(|p| safe_path(p)).collect();
        return (
            out,
            Some(format!(
                "left {} in place (on another mount, or nested too deep): {}",
                safe_path(t.real),
                list.join(", ")
            )),
        );
    }
    let name = t.name;
    match Place::of(t.parent, &cstring(name)) {
        Ok((p, true)) if p == t.place => {}
        _ => {
            return (
                out,
                Some(format!(
                    "{} is no longer the scratch directory; left it alone",
                    safe_path(t.real)
                )),
            );
        }
    }
    match rustix::fs::unlinkat(t.parent, name, AtFlags::REMOVEDIR) {
        Ok(()) => {
            out.removed = true;
            (out, None)
        }
        Err(e) => (
            out,
            Some(format!(
                "cannot remove the scratch {}: {e}",
                safe_path(t.real)
            )),
        ),
    }
}

fn cstring(s: &OsStr) -> CString {
    // Names read from a directory hold no NUL; an impossible one matches nothing.
    CString::new(s.as_bytes()).unwrap_or_default()
}

/// Take the lock that marks a scratch as in use; held until the descriptor closes.
pub fn lock(dir: &OwnedFd) -> io::Result<()> {
    Ok(rustix::fs::flock(
        dir,
        FlockOperation::NonBlockingLockExclusive,
    )?)
}

/// The pid in a scratch name `{prefix}{pid}-{random}`.
pub fn owner_pid(name: &str, prefix: &str) -> Option<i32> {
    let rest = name.strip_prefix(prefix)?;
    let (pid, random) = rest.split_once('-')?;
    if random.is_empty() {
        return None;
    }
    pid.parse().ok().filter(|&p| p > 0)
}

/// Remove the scratches in `base` (names `{prefix}{pid}-…`, owned by `uid`)
/// whose tmpfsctl is gone: its pid no longer exists and nobody holds the
/// lock. Returns notes on what was removed or could not be.
pub fn sweep(base: &Path, prefix: &str, uid: u32) -> Vec<String> {
    let mut notes = Vec::new();
    let Ok(rd) = std::fs::read_dir(base) else {
        return notes;
    };
    let Ok(parent) = rustix::fs::open(
        base,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        FsMode::empty(),
    ) else {
        return notes;
    };
    let real_base = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| owner_pid(n, prefix)) else {
            continue;
        };
        let Ok(dir) = open_dir(&parent, &cstring(&name)) else {
            continue;
        };
        let Ok(st) = rustix::fs::fstat(&dir) else {
            continue;
        };
        // Its tmpfsctl made the scratch, so started before the scratch last
        // changed; a process that started later only reuses the pid.
        let changed = u64::try_from(st.st_ctime).unwrap_or(0);
        if proc::alive_since(&Sysroot::live(), pid as u32, changed) {
            continue;
        }
        if st.st_uid != uid || lock(&dir).is_err() {
            continue;
        }
        let Ok(place) = place_of(&dir) else {
            continue;
        };
        let real = real_base.join(&name);
        let (r, err) = remove(&Target {
            parent: &parent,
            name: &name,
            dir: &dir,
            place,
            real: &real,
        });
        notes.extend(r.notes());
        notes.push(match err {
            None => format!(
                "removed {}, the scratch of a tmpfsctl (pid {pid}) that was killed",
                safe_path(&real)
            ),
            Some(e) => format!("the scratch of a killed tmpfsctl (pid {pid}): {e}"),
        });
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_from_name() {
        assert_eq!(owner_pid("tmpfsctl-0-123-abcDEF", "tmpfsctl-0-"), Some(123));
        assert_eq!(owner_pid("tmpfsctl-0-123-", "tmpfsctl-0-"), None);
        assert_eq!(owner_pid("tmpfsctl-0-kept-abc", "tmpfsctl-0-"), None);
        assert_eq!(owner_pid("tmpfsctl-1-123-abc", "tmpfsctl-0-"), None);
        assert_eq!(owner_pid("tmpfsctl-0-AbCdEf012345", "tmpfsctl-0-"), None);
    }

    #[test]
    fn removal_deletes_links_not_their_targets() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("precious"), "keep").unwrap();
        let base = tempfile::tempdir().unwrap();
        let s = base.path().join("scratch");
        std::fs::create_dir_all(s.join("a/b")).unwrap();
        std::os::unix::fs::symlink(outside.path(), s.join("a/b/link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("precious"), s.join("f")).unwrap();
        std::fs::write(s.join("a/junk"), "x").unwrap();
        let parent = rustix::fs::open(base.path(), OFlags::PATH, FsMode::empty()).unwrap();
        let dir = open_dir(&parent, c"scratch").unwrap();
        let place = place_of(&dir).unwrap();
        let real = std::fs::canonicalize(&s).unwrap();
        let (r, err) = remove(&Target {
            parent: &parent,
            name: OsStr::new("scratch"),
            dir: &dir,
            place,
            real: &real,
        });
        assert_eq!(err, None);
        assert!(r.removed && r.left.is_empty() && r.detached.is_empty());
        assert!(!s.exists());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("precious")).unwrap(),
            "keep"
        );
    }

    #[test]
    fn a_swapped_scratch_is_not_removed() {
        let base = tempfile::tempdir().unwrap();
        let s = base.path().join("scratch");
        std::fs::create_dir(&s).unwrap();
        let parent = rustix::fs::open(base.path(), OFlags::PATH, FsMode::empty()).unwrap();
        let dir = open_dir(&parent, c"scratch").unwrap();
        let place = place_of(&dir).unwrap();
        std::fs::rename(&s, base.path().join("moved")).unwrap();
        std::fs::create_dir(&s).unwrap();
        let (r, err) = remove(&Target {
            parent: &parent,
            name: OsStr::new("scratch"),
            dir: &dir,
            place,
            real: &s,
        });
        assert!(!r.removed);
        assert!(err.unwrap().contains("no longer the scratch"));
        assert!(s.exists());
    }
}
