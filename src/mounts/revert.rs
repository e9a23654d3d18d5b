//! `tmpfsctl revert`: undo `apply` — optionally copy the tmpfs contents back
//! to the directory underneath, unmount, restore fstab or remove the drop-in.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::facts::{fstab_file, mount_at, read_fstab, unit_dir};
use super::outcome::PersistResult;
use super::ui::{confirm, copy_bar, finished_first, require_root, sparse_note};
use super::{RevertRequest, boot, live, plan};
use crate::command::{self, Context};
use crate::sys::atomic::AtomicWrite;
use crate::sys::copy;
use crate::sys::knockout::durable;
use crate::sys::resolve::{OpenedDir, open_target};
use crate::sys::signals::{self, Interrupt, Interrupted};
use crate::sys::unmount::{At, Busy, How, UnmountError, unmount};
use crate::sys::{self, MountInfo, fs, hidden, statfs, systemd};
use crate::term::{safe, safe_path};

#[derive(Debug, Clone, Serialize)]
pub struct RevertReport {
    pub schema_version: u32,
    pub dir: String,
    pub was_mounted: bool,
    pub unmounted: bool,
    pub lazy: bool,
    pub copied_back: Option<copy::CopyStats>,
    pub fstab: Option<PersistResult>,
    pub dropin: Option<PersistResult>,
    pub busy: Vec<plan::ProcUse>,
    pub changes: Vec<String>,
}

/// Run `revert` as asked; what changed goes to stdout (text or JSON).
pub fn revert(ctx: &Context, args: &RevertRequest) -> Result<RevertReport> {
    require_root("revert")?;
    if !ctx.sysroot.is_live() {
        bail!("--sysroot is for `plan` only; revert changes the running system");
    }
    let root = &ctx.sysroot;
    let t = &args.target;
    super::journal::recover_and_tell(&t.dir)?;
    let opened = open_target(root, &t.dir)?;
    let dir = opened.path.clone();
    let (mounts, _) = root.mountinfo()?;
    let top = mount_at(&mounts, &dir)
        .filter(|m| m.fstype == "tmpfs")
        .cloned();
    let fstab_path = fstab_file(root, t);
    let fstab_text = read_fstab(&fstab_path)?;
    let fstab_managed = sys::fstab::Fstab::parse(&fstab_text)
        .entry_for(&dir)
        .is_some_and(|e| e.vfstype == "tmpfs");
    let dropin = plan::dropin_path(&unit_dir(root, t), &systemd::mount_unit_name(&dir));
    let dropin_ours =
        std::fs::read_to_string(&dropin).is_ok_and(|s| s.starts_with(plan::DROPIN_MARKER));
    if top.is_none() && !fstab_managed && !dropin_ours {
        let msg = format!(
            "{} is not a tmpfs and neither {} nor {} sets it up: nothing to revert",
            dir.display(),
            fstab_path.display(),
            dropin.display()
        );
        return Ok(RevertReport {
            schema_version: plan::SCHEMA_VERSION,
            dir: dir.display().to_string(),
            was_mounted: false,
            unmounted: false,
            lazy: args.lazy,
            copied_back: None,
            fstab: None,
            dropin: None,
            busy: Vec::new(),
            changes: vec![msg],
        });
    }
    let busy = if top.is_some() {
        refuse_unready(&mounts, &opened, args)?
    } else {
        Vec::new()
    };
    let mut what = Vec::new();
    if top.is_some() {
        what.push(if args.keep_data {
            format!("copy the tmpfs contents back to the directory on disk, then unmount {}", dir.display())
        } else {
            format!(
                "unmount {} and DISCARD what is in the tmpfs (the old on-disk contents reappear; --keep-data copies back)",
                dir.display()
            )
        });
    }
    if fstab_managed {
        what.push(format!(
            "remove/restore the tmpfs line for {} in {}",
            dir.display(),
            fstab_path.display()
        ));
    }
    if dropin_ours {
        what.push(format!("remove the drop-in {}", dropin.display()));
    }
    if !t.quiet {
        let mut text = format!("Revert {}:\n", safe_path(&dir));
        for w in &what {
            text.push_str(&format!("  - {}\n", safe(w)));
        }
        command::show(&text);
    }
    confirm("Go ahead?", args.yes)?;
    let mut journal = super::journal::begin("revert", &dir, fstab_managed.then_some(&*fstab_path))?;
    let interrupt = Interrupt::install(false).context("cannot install signal handlers")?;
    let cancel = interrupt.flag();
    let mut changes = Vec::new();
    let mut copied_back = None;
    if let Some(top) = &top {
        if args.keep_data {
            // What is still to do after the copy back, for a run stopped
            // by a signal after the switch to say.
            let mut after = Vec::new();
            if fstab_managed {
                after.push(format!("{} still has its line", fstab_path.display()));
            }
            if dropin_ours {
                after.push(format!("the drop-in {} is still there", dropin.display()));
            }
            copied_back = Some(keep_data(
                &mounts,
                top,
                &opened,
                args,
                Stop {
                    cancel: &cancel,
                    after: &after,
                },
                &mut journal,
                &mut changes,
            )?);
        } else {
            let (_parent, path) = opened.into_parent_path();
            unmount_or_explain(&path, &dir, args)?;
        }
        changes.push(format!(
            "unmounted the tmpfs at {}{}",
            dir.display(),
            if args.lazy { " (lazily)" } else { "" }
        ));
    }
    let fstab_res = if fstab_managed {
        Some(restore_fstab(&fstab_path, &fstab_text, &dir, &mut changes)?)
    } else {
        None
    };
    let dropin_res = if dropin_ours {
        Some(remove_dropin(&dropin, &mut changes)?)
    } else {
        None
    };
    let report = RevertReport {
        schema_version: plan::SCHEMA_VERSION,
        dir: dir.display().to_string(),
        was_mounted: top.is_some(),
        unmounted: top.is_some(),
        lazy: args.lazy,
        copied_back,
        fstab: fstab_res,
        dropin: dropin_res,
        busy,
        changes,
    };
    // A signal after the last point revert stops at (the flush of the copy
    // back): it finished, and ends as interrupted, saying what it did.
    signals::check_finished(|| finished_first("revert", &report.changes))?;
    Ok(report)
}

