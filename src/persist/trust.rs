//! A store is trusted only if nobody but root (or, for an unprivileged
//! persist, the caller) can change it: restore recreates whatever a
//! generation's manifest names, set-uid files and device nodes included, so
//! whoever can write the store can make root create them.
//!
//! The store is opened once, by a path with no symbolic link in it (openat2
//! with `RESOLVE_NO_SYMLINKS`, see `sys::resolve`), and every later access
//! goes through that descriptor. Refused, before anything is created: a
//! symlink anywhere in the path; a store owned by another user, or writable
//! by group or others; an ancestor another user could rename things in
//! (the rule `apply` uses for DIR, sticky root-owned directories such as
//! /var/tmp excepted); a store on RAM-backed storage: tmpfs, ramfs, a RAM
//! disk (zram, brd) or a loop device whose backing file is on one of those;
//! a store inside DIR or DIR inside it. `restore` also refuses a store whose
//! owner, group or mode changed since `enable` recorded them.

use std::ffi::OsStr;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use rustix::fs::{AtFlags, Mode, OFlags};
use serde::{Deserialize, Serialize};

use crate::sys::resolve::{self, OpenedDir, ResolveError, lexical_absolute};
use crate::sys::statfs::is_ram_fs_type;
use crate::term::safe_path;

/// What `enable` recorded about DIR's setup beyond its paths: the store's
/// owner and mode (restore compares them) and the tmpfs's mount flags.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Trust {
    pub store_uid: u32,
    pub store_gid: u32,
    /// Permission bits (07777) of the store directory.
    pub store_mode: u32,
    /// The tmpfs is mounted without `nosuid` (`--allow-suid`).
    #[serde(default)]
    pub allow_suid: bool,
    /// The tmpfs is mounted without `nodev` (`--allow-dev`).
    #[serde(default)]
    pub allow_dev: bool,
}

/// A store directory that passed every check, open for reading.
#[derive(Debug)]
pub struct TrustedStore {
    pub path: PathBuf,
    pub fd: OwnedFd,
}

/// Open the existing store at `path`, checked.
pub fn open(path: &Path) -> Result<TrustedStore> {
    let abs = lexical_absolute(path)?;
    let d = resolve::open_dir(Path::new("/"), &abs).map_err(|e| refusal(path, &abs, e))?;
    check_opened(&d)
}

