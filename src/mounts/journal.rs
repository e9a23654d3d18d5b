//! A note for each apply or revert in progress, under /run/tmpfsctl-journal/ (gone
//! at reboot, like the live mount it is about). Written before the first
//! change, removed when the command ends — also on errors, which roll back
//! first — so a note whose process is dead means it was killed part way. The
//! next apply or revert of the same directory then sweeps what the killed
//! run left (its temp files beside the fstab, a backup that never got a
//! line), and `status` can name it through [`pending`].

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result};

use crate::sys::atomic::{AtomicWrite, TEMP_PREFIX};
use crate::sys::journal::read_in;
pub use crate::sys::journal::{JOURNAL_DIR, Pending, pending};

/// The note of a run in progress; dropping it (success or a handled error)
/// removes it.
pub struct Journal {
    path: PathBuf,
}

impl Drop for Journal {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// FNV-1a: a name for the note that is the same in every build.
fn key(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in dir.as_os_str().as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}.json")
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Start the note for `op` on `dir` in `base` (normally [`JOURNAL_DIR`]).
pub fn begin_in(base: &Path, op: &str, dir: &Path, fstab: Option<&Path>) -> Result<Journal> {
    std::fs::create_dir_all(base)
        .with_context(|| format!("cannot create {} for the progress note", base.display()))?;
    let p = Pending {
        op: op.into(),
        dir: dir.display().to_string(),
        pid: std::process::id(),
        started_unix_s: now_s(),
        fstab: fstab.map(|f| f.display().to_string()),
    };
    let path = base.join(key(dir));
    AtomicWrite::report("the progress note").write(&path, &serde_json::to_vec(&p)?)?;
    Ok(Journal { path })
}

pub fn begin(op: &str, dir: &Path, fstab: Option<&Path>) -> Result<Journal> {
    begin_in(Path::new(JOURNAL_DIR), op, dir, fstab)
}

/// Before a new run on `dir`: if an earlier one was killed part way, remove
/// what it left beside its fstab — temp files it created and a backup made
/// for a line that never got written — and its note. Returns what was done,
/// for the user.
pub fn recover_in(base: &Path, proc_root: &Path, dir: &Path) -> Vec<String> {
    let mut notes = Vec::new();
    let path = base.join(key(dir));
    let Some(p) = read_in(base)
        .into_iter()
        .find(|(f, _)| *f == path)
        .map(|(_, p)| p)
    else {
        return notes;
    };
    if proc_root.join(p.pid.to_string()).exists() {
        return notes;
    }
    let since = UNIX_EPOCH + std::time::Duration::from_secs(p.started_unix_s.saturating_sub(1));
    let made_by_it = |f: &Path| {
        std::fs::symlink_metadata(f)
            .is_ok_and(|m| m.is_file() && m.modified().is_ok_and(|t| t >= since))
    };
    let mut swept = Vec::new();
    if let Some(fstab) = p.fstab.as_deref().map(Path::new) {
        let parent = fstab.parent().unwrap_or(Path::new("/"));
        if let Ok(rd) = std::fs::read_dir(parent) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with(TEMP_PREFIX)
                    && made_by_it(&e.path())
                    && std::fs::remove_file(e.path()).is_ok()
                {
                    swept.push(e.path().display().to_string());
                }
            }
        }
        let bak = super::persist::backup_path(fstab);
        let has_line = std::fs::read(fstab).is_ok_and(|t| {
            crate::sys::fstab::Fstab::parse(&t)
                .entry_for(dir)
                .is_some_and(|e| e.vfstype == "tmpfs")
        });
        if p.op == "apply" && !has_line && made_by_it(&bak) && std::fs::remove_file(&bak).is_ok() {
            swept.push(bak.display().to_string());
        }
    }
    let _ = std::fs::remove_file(&path);
    notes.push(format!(
        "an earlier `tmpfsctl {}` of {} (pid {}) was interrupted; {}",
        p.op,
        p.dir,
        p.pid,
        if swept.is_empty() {
            "it left nothing behind beside the fstab".to_string()
        } else {
            format!("removed what it left: {}", swept.join(", "))
        }
    ));
    notes
}

pub fn recover(dir: &Path) -> Vec<String> {
    recover_in(Path::new(JOURNAL_DIR), Path::new("/proc"), dir)
}

/// [`recover`] for DIR as the user gave it, telling them on stderr.
pub fn recover_and_tell(given: &Path) {
    if let Ok(abs) = crate::sys::resolve::lexical_absolute(given) {
        for n in recover(&abs) {
            eprintln!("tmpfsctl: {}", crate::render::term::safe(&n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    }

    #[test]
    fn a_killed_run_is_pending_and_the_next_run_sweeps_it() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("run");
        let etc = t.path().join("etc");
        std::fs::create_dir(&etc).unwrap();
        let fstab = etc.join("fstab");
        std::fs::write(&fstab, b"# nothing for /data\n").unwrap();
        let dir = Path::new("/data");
        let j = begin_in(&base, "apply", dir, Some(&fstab)).unwrap();
        // What a kill -9 leaves: the note (with a dead pid), a temp copy of
        // the fstab and a backup for a line never written.
        std::mem::forget(j);
        let note = base.join(key(dir));
        let mut p: Pending = serde_json::from_slice(&std::fs::read(&note).unwrap()).unwrap();
        p.pid = dead_pid();
        std::fs::write(&note, serde_json::to_vec(&p).unwrap()).unwrap();
        let tmp = etc.join(format!("{TEMP_PREFIX}Ab12Cd"));
        std::fs::write(&tmp, b"partial").unwrap();
        let bak = super::super::persist::backup_path(&fstab);
        std::fs::write(&bak, b"# nothing for /data\n").unwrap();
        let other = etc.join("unrelated");
        std::fs::write(&other, b"keep").unwrap();

        let live: Vec<Pending> = read_in(&base).into_iter().map(|(_, p)| p).collect();
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].op, "apply");

        let notes = recover_in(&base, Path::new("/proc"), dir);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("interrupted") && notes[0].contains("fstab.tmpfsctl.bak"),
            "{notes:?}"
        );
        assert!(!tmp.exists() && !bak.exists() && !note.exists());
        assert!(other.exists() && fstab.exists());
        // A note of a live process is left alone.
        let j = begin_in(&base, "revert", dir, Some(&fstab)).unwrap();
        assert!(recover_in(&base, Path::new("/proc"), dir).is_empty());
        drop(j);
        assert!(!note.exists());
    }
}
