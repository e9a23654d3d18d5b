//! `tmpfsctl apply`: mount a tmpfs holding a verified copy of DIR in one
//! step, then make it permanent (fstab line or systemd drop-in).

use std::collections::BTreeMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, Result, bail};

use super::facts::{gather_facts_at, mount_at, read_fstab};
use super::outcome::{ApplyReport, PersistResult};
use super::plan::{self, Facts, Plan};
use super::ui::{confirm, copy_bar, finished_first, require_root, sparse_note};
use super::{ApplyRequest, boot, journal, render};
use crate::command::{self, Context};
use crate::sys::atomic::{AtomicWrite, check_writable};
use crate::sys::resolve::OpenedDir;
use crate::sys::signals::{self, Interrupt, Interrupted};
use crate::sys::{Sysroot, copy, procfd, tmpfs};

fn persist_step(p: &Plan, dir: &Path, fragment: Option<&Path>) -> Result<PersistResult> {
    let path = PathBuf::from(&p.persist.path);
    match p.persist.via {
        plan::Boot::None => Ok(PersistResult {
            via: "none".into(),
            path: None,
            edit: boot::Edit::Unchanged,
            backup: None,
        }),
        plan::Boot::Fstab => {
            let old = read_fstab(&path)?;
            let (new, edit) = boot::fstab_with_line(&old, dir, &p.persist.content);
            let mut backup = None;
            if edit != boot::Edit::Unchanged {
                backup = boot::make_backup(&path, "the backup of --fstab")?;
                AtomicWrite::config("--fstab")
                    .write_checked(&path, &new, |tmp| boot::verify_fstab(tmp, dir))?;
                boot::daemon_reload_if_real(&path, "/etc/");
            }
            Ok(PersistResult {
                via: "fstab".into(),
                path: Some(path.display().to_string()),
                edit,
                backup: backup.map(|b| b.display().to_string()),
            })
        }
        plan::Boot::Systemd => {
            let frag = p.persist.unit.clone();
            let fragment = fragment.with_context(|| {
                format!("no {frag} unit file to add a drop-in to; use --boot fstab")
            })?;
            let (edit, backup) = boot::write_dropin(&path, &p.persist.content, |_| {
                boot::verify_dropin(fragment, &p.persist.unit, &p.persist.content)
            })?;
            boot::daemon_reload_if_real(&path, "/etc/");
            Ok(PersistResult {
                via: "systemd".into(),
                path: Some(path.display().to_string()),
                edit,
                backup: backup.map(|b| b.display().to_string()),
            })
        }
    }
}

/// Run `apply` as asked; the report goes to stdout (text or JSON). Stopped
/// by SIGINT/SIGTERM, it cleans up and its error says what state DIR is in
/// (`run` makes that exit 130, not 2 as for a failure).
pub fn apply(ctx: &Context, args: &ApplyRequest) -> Result<ApplyReport> {
    apply_until(ctx, args, &Arc::new(AtomicBool::new(false)))
}

