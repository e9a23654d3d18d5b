//! The same walk as [`super::usage`], also split by owner (uid) and by
//! directory: what `top` shows per mount. Counting happens in the walk's own
//! `fstatat`s, so the split costs no extra system call.

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use rustix::fs::Stat;

use super::{Config, Usage};

/// One worker's counts: per breakdown directory (by id) and per uid.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// (bytes, inodes) counted directly in each directory (not below it).
    own: Vec<(u64, u64)>,
    /// (uid, bytes, inodes): a handful of owners per mount, so a short list
    /// scanned from the last hit beats hashing every entry.
    by_uid: Vec<(u32, u64, u64)>,
    last: usize,
    /// This worker's largest files, largest first, at most [`LARGEST_FILES`].
    largest: Vec<FileTotal>,
    /// Unreadable directories, by the breakdown directory they count in.
    unreadable: Vec<(u32, bool)>,
}

impl Tally {
    pub(super) fn note(&mut self, st: &Stat, dir: u32) {
        let bytes = (st.st_blocks as u64) * 512;
        let i = dir as usize;
        if self.own.len() <= i {
            self.own.resize(i + 1, (0, 0));
        }
        self.own[i].0 += bytes;
        self.own[i].1 += 1;
        let uid = st.st_uid;
        if self.by_uid.get(self.last).is_none_or(|e| e.0 != uid) {
            self.last = match self.by_uid.iter().position(|e| e.0 == uid) {
                Some(i) => i,
                None => {
                    self.by_uid.push((uid, 0, 0));
                    self.by_uid.len() - 1
                }
            };
        }
        let e = &mut self.by_uid[self.last];
        e.1 += bytes;
        e.2 += 1;
    }

    pub(super) fn note_unreadable(&mut self, dir: u32, itself: bool) {
        self.unreadable.push((dir, itself));
    }

    /// Keep the file if it is among this worker's largest. Its directory's
    /// path is asked of the kernel only then (a few dozen times a walk), so
    /// the walk need not carry a path for every directory.
    pub(super) fn note_file(&mut self, st: &Stat, dir: &OwnedFd, name: &CStr) {
        let bytes = (st.st_blocks as u64) * 512;
        if self.largest.len() >= LARGEST_FILES
            && self.largest.last().is_some_and(|f| f.bytes >= bytes)
        {
            return;
        }
        let Ok(d) = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())) else {
            return;
        };
        let f = FileTotal {
            path: d.join(OsStr::from_bytes(name.to_bytes())),
            bytes,
            uid: st.st_uid,
            mtime: st.st_mtime,
            dev: st.st_dev,
            ino: st.st_ino,
        };
        let at = self.largest.partition_point(|o| o.bytes >= bytes);
        self.largest.insert(at, f);
        self.largest.truncate(LARGEST_FILES);
    }
}

/// Files a breakdown names, largest first: enough to fill a screen's
/// "largest files" and to name what fills a mount.
pub const LARGEST_FILES: usize = 10;

/// One of the largest files, like a line of `du -a | sort -h | tail`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileTotal {
    /// Absolute, as the kernel names the directory it was found in.
    pub path: PathBuf,
    /// Allocated bytes (st_blocks * 512), as du.
    pub bytes: u64,
    pub uid: u32,
    /// Seconds since the epoch.
    pub mtime: i64,
    #[serde(skip)]
    pub dev: u64,
    #[serde(skip)]
    pub ino: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OwnerTotal {
    pub uid: u32,
    pub bytes: u64,
    pub inodes: u64,
}

/// A directory's whole subtree, like `du -s -x DIR`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DirTotal {
    /// Relative to the walked root ("" is the root itself).
    pub path: PathBuf,
    pub bytes: u64,
    pub inodes: u64,
    /// Directories in this subtree whose contents were not counted.
    pub unreadable_dirs: u64,
    /// This directory itself could not be read: its figure is its own inode only.
    pub unreadable: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Breakdown {
    pub usage: Usage,
    /// Largest first.
    pub by_owner: Vec<OwnerTotal>,
    /// Every directory down to the asked depth (the root excluded), largest first.
    pub dirs: Vec<DirTotal>,
    /// The largest files anywhere below, the root's own included, largest first.
    pub largest_files: Vec<FileTotal>,
}

