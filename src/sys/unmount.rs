//! The one way tmpfsctl takes a mount away ([`super::tmpfs`] is the one way
//! it makes one). Each caller says how ([`How`]): a checked unmount that
//! refuses while anything uses the mount, a deliberate detach, or the
//! scratch rule (tmpfsctl's own throwaway mounts). A refusal is one typed
//! error, [`Busy`], that names the processes holding the mount, so every
//! command that unmounts says the same thing in the same words.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};

use rustix::io::Errno;
use rustix::mount::UnmountFlags;

use super::Sysroot;
use super::procfd::{self, ProcUse};
use crate::term::{safe, safe_path, shell_path};

/// Which mount to take away.
#[derive(Debug, Clone, Copy)]
pub enum At<'a> {
    /// The mount on this directory; a symlink in its place is not followed.
    Dir(&'a Path),
    /// `path` reaches the mount on `dir` a safer way than its name (through
    /// a descriptor of the parent); `dir` is what messages name and where
    /// holders are looked for.
    Via { path: &'a Path, dir: &'a Path },
    /// The mount whose root this descriptor is, wherever it now sits;
    /// `dir` names it in messages.
    Root(BorrowedFd<'a>, &'a Path),
}

impl At<'_> {
    fn dir(&self) -> &Path {
        match self {
            At::Dir(d) | At::Via { dir: d, .. } | At::Root(_, d) => d,
        }
    }
}

/// How to take it away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// `umount2(0)`: while anything uses the mount the kernel refuses, and so
    /// does this, with [`Busy`]. For a mount whose data someone may still
    /// want: nothing is lost by stopping here.
    Checked,
    /// `MNT_DETACH`: gone from view now, freed when the last user lets go.
    /// Only where the caller means it (`--lazy`, or its data is already
    /// safe elsewhere).
    Detach,
    /// For tmpfsctl's own scratch mounts, whose data nobody keeps: checked;
    /// when busy, detach the mounts inside and try again; still busy, detach
    /// it and say who still holds it ([`Unmounted::left_to`]).
    ScratchAnyway,
}

/// What an unmount did besides the unmount itself.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Unmounted {
    /// Mounts inside it that were detached first ([`How::ScratchAnyway`]).
    pub detached_inside: Vec<PathBuf>,
    /// Why detaching those failed, if it did.
    pub inside_error: Option<String>,
    /// It was detached while these processes held it ([`How::ScratchAnyway`]):
    /// its memory is freed when they let go.
    pub left_to: Option<Vec<ProcUse>>,
}

/// The kernel refused a checked unmount because the mount is in use (or a
/// caller found it in use before trying): names who holds it and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    pub dir: PathBuf,
    pub holders: Vec<ProcUse>,
    /// The caller's other way out, e.g. "pass --lazy to …".
    or: Option<String>,
}

impl Busy {
    /// `dir` is busy; its holders are looked up now.
    pub fn find(root: &Sysroot, dir: &Path) -> Busy {
        Busy::with(dir, procfd::users_of(root, dir))
    }

    pub fn with(dir: &Path, holders: Vec<ProcUse>) -> Busy {
        Busy {
            dir: dir.to_path_buf(),
            holders,
            or: None,
        }
    }

    /// Offer a second remedy after "stop those processes".
    pub fn or(mut self, remedy: &str) -> Busy {
        self.or = Some(remedy.to_string());
        self
    }
}

/// "held by pid 4242 sleep (cwd), pid 4243 vim (fd 3: /srv/a)": the one
/// way a holder is named, in errors and notes alike. Names are made safe
/// for a terminal.
pub fn holders_line(holders: &[ProcUse]) -> String {
    let each: Vec<String> = holders
        .iter()
        .map(|h| {
            let comm = if h.comm.is_empty() { "?" } else { &h.comm };
            format!("pid {} {} ({})", h.pid, safe(comm), h.uses.join(", "))
        })
        .collect();
    format!("held by {}", each.join(", "))
}

