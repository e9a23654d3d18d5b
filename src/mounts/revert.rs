//! `tmpfsctl revert`: undo `apply` — optionally copy the tmpfs contents back
//! to the directory underneath, unmount, restore fstab or remove the drop-in.

use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::apply::PersistResult;
use super::facts::{fstab_file, mount_at, read_fstab, resolve_dir, unit_dir};
use super::ui::{confirm, copy_bar, require_root, sparse_note};
use super::{RevertRequest, copy, live, persist, plan};
use crate::context::{Context, ExitCode};
use crate::sys::atomic::AtomicWrite;
use crate::sys::signals::Interrupt;
use crate::sys::{self, MountInfo, statfs, systemd};

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
pub fn revert(ctx: &Context, args: &RevertRequest) -> Result<ExitCode> {
    require_root("revert")?;
    if !ctx.sysroot.is_live() {
        bail!("--sysroot is for `plan` only; revert changes the running system");
    }
    let root = &ctx.sysroot;
    let t = &args.target;
    let dir = resolve_dir(root, &t.dir)?;
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
        if t.json {
            crate::render::print_json(&RevertReport {
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
            })?;
        } else {
            println!("{msg}");
        }
        return Ok(ExitCode::Ok);
    }
    let nested: Vec<String> = mounts
        .iter()
        .filter(|m| m.mount_point != dir && m.mount_point.starts_with(&dir))
        .map(|m| m.mount_point.display().to_string())
        .collect();
    if top.is_some() && !nested.is_empty() {
        bail!(
            "mounts inside {} must be unmounted first: {}",
            dir.display(),
            nested.join(", ")
        );
    }
    let busy = if top.is_some() {
        live::users_of(Path::new("/proc"), &dir)
    } else {
        Vec::new()
    };
    if !busy.is_empty() && !args.lazy {
        let list: Vec<String> = busy
            .iter()
            .map(|b| format!("{} ({}: {})", b.pid, b.comm, b.uses.join(", ")))
            .collect();
        bail!(
            "{} is busy: {}; stop those processes, or pass --lazy to detach it anyway (their files stay until they let go)",
            dir.display(),
            list.join("; ")
        );
    }
    if top.is_some() && !args.keep_data && !args.discard {
        let held = held_entries(&dir)?;
        if !held.is_empty() {
            bail!(
                "{} holds files on the tmpfs ({}); say what happens to them: --keep-data copies them back to the directory on disk, --discard throws them away (`tmpfsctl revert {} --keep-data{}`)",
                dir.display(),
                held.join(", "),
                dir.display(),
                t.follow_up()
            );
        }
    }
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
    if !t.json {
        eprintln!("Revert {}:", dir.display());
        for w in &what {
            eprintln!("  - {w}");
        }
    }
    confirm("Go ahead?", args.yes)?;
    let interrupt = Interrupt::install(false).context("cannot install signal handlers")?;
    let cancel = interrupt.flag();
    let mut changes = Vec::new();
    let mut copied_back = None;
    if let Some(top) = &top {
        if args.keep_data {
            let show = crate::render::stderr_is_tty() && !t.json;
            let stats = copy_back(&mounts, top, &dir, &cancel, show)?;
            changes.push(format!(
                "copied {} files, {} dirs, {} symlinks ({}) back to the directory on disk",
                stats.files,
                stats.dirs,
                stats.symlinks,
                crate::units::fmt_bytes(stats.content_bytes)
            ));
            if stats.sparse_files > 0 {
                changes.push(sparse_note(&stats));
            }
            copied_back = Some(stats);
        }
        live::unmount(&dir, args.lazy).map_err(|e| {
            let b = live::users_of(Path::new("/proc"), &dir);
            let list: Vec<String> = b
                .iter()
                .map(|b| format!("{} ({})", b.pid, b.comm))
                .collect();
            e.context(format!(
                "{} is busy{}; stop those processes or pass --lazy{}",
                dir.display(),
                if list.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", list.join(", "))
                },
                if args.keep_data {
                    " (the data is already copied back)"
                } else {
                    ""
                }
            ))
        })?;
        changes.push(format!(
            "unmounted the tmpfs at {}{}",
            dir.display(),
            if args.lazy { " (lazily)" } else { "" }
        ));
    }
    let mut fstab_res = None;
    if fstab_managed {
        let backup = persist::backup_path(&fstab_path);
        let bk = std::fs::read(&backup).ok();
        let (new, edit) = persist::fstab_without_line(&fstab_text, bk.as_deref(), &dir, "tmpfs");
        if edit != persist::Edit::Unchanged {
            let restored = edit == persist::Edit::Restored;
            AtomicWrite::config("--fstab").write_checked(&fstab_path, &new, |tmp| {
                if restored {
                    persist::verify_fstab(tmp, &dir)
                } else {
                    Ok(())
                }
            })?;
            persist::daemon_reload_if_real(&fstab_path, "/etc/");
            changes.push(format!(
                "{} the line for {} in {}",
                if restored { "restored" } else { "removed" },
                dir.display(),
                fstab_path.display()
            ));
        }
        if bk.is_some() {
            std::fs::remove_file(&backup)
                .with_context(|| format!("cannot remove {}", backup.display()))?;
        }
        fstab_res = Some(PersistResult {
            via: "fstab".into(),
            path: Some(fstab_path.display().to_string()),
            edit,
            backup: None,
        });
    }
    let mut dropin_res = None;
    if dropin_ours {
        let edit = persist::remove_dropin(&dropin)?;
        persist::daemon_reload_if_real(&dropin, "/etc/");
        changes.push(format!("removed the drop-in {}", dropin.display()));
        dropin_res = Some(PersistResult {
            via: "systemd".into(),
            path: Some(dropin.display().to_string()),
            edit,
            backup: None,
        });
    }
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
    if t.json {
        crate::render::print_json(&report)?;
    } else {
        for c in &report.changes {
            println!("{c}");
        }
    }
    Ok(ExitCode::Ok)
}