fn apply_until(ctx: &Context, args: &ApplyRequest, stop: &Arc<AtomicBool>) -> Result<ApplyReport> {
    require_root("apply")?;
    if !ctx.sysroot.is_live() {
        bail!("--sysroot is for `plan` only; apply changes the running system");
    }
    journal::recover_and_tell(&args.target.dir)?;
    if let Some(r) = args.resize {
        return super::resize::resize(ctx, args, r);
    }
    let (facts, opened, p) = checked_plan(ctx, args)?;
    let via = p.persist.via;
    let dir = facts.dir.clone();
    if !args.target.quiet {
        command::show(&render::plan_text(&p));
    }
    let nothing_to_mount = p.mount_state == plan::MountState::Same;
    let nothing_to_persist = via == plan::Boot::None
        || (via == plan::Boot::Fstab && p.persist.action == plan::PersistAction::Unchanged)
        || (via == plan::Boot::Systemd
            && std::fs::read_to_string(&p.persist.path).ok().as_deref()
                == Some(p.persist.content.as_str()));
    let mut changes = Vec::new();
    if !(nothing_to_mount && nothing_to_persist) {
        confirm(
            &format!("Put {} on tmpfs as above?", dir.display()),
            args.yes,
        )?;
    }
    let interrupt =
        Interrupt::install_on(stop.clone(), false).context("cannot install signal handlers")?;
    let cancel = interrupt.flag();
    let fstab = (via == plan::Boot::Fstab).then(|| PathBuf::from(&p.persist.path));
    let mut note = journal::begin("apply", &dir, fstab.as_deref())?;

    let mut copied = None;
    let mut verified = None;
    let resized_to = None;
    let mut switched = None;
    match p.mount_state {
        plan::MountState::Same => {}
        // Refused by checked_plan: a resize is `--resize`, done by resize::resize.
        plan::MountState::SizeDiffers => bail!("only the size differs: use --resize"),
        plan::MountState::NotMounted => {
            let show = crate::render::stderr_is_tty() && !args.target.quiet;
            let mut sw = stage_and_move(&p, &opened, &cancel, show, &mut note)?;
            let stats = &sw.stats;
            changes.push(format!(
                "mounted tmpfs ({}) on {} with its {} {}, {} {}, {} {}, {} {}, {} {} ({})",
                p.mount_options,
                dir.display(),
                stats.files,
                crate::units::noun(stats.files, "file", "files"),
                stats.dirs,
                crate::units::noun(stats.dirs, "dir", "dirs"),
                stats.symlinks,
                crate::units::noun(stats.symlinks, "symlink", "symlinks"),
                stats.hard_links,
                crate::units::noun(stats.hard_links, "hard link", "hard links"),
                stats.special_files,
                crate::units::noun(stats.special_files, "special file", "special files"),
                crate::units::fmt_bytes(stats.content_bytes)
            ));
            if stats.sparse_files > 0 {
                changes.push(sparse_note(stats));
            }
            copied = Some(sw.stats.clone());
            verified = Some(sw.verified);
            if sw.unverified > 0 {
                changes.push(format!(
                    "{} entries written during the copy were not compared (not counted as verified); the catch-up brings them across",
                    sw.unverified
                ));
            }
            // A signal that came during the switch stops here, at a point
            // the next run finishes from (the note is kept).
            let stopped = |caught_up: bool| stopped_after_switch(&p, &dir, caught_up);
            if interrupted(&cancel) {
                note.keep();
                return Err(stopped(false));
            }
            if let Err(e) = catch_up(&mut sw, &dir, &cancel, &mut changes) {
                // The next run brings across what this one could not.
                note.keep();
                return Err(if interrupted(&cancel) {
                    stopped(false)
                } else {
                    e
                });
            }
            note.step("caught-up", |_| {})?;
            if interrupted(&cancel) {
                note.keep();
                return Err(stopped(true));
            }
            switched = Some(sw);
        }
        plan::MountState::Conflict => unreachable!("conflicts are blockers"),
    }
    let persisted = match persist_step(&p, &dir, facts.unit.fragment.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            let retry = Retry {
                apply: &p.apply_command,
                revert: &format!(
                    "tmpfsctl revert {} --keep-data{}",
                    crate::term::shell_path(&dir),
                    args.target.follow_up()
                ),
            };
            return Err(roll_back(e, switched, &dir, &cancel, &retry));
        }
    };
    if persisted.edit != boot::Edit::Unchanged {
        changes.push(format!(
            "{} {}",
            match persisted.edit {
                boot::Edit::Appended => "added to",
                _ => "updated",
            },
            persisted.changed_file()
        ));
    }
    check_mounted(ctx, &dir, switched.as_ref().map(|sw| &sw.staged.mount))?;
    let report = ApplyReport {
        schema_version: plan::SCHEMA_VERSION,
        dir: dir.display().to_string(),
        plan: p,
        mounted: switched.is_some(),
        resized_to,
        copied,
        verified_entries: verified,
        persist: persisted,
        changes,
        follow_up: args.target.follow_up(),
        undo: None,
    };
    // A signal after the last point apply stops at (the boot entry being
    // written): it finished, and ends as interrupted, saying what it did.
    signals::check_finished(|| finished_first("apply", &report.changes))?;
    Ok(report)
}

fn interrupted(cancel: &AtomicBool) -> bool {
    cancel.load(std::sync::atomic::Ordering::Relaxed)
}