impl fmt::Display for Busy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = safe_path(&self.dir);
        let sh = shell_path(&self.dir);
        if self.holders.is_empty() {
            // The mount is in use by something /proc does not show here: a
            // process in another mount namespace, or a mount inside it.
            write!(
                f,
                "{shown} is busy, but no process visible here holds it (`fuser -vm {sh}` and `findmnt -R {sh}` may show what does); free it and run again"
            )?;
        } else {
            write!(
                f,
                "{shown} is busy, {}; stop those processes (`fuser -vm {sh}` lists them) and run again",
                holders_line(&self.holders)
            )?;
        }
        match &self.or {
            Some(r) => write!(f, ", or {r}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for Busy {}

#[derive(Debug)]
pub enum UnmountError {
    Busy(Busy),
    /// Any other refusal (not mounted, no permission, …).
    Failed {
        dir: PathBuf,
        detach: bool,
        errno: Errno,
    },
}

impl fmt::Display for UnmountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnmountError::Busy(b) => b.fmt(f),
            UnmountError::Failed { dir, detach, errno } => write!(
                f,
                "cannot {} {}: {errno}",
                if *detach {
                    "detach the mount at"
                } else {
                    "unmount"
                },
                safe_path(dir)
            ),
        }
    }
}

impl std::error::Error for UnmountError {}

impl UnmountError {
    /// What the kernel said, for a caller that words the failure itself.
    pub fn errno(&self) -> Errno {
        match self {
            UnmountError::Busy(_) => Errno::BUSY,
            UnmountError::Failed { errno, .. } => *errno,
        }
    }
}

/// One `umount2`. A path is never followed at its last component; a root
/// descriptor is reached through its /proc/self/fd link, which must be.
fn umount2(at: At<'_>, detach: bool) -> Result<(), Errno> {
    let flags = if detach {
        UnmountFlags::DETACH
    } else {
        UnmountFlags::empty()
    };
    match at {
        At::Dir(p) | At::Via { path: p, .. } => {
            rustix::mount::unmount(p, flags | UnmountFlags::NOFOLLOW)
        }
        At::Root(fd, _) => {
            let p = format!("/proc/self/fd/{}", fd.as_raw_fd());
            rustix::mount::unmount(p.as_str(), flags)
        }
    }
}

/// Take the mount `at` away, `how` the caller needs (see [`How`]).
pub fn unmount(at: At<'_>, how: How) -> Result<Unmounted, UnmountError> {
    let dir = at.dir();
    let failed = |detach, errno| UnmountError::Failed {
        dir: dir.to_path_buf(),
        detach,
        errno,
    };
    let mut done = Unmounted::default();
    match how {
        How::Detach => umount2(at, true).map_err(|e| failed(true, e))?,
        How::Checked => match umount2(at, false) {
            Ok(()) => {}
            Err(Errno::BUSY) => {
                return Err(UnmountError::Busy(Busy::find(&Sysroot::live(), dir)));
            }
            Err(e) => return Err(failed(false, e)),
        },
        How::ScratchAnyway => {
            let mut r = umount2(at, false);
            // Mounts left inside keep it busy; mountinfo is read only then,
            // so the usual unmount reads it not at all.
            if r == Err(Errno::BUSY) {
                match detach_below(dir, true) {
                    Ok(d) => done.detached_inside = d,
                    Err(e) => done.inside_error = Some(e.to_string()),
                }
                r = umount2(at, false);
            }
            match r {
                Ok(()) => {}
                Err(Errno::BUSY) => {
                    let holders = procfd::users_of(&Sysroot::live(), dir);
                    umount2(at, true).map_err(|e| failed(true, e))?;
                    done.left_to = Some(holders);
                }
                Err(e) => return Err(failed(false, e)),
            }
        }
    }
    Ok(done)
}

