//! Where benchmarks write: target checks (before anything is written), the
//! private tmpfs used by default when root, and per-target scratch directories
//! that are removed on every exit path, and by the next run when a run was
//! killed (see `leftover`).

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use rustix::fs::{Mode, OFlags};

use super::leftover::{self, Kind};
use super::report::{TargetInfo, ZramTargetInfo};
use crate::sys::outdir::OutDir;
use crate::sys::{fs, mountinfo, statfs};
use crate::units::fmt_bytes;

/// Room left beyond the planned data: filesystems need some for metadata and
/// reserve a little; running a disk completely full would also skew it.
pub fn margin_bytes(need: u64) -> u64 {
    (need / 16).max(4 << 20)
}

/// A target directory, checked and described.
#[derive(Debug, Clone)]
pub struct Target {
    pub shown: String,
    pub info: TargetInfo,
    /// The directory itself, as checked: scratch directories are made in
    /// this inode, whatever is renamed on the way later.
    held: std::sync::Arc<OutDir>,
}

/// Check a target directory: exists, is a directory, writable, on a
/// read-write filesystem, with room for `need_bytes` (+ margin) and
/// `need_inodes`. Nothing is written; only scratch directories left by
/// earlier runs that were killed are removed first, so their space counts.
pub fn check(
    ctx: &crate::command::Context,
    dir: &Path,
    need_bytes: u64,
    need_inodes: u64,
    private: Option<&PrivateSpec>,
) -> Result<Target> {
    let private_mount = private.is_some();
    let shown = dir.display().to_string();
    let meta = std::fs::metadata(dir).map_err(|e| {
        anyhow::anyhow!(
            "target {shown}: {}; give an existing directory (create it first)",
            match e.kind() {
                std::io::ErrorKind::NotFound => "no such directory".to_string(),
                _ => e.to_string(),
            }
        )
    })?;
    anyhow::ensure!(
        meta.is_dir(),
        "target {shown}: not a directory; give a directory on the filesystem to test"
    );
    // Held open from here: another user who owns a directory on the way
    // (or the target itself) could otherwise swap it for a link to a
    // root-only directory between this check and the writing.
    let held = std::sync::Arc::new(OutDir::open_dir("target", dir)?);
    let path = held.path.clone();
    leftover::sweep(&held.fd_path(), SCRATCH_BASE, Kind::Tree);
    let vfs = rustix::fs::statvfs(&path).with_context(|| format!("target {shown}: statfs"))?;
    anyhow::ensure!(
        !vfs.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY),
        "target {shown}: the filesystem is mounted read-only; give a writable directory"
    );
    rustix::fs::access(&path, rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK).map_err(|_| {
        anyhow::anyhow!(
            "target {shown}: not writable by this user; give a directory you can write to (or run as its owner)"
        )
    })?;
    let st = statfs::statfs(&path)?;
    let (mounts, _) = ctx.sysroot.mountinfo()?;
    let m = mountinfo::mount_for(&mounts, &path);
    let fstype = m.map_or_else(|| "unknown".to_string(), |m| m.fstype.clone());
    let mountpoint = m.map_or_else(|| "/".to_string(), |m| m.mount_point.display().to_string());
    let ram_backed = crate::sys::is_ram_backed(&fstype);
    let is_ext4 = fstype == "ext4";
    let want = need_bytes + margin_bytes(need_bytes);
    // ramfs reports size 0 and has no limit but RAM.
    let limited = st.size_bytes > 0;
    if limited && st.avail_bytes < want {
        anyhow::bail!(
            "target {shown}: not enough free space: the benchmark needs {} ({} of test data + {} margin) but only {} is free; \
             pass a smaller --size (or --quick), free space, or choose another target. Nothing was written.",
            fmt_bytes(want),
            fmt_bytes(need_bytes),
            fmt_bytes(want - need_bytes),
            fmt_bytes(st.avail_bytes)
        );
    }
    let free_inodes = (st.inodes_total > 0).then_some(st.inodes_free);
    if let Some(fi) = free_inodes
        && fi < need_inodes + 16
    {
        anyhow::bail!(
            "target {shown}: not enough free inodes: the benchmark needs {} but only {fi} are free; \
             pass a smaller --files, or choose another target. Nothing was written.",
            need_inodes + 16
        );
    }
    if ram_backed {
        // A tmpfs limit can exceed the RAM that is actually free; filling it would swap.
        let (mem, _) = ctx.sysroot.meminfo()?;
        anyhow::ensure!(
            want <= mem.mem_available_bytes,
            "target {shown}: RAM-backed and the benchmark needs {} but only {} of RAM is available; \
             pass a smaller --size. Nothing was written.",
            fmt_bytes(want),
            fmt_bytes(mem.mem_available_bytes)
        );
    }
    Ok(Target {
        shown: shown.clone(),
        info: TargetInfo {
            path: shown,
            fstype,
            mountpoint,
            ram_backed,
            private_mount,
            options: private.and_then(|p| p.options.clone()),
            zram: private.and_then(|p| p.zram.clone()),
            huge: m
                .filter(|m| m.fstype == "tmpfs")
                .map(|m| m.option("huge").unwrap_or("never").to_string()),
            free_bytes: st.avail_bytes,
            free_inodes,
            need_bytes: want,
            need_inodes,
            ext4_journal: if is_ext4 {
                rustix::fs::stat(&path)
                    .ok()
                    .and_then(|st| ext4_journal(&ctx.sysroot, st.st_dev))
            } else {
                None
            },
        },
        held,
    })
}

