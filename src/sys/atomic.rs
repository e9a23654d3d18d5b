//! The one way tmpfsctl replaces a file: readers (node_exporter, mount(8), a
//! browser, a script) see either the old file or the whole new one, and a
//! crash or kill leaves no half-written file under the real name.
//!
//! Temp file in the same directory (rename(2) is atomic only within one
//! filesystem), mode and owner settled, fsync, an optional check of the
//! finished temp file (e.g. `findmnt --verify`), rename, fsync of the
//! directory so the rename itself survives a power loss. SIGINT/SIGTERM/SIGHUP
//! are held back while the temp file exists so an interrupt cannot orphan it.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rustix::fs::{Access, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::knockout::durable;
use super::outdir::{AtName, OutDir};
use super::signals::SignalsHeld;
use crate::term::safe_path;

/// The prefix of every temp file tmpfsctl creates next to a file it replaces;
/// sweeps of leftovers from a killed run look for it.
pub const TEMP_PREFIX: &str = ".tmpfsctl-";

/// The mode a new file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewMode {
    /// Keep the mode and owner of the file being replaced; 0644 for a new one
    /// (config files such as fstab).
    KeepOr0644,
    /// Always this mode (reports: 0644 so other users and services can read).
    Exactly(u32),
}

/// How to replace one file.
#[derive(Debug, Clone, Copy)]
pub struct AtomicWrite<'a> {
    /// How the user named the file, for errors: `--output FILE`, `--export-json`,
    /// `the fstab`. Errors say "`what` PATH: …" so the user knows which option
    /// to change.
    pub what: &'a str,
    pub mode: NewMode,
}

impl<'a> AtomicWrite<'a> {
    /// A report or data file named by option `what`, world-readable.
    pub fn report(what: &'a str) -> Self {
        AtomicWrite {
            what,
            mode: NewMode::Exactly(0o644),
        }
    }

    /// A configuration file whose mode and owner must be kept.
    pub fn config(what: &'a str) -> Self {
        AtomicWrite {
            what,
            mode: NewMode::KeepOr0644,
        }
    }

    /// Replace `dest` with `data`.
    pub fn write(&self, dest: &Path, data: &[u8]) -> Result<()> {
        self.write_checked(dest, data, |_| Ok(()))
    }

    /// Replace `dest` with `data` after `check` accepted the finished temp file;
    /// an error from `check` leaves `dest` untouched and no temp file behind.
    /// The directory is reached by [`OutDir`] (no link another user
    /// controls) and every step after is relative to its descriptor.
    pub fn write_checked(
        &self,
        dest: &Path,
        data: &[u8],
        check: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let what = self.what;
        if is_fd_alias(dest) {
            return self.write_fd_alias(dest, data);
        }
        let (dir, name) = open_dir_of(what, dest)?;
        self.write_in(&dir, dest, name, data, check)
    }

    /// Replace the file `name` in the directory open as `dir` (at `path`,
    /// for messages) with `data`: a file in a directory already opened and
    /// checked (a persist store), so no path is walked again. A symlink or
    /// FIFO at `name` is replaced by the rename, never followed or opened.
    pub fn write_beneath(
        &self,
        dir: std::os::fd::BorrowedFd<'_>,
        path: &Path,
        name: &str,
        data: &[u8],
    ) -> Result<()> {
        let dir = OutDir {
            fd: rustix::io::fcntl_dupfd_cloexec(dir, 0)?,
            path: path.to_path_buf(),
        };
        let dest = path.join(name);
        let _held = SignalsHeld::new();
        self.replace(&dir, &dest, std::ffi::OsStr::new(name), data, |_| Ok(()))
    }

    fn write_in(
        &self,
        dir: &OutDir,
        dest: &Path,
        name: &std::ffi::OsStr,
        data: &[u8],
        check: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let what = self.what;
        if dir.at_name(what, dest, name)? == AtName::Stream {
            if self.mode == NewMode::KeepOr0644 {
                // A configuration file must stay a file others can read back.
                bail!(
                    "{what} {}: is a device or FIFO, not a file; give a regular file",
                    safe_path(dest)
                );
            }
            let fd = dir.open_stream(what, dest, name)?;
            return write_all_fd(&fd, data)
                .with_context(|| format!("{what} {}: writing", safe_path(dest)));
        }
        let _held = SignalsHeld::new();
        self.replace(dir, dest, name, data, check)
    }

