//! `tmpfsctl apply`: mount a tmpfs holding a verified copy of DIR in one
//! step, then make it permanent (fstab line or systemd drop-in).

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::facts::{gather_facts, mount_at, read_fstab};
use super::plan::{self, Plan};
use super::ui::{confirm, copy_bar, require_root, sparse_note};
use super::{ApplyRequest, PersistTo, copy, live, persist, render};
use crate::context::{Context, ExitCode};
use crate::sys::atomic::AtomicWrite;
use crate::sys::signals::Interrupt;
use crate::sys::statfs;

#[derive(Debug, Clone, Serialize)]
pub struct PersistResult {
    pub via: String,
    pub path: Option<String>,
    pub edit: persist::Edit,
    pub backup: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    pub schema_version: u32,
    pub dir: String,
    pub plan: Plan,
    /// True when this run mounted the tmpfs; false when it already was.
    pub mounted: bool,
    pub resized_to: Option<String>,
    pub copied: Option<copy::CopyStats>,
    /// Entries compared equal between DIR and the copy (root included).
    pub verified_entries: Option<u64>,
    pub persist: PersistResult,
    pub changes: Vec<String>,
    /// Options repeated in the printed undo command.
    #[serde(skip)]
    pub follow_up: String,
}

fn persist_step(
    p: &Plan,
    dir: &Path,
    via: Option<plan::Via>,
    fragment: Option<&Path>,
) -> Result<PersistResult> {
    let Some(via) = via else {
        return Ok(PersistResult {
            via: "none".into(),
            path: None,
            edit: persist::Edit::Unchanged,
            backup: None,
        });
    };
    let path = PathBuf::from(&p.persist.path);
    match via {
        plan::Via::Fstab => {
            let old = read_fstab(&path)?;
            let (new, edit) = persist::fstab_with_line(&old, dir, &p.persist.content);
            let mut backup = None;
            if edit != persist::Edit::Unchanged {
                backup = persist::make_backup(&path)?;
                AtomicWrite::config("--fstab")
                    .write_checked(&path, &new, |tmp| persist::verify_fstab(tmp, dir))?;
                persist::daemon_reload_if_real(&path, "/etc/");
            }
            Ok(PersistResult {
                via: "fstab".into(),
                path: Some(path.display().to_string()),
                edit,
                backup: backup.map(|b| b.display().to_string()),
            })
        }
        plan::Via::Systemd => {
            let frag = p.persist.unit.clone();
            let fragment = fragment.with_context(|| {
                format!("no {frag} unit file to add a drop-in to; use --persist fstab")
            })?;
            let (edit, backup) = persist::write_dropin(&path, &p.persist.content, |_| {
                persist::verify_dropin(fragment, &p.persist.unit, &p.persist.content)
            })?;
            persist::daemon_reload_if_real(&path, "/etc/");
            Ok(PersistResult {
                via: "systemd".into(),
                path: Some(path.display().to_string()),
                edit,
                backup: backup.map(|b| b.display().to_string()),
            })
        }
    }
}