/// The flag a signal sets, and what revert still has to do after the copy
/// back (for the message of a run stopped after the switch).
struct Stop<'a> {
    cancel: &'a AtomicBool,
    after: &'a [String],
}

/// `--keep-data`: copy the tmpfs back to the directory underneath, take it
/// off DIR, bring back what was written to it meanwhile; a kill at any point
/// leaves the tmpfs reachable (on DIR, or at the staging mount) for the next
/// run to finish from. What was copied.
fn keep_data(
    mounts: &[MountInfo],
    top: &MountInfo,
    opened: &OpenedDir,
    args: &RevertRequest,
    stop: Stop<'_>,
    journal: &mut super::journal::Journal,
    changes: &mut Vec<String>,
) -> Result<copy::CopyStats> {
    let (cancel, after) = (stop.cancel, stop.after);
    let t = &args.target;
    let dir = opened.path.clone();
    let show = crate::render::stderr_is_tty() && !t.quiet;
    let mut back = match copy_back(mounts, top, opened, cancel, show, journal) {
        Ok(b) => b,
        Err(e) => {
            // Half swapped: the next run puts the directory underneath back.
            if journal.at("swapping") {
                journal.keep();
            }
            return Err(e);
        }
    };
    let stats = back.stats.clone();
    changes.push(format!(
        "copied {} {}, {} {}, {} {} ({}) back to the directory on disk",
        stats.files,
        crate::units::noun(stats.files, "file", "files"),
        stats.dirs,
        crate::units::noun(stats.dirs, "dir", "dirs"),
        stats.symlinks,
        crate::units::noun(stats.symlinks, "symlink", "symlinks"),
        crate::units::fmt_bytes(stats.content_bytes)
    ));
    if stats.sparse_files > 0 {
        changes.push(sparse_note(&stats));
    }
    // Detached, not unmounted: whoever still writes to it keeps
    // writing to the tmpfs, which stays readable through its root
    // descriptor — and, should this process be killed, at the
    // staging mount the note names — until the catch-up below has
    // taken everything.
    let cut = super::journal::now_ts();
    journal.step("unmounting", |p| p.cut = Some(cut))?;
    unmount(At::Root(back.src.as_fd(), &dir), How::Detach).map_err(|e| {
        anyhow::Error::new(e.errno())
            .context(format!("cannot detach the tmpfs at {}", dir.display()))
    })?;
    back.staging.hold(true);
    // A signal that came during the switch stops here, at a point the next
    // run finishes from (the note and the staging mount are kept).
    let stage = back.staging.path.clone();
    let stopped = || {
        let mut left = vec![format!(
            "the tmpfs is off {} but still mounted at {}, holding what was written to it during the copy",
            dir.display(),
            stage.display()
        )];
        left.extend(after.iter().cloned());
        anyhow::Error::new(Interrupted).context(format!(
            "{}'s files are back on disk, copied, verified and flushed; not done yet: {}; \
             run `tmpfsctl revert {} --keep-data{}` again to finish (it brings that back, \
             unmounts {}{})",
            dir.display(),
            left.join(", and "),
            crate::term::shell_path(&dir),
            t.follow_up(),
            stage.display(),
            if after.is_empty() {
                ""
            } else {
                " and undoes the rest"
            }
        ))
    };
    if cancel.load(std::sync::atomic::Ordering::Relaxed) {
        journal.keep();
        return Err(stopped());
    }
    if let Err(e) = catch_up(&mut back, &dir, cancel, changes) {
        journal.keep();
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(stopped());
        }
        return Err(e.context(format!(
            "the tmpfs is still mounted at {}; run `tmpfsctl revert {} --keep-data{}` again to finish",
            back.staging.path.display(),
            crate::term::shell_path(&dir),
            t.follow_up()
        )));
    }
    // The renames, the catch-up and the directory's own metadata are on
    // disk before the tmpfs, the last other copy, is let go: without this a
    // power cut in the next writeback interval loses what revert reported
    // as kept.
    durable!(
        "revert-syncfs-end",
        "",
        rustix::fs::syncfs(back.under.dir.as_fd())
    )
    .with_context(|| format!("flushing {} on disk (syncfs)", dir.display()))?;
    journal.step("caught-up", |_| {})?;
    back.staging.hold(false);
    drop(back);
    Ok(stats)
}