/// Make the directory under the tmpfs hold exactly what the tmpfs holds.
/// The copy goes to a scratch directory inside it first, so a failed copy
/// changes nothing; then old entries move to a trash directory, new ones move
/// in (renames on one filesystem), and the trash is deleted.
fn copy_back(
    mounts: &[MountInfo],
    top: &MountInfo,
    dir: &Path,
    cancel: &AtomicBool,
    show_progress: bool,
) -> Result<copy::CopyStats> {
    use rustix::fs::{AtFlags, Mode};
    let under = live::open_underlying(mounts, top, dir)?;
    let u = under.dir.as_fd();
    let pid = std::process::id();
    let stage = std::ffi::CString::new(format!(".tmpfsctl-revert-{pid}"))?;
    let trash = std::ffi::CString::new(format!(".tmpfsctl-old-{pid}"))?;
    let src = rustix::fs::openat(
        rustix::fs::CWD,
        dir,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", dir.display()))?;
    rustix::fs::mkdirat(u, &stage, Mode::RWXU)
        .context("cannot create a scratch directory on disk")?;
    let staged = copy::open_dir_at(u, &stage)?;
    let total = statfs::statfs(dir).map(|s| s.used_bytes).unwrap_or(0);
    let pb = copy_bar(show_progress, total, "copying back");
    let copied = copy::copy_tree(src.as_fd(), staged.as_fd(), false, cancel, &|n| pb.inc(n));
    pb.finish_and_clear();
    let res = copied.and_then(|s| {
        let a = copy::snapshot(src.as_fd(), cancel)?;
        let mut b = copy::snapshot(staged.as_fd(), cancel)?;
        b.remove(&Vec::new());
        let mut a = a;
        a.remove(&Vec::new());
        let d = copy::differences(&a, &b);
        if !d.is_empty() {
            bail!("{} entries differ after copying (first: {})", d.len(), d[0]);
        }
        Ok(s)
    });
    let stats = match res {
        Ok(s) => s,
        Err(e) => {
            let _ = copy::remove_tree(u, &stage);
            return Err(e.context(format!(
                "copying back failed; nothing changed: {} is still on tmpfs",
                dir.display()
            )));
        }
    };
    // From here on only renames on one filesystem.
    rustix::fs::mkdirat(u, &trash, Mode::RWXU)
        .context("cannot create a scratch directory on disk")?;
    let tr = copy::open_dir_at(u, &trash)?;
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
            .with_context(|| format!("cannot move old entry {} aside", copy::show(n.as_bytes())))?;
    }
    for n in list(staged.as_fd())? {
        rustix::fs::renameat(&staged, &n, u, &n).with_context(|| {
            format!(
                "cannot move {} into place; the copy is in {}/{} and the old entries in {}/{}",
                copy::show(n.as_bytes()),
                dir.display(),
                stage.to_string_lossy(),
                dir.display(),
                trash.to_string_lossy()
            )
        })?;
    }
    drop(staged);
    drop(tr);
    rustix::fs::unlinkat(u, &stage, AtFlags::REMOVEDIR)
        .context("cannot remove the scratch directory")?;
    copy::remove_tree(u, &trash).context("cannot remove the old entries")?;
    // Last, so the renames above do not leave their mark on the directory's times.
    copy::copy_root_meta(src.as_fd(), u)
        .context("cannot copy the directory's own owner/mode/xattrs/times")?;
    Ok(stats)
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
            names.push(crate::render::term::safe(&e.file_name().to_string_lossy()).into_owned());
        }
    }
    if n > names.len() {
        names.push(format!("and {} more", n - names.len()));
    }
    Ok(names)
}
