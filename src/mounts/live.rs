//! The live side: resizing and unmounting tmpfs mounts, a staging clone,
//! reaching the directory underneath a mount, processes using a tree.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rustix::fs::{CWD, Mode, OFlags};
use rustix::mount::{FsOpenFlags, FsPickFlags, MoveMountFlags, OpenTreeFlags, UnmountFlags};

use super::plan::{self, ProcUse};
use crate::render::term::safe_path;
use crate::sys::{MountInfo, Sysroot, proc, procfd};

/// A second mount of a tmpfs at a staging point: its files stay reachable
/// there once it leaves DIR — after a kill of this process too, for the
/// next run to finish from. Dropped, it is unmounted and its directory
/// removed, unless [`StagingMount::hold`] kept it for that next run.
pub struct StagingMount {
    pub path: PathBuf,
    hold: bool,
}

impl StagingMount {
    /// Mount a clone of the mount whose root `root` is (no submounts) at `at`.
    pub fn mount(root: BorrowedFd<'_>, at: &Path) -> Result<StagingMount> {
        match std::fs::create_dir(at) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(e).with_context(|| format!("cannot create {}", at.display()));
            }
            _ => {}
        }
        let staged = StagingMount {
            path: at.to_path_buf(),
            hold: false,
        };
        let tree = rustix::mount::open_tree(
            root,
            "",
            OpenTreeFlags::OPEN_TREE_CLONE
                | OpenTreeFlags::OPEN_TREE_CLOEXEC
                | OpenTreeFlags::AT_EMPTY_PATH,
        )
        .context("cannot clone the tmpfs mount")?;
        rustix::mount::move_mount(
            tree.as_fd(),
            "",
            CWD,
            at,
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )
        .with_context(|| format!("cannot mount the tmpfs also at {}", at.display()))?;
        Ok(staged)
    }

    /// Whether to leave it mounted when this value goes.
    pub fn hold(&mut self, yes: bool) {
        self.hold = yes;
    }
}

impl Drop for StagingMount {
    fn drop(&mut self) {
        if !self.hold {
            let _ =
                rustix::mount::unmount(&self.path, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW);
            let _ = std::fs::remove_dir(&self.path);
        }
    }
}

/// Change the size of the tmpfs at `dir` live, leaving every other option and
/// the per-mount flags alone (unlike `mount -o remount`, which resets flags it
/// is not given).
pub fn resize(dir: &Path, size: &str) -> Result<()> {
    let fs = rustix::mount::fspick(
        CWD,
        dir,
        FsPickFlags::FSPICK_CLOEXEC | FsPickFlags::FSPICK_SYMLINK_NOFOLLOW,
    )
    .with_context(|| {
        format!(
            "cannot open the filesystem at {} for reconfiguring",
            dir.display()
        )
    })?;
    rustix::mount::fsconfig_set_string(&fs, "size", size)
        .with_context(|| format!("tmpfs rejected size={size}"))?;
    rustix::mount::fsconfig_reconfigure(&fs).with_context(|| {
        format!(
            "cannot resize {} to {size} (is more than that in use?)",
            dir.display()
        )
    })
}

pub fn unmount(dir: &Path, lazy: bool) -> Result<()> {
    let flags = if lazy {
        UnmountFlags::DETACH | UnmountFlags::NOFOLLOW
    } else {
        UnmountFlags::NOFOLLOW
    };
    rustix::mount::unmount(dir, flags).with_context(|| format!("cannot unmount {}", dir.display()))
}

/// The directory that `top` (mounted at `dir`) hides, opened through a
/// private non-recursive clone of the mount below: the clone carries no
/// submounts, so `dir` in it is the plain directory on disk.
pub struct Underlying {
    _clone: OwnedFd,
    pub dir: OwnedFd,
}

