//! Making a mount survive reboots (fstab line or systemd drop-in) and undoing
//! it. Edits are pure functions over bytes; writing is atomic (temp file in
//! the same directory, fsync, rename, fsync of the directory) and checked by
//! the system's own tools before the rename.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::sys::atomic::AtomicWrite;

use super::plan::DROPIN_MARKER;
use crate::sys::fstab::{Fstab, FstabLine, parse_line};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Edit {
    Appended,
    Replaced,
    Unchanged,
    Removed,
    Restored,
}

/// Index of the last line that is an entry for `dir` (the one `mount -a` uses).
fn last_entry_for(f: &Fstab, dir: &Path) -> Option<usize> {
    f.lines
        .iter()
        .rposition(|l| l.entry.as_ref().is_some_and(|e| e.file == dir))
}

/// Put `line` into the fstab text as the entry for `dir`: replace the existing
/// entry's bytes or append. Every other byte stays as it was.
pub fn fstab_with_line(text: &[u8], dir: &Path, line: &str) -> (Vec<u8>, Edit) {
    let mut f = Fstab::parse(text);
    let new = FstabLine {
        raw: line.as_bytes().to_vec(),
        entry: parse_line(line.as_bytes()).ok().flatten(),
    };
    match last_entry_for(&f, dir) {
        Some(i) if f.lines[i].raw == new.raw => (text.to_vec(), Edit::Unchanged),
        Some(i) => {
            f.lines[i] = new;
            (f.to_bytes(), Edit::Replaced)
        }
        None => {
            // A file without a final newline gets one: the only byte we add outside our line.
            f.lines.push(new);
            f.trailing_newline = true;
            (f.to_bytes(), Edit::Appended)
        }
    }
}

/// Undo [`fstab_with_line`]: the `fstype` entry for `dir` becomes the line the
/// backup had for `dir`, or goes away when the backup had none.
pub fn fstab_without_line(
    text: &[u8],
    backup: Option<&[u8]>,
    dir: &Path,
    fstype: &str,
) -> (Vec<u8>, Edit) {
    let mut f = Fstab::parse(text);
    let Some(i) = last_entry_for(&f, dir).filter(|&i| {
        f.lines[i]
            .entry
            .as_ref()
            .is_some_and(|e| e.vfstype == fstype)
    }) else {
        return (text.to_vec(), Edit::Unchanged);
    };
    let original = backup.and_then(|b| {
        let bf = Fstab::parse(b);
        last_entry_for(&bf, dir).map(|j| bf.lines[j].clone())
    });
    match original {
        Some(o) if o.raw == f.lines[i].raw => (text.to_vec(), Edit::Unchanged),
        Some(o) => {
            f.lines[i] = o;
            (f.to_bytes(), Edit::Restored)
        }
        None => {
            f.lines.remove(i);
            if f.lines.is_empty() {
                f.trailing_newline = false;
            }
            (f.to_bytes(), Edit::Removed)
        }
    }
}

pub fn backup_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".tmpfsctl.bak");
    PathBuf::from(s)
}

