//! Disk usage of a tree, with the accounting of `du -s -x -B1`: allocated
//! blocks (st_blocks * 512), the directory itself included, hard links counted
//! once, other mounts not crossed, symlinks not followed.
//!
//! Written by hand rather than with walkdir/jwalk: those stat by path and cannot
//! count hard links once or stop at mount boundaries for free; here every stat is
//! an `fstatat` relative to an open directory, like GNU du's fts.

use std::collections::HashSet;
use std::ffi::{CStr, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, RawDir, Stat};

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Allocated bytes, as `du -s -x -B1`.
    pub bytes: u64,
    /// Inodes (files, directories, links...), hard links once, as `du -s -x --inodes`.
    pub inodes: u64,
    /// Oldest modification time seen, seconds since the epoch.
    pub oldest_mtime: Option<i64>,
    /// Directories that could not be read (permissions, races); their contents are not counted.
    pub unreadable_dirs: u64,
}

/// Directories deeper than this are opened by full path after their parent is
/// closed, so a very deep tree cannot run us out of file descriptors.
const MAX_OPEN_DEPTH: usize = 128;

fn open_dir(at: Option<&OwnedFd>, name: &Path) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match at {
        Some(fd) => rustix::fs::openat(fd, name, flags, Mode::empty()),
        None => rustix::fs::openat(CWD, name, flags, Mode::empty()),
    }
}

struct Walker {
    dev: u64,
    seen_links: HashSet<(u64, u64)>,
    usage: Usage,
    buf: Vec<u8>,
}

impl Walker {
    fn account(&mut self, st: &Stat) {
        let is_dir = FileType::from_raw_mode(st.st_mode) == FileType::Directory;
        if !is_dir && st.st_nlink > 1 && !self.seen_links.insert((st.st_dev, st.st_ino)) {
            return;
        }
        self.usage.bytes += (st.st_blocks as u64) * 512;
        self.usage.inodes += 1;
        let m = st.st_mtime;
        if self.usage.oldest_mtime.is_none_or(|o| m < o) {
            self.usage.oldest_mtime = Some(m);
        }
    }

    fn walk(&mut self, fd: OwnedFd, path: &mut PathBuf, depth: usize) {
        let mut subdirs: Vec<Box<[u8]>> = Vec::new();
        {
            // One reused 32 KiB getdents buffer, read straight from `fd`: as
            // GNU du does, one or two getdents calls per directory and no
            // reopen of "." (rustix's Dir starts at 768 bytes and dups the fd).
            let mut buf = std::mem::take(&mut self.buf);
            let mut dir = RawDir::new(&fd, buf.spare_capacity_mut());
            while let Some(ent) = dir.next() {
                let Ok(ent) = ent else {
                    self.usage.unreadable_dirs += 1;
                    break;
                };
                let name: &CStr = ent.file_name();
                let b = name.to_bytes();
                if b == b"." || b == b".." {
                    continue;
                }
                let Ok(st) = rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW) else {
                    continue; // vanished while we walked
                };
                if st.st_dev != self.dev {
                    continue; // a mount point: du -x does not count it
                }
                self.account(&st);
                if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
                    subdirs.push(b.into());
                }
            }
            self.buf = buf;
        }
        let keep_parent = depth < MAX_OPEN_DEPTH;
        let parent = if keep_parent { Some(fd) } else { None };
        for name in subdirs {
            path.push(OsStr::from_bytes(&name));
            let opened = match &parent {
                Some(p) => open_dir(Some(p), Path::new(OsStr::from_bytes(&name))),
                None => open_dir(None, path),
            };
            match opened {
                Ok(child) => self.walk(child, path, depth + 1),
                Err(_) => self.usage.unreadable_dirs += 1,
            }
            path.pop();
        }
    }
}

/// Measure a directory tree. Errors only when the top itself cannot be read.
pub fn usage(root: &Path) -> Result<Usage> {
    let st = rustix::fs::statat(CWD, root, AtFlags::empty())
        .with_context(|| format!("cannot stat {}", root.display()))?;
    let mut w = Walker {
        dev: st.st_dev,
        seen_links: HashSet::new(),
        usage: Usage::default(),
        buf: Vec::with_capacity(32 << 10),
    };
    w.account(&st);
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return Ok(w.usage);
    }
    let fd = open_dir(None, root)
        .with_context(|| format!("cannot open directory {}", root.display()))?;
    let mut path = root.to_path_buf();
    w.walk(fd, &mut path, 0);
    Ok(w.usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_hard_links_once_and_skips_symlink_targets() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::create_dir_all(d.join("a/b/c")).unwrap();
        std::fs::write(d.join("a/f1"), vec![7u8; 100_000]).unwrap();
        std::fs::hard_link(d.join("a/f1"), d.join("a/b/f1-link")).unwrap();
        std::os::unix::fs::symlink("/usr", d.join("a/usr-link")).unwrap();
        let u = usage(d).unwrap();
        // root, a, b, c, f1 (once), symlink
        assert_eq!(u.inodes, 6);
        let f1 = std::fs::metadata(d.join("a/f1")).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert!(u.bytes >= f1.blocks() * 512);
        assert!(u.bytes < 2 * f1.blocks() * 512 + 64 * 4096, "{u:?}");
        assert_eq!(u.unreadable_dirs, 0);
        assert!(u.oldest_mtime.is_some());
    }

    #[test]
    fn missing_root_is_an_error_naming_it() {
        let e = usage(Path::new("/nonexistent/xyz")).unwrap_err();
        assert!(format!("{e:#}").contains("/nonexistent/xyz"));
    }
}