/// Whether the ext4 filesystem on device `dev` has a journal: the kernel
/// names the device in /sys/dev/block/MAJ:MIN/uevent (DEVNAME=vda) and shows
/// `<none>` in /sys/fs/ext4/DEVNAME/journal_task when there is none. None
/// when either file is missing (not ext4, no sysfs, a stacked device).
pub fn ext4_journal(sysroot: &crate::sys::Sysroot, dev: u64) -> Option<bool> {
    let (maj, min) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let uevent =
        std::fs::read_to_string(sysroot.path(format!("/sys/dev/block/{maj}:{min}/uevent"))).ok()?;
    let name = uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))?
        .trim();
    // DEVNAME can hold a path (e.g. mapper/x); /sys/fs/ext4 uses the kernel name.
    if name.contains('/') {
        return None;
    }
    let task =
        std::fs::read_to_string(sysroot.path(format!("/sys/fs/ext4/{name}/journal_task"))).ok()?;
    Some(task.trim() != "<none>")
}

/// A target that is a tmpfs mounted for this run, and its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivateSpec {
    pub path: PathBuf,
    pub options: Option<String>,
    /// A zram device made for the run, not a tmpfs.
    pub zram: Option<ZramTargetInfo>,
}

/// Scratch directories are named this, then their owner (see `leftover`).
const SCRATCH_BASE: &str = ".tmpfsctl-bench-";
/// Mount points of private tmpfs and zram mounts, in the temporary directory.
pub(super) const MOUNT_BASE: &str = "tmpfsctl-bench-mnt-";

/// A fresh scratch directory (mkdtemp, mode 0700) inside a target, made in
/// the target's held descriptor and used only through its own: in another
/// user's directory, they can rename it or put a link at its name, and the
/// benchmark still writes into this one directory of root's, never where
/// the link leads. Dropping it empties it through its descriptor, then
/// removes it by name (`std::fs::remove_dir_all` unlinks a link there
/// rather than following it).
pub struct Scratch {
    dir: Option<tempfile::TempDir>,
    fd: Option<OwnedFd>,
    path: PathBuf,
}

impl Scratch {
    pub fn create(target: &Target) -> Result<Scratch> {
        // In another user's directory they can rename the new directory
        // before it is opened: then it is not used, and another is made.
        for _ in 0..3 {
            if let Some(s) = Self::try_create(target)? {
                return Ok(s);
            }
        }
        anyhow::bail!(
            "target {}: the scratch directory was replaced as it was made, three times (another user renames entries there); give a directory only you can write",
            target.shown
        )
    }