pub fn open_underlying(mounts: &[MountInfo], top: &MountInfo, dir: &Path) -> Result<Underlying> {
    let parent = mounts
        .iter()
        .find(|m| m.mount_id == top.parent_id)
        .with_context(|| format!("cannot find the mount below {} in mountinfo", dir.display()))?;
    if parent.mount_point == dir {
        bail!(
            "{} is a mount stacked on another mount at the same place ({}); copy the data by hand",
            dir.display(),
            parent.fstype
        );
    }
    let rel = dir.strip_prefix(&parent.mount_point).with_context(|| {
        format!(
            "{} is not under {}",
            dir.display(),
            parent.mount_point.display()
        )
    })?;
    let clone = rustix::mount::open_tree(
        CWD,
        &parent.mount_point,
        OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )
    .with_context(|| format!("cannot clone the mount at {}", parent.mount_point.display()))?;
    let rel: &Path = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let d = rustix::fs::openat(
        &clone,
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open the directory underneath {}", dir.display()))?;
    Ok(Underlying {
        _clone: clone,
        dir: d,
    })
}

fn under(p: &Path, dir: &Path) -> bool {
    p == dir || p.starts_with(dir)
}

/// Every process under `root`'s /proc but this one.
fn other_processes(root: &Sysroot) -> impl Iterator<Item = u32> {
    let me = std::process::id();
    proc::pids(root).into_iter().filter(move |&p| p != me)
}

/// The open files of `pid` that lie under `dir`, as (fd, path), through the
/// one walk of /proc/PID/fd.
fn fds_under(root: &Sysroot, pid: u32, dir: &Path) -> Vec<(u32, PathBuf)> {
    let mut v = Vec::new();
    procfd::each_fd(root, pid, |_, fd, _, t| {
        let (t, _, _) = procfd::parse_link(t);
        if t.is_absolute() && under(&t, dir) {
            v.push((fd, t));
        }
    });
    v
}

fn proc_use(root: &Sysroot, pid: u32, mut uses: Vec<String>) -> ProcUse {
    uses.truncate(5);
    ProcUse {
        pid,
        comm: proc::name(root, pid).unwrap_or_default(),
        uses,
    }
}

/// Processes whose cwd, root or open files are under `dir`, from
/// `/proc/*/{cwd,root,fd/*}`. Processes we may not inspect are skipped.
pub fn users_of(root: &Sysroot, dir: &Path) -> Vec<ProcUse> {
    let mut out = Vec::new();
    for pid in other_processes(root) {
        let mut uses = Vec::new();
        for what in ["cwd", "root"] {
            if let Ok(t) = std::fs::read_link(root.path(format!("/proc/{pid}/{what}")))
                && under(&t, dir)
                && !(what == "root" && t == Path::new("/"))
            {
                uses.push(what.to_string());
            }
        }
        for (fd, t) in fds_under(root, pid, dir) {
            uses.push(format!("fd {fd}: {}", safe_path(&t)));
        }
        if !uses.is_empty() {
            out.push(proc_use(root, pid, uses));
        }
    }
    out.sort_by_key(|p| p.pid);
    out
}

/// Processes holding a file under `dir` open for writing (O_WRONLY or
/// O_RDWR in `/proc/PID/fdinfo/N`), each with those files.
pub fn writers_of(root: &Sysroot, dir: &Path) -> Vec<ProcUse> {
    let mut out = Vec::new();
    for pid in other_processes(root) {
        let mut uses = Vec::new();
        for (fd, t) in fds_under(root, pid, dir) {
            let info = std::fs::read_to_string(root.path(format!("/proc/{pid}/fdinfo/{fd}")))
                .unwrap_or_default();
            let flags = info
                .lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
                .unwrap_or(0);
            // O_ACCMODE: 1 write-only, 2 read-write.
            if flags & 3 != 0 && t.is_file() {
                uses.push(format!("fd {fd} writes {}", safe_path(&t)));
            }
        }
        if !uses.is_empty() {
            out.push(proc_use(root, pid, uses));
        }
    }
    out.sort_by_key(|p| p.pid);
    out
}

/// Whether this kernel's tmpfs takes per-user/per-group quotas: asked of
/// the kernel itself, because the release alone does not say (Linux 6.6
/// added them, but only with CONFIG_TMPFS_QUOTA). A private filesystem
/// context is opened and configured, never created, so nothing is mounted.
pub fn probe_tmpfs_quota() -> plan::Support {
    let release = kernel_release();
    let fs = match rustix::mount::fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC) {
        Ok(fs) => fs,
        Err(e) => return plan::Support::Unknown(format!("fsopen(tmpfs) failed: {e}")),
    };
    match rustix::mount::fsconfig_set_flag(&fs, "usrquota") {
        Ok(()) => plan::Support::Yes,
        // The kernel explains a refused parameter in the context's log
        // ("e tmpfs: Unknown parameter 'usrquota'"); quote it when there.
        Err(e) => {
            let mut buf = [0u8; 256];
            let said = match rustix::io::read(&fs, &mut buf) {
                Ok(n) if n > 0 => format!(
                    "the kernel says \"{}\"",
                    String::from_utf8_lossy(&buf[..n]).trim()
                ),
                _ => format!("fsconfig(usrquota) failed: {e}"),
            };
            plan::Support::No(format!(
                "Linux {release} has no tmpfs quotas ({said}): they need Linux 6.6+ built with CONFIG_TMPFS_QUOTA"
            ))
        }
    }
}

/// The running kernel's release, e.g. `6.18.0-1-amd64`.
pub fn kernel_release() -> String {
    rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned()
}