/// Copy `path` to its backup name unless a backup already exists (that one
/// holds the state from before tmpfsctl first touched the file); `what`
/// names the file for errors. Written like the file itself (fsynced,
/// renamed, directory fsynced): a power cut never leaves an empty backup
/// that revert would put back.
pub fn make_backup(path: &Path, what: &str) -> Result<Option<PathBuf>> {
    let b = backup_path(path);
    if b.exists() {
        return Ok(Some(b));
    }
    match std::fs::read(path) {
        Ok(bytes) => {
            AtomicWrite::config(what).write(&b, &bytes)?;
            Ok(Some(b))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// `findmnt --verify` on our entry only: other lines may name devices this
/// machine does not have (a fixture, an image), which is not ours to judge.
pub fn verify_fstab(file: &Path, dir: &Path) -> Result<()> {
    if !have("findmnt") {
        crate::command::note("findmnt not found; skipping `findmnt --verify` (install util-linux)");
        return Ok(());
    }
    let out = Command::new("findmnt")
        .arg("--verify")
        .arg("--tab-file")
        .arg(file)
        .arg("--target")
        .arg(dir)
        .output()
        .context("cannot run findmnt")?;
    if !out.status.success() {
        bail!(
            "`findmnt --verify` rejects the new fstab entry for {}:\n{}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// `systemd-analyze verify` on a copy of the unit with the new drop-in next to it.
pub fn verify_dropin(fragment: &Path, unit: &str, dropin: &str) -> Result<()> {
    if !have("systemd-analyze") {
        crate::command::note("systemd-analyze not found; skipping `systemd-analyze verify`");
        return Ok(());
    }
    let t = tempfile::Builder::new()
        .prefix("tmpfsctl-verify-")
        .tempdir()?;
    let u = t.path().join(unit);
    std::fs::copy(fragment, &u).with_context(|| format!("cannot read {}", fragment.display()))?;
    std::fs::create_dir(t.path().join(format!("{unit}.d")))?;
    std::fs::write(t.path().join(format!("{unit}.d/override.conf")), dropin)?;
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&u)
        .output()
        .context("cannot run systemd-analyze")?;
    let err = String::from_utf8_lossy(&out.stderr);
    let ours: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("override.conf") || l.contains(unit))
        .collect();
    if !out.status.success() || !ours.is_empty() {
        bail!("`systemd-analyze verify` rejects the drop-in for {unit}:\n{err}");
    }
    Ok(())
}

/// Write the drop-in; an existing one that is not ours is kept as a backup.
pub fn write_dropin(
    path: &Path,
    content: &str,
    check: impl FnOnce(&Path) -> Result<()>,
) -> Result<(Edit, Option<PathBuf>)> {
    let parent = path.parent().context("drop-in path has no directory")?;
    let old = std::fs::read_to_string(path).ok();
    if old.as_deref() == Some(content) {
        return Ok((Edit::Unchanged, None));
    }
    let mut backup = None;
    if let Some(o) = &old
        && !o.starts_with(DROPIN_MARKER)
    {
        backup = make_backup(path, "the backup of the unit file")?;
    }
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    AtomicWrite::config("the unit file").write_checked(path, content.as_bytes(), check)?;
    Ok((
        if old.is_some() {
            Edit::Replaced
        } else {
            Edit::Appended
        },
        backup,
    ))
}

/// Remove our drop-in, putting back what it replaced.
pub fn remove_dropin(path: &Path) -> Result<Edit> {
    let Ok(old) = std::fs::read_to_string(path) else {
        return Ok(Edit::Unchanged);
    };
    if !old.starts_with(DROPIN_MARKER) {
        return Ok(Edit::Unchanged);
    }
    // Durably, like the write: a power cut after revert reported the unit
    // restored must not bring the drop-in back.
    let b = backup_path(path);
    if b.exists() {
        let bytes = std::fs::read(&b).with_context(|| format!("cannot read {}", b.display()))?;
        AtomicWrite::config("the unit file").write(path, &bytes)?;
        AtomicWrite::config("the backup of the unit file").remove(&b)?;
        return Ok(Edit::Restored);
    }
    AtomicWrite::config("the unit file").remove(path)?;
    if let Some(p) = path.parent() {
        let _ = std::fs::remove_dir(p); // only if empty
    }
    Ok(Edit::Removed)
}

/// Tell a running systemd that fstab or a unit changed, when it is the real one.
pub fn daemon_reload_if_real(path: &Path, real_prefix: &str) {
    if path.starts_with(real_prefix) && Path::new("/run/systemd/system").exists() {
        let _ = Command::new("systemctl").arg("daemon-reload").status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian 12's installer output, with the quirks real files have: aligned
    /// columns, tabs, comments, a commented-out line, CRLF-free, blank lines.
    /// A Debian 12 installer fstab (shared with the integration tests).
    pub const DEBIAN: &[u8] = include_bytes!("../../tests/fixtures/debian.fstab");

    #[test]
    fn fstab_edit_round_trips_outside_the_managed_line() {
        let dir = Path::new("/tmp");
        let line = "tmpfs /tmp tmpfs nosuid,nodev,size=50%,nr_inodes=1048576,mode=1777 0 0";
        let (new, e) = fstab_with_line(DEBIAN, dir, line);
        assert_eq!(e, Edit::Appended);
        let mut want = DEBIAN.to_vec();
        want.extend_from_slice(line.as_bytes());
        want.push(b'\n');
        assert_eq!(new, want);
        // Second time: nothing.
        let (again, e) = fstab_with_line(&new, dir, line);
        assert_eq!(e, Edit::Unchanged);
        assert_eq!(again, new);
        // Other options: the same line is replaced in place.
        let line2 = line.replace("50%", "2G");
        let (third, e) = fstab_with_line(&new, dir, &line2);
        assert_eq!(e, Edit::Replaced);
        assert_eq!(third, [DEBIAN, line2.as_bytes(), b"\n"].concat());
        // Revert with the backup (no /tmp line): removed, file as it was.
        let (back, e) = fstab_without_line(&third, Some(DEBIAN), dir, "tmpfs");
        assert_eq!(e, Edit::Removed);
        assert_eq!(back, DEBIAN);
    }

    #[test]
    fn a_foreign_dropin_is_backed_up_and_put_back() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("tmp.mount.d/override.conf");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let theirs = "[Mount]\nOptions=size=1G\n";
        std::fs::write(&p, theirs).unwrap();
        let ours = format!("{DROPIN_MARKER}\n[Mount]\nOptions=size=2G\n");
        let (edit, backup) = write_dropin(&p, &ours, |_| Ok(())).unwrap();
        assert_eq!(edit, Edit::Replaced);
        let b = backup.expect("a backup of the foreign drop-in");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), theirs);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), ours);
        // A second write keeps the first backup: it holds what was there
        // before tmpfsctl.
        let ours2 = ours.replace("2G", "3G");
        write_dropin(&p, &ours2, |_| Ok(())).unwrap();
        assert_eq!(std::fs::read_to_string(&b).unwrap(), theirs);
        assert_eq!(remove_dropin(&p).unwrap(), Edit::Restored);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), theirs);
        assert!(!b.exists(), "the backup is gone once put back");
        // Theirs again: not ours to remove.
        assert_eq!(remove_dropin(&p).unwrap(), Edit::Unchanged);
        // Ours with no backup: removed.
        std::fs::write(&p, &ours).unwrap();
        assert_eq!(remove_dropin(&p).unwrap(), Edit::Removed);
        assert!(!p.exists());
    }

    #[test]
    fn replaces_and_restores_an_existing_entry() {
        let orig = b"UUID=1 / ext4 defaults 0 1\n/dev/sdb1\t/tmp\text4\tdefaults\t0 2\nproc /proc proc defaults 0 0";
        let line = "tmpfs /tmp tmpfs nosuid,nodev 0 0";
        let (new, e) = fstab_with_line(orig, Path::new("/tmp"), line);
        assert_eq!(e, Edit::Replaced);
        assert_eq!(new, b"UUID=1 / ext4 defaults 0 1\ntmpfs /tmp tmpfs nosuid,nodev 0 0\nproc /proc proc defaults 0 0");
        let (back, e) = fstab_without_line(&new, Some(orig), Path::new("/tmp"), "tmpfs");
        assert_eq!(e, Edit::Restored);
        assert_eq!(back, orig);
        // No trailing newline, no entry: one newline is added before our line.
        let (new, _) = fstab_with_line(b"a / ext4 defaults 0 1", Path::new("/tmp"), line);
        assert_eq!(
            new,
            b"a / ext4 defaults 0 1\ntmpfs /tmp tmpfs nosuid,nodev 0 0\n"
        );
        let (new, _) = fstab_with_line(b"", Path::new("/tmp"), line);
        assert_eq!(new, b"tmpfs /tmp tmpfs nosuid,nodev 0 0\n");
        let (back, _) = fstab_without_line(&new, None, Path::new("/tmp"), "tmpfs");
        assert_eq!(back, b"");
    }
}
