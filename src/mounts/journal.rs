//! A note for each apply or revert in progress, under /run/tmpfsctl-journal/ (gone
//! at reboot, like the live mount it is about). Written before the first
//! change and rewritten at each step that a kill would leave half done,
//! removed when the command ends — also on errors, which roll back first —
//! so a note whose process is dead means it was killed part way. The next
//! apply or revert of the same directory then finishes or undoes what the
//! killed run was doing (see `recover`), sweeps its temp files beside the
//! fstab and a backup that never got a line, and `status` can name it
//! through [`pending`].

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result};

use crate::command;
use crate::sys::atomic::{AtomicWrite, TEMP_PREFIX};
use crate::sys::fstab::Fstab;
use crate::sys::journal::read_in;
pub use crate::sys::journal::{JOURNAL_DIR, Pending};
use crate::sys::proc::Owner;
use crate::sys::{Sysroot, resolve};
use crate::term::safe;

/// The note of a run in progress; dropping it (success or a handled error)
/// removes it, unless [`Journal::keep`] said the next run must finish.
pub struct Journal {
    path: PathBuf,
    note: Pending,
    keep: bool,
}

impl Drop for Journal {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Journal {
    /// Record that the run is about to take `step` (with what `f` adds),
    /// before taking it: a kill then leaves a note that says what to check.
    pub fn step(&mut self, step: &str, f: impl FnOnce(&mut Pending)) -> Result<()> {
        self.note.step = step.into();
        f(&mut self.note);
        AtomicWrite::report("the progress note").write(&self.path, &serde_json::to_vec(&self.note)?)
    }

    pub fn at(&self, step: &str) -> bool {
        self.note.step == step
    }

    /// Leave the note when this process ends: what it did must be finished
    /// by the next run (which finds the note with a dead pid).
    pub fn keep(&mut self) {
        self.keep = true;
    }

    /// Where revert mounts the tmpfs while it copies back, beside the note.
    pub fn stage_path(&self) -> PathBuf {
        self.path.with_extension("stage")
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

/// The clock now, as a file's mtime would show it.
pub fn now_ts() -> (i64, u64) {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or((0, 0), |d| {
            (d.as_secs() as i64, u64::from(d.subsec_nanos()))
        })
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
        pid_start: Owner::me().map(|o| o.starttime),
        started_unix_s: now_s(),
        fstab: fstab.map(|f| f.display().to_string()),
        step: "begun".into(),
        dev: None,
        cut: None,
        stage: None,
    };
    let path = base.join(key(dir));
    AtomicWrite::report("the progress note").write(&path, &serde_json::to_vec(&p)?)?;
    Ok(Journal {
        path,
        note: p,
        keep: false,
    })
}

pub fn begin(op: &str, dir: &Path, fstab: Option<&Path>) -> Result<Journal> {
    begin_in(Path::new(JOURNAL_DIR), op, dir, fstab)
}

/// Before a new run on `dir`: if an earlier one was killed part way, finish
/// or undo the step it was taking (`recover::settle`), then remove what it
/// left beside its fstab — temp files it created and a backup made for a
/// line that never got written — and its note. Returns what was done, for
/// the user; an error (the note is kept) when the killed run's work could
/// not be settled.
pub fn recover_in(base: &Path, root: &Sysroot, dir: &Path) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    let path = base.join(key(dir));
    let Some(p) = read_in(base)
        .into_iter()
        .find(|(f, _)| *f == path)
        .map(|(_, p)| p)
    else {
        return Ok(notes);
    };
    if p.running(root) {
        if p.pid == std::process::id() {
            return Ok(notes);
        }
        // Going on would overwrite the note of a run still at work on DIR.
        anyhow::bail!(
            "`tmpfsctl {}` of {} is still running (pid {}); wait for it to finish, then run this again",
            p.op,
            crate::term::safe(&p.dir),
            p.pid
        );
    }
    let settled = super::recover::settle(&p, dir, &path).with_context(|| {
        format!(
            "an earlier `tmpfsctl {}` of {} (pid {}) was interrupted, and finishing what it was doing failed; \
             fix the cause and run the command again (its note {} is kept)",
            p.op,
            p.dir,
            p.pid,
            path.display()
        )
    })?;
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
        let bak = super::boot::backup_path(fstab);
        let has_line = std::fs::read(fstab).is_ok_and(|t| {
            Fstab::parse(&t)
                .entry_for(dir)
                .is_some_and(|e| e.vfstype == "tmpfs")
        });
        if p.op == "apply" && !has_line && made_by_it(&bak) && std::fs::remove_file(&bak).is_ok() {
            swept.push(bak.display().to_string());
        }
    }
    let _ = std::fs::remove_file(&path);
    notes.push(format!(
        "an earlier `tmpfsctl {}` of {} (pid {}) was interrupted{}; {}",
        p.op,
        p.dir,
        p.pid,
        if p.step.is_empty() {
            String::new()
        } else {
            format!(" at step {}", p.step)
        },
        if swept.is_empty() {
            "it left nothing behind beside the fstab".to_string()
        } else {
            format!("removed what it left: {}", swept.join(", "))
        }
    ));
    notes.extend(settled);
    Ok(notes)
}