/// Make the directory under the tmpfs hold exactly what the tmpfs holds.
/// The copy goes to a scratch directory inside it first, so a failed copy
/// changes nothing; then old entries move to a trash directory, new ones move
/// in (renames on one filesystem), and the trash is deleted.
/// The tmpfs copied back, still held open: its root (for what is written
/// to it until it is detached), the directory underneath, and what both
/// held when compared.
struct Back {
    stats: copy::CopyStats,
    staging: live::StagingMount,
    src: OwnedFd,
    under: hidden::Underlying,
    base: BTreeMap<Vec<u8>, copy::EntrySig>,
}

fn copy_back(
    mounts: &[MountInfo],
    top: &MountInfo,
    opened: &OpenedDir,
    cancel: &AtomicBool,
    show_progress: bool,
    journal: &mut super::journal::Journal,
) -> Result<Back> {
    let dir = opened.path.as_path();
    use rustix::fs::{AtFlags, Mode};
    let under = hidden::open_underlying(mounts, top, dir)?;
    let u = under.dir.as_fd();
    let pid = std::process::id();
    let stage = std::ffi::CString::new(format!(".tmpfsctl-revert-{pid}"))?;
    let trash = std::ffi::CString::new(format!(".tmpfsctl-old-{pid}"))?;
    let src = rustix::fs::openat(
        &opened.fd,
        c".",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", dir.display()))?;
    let at = journal.stage_path();
    let dev = rustix::fs::fstat(&src)?.st_dev;
    journal.step("staging", |p| {
        p.dev = Some(dev);
        p.stage = Some(at.display().to_string());
    })?;
    let staging = live::StagingMount::mount(src.as_fd(), &at)?;
    rustix::fs::mkdirat(u, &stage, Mode::RWXU)
        .context("cannot create a scratch directory on disk")?;
    let staged = fs::open_dir_at(u, &stage)?;
    let total = statfs::statfs(&opened.proc_path())
        .map(|s| s.used_bytes)
        .unwrap_or(0);
    let pb = copy_bar(show_progress, total, "copying back");
    let since = std::time::SystemTime::now();
    let copied = copy::copy_tree(src.as_fd(), staged.as_fd(), false, cancel, &|n| pb.inc(n));
    pb.finish_and_clear();
    let res = copied.and_then(|s| {
        let checked = super::apply::verify_copy(src.as_fd(), staged.as_fd(), false, since, cancel)?;
        Ok((s, checked.base))
    });
    let (stats, base) = match res {
        Ok(s) => s,
        Err(e) => {
            let _ = fs::remove_tree(u, &stage);
            return Err(e.context(format!(
                "copying back failed; nothing changed: {} is still on tmpfs",
                dir.display()
            )));
        }
    };
    // The copy is durable before the old entries go: a power cut from here
    // on finds the copy whole on disk, not files renamed in but still empty.
    durable!("revert-syncfs-copy", "", rustix::fs::syncfs(u))
        .with_context(|| format!("flushing {} on disk (syncfs)", dir.display()))?;
    // From here on only renames on one filesystem.
    rustix::fs::mkdirat(u, &trash, Mode::RWXU)
        .context("cannot create a scratch directory on disk")?;
    let tr = fs::open_dir_at(u, &trash)?;
    let list = |fd: std::os::fd::BorrowedFd<'_>| -> Result<Vec<std::ffi::CString>> {
        let mut d = rustix::fs::Dir::read_from(fd)?;
        let mut v = Vec::new();
        while let Some(e) = d.read() {
            let n = e?.file_name().to_owned();
            if n.as_bytes() != b"." && n.as_bytes() != b".." {
                v.push(n);
            }
        }
        Ok(v)
    };
    for n in list(u)? {
        if n == stage || n == trash {
            continue;
        }
        rustix::fs::renameat(u, &n, &tr, &n)
            .with_context(|| format!("cannot move old entry {} aside", fs::show(n.as_bytes())))?;
    }
    journal.step("swapping", |_| {})?;
    for n in list(staged.as_fd())? {
        rustix::fs::renameat(&staged, &n, u, &n).with_context(|| {
            format!(
                "cannot move {} into place; the copy is in {}/{} and the old entries in {}/{}",
                fs::show(n.as_bytes()),
                dir.display(),
                stage.to_string_lossy(),
                dir.display(),
                trash.to_string_lossy()
            )
        })?;
    }
    journal.step("copied-back", |_| {})?;
    drop(staged);
    drop(tr);
    rustix::fs::unlinkat(u, &stage, AtFlags::REMOVEDIR)
        .context("cannot remove the scratch directory")?;
    fs::remove_tree(u, &trash).context("cannot remove the old entries")?;
    Ok(Back {
        stats,
        staging,
        src,
        under,
        base,
    })
}