/// Measure `root` like [`super::usage`], with totals per uid and per directory
/// down to `dir_depth` levels below it (deeper ones count in their ancestor).
pub fn breakdown(root: &Path, dir_depth: usize) -> Result<Breakdown> {
    let (walk, tallies, dirs) =
        super::walk_detailed(root, &Config::for_this_process(), dir_depth.max(1))?;
    Ok(combine(walk.usage, tallies, &dirs))
}

fn combine(usage: Usage, tallies: Vec<Tally>, dirs: &[(u32, CString)]) -> Breakdown {
    let mut own = vec![(0u64, 0u64); dirs.len().max(1)];
    let mut by_uid: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut largest: Vec<FileTotal> = Vec::new();
    let mut blind = vec![0u64; own.len()];
    let mut blind_self = vec![false; own.len()];
    for t in tallies {
        largest.extend(t.largest);
        for (d, itself) in t.unreadable {
            if let Some(b) = blind.get_mut(d as usize) {
                *b += 1;
                blind_self[d as usize] |= itself;
            }
        }
        for (i, (b, n)) in t.own.into_iter().enumerate() {
            if let Some(o) = own.get_mut(i) {
                o.0 += b;
                o.1 += n;
            }
        }
        for (uid, b, n) in t.by_uid {
            let e = by_uid.entry(uid).or_default();
            e.0 += b;
            e.1 += n;
        }
    }
    // A directory is registered after its parent, so its id is larger: one
    // pass from the end adds each subtree into its parent.
    for i in (1..own.len()).rev() {
        let parent = dirs.get(i).map_or(0, |d| d.0 as usize);
        let (b, n) = own[i];
        own[parent].0 += b;
        own[parent].1 += n;
        blind[parent] += blind[i];
    }
    let mut paths: Vec<PathBuf> = Vec::with_capacity(dirs.len());
    for (i, (parent, name)) in dirs.iter().enumerate() {
        let p = if i == 0 {
            PathBuf::new()
        } else {
            let base = paths.get(*parent as usize).cloned().unwrap_or_default();
            base.join(OsStr::from_bytes(name.to_bytes()))
        };
        paths.push(p);
    }
    let mut out_dirs: Vec<DirTotal> = paths
        .into_iter()
        .zip(own)
        .zip(blind.into_iter().zip(blind_self))
        .skip(1)
        .map(
            |((path, (bytes, inodes)), (unreadable_dirs, unreadable))| DirTotal {
                path,
                bytes,
                inodes,
                unreadable_dirs,
                unreadable,
            },
        )
        .collect();
    out_dirs.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.path.cmp(&b.path)));
    let mut by_owner: Vec<OwnerTotal> = by_uid
        .into_iter()
        .map(|(uid, (bytes, inodes))| OwnerTotal { uid, bytes, inodes })
        .collect();
    by_owner.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.uid.cmp(&b.uid)));
    largest.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.path.cmp(&b.path)));
    largest.truncate(LARGEST_FILES);
    Breakdown {
        usage,
        by_owner,
        dirs: out_dirs,
        largest_files: largest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn owners_and_dirs_add_up_to_the_plain_walk() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("a/deep/er/still")).unwrap();
        std::fs::create_dir_all(r.join("b")).unwrap();
        std::fs::write(r.join("a/deep/er/still/f"), vec![7u8; 200_000]).unwrap();
        std::fs::write(r.join("b/g"), vec![7u8; 9000]).unwrap();
        std::fs::write(r.join("top"), b"x").unwrap();
        for i in 0..300 {
            std::fs::write(r.join(format!("b/n{i}")), b"y").unwrap();
        }
        let plain = super::super::usage(r).unwrap();
        let d = breakdown(r, 2).unwrap();
        assert_eq!(d.usage, plain);
        let uid = std::fs::metadata(r).unwrap().uid();
        assert_eq!(
            d.by_owner,
            vec![OwnerTotal {
                uid,
                bytes: plain.bytes,
                inodes: plain.inodes
            }]
        );
        let get = |p: &str| d.dirs.iter().find(|x| x.path == Path::new(p)).cloned();
        let a = get("a").unwrap();
        assert_eq!((a.bytes, a.inodes), {
            let u = super::super::usage(&r.join("a")).unwrap();
            (u.bytes, u.inodes)
        });
        assert_eq!(get("a/deep").unwrap().inodes, 4);
        assert!(get("a/deep/er").is_none(), "depth 3 is below the asked 2");
        assert_eq!(get("b").unwrap().inodes, 302);
        assert!(d.dirs.windows(2).all(|w| w[0].bytes >= w[1].bytes));
    }
}