/// What a signal after the switch leaves, and that running the same
/// command again finishes it: the tmpfs is on DIR with the verified copy;
/// unless `caught_up`, what was written to DIR during the copy is still
/// underneath; the boot entry is not written yet.
fn stopped_after_switch(p: &Plan, dir: &Path, caught_up: bool) -> anyhow::Error {
    let path = &p.persist.path;
    let unpersisted = match p.persist.via {
        plan::Boot::Fstab if p.persist.action != plan::PersistAction::Unchanged => Some(format!(
            "{path} has no line for it yet (a reboot would undo it)"
        )),
        plan::Boot::Systemd => Some(format!("the drop-in {path} is not written yet")),
        _ => None,
    };
    let mut left = Vec::new();
    let mut finish = Vec::new();
    if !caught_up {
        left.push(
            "what was written to it during the copy is still in the directory underneath"
                .to_string(),
        );
        finish.push("brings that across");
    }
    if let Some(u) = unpersisted {
        left.push(u);
        finish.push(match p.persist.via {
            plan::Boot::Systemd => "writes the drop-in",
            _ => "adds the line",
        });
    }
    let mut msg = format!(
        "{} is on tmpfs now, with its files copied and verified",
        dir.display()
    );
    if !left.is_empty() {
        msg += &format!("; not done yet: {}", left.join(", and "));
    }
    msg += &format!("; run `{}` again to finish", p.apply_command);
    if !finish.is_empty() {
        msg += &format!(" (it {})", finish.join(" and "));
    }
    anyhow::Error::new(Interrupted).context(msg)
}

/// Everything apply checks before its first change: the facts, the plan and
/// its blockers, --resize, writers, and that the persistence can be written.
fn checked_plan(ctx: &Context, args: &ApplyRequest) -> Result<(Facts, OpenedDir, Plan)> {
    let req = args.opts.clone();
    let (facts, opened) = gather_facts_at(ctx, &args.target)?;
    let dir = facts.dir.clone();
    let p = plan::plan(&facts, &req)?;
    if !p.blockers.is_empty() {
        bail!("cannot apply: {}", p.blockers.join("; "));
    }
    if p.mount_state == plan::MountState::SizeDiffers {
        bail!(
            "{} already is a tmpfs with a different size ({}); change it with `tmpfsctl apply {} --resize {}{}`",
            dir.display(),
            p.current
                .as_ref()
                .and_then(|c| c.size_bytes)
                .map(crate::units::fmt_bytes)
                .unwrap_or_default(),
            crate::term::shell_path(&dir),
            p.size_option.clone().unwrap_or_default(),
            args.target.follow_up()
        );
    }
    if p.mount_state == plan::MountState::NotMounted {
        let writers = procfd::writers_of(&Sysroot::live(), &dir);
        if let Some(w) = procfd::refuse_writers(&dir, &writers, args.force)? {
            crate::command::warn(&w);
        }
    }
    check_persistable(&p)?;
    Ok((facts, opened, p))
}