    /// Temp file, mode, fsync, `check`, rename over `name`, fsync of the
    /// directory (signals held by the caller).
    fn replace(
        &self,
        dir: &OutDir,
        dest: &Path,
        name: &std::ffi::OsStr,
        data: &[u8],
        check: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let what = self.what;
        let tmp = TempAt::create(dir, what, dest)?;
        let f = std::fs::File::from(tmp.fd.try_clone()?);
        (&f).write_all(data)
            .with_context(|| format!("{what} {}: writing", safe_path(dest)))?;
        // The file being replaced, not what a symlink in its place leads to.
        let old = rustix::fs::statat(&dir.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .filter(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile);
        match (self.mode, old) {
            (NewMode::KeepOr0644, Some(st)) => {
                f.set_permissions(std::fs::Permissions::from_mode(st.st_mode & 0o7777))?;
                std::os::unix::fs::fchown(&f, Some(st.st_uid), Some(st.st_gid))?;
            }
            (NewMode::KeepOr0644, None) => {
                f.set_permissions(std::fs::Permissions::from_mode(0o644))?
            }
            (NewMode::Exactly(mode), _) => {
                f.set_permissions(std::fs::Permissions::from_mode(mode))?
            }
        }
        durable!("atomic-file-fsync", what, f.sync_all())
            .with_context(|| format!("{what} {}: fsync", safe_path(dest)))?;
        check(&dir.path.join(&tmp.name))?;
        rustix::fs::renameat(&dir.fd, &tmp.name, &dir.fd, name).with_context(|| {
            format!(
                "{what} {}: cannot rename the new file into place",
                safe_path(dest)
            )
        })?;
        tmp.keep();
        durable!("atomic-dir-fsync", what, rustix::fs::fsync(&dir.fd)).with_context(|| {
            format!(
                "{what} {}: fsync of {}",
                safe_path(dest),
                safe_path(&dir.path)
            )
        })?;
        Ok(())
    }
}

/// A temp file next to the file it will replace, made by descriptor, removed
/// again unless kept.
struct TempAt<'d> {
    dir: &'d OutDir,
    name: std::ffi::OsString,
    fd: std::os::fd::OwnedFd,
    kept: bool,
}

impl<'d> TempAt<'d> {
    fn create(dir: &'d OutDir, what: &str, dest: &Path) -> Result<TempAt<'d>> {
        let mut last = Errno::EXIST;
        for _ in 0..16 {
            let name = std::ffi::OsString::from(format!(
                "{TEMP_PREFIX}{:016x}.tmp",
                rand::random::<u64>()
            ));
            // O_NOFOLLOW|O_EXCL: never a name someone else made first, and
            // O_NONBLOCK in case that name is a FIFO.
            match rustix::fs::openat(
                &dir.fd,
                &name,
                OFlags::WRONLY
                    | OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::NOFOLLOW
                    | OFlags::NONBLOCK
                    | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(fd) => {
                    return Ok(TempAt {
                        dir,
                        name,
                        fd,
                        kept: false,
                    });
                }
                Err(Errno::EXIST) => last = Errno::EXIST,
                Err(e) => {
                    last = e;
                    break;
                }
            }
        }
        Err(std::io::Error::from(last)).with_context(|| {
            format!(
                "{what} {}: cannot create a file in {}; give a path in a directory that exists and you can write",
                safe_path(dest),
                safe_path(&dir.path)
            )
        })
    }

    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for TempAt<'_> {
    fn drop(&mut self) {
        if !self.kept {
            let _ = rustix::fs::unlinkat(&self.dir.fd, &self.name, AtFlags::empty());
        }
    }
}

/// The checked directory of `dest` and its file name.
fn open_dir_of<'p>(what: &str, dest: &'p Path) -> Result<(OutDir, &'p std::ffi::OsStr)> {
    let name = match dest.components().next_back() {
        Some(std::path::Component::Normal(n)) => n,
        _ => bail!(
            "{what} {}: is a directory; give a file name inside it, e.g. {}",
            safe_path(dest),
            safe_path(&dest.join("tmpfsctl.out"))
        ),
    };
    Ok((OutDir::open(what, dest)?, name))
}

fn write_all_fd(fd: &std::os::fd::OwnedFd, data: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::File::from(fd.try_clone()?);
    f.write_all(data)?;
    f.flush()
}

