//! Comparing two trees entry by entry, to verify a copy (and to see what
//! changed in a tree since an earlier look).

use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, FileType, Stat};
use rustix::io::Errno;

use crate::sys::deep::{self, show_long as show};
use crate::sys::fs::{Extents, Obj, join, names, open_dir_at, open_regular};
use crate::sys::signals::Interrupted;

/// What a tree entry looks like, for comparing two trees. Leaves out what a
/// copy cannot or need not keep: inode numbers, ctime, atime (reading
/// changes it), directory sizes (filesystem-specific) and link counts (hard
/// links are compared as groups instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrySig {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: Option<u64>,
    pub mtime: (i64, u64),
    pub rdev: u64,
    pub link_target: Option<Vec<u8>>,
    pub xattrs: Vec<(Vec<u8>, Vec<u8>)>,
    pub content_hash: Option<u64>,
    /// For the 2nd.. name of a multiply-linked inode: the first name (sorted walk order).
    pub same_inode_as: Option<Vec<u8>>,
}

/// Every entry of a tree by path relative to the root (the root itself is
/// ""), as deep as the copy goes ([`deep::depth_limit`]).
pub fn snapshot(root: BorrowedFd<'_>, cancel: &AtomicBool) -> Result<BTreeMap<Vec<u8>, EntrySig>> {
    let mut out = BTreeMap::new();
    let mut first: HashMap<(u64, u64), Vec<u8>> = HashMap::new();
    let st = rustix::fs::fstat(root)?;
    out.insert(Vec::new(), sig_of(&st, None, Obj::Fd(root), None, None)?);
    let walk = Walk {
        cancel,
        max_depth: deep::depth_limit(super::FDS_PER_LEVEL),
    };
    deep::on_deep_stack(|| snap_dir(root, &[], 0, &mut out, &mut first, &walk))?;
    Ok(out)
}

struct Walk<'a> {
    cancel: &'a AtomicBool,
    max_depth: usize,
}

pub(super) fn sig_of(
    st: &Stat,
    file: Option<BorrowedFd<'_>>,
    obj: Obj<'_>,
    link_target: Option<Vec<u8>>,
    same: Option<Vec<u8>>,
) -> Result<EntrySig> {
    let ft = FileType::from_raw_mode(st.st_mode);
    let content_hash = match file {
        Some(fd) => Some(content_hash(fd, st)?),
        None => None,
    };
    Ok(EntrySig {
        mode: st.st_mode,
        uid: st.st_uid,
        gid: st.st_gid,
        size: (ft != FileType::Directory).then_some(st.st_size as u64),
        mtime: (st.st_mtime, st.st_mtime_nsec),
        rdev: st.st_rdev,
        link_target,
        xattrs: obj.all()?,
        content_hash,
        same_inode_as: same,
    })
}

/// Zero runs are hashed as their length, so equal contents hash equal
/// whether the zeros are holes or written blocks (a sparse source and an
/// expanded copy compare equal, as do a dense source and a sparse copy).
const HASH_BLOCK: usize = 4096;