/// Fail before the first change when the fstab or the drop-in could not be
/// written afterwards.
fn check_persistable(p: &Plan) -> Result<()> {
    match p.persist.via {
        plan::Boot::Fstab if p.persist.action != plan::PersistAction::Unchanged => {
            check_writable("--fstab", Path::new(&p.persist.path))
        }
        plan::Boot::Systemd => {
            let path = Path::new(&p.persist.path);
            // The drop-in directory (`UNIT.d`) is created; its parent must exist.
            let units = path.parent().and_then(Path::parent).unwrap_or(path);
            if !units.is_dir() {
                bail!(
                    "--unit-dir {}: does not exist; create it or give another directory",
                    units.display()
                );
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Verify from the kernel's point of view, not from what we think we did.
/// A tmpfs this run attached is found by its mount ID: the directory it sits
/// on may have been renamed by its owner since (the mount moves with it), and
/// a lookup by the old name would then fail on a mount that is in place.
fn check_mounted(ctx: &Context, dir: &Path, attached: Option<&OwnedFd>) -> Result<()> {
    let (mounts, _) = ctx.sysroot.mountinfo()?;
    let by_id = attached
        .and_then(|fd| {
            rustix::fs::statx(
                fd,
                "",
                rustix::fs::AtFlags::EMPTY_PATH,
                rustix::fs::StatxFlags::MNT_ID,
            )
            .ok()
        })
        .and_then(|st| mounts.iter().find(|m| m.mount_id == st.stx_mnt_id));
    if let Some(m) = by_id
        && m.mount_point != dir
    {
        crate::command::note(&format!(
            "{} was renamed while apply ran; the tmpfs is on it, now at {}",
            crate::term::safe_path(dir),
            crate::term::safe_path(&m.mount_point)
        ));
    }
    let top = by_id
        .or_else(|| mount_at(&mounts, dir))
        .filter(|m| m.fstype == "tmpfs")
        .with_context(|| {
            format!(
                "after apply, mountinfo shows no tmpfs at {}; check `findmnt {}`",
                dir.display(),
                dir.display()
            )
        })?;
    for flag in ["nosuid", "nodev"] {
        if !top.has_flag(flag) {
            bail!(
                "after apply, the tmpfs at {} lacks {flag}; check `findmnt {}`",
                dir.display(),
                dir.display()
            );
        }
    }
    Ok(())
}

/// A tmpfs moved onto DIR by this run, and the old tree it hides, still
/// reachable through `src`.
struct Switched {
    stats: copy::CopyStats,
    verified: u64,
    /// Entries written during the copy: not compared, left to the catch-up.
    unverified: u64,
    src: OwnedFd,
    staged: tmpfs::Detached,
    /// What the old tree and the copy both held when they were compared.
    base: BTreeMap<Vec<u8>, copy::EntrySig>,
}

/// Bring across what was written to the old tree between the copy and the
/// switch (see [`copy::delta`]).
fn catch_up(
    sw: &mut Switched,
    dir: &Path,
    cancel: &AtomicBool,
    changes: &mut Vec<String>,
) -> Result<()> {
    let mut all = copy::delta::Delta::default();
    for _ in 0..copy::delta::CATCH_UP_PASSES {
        let d = copy::delta::carry(sw.src.as_fd(), sw.staged.root.as_fd(), &mut sw.base, cancel)
            .with_context(|| {
                format!(
                    "{} IS now on tmpfs, but bringing across what was written to it during the copy failed; \
                     those files are in the directory underneath (`tmpfsctl revert {} --keep-data` does not restore them)",
                    dir.display(),
                    dir.display()
                )
            })?;
        if all.absorb(d) {
            break;
        }
    }
    let few = |v: &[String]| v.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if !all.brought.is_empty() || !all.removed.is_empty() {
        changes.push(format!(
            "brought across {} entries written and removed {} deleted in {} during the copy ({})",
            all.brought.len(),
            all.removed.len(),
            dir.display(),
            few(&[all.brought.clone(), all.removed.clone()].concat())
        ));
    }
    if !all.kept_newer.is_empty() {
        changes.push(format!(
            "kept the newer version written to the tmpfs of {} entries also changed underneath ({})",
            all.kept_newer.len(),
            few(&all.kept_newer)
        ));
    }
    Ok(())
}

/// After a failure that followed the mount: take the mount away again when
/// nothing was written to it since, so the system is as it was; otherwise
/// keep it and say how to finish.
/// The commands that finish or undo a half-done apply, with every option
/// the user gave (so they act on the same fstab and unit directory).
struct Retry<'a> {
    apply: &'a str,
    revert: &'a str,
}

fn roll_back(
    e: anyhow::Error,
    switched: Option<Switched>,
    dir: &Path,
    cancel: &AtomicBool,
    retry: &Retry,
) -> anyhow::Error {
    let Some(sw) = switched else {
        return e;
    };
    let untouched = copy::snapshot(sw.staged.root.as_fd(), cancel)
        .map(|now| {
            copy::differences(&now, &sw.base)
                .iter()
                .all(|d| d.starts_with(".:"))
        })
        .unwrap_or(false);
    if untouched && tmpfs::detach(&sw.staged).is_ok() {
        return e.context(format!(
            "apply failed after mounting, so it was undone: {} is as it was",
            dir.display()
        ));
    }
    e.context(format!(
        "{} IS now on tmpfs (and was written to since), but making that permanent failed; fix the cause and re-run \
         `{}` (it will only persist), or `{}`",
        dir.display(),
        retry.apply,
        retry.revert
    ))
}

/// Detached tmpfs, copy, compare, move onto the directory opened at the
/// start. Any error before the move drops the detached mount (closing its
/// fd unmounts it), so nothing on the system has changed.
fn stage_and_move(
    p: &Plan,
    opened: &OpenedDir,
    cancel: &AtomicBool,
    show_progress: bool,
    note: &mut journal::Journal,
) -> Result<Switched> {
    let dir = &opened.path;
    let abort = |e: anyhow::Error| {
        e.context(format!(
            "apply aborted; nothing was changed ({} is as it was)",
            dir.display()
        ))
    };
    let staged = tmpfs::mount_detached(&p.mount_options, tmpfs::Allow::default()).map_err(abort)?;
    let since = std::time::SystemTime::now();
    let src = rustix::fs::openat(
        &opened.fd,
        c".",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", dir.display()))
    .map_err(abort)?;
    // Holes are not copied, so the data moved adds up to about the allocated
    // bytes `plan` measured (directories' blocks aside).
    let pb = copy_bar(show_progress, p.used_bytes, "copying");
    let stats = copy::copy_tree(src.as_fd(), staged.root.as_fd(), true, cancel, &|n| {
        pb.inc(n)
    });
    pb.finish_and_clear();
    let stats = stats
        .context("copying into the new tmpfs failed")
        .map_err(abort)?;
    // The root keeps DIR's mode unless another mode was asked for; the
    // filesystem option and the live root must agree, or a reboot changes it.
    let mode = u32::from_str_radix(&p.mode, 8).unwrap_or(0o1777);
    rustix::fs::fchmod(&staged.root, rustix::fs::Mode::from_raw_mode(mode))
        .context("cannot set the mode of the new tmpfs")
        .map_err(abort)?;
    let checked =
        verify_copy(src.as_fd(), staged.root.as_fd(), true, since, cancel).map_err(abort)?;
    if cancel.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(abort(anyhow::Error::new(Interrupted)));
    }
    // Recorded before the switch, so that a kill right after it leaves a
    // note naming this tmpfs and the moment writes to it began to count.
    let dev = rustix::fs::fstat(&staged.root)?.st_dev;
    let cut = journal::now_ts();
    note.step("attaching", |n| {
        n.dev = Some(dev);
        n.cut = Some(cut);
    })
    .map_err(abort)?;
    tmpfs::attach_at(&staged, opened).map_err(abort)?;
    Ok(Switched {
        stats,
        verified: checked.compared,
        unverified: checked.written_during_copy,
        src,
        staged,
        base: checked.base,
    })
}

/// What [`verify_copy`] found: the copy (the base for the catch-up after
/// the switch) and how many entries it really compared.
pub(super) struct Verified {
    pub base: BTreeMap<Vec<u8>, copy::EntrySig>,
    /// Entries compared and found identical (root included).
    pub compared: u64,
    /// Entries left to the catch-up: written during the copy (or up to a
    /// second before it), so a difference there is not a copy error.
    pub written_during_copy: u64,
}

/// Compare the tree with its copy entry by entry. An entry that differs
/// because it was written while the copy ran (its mtime is at or after
/// `since`, the copy's start less a second for coarse clocks) is not a copy
/// error: the catch-up after the switch brings it across. Nor is an entry
/// only in the copy whose directory was written while the copy ran (it was
/// deleted from DIR meanwhile). Anything else that differs is.
pub(super) fn verify_copy(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    compare_root: bool,
    since: std::time::SystemTime,
    cancel: &AtomicBool,
) -> Result<Verified> {
    let since = since
        .checked_sub(std::time::Duration::from_secs(1))
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs() as i64);
    let mut a = copy::snapshot(src, cancel)?;
    let b = copy::snapshot(dst, cancel)?;
    if let (Some(ra), Some(rb)) = (a.get_mut(&Vec::new()), b.get(&Vec::new())) {
        // The root's mode is chosen by the plan, not copied; its times move
        // with every entry written during the copy. A scratch root (revert's)
        // is not compared at all.
        if compare_root {
            ra.mode = rb.mode;
            ra.mtime = rb.mtime;
        } else {
            *ra = rb.clone();
        }
    }
    let written_since = |sig: &copy::EntrySig| sig.mtime.0 >= since;
    // Only in the copy: exempt when its directory in DIR changed meanwhile
    // (or is itself gone, which changed the directory above it).
    let parent_changed = |k: &[u8]| {
        let parent = k
            .iter()
            .rposition(|&c| c == b'/')
            .map_or(&k[..0], |i| &k[..i]);
        a.get(parent).is_none_or(written_since)
    };
    let checked = |k: &Vec<u8>| match a.get(k) {
        Some(sa) => !written_since(sa),
        None => !parent_changed(k),
    };
    let keys: std::collections::BTreeSet<&Vec<u8>> =
        a.keys().chain(b.keys()).filter(|k| checked(k)).collect();
    let pick = |m: &BTreeMap<Vec<u8>, copy::EntrySig>| -> BTreeMap<Vec<u8>, copy::EntrySig> {
        m.iter()
            .filter(|(k, _)| keys.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let bad = copy::differences(&pick(&a), &pick(&b));
    if !bad.is_empty() {
        let n = bad.len();
        let first: Vec<String> = bad.into_iter().take(5).collect();
        bail!(
            "{n} entries did not copy faithfully (first: {}); nothing was written to them during the copy, \
             so this is a copy error: check the filesystems and retry",
            first.join("; ")
        );
    }
    let compared = keys.len() as u64;
    let all = a
        .keys()
        .chain(b.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .len() as u64;
    Ok(Verified {
        base: b,
        compared,
        written_during_copy: all - compared,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;
    use std::time::{Duration, SystemTime};

    /// A tree whose every entry was last written in 2020, and its copy.
    fn tree_and_copy() -> (tempfile::TempDir, tempfile::TempDir) {
        let src = tempfile::tempdir().unwrap();
        let dst = tempfile::tempdir().unwrap();
        std::fs::create_dir(src.path().join("d")).unwrap();
        std::fs::write(src.path().join("d/data"), vec![b'a'; 10_000]).unwrap();
        std::fs::write(src.path().join("small"), b"hello").unwrap();
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
        for p in ["d/data", "small", "d", ""] {
            let f = std::fs::File::open(src.path().join(p)).unwrap();
            f.set_modified(old).unwrap();
        }
        let never = AtomicBool::new(false);
        copy::copy_tree(
            dir_fd(&src).as_fd(),
            dir_fd(&dst).as_fd(),
            true,
            &never,
            &|_| {},
        )
        .unwrap();
        (src, dst)
    }

    fn dir_fd(d: &tempfile::TempDir) -> OwnedFd {
        std::fs::File::open(d.path()).unwrap().into()
    }

    /// One byte of `path` flipped in place: size and mtime as they were.
    fn flip_a_byte(path: &Path) {
        let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, 4321).unwrap();
        f.write_all_at(&[b[0] ^ 1], 4321).unwrap();
        f.set_modified(mtime).unwrap();
    }

    fn verify(src: &tempfile::TempDir, dst: &tempfile::TempDir, apply: bool) -> Result<Verified> {
        let never = AtomicBool::new(false);
        // The copy "began" now: every entry of the tree is older than that.
        verify_copy(
            dir_fd(src).as_fd(),
            dir_fd(dst).as_fd(),
            apply,
            SystemTime::now(),
            &never,
        )
    }

    #[test]
    fn a_faithful_copy_is_verified_entry_by_entry() {
        let (src, dst) = tree_and_copy();
        for apply in [true, false] {
            let v = verify(&src, &dst, apply).unwrap();
            // root, d, d/data, small
            assert_eq!((v.compared, v.written_during_copy), (4, 0));
        }
    }

    #[test]
    fn a_byte_flipped_in_the_copy_fails_apply_and_revert_verification() {
        let (src, dst) = tree_and_copy();
        flip_a_byte(&dst.path().join("d/data"));
        // apply compares the root, revert (a scratch root) does not: both
        // must catch the file.
        for apply in [true, false] {
            let e = format!(
                "{:#}",
                verify(&src, &dst, apply)
                    .err()
                    .expect("a flipped byte passed")
            );
            assert!(e.contains("d/data") && e.contains("copy error"), "{e}");
        }
    }

    #[test]
    fn a_file_missing_from_or_only_in_the_copy_fails_verification() {
        let (src, dst) = tree_and_copy();
        std::fs::remove_file(dst.path().join("small")).unwrap();
        for apply in [true, false] {
            let e = format!(
                "{:#}",
                verify(&src, &dst, apply)
                    .err()
                    .expect("a missing file passed")
            );
            assert!(e.contains("small: missing in the copy"), "{e}");
        }
        let (src, dst) = tree_and_copy();
        let d = std::fs::File::open(dst.path().join("d")).unwrap();
        let mtime = d.metadata().unwrap().modified().unwrap();
        std::fs::write(dst.path().join("d/extra"), b"x").unwrap();
        d.set_modified(mtime).unwrap();
        for apply in [true, false] {
            let e = format!(
                "{:#}",
                verify(&src, &dst, apply)
                    .err()
                    .expect("an extra file passed")
            );
            assert!(e.contains("d/extra: only in the copy"), "{e}");
        }
    }

    #[test]
    fn an_entry_written_during_the_copy_is_left_to_the_catch_up_and_not_counted() {
        let (src, dst) = tree_and_copy();
        // Written in DIR after the copy began: the copy is stale, which the
        // catch-up fixes; it is not a copy error, and not "verified" either.
        std::fs::write(src.path().join("small"), b"HELLO").unwrap();
        let v = verify(&src, &dst, true).unwrap();
        assert_eq!((v.compared, v.written_during_copy), (3, 1));
    }
}