pub fn recover(dir: &Path) -> Result<Vec<String>> {
    recover_in(Path::new(JOURNAL_DIR), &Sysroot::live(), dir)
}

/// [`recover`] for DIR as the user gave it, telling them on stderr.
pub fn recover_and_tell(given: &Path) -> Result<()> {
    if let Ok(abs) = resolve::lexical_absolute(given) {
        for n in recover(&abs)? {
            command::say(&safe(&n));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::proc::Owner;
    use crate::test_support::dead_pid;

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
        let bak = super::super::boot::backup_path(&fstab);
        std::fs::write(&bak, b"# nothing for /data\n").unwrap();
        let other = etc.join("unrelated");
        std::fs::write(&other, b"keep").unwrap();

        let live: Vec<Pending> = read_in(&base).into_iter().map(|(_, p)| p).collect();
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].op, "apply");

        let notes = recover_in(&base, &Sysroot::live(), dir).unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("interrupted") && notes[0].contains("fstab.tmpfsctl.bak"),
            "{notes:?}"
        );
        assert!(!tmp.exists() && !bak.exists() && !note.exists());
        assert!(other.exists() && fstab.exists());
        // A note of a live process is left alone.
        let j = begin_in(&base, "revert", dir, Some(&fstab)).unwrap();
        assert!(recover_in(&base, &Sysroot::live(), dir).unwrap().is_empty());
        drop(j);
        assert!(!note.exists());
    }

    /// A note naming a live pid whose process started at another tick (the
    /// pid was handed to a new process after the run was killed), or, in an
    /// older note without a start time, a process that started after the
    /// note was written: the run is gone, so it is recovered (note swept,
    /// `status` names it), never skipped and left to be overwritten.
    #[test]
    fn a_reused_pid_is_not_taken_for_the_killed_run() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().join("run");
        let dir = Path::new("/data-reused");
        let note = base.join(key(dir));
        let live = std::os::unix::process::parent_id();
        let root = Sysroot::live();
        let start = Owner::of(&root, live).unwrap().starttime;
        for (pid_start, started_unix_s) in [(Some(start + 1), now_s()), (None, 1)] {
            std::mem::forget(begin_in(&base, "revert", dir, None).unwrap());
            let mut p: Pending = serde_json::from_slice(&std::fs::read(&note).unwrap()).unwrap();
            (p.pid, p.pid_start, p.started_unix_s) = (live, pid_start, started_unix_s);
            std::fs::write(&note, serde_json::to_vec(&p).unwrap()).unwrap();
            assert!(!p.running(&root), "{p:?}");
            let notes = recover_in(&base, &root, dir).unwrap();
            assert!(
                notes.len() == 1 && notes[0].contains("interrupted"),
                "{p:?}: {notes:?}"
            );
            assert!(!note.exists(), "{p:?}: the note was left to be overwritten");
        }
        // The same pid with its own start time is that run, still at work:
        // its note is neither recovered nor overwritten.
        std::mem::forget(begin_in(&base, "revert", dir, None).unwrap());
        let mut p: Pending = serde_json::from_slice(&std::fs::read(&note).unwrap()).unwrap();
        (p.pid, p.pid_start) = (live, Some(start));
        std::fs::write(&note, serde_json::to_vec(&p).unwrap()).unwrap();
        let e = recover_in(&base, &root, dir).unwrap_err();
        assert!(format!("{e:#}").contains("still running"), "{e:#}");
        assert!(note.exists());
    }
}
