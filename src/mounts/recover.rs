//! Finishing or undoing what a killed apply or revert was doing, from the
//! step its note recorded and what the system shows now (the note says
//! what was about to happen; the mounts say whether it did).
//!
//! - apply killed after moving the tmpfs onto DIR: what was written to the
//!   directory underneath between the copy and the switch is brought across.
//! - revert killed while swapping the copy into the directory underneath
//!   (the tmpfs still on DIR): the directory underneath is put back as it was.
//! - revert killed after taking the tmpfs off DIR: the tmpfs is still
//!   mounted at the note's staging point, so what was written to it after
//!   the copy is brought back to DIR, then the staging mount goes.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, Result};
use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};

use super::facts::mount_at;
use crate::sys::atomic::{self, AtomicWrite};
use crate::sys::copy;
use crate::sys::hidden;
use crate::sys::journal::Pending;
use crate::sys::{Sysroot, fs};

/// Settle the killed run `p` on `dir` (its note at `note`, rewritten when
/// a step of the settling must not be repeated should this run be killed
/// too); what was done, for the user.
pub(super) fn settle(p: &Pending, dir: &Path, note: &Path) -> Result<Vec<String>> {
    match p.op.as_str() {
        "apply" => settle_apply(p, dir),
        "revert" => settle_revert(p, dir, note),
        _ => Ok(Vec::new()),
    }
}

/// The device of what `path` names (a mount's root shows the mount's).
fn dev_of(path: &Path) -> Option<u64> {
    rustix::fs::lstat(path).ok().map(|s| s.st_dev)
}