    fn try_create(target: &Target) -> Result<Option<Scratch>> {
        let err = || format!("target {}: cannot create a scratch directory", target.shown);
        let dir = tempfile::Builder::new()
            .prefix(&leftover::prefix(SCRATCH_BASE))
            // Asked for: tempfile's default is 0777 minus the umask.
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(target.held.fd_path())
            .with_context(err)?;
        let name = dir
            .path()
            .file_name()
            .map(|n| n.to_owned())
            .unwrap_or_default();
        let fd = match rustix::fs::openat(
            &target.held.fd,
            &name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            // A link or something else at the name now: not ours.
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR | rustix::io::Errno::NOENT) => {
                return Ok(None);
            }
            Err(e) => return Err(e).with_context(err),
        };
        // What was opened must be what mkdtemp made: ours and 0700.
        let st = rustix::fs::fstat(&fd).with_context(err)?;
        if st.st_uid != rustix::process::geteuid().as_raw() || st.st_mode & 0o077 != 0 {
            return Ok(None);
        }
        let path = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        Ok(Some(Scratch {
            dir: Some(dir),
            fd: Some(fd),
            path,
        }))
    }

    /// The scratch through its descriptor (`/proc/self/fd/N`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Remove now and report failure (Drop can only ignore it).
    pub fn remove(mut self) -> Result<()> {
        self.remove_inner()
    }

    fn remove_inner(&mut self) -> Result<()> {
        if let Some(fd) = self.fd.take() {
            fs::clear_dir(fd.as_fd()).context("emptying the scratch directory")?;
        }
        if let Some(d) = self.dir.take() {
            let p = d.path().to_path_buf();
            d.close()
                .with_context(|| format!("removing scratch directory {}", p.display()))?;
        }
        Ok(())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = self.remove_inner();
    }
}

/// A tmpfs mounted by us on a private directory for the run (root only),
/// in a mount namespace of this process's own: nobody else sees it, and the
/// kernel unmounts it when the process ends, even by SIGKILL. Dropping it
/// unmounts (lazily if busy) and removes the directory.
pub struct PrivateTmpfs {
    dir: Option<tempfile::TempDir>,
    pub path: PathBuf,
}

impl PrivateTmpfs {
    /// Call on the main thread before any benchmark thread starts (see
    /// [`enter_private_namespace`]).
    pub fn mount(size_bytes: u64) -> Result<PrivateTmpfs> {
        Self::mount_with(size_bytes, None)
    }

    /// As [`PrivateTmpfs::mount`], with the kernel's tmpfs options (checked by
    /// [`TmpfsOptions::parse`]) after bench's own, so `mode=` given wins.
    pub fn mount_with(size_bytes: u64, options: Option<&TmpfsOptions>) -> Result<PrivateTmpfs> {
        enter_private_namespace()?;
        // Mount points of killed runs: empty directories by now, since their
        // tmpfs went with their namespace.
        leftover::sweep(&std::env::temp_dir(), MOUNT_BASE, Kind::MountPoint);
        let dir = tempfile::Builder::new()
            .prefix(&leftover::prefix(MOUNT_BASE))
            .tempdir()
            .context("creating a directory for the private tmpfs")?;
        let path = dir.path().to_path_buf();
        let mut data = format!(
            "size={},mode=0700",
            crate::units::tmpfs_size_option(size_bytes.div_ceil(1 << 20) << 20)
        );
        if let Some(o) = options {
            data.push(',');
            data.push_str(&o.text);
        }
        let data = std::ffi::CString::new(data)?;
        rustix::mount::mount(
            "tmpfsctl-bench",
            &path,
            "tmpfs",
            rustix::mount::MountFlags::NOSUID | rustix::mount::MountFlags::NODEV,
            data.as_c_str(),
        )
        .with_context(|| match options {
            Some(o) => format!(
                "target tmpfs:{}: the kernel refused these tmpfs options (it may be too old for one of them, e.g. noswap needs Linux 6.4)",
                o.text
            ),
            None => format!("mounting a private tmpfs on {}", path.display()),
        })?;
        Ok(PrivateTmpfs {
            dir: Some(dir),
            path,
        })
    }
}

