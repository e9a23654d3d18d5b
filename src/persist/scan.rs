//! Walking DIR (never following a symlink, never leaving its filesystem) and
//! deciding, per entry, whether it changed since a generation.
//!
//! Regular files are not opened here: the walk only stats, so finding what
//! changed in a tree of thousands of files costs one fstatat each. A file is
//! unchanged when size, mtime, inode and ctime all equal what the generation
//! recorded (ctime cannot be set by a user, so a `touch -d` or a same-size
//! rewrite is still seen). Only when the stat differs in inode or ctime but
//! not in anything a restore would show, the content is hashed to tell.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd};

use anyhow::{Context, Result};
use rustix::fs::{AtFlags, Stat};
use rustix::io::Errno;

use super::manifest::{Entry, Kind};
use crate::sys::deep;
use crate::sys::fs::{self, Obj};

/// One entry of DIR as the walk found it.
#[derive(Debug, Clone)]
pub struct Found {
    pub e: Entry,
    pub nlink: u64,
    /// Bytes allocated (st_blocks * 512): what the entry takes in a tmpfs.
    pub alloc_bytes: u64,
}

#[derive(Debug, Default)]
pub struct Scan {
    pub found: Vec<Found>,
    /// st_dev of DIR: entries on another device are mounts inside DIR.
    pub dev: u64,
    /// Mount points inside DIR, left out (they are not DIR's data).
    pub skipped_mounts: Vec<Vec<u8>>,
    /// Entries whose path below DIR is longer than the kernel takes in one
    /// call ([`MAX_REL`]), left out (and what is below them): no store or
    /// restore could name them.
    pub too_long: Vec<Vec<u8>>,
}

/// The longest path below DIR an entry may have; any user who can write
/// in DIR can make a deeper one, which is left out and named, never a
/// failed sync.
pub use crate::sys::deep::MAX_REL;

/// (inode, ctime) of each file of DIR as the last restore left it, so the
/// first sync after a restore links instead of copying everything again.
#[derive(Debug, Default)]
pub struct LiveIndex {
    pub files: HashMap<Vec<u8>, (u64, (i64, u32))>,
}

pub fn entry_from_stat(path: Vec<u8>, st: &Stat) -> Entry {
    let [atime, mtime, ctime] = fs::stat_times(st);
    let rdev = st.st_rdev;
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFLNK => Kind::Symlink(Vec::new()),
        libc::S_IFIFO => Kind::Fifo,
        libc::S_IFSOCK => Kind::Socket,
        libc::S_IFCHR => Kind::Char(rdev),
        libc::S_IFBLK => Kind::Block(rdev),
        _ => Kind::File,
    };
    Entry {
        path,
        kind,
        mode: st.st_mode & 0o7777,
        uid: st.st_uid,
        gid: st.st_gid,
        size: if st.st_mode & libc::S_IFMT == libc::S_IFREG {
            st.st_size as u64
        } else {
            0
        },
        atime,
        mtime,
        ctime,
        ino: st.st_ino,
        hash: None,
        xattrs: Vec::new(),
        torn: false,
    }
}

/// Walk the tree under `root`: DIR itself first (empty path), then each
/// directory before its entries, names sorted.
pub fn walk(root: BorrowedFd<'_>) -> Result<Scan> {
    let st = rustix::fs::fstat(root).context("stat of DIR")?;
    let mut e = entry_from_stat(Vec::new(), &st);
    e.xattrs = Obj::Fd(root).all().context("xattrs of DIR")?;
    let mut scan = Scan {
        found: vec![Found {
            e,
            nlink: st.st_nlink,
            alloc_bytes: st.st_blocks as u64 * 512,
        }],
        dev: st.st_dev,
        skipped_mounts: Vec::new(),
        too_long: Vec::new(),
    };
    // One descriptor per level, as deep as MAX_REL allows.
    deep::raise_open_files_limit();
    walk_dir(root, b"", &mut scan)?;
    Ok(scan)
}

