//! The scratch directory itself: a private tmpfs mount (as root, or inside an
//! unprivileged user namespace), or where neither is allowed a 0700 directory
//! with an unguessable name whose cap can only be watched.
//!
//! Where the private mount lives: the calling process (tmpfsctl, which then
//! only supervises CMD) moves itself into a new mount namespace and mounts the
//! tmpfs over a fixed, per-user *anchor* directory (`/run/tmpfsctl` for root,
//! `$XDG_RUNTIME_DIR/tmpfsctl` or `/dev/shm/tmpfsctl-UID` otherwise). In the
//! normal namespace the anchor is always an empty directory: nothing is ever
//! created per run outside the namespace, so there is nothing to leave behind
//! when tmpfsctl is SIGKILLed — the kernel drops the mount with the namespace
//! once its last process exits, and CMD's processes die with tmpfsctl. Concurrent runs mount over
//! the same anchor, each in its own namespace, and cannot see each other.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rustix::fs::{Mode as FsMode, OFlags};
use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::thread::UnshareFlags;
use serde::Serialize;

use super::cleanup;

use crate::sys::du;
use crate::sys::statfs::{TMPFS_MAGIC, is_ram_fs_type};
use crate::sys::unmount::{self, At, How};
use crate::term::safe_path;

/// How the scratch is provided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Root: a tmpfs in a private mount namespace; the cap is enforced by the kernel.
    PrivateMount,
    /// Unprivileged: the same inside a new user namespace (CMD's uid is
    /// unchanged, but setuid programs such as sudo do not work inside).
    UserNamespace,
    /// Neither allowed: a 0700 directory under $XDG_RUNTIME_DIR or /dev/shm;
    /// the cap is only watched (soft) and a SIGKILLed tmpfsctl leaves it
    /// behind until the next run in the same place removes it.
    Directory,
}

impl Mode {
    pub fn describe(self) -> &'static str {
        match self {
            Mode::PrivateMount => "private tmpfs",
            Mode::UserNamespace => "private tmpfs in a user namespace",
            Mode::Directory => "plain directory, soft cap",
        }
    }

    /// True when the kernel enforces the size cap (CMD gets ENOSPC).
    pub fn cap_enforced(self) -> bool {
        !matches!(self, Mode::Directory)
    }
}

/// The default cap: half of what the kernel says is available without
/// swapping, so one runaway job cannot take the whole machine.
pub fn default_size(mem_available_bytes: u64) -> u64 {
    round_up_page(mem_available_bytes / 2)
}

pub const DEFAULT_SIZE_TEXT: &str = "50% of MemAvailable";

fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

pub fn round_up_page(b: u64) -> u64 {
    let p = page_size();
    b.div_ceil(p).saturating_mul(p)
}

/// Space used in the scratch, relative to the empty scratch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub used_bytes: u64,
    pub inodes: u64,
    /// Bytes CMD could still write (for a directory: free space of the filesystem under it).
    pub avail_bytes: u64,
    /// 0 also when the filesystem has no inode limit.
    pub inodes_free: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Raw {
    used: u64,
    inodes: u64,
    avail: u64,
    ifree: u64,
    size: u64,
    ftype: u64,
}

// statfs field types differ between architectures, hence the casts.
#[allow(clippy::unnecessary_cast)]
fn raw_of(s: &rustix::fs::StatFs) -> Raw {
    let bs = s.f_bsize as u64;
    Raw {
        used: (s.f_blocks as u64)
            .saturating_sub(s.f_bfree as u64)
            .saturating_mul(bs),
        inodes: (s.f_files as u64).saturating_sub(s.f_ffree as u64),
        avail: (s.f_bavail as u64).saturating_mul(bs),
        ifree: s.f_ffree as u64,
        size: (s.f_blocks as u64).saturating_mul(bs),
        ftype: s.f_type as u64,
    }
}

/// What the caller asks for.
#[derive(Debug, Clone)]
pub struct Spec {
    pub size_bytes: u64,
    /// False: go straight to a plain directory (`--no-namespace`).
    pub allow_private: bool,
}

/// A live scratch. Creating one in a private mode moves the *calling process*
/// into a new mount (and maybe user) namespace: it is meant for a process
/// whose remaining job is to run one command in it and clean up.
#[derive(Debug)]
pub struct Scratch {
    pub mode: Mode,
    pub path: PathBuf,
    /// The cap: the tmpfs size for private modes, the watched limit otherwise.
    pub size_bytes: u64,
    /// The filesystem holding the data is RAM-backed (always true for private modes).
    pub ram_backed: bool,
    pub notes: Vec<String>,
    /// Private modes: the mounted tmpfs root, so sampling is one fstatfs.
    dir: Option<OwnedFd>,
    /// Directory mode: what removal works from, taken before CMD ran.
    held: Option<Held>,
    /// Private modes: the anchor was made for this run alone (another user
    /// took the usual one) and is removed once unmounted.
    anchor_for_this_run: bool,
    base: Raw,
}

