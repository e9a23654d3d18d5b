//! Carrying what changed in a tree after it was copied: the writes that land
//! between the copy and the switch (and, for revert, until the detach). The
//! old tree stays reachable through a descriptor after it is hidden, so it is
//! rescanned and every entry that changed since the verified copy is brought
//! across, each through a scratch directory and one rename.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use rustix::fs::{AtFlags, FileType, Mode};
use rustix::io::Errno;

use super::metadata::copy_dir_meta;
use super::verify::sig_of;
use super::{Copier, CopyStats, EntrySig, Mover, snapshot};
use crate::sys::atomic;
use crate::sys::deep::{self, show_long as show};
use crate::sys::fs::{Obj, open_dir_at, open_regular, remove_tree};

/// Passes over the old tree after the switch before giving up on a writer
/// that keeps writing there (through a descriptor opened before the switch).
pub const CATCH_UP_PASSES: usize = 5;

/// What one pass brought across, by path from the tree root.
#[derive(Debug, Default, Clone)]
pub struct Delta {
    /// Created or replaced in the destination.
    pub brought: Vec<String>,
    /// Removed from the destination (gone from the source since the copy).
    pub removed: Vec<String>,
    /// Changed on both sides since the copy: the destination's version (the
    /// newer one, written after the switch) was kept.
    pub kept_newer: Vec<String>,
}

impl Delta {
    /// Add `d` to what was carried so far; true when `d` carried nothing,
    /// i.e. the catch-up is done.
    pub fn absorb(&mut self, d: Delta) -> bool {
        let done = d.is_empty();
        self.brought.extend(d.brought);
        self.removed.extend(d.removed);
        self.kept_newer.extend(d.kept_newer);
        done
    }

    pub fn is_empty(&self) -> bool {
        self.brought.is_empty() && self.removed.is_empty()
    }
}

/// Equal as far as a user's data goes: type, mode, owner, content, link
/// target, device number, xattrs; mtime for all but directories (whose
/// mtime moves with every entry added to them).
fn same(a: &EntrySig, b: &EntrySig) -> bool {
    let dir = FileType::from_raw_mode(a.mode) == FileType::Directory;
    a.mode == b.mode
        && (a.uid, a.gid) == (b.uid, b.gid)
        && (dir || (a.size, a.content_hash, a.mtime) == (b.size, b.content_hash, b.mtime))
        && a.link_target == b.link_target
        && a.rdev == b.rdev
        && a.xattrs == b.xattrs
}

fn split(rel: &[u8]) -> (&[u8], &[u8]) {
    match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&[], rel),
    }
}

/// Open the directory `rel` under `root` (no symlink followed); `None` when
/// it is not there (any more).
fn open_rel(root: BorrowedFd<'_>, rel: &[u8]) -> Result<Option<OwnedFd>> {
    let mut cur = rustix::fs::openat(
        root,
        c".",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for part in rel.split(|&b| b == b'/').filter(|p| !p.is_empty()) {
        let n = CString::new(part)?;
        cur = match open_dir_at(cur.as_fd(), &n) {
            Ok(d) => d,
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot open {}", show(rel))),
        };
    }
    Ok(Some(cur))
}

/// The signature of one entry, as [`snapshot`] would give it (without
/// hard-link grouping); `None` when it does not exist.
pub fn entry_sig(root: BorrowedFd<'_>, rel: &[u8]) -> Result<Option<EntrySig>> {
    let (parent, name) = split(rel);
    let Some(dir) = open_rel(root, parent)? else {
        return Ok(None);
    };
    let name = CString::new(name)?;
    let st = match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot stat {}", show(rel))),
    };
    let ctx = || format!("cannot read {}", show(rel));
    let sig = match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => {
            let d = open_dir_at(dir.as_fd(), &name).with_context(ctx)?;
            sig_of(&st, None, Obj::Fd(d.as_fd()), None, None)
        }
        FileType::RegularFile => {
            let f = open_regular(dir.as_fd(), &name, &st, false).with_context(ctx)?;
            sig_of(&st, Some(f.as_fd()), Obj::Fd(f.as_fd()), None, None)
        }
        FileType::Symlink => {
            let t = rustix::fs::readlinkat(&dir, &name, Vec::new()).with_context(ctx)?;
            sig_of(
                &st,
                None,
                Obj::at(dir.as_fd(), name.to_bytes()),
                Some(t.into_bytes()),
                None,
            )
        }
        _ => sig_of(&st, None, Obj::at(dir.as_fd(), name.to_bytes()), None, None),
    };
    sig.with_context(ctx).map(Some)
}

fn under(k: &[u8], dirs: &[Vec<u8>]) -> bool {
    dirs.iter()
        .any(|d| k.len() > d.len() && k.starts_with(d) && k[d.len()] == b'/')
}

/// One pass: compare `src` now with `base` (what both trees held when they
/// last agreed), bring every change across into `dst` where `dst` still
/// holds the `base` version, and move `base` forward to what was carried.
pub fn carry(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    base: &mut BTreeMap<Vec<u8>, EntrySig>,
    cancel: &AtomicBool,
) -> Result<Delta> {
    deep::on_deep_stack(|| carry_here(src, dst, base, cancel))
}