fn walk_dir(dir: BorrowedFd<'_>, rel: &[u8], scan: &mut Scan) -> Result<()> {
    let names = fs::names(dir).with_context(|| format!("listing {}", show(rel)))?;
    for name in names {
        let path = fs::join(rel, name.to_bytes());
        if path.len() > MAX_REL {
            scan.too_long.push(path);
            continue;
        }
        let st = match rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(s) => s,
            // Deleted since the listing: not part of this point in time.
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(e).with_context(|| format!("stat {}", show(&path))),
        };
        if st.st_dev != scan.dev {
            scan.skipped_mounts.push(path);
            continue;
        }
        let mut e = entry_from_stat(path.clone(), &st);
        match e.kind {
            Kind::Dir => {
                let sub = match fs::open_dir_beneath(dir, name.to_bytes()) {
                    Ok(f) => f,
                    Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => continue,
                    // A bind mount of this same filesystem: st_dev alike,
                    // but another mount all the same.
                    Err(Errno::XDEV) => {
                        scan.skipped_mounts.push(path);
                        continue;
                    }
                    Err(e) => return Err(e).with_context(|| format!("open {}", show(&path))),
                };
                e.xattrs = Obj::Fd(sub.as_fd())
                    .all()
                    .with_context(|| format!("xattrs of {}", show(&path)))?;
                scan.found.push(Found {
                    e,
                    nlink: st.st_nlink,
                    alloc_bytes: st.st_blocks as u64 * 512,
                });
                walk_dir(sub.as_fd(), &path, scan)?;
                continue;
            }
            Kind::File => {}
            _ => {
                if let Kind::Symlink(t) = &mut e.kind {
                    *t = match rustix::fs::readlinkat(dir, &name, Vec::new()) {
                        Ok(t) => t.into_bytes(),
                        Err(Errno::NOENT | Errno::INVAL) => continue,
                        Err(e) => {
                            return Err(e).with_context(|| format!("readlink {}", show(&path)));
                        }
                    };
                }
                e.xattrs = match Obj::at(dir, name.to_bytes()).all() {
                    Ok(x) => x,
                    // Gone between the stat and here (a lock symlink, a
                    // socket): not part of this point in time, like an entry
                    // deleted before the stat.
                    Err(Errno::NOENT) => continue,
                    Err(e) => return Err(e).with_context(|| format!("xattrs of {}", show(&path))),
                };
            }
        }
        scan.found.push(Found {
            e,
            nlink: st.st_nlink,
            alloc_bytes: st.st_blocks as u64 * 512,
        });
    }
    Ok(())
}

/// A path too long to read whole in a message: its first and last bytes
/// and its length.
pub fn show_long(rel: &[u8]) -> String {
    deep::show_long_with(rel, show)
}

/// A path for messages: lossy UTF-8 (callers escape it for terminals).
pub fn show(rel: &[u8]) -> String {
    if rel.is_empty() {
        ".".to_string()
    } else {
        String::from_utf8_lossy(rel).into_owned()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Provably the generation's version: link it, carry its hash and xattrs.
    Same,
    /// Looks the same but was touched (inode or ctime differ): the content
    /// and xattrs decide.
    SameIfContent,
    Changed,
    New,
}

/// How `cur` (fresh from the walk) relates to `prev` (the generation's entry
/// for the same path). Directories ignore mtime and ctime: they change
/// whenever an entry inside does, and those entries are judged themselves.
pub fn classify(cur: &Entry, prev: Option<&Entry>, live: &LiveIndex) -> Verdict {
    let Some(p) = prev else {
        return Verdict::New;
    };
    let base = p.kind == cur.kind && p.mode == cur.mode && p.uid == cur.uid && p.gid == cur.gid;
    match cur.kind {
        Kind::Dir => {
            if base && p.xattrs == cur.xattrs {
                Verdict::Same
            } else {
                Verdict::Changed
            }
        }
        Kind::File => {
            // A torn copy is never carried forward as if whole.
            if p.torn || !base || p.size != cur.size || p.mtime != cur.mtime {
                return Verdict::Changed;
            }
            let stamp = (cur.ino, cur.ctime);
            if (p.ino, p.ctime) == stamp || live.files.get(&cur.path) == Some(&stamp) {
                Verdict::Same
            } else {
                Verdict::SameIfContent
            }
        }
        _ => {
            if base && p.mtime == cur.mtime && p.xattrs == cur.xattrs {
                Verdict::Same
            } else {
                Verdict::Changed
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(ino: u64, ctime: i64) -> Entry {
        Entry {
            path: b"f".to_vec(),
            kind: Kind::File,
            mode: 0o644,
            uid: 0,
            gid: 0,
            size: 3,
            atime: (0, 0),
            mtime: (10, 5),
            ctime: (ctime, 0),
            ino,
            hash: None,
            xattrs: Vec::new(),
            torn: false,
        }
    }

    #[test]
    fn unchanged_needs_inode_and_ctime_or_the_restore_index() {
        let p = file(1, 100);
        let live = LiveIndex::default();
        assert_eq!(classify(&file(1, 100), Some(&p), &live), Verdict::Same);
        assert_eq!(
            classify(&file(1, 101), Some(&p), &live),
            Verdict::SameIfContent
        );
        assert_eq!(
            classify(&file(2, 100), Some(&p), &live),
            Verdict::SameIfContent
        );
        let mut bigger = file(1, 100);
        bigger.size = 4;
        assert_eq!(classify(&bigger, Some(&p), &live), Verdict::Changed);
        assert_eq!(classify(&file(1, 100), None, &live), Verdict::New);
        let mut live = LiveIndex::default();
        live.files.insert(b"f".to_vec(), (9, (200, 0)));
        assert_eq!(classify(&file(9, 200), Some(&p), &live), Verdict::Same);
    }
}