/// A plain-directory scratch as made: removed through these descriptors,
/// never through a path CMD could have changed.
#[derive(Debug)]
struct Held {
    parent: OwnedFd,
    name: OsString,
    /// Also holds the lock that tells a later run this scratch is in use.
    dir: OwnedFd,
    place: cleanup::Place,
    /// Canonical path, to find the mounts CMD made below it.
    real: PathBuf,
}

enum PrivError {
    /// The kernel or policy does not allow it; fall back to a directory.
    NotAllowed(String),
    Fatal(anyhow::Error),
}

impl Scratch {
    pub fn create(spec: &Spec) -> Result<Scratch> {
        if spec.size_bytes == 0 {
            bail!("size 0 would mean \"no limit\" to tmpfs; give a positive size such as 512M");
        }
        let mut notes = Vec::new();
        if spec.allow_private {
            match Self::private(spec) {
                Ok(s) => return Ok(s),
                Err(PrivError::Fatal(e)) => return Err(e),
                Err(PrivError::NotAllowed(why)) => notes.push(format!(
                    "no private mount possible ({why}); using a plain directory: the size cap is soft (watched, not enforced)"
                )),
            }
        } else {
            notes.push("plain directory as asked (--no-namespace): the size cap is soft (watched, not enforced)".into());
        }
        Self::directory(spec, notes)
    }

    fn private(spec: &Spec) -> std::result::Result<Scratch, PrivError> {
        let mut notes = Vec::new();
        let anchor = super::place::anchor_dir(rustix::process::geteuid(), &mut notes)
            .map_err(PrivError::NotAllowed)?;
        let r = Self::private_at(spec, anchor.path.clone());
        match r {
            Ok(mut s) => {
                s.anchor_for_this_run = anchor.for_this_run;
                s.notes = notes;
                Ok(s)
            }
            Err(e) => {
                if anchor.for_this_run {
                    let _ = std::fs::remove_dir(&anchor.path);
                }
                Err(e)
            }
        }
    }