/// A hash of a regular file's bytes that does not depend on where its holes
/// are: the file is cut into 4 KiB blocks at fixed offsets; a block of zeros
/// adds to a run of zeros, any other block is hashed with its bytes. Holes are
/// zero runs without being read, so a 1 TiB sparse file costs what it holds.
pub fn content_hash(fd: BorrowedFd<'_>, st: &Stat) -> std::io::Result<u64> {
    fn flush(h: &mut std::hash::DefaultHasher, zeros: &mut u64) {
        if *zeros > 0 {
            h.write_u8(0);
            h.write_u64(*zeros);
            *zeros = 0;
        }
    }
    let len = st.st_size as u64;
    let bs = HASH_BLOCK as u64;
    let mut h = std::hash::DefaultHasher::new();
    let mut buf = vec![0u8; 16 * HASH_BLOCK];
    let mut zeros = 0u64;
    // Bytes before `next` are hashed or counted; `next` stays block-aligned
    // until the end of the file, so blocks sit at the same offsets whatever
    // the extent layout.
    let mut next = 0u64;
    for r in Extents::for_stat(fd, st) {
        let r = r?;
        let start = (r.start / bs * bs).max(next);
        let end = r.end.div_ceil(bs).saturating_mul(bs).min(len);
        if start >= end {
            continue;
        }
        zeros += start - next;
        next = start;
        while next < end {
            let want = ((end - next) as usize).min(buf.len());
            let mut got = 0;
            while got < want {
                match rustix::io::pread(fd, &mut buf[got..want], next + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            for b in buf[..got].chunks(HASH_BLOCK) {
                // OR-fold rather than `all`: no early exit, so it vectorises.
                if b.iter().fold(0u8, |a, &x| a | x) == 0 {
                    zeros += b.len() as u64;
                } else {
                    flush(&mut h, &mut zeros);
                    h.write_u8(1);
                    h.write(b);
                }
            }
            next += got as u64;
            if got < want {
                // Shrunk while reading: hash what is there; the size in the
                // signature came from an earlier stat, so it will not match.
                flush(&mut h, &mut zeros);
                return Ok(h.finish());
            }
        }
    }
    zeros += len - next;
    flush(&mut h, &mut zeros);
    Ok(h.finish())
}

fn snap_dir(
    dir: BorrowedFd<'_>,
    rel: &[u8],
    depth: usize,
    out: &mut BTreeMap<Vec<u8>, EntrySig>,
    first: &mut HashMap<(u64, u64), Vec<u8>>,
    walk: &Walk<'_>,
) -> Result<()> {
    if depth > walk.max_depth {
        return Err(deep::too_deep(rel, walk.max_depth));
    }
    for name in names(dir).with_context(|| format!("cannot list {}", show(rel)))? {
        if walk.cancel.load(Ordering::Relaxed) {
            bail!(Interrupted);
        }
        let path = join(rel, name.to_bytes());
        let st = rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW)
            .with_context(|| format!("cannot stat {}", show(&path)))?;
        let ft = FileType::from_raw_mode(st.st_mode);
        let same = if ft != FileType::Directory && st.st_nlink > 1 {
            match first.get(&(st.st_dev, st.st_ino)) {
                Some(f) => Some(f.clone()),
                None => {
                    first.insert((st.st_dev, st.st_ino), path.clone());
                    None
                }
            }
        } else {
            None
        };
        let ctx = || format!("cannot read {}", show(&path));
        let sig = match ft {
            FileType::Directory => {
                let d = open_dir_at(dir, &name).with_context(ctx)?;
                let s = sig_of(&st, None, Obj::Fd(d.as_fd()), None, None).with_context(ctx)?;
                snap_dir(d.as_fd(), &path, depth + 1, out, first, walk)?;
                s
            }
            FileType::RegularFile if same.is_none() => {
                let f = open_regular(dir, &name, &st, false).with_context(ctx)?;
                sig_of(&st, Some(f.as_fd()), Obj::Fd(f.as_fd()), None, None).with_context(ctx)?
            }
            FileType::Symlink => {
                let t = rustix::fs::readlinkat(dir, &name, Vec::new()).with_context(ctx)?;
                sig_of(
                    &st,
                    None,
                    Obj::at(dir, name.to_bytes()),
                    Some(t.into_bytes()),
                    same,
                )
                .with_context(ctx)?
            }
            _ => sig_of(&st, None, Obj::at(dir, name.to_bytes()), None, same).with_context(ctx)?,
        };
        out.insert(path, sig);
    }
    Ok(())
}

/// Paths that differ between two snapshots (missing on either side or not equal), sorted.
pub fn differences(
    a: &BTreeMap<Vec<u8>, EntrySig>,
    b: &BTreeMap<Vec<u8>, EntrySig>,
) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for (k, sa) in a {
        match b.get(k) {
            None => v.push(format!("{}: missing in the copy", show(k))),
            Some(sb) if sa != sb => {
                v.push(format!("{}: differs ({})", show(k), what_differs(sa, sb)))
            }
            _ => {}
        }
    }
    for k in b.keys().filter(|k| !a.contains_key(*k)) {
        v.push(format!("{}: only in the copy", show(k)));
    }
    v
}

fn what_differs(a: &EntrySig, b: &EntrySig) -> String {
    let mut w = Vec::new();
    if a.mode != b.mode {
        w.push(format!("mode {:o} vs {:o}", a.mode, b.mode));
    }
    if (a.uid, a.gid) != (b.uid, b.gid) {
        w.push(format!("owner {}:{} vs {}:{}", a.uid, a.gid, b.uid, b.gid));
    }
    if a.size != b.size || a.content_hash != b.content_hash {
        w.push("content".into());
    }
    if a.mtime != b.mtime {
        w.push("mtime".into());
    }
    if a.xattrs != b.xattrs {
        w.push("xattrs".into());
    }
    if a.link_target != b.link_target {
        w.push("symlink target".into());
    }
    if a.rdev != b.rdev {
        w.push("device number".into());
    }
    if a.same_inode_as != b.same_inode_as {
        w.push("hard links".into());
    }
    w.join(", ")
}