/// `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`,
/// `/proc/PID/fd/N`: names of a descriptor the caller opened, the only
/// symbolic links tmpfsctl writes through.
fn is_fd_alias(dest: &Path) -> bool {
    use std::path::Component;
    let parts: Vec<&std::ffi::OsStr> = dest
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let s = |i: usize| parts.get(i).and_then(|p| p.to_str());
    let number =
        |i: usize| s(i).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    match (parts.len(), s(0), s(1), s(2)) {
        (2, Some("dev"), Some("stdout" | "stderr"), _) => true,
        (3, Some("dev"), Some("fd"), _) => number(2),
        (4, Some("proc"), Some("self" | "thread-self"), Some("fd")) => number(3),
        (4, Some("proc"), _, Some("fd")) => number(1) && number(3),
        _ => false,
    }
}

/// Why an fd alias cannot be written to: the descriptor it names is a
/// directory, a block device or a socket.
fn fd_alias_refusal(dest: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(dest).map(|m| m.file_type()) {
        Ok(t) if t.is_dir() => Some("a directory"),
        Ok(t) if t.is_block_device() => Some("a block device"),
        Ok(t) if t.is_socket() => Some("a socket"),
        _ => None,
    }
}

impl AtomicWrite<'_> {
    /// Remove `dest` for good: unlinked through the same directory
    /// descriptor a write uses, then that directory fsynced, so a power cut
    /// cannot bring the file back (a stale backup would be put back by a
    /// later revert). A missing file is already removed.
    pub fn remove(&self, dest: &Path) -> Result<()> {
        let what = self.what;
        let (dir, name) = open_dir_of(what, dest)?;
        match rustix::fs::unlinkat(&dir.fd, name, AtFlags::empty()) {
            Ok(()) => {}
            Err(Errno::NOENT) => return Ok(()),
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("{what} {}: cannot remove", safe_path(dest)));
            }
        }
        durable!("remove-dir-fsync", what, rustix::fs::fsync(&dir.fd)).with_context(|| {
            format!(
                "{what} {}: fsync of {}",
                safe_path(dest),
                safe_path(&dir.path)
            )
        })
    }

    /// /dev/stdout, /dev/fd/N, /proc/self/fd/N are links to whatever the
    /// caller opened, a regular file too (`> out.json`): a rename would
    /// replace the link itself and the data would never reach the file. So
    /// it is written in place, the one link followed: the caller made it.
    fn write_fd_alias(&self, dest: &Path, data: &[u8]) -> Result<()> {
        let what = self.what;
        if let Some(k) = fd_alias_refusal(dest) {
            bail!(
                "{what} {}: is {k}; give a regular file name",
                safe_path(dest)
            );
        }
        if self.mode == NewMode::KeepOr0644 {
            bail!(
                "{what} {}: is a descriptor, not a file; give a regular file",
                safe_path(dest)
            );
        }
        let fd = rustix::fs::open(
            dest,
            OFlags::WRONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NXIO => anyhow::anyhow!(
                "{what} {}: is a FIFO no one is reading; start its reader first",
                safe_path(dest)
            ),
            e => anyhow::anyhow!("{what} {}: cannot open: {e}", safe_path(dest)),
        })?;
        let fl = rustix::fs::fcntl_getfl(&fd)?;
        rustix::fs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK)?;
        write_all_fd(&fd, data).with_context(|| format!("{what} {}: writing", safe_path(dest)))
    }
}

/// Fail fast (before any measuring or changing) when `dest` could not be
/// written later: its directory must be reachable through no link another
/// user controls ([`OutDir`]) and writable, and what is at its name must
/// not be a directory, a block device, a socket, or a FIFO or device
/// another user owns.
pub fn check_writable(what: &str, dest: &Path) -> Result<()> {
    if is_fd_alias(dest) {
        if let Some(k) = fd_alias_refusal(dest) {
            bail!(
                "{what} {}: is {k}; give a regular file name",
                safe_path(dest)
            );
        }
        return Ok(());
    }
    let (dir, name) = open_dir_of(what, dest)?;
    if dir.at_name(what, dest, name)? == AtName::Stream {
        return Ok(());
    }
    if rustix::fs::accessat(&dir.fd, ".", Access::WRITE_OK, AtFlags::empty()).is_err() {
        bail!(
            "{what} {}: cannot write in {}; give a path in a directory you can write",
            safe_path(dest),
            safe_path(&dir.path)
        );
    }
    Ok(())
}

