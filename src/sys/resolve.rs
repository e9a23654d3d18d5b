//! Opening a directory once, by a path with no symbolic link in it, so every
//! later step acts on that one inode whatever is renamed meanwhile: a path is
//! looked up again at each use, a descriptor is not.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::Sysroot;

/// A directory held open (O_PATH) together with its parent, and the path
/// that reached it.
#[derive(Debug)]
pub struct OpenedDir {
    /// Absolute, on the inspected system; `.` and `..` resolved by name,
    /// which is exact because the open proved there is no symlink in it.
    pub path: PathBuf,
    pub fd: OwnedFd,
    /// The parent directory (`/` for a top-level directory).
    pub parent: OwnedFd,
    /// The last component of `path`.
    pub name: CString,
    pub dev: u64,
    pub ino: u64,
}

impl OpenedDir {
    /// A path that reaches this very directory through the descriptor, for
    /// the calls that only take paths (the kernel follows the fd, not a
    /// name). It ends in `/.` so that O_NOFOLLOW opens of it still work.
    pub fn proc_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}/.", self.fd.as_raw_fd()))
    }

    /// Let go of the directory itself (an open descriptor keeps a mount
    /// point busy) and keep a path to it through the parent's descriptor,
    /// valid while the returned descriptor lives.
    pub fn into_parent_path(self) -> (OwnedFd, PathBuf) {
        let mut p = format!("/proc/self/fd/{}/", self.parent.as_raw_fd()).into_bytes();
        p.extend_from_slice(self.name.as_bytes());
        (self.parent, PathBuf::from(OsStr::from_bytes(&p)))
    }

    /// True when `parent`/`name` still is the inode that was opened.
    pub fn still_in_place(&self) -> bool {
        rustix::fs::statat(
            &self.parent,
            &self.name,
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .is_ok_and(|st| (st.st_dev, st.st_ino) == (self.dev, self.ino))
    }
}

/// Why a directory could not be opened.
#[derive(Debug)]
pub enum ResolveError {
    NotFound,
    NotADirectory,
    /// `link` (a path on the inspected system) is a symbolic link to `target`.
    Symlink {
        link: PathBuf,
        target: PathBuf,
    },
    /// Something was renamed between opening the parent and the directory.
    Moved,
    Io(Errno),
}

/// `p` made absolute against the working directory, `.` and `..` taken by name.
pub fn lexical_absolute(p: &Path) -> std::io::Result<PathBuf> {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    };
    let mut out = PathBuf::from("/");
    for c in abs.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Ok(out)
}

fn openat2_dir(at: impl AsFd, rel: &Path) -> Result<OwnedFd, Errno> {
    loop {
        match rustix::fs::openat2(
            &at,
            rel,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS | ResolveFlags::IN_ROOT,
        ) {
            // The kernel asks for a retry when a rename raced the lookup.
            Err(Errno::AGAIN) | Err(Errno::INTR) => continue,
            r => return r,
        }
    }
}

/// The first component of `abs` (under `root`) that is a symbolic link, and
/// where it leads (relative to `root`).
fn first_symlink(root: &Path, abs: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut cur = PathBuf::from("/");
    for c in abs.components().skip(1) {
        cur.push(c);
        let host = root.join(cur.strip_prefix("/").unwrap_or(&cur));
        if std::fs::symlink_metadata(&host).is_ok_and(|m| m.file_type().is_symlink()) {
            let target = std::fs::canonicalize(&host)
                .ok()
                .map(|t| Path::new("/").join(t.strip_prefix(root).unwrap_or(&t)))
                .or_else(|| std::fs::read_link(&host).ok())
                .unwrap_or_default();
            return Some((cur, target));
        }
    }
    None
}

