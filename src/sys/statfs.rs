//! statfs(2) figures, computed the way `df -B1` and `df -i` compute them.

use std::path::Path;

use anyhow::{Context, Result};

/// `f_type` of tmpfs and ramfs in statfs(2).
pub const TMPFS_MAGIC: u64 = 0x0102_1994;
pub const RAMFS_MAGIC: u64 = 0x8584_58f6;

/// True for a filesystem whose data lives only in RAM (tmpfs, ramfs), by
/// its statfs(2) `f_type` (i64 on some targets: give it `as u64`).
pub fn is_ram_fs_type(f_type: u64) -> bool {
    f_type == TMPFS_MAGIC || f_type == RAMFS_MAGIC
}

/// Where a mount's `used_bytes` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageSource {
    /// statfs(2), as `df`.
    Statfs,
    /// A walk of its files, as `du -s -x -B1`: ramfs keeps no usage count.
    Walk,
    /// Not measured (a `--sysroot` capture, or the walk failed).
    Unknown,
    /// Not counted: the directory shares its filesystem with other data, so
    /// statfs does not answer for it, and walking it (`--du`) was not asked
    /// for: a walk grows with every file there.
    NotCounted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct FsStats {
    pub block_size: u64,
    /// f_blocks * f_frsize; 0 for ramfs (no limit).
    pub size_bytes: u64,
    /// (f_blocks - f_bfree) * f_frsize, as df's "Used".
    pub used_bytes: u64,
    /// f_bavail * f_frsize, as df's "Avail".
    pub avail_bytes: u64,
    /// f_files; 0 when the filesystem has no inode limit.
    pub inodes_total: u64,
    /// f_files - f_ffree, as df -i's "IUsed".
    pub inodes_used: u64,
    pub inodes_free: u64,
}

pub fn statfs(path: &Path) -> Result<FsStats> {
    let s = rustix::fs::statvfs(path).with_context(|| format!("statfs {}", path.display()))?;
    let fr = if s.f_frsize > 0 {
        s.f_frsize
    } else {
        s.f_bsize
    };
    Ok(FsStats {
        block_size: fr,
        size_bytes: s.f_blocks.saturating_mul(fr),
        used_bytes: s.f_blocks.saturating_sub(s.f_bfree).saturating_mul(fr),
        avail_bytes: s.f_bavail.saturating_mul(fr),
        inodes_total: s.f_files,
        inodes_used: s.f_files.saturating_sub(s.f_ffree),
        inodes_free: s.f_ffree,
    })
}

/// A RAM filesystem's limits and usage as `status` and `plan` report them:
/// from statfs(2) on the live system; under a `--sysroot` capture (where the
/// mount cannot be asked) the limits from its `size=`/`nr_inodes=` options
/// and the usage unknown. A limit of 0 (ramfs, tmpfs `size=0`) is `None`:
/// no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    pub size_bytes: Option<u64>,
    pub used_bytes: Option<u64>,
    pub avail_bytes: Option<u64>,
    pub inodes_total: Option<u64>,
    pub inodes_used: Option<u64>,
}

/// [`Limits`] of mount `m`; `live` says whether statfs may be asked,
/// `mem_total` resolves a `size=50%`.
pub fn limits(m: &super::MountInfo, live: bool, mem_total: u64) -> Limits {
    let stats = if live {
        statfs(&m.mount_point).ok()
    } else {
        None
    };
    match stats {
        Some(s) => Limits {
            size_bytes: (s.size_bytes > 0).then_some(s.size_bytes),
            used_bytes: Some(s.used_bytes),
            avail_bytes: Some(s.avail_bytes),
            inodes_total: (s.inodes_total > 0).then_some(s.inodes_total),
            inodes_used: Some(s.inodes_used),
        },
        None => Limits {
            size_bytes: m
                .option("size")
                .and_then(|v| crate::units::parse_size(v).ok())
                .map(|s| s.resolve(mem_total))
                .filter(|&b| b > 0),
            inodes_total: m
                .option("nr_inodes")
                .and_then(|v| crate::units::parse_count(v).ok())
                .filter(|&n| n > 0),
            ..Limits::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::mountinfo;

    #[test]
    fn limits_of_a_capture_come_from_the_options() {
        let (m, _) = mountinfo::parse(
            b"30 25 0:26 / /t rw - tmpfs tmpfs rw,size=50%,nr_inodes=1k\n\
31 25 0:27 / /z rw - tmpfs tmpfs rw,size=0\n\
32 25 0:28 / /r rw - ramfs ramfs rw\n",
        );
        let l = limits(&m[0], false, 4 << 30);
        assert_eq!(l.size_bytes, Some(2 << 30));
        assert_eq!(l.inodes_total, Some(1024));
        assert_eq!(
            (l.used_bytes, l.avail_bytes, l.inodes_used),
            (None, None, None)
        );
        assert_eq!(limits(&m[1], false, 4 << 30), Limits::default());
        assert_eq!(limits(&m[2], false, 4 << 30), Limits::default());
    }
}