fn open_dir(path: &Path) -> Result<OwnedFd> {
    rustix::fs::openat(
        CWD,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", path.display()))
}

fn underlying(dir: &Path) -> Result<hidden::Underlying> {
    let (mounts, _) = Sysroot::live().mountinfo()?;
    let top = mount_at(&mounts, dir)
        .with_context(|| format!("no mount at {} in mountinfo", dir.display()))?;
    hidden::open_underlying(&mounts, top, dir)
}

fn settle_apply(p: &Pending, dir: &Path) -> Result<Vec<String>> {
    let (Some(dev), Some(cut)) = (p.dev, p.cut) else {
        return Ok(Vec::new());
    };
    if p.step == "caught-up" || dev_of(dir) != Some(dev) {
        return Ok(Vec::new());
    }
    let under = underlying(dir)?;
    let tmp = open_dir(dir)?;
    sweep_scratch(tmp.as_fd(), &scratch_name("delta", p.pid)?)?;
    let d = merge(under.dir.as_fd(), tmp.as_fd(), cut)?;
    Ok(vec![format!(
        "finished it: {} is on tmpfs; {}",
        dir.display(),
        said(&d, "brought across", "written underneath during the switch")
    )])
}

fn settle_revert(p: &Pending, dir: &Path, note: &Path) -> Result<Vec<String>> {
    let (Some(stage), Some(dev)) = (p.stage.as_deref().map(Path::new), p.dev) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let staged = dev_of(stage) == Some(dev);
    if dev_of(dir) == Some(dev) {
        // The tmpfs never left DIR: it holds everything; only the directory
        // underneath may be half swapped.
        let under = underlying(dir)?;
        out.push(format!(
            "{} is still on tmpfs with all its files; {}",
            dir.display(),
            fix_swap(under.dir.as_fd(), p, note)?
        ));
    } else if staged {
        let d = open_dir(dir)?;
        let swap = fix_swap(d.as_fd(), p, note)?;
        sweep_scratch(d.as_fd(), &scratch_name("delta", p.pid)?)?;
        let s = open_dir(stage)?;
        let delta = merge(s.as_fd(), d.as_fd(), p.cut.unwrap_or((0, 0)))?;
        copy::copy_root_meta(s.as_fd(), d.as_fd())
            .context("cannot copy the directory's own owner/mode/xattrs/times")?;
        out.push(format!(
            "finished copying back to {}: {}; {swap}",
            dir.display(),
            said(
                &delta,
                "brought back",
                "written to the tmpfs while it was reverted"
            )
        ));
    }
    if staged {
        use crate::sys::unmount::{At, How, unmount};
        unmount(At::Dir(stage), How::Detach).map_err(|e| {
            anyhow::Error::new(e.errno()).context(format!(
                "cannot unmount the staging mount {}",
                stage.display()
            ))
        })?;
    }
    let _ = std::fs::remove_dir(stage);
    Ok(out)
}

fn said(d: &copy::delta::Delta, verb: &str, what: &str) -> String {
    let mut s = format!("{verb} {} entries {what}", d.brought.len());
    if !d.kept_newer.is_empty() {
        s.push_str(&format!(
            " (kept the newer version of {}: {})",
            d.kept_newer.len(),
            d.kept_newer
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    s
}

pub(super) fn scratch_name(what: &str, pid: u32) -> Result<CString> {
    Ok(CString::new(format!(
        "{}{what}-{pid}",
        atomic::TEMP_PREFIX
    ))?)
}

/// Put the directory copied back into (`u`) in order after revert's swap
/// was cut short: before all old entries were moved aside, move them back
/// (the tmpfs still holds the new ones); once the new ones were all in
/// place, only the scratch directories go.
fn fix_swap(u: BorrowedFd<'_>, p: &Pending, note: &Path) -> Result<String> {
    let stage = scratch_name("revert", p.pid)?;
    let trash = scratch_name("old", p.pid)?;
    let exists = |n: &CStr| rustix::fs::statat(u, n, AtFlags::SYMLINK_NOFOLLOW).is_ok();
    let (had_stage, had_trash) = (exists(&stage), exists(&trash));
    if !had_stage && !had_trash {
        return Ok("the directory on disk needed nothing".into());
    }
    let undo = matches!(p.step.as_str(), "staging" | "swapping");
    if undo && had_trash {
        if p.step == "swapping" {
            // Every old entry was aside; what is in place came from the copy.
            for n in fs::names(u)? {
                if n != stage && n != trash && !is_scratch(&n) {
                    fs::remove_tree(u, &n)?;
                }
            }
            // Killed from here on, the next run must only move the old
            // entries back, not remove what is in place (by then, some of them).
            let mut again = p.clone();
            again.step = "staging".into();
            AtomicWrite::report("the progress note").write(note, &serde_json::to_vec(&again)?)?;
        }
        let t = fs::open_dir_at(u, &trash)?;
        for n in fs::names(t.as_fd())? {
            rustix::fs::renameat(&t, &n, u, &n).with_context(|| {
                format!("cannot move {} back into place", fs::show(n.to_bytes()))
            })?;
        }
    }
    for n in [&stage, &trash] {
        if exists(n) {
            fs::remove_tree(u, n)?;
        }
    }
    Ok(if undo {
        "put the directory on disk back as it was".into()
    } else {
        "removed the scratch directories of the finished copy".into()
    })
}

/// A scratch directory of some run (`.tmpfsctl-revert-PID`, `-old-`).
fn is_scratch(n: &CStr) -> bool {
    let b = n.to_bytes();
    [
        b".tmpfsctl-revert-".as_slice(),
        b".tmpfsctl-old-".as_slice(),
    ]
    .iter()
    .any(|p| b.starts_with(p))
}

/// Remove every entry called `name` in the tree at `d` (the scratch
/// directories a killed catch-up left), not crossing mounts.
fn sweep_scratch(d: BorrowedFd<'_>, name: &CStr) -> Result<()> {
    let dev = rustix::fs::fstat(d)?.st_dev;
    for n in fs::names(d)? {
        if n.as_c_str() == name {
            fs::remove_tree(d, &n)?;
            continue;
        }
        let Ok(st) = rustix::fs::statat(d, &n, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        if FileType::from_raw_mode(st.st_mode) == FileType::Directory && st.st_dev == dev {
            let sub = fs::open_dir_at(d, &n)?;
            sweep_scratch(sub.as_fd(), name)?;
        }
    }
    Ok(())
}

/// Bring into `dst` what `src` holds that `dst` lacks or holds in an older
/// version, without the base the killed run kept in memory: an entry of
/// `dst` counts as untouched since the copy when its mtime is before `cut`
/// (the switch) or not after `src`'s; otherwise `dst`'s is newer and kept.
/// Nothing is removed from `dst`: a file deleted from `src` during the
/// switch comes back rather than a file being lost.
fn merge(src: BorrowedFd<'_>, dst: BorrowedFd<'_>, cut: (i64, u64)) -> Result<copy::delta::Delta> {
    let cancel = AtomicBool::new(false);
    let s = copy::snapshot(src, &cancel)?;
    let d = copy::snapshot(dst, &cancel)?;
    let mut base: BTreeMap<Vec<u8>, copy::EntrySig> = d
        .into_iter()
        .filter(|(k, ds)| {
            !k.is_empty()
                && s.get(k)
                    .is_some_and(|ss| ds.mtime < cut || ds.mtime <= ss.mtime)
        })
        .collect();
    let mut all = copy::delta::Delta::default();
    for _ in 0..copy::delta::CATCH_UP_PASSES {
        let d = copy::delta::carry(src, dst, &mut base, &cancel)?;
        if all.absorb(d) {
            break;
        }
    }
    Ok(all)
}
