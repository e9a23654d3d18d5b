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
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::signals::SignalsHeld;

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
    pub fn write_checked(
        &self,
        dest: &Path,
        data: &[u8],
        check: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let what = self.what;
        let dir = parent_dir(dest);
        if is_dir_not_followed(dest) {
            bail!(
                "{what} {}: is a directory; give a file name inside it, e.g. {}",
                dest.display(),
                dest.join("tmpfsctl.out").display()
            );
        }
        if let Some(kind) = special_kind(dest) {
            return self.write_special(dest, kind, data);
        }
        let _held = SignalsHeld::new();
        let mut tmp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .suffix(".tmp")
            .tempfile_in(&dir)
            .with_context(|| {
                format!(
                    "{what} {}: cannot create a file in {}; give a path in a directory that exists and you can write",
                    dest.display(),
                    dir.display()
                )
            })?;
        tmp.write_all(data)
            .with_context(|| format!("{what} {}: writing", dest.display()))?;
        let f = tmp.as_file();
        // The file being replaced, not what a symlink in its place leads to.
        match (
            self.mode,
            std::fs::symlink_metadata(dest).ok().filter(|m| m.is_file()),
        ) {
            (NewMode::KeepOr0644, Some(m)) => {
                f.set_permissions(std::fs::Permissions::from_mode(m.mode() & 0o7777))?;
                std::os::unix::fs::fchown(f, Some(m.uid()), Some(m.gid()))?;
            }
            (NewMode::KeepOr0644, None) => {
                f.set_permissions(std::fs::Permissions::from_mode(0o644))?
            }
            (NewMode::Exactly(mode), _) => {
                f.set_permissions(std::fs::Permissions::from_mode(mode))?
            }
        }
        f.sync_all()
            .with_context(|| format!("{what} {}: fsync", dest.display()))?;
        check(tmp.path())?;
        tmp.persist(dest).map_err(|e| e.error).with_context(|| {
            format!(
                "{what} {}: cannot rename the new file into place",
                dest.display()
            )
        })?;
        std::fs::File::open(&dir)
            .and_then(|d| d.sync_all())
            .with_context(|| format!("{what} {}: fsync of {}", dest.display(), dir.display()))?;
        Ok(())
    }
}

/// What `dest` is when it exists and is not a regular file or a directory.
/// Renaming over such a name would replace the device itself: as root,
/// `--output /dev/null` would turn the system's /dev/null into a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Special {
    /// A character device or a FIFO (`/dev/null`, `/dev/stdout` on a pipe or
    /// terminal): written in place, as a shell redirection would.
    Stream,
    /// A block device or a socket: never written.
    Refused(&'static str),
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

fn special_kind(dest: &Path) -> Option<Special> {
    use std::os::unix::fs::FileTypeExt;
    // /dev/stdout, /dev/fd/N, /proc/self/fd/N are links to whatever the
    // caller opened, a regular file too (`> out.json`): a rename would
    // replace the link itself and the data would never reach the file.
    if is_fd_alias(dest) {
        return match std::fs::metadata(dest).map(|m| m.file_type()) {
            Ok(t) if t.is_block_device() => Some(Special::Refused("a block device")),
            Ok(t) if t.is_socket() => Some(Special::Refused("a socket")),
            Ok(t) if t.is_dir() => None,
            _ => Some(Special::Stream),
        };
    }
    // Any other symbolic link is never followed, wherever it came from (one
    // planted while the command ran could point at a root-only file): the
    // rename replaces the link itself.
    let t = std::fs::symlink_metadata(dest).ok()?.file_type();
    if t.is_file() || t.is_dir() || t.is_symlink() {
        None
    } else if t.is_char_device() || t.is_fifo() {
        Some(Special::Stream)
    } else if t.is_block_device() {
        Some(Special::Refused("a block device"))
    } else if t.is_socket() {
        Some(Special::Refused("a socket"))
    } else {
        Some(Special::Refused("not a regular file"))
    }
}

impl AtomicWrite<'_> {
    fn write_special(&self, dest: &Path, kind: Special, data: &[u8]) -> Result<()> {
        let what = self.what;
        match (kind, self.mode) {
            (Special::Refused(k), _) => bail!(
                "{what} {}: is {k}; give a regular file name",
                dest.display()
            ),
            // A configuration file must stay a file others can read back.
            (Special::Stream, NewMode::KeepOr0644) => bail!(
                "{what} {}: is a device or FIFO, not a file; give a regular file",
                dest.display()
            ),
            (Special::Stream, NewMode::Exactly(_)) => {
                use std::os::unix::fs::OpenOptionsExt;
                // A device or FIFO as named, or the descriptor an fd alias
                // names; a link swapped in since the check is not followed.
                let nofollow = if is_fd_alias(dest) {
                    0
                } else {
                    libc::O_NOFOLLOW
                };
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(nofollow)
                    .open(dest)
                    .with_context(|| format!("{what} {}: cannot open", dest.display()))?;
                f.write_all(data)
                    .and_then(|()| f.flush())
                    .with_context(|| format!("{what} {}: writing", dest.display()))
            }
        }
    }
}

/// Fail fast (before any measuring or changing) when `dest` could not be
/// written later: its directory must exist and be writable, and it must not
/// be a directory itself.
pub fn check_writable(what: &str, dest: &Path) -> Result<()> {
    if is_dir_not_followed(dest) {
        bail!(
            "{what} {}: is a directory; give a file name inside it",
            dest.display()
        );
    }
    match special_kind(dest) {
        Some(Special::Stream) => return Ok(()),
        Some(Special::Refused(k)) => bail!(
            "{what} {}: is {k}; give a regular file name",
            dest.display()
        ),
        None => {}
    }
    let dir = parent_dir(dest);
    if !dir.is_dir() {
        bail!(
            "{what} {}: directory {} does not exist; create it or give another path",
            dest.display(),
            dir.display()
        );
    }
    if rustix::fs::access(&dir, rustix::fs::Access::WRITE_OK).is_err() {
        bail!(
            "{what} {}: cannot write in {}; give a path in a directory you can write",
            dest.display(),
            dir.display()
        );
    }
    Ok(())
}

/// A directory by that name; a symlink to one (other than an fd alias) is
/// not, since it would be replaced, not written through.
fn is_dir_not_followed(dest: &Path) -> bool {
    if is_fd_alias(dest) {
        dest.is_dir()
    } else {
        std::fs::symlink_metadata(dest).is_ok_and(|m| m.is_dir())
    }
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
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        check_writable("--output", &fifo).unwrap();
        AtomicWrite::report("--output")
            .write(&fifo, b"hello")
            .unwrap();
        assert_eq!(reader.join().unwrap(), b"hello");
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
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let fifo2 = d.path().join("fifo2");
        std::fs::hard_link(&fifo, &fifo2).unwrap();
        assert!(!same_destination(&fifo, &fifo2));
    }
}