/// Open the directory `abs` (absolute, already lexically clean) of the system
/// rooted at `root`, refusing any symbolic link on the way.
pub fn open_dir(root: &Path, abs: &Path) -> Result<OpenedDir, ResolveError> {
    let map = |e: Errno| match e {
        Errno::NOENT => ResolveError::NotFound,
        Errno::NOTDIR => ResolveError::NotADirectory,
        Errno::LOOP | Errno::XDEV => match first_symlink(root, abs) {
            Some((link, target)) => ResolveError::Symlink { link, target },
            None => ResolveError::Io(e),
        },
        e => ResolveError::Io(e),
    };
    // The root itself is given by whoever chose --sysroot (or is `/`).
    let rootfd = rustix::fs::openat(
        rustix::fs::CWD,
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(ResolveError::Io)?;
    let rel = abs.strip_prefix("/").unwrap_or(abs);
    let parent_rel = rel.parent().unwrap_or(Path::new(""));
    let name = rel.file_name().unwrap_or(OsStr::new("."));
    let dot = |p: &Path| -> PathBuf {
        if p.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            p.to_path_buf()
        }
    };
    let parent = openat2_dir(&rootfd, &dot(parent_rel)).map_err(map)?;
    // DIR is looked up in the parent just opened, so the two belong together.
    let fd = openat2_dir(&parent, Path::new(name)).map_err(map)?;
    let st = rustix::fs::fstat(&fd).map_err(ResolveError::Io)?;
    let name = CString::new(name.as_bytes()).map_err(|_| ResolveError::Io(Errno::INVAL))?;
    let d = OpenedDir {
        path: abs.to_path_buf(),
        fd,
        parent,
        name,
        dev: st.st_dev,
        ino: st.st_ino,
    };
    if !d.still_in_place() {
        return Err(ResolveError::Moved);
    }
    Ok(d)
}

/// The users (besides root) trusted not to move things under DIR: the one
/// running tmpfsctl, also when through sudo.
pub fn caller_uids() -> Vec<u32> {
    let mut v = vec![rustix::process::getuid().as_raw()];
    if let Some(u) = std::env::var("SUDO_UID")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
    {
        v.push(u);
    }
    v
}

/// The first of the opened directory and its ancestors (under `root`) that a
/// user other than root and `trusted` could write to in a way that lets them
/// swap entries — owner write permission, or group/other write without the
/// sticky bit — with the reason, for a refusal. The directory and its parent
/// are judged by their descriptors (what was opened), the rest by path.
pub fn untrusted_writer(root: &Path, d: &OpenedDir, trusted: &[u32]) -> Option<String> {
    let mut chain: Vec<PathBuf> = d.path.ancestors().map(Path::to_path_buf).collect();
    chain.reverse();
    let n = chain.len();
    for (i, p) in chain.into_iter().enumerate() {
        let st = if i + 1 == n {
            rustix::fs::fstat(&d.fd).ok()
        } else if i + 2 == n {
            rustix::fs::fstat(&d.parent).ok()
        } else {
            let host = root.join(p.strip_prefix("/").unwrap_or(&p));
            rustix::fs::statat(
                rustix::fs::CWD,
                &host,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .ok()
        };
        let Some(st) = st else {
            continue;
        };
        if let Some(why) = writable_by_other(&st, trusted) {
            return Some(format!("{} {why}", p.display()));
        }
    }
    None
}

/// Why a user other than root and `trusted` could swap entries in the
/// directory `st` describes (owner write permission, or group/other write
/// without the sticky bit), said after the directory's name; `None` when no
/// one else can.
pub fn writable_by_other(st: &rustix::fs::Stat, trusted: &[u32]) -> Option<String> {
    let (mode, uid, gid) = (st.st_mode, st.st_uid, st.st_gid);
    let sticky = mode & 0o1000 != 0;
    let ok_user = |u: u32| u == 0 || trusted.contains(&u);
    if !ok_user(uid) && mode & 0o200 != 0 {
        return Some(format!(
            "belongs to uid {uid}, who can rename what is in it"
        ));
    }
    if !sticky && gid != 0 && mode & 0o020 != 0 {
        return Some(format!(
            "is writable by group {gid} (mode {:o}, no sticky bit)",
            mode & 0o7777
        ));
    }
    if !sticky && mode & 0o002 != 0 {
        return Some(format!(
            "is writable by everyone (mode {:o}, no sticky bit)",
            mode & 0o7777
        ));
    }
    None
}

/// What the package managers and the key store keep: their databases (the
/// lists of every file installed: dpkg's `info/*.list`, apt's state, rpm's
/// database in both its places) and root's TLS private keys; `/usr/local`
/// is the administrator's own installed software. Refused themselves, with
/// everything below them and every directory above them.
const GUARDED: &[&str] = &[
    "/var/lib/dpkg",
    "/var/lib/apt",
    "/var/lib/rpm",
    "/usr/lib/sysimage/rpm",
    "/usr/local",
    "/etc/ssl/private",
];

/// Directories whose contents the FHS says survive a reboot (/tmp and /run
/// are the ones meant to be cleared), with what a reboot would delete there:
/// a plain tmpfs on one empties it at every boot. /var/tmp counts itself
/// only: programs keep files there across reboots, while a directory
/// someone made inside it is theirs to use as scratch.
pub fn outlives_reboot(abs: &Path) -> Option<&'static str> {
    const BELOW: &[(&str, &str)] = &[
        ("/var/log", "the system's and services' logs"),
        (
            "/var/cache",
            "caches programs expect to find again (package downloads, fonts, man pages)",
        ),
        ("/var/spool", "queued mail, print and cron jobs"),
        ("/var/mail", "users' mailboxes"),
        ("/srv", "the data this machine serves"),
        ("/home", "users' files"),
    ];
    if abs == Path::new("/var/tmp") {
        return Some(
            "temporary files programs keep across reboots (editor recovery files, unfinished downloads)",
        );
    }
    BELOW
        .iter()
        .find(|(d, _)| abs.starts_with(d))
        .map(|(_, what)| *what)
}

