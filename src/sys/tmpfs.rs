//! The one way tmpfsctl creates a tmpfs (`unmount` is the one way it takes
//! one away): detached (new mount API), so it has
//! no path until it is attached and nobody can see or write into it half
//! filled, and `nosuid,nodev` unless the caller lifts one of them by name. A
//! tmpfs is where other users' files land (a shared /tmp, a restored DIR):
//! without the two flags a set-uid file or a device node put there works.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use anyhow::{Context, Result, bail};
use rustix::fs::{CWD, Mode, OFlags};
use rustix::mount::{FsMountFlags, FsOpenFlags, MountAttrFlags, MoveMountFlags};

use super::resolve::OpenedDir;

/// Which of the two guards every tmpfs gets are left off. The default keeps
/// both; only an explicit request (a flag the user typed) lifts one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allow {
    /// Set-uid/set-gid bits take effect (no `nosuid`).
    pub suid: bool,
    /// Device nodes open the device (no `nodev`).
    pub dev: bool,
}

impl Allow {
    /// The mount attributes of the guards left on.
    pub fn attrs(self) -> MountAttrFlags {
        let mut attrs = MountAttrFlags::empty();
        if !self.suid {
            attrs |= MountAttrFlags::MOUNT_ATTR_NOSUID;
        }
        if !self.dev {
            attrs |= MountAttrFlags::MOUNT_ATTR_NODEV;
        }
        attrs
    }
}

/// A tmpfs that exists only as a file descriptor: no path, so no other process
/// can see or write into it, and if we die it vanishes with the fd.
pub struct Detached {
    pub mount: OwnedFd,
    /// The root directory of the new filesystem, for copying into.
    pub root: OwnedFd,
}

impl Detached {
    /// The mount of a file system context already created
    /// (`fsconfig_create`), with `attrs`, and its root opened; `what` names
    /// the file system in the error.
    pub fn from_fs(fs: &OwnedFd, attrs: MountAttrFlags, what: &str) -> Result<Detached> {
        let mount = rustix::mount::fsmount(fs, FsMountFlags::FSMOUNT_CLOEXEC, attrs)
            .context("fsmount failed")?;
        let root = rustix::fs::openat(
            &mount,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .with_context(|| format!("cannot open the new {what}"))?;
        Ok(Detached { mount, root })
    }
}

/// `mount -t tmpfs -o OPTIONS`, but detached. Flags (nosuid, nodev, noexec)
/// are per-mount attributes; everything else goes to the superblock.
/// `nosuid` and `nodev` are added whether OPTIONS names them or not, unless
/// `allow` lifts them.
pub fn mount_detached(options: &str, allow: Allow) -> Result<Detached> {
    let fs = rustix::mount::fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC)
        .context("fsopen(tmpfs) failed; this needs Linux 5.2+ and CAP_SYS_ADMIN")?;
    rustix::mount::fsconfig_set_string(&fs, "source", "tmpfs").context("fsconfig source")?;
    let mut attrs = allow.attrs();
    for o in options.split(',').filter(|o| !o.is_empty()) {
        match o {
            "nosuid" => attrs |= MountAttrFlags::MOUNT_ATTR_NOSUID,
            "nodev" => attrs |= MountAttrFlags::MOUNT_ATTR_NODEV,
            "noexec" => attrs |= MountAttrFlags::MOUNT_ATTR_NOEXEC,
            "rw" | "defaults" => {}
            _ => match o.split_once('=') {
                Some((k, v)) => rustix::mount::fsconfig_set_string(&fs, k, v),
                None => rustix::mount::fsconfig_set_flag(&fs, o),
            }
            .with_context(|| {
                format!("tmpfs rejected the option {o:?} (is the kernel new enough for it?)")
            })?,
        }
    }
    rustix::mount::fsconfig_create(&fs).context("creating the tmpfs failed")?;
    Detached::from_fs(&fs, attrs, "tmpfs")
}

/// Attach a detached mount at `dir`, hiding what is there (MS_MOVE semantics:
/// one step, no moment where `dir` is empty).
pub fn attach(d: &Detached, dir: &Path) -> Result<()> {
    rustix::mount::move_mount(
        d.mount.as_fd(),
        "",
        CWD,
        dir,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
    .with_context(|| format!("cannot move the new tmpfs onto {}", dir.display()))
}

/// Attach a detached mount on the directory opened at the start (the
/// descriptor, not its name), then check it sits there: the name in the
/// parent that was opened now shows the new filesystem's root. If it does
/// not (the directory was moved meanwhile), the mount is taken away again.
pub fn attach_at(d: &Detached, at: &OpenedDir) -> Result<()> {
    rustix::mount::move_mount(
        d.mount.as_fd(),
        "",
        at.fd.as_fd(),
        "",
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
    )
    .with_context(|| format!("cannot move the new tmpfs onto {}", at.path.display()))?;
    let root = rustix::fs::fstat(&d.root)?;
    let here = rustix::fs::statat(&at.parent, &at.name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok();
    if here.is_none_or(|h| (h.st_dev, h.st_ino) != (root.st_dev, root.st_ino)) {
        let undone = detach(d).is_ok();
        bail!(
            "{} was moved or replaced while tmpfsctl worked on it; the new tmpfs {}",
            at.path.display(),
            if undone {
                "was taken away again"
            } else {
                "could not be taken away: check `findmnt` and unmount it"
            }
        );
    }
    Ok(())
}

/// Unmount (lazily) a mount this process attached, found through its root
/// descriptor rather than by a path someone else could change.
pub fn detach(d: &Detached) -> Result<()> {
    use super::unmount::{At, How, unmount};
    unmount(
        At::Root(d.root.as_fd(), Path::new("the new tmpfs")),
        How::Detach,
    )
    .map_err(|e| anyhow::Error::new(e.errno()).context("cannot unmount the new tmpfs"))?;
    Ok(())
}

/// Whether this kernel's tmpfs takes a mount option (`noswap`,
/// `usrquota`, `huge=within_size`): asked of a filesystem context that is
/// never mounted, so nothing is made. None when the context cannot be
/// opened (not root, or a kernel before 5.2): unknown, not absent.
pub fn accepts(option: &str) -> Option<bool> {
    let fs = rustix::mount::fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC).ok()?;
    Some(
        match option.split_once('=') {
            Some((k, v)) => rustix::mount::fsconfig_set_string(&fs, k, v),
            None => rustix::mount::fsconfig_set_flag(&fs, option),
        }
        .is_ok(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags_of(d: &Detached) -> rustix::fs::StatVfsMountFlags {
        rustix::fs::fstatvfs(&d.root).unwrap().f_flag
    }

    #[test]
    fn nosuid_and_nodev_unless_lifted() {
        use rustix::fs::StatVfsMountFlags as F;
        if !rustix::process::geteuid().is_root() {
            crate::skip!("cannot create a tmpfs here (needs root)");
        }
        // As root an error is the function under test failing, not a skip.
        let d = mount_detached("size=1M", Allow::default()).unwrap();
        assert!(flags_of(&d).contains(F::NOSUID | F::NODEV));
        let d = mount_detached(
            "size=1M",
            Allow {
                suid: true,
                dev: false,
            },
        )
        .unwrap();
        assert!(!flags_of(&d).contains(F::NOSUID));
        assert!(flags_of(&d).contains(F::NODEV));
        let d = mount_detached(
            "size=1M,nosuid",
            Allow {
                suid: true,
                dev: true,
            },
        )
        .unwrap();
        assert!(flags_of(&d).contains(F::NOSUID));
        assert!(!flags_of(&d).contains(F::NODEV));
    }
}