/// Whether writing `a` and writing `b` would land in one file, however each
/// is spelled: `./r.csv` and `r.csv`, relative and absolute, through a
/// symlinked directory (directories are resolved; a final symlink is not,
/// since it is replaced rather than written through), or two names of one
/// existing regular file (same device and inode: also what two fd aliases
/// of one redirected file are). Two names of one device or FIFO are not the
/// same destination: each write goes through in turn, nothing is replaced.
pub fn same_destination(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    if let (Some(x), Some(y)) = (resolved(a), resolved(b))
        && x == y
    {
        return true;
    }
    matches!((file_identity(a), file_identity(b)), (Some(x), Some(y)) if x == y)
}

/// `dest`'s directory with every link, `.` and `..` resolved, joined with
/// its file name (which need not exist yet).
fn resolved(dest: &Path) -> Option<PathBuf> {
    let name = dest.file_name()?;
    Some(std::fs::canonicalize(parent_dir(dest)).ok()?.join(name))
}

/// (device, inode) of the regular file a write to `dest` would change: the
/// entry itself, or for an fd alias the file behind it.
pub fn file_identity(dest: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = if is_fd_alias(dest) {
        std::fs::metadata(dest)
    } else {
        std::fs::symlink_metadata(dest)
    }
    .ok()?;
    m.is_file().then(|| (m.dev(), m.ino()))
}