    fn private_at(spec: &Spec, anchor: PathBuf) -> std::result::Result<Scratch, PrivError> {
        let euid = rustix::process::geteuid();
        let egid = rustix::process::getegid();
        let mut why = Vec::new();
        let mut mode = None;
        if euid.is_root() {
            // SAFETY: NEWNS only; no file-descriptor table is unshared.
            match unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWNS) } {
                Ok(()) => mode = Some(Mode::PrivateMount),
                Err(e) => why.push(format!("unshare(CLONE_NEWNS): {e}")),
            }
        }
        if mode.is_none() {
            // SAFETY: as above. CLONE_NEWUSER needs a single-threaded process,
            // which tmpfsctl is here (EINVAL otherwise, reported as a reason).
            match unsafe {
                rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNS)
            } {
                Ok(()) => {
                    map_ids(euid.as_raw(), egid.as_raw()).map_err(PrivError::Fatal)?;
                    mode = Some(Mode::UserNamespace);
                }
                Err(e) => why.push(format!("user namespace: {e}")),
            }
        }
        let Some(mode) = mode else {
            return Err(PrivError::NotAllowed(why.join("; ")));
        };
        // Nothing mounted from here on may reach the parent namespace, while
        // mounts appearing there still show up for CMD like for any process.
        rustix::mount::mount_change(
            "/",
            MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
        )
        .map_err(|e| {
            PrivError::Fatal(anyhow::anyhow!(
                "making / a slave mount in the new namespace: {e}"
            ))
        })?;
        // nr_inodes from the size: empty files cost no `size=` but pin
        // kernel memory each (see units::tmpfs_inodes_for for the bound).
        let data = format!(
            "size={},nr_inodes={},mode=0700",
            spec.size_bytes,
            crate::units::tmpfs_inodes_for(spec.size_bytes)
        );
        let data_c =
            std::ffi::CString::new(data.clone()).map_err(|e| PrivError::Fatal(e.into()))?;
        // The source names the supervising process, so a leftover (there
        // should be none) can be found in any /proc/PID/mountinfo.
        let source = format!("tmpfsctl-{}", std::process::id());
        match rustix::mount::mount(
            source.as_str(),
            &anchor,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            Some(data_c.as_c_str()),
        ) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::PERM || e == rustix::io::Errno::ACCESS => {
                return Err(PrivError::NotAllowed(format!(
                    "mount tmpfs on {}: {e}",
                    anchor.display()
                )));
            }
            Err(e) => {
                return Err(PrivError::Fatal(anyhow::anyhow!(
                    "mount -t tmpfs -o {data} on {}: {e}",
                    anchor.display()
                )));
            }
        }
        let dir = rustix::fs::open(
            &anchor,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            FsMode::empty(),
        )
        .map_err(|e| {
            PrivError::Fatal(anyhow::anyhow!(
                "opening the new scratch {}: {e}",
                anchor.display()
            ))
        })?;
        let st = rustix::fs::fstatfs(&dir).map_err(|e| PrivError::Fatal(e.into()))?;
        let base = raw_of(&st);
        if base.ftype != TMPFS_MAGIC {
            return Err(PrivError::Fatal(anyhow::anyhow!(
                "{} is not the tmpfs just mounted (f_type {:#x})",
                anchor.display(),
                base.ftype
            )));
        }
        Ok(Scratch {
            mode,
            path: anchor,
            size_bytes: base.size,
            ram_backed: true,
            notes: Vec::new(),
            dir: Some(dir),
            held: None,
            anchor_for_this_run: false,
            base,
        })
    }

    fn directory(spec: &Spec, notes: Vec<String>) -> Result<Scratch> {
        let euid = rustix::process::geteuid();
        let uid = euid.as_raw();
        let mut notes = notes;
        let base_dir = super::place::directory_base(euid, &mut notes)?;
        // The pid in the name lets a later run tell a scratch whose tmpfsctl
        // was killed (pid gone, lock free) from one in use.
        let prefix = format!("tmpfsctl-{uid}-");
        notes.extend(cleanup::sweep(&base_dir, &prefix, uid));
        // tempfile: exclusive mkdir of a random name, retried on collision.
        // The mode must be asked for: its default is 0777 minus the umask.
        let dir = tempfile::Builder::new()
            .prefix(&format!("{prefix}{}-", std::process::id()))
            .rand_bytes(12)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&base_dir)
            .with_context(|| {
                format!(
                    "cannot create a scratch directory in {}; set XDG_RUNTIME_DIR to a writable directory",
                    base_dir.display()
                )
            })?
            .keep();
        let held = hold(&base_dir, &dir).with_context(|| format!("opening {}", dir.display()))?;
        let st = rustix::fs::statfs(&dir).with_context(|| format!("statfs {}", dir.display()))?;
        let fs = raw_of(&st);
        let ram_backed = is_ram_fs_type(fs.ftype);
        if !ram_backed {
            notes.push(format!(
                "{} is not on tmpfs: the scratch is NOT RAM-backed",
                base_dir.display()
            ));
        }
        let mut s = Scratch {
            mode: Mode::Directory,
            path: dir,
            size_bytes: spec.size_bytes,
            ram_backed,
            notes,
            dir: None,
            held: Some(held),
            anchor_for_this_run: false,
            base: Raw::default(),
        };
        s.base = s.raw()?;
        Ok(s)
    }

    fn raw(&self) -> Result<Raw> {
        match &self.dir {
            Some(fd) => Ok(raw_of(&rustix::fs::fstatfs(fd)?)),
            None => {
                let u = du::usage(&self.path)?;
                let fs = raw_of(&rustix::fs::statfs(&self.path)?);
                Ok(Raw {
                    used: u.bytes,
                    inodes: u.inodes,
                    avail: fs.avail,
                    ifree: fs.ifree,
                    size: self.size_bytes,
                    ftype: fs.ftype,
                })
            }
        }
    }

    /// Current usage relative to the empty scratch. One fstatfs for a private
    /// mount; a full tree walk (du-like) for a plain directory.
    pub fn usage(&self) -> Result<Usage> {
        let r = self.raw()?;
        Ok(Usage {
            used_bytes: r.used.saturating_sub(self.base.used),
            inodes: r.inodes.saturating_sub(self.base.inodes),
            avail_bytes: r.avail,
            inodes_free: r.ifree,
        })
    }

    /// True when CMD can no longer write (no block or no inode left): what
    /// CMD sees as ENOSPC. For a directory that is the filesystem under it.
    pub fn is_full(&self, u: &Usage) -> bool {
        u.avail_bytes < page_size() || (self.base.ifree > 0 && u.inodes_free == 0)
    }

    /// Close enough to full that sampling stays at its fast rate.
    pub fn near_full(&self, u: &Usage) -> bool {
        super::sampling::near_full(self.size_bytes, self.base.ifree, u)
    }

    /// A directory scratch has gone past its (soft, unenforced) cap.
    pub fn over_soft_cap(&self, u: &Usage) -> bool {
        self.mode == Mode::Directory && u.used_bytes > self.size_bytes
    }

    /// Remove the scratch (after copying it to disk, or leaving it, with
    /// `keep`). Never follows a symlink out of the scratch and never crosses
    /// a mount: a private mount is simply unmounted (detached if CMD left
    /// something busy or mounted inside it), and a directory is removed as
    /// described in `cleanup`.
    pub fn teardown(mut self, keep: Option<&Keep>) -> Teardown {
        let mut out = Teardown {
            kept_at: None,
            removed: false,
            // The scratch's own notes were shown when it was created.
            notes: Vec::new(),
            error: None,
        };
        match self.mode {
            Mode::Directory => match self.held.take() {
                Some(h) => h.teardown(keep.is_some(), &mut out),
                None => out.error = Some("the scratch directory was not held".into()),
            },
            Mode::PrivateMount | Mode::UserNamespace => {
                if let Some(k) = keep {
                    match copy_out(&self.path, k) {
                        Ok(p) => out.kept_at = Some(p),
                        Err(e) => out.error = Some(format!("--keep: {e:#}")),
                    }
                }
                // Our own handle would make the mount look busy.
                self.dir = None;
                // A plain umount fails with EBUSY while CMD's mounts sit
                // inside the scratch, so only then is mountinfo read to
                // detach (and name) them: the usual run reads it not at all.
                // Something CMD started that still has a file or its cwd in
                // there gets the scratch detached: the kernel frees the data
                // when that last user lets go.
                match unmount::unmount(At::Dir(&self.path), How::ScratchAnyway) {
                    Ok(u) => {
                        out.removed = true;
                        if self.anchor_for_this_run && u.left_to.is_none() {
                            let _ = std::fs::remove_dir(&self.path);
                        }
                        out.notes.extend(
                            cleanup::Removed {
                                detached: u.detached_inside,
                                ..Default::default()
                            }
                            .notes(),
                        );
                        if let Some(e) = u.inside_error {
                            out.notes
                                .push(format!("detaching mounts inside the scratch: {e}"));
                        }
                        if let Some(h) = u.left_to {
                            out.notes.push(format!(
                                "a process started by CMD still uses the scratch{}: it was detached and is freed when that process exits",
                                if h.is_empty() {
                                    String::new()
                                } else {
                                    format!(" ({})", unmount::holders_line(&h))
                                }
                            ));
                        }
                    }
                    Err(e) => {
                        out.error = Some(format!("umount {}: {}", self.path.display(), e.errno()))
                    }
                }
            }
        }
        out
    }
}