/// Move this process into a mount namespace of its own, with nothing
/// propagating out of it. unshare(CLONE_NEWNS) moves the calling thread and
/// the threads it starts afterwards, not threads already running; and
/// /proc/self/mountinfo (which the target checks read) shows the main
/// thread's view: hence on the main thread, before any thread starts.
pub(super) fn enter_private_namespace() -> Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    // Several private mounts share one namespace: a second unshare would
    // only copy it.
    static ENTERED: AtomicBool = AtomicBool::new(false);
    if ENTERED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    // SAFETY: NEWNS only; no file-descriptor table is unshared.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }
        .context("unshare(CLONE_NEWNS) for the private tmpfs")?;
    use rustix::mount::MountPropagationFlags as P;
    rustix::mount::mount_change("/", P::PRIVATE | P::REC)
        .context("making / private in the new mount namespace")?;
    Ok(())
}

impl Drop for PrivateTmpfs {
    fn drop(&mut self) {
        use crate::sys::unmount::{At, How, unmount};
        let _ = unmount(At::Dir(&self.path), How::ScratchAnyway);
        if let Some(d) = self.dir.take() {
            let _ = d.close();
        }
    }
}

/// What a command-line target names: a directory, or a target one of
/// bench's kinds ([`super::KINDS`]) makes for the run (`tmpfs:huge=never`,
/// `zram:lz4`).
#[derive(Debug, Clone)]
pub enum TargetSpec {
    Dir(PathBuf),
    Made(Made),
}

/// A kind of target made for the run, named `NAME` or `NAME:ARG` on the
/// command line. Parsing, making, the root check and TARGET's help line all
/// come from the registry of kinds, [`super::KINDS`]: a new kind is its own
/// file and its line there.
pub struct TargetKind {
    /// The name before the colon.
    pub name: &'static str,
    /// Its part of TARGET's help line: `NAME:ARG for …`.
    pub help: &'static str,
    /// What making it takes, for the refusal without root ("mounting a
    /// private tmpfs").
    pub doing: &'static str,
    /// What follows `NAME:` (`None`: the bare name), checked before
    /// anything is made; `Ok(None)`: the bare name is a directory.
    pub parse: fn(Option<&str>) -> Result<Option<Made>>,
}

/// A target a kind will make, as its `parse` hands it back.
pub type Made = Arc<dyn MakeSpec>;

/// A target to make, checked. Made on the main thread before any benchmark
/// thread starts (the private mount namespace needs it); taken away when
/// what `make` hands back is dropped.
pub trait MakeSpec: std::fmt::Debug + Send + Sync {
    /// As the user wrote it (`tmpfs:huge=never`, `zram:lz4`).
    fn shown(&self) -> String;
    fn make(
        &self,
        ctx: &crate::command::Context,
        size_bytes: u64,
    ) -> Result<(PrivateSpec, Box<dyn Send>)>;
}

/// TARGET's help line, from the kinds.
pub fn help() -> String {
    let mut s = String::from("Directories to compare");
    for k in super::KINDS {
        s.push_str(", or ");
        s.push_str(k.help);
    }
    s.push_str(
        " (default: a private tmpfs when root, else /dev/shm, vs the disk under /var/tmp or $HOME)",
    );
    s
}

/// What making any kind takes, for the refusal without root.
pub fn doings() -> String {
    let d: Vec<&str> = super::KINDS.iter().map(|k| k.doing).collect();
    d.join(" or ")
}