fn parent_dir(dest: &Path) -> PathBuf {
    match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn report_replaces_whole_file_world_readable_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        std::fs::write(&p, "old").unwrap();
        AtomicWrite::report("--export-json")
            .write(&p, b"new")
            .unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o644);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn config_keeps_mode_and_a_failed_check_changes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fstab");
        std::fs::write(&p, "old\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let w = AtomicWrite::config("--fstab");
        let e = w.write_checked(&p, b"new\n", |_| bail!("no")).unwrap_err();
        assert_eq!(e.to_string(), "no");
        assert_eq!(std::fs::read(&p).unwrap(), b"old\n");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        w.write_checked(&p, b"new\n", |tmp| {
            assert_eq!(std::fs::read(tmp).unwrap(), b"new\n");
            Ok(())
        })
        .unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new\n");
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn errors_name_the_option_the_user_gave() {
        let e = AtomicWrite::report("--html")
            .write(Path::new("/nonexistent/dir/x.html"), b"x")
            .unwrap_err();
        let m = format!("{e:#}");
        assert!(m.starts_with("--html /nonexistent/dir/x.html:"), "{m}");
        let e = check_writable("--html", Path::new("/nonexistent/dir/x.html")).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let e = AtomicWrite::report("--output")
            .write(d.path(), b"x")
            .unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        check_writable("--html", &d.path().join("ok.html")).unwrap();
    }

    #[test]
    fn a_symlink_in_place_of_the_file_is_replaced_never_followed() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
        for w in [
            AtomicWrite::report("--output"),
            AtomicWrite::config("--fstab"),
        ] {
            let dest = d.path().join("out");
            let _ = std::fs::remove_file(&dest);
            std::os::unix::fs::symlink(&victim, &dest).unwrap();
            check_writable(w.what, &dest).unwrap();
            w.write(&dest, b"new").unwrap();
            assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
            assert!(std::fs::symlink_metadata(&dest).unwrap().is_file());
            assert_eq!(std::fs::read(&dest).unwrap(), b"new");
            // Not the victim's mode either.
            assert_eq!(std::fs::metadata(&dest).unwrap().mode() & 0o777, 0o644);
        }
        for p in [
            "/dev/stdout",
            "/dev/stderr",
            "/dev/fd/3",
            "/proc/self/fd/1",
            "/proc/thread-self/fd/2",
            "/proc/42/fd/7",
        ] {
            assert!(is_fd_alias(Path::new(p)), "{p}");
        }
        for p in [
            "/dev/shm/x",
            "/dev/fd",
            "/dev/fd/x",
            "/proc/self/fd",
            "/proc/x/fd/1",
            "/tmp/dev/stdout",
        ] {
            assert!(!is_fd_alias(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn a_device_is_written_in_place_never_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        crate::test_support::mkfifo(&fifo, 0o600);
        check_writable("--output", &fifo).unwrap();
        // No reader: an error at once, not a wait.
        let e = AtomicWrite::report("--output")
            .write(&fifo, b"hello")
            .unwrap_err();
        assert!(format!("{e:#}").contains("no one is reading"), "{e:#}");
        let reader = rustix::fs::open(
            &fifo,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        AtomicWrite::report("--output")
            .write(&fifo, b"hello")
            .unwrap();
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(reader), &mut got).unwrap();
        assert_eq!(got, b"hello");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        // /dev/null stays the device (the bug: it became a regular file).
        AtomicWrite::report("--output")
            .write(Path::new("/dev/null"), b"x")
            .unwrap();
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
        let e = AtomicWrite::config("the fstab")
            .write(&fifo, b"x")
            .unwrap_err();
        assert!(format!("{e:#}").contains("not a file"), "{e:#}");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn one_file_is_one_destination_however_it_is_spelled() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let via = d.path().join("via");
        std::os::unix::fs::symlink(&real, &via).unwrap();
        let r = real.join("r.csv");
        // Not yet written: the directories decide.
        assert!(same_destination(&r, &via.join("r.csv")));
        assert!(same_destination(&r, &real.join("./r.csv")));
        assert!(same_destination(&r, &d.path().join("via/../real/r.csv")));
        assert!(!same_destination(&r, &real.join("s.csv")));
        // Two names of one existing file.
        std::fs::write(&r, "x").unwrap();
        let hard = d.path().join("hard.csv");
        std::fs::hard_link(&r, &hard).unwrap();
        assert!(same_destination(&r, &hard));
        // A final symlink is replaced, not written through: its own file.
        let link = d.path().join("link.csv");
        std::os::unix::fs::symlink(&r, &link).unwrap();
        assert!(!same_destination(&r, &link));
        // Two names of one FIFO take each write in turn: nothing to lose.
        let fifo = d.path().join("fifo");
        crate::test_support::mkfifo(&fifo, 0o600);
        let fifo2 = d.path().join("fifo2");
        std::fs::hard_link(&fifo, &fifo2).unwrap();
        assert!(!same_destination(&fifo, &fifo2));
    }

    /// Root (these tests run as root in CI) and a stranger's uid.
    const STRANGER: u32 = 65534;

    fn chown(p: &Path, uid: u32) {
        rustix::fs::chownat(
            rustix::fs::CWD,
            p,
            Some(rustix::fs::Uid::from_raw(uid)),
            Some(rustix::fs::Gid::from_raw(uid)),
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .unwrap();
    }

    #[test]
    fn a_fifo_or_device_another_user_owns_is_refused_without_opening_it() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("metrics.prom");
        crate::test_support::mkfifo(&fifo, 0o666);
        chown(&fifo, STRANGER);
        let e = check_writable("--prom", &fifo).unwrap_err().to_string();
        assert!(e.contains("a FIFO that uid 65534 owns"), "{e}");
        let e = AtomicWrite::report("--prom")
            .write(&fifo, b"x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("remove it or give another path"), "{e}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_link_on_the_way_is_followed_only_when_no_other_user_controls_it() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("root-only");
        std::fs::create_dir(&victim).unwrap();
        // A directory a stranger owns (as /var/lib/prometheus is the
        // prometheus user's), with their link in it.
        let theirs = d.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        chown(&theirs, STRANGER);
        let link = theirs.join("node-exporter");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        chown(&link, STRANGER);
        let dest = link.join("tmpfsctl.prom");
        let e = check_writable("--prom", &dest).unwrap_err().to_string();
        assert!(e.contains("symbolic link that uid 65534 owns"), "{e}");
        let e = AtomicWrite::report("--prom")
            .write(&dest, b"x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("give the path without it"), "{e}");
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
        // Root's own link in that directory: they could swap it, refused too.
        chown(&link, 0);
        let e = check_writable("--prom", &dest).unwrap_err().to_string();
        assert!(e.contains("belongs to uid 65534"), "{e}");
        // Root's link in root's directory is followed; writing into the
        // stranger's directory itself is fine (they own what is in it).
        let ours = d.path().join("ours");
        std::os::unix::fs::symlink(&victim, &ours).unwrap();
        AtomicWrite::report("--prom")
            .write(&ours.join("a.prom"), b"a")
            .unwrap();
        assert_eq!(std::fs::read(victim.join("a.prom")).unwrap(), b"a");
        AtomicWrite::report("--prom")
            .write(&theirs.join("b.prom"), b"b")
            .unwrap();
        let m = std::fs::symlink_metadata(theirs.join("b.prom")).unwrap();
        assert!(m.is_file() && m.uid() == 0);
        // A relative path with `..` is walked the same way.
        let rel = theirs.join("node-exporter/../b.prom");
        assert!(check_writable("--prom", &rel).is_err());
    }
}