/// Open and lock a just-made directory scratch and note who it is.
fn hold(base_dir: &Path, dir: &Path) -> std::io::Result<Held> {
    let parent = rustix::fs::open(
        base_dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        FsMode::empty(),
    )?;
    let name = dir.file_name().unwrap_or_default().to_os_string();
    let fd = rustix::fs::openat(
        &parent,
        name.as_os_str(),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        FsMode::empty(),
    )?;
    cleanup::lock(&fd)?;
    Ok(Held {
        place: cleanup::place_of(&fd)?,
        real: std::fs::canonicalize(dir)?,
        parent,
        name,
        dir: fd,
    })
}

impl Held {
    fn teardown(self, keep: bool, out: &mut Teardown) {
        if !keep {
            let (r, err) = cleanup::remove(&cleanup::Target {
                parent: &self.parent,
                name: &self.name,
                dir: &self.dir,
                place: self.place,
                real: &self.real,
            });
            out.notes.extend(r.notes());
            out.removed = r.removed;
            out.error = err;
            return;
        }
        // Kept: what CMD mounted inside still goes, and the name loses the
        // pid so no later run takes it for a killed run's leftover.
        match unmount::detach_below(&self.real, false) {
            Ok(d) => out.notes.extend(
                cleanup::Removed {
                    detached: d,
                    ..Default::default()
                }
                .notes(),
            ),
            Err(e) => out.error = Some(format!("detaching mounts below the scratch: {e}")),
        }
        let name = self.name.to_string_lossy();
        let kept = match name.split_once('-').and_then(|(a, r)| {
            let (uid, r) = r.split_once('-')?;
            let (_pid, random) = r.split_once('-')?;
            Some(format!("{a}-{uid}-kept-{random}"))
        }) {
            Some(k) => k,
            None => name.into_owned(),
        };
        let dest = self.real.with_file_name(&kept);
        match rustix::fs::renameat_with(
            &self.parent,
            self.name.as_os_str(),
            &self.parent,
            kept.as_str(),
            rustix::fs::RenameFlags::NOREPLACE,
        ) {
            Ok(()) => out.kept_at = Some(dest),
            Err(_) => out.kept_at = Some(self.real.clone()),
        }
    }
}