impl TargetSpec {
    /// `NAME:ARG` (or a bare `NAME` its kind takes) is made by that kind;
    /// anything else is a directory (write `./tmpfs:x` or `./zram` for a
    /// directory of that name).
    pub fn parse(arg: &Path) -> Result<TargetSpec> {
        if let Some(s) = arg.to_str() {
            let (name, rest) = match s.split_once(':') {
                Some((n, r)) => (n, Some(r)),
                None => (s, None),
            };
            if let Some(k) = super::KINDS.iter().find(|k| k.name == name)
                && let Some(m) = (k.parse)(rest)?
            {
                return Ok(TargetSpec::Made(m));
            }
        }
        Ok(TargetSpec::Dir(arg.to_path_buf()))
    }
}

/// The private tmpfs kind: `tmpfs:OPTIONS`.
pub const TMPFS: TargetKind = TargetKind {
    name: "tmpfs",
    help: "tmpfs:OPTIONS for a private tmpfs mounted for the run with the kernel's options (root; e.g. tmpfs:huge=within_size tmpfs:huge=never)",
    doing: "mounting a private tmpfs",
    parse: |arg| match arg {
        Some(opts) => Ok(Some(Arc::new(TmpfsOptions::parse(opts)?))),
        None => Ok(None),
    },
};

impl MakeSpec for TmpfsOptions {
    fn shown(&self) -> String {
        format!("tmpfs:{}", self.text)
    }

    fn make(
        &self,
        _ctx: &crate::command::Context,
        size_bytes: u64,
    ) -> Result<(PrivateSpec, Box<dyn Send>)> {
        let t = PrivateTmpfs::mount_with(size_bytes, Some(self))?;
        let spec = PrivateSpec {
            path: t.path.clone(),
            options: Some(self.text.clone()),
            zram: None,
        };
        Ok((spec, Box::new(t)))
    }
}

/// Mount options of a private tmpfs target, checked before anything is
/// measured: only the kernel's tmpfs options that change how it stores data
/// (the size is bench's: it sizes the mount to the workloads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmpfsOptions {
    /// As given, comma-separated: recorded in the report and passed to mount(2).
    pub text: String,
}

/// The tmpfs mount options a bench target accepts, as the kernel spells them.
const TMPFS_OPTIONS: &str = "huge=never|always|within_size|advise, noswap, nr_inodes=N, mode=OCTAL, mpol=POLICY, inode32, inode64";

impl TmpfsOptions {
    pub fn parse(text: &str) -> Result<TmpfsOptions> {
        let bad = |opt: &str, why: &str| {
            anyhow::anyhow!(
                "target tmpfs:{text}: {why} `{opt}`; a private tmpfs target takes {TMPFS_OPTIONS} (comma-separated, e.g. tmpfs:huge=within_size)"
            )
        };
        anyhow::ensure!(
            !text.is_empty(),
            "target tmpfs: no options given; write e.g. tmpfs:huge=within_size, or name a directory"
        );
        for opt in text.split(',') {
            let (key, value) = match opt.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (opt, None),
            };
            let ok = match (key, value) {
                ("huge", Some(v)) => matches!(v, "never" | "always" | "within_size" | "advise"),
                ("noswap" | "inode32" | "inode64", None) => true,
                ("nr_inodes", Some(v)) => crate::units::parse_bytes(v).is_ok(),
                ("mode", Some(v)) => {
                    !v.is_empty() && u32::from_str_radix(v, 8).is_ok_and(|m| m <= 0o7777)
                }
                ("mpol", Some(v)) => {
                    let policy = v.split(':').next().unwrap_or_default();
                    matches!(
                        policy,
                        "default" | "prefer" | "bind" | "interleave" | "local"
                    )
                }
                ("size", _) => {
                    return Err(bad(
                        opt,
                        "bench sizes its private tmpfs to the workloads; drop",
                    ));
                }
                _ => false,
            };
            if !ok {
                return Err(bad(opt, "unknown or invalid tmpfs option"));
            }
        }
        Ok(TmpfsOptions {
            text: text.to_string(),
        })
    }
}

