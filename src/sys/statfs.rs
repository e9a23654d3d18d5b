//! statfs(2) figures, computed the way `df -B1` and `df -i` compute them.

use std::path::Path;

use anyhow::{Context, Result};

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