/// Open the store at `path`, creating what is missing of it (mode 0700 for
/// the store, 0755 for directories above it) only after the existing part
/// of the path passed the checks; if the finished store then fails them,
/// what was created is removed again.
pub fn create(path: &Path) -> Result<TrustedStore> {
    let abs = lexical_absolute(path)?;
    let mut existing = abs.clone();
    let base = loop {
        match resolve::open_dir(Path::new("/"), &existing) {
            Ok(d) => break d,
            Err(ResolveError::NotFound) if existing.pop() => {}
            Err(e) => return Err(refusal(path, &abs, e)),
        }
    };
    if base.path == abs {
        return check_opened(&base);
    }
    check_chain(path, &base)?;
    check_storage(path, &base.fd)?;
    let missing: Vec<&OsStr> = abs
        .strip_prefix(&base.path)
        .map(|r| r.iter().collect())
        .unwrap_or_default();
    let mut parent = rustix::fs::openat(
        &base.fd,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    // Each directory created, as (its parent, its name), to take back.
    let mut made: Vec<(OwnedFd, &OsStr)> = Vec::new();
    fn undo(made: Vec<(OwnedFd, &OsStr)>) {
        for (p, name) in made.into_iter().rev() {
            let _ = rustix::fs::unlinkat(&p, name, AtFlags::REMOVEDIR);
        }
    }
    for (i, name) in missing.iter().enumerate() {
        let mode = if i + 1 == missing.len() { 0o700 } else { 0o755 };
        if let Err(e) = rustix::fs::mkdirat(&parent, *name, Mode::from_raw_mode(mode)) {
            undo(made);
            bail!("store {}: cannot create it: {e}", safe_path(path));
        }
        let next = rustix::fs::openat(
            &parent,
            *name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        );
        made.push((parent, name));
        match next {
            Ok(fd) => parent = fd,
            Err(e) => {
                undo(made);
                bail!(
                    "store {}: cannot open what was just created: {e}",
                    safe_path(path)
                );
            }
        }
    }
    match open(path) {
        Ok(t) => Ok(t),
        Err(e) => {
            undo(made);
            Err(e)
        }
    }
}

/// The store and DIR must be apart: a store inside DIR would be hidden by
/// DIR's tmpfs and copied into itself; DIR inside the store would be
/// overwritten by the store's own bookkeeping.
pub fn check_placement(store: &Path, dir: &Path) -> Result<()> {
    let s = lexical_absolute(store)?;
    if s.starts_with(dir) || dir.starts_with(&s) {
        bail!(
            "store {} and {} are inside one another; give a store outside DIR (and not above it)",
            safe_path(store),
            safe_path(dir)
        );
    }
    Ok(())
}

/// What `enable` records about the store it accepted (open as `fd`).
pub fn record(fd: BorrowedFd<'_>, allow_suid: bool, allow_dev: bool) -> Result<Trust> {
    let st = rustix::fs::fstat(fd)?;
    Ok(Trust {
        store_uid: st.st_uid,
        store_gid: st.st_gid,
        store_mode: st.st_mode & 0o7777,
        allow_suid,
        allow_dev,
    })
}

/// Refuse a store (open as `fd`) whose owner, group or mode is not what
/// `enable` recorded: someone changed or replaced it since, and a restore
/// would create as root whatever it now holds.
pub fn check_unchanged(shown: &Path, fd: BorrowedFd<'_>, recorded: Option<&Trust>) -> Result<()> {
    let Some(r) = recorded else {
        return Ok(());
    };
    let now = record(fd, r.allow_suid, r.allow_dev)?;
    if (now.store_uid, now.store_gid, now.store_mode) != (r.store_uid, r.store_gid, r.store_mode) {
        bail!(
            "refusing store {}: it is now owner {} group {} mode {:o}, but was owner {} group {} mode {:o} \
             when `persist enable` accepted it; someone changed or replaced it. Check what it holds; \
             if the change was yours, run `tmpfsctl persist disable` and `enable` again",
            safe_path(shown),
            now.store_uid,
            now.store_gid,
            now.store_mode,
            r.store_uid,
            r.store_gid,
            r.store_mode
        );
    }
    Ok(())
}

/// Make the tmpfs already on DIR (whose root is `root`; a new one is made
/// with these flags by `sys::tmpfs`) `nosuid,nodev` before a restore loads
/// into it, unless `enable` was given `--allow-suid` / `--allow-dev`: a
/// store's manifest can name set-uid
/// files and device nodes, and on a mount that honours them whoever forged
/// one would gain root.
pub fn restrict_mount(root: BorrowedFd<'_>, t: Option<&Trust>) -> Result<()> {
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const NOSUID: u64 = 0x2;
    const NODEV: u64 = 0x4;
    let (suid, dev) = t.map_or((false, false), |t| (t.allow_suid, t.allow_dev));
    let mut a = MountAttr {
        attr_set: 0,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    for (allowed, bit) in [(suid, NOSUID), (dev, NODEV)] {
        if allowed {
            a.attr_clr |= bit;
        } else {
            a.attr_set |= bit;
        }
    }
    // SAFETY: mount_setattr(2) reads `a` (size given) and the empty path.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            root.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            &a as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r != 0 {
        bail!(
            "cannot make persist's tmpfs nosuid,nodev (mount_setattr: {}); Linux 5.12+ is needed",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

fn refusal(shown: &Path, abs: &Path, e: ResolveError) -> anyhow::Error {
    let sp = safe_path(shown);
    match e {
        ResolveError::NotFound => anyhow::anyhow!(
            "store {sp}: cannot open it: no such directory (was `tmpfsctl persist enable` run for this directory?)"
        ),
        ResolveError::NotADirectory => {
            anyhow::anyhow!("store {sp}: is not a directory; give a directory for the store")
        }
        ResolveError::Symlink { link, target } => anyhow::anyhow!(
            "refusing store {sp}: {} is a symbolic link to {}; a store's path may hold no link \
             (whoever can change it could point root's writes, or a restore, elsewhere): give the real path, e.g. {}",
            safe_path(&link),
            safe_path(&target),
            safe_path(&target.join(abs.strip_prefix(&link).unwrap_or(Path::new(""))))
        ),
        ResolveError::Moved => anyhow::anyhow!(
            "store {sp}: was renamed or replaced while being opened; make sure nobody is moving it and retry"
        ),
        ResolveError::Io(e) => anyhow::anyhow!("store {sp}: cannot be opened: {e}"),
    }
}

fn trusted_uids() -> Vec<u32> {
    vec![rustix::process::geteuid().as_raw()]
}

/// The store itself: owned by root or the caller, writable by nobody else.
fn check_opened(d: &OpenedDir) -> Result<TrustedStore> {
    let shown = d.path.as_path();
    let st = rustix::fs::fstat(&d.fd)?;
    let uid_ok = st.st_uid == 0 || trusted_uids().contains(&st.st_uid);
    if !uid_ok {
        bail!(
            "refusing store {}: it belongs to uid {}, who could replace what it holds (a restore \
             recreates it as root); give a directory owned by root{}",
            safe_path(shown),
            st.st_uid,
            caller_hint()
        );
    }
    let mode = st.st_mode & 0o7777;
    if mode & 0o022 != 0 {
        bail!(
            "refusing store {}: mode {mode:o} lets {} write into it; `chmod 700 {}` (only its owner \
             may change a store)",
            safe_path(shown),
            if mode & 0o002 != 0 {
                "everyone"
            } else {
                "its group"
            },
            safe_path(shown)
        );
    }
    check_chain(shown, d)?;
    check_storage(shown, &d.fd)?;
    let fd = rustix::fs::openat(
        &d.fd,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok(TrustedStore {
        path: d.path.clone(),
        fd,
    })
}

fn caller_hint() -> String {
    let me = rustix::process::geteuid();
    if me.is_root() {
        String::new()
    } else {
        format!(" or by you (uid {})", me.as_raw())
    }
}

/// `d` and every directory above it: none another user could rename things in.
fn check_chain(shown: &Path, d: &OpenedDir) -> Result<()> {
    if let Some(why) = resolve::untrusted_writer(Path::new("/"), d, &trusted_uids()) {
        bail!(
            "refusing store {}: {why}, so the store could be swapped for another directory \
             (and root's restore would create what that one holds); give a store whose every \
             parent only root{} can change",
            safe_path(shown),
            caller_hint()
        );
    }
    Ok(())
}

/// The storage under the store must survive a reboot.
// f_type is i64 on some targets and not others.
#[allow(clippy::unnecessary_cast)]
fn check_storage(shown: &Path, fd: &OwnedFd) -> Result<()> {
    if is_ram_fs_type(rustix::fs::fstatfs(fd)?.f_type as u64) {
        bail!(
            "refusing store {}: it is on a RAM-backed filesystem (tmpfs/ramfs) and would not survive \
             a reboot; give a directory on a disk, e.g. /var/lib/tmpfsctl/persist/NAME",
            safe_path(shown)
        );
    }
    let dev = rustix::fs::fstat(fd)?.st_dev;
    if let Some(why) = ram_backed_device(dev, 0) {
        bail!(
            "refusing store {}: {why}, so it would not survive a reboot; give a directory on a disk",
            safe_path(shown)
        );
    }
    Ok(())
}

/// Why the block device `dev` keeps its data in RAM, if it does: a RAM disk
/// (zram, brd's ram0), a loop device whose backing file is on tmpfs/ramfs
/// or on such a device, or a device-mapper device built on one.
fn ram_backed_device(dev: u64, depth: u32) -> Option<String> {
    if depth > 8 {
        return None;
    }
    let (maj, min) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    let real = std::fs::canonicalize(&sys).ok()?;
    let name = real.file_name()?.to_string_lossy().into_owned();
    let brd = name
        .strip_prefix("ram")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if name.starts_with("zram") || brd {
        return Some(format!("it is on /dev/{name}, a RAM disk"));
    }
    // A partition's loop and slave information sits on its whole disk.
    for base in [real.clone(), real.parent()?.to_path_buf()] {
        if let Ok(bf) = std::fs::read_to_string(base.join("loop/backing_file")) {
            let bf = bf.trim_end_matches('\n');
            let disk = base.file_name()?.to_string_lossy().into_owned();
            if bf.ends_with(" (deleted)") {
                return Some(format!(
                    "it is on /dev/{disk}, a loop device whose backing file {} was deleted",
                    crate::term::safe(bf)
                ));
            }
            let p = Path::new(bf);
            #[allow(clippy::unnecessary_cast)]
            let on_ram = rustix::fs::statfs(p).is_ok_and(|s| is_ram_fs_type(s.f_type as u64));
            if on_ram {
                return Some(format!(
                    "it is on /dev/{disk}, a loop device whose backing file {} is on a RAM-backed \
                     filesystem (tmpfs/ramfs)",
                    safe_path(p)
                ));
            }
            let inner = rustix::fs::stat(p).ok()?.st_dev;
            return ram_backed_device(inner, depth + 1).map(|why| {
                format!(
                    "it is on /dev/{disk}, a loop device whose backing file {}: {why}",
                    safe_path(p)
                )
            });
        }
        if let Ok(rd) = std::fs::read_dir(base.join("slaves")) {
            for e in rd.flatten() {
                let Ok(t) = std::fs::read_to_string(e.path().join("dev")) else {
                    continue;
                };
                let Some((a, b)) = t.trim().split_once(':') else {
                    continue;
                };
                let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) else {
                    continue;
                };
                if let Some(why) = ram_backed_device(rustix::fs::makedev(a, b), depth + 1) {
                    return Some(why);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_owner_or_mode_is_refused_and_an_unrecorded_store_is_not_checked() {
        use std::os::fd::AsFd;
        let t = tempfile::tempdir().unwrap();
        let fd = rustix::fs::open(t.path(), OFlags::RDONLY, Mode::empty()).unwrap();
        let mut r = record(fd.as_fd(), false, false).unwrap();
        check_unchanged(t.path(), fd.as_fd(), Some(&r)).unwrap();
        check_unchanged(t.path(), fd.as_fd(), None).unwrap();
        r.store_mode ^= 0o050;
        let e = check_unchanged(t.path(), fd.as_fd(), Some(&r))
            .unwrap_err()
            .to_string();
        assert!(e.contains("someone changed or replaced it"), "{e}");
    }

    #[test]
    fn placement_refuses_either_inside_the_other() {
        let d = Path::new("/srv/hot");
        assert!(check_placement(Path::new("/srv/hot/st"), d).is_err());
        assert!(check_placement(Path::new("/srv"), d).is_err());
        assert!(check_placement(Path::new("/srv/hot-store"), d).is_ok());
    }
}
