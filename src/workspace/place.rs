//! Where a run's scratch lives: the anchor a private tmpfs is mounted over,
//! and the base directory of a plain-directory scratch. Both are used only
//! when they belong to the caller alone (mode 0700, not a symlink): another
//! user who could write there could swap the scratch for a symlink under
//! CMD.

use std::path::{Path, PathBuf};

use std::os::unix::fs::PermissionsExt;

use crate::sys::statfs;
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
    let is_ram =
        |p: &Path| rustix::fs::statfs(p).is_ok_and(|st| statfs::is_ram_fs_type(st.f_type as u64));
    for p in own {
        match ensure_private_dir(&p, euid).and_then(|()| private_to(&p, euid)) {
            Ok(()) => {
                if is_ram(&p) {
                    return Ok(p);
                }
                usable.get_or_insert(p);
            }
            Err(e) => errs.push(e),
        }
    }
    // Another user made our directory first (or it is on disk): /dev/shm
    // itself still keeps every promise. Its sticky bit stops anyone but us
    // and root from renaming or removing the 0700 scratch made in it.
    if shared_sticky(Path::new(SHM)).is_ok() && is_ram(Path::new(SHM)) {
        if !errs.is_empty() {
            notes.push(format!(
                "{}; the scratch is made directly in {SHM} for this run",
                errs.join("; ")
            ));
        }
        return Ok(PathBuf::from(SHM));
    }
    match usable {
        Some(p) => {
            notes.push(format!(
                "{} is not on tmpfs and {SHM} is not usable: the scratch is NOT RAM-backed",
                p.display()
            ));
            Ok(p)
        }
        None => Err(anyhow::anyhow!(
            "no place for the scratch: {}",
            errs.join("; ")
        )),
    }
}

/// The shared RAM directory the per-user places are made in.
const SHM: &str = "/dev/shm";

/// Ok when `p` is root's directory with the sticky bit, as /dev/shm and /tmp
/// are: anyone can add a name, nobody can rename or remove another's.
fn shared_sticky(p: &Path) -> std::result::Result<(), String> {
    let st = rustix::fs::lstat(p).map_err(|e| format!("{}: {e}", p.display()))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR || st.st_uid != 0 || st.st_mode & 0o1000 == 0 {
        return Err(format!(
            "{} is not root's sticky directory (mode {:o}, uid {})",
            p.display(),
            st.st_mode & 0o7777,
            st.st_uid
        ));
    }
    Ok(())
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

/// The directory the private tmpfs is mounted over: in the namespace
/// tmpfsctl was started in, it stays an empty directory.
#[derive(Debug, Clone)]
pub(super) struct Anchor {
    pub path: PathBuf,
    /// Made for this run alone (the fixed one was taken): removed at the end.
    pub for_this_run: bool,
}

/// The fixed per-user anchor, created once (0700) and checked (owner, mode,
/// not a link) on every run. When another user made it first, a fresh 0700
/// directory with a random name in /dev/shm serves this run instead (said in
/// `notes`, with what to remove), so squatting the name blocks nothing.
pub(super) fn anchor_dir(
    euid: rustix::process::Uid,
    notes: &mut Vec<String>,
) -> std::result::Result<Anchor, String> {
    let mut candidates = Vec::new();
    if euid.is_root() {
        candidates.push(PathBuf::from("/run/tmpfsctl"));
    } else if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && x.is_absolute()
        && private_to(&x, euid).is_ok()
    {
        candidates.push(x.join("tmpfsctl"));
    }
    candidates.push(PathBuf::from(format!("{SHM}/tmpfsctl-{}", euid.as_raw())));
    let mut errs = Vec::new();
    for c in candidates {
        match ensure_private_dir(&c, euid) {
            Ok(()) => {
                return Ok(Anchor {
                    path: c,
                    for_this_run: false,
                });
            }
            Err(e) => errs.push(e),
        }
    }
    shared_sticky(Path::new(SHM)).map_err(|e| format!("{}; {e}", errs.join("; ")))?;
    let fresh = tempfile::Builder::new()
        .prefix(&format!("tmpfsctl-{}-anchor-", euid.as_raw()))
        .rand_bytes(12)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(SHM)
        .map_err(|e| {
            format!(
                "{}; cannot create a directory in {SHM}: {e}",
                errs.join("; ")
            )
        })?
        .keep();
    // Checked like the fixed one: made by us just now, but verified anyway.
    ensure_private_dir(&fresh, euid)?;
    notes.push(format!(
        "{}; using {} for this run",
        errs.join("; "),
        fresh.display()
    ));
    Ok(Anchor {
        path: fresh,
        for_this_run: true,
    })
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
            "{} belongs to uid {}, not to you (as root: rm -r {})",
            p.display(),
            st.st_uid,
            crate::term::shell_path(p)
        ));
    }
    if st.st_mode & 0o077 != 0 {
        rustix::fs::chmod(p, FsMode::from_raw_mode(0o700))
            .map_err(|e| format!("chmod 0700 {}: {e}", p.display()))?;
    }
    Ok(())
}