/// The disk directory to compare with by default: where /var/tmp lives, else $HOME.
pub fn default_disk_dir(ctx: &crate::command::Context) -> Result<PathBuf> {
    let (mounts, _) = ctx.sysroot.mountinfo()?;
    let mut cands: Vec<PathBuf> = vec!["/var/tmp".into()];
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        cands.push(h.into());
    }
    for c in cands {
        let Ok(canon) = std::fs::canonicalize(&c) else {
            continue;
        };
        let ram = mountinfo::mount_for(&mounts, &canon)
            .is_some_and(|m| crate::sys::is_ram_backed(&m.fstype));
        if !ram && canon.is_dir() {
            return Ok(c);
        }
    }
    anyhow::bail!(
        "no disk directory to compare with: /var/tmp and $HOME are missing or RAM-backed; \
         name the targets, e.g. `tmpfsctl bench /dev/shm /srv/scratch`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::Sysroot;

    /// How a made target was written back, or `None` for a directory.
    fn made(s: TargetSpec) -> Option<String> {
        match s {
            TargetSpec::Made(m) => Some(m.shown()),
            TargetSpec::Dir(_) => None,
        }
    }

    #[test]
    fn tmpfs_targets_take_the_kernels_options_and_name_a_bad_one() {
        let spec = |s: &str| TargetSpec::parse(Path::new(s));
        assert_eq!(
            made(spec("tmpfs:huge=never,noswap").unwrap()).as_deref(),
            Some("tmpfs:huge=never,noswap")
        );
        assert_eq!(made(spec("./tmpfs:huge=never").unwrap()), None);
        assert_eq!(made(spec("tmpfs").unwrap()), None, "a directory");
        assert_eq!(made(spec("/var/tmp").unwrap()), None);
        assert_eq!(made(spec("zram").unwrap()).as_deref(), Some("zram"));
        assert_eq!(
            made(spec("zram:lzo-rle").unwrap()).as_deref(),
            Some("zram:lzo-rle")
        );
        assert_eq!(made(spec("./zram").unwrap()), None);
        for bad in ["zram:", "zram:LZ4", "zram:lz4;rm", "zram:a/b"] {
            let e = spec(bad).unwrap_err().to_string();
            assert!(e.contains("not a zram algorithm"), "{bad}: {e}");
        }
        for ok in [
            "huge=within_size",
            "nr_inodes=10k,mode=1777",
            "mpol=bind:0",
            "inode64",
        ] {
            TmpfsOptions::parse(ok).unwrap();
        }
        for (bad, named) in [
            ("huge=sometimes", "`huge=sometimes`"),
            ("huge=never,swapiness=1", "`swapiness=1`"),
            ("size=1G", "`size=1G`"),
            ("mode=999", "`mode=999`"),
            ("", "no options"),
        ] {
            let e = TmpfsOptions::parse(bad).unwrap_err().to_string();
            assert!(e.contains(named), "{bad}: {e}");
        }
    }

    #[test]
    fn ext4_journal_is_read_from_sysfs() {
        let d = tempfile::tempdir().unwrap();
        let root = Sysroot::new(d.path());
        let dev = rustix::fs::makedev(253, 0);
        assert_eq!(ext4_journal(&root, dev), None, "no sysfs: unknown");
        std::fs::create_dir_all(d.path().join("sys/dev/block/253:0")).unwrap();
        std::fs::write(
            d.path().join("sys/dev/block/253:0/uevent"),
            "MAJOR=253\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n",
        )
        .unwrap();
        assert_eq!(ext4_journal(&root, dev), None, "not an ext4 device");
        std::fs::create_dir_all(d.path().join("sys/fs/ext4/vda")).unwrap();
        std::fs::write(d.path().join("sys/fs/ext4/vda/journal_task"), "<none>\n").unwrap();
        assert_eq!(ext4_journal(&root, dev), Some(false));
        std::fs::write(d.path().join("sys/fs/ext4/vda/journal_task"), "412\n").unwrap();
        assert_eq!(ext4_journal(&root, dev), Some(true));
        assert_eq!(
            ext4_journal(&root, rustix::fs::makedev(8, 1)),
            None,
            "another device"
        );
    }
}
