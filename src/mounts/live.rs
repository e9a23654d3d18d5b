//! The live side: resizing tmpfs mounts, a staging clone, reaching the
//! directory underneath a mount.

use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rustix::fs::CWD;
use rustix::mount::{FsOpenFlags, FsPickFlags, MoveMountFlags, OpenTreeFlags};

use super::plan;
use crate::sys::unmount::{self, At, How};

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
            let _ = unmount::unmount(At::Dir(&self.path), How::Detach);
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