/// Run `apply` as asked; the report goes to stdout (text or JSON).
pub fn apply(ctx: &Context, args: &ApplyRequest) -> Result<ExitCode> {
    require_root("apply")?;
    if !ctx.sysroot.is_live() {
        bail!("--sysroot is for `plan` only; apply changes the running system");
    }
    let mut req = args.opts.clone();
    match args.persist {
        Some(PersistTo::Fstab) => req.via = Some(plan::Via::Fstab),
        Some(PersistTo::Systemd) => req.via = Some(plan::Via::Systemd),
        _ => {}
    }
    let facts = gather_facts(ctx, &args.target)?;
    let dir = facts.dir.clone();
    if let Some(r) = args.resize {
        let cur = facts.current.as_ref().filter(|c| c.fstype == "tmpfs");
        if cur.is_none() {
            bail!(
                "{} is not a tmpfs, so there is nothing to resize; run `tmpfsctl apply {}` without --resize first",
                dir.display(),
                dir.display()
            );
        }
        let used = statfs::statfs(&dir)?.used_bytes;
        let b = plan::resolve_size(r, facts.mem.mem_total_bytes);
        if b < used {
            bail!(
                "--resize {r} ({}) is below the {} in use in {}; give at least that plus headroom",
                crate::units::fmt_bytes(b),
                crate::units::fmt_bytes(used),
                dir.display()
            );
        }
        req.size = Some(r);
    }
    let p = plan::plan(&facts, &req)?;
    if !p.blockers.is_empty() {
        bail!("cannot apply: {}", p.blockers.join("; "));
    }
    if p.mount_state == plan::MountState::SizeDiffers && args.resize.is_none() {
        bail!(
            "{} already is a tmpfs with a different size ({}); change it with `tmpfsctl apply {} --resize {}`",
            dir.display(),
            p.current
                .as_ref()
                .and_then(|c| c.size_bytes)
                .map(crate::units::fmt_bytes)
                .unwrap_or_default(),
            dir.display(),
            p.size_option.clone().unwrap_or_default()
        );
    }
    let via = match args.persist {
        Some(PersistTo::None) => None,
        _ => Some(p.persist.via),
    };
    if !args.target.json {
        eprint!("{}", render::plan_text(&p));
    }
    let nothing_to_mount = p.mount_state == plan::MountState::Same;
    let nothing_to_persist = via.is_none()
        || (via == Some(plan::Via::Fstab) && p.persist.action == plan::PersistAction::Unchanged)
        || (via == Some(plan::Via::Systemd)
            && std::fs::read_to_string(&p.persist.path).ok().as_deref()
                == Some(p.persist.content.as_str()));
    let mut changes = Vec::new();
    if !(nothing_to_mount && nothing_to_persist) {
        confirm(
            &format!("Put {} on tmpfs as above?", dir.display()),
            args.yes,
        )?;
    }
    let interrupt = Interrupt::install(false).context("cannot install signal handlers")?;
    let cancel = interrupt.flag();

    let mut copied = None;
    let mut verified = None;
    let mut mounted = false;
    let mut resized_to = None;
    match p.mount_state {
        plan::MountState::Same => {}
        plan::MountState::SizeDiffers => {
            let s = p.size_option.clone().unwrap_or_default();
            live::resize(&dir, &s)?;
            changes.push(format!("resized the tmpfs at {} to {s}", dir.display()));
            resized_to = Some(s);
        }
        plan::MountState::NotMounted => {
            let show = crate::render::stderr_is_tty() && !args.target.json;
            let (stats, n) = stage_and_move(&p, &dir, &cancel, show)?;
            changes.push(format!(
                "mounted tmpfs ({}) on {} with its {} files, {} dirs, {} symlinks, {} hard links, {} special files ({})",
                p.mount_options,
                dir.display(),
                stats.files,
                stats.dirs,
                stats.symlinks,
                stats.hard_links,
                stats.special_files,
                crate::units::fmt_bytes(stats.content_bytes)
            ));
            if stats.sparse_files > 0 {
                changes.push(sparse_note(&stats));
            }
            copied = Some(stats);
            verified = Some(n);
            mounted = true;
        }
        plan::MountState::Conflict => unreachable!("conflicts are blockers"),
    }
    let persisted = match persist_step(&p, &dir, via, facts.unit.fragment.as_deref()) {
        Ok(r) => r,
        Err(e) if mounted => {
            return Err(e.context(format!(
                "{} IS now on tmpfs, but making that permanent failed; fix the cause and re-run apply \
                 (it will only persist), or `tmpfsctl revert {} --keep-data`",
                dir.display(),
                dir.display()
            )));
        }
        Err(e) => return Err(e),
    };
    if persisted.edit != persist::Edit::Unchanged {
        changes.push(format!(
            "{} {}{}",
            match persisted.edit {
                persist::Edit::Appended => "added to",
                _ => "updated",
            },
            persisted.path.clone().unwrap_or_default(),
            persisted
                .backup
                .as_ref()
                .map(|b| format!(" (backup {b})"))
                .unwrap_or_default()
        ));
    }

    // Verify from the kernel's point of view, not from what we think we did.
    let (mounts, _) = ctx.sysroot.mountinfo()?;
    let top = mount_at(&mounts, &dir)
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
    if changes.is_empty() {
        changes.push(format!(
            "nothing: {} already is on tmpfs as planned",
            dir.display()
        ));
    }
    let report = ApplyReport {
        schema_version: plan::SCHEMA_VERSION,
        dir: dir.display().to_string(),
        plan: p,
        mounted,
        resized_to,
        copied,
        verified_entries: verified,
        persist: persisted,
        changes,
        follow_up: args.target.follow_up(),
    };
    if args.target.json {
        crate::render::print_json(&report)?;
    } else {
        print!("{}", render::apply_text(&report));
    }
    Ok(ExitCode::Ok)
}

/// Steps 1-4 of apply: detached tmpfs, copy, compare, move. Any error before
/// the move drops the detached mount (closing its fd unmounts it), so nothing
/// on the system has changed.
fn stage_and_move(
    p: &Plan,
    dir: &Path,
    cancel: &AtomicBool,
    show_progress: bool,
) -> Result<(copy::CopyStats, u64)> {
    let abort = |e: anyhow::Error| {
        e.context(format!(
            "apply aborted; nothing was changed ({} is as it was)",
            dir.display()
        ))
    };
    let staged = live::mount_detached(&p.mount_options).map_err(abort)?;
    let src = rustix::fs::openat(
        rustix::fs::CWD,
        dir,
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
    let mut a = copy::snapshot(src.as_fd(), cancel).map_err(abort)?;
    let b = copy::snapshot(staged.root.as_fd(), cancel).map_err(abort)?;
    if let (Some(ra), Some(rb)) = (a.get_mut(&Vec::new()), b.get(&Vec::new())) {
        // The root's ctime-like bits (mode chosen above) are not a copy error.
        ra.mode = rb.mode;
    }
    let diff = copy::differences(&a, &b);
    if !diff.is_empty() {
        let n = diff.len();
        let first: Vec<String> = diff.into_iter().take(5).collect();
        return Err(abort(anyhow::anyhow!(
            "{n} entries changed while copying or did not copy faithfully (first: {}); stop the programs writing to {} and retry",
            first.join("; "),
            dir.display()
        )));
    }
    drop(src);
    if cancel.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(abort(anyhow::anyhow!("interrupted")));
    }
    live::attach(&staged, dir).map_err(abort)?;
    Ok((stats, a.len() as u64))
}