/// Directories that are never put on tmpfs, whatever is asked: the system
/// itself lives there, or the package managers' databases and the key store
/// (see [`GUARDED`]).
pub fn is_system_dir(abs: &Path) -> bool {
    const SYSTEM: &[&str] = &[
        "/", "/etc", "/usr", "/var", "/boot", "/root", "/home", "/proc", "/sys", "/dev", "/run",
        "/bin", "/sbin", "/opt", "/srv",
    ];
    if SYSTEM.iter().any(|s| abs == Path::new(s)) {
        return true;
    }
    // A tmpfs on, inside or above these would hide the package database
    // (the system then forgets what is installed) or the private keys.
    if GUARDED
        .iter()
        .any(|g| abs.starts_with(g) || Path::new(g).starts_with(abs))
    {
        return true;
    }
    let mut c = abs.components().skip(1);
    matches!((c.next(), c.next()), (Some(Component::Normal(n)), None) if n.as_bytes().starts_with(b"lib"))
}

/// Where rpm keeps its database: Fedora 36+ and newer RHEL first, then the
/// older place (relative to the system's root).
const RPM_DBS: &[&str] = &["usr/lib/sysimage/rpm", "var/lib/rpm"];

/// Every path the package managers of the system at `root` installed, one
/// per line: dpkg's `/var/lib/dpkg/info/*.list`, and what `rpm` lists from
/// an rpm database there (when both the database and the `rpm` program
/// exist; a system without rpm has no such database to read).
fn installed_lists(root: &Path) -> Vec<Vec<u8>> {
    let mut lists: Vec<Vec<u8>> = std::fs::read_dir(root.join("var/lib/dpkg/info"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().as_bytes().ends_with(b".list"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .collect();
    let db = RPM_DBS
        .iter()
        .find(|db| std::fs::read_dir(root.join(db)).is_ok_and(|mut r| r.next().is_some()));
    if let Some(db) = db
        && let Ok(out) = std::process::Command::new("rpm")
            .arg("--root")
            .arg(root)
            .arg("--dbpath")
            .arg(format!("/{db}"))
            .args(["-qa", "--qf", "[%{FILENAMES}\\n]"])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
        && out.status.success()
    {
        lists.push(out.stdout);
    }
    lists
}

/// Up to `max` regular files under `dir` that a package manager installed
/// (dpkg or rpm, of the system at `root`), and how many in all.
pub fn package_files(root: &Path, dir: &Path, max: usize) -> (Vec<PathBuf>, usize) {
    let mut found = Vec::new();
    let mut n = 0;
    let mut prefix = dir.as_os_str().as_bytes().to_vec();
    prefix.push(b'/');
    for text in installed_lists(root) {
        for line in text.split(|&b| b == b'\n') {
            if !line.starts_with(&prefix) {
                continue;
            }
            let p = Path::new(OsStr::from_bytes(line));
            let host = root.join(p.strip_prefix("/").unwrap_or(p));
            if std::fs::symlink_metadata(&host).is_ok_and(|m| !m.is_dir()) {
                n += 1;
                if found.len() < max {
                    found.push(p.to_path_buf());
                }
            }
        }
    }
    found.sort();
    (found, n)
}

/// Open DIR once (relative to cwd, no symbolic link anywhere in it) on the
/// inspected system, with errors that say what to pass instead. Everything
/// after this acts on the descriptor, so a rename or a symlink swapped in
/// later cannot redirect it.
pub fn open_target(root: &Sysroot, p: &Path) -> Result<OpenedDir> {
    let shown = crate::term::safe_path(p);
    let abs = lexical_absolute(p).with_context(|| format!("cannot resolve {shown}"))?;
    if abs == Path::new("/") {
        bail!("refusing to put / on tmpfs; give a directory such as /tmp");
    }
    let d = match open_dir(root.root(), &abs) {
        Ok(d) => d,
        Err(ResolveError::NotFound) => bail!(
            "{shown}: no such directory; check the path, or create it first (mkdir -p {shown})"
        ),
        Err(ResolveError::NotADirectory) => bail!(
            "{shown}: is a file, not a directory; tmpfs is mounted on a directory (give the directory that should hold the files)"
        ),
        Err(ResolveError::Symlink { link, target }) => bail!(
            "{shown}: {} is a symbolic link to {}; tmpfsctl does not follow links (the link could be changed under it): \
             pass the target instead, e.g. `{}`",
            crate::term::safe_path(&link),
            crate::term::safe_path(&target),
            crate::term::safe_path(&target.join(abs.strip_prefix(&link).unwrap_or(Path::new(""))))
        ),
        Err(ResolveError::Moved) => bail!(
            "{shown}: was renamed or replaced while being opened; make sure nobody is moving it and retry"
        ),
        Err(ResolveError::Io(e)) => bail!("{shown}: cannot be opened: {e}"),
    };
    if let Some(why) = untrusted_writer(root.root(), &d, &caller_uids()) {
        bail!(
            "refusing {}: {why}, so it could be swapped for another directory while tmpfsctl works on it \
             (as root, on the wrong files); give a directory that only root (or you) can change",
            crate::term::safe_path(&d.path)
        );
    }
    Ok(d)
}

/// DIR's absolute path on the inspected system (see [`open_target`]).
pub fn resolve_dir(root: &Sysroot, p: &Path) -> Result<PathBuf> {
    Ok(open_target(root, p)?.path)
}

/// Refuse what must never go on tmpfs, with no override: the system's own
/// directories.
pub fn refuse_system_dir(dir: &Path) -> Result<()> {
    if is_system_dir(dir) {
        bail!(
            "refusing to put {} on tmpfs: the system keeps files there that must survive a reboot \
             (and hiding them breaks it); give a directory such as /tmp or one of your own, e.g. /mnt/scratch",
            dir.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_dirs_are_recognised_and_their_children_are_not() {
        for d in [
            "/", "/etc", "/var", "/lib", "/lib64", "/libx32", "/home", "/proc",
        ] {
            assert!(is_system_dir(Path::new(d)), "{d}");
        }
        for d in [
            "/var/lib/dpkg",
            "/var/lib/dpkg/info",
            "/var/lib/apt",
            "/var/lib/rpm",
            "/usr/lib/sysimage/rpm",
            "/usr/local",
            "/usr/local/bin",
            "/etc/ssl/private",
            "/etc/ssl",
            "/var/lib",
            "/usr/lib",
        ] {
            assert!(is_system_dir(Path::new(d)), "{d}");
        }
        for d in [
            "/tmp",
            "/var/tmp",
            "/var/cache/x",
            "/var/log",
            "/home/u/build",
            "/var/lib/dpkgx",
            "/usr/localx",
            "/etc/ssl/certs",
        ] {
            assert!(!is_system_dir(Path::new(d)), "{d}");
        }
    }

    #[test]
    fn directories_that_outlive_a_reboot_are_recognised() {
        for d in [
            "/var/log",
            "/var/log/nginx",
            "/var/cache",
            "/var/cache/apt",
            "/var/tmp",
            "/var/spool",
            "/var/mail",
            "/srv",
            "/srv/data",
            "/home",
            "/home/u/build",
        ] {
            assert!(outlives_reboot(Path::new(d)).is_some(), "{d}");
        }
        for d in [
            "/tmp",
            "/run/x",
            "/var/tmp/my-build",
            "/var/logs",
            "/srvx",
            "/mnt/x",
        ] {
            assert!(outlives_reboot(Path::new(d)).is_none(), "{d}");
        }
    }

    #[test]
    fn lexical_absolute_takes_dots_by_name() {
        assert_eq!(
            lexical_absolute(Path::new("/a/./b/../c")).unwrap(),
            PathBuf::from("/a/c")
        );
        assert_eq!(
            lexical_absolute(Path::new("/..")).unwrap(),
            PathBuf::from("/")
        );
    }

    #[test]
    fn a_symlink_anywhere_is_refused_naming_its_target() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("real/d")).unwrap();
        std::os::unix::fs::symlink("real", t.path().join("link")).unwrap();
        let d = open_dir(t.path(), Path::new("/real/d")).unwrap();
        assert_eq!(d.path, PathBuf::from("/real/d"));
        assert!(d.still_in_place());
        for p in ["/link", "/link/d"] {
            match open_dir(t.path(), Path::new(p)) {
                Err(ResolveError::Symlink { link, target }) => {
                    assert_eq!(link, PathBuf::from("/link"));
                    assert_eq!(target, PathBuf::from("/real"));
                }
                other => panic!("{p}: {other:?}"),
            }
        }
    }

    /// A tiny package built with rpmbuild and recorded (not installed:
    /// `--justdb`) in the rpm database of a system root in a temp dir.
    #[test]
    fn files_in_an_rpm_database_are_package_files() {
        let has = |p: &str| {
            std::process::Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !has("rpm") || !has("rpmbuild") {
            crate::skip!("no rpm/rpmbuild here (scripts/setup installs the rpm package)");
        }
        let t = tempfile::tempdir().unwrap();
        let top = t.path().join("build");
        std::fs::create_dir_all(top.join("SPECS")).unwrap();
        let spec = top.join("SPECS/probe.spec");
        std::fs::write(
            &spec,
            "Name: tmpfsctl-probe\nVersion: 1\nRelease: 1\nSummary: probe\nLicense: MIT\nBuildArch: noarch\n\
             %description\nprobe\n%install\nmkdir -p %{buildroot}/data/app\n\
             echo x > %{buildroot}/data/app/app.conf\necho y > %{buildroot}/data/app/gone.conf\n\
             %files\n/data/app/app.conf\n/data/app/gone.conf\n",
        )
        .unwrap();
        let ok = |c: &mut std::process::Command| {
            let o = c.output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        };
        ok(std::process::Command::new("rpmbuild")
            .args(["-bb", "--quiet", "--define"])
            .arg(format!("_topdir {}", top.display()))
            .arg("--define")
            .arg(format!("_rpmdir {}", t.path().join("out").display()))
            .arg(&spec));
        let rpm = t.path().join("out/noarch/tmpfsctl-probe-1-1.noarch.rpm");
        let root = t.path().join("root");
        std::fs::create_dir_all(root.join("var/lib/rpm")).unwrap();
        std::fs::create_dir_all(root.join("data/app")).unwrap();
        std::fs::write(root.join("data/app/app.conf"), b"x").unwrap();
        std::fs::write(root.join("data/app/mine.txt"), b"not packaged").unwrap();
        // Without a database yet: nothing.
        assert_eq!(package_files(&root, Path::new("/data/app"), 5).1, 0);
        ok(std::process::Command::new("rpm")
            .arg("--root")
            .arg(&root)
            .args(["--dbpath", "/var/lib/rpm", "-i", "--justdb", "--nodeps"])
            .arg(&rpm));
        let (files, n) = package_files(&root, Path::new("/data/app"), 5);
        // gone.conf is in the database but not on disk: not counted.
        assert_eq!(files, vec![PathBuf::from("/data/app/app.conf")]);
        assert_eq!(n, 1);
        assert_eq!(package_files(&root, Path::new("/data/other"), 5).1, 0);
    }
}
