//! Attribution: who and what holds RAM-backed storage (the largest files and
//! the processes holding them open, the RAM mounts worth a look, the
//! cgroups charged and what their processes hold). The engine `top` and
//! `explain` share: both commands stand on it, neither on the other.

pub mod cgroups;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::sys::procfd::{self, Scan};
use crate::sys::{MountInfo, Sysroot, du, mountinfo};

pub use cgroups::{Holdings, holdings_below};

/// A process with a file open: who to ask (or restart) to let it go.
#[derive(Debug, Clone, Serialize)]
pub struct OpenBy {
    pub pid: u32,
    pub comm: String,
    pub fd: u32,
}

/// One of a mount's largest files, root files included (`du -a | sort -h | tail`).
#[derive(Debug, Clone, Serialize)]
pub struct LargeFile {
    pub path: String,
    /// Allocated bytes, as du.
    pub bytes: u64,
    /// User name, or the uid as a number when it has no passwd entry.
    pub owner: String,
    pub uid: u32,
    /// Last modification, seconds since the epoch.
    pub mtime: i64,
    /// Processes holding it open (one entry per fd).
    pub open_by: Vec<OpenBy>,
}

/// The largest files a walk found, with their owners and the processes
/// holding them open; shared by `top` and `explain`.
pub fn largest_files(
    root: &Sysroot,
    walk: &du::Breakdown,
    scan: &Scan,
    names: &HashMap<u32, String>,
    n: usize,
) -> Vec<LargeFile> {
    walk.largest_files
        .iter()
        .take(n)
        .map(|f| LargeFile {
            path: f.path.to_string_lossy().into_owned(),
            bytes: f.bytes,
            owner: names
                .get(&f.uid)
                .cloned()
                .unwrap_or_else(|| f.uid.to_string()),
            uid: f.uid,
            mtime: f.mtime,
            open_by: scan
                .processes
                .iter()
                .flat_map(|p| {
                    p.files
                        .iter()
                        .filter(|o| o.dev == f.dev && o.ino == f.ino && !o.deleted)
                        .map(move |o| (p.pid, o.fd))
                })
                .map(|(pid, fd)| OpenBy {
                    pid,
                    comm: procfd::comm(root, pid),
                    fd,
                })
                .collect(),
        })
        .collect()
}

/// Mounts on the visible tree that `top` covers: the last of stacked mounts,
/// one per superblock (a bind mount of a tmpfs shown elsewhere is skipped).
pub fn ram_mounts<'a>(mounts: &'a [MountInfo], wanted: &[PathBuf]) -> Vec<&'a MountInfo> {
    let mut visible: Vec<&MountInfo> = Vec::new();
    for m in mounts {
        visible.retain(|o| o.mount_point != m.mount_point);
        visible.push(m);
    }
    let mut out: Vec<&MountInfo> = Vec::new();
    for m in visible {
        if !matches!(m.fstype.as_str(), "tmpfs" | "ramfs") {
            continue;
        }
        if !wanted.is_empty()
            && !wanted
                .iter()
                .any(|p| mountinfo::mount_for(mounts, p).is_some_and(|h| std::ptr::eq(h, m)))
        {
            continue;
        }
        if let Some(i) = out
            .iter()
            .position(|o| (o.major, o.minor) == (m.major, m.minor))
        {
            // Keep the mount of the filesystem's root over a bind of a subdirectory.
            if out[i].root != Path::new("/") && m.root == Path::new("/") {
                out[i] = m;
            }
            continue;
        }
        out.push(m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mi(line: &str) -> MountInfo {
        mountinfo::parse_line(line.as_bytes()).unwrap()
    }

    #[test]
    fn one_row_per_superblock_and_only_ram_filesystems() {
        let ms = vec![
            mi("1 0 253:1 / / rw - ext4 /dev/vda1 rw"),
            mi("2 1 0:40 / /tmp rw - tmpfs tmpfs rw,size=1024k"),
            mi("3 1 0:40 /sub /srv/bind rw - tmpfs tmpfs rw,size=1024k"),
            mi("4 1 0:41 / /run rw - tmpfs tmpfs rw"),
            mi("5 1 0:42 / /run rw - ramfs ramfs rw"),
        ];
        let got: Vec<_> = ram_mounts(&ms, &[]).iter().map(|m| m.mount_id).collect();
        assert_eq!(
            got,
            vec![2, 5],
            "bind of 0:40 skipped, /run stacked: last wins"
        );
        let only: Vec<_> = ram_mounts(&ms, &[PathBuf::from("/tmp/x")])
            .iter()
            .map(|m| m.mount_id)
            .collect();
        assert_eq!(only, vec![2]);
    }
}