/// Where `--keep` puts a copy of a private scratch.
#[derive(Debug, Clone)]
pub enum Keep {
    /// A new 0700 directory with a random name under /var/tmp (disk-backed by
    /// convention, kept across reboots), or the current directory.
    Default,
    /// Exactly this path, which must not exist yet.
    Dir(PathBuf),
}

/// Check a `--keep=DIR` before anything runs, so a bad path fails up front.
pub fn check_keep_dir(p: &Path) -> Result<()> {
    if p.symlink_metadata().is_ok() {
        bail!(
            "--keep={}: already exists; give a path that does not exist yet (it is created)",
            safe_path(p)
        );
    }
    let parent = match p.parent() {
        Some(q) if !q.as_os_str().is_empty() => q.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        bail!(
            "--keep={}: parent directory {} does not exist; create it first",
            safe_path(p),
            safe_path(&parent)
        );
    }
    Ok(())
}

fn copy_out(src: &Path, keep: &Keep) -> Result<PathBuf> {
    let dest = match keep {
        Keep::Dir(p) => {
            std::fs::create_dir(p).with_context(|| format!("cannot create {}", safe_path(p)))?;
            p.clone()
        }
        Keep::Default => {
            let base = [PathBuf::from("/var/tmp"), PathBuf::from(".")]
                .into_iter()
                .find(|p| rustix::fs::access(p, rustix::fs::Access::WRITE_OK).is_ok())
                .unwrap_or_else(|| PathBuf::from("."));
            tempfile::Builder::new()
                .prefix("tmpfsctl-keep-")
                .rand_bytes(8)
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir_in(&base)
                .with_context(|| format!("cannot create a directory in {}", safe_path(&base)))?
                .keep()
        }
    };
    // cp -a copies symlinks as symlinks, keeps modes, times, hard links,
    // sparseness and xattrs; --one-file-system stays out of anything CMD
    // mounted inside the scratch. No crate covers all of that.
    let mut from = src.as_os_str().to_os_string();
    from.push("/.");
    let st = std::process::Command::new("cp")
        .args(["-a", "--one-file-system", "--"])
        .arg(&from)
        .arg(&dest)
        .stdin(std::process::Stdio::null())
        .status()
        .context("cannot run cp")?;
    if !st.success() {
        bail!(
            "cp -a {} {} failed ({st}); what was copied is in {}",
            safe_path(Path::new(&from)),
            safe_path(&dest),
            safe_path(&dest)
        );
    }
    Ok(std::fs::canonicalize(&dest).unwrap_or(dest))
}

#[derive(Debug, Clone, Default)]
pub struct Teardown {
    pub kept_at: Option<PathBuf>,
    pub removed: bool,
    pub notes: Vec<String>,
    pub error: Option<String>,
}

/// Map our own uid and gid onto themselves in the new user namespace, so CMD
/// runs with the same ids (files it writes are owned by the caller).
pub(super) fn map_ids(uid: u32, gid: u32) -> Result<()> {
    let write = |file: &str, text: String| -> Result<()> {
        match std::fs::write(file, &text) {
            Ok(()) => Ok(()),
            // Kernels before 3.19 have no setgroups file and need no "deny".
            Err(e) if file.ends_with("setgroups") && e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(anyhow::anyhow!("writing {text:?} to {file}: {e}")),
        }
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_size_is_half_of_available_rounded_to_pages() {
        let p = page_size();
        assert_eq!(default_size(8 << 30), 4 << 30);
        assert_eq!(default_size(3 * p + 2), 2 * p);
        assert_eq!(round_up_page(1), p);
        assert_eq!(round_up_page(0), 0);
    }

    #[test]
    fn keep_dir_must_be_new_with_an_existing_parent() {
        let t = tempfile::tempdir().unwrap();
        assert!(check_keep_dir(t.path()).is_err());
        assert!(check_keep_dir(&t.path().join("new")).is_ok());
        let e = check_keep_dir(&t.path().join("no/such"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not exist"), "{e}");
    }

    #[test]
    fn only_the_directory_mode_has_a_soft_cap() {
        assert!(Mode::PrivateMount.cap_enforced());
        assert!(Mode::UserNamespace.cap_enforced());
        assert!(!Mode::Directory.cap_enforced());
    }
}