/// Every mount at or below `root` (a canonical path), detached deepest
/// first; with `keep_root`, a mount on `root` itself stays.
pub fn detach_below(root: &Path, keep_root: bool) -> io::Result<Vec<PathBuf>> {
    let mut done = Vec::new();
    // Bounded: each round detaches one mount.
    for _ in 0..10_000 {
        let text = std::fs::read("/proc/self/mountinfo")?;
        let (mounts, _) = super::mountinfo::parse(&text);
        let Some(deepest) = mounts
            .iter()
            .map(|m| &m.mount_point)
            .filter(|p| p.starts_with(root) && !(keep_root && p.as_path() == root))
            .max_by_key(|p| p.components().count())
        else {
            return Ok(done);
        };
        umount2(At::Dir(deepest), true)
            .map_err(|e| io::Error::other(format!("umount -l {}: {e}", safe_path(deepest))))?;
        done.push(deepest.clone());
    }
    Err(io::Error::other(format!(
        "mounts keep appearing below {}",
        safe_path(root)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::statfs::TMPFS_MAGIC;

    fn holder(pid: u32, comm: &str, uses: &[&str]) -> ProcUse {
        ProcUse {
            pid,
            comm: comm.into(),
            uses: uses.iter().map(|u| u.to_string()).collect(),
        }
    }

    #[test]
    fn busy_names_each_holder_and_a_command_safe_to_paste() {
        let b = Busy::with(
            Path::new("/srv/my data"),
            vec![
                holder(4242, "sleep", &["cwd"]),
                holder(
                    4243,
                    "evil\x1b]0;x\x07",
                    &["fd 3: /srv/my data/a", "map: /srv/my data/l.so"],
                ),
            ],
        );
        assert_eq!(
            b.to_string(),
            "/srv/my data is busy, held by pid 4242 sleep (cwd), pid 4243 evil\\x1b]0;x\\x07 \
             (fd 3: /srv/my data/a, map: /srv/my data/l.so); stop those processes \
             (`fuser -vm '/srv/my data'` lists them) and run again"
        );
        let b = b.or("pass --lazy to detach it anyway");
        assert!(
            b.to_string()
                .ends_with("and run again, or pass --lazy to detach it anyway"),
            "{b}"
        );
    }

    #[test]
    fn busy_without_visible_holders_says_where_to_look() {
        let b = Busy::with(Path::new("/srv/\nx"), Vec::new());
        let s = UnmountError::Busy(b).to_string();
        assert!(
            s.starts_with("/srv/\\nx is busy, but no process visible here holds it"),
            "{s}"
        );
        assert!(s.contains("`fuser -vm $'/srv/\\x0ax'`"), "{s}");
        assert!(!s.contains('\n'), "{s}");
    }

    #[test]
    fn holders_line_is_the_same_for_every_caller() {
        let h = [holder(7, "", &["root"])];
        assert_eq!(holders_line(&h), "held by pid 7 ? (root)");
    }

    /// A tmpfs on a fresh directory, with a `sleep` whose cwd is in it;
    /// both gone on drop (the sleep killed by its pid).
    struct HeldMount {
        dir: tempfile::TempDir,
        sleep: Option<std::process::Child>,
    }

    impl HeldMount {
        fn new() -> Option<HeldMount> {
            let dir = tempfile::Builder::new()
                .prefix("tmpfsctl-umount-")
                .tempdir()
                .ok()?;
            rustix::mount::mount(
                "tmpfs",
                dir.path(),
                "tmpfs",
                rustix::mount::MountFlags::empty(),
                c"size=1M",
            )
            .ok()?;
            let sleep = std::process::Command::new("sleep")
                .arg("600")
                .current_dir(dir.path())
                .spawn()
                .ok();
            Some(HeldMount { dir, sleep })
        }

        fn pid(&self) -> u32 {
            self.sleep.as_ref().map_or(0, |c| c.id())
        }

        fn let_go(&mut self) {
            if let Some(mut c) = self.sleep.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    impl Drop for HeldMount {
        fn drop(&mut self) {
            self.let_go();
            let _ = rustix::mount::unmount(self.dir.path(), UnmountFlags::DETACH);
        }
    }

    #[test]
    fn a_checked_unmount_of_a_busy_tmpfs_names_the_holder_then_goes_through() {
        let Some(mut m) = HeldMount::new() else {
            crate::skip!("cannot mount a tmpfs here (needs root)");
        };
        let dir = m.dir.path().to_path_buf();
        match unmount(At::Dir(&dir), How::Checked) {
            Err(UnmountError::Busy(b)) => {
                assert_eq!(b.holders.len(), 1, "{b}");
                assert_eq!(b.holders[0].pid, m.pid());
                assert_eq!(b.holders[0].uses, ["cwd"]);
                assert!(
                    b.to_string()
                        .contains(&format!("held by pid {} sleep (cwd)", m.pid())),
                    "{b}"
                );
            }
            other => panic!("want Busy, got {other:?}"),
        }
        m.let_go();
        assert_eq!(
            unmount(At::Dir(&dir), How::Checked).unwrap(),
            Unmounted::default()
        );
        let not = unmount(At::Dir(&dir), How::Checked).unwrap_err();
        assert_eq!(not.errno(), Errno::INVAL, "{not}");
    }

    #[test]
    fn the_scratch_rule_detaches_a_busy_tmpfs_and_says_who_holds_it() {
        let Some(m) = HeldMount::new() else {
            crate::skip!("cannot mount a tmpfs here (needs root)");
        };
        let dir = m.dir.path().to_path_buf();
        let u = unmount(At::Dir(&dir), How::ScratchAnyway).unwrap();
        let held = u.left_to.expect("detached while held");
        assert!(held.iter().any(|h| h.pid == m.pid()), "{held:?}");
        let st = rustix::fs::statfs(&dir).unwrap();
        assert_ne!(st.f_type as u64, TMPFS_MAGIC, "still mounted");
    }
}
