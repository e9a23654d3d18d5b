//! Where a run's scratch lives: the anchor a private tmpfs is mounted over,
//! and the base directory of a plain-directory scratch. Both are used only
//! when they belong to the caller alone (mode 0700, not a symlink): another
//! user who could write there could swap the scratch for a symlink under
//! CMD.

use std::path::{Path, PathBuf};

use anyhow::Result;
use rustix::fs::{Mode as FsMode, OFlags};

/// Where a plain-directory scratch is made: `$XDG_RUNTIME_DIR` only when it
/// is yours and nobody else's (owned by you, mode 0700: its owner could
/// otherwise swap the scratch for a symlink under CMD, or `sudo -E` would
/// hand root another user's directory), else a private directory of
/// tmpfsctl's (`/run/tmpfsctl-scratch` for root, `/dev/shm/tmpfsctl-UID-scratch`
/// otherwise), created 0700 and checked the same way.
// f_type is i64 on some targets and not others.
#[allow(clippy::unnecessary_cast)]
pub(super) fn directory_base(
    euid: rustix::process::Uid,
    notes: &mut Vec<String>,
) -> Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && x.is_absolute()
    {
        match private_to(&x, euid) {
            Ok(()) => return Ok(x),
            Err(why) => notes.push(format!("XDG_RUNTIME_DIR not used: {why}")),
        }
    }
    // /run is root's own (nobody else can plant a name there), but not
    // tmpfs everywhere; /dev/shm is.
    let mut own = Vec::new();
    if euid.is_root() {
        own.push(PathBuf::from("/run/tmpfsctl-scratch"));
    }
    own.push(PathBuf::from(format!(
        "/dev/shm/tmpfsctl-{}-scratch",
        euid.as_raw()
    )));
    let mut usable = None;
    let mut errs = Vec::new();
    for p in own {
        match ensure_private_dir(&p, euid).and_then(|()| private_to(&p, euid)) {
            Ok(()) => {
                let ram = rustix::fs::statfs(&p)
                    .is_ok_and(|st| crate::sys::statfs::is_ram_fs_type(st.f_type as u64));
                if ram {
                    return Ok(p);
                }
                usable.get_or_insert(p);
            }
            Err(e) => errs.push(e),
        }
    }
    usable.ok_or_else(|| anyhow::anyhow!("no place for the scratch: {}", errs.join("; ")))
}

/// Ok when `p` (not followed if a symlink) is a directory owned by `euid`
/// that nobody else can write or list (mode 0700 or stricter).
fn private_to(p: &Path, euid: rustix::process::Uid) -> std::result::Result<(), String> {
    let st = rustix::fs::lstat(p).map_err(|e| format!("{}: {e}", p.display()))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(format!("{} is not a directory", p.display()));
    }
    if st.st_uid != euid.as_raw() {
        return Err(format!(
            "{} belongs to uid {}, not to uid {}",
            p.display(),
            st.st_uid,
            euid.as_raw()
        ));
    }
    if st.st_mode & 0o077 != 0 {
        return Err(format!(
            "{} has mode {:o}, not 0700",
            p.display(),
            st.st_mode & 0o7777
        ));
    }
    Ok(())
}

/// The fixed per-user directory the private tmpfs is mounted over. It is
/// created once (0700) and stays empty in the normal namespace.
pub(super) fn anchor_dir(euid: rustix::process::Uid) -> std::result::Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if euid.is_root() {
        candidates.push(PathBuf::from("/run/tmpfsctl"));
    } else if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && x.is_absolute()
        && private_to(&x, euid).is_ok()
    {
        candidates.push(x.join("tmpfsctl"));
    }
    candidates.push(PathBuf::from(format!(
        "/dev/shm/tmpfsctl-{}",
        euid.as_raw()
    )));
    let mut errs = Vec::new();
    for c in candidates {
        match ensure_private_dir(&c, euid) {
            Ok(()) => return Ok(c),
            Err(e) => errs.push(e),
        }
    }
    Err(errs.join("; "))
}

fn ensure_private_dir(p: &Path, euid: rustix::process::Uid) -> std::result::Result<(), String> {
    match rustix::fs::mkdir(p, FsMode::from_raw_mode(0o700)) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::EXIST => {}
        Err(e) => return Err(format!("cannot create {}: {e}", p.display())),
    }
    // Opened without following a symlink, then checked through the fd: a
    // planted symlink or someone else's directory is refused, not used.
    let fd = rustix::fs::open(
        p,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        FsMode::empty(),
    )
    .map_err(|e| format!("{} is not a plain directory: {e}", p.display()))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| format!("stat {}: {e}", p.display()))?;
    if st.st_uid != euid.as_raw() {
        return Err(format!(
            "{} belongs to uid {}, not to you; remove it",
            p.display(),
            st.st_uid
        ));
    }
    if st.st_mode & 0o077 != 0 {
        rustix::fs::chmod(p, FsMode::from_raw_mode(0o700))
            .map_err(|e| format!("chmod 0700 {}: {e}", p.display()))?;
    }
    Ok(())
}