fn carry_here(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    base: &mut BTreeMap<Vec<u8>, EntrySig>,
    cancel: &AtomicBool,
) -> Result<Delta> {
    let now = snapshot(src, cancel)?;
    let mut out = Delta::default();
    let mut whole: Vec<Vec<u8>> = Vec::new();
    let mut dirs_changed: Vec<Vec<u8>> = Vec::new();
    let scratch = CString::new(format!(
        "{}delta-{}",
        atomic::TEMP_PREFIX,
        std::process::id()
    ))?;
    let src_dev = rustix::fs::fstat(src)?.st_dev;
    for (k, sig) in now.iter().filter(|(k, _)| !k.is_empty()) {
        if under(k, &whole) {
            continue;
        }
        let old = base.get(k);
        if old.is_some_and(|o| same(o, sig)) {
            continue;
        }
        let is_dir = FileType::from_raw_mode(sig.mode) == FileType::Directory;
        let was_dir = old.is_some_and(|o| FileType::from_raw_mode(o.mode) == FileType::Directory);
        if is_dir && was_dir {
            // A directory whose own metadata changed: its entries are
            // compared one by one; its owner, mode and times are set last,
            // after entries brought into it have moved its mtime.
            dirs_changed.push(k.clone());
            continue;
        }
        let theirs = entry_sig(dst, k)?;
        let untouched = match (&theirs, old) {
            (None, _) => true,
            (Some(t), Some(o)) => same(t, o),
            (Some(_), None) => false,
        };
        if !untouched {
            out.kept_newer.push(show(k));
            continue;
        }
        let (parent, name) = split(k);
        let (Some(sp), Some(dp)) = (open_rel(src, parent)?, open_rel(dst, parent)?) else {
            continue;
        };
        let name = CString::new(name)?;
        bring(sp.as_fd(), dp.as_fd(), &name, &scratch, k, src_dev, cancel)
            .with_context(|| format!("cannot bring {} across", show(k)))?;
        if is_dir {
            whole.push(k.clone());
        }
        out.brought.push(show(k));
    }
    let mut gone: Vec<&Vec<u8>> = base
        .keys()
        .filter(|k| !k.is_empty() && !now.contains_key(*k))
        .collect();
    gone.sort();
    let mut removed_dirs: Vec<Vec<u8>> = Vec::new();
    for k in gone {
        if under(k, &removed_dirs) {
            continue;
        }
        let (Some(old), Some(theirs)) = (base.get(k), entry_sig(dst, k)?) else {
            continue;
        };
        if !same(old, &theirs) {
            out.kept_newer.push(show(k));
            continue;
        }
        let (parent, name) = split(k);
        if let Some(dp) = open_rel(dst, parent)? {
            remove_tree(dp.as_fd(), &CString::new(name)?)?;
            removed_dirs.push(k.clone());
            out.removed.push(show(k));
        }
    }
    for k in dirs_changed.iter().rev() {
        if let (Some(sd), Some(dd)) = (open_rel(src, k)?, open_rel(dst, k)?) {
            let st = rustix::fs::fstat(&sd)?;
            copy_dir_meta(sd.as_fd(), dd.as_fd(), &st, &mut CopyStats::default())
                .map_err(|(what, e)| anyhow::anyhow!("{}: cannot copy {what}: {e}", show(k)))?;
        }
    }
    *base = now;
    Ok(out)
}

/// Copy `name` from `sp` into a scratch directory in `dp`, then rename it
/// over `dp/name`: readers see the old or the new entry, never half of one.
fn bring(
    sp: BorrowedFd<'_>,
    dp: BorrowedFd<'_>,
    name: &CStr,
    scratch: &CStr,
    rel: &[u8],
    src_dev: u64,
    cancel: &AtomicBool,
) -> Result<()> {
    let _ = remove_tree(dp, scratch);
    rustix::fs::mkdirat(dp, scratch, Mode::RWXU)?;
    let s = open_dir_at(dp, scratch)?;
    let mut c = Copier {
        src_dev,
        links: HashMap::new(),
        dst_root: s.as_fd(),
        cancel,
        progress: &|_| {},
        max_depth: deep::depth_limit(super::FDS_PER_LEVEL),
        mover: Mover::CopyFileRange,
        buf: Vec::new(),
        stats: CopyStats::default(),
    };
    let res = c
        .copy_entry(sp, s.as_fd(), name, rel.to_vec())
        .and_then(|()| {
            // rename(2) replaces a file or an empty directory, not a full one.
            if let Ok(st) = rustix::fs::statat(dp, name, AtFlags::SYMLINK_NOFOLLOW)
                && FileType::from_raw_mode(st.st_mode) == FileType::Directory
            {
                remove_tree(dp, name)?;
            }
            rustix::fs::renameat(&s, name, dp, name).context("rename into place")?;
            Ok(())
        });
    drop(s);
    let _ = remove_tree(dp, scratch);
    res
}