/// After the tmpfs is detached (it lives on through `back.src`): bring
/// across what was written to it since the copy was compared, then give the
/// directory the tmpfs root's owner, mode and times — last, so the renames
/// do not leave their mark on them.
fn catch_up(
    back: &mut Back,
    dir: &Path,
    cancel: &AtomicBool,
    changes: &mut Vec<String>,
) -> Result<()> {
    let u = back.under.dir.as_fd();
    let mut brought = Vec::new();
    let mut kept = Vec::new();
    for _ in 0..copy::delta::CATCH_UP_PASSES {
        let d = copy::delta::carry(back.src.as_fd(), u, &mut back.base, cancel).with_context(|| {
            format!(
                "the tmpfs at {} is detached, but copying back what was written to it at the end failed",
                dir.display()
            )
        })?;
        let done = d.is_empty();
        brought.extend(d.brought);
        brought.extend(d.removed);
        kept.extend(d.kept_newer);
        if done {
            break;
        }
    }
    if !brought.is_empty() {
        changes.push(format!(
            "brought back {} entries written to the tmpfs while reverting ({})",
            brought.len(),
            brought
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !kept.is_empty() {
        changes.push(format!(
            "kept the newer on-disk version of {} entries also written to the tmpfs ({})",
            kept.len(),
            kept.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    copy::copy_root_meta(back.src.as_fd(), u)
        .context("cannot copy the directory's own owner/mode/xattrs/times")
}

/// A few names at the top of the tmpfs at `dir` (and how many more), empty
/// when it holds nothing.
fn held_entries(dir: &Path) -> Result<Vec<String>> {
    let rd = std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    let mut names: Vec<String> = Vec::new();
    let mut n = 0usize;
    for e in rd {
        let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
        n += 1;
        if names.len() < 3 {
            names.push(crate::term::safe(&e.file_name().to_string_lossy()).into_owned());
        }
    }
    if n > names.len() {
        names.push(format!("and {} more", n - names.len()));
    }
    Ok(names)
}

/// What revert offers instead of stopping the processes that hold DIR.
const OR_LAZY: &str = "pass --lazy to detach it anyway (their files stay until they let go)";

/// Unmount what `path` (a path through the parent's descriptor) leads to;
/// if busy, name who uses `dir`.
fn unmount_or_explain(path: &Path, dir: &Path, args: &RevertRequest) -> Result<()> {
    let how = if args.lazy { How::Detach } else { How::Checked };
    match unmount(At::Via { path, dir }, how) {
        Ok(_) => Ok(()),
        Err(UnmountError::Busy(b)) => Err(b.or(OR_LAZY).into()),
        Err(e) => Err(e.into()),
    }
}

/// Take the tmpfs line for `dir` out of the fstab (or put back the line it
/// replaced, from the backup apply made), atomically; drop the backup.
fn restore_fstab(
    fstab_path: &Path,
    fstab_text: &[u8],
    dir: &Path,
    changes: &mut Vec<String>,
) -> Result<PersistResult> {
    let backup = boot::backup_path(fstab_path);
    let bk = std::fs::read(&backup).ok();
    let (new, edit) = boot::fstab_without_line(fstab_text, bk.as_deref(), dir, "tmpfs");
    if edit != boot::Edit::Unchanged {
        let restored = edit == boot::Edit::Restored;
        AtomicWrite::config("--fstab").write_checked(fstab_path, &new, |tmp| {
            if restored {
                boot::verify_fstab(tmp, dir)
            } else {
                Ok(())
            }
        })?;
        boot::daemon_reload_if_real(fstab_path, "/etc/");
        changes.push(format!(
            "{} the line for {} in {}",
            if restored { "restored" } else { "removed" },
            dir.display(),
            fstab_path.display()
        ));
    }
    if bk.is_some() {
        AtomicWrite::config("the backup of --fstab").remove(&backup)?;
    }
    Ok(PersistResult {
        via: "fstab".into(),
        path: Some(fstab_path.display().to_string()),
        edit,
        backup: None,
    })
}

/// Refusals before a tmpfs is reverted: mounts inside it, processes using it
/// (unless --lazy), files on it without --keep-data or --discard. Returns
/// the processes using it.
fn refuse_unready(
    mounts: &[MountInfo],
    opened: &OpenedDir,
    args: &RevertRequest,
) -> Result<Vec<plan::ProcUse>> {
    let dir = opened.path.as_path();
    let t = &args.target;
    let nested: Vec<String> = mounts
        .iter()
        .filter(|m| m.mount_point != dir && m.mount_point.starts_with(dir))
        .map(|m| m.mount_point.display().to_string())
        .collect();
    if !nested.is_empty() {
        bail!(
            "mounts inside {} must be unmounted first: {}",
            dir.display(),
            nested.join(", ")
        );
    }
    // Uses of the tmpfs only: a process in the disk directory below it is
    // not in the way of the unmount.
    let busy = match rustix::fs::stat(dir) {
        Ok(st) => sys::procfd::users_of_mount(&sys::Sysroot::live(), dir, st.st_dev),
        Err(_) => sys::procfd::users_of(&sys::Sysroot::live(), dir),
    };
    if !busy.is_empty() && !args.lazy {
        return Err(Busy::with(dir, busy).or(OR_LAZY).into());
    }
    if !args.keep_data && !args.discard {
        let held = held_entries(dir)?;
        if !held.is_empty() {
            bail!(
                "{} holds files on the tmpfs ({}); say what happens to them: --keep-data copies them back to the directory on disk, --discard throws them away (`tmpfsctl revert {} --keep-data{}`)",
                dir.display(),
                held.join(", "),
                crate::term::shell_path(dir),
                t.follow_up()
            );
        }
    }
    Ok(busy)
}

fn remove_dropin(dropin: &Path, changes: &mut Vec<String>) -> Result<PersistResult> {
    let edit = boot::remove_dropin(dropin)?;
    boot::daemon_reload_if_real(dropin, "/etc/");
    changes.push(format!("removed the drop-in {}", dropin.display()));
    Ok(PersistResult {
        via: "systemd".into(),
        path: Some(dropin.display().to_string()),
        edit,
        backup: None,
    })
}
