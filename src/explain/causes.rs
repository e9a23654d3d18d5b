//! The limits a write can hit, each checked with its numbers and its fix.
//! Pure over [`Inputs`] except the walk that names the biggest consumers of
//! a full mount (only done when a limit binds).

use std::path::Path;

use serde::Serialize;

use crate::sys::cgroup::{self, Hierarchy};
use crate::sys::procfd::{self, Scan};
use crate::sys::statfs::FsStats;
use crate::sys::{MemInfo, MountInfo, Sysroot, du};
use crate::units::{fmt_bytes, fmt_count, tmpfs_size_option};

/// What can stop a write, in the order the checks run and bind. Adding a
/// cause: a variant here (in its place in [`CauseKind::ALL`]), its arm in
/// [`CauseKind::check`] with the function that checks it, and its name in
/// README.md's explain paragraph (a test holds the README to this order).
/// The JSON carries [`CauseKind::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CauseKind {
    ReadOnly,
    NotRamBacked,
    BytesFull,
    InodesFull,
    Quota,
    CgroupMemory,
    MemoryPressure,
    /// Nothing binds: added by [`classify`] when no other cause binds.
    Ok,
}

crate::variants::all_variants!(
    /// Every cause in binding order: `classify` checks them in this order,
    /// `explain --help` lists them in it.
    CauseKind,
    [
        ReadOnly,
        NotRamBacked,
        BytesFull,
        InodesFull,
        Quota,
        CgroupMemory,
        MemoryPressure,
        Ok,
    ]
);

impl CauseKind {
    /// The name in the JSON and the text.
    pub fn name(self) -> &'static str {
        match self {
            CauseKind::ReadOnly => "read_only",
            CauseKind::NotRamBacked => "not_ram_backed",
            CauseKind::BytesFull => "bytes_full",
            CauseKind::InodesFull => "inodes_full",
            CauseKind::Quota => "quota",
            CauseKind::CgroupMemory => "cgroup_memory",
            CauseKind::MemoryPressure => "memory_pressure",
            CauseKind::Ok => "ok",
        }
    }

    /// What the human answer says first when this cause binds first.
    pub fn verdict(self) -> &'static str {
        match self {
            CauseKind::MemoryPressure => {
                "a write may succeed now, but this mount can grow past the RAM left"
            }
            CauseKind::CgroupMemory => "the next write gets its writer OOM-killed",
            _ => "a write here fails",
        }
    }

    /// This cause at `i`, when it applies (binding or not). RAM limits
    /// are only checked on RAM-backed mounts; a disk has `not_ram_backed`.
    fn check(self, i: &Inputs) -> Option<Cause> {
        let ram = crate::sys::is_ram_backed(&i.mount.fstype);
        match self {
            CauseKind::ReadOnly => read_only_cause(i),
            CauseKind::NotRamBacked if !ram => Some(disk_cause(i)),
            CauseKind::BytesFull if ram => bytes_cause(i),
            CauseKind::InodesFull if ram => inodes_cause(i),
            CauseKind::Quota if ram => quota_cause(i),
            CauseKind::CgroupMemory if ram => cgroup_cause(i),
            CauseKind::MemoryPressure if ram => pressure_cause(i),
            _ => None,
        }
    }
}

impl Serialize for CauseKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// The causes as `explain --help` lists them: every binding one in order.
pub fn help_list() -> String {
    let names: Vec<&str> = CauseKind::ALL
        .iter()
        .filter(|k| **k != CauseKind::Ok)
        .map(|k| k.name())
        .collect();
    format!(
        "Causes, in the order they bind: {}; ok when nothing binds. \
         not_ram_backed: PATH is on a disk, and it is that disk that is full.",
        names.join(", ")
    )
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cause {
    pub kind: CauseKind,
    pub binds: bool,
    pub detail: String,
    pub fix: String,
}

/// One of the writer's memory cgroups, with its numbers.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CgroupCheck {
    pub path: String,
    pub cgroup_version: u8,
    pub shmem_bytes: u64,
    pub memory_limit_bytes: Option<u64>,
    pub memory_current_bytes: Option<u64>,
    /// For a cgroup with a limit: the RAM-backed files its processes hold.
    #[serde(flatten)]
    pub holds: crate::attrib::Holdings,
}

pub struct Inputs<'a> {
    pub path: &'a Path,
    pub mount: &'a MountInfo,
    pub stats: Option<&'a FsStats>,
    pub mem: &'a MemInfo,
    pub cgroups: &'a [CgroupCheck],
    pub read_only: bool,
    pub scan: &'a Scan,
    pub writer_uid: u32,
    /// The system explained: its /proc names the processes (walks and
    /// statfs are meaningful only when it is the live one).
    pub root: &'a Sysroot,
    /// The mount's walk (per directory and largest files), when it was walked.
    pub walk: Option<&'a du::Breakdown>,
    /// The largest files of that walk, with owners and holders.
    pub largest: &'a [crate::attrib::LargeFile],
}

/// Bytes are used up when less than one page, or 0.5 %, is left.
fn nearly_none(avail: u64, total: u64) -> bool {
    avail < (total / 200).max(4096)
}

/// Inodes are used up when none, or less than 0.5 %, is left.
fn inodes_nearly_none(free: u64, total: u64) -> bool {
    free < (total / 200).max(1)
}

/// A cgroup binds when less than a tenth of its limit is left.
const CGROUP_HEADROOM_DIVISOR: u64 = 10;

/// The writer's cgroups and their ancestors, innermost first, with numbers
/// and (those with a limit) the files their processes hold on `mounts`.
pub fn cgroup_checks(
    root: &Sysroot,
    writer: &[(Hierarchy, String)],
    scan: &Scan,
    mounts: &[MountInfo],
) -> Vec<CgroupCheck> {
    let mut out = Vec::new();
    for (h, path) in writer {
        for p in cgroup::ancestors(path) {
            if let Some(c) = cgroup::read(root, h, &p) {
                let holds = if c.memory_limit_bytes.is_some() && c.shmem_bytes > 0 {
                    crate::attrib::holdings_below(root, h, &p, scan, mounts, 5)
                } else {
                    Default::default()
                };
                out.push(CgroupCheck {
                    path: c.path,
                    cgroup_version: c.cgroup_version,
                    shmem_bytes: c.shmem_bytes,
                    memory_limit_bytes: c.memory_limit_bytes,
                    memory_current_bytes: c.memory_current_bytes,
                    holds,
                });
            }
        }
    }
    out
}

fn cause(kind: CauseKind, binds: bool, detail: String, fix: String) -> Cause {
    Cause {
        kind,
        binds,
        detail,
        fix,
    }
}

/// The biggest consumers of a mount: its largest files (root files
/// included), its largest directories and files deleted but open.
fn consumers(i: &Inputs, by_inodes: bool) -> String {
    let mut parts = Vec::new();
    if !by_inodes {
        for f in i.largest.iter().take(3) {
            let held = f
                .open_by
                .first()
                .map(|o| format!(", open by pid {} ({})", o.pid, o.comm))
                .unwrap_or_default();
            parts.push(format!(
                "{} ({}, owner {}{held})",
                f.path,
                fmt_bytes(f.bytes),
                f.owner
            ));
        }
    }
    if let Some(b) = i.walk {
        let mut dirs = b.dirs.clone();
        if by_inodes {
            dirs.sort_by_key(|d| std::cmp::Reverse(d.inodes));
        }
        for d in dirs.iter().take(3) {
            let p = i.mount.mount_point.join(&d.path);
            parts.push(if by_inodes {
                format!("{} ({} inodes)", p.display(), fmt_count(d.inodes))
            } else {
                format!("{} ({})", p.display(), fmt_bytes(d.bytes))
            });
        }
    }
    let dev = procfd::dev_of(i.mount.major, i.mount.minor);
    for p in &i.scan.processes {
        // One line per deleted file a process holds, however many fds it uses.
        let mut seen = std::collections::HashSet::new();
        for f in p.files.iter().filter(|f| f.dev == dev && f.deleted) {
            if !seen.insert(f.ino) {
                continue;
            }
            parts.push(format!(
                "deleted {} still held open by pid {} ({}) fd {}: {} freed only when that process closes it or exits; \
                 `: > /proc/{}/fd/{}` frees it now without a restart (the file is emptied, the process keeps its fd), \
                 or restart pid {}",
                f.path.display(),
                p.pid,
                procfd::comm(i.root, p.pid),
                f.fd,
                fmt_bytes(f.bytes),
                p.pid,
                f.fd,
                p.pid
            ));
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" Biggest consumers: {}.", parts.join("; "))
    }
}

fn disk_cause(i: &Inputs) -> Cause {
    let m = i.mount;
    let mp = m.mount_point.display();
    let head = format!(
        "{} is on {} ({} mounted at {}), a disk, not RAM: no tmpfs limit applies here.",
        i.path.display(),
        m.fstype,
        m.source,
        mp
    );
    let Some(s) = i.stats else {
        return cause(
            CauseKind::NotRamBacked,
            false,
            head,
            "nothing RAM-related to fix".into(),
        );
    };
    // A disk filesystem keeps blocks back (reserved clusters, metadata): it
    // refuses writes while statfs still shows a little free, so the margin is wider.
    let bytes_full = s.avail_bytes < (s.size_bytes / 100).max(1 << 20);
    let inodes_full = s.inodes_total > 0 && inodes_nearly_none(s.inodes_free, s.inodes_total);
    if bytes_full || inodes_full {
        let what = if bytes_full {
            format!(
                "{} of {} free",
                fmt_bytes(s.avail_bytes),
                fmt_bytes(s.size_bytes)
            )
        } else {
            format!(
                "{} of {} inodes free",
                fmt_count(s.inodes_free),
                fmt_count(s.inodes_total)
            )
        };
        cause(
            CauseKind::NotRamBacked,
            true,
            format!("{head} It is that disk that is full: {what}."),
            format!(
                "free space on the disk at {mp} (`du -x -d1 {mp} | sort -n` shows where it went), or put the work on tmpfs"
            ),
        )
    } else {
        cause(
            CauseKind::NotRamBacked,
            false,
            format!(
                "{head} That disk has {} of {} free and {} inodes free.",
                fmt_bytes(s.avail_bytes),
                fmt_bytes(s.size_bytes),
                fmt_count(s.inodes_free)
            ),
            format!(
                "nothing to fix for RAM; if a write fails here, check `df {mp}` and `df -i {mp}`"
            ),
        )
    }
}

fn quota_cause(i: &Inputs) -> Option<Cause> {
    let m = i.mount;
    let on = m
        .all_options()
        .iter()
        .any(|o| matches!(o.as_str(), "usrquota" | "quota" | "grpquota"));
    if !on {
        return None;
    }
    let limit_b = m
        .option("usrquota_block_hardlimit")
        .and_then(|v| crate::units::parse_bytes(v).ok());
    let limit_i = m
        .option("usrquota_inode_hardlimit")
        .and_then(|v| crate::units::parse_count(v).ok());
    let b = i
        .root
        .is_live()
        .then(|| du::breakdown(&m.mount_point, 1).ok())
        .flatten()?;
    let mine = b.by_owner.iter().find(|o| o.uid == i.writer_uid);
    let (used_b, used_i) = mine.map_or((0, 0), |o| (o.bytes, o.inodes));
    let over_b = limit_b.is_some_and(|l| used_b + 4096 > l);
    let over_i = limit_i.is_some_and(|l| used_i >= l);
    (over_b || over_i).then(|| {
        cause(
            CauseKind::Quota,
            true,
            format!(
                "uid {} holds {} in {} inodes on {}, at its default quota ({} bytes, {} inodes)",
                i.writer_uid,
                fmt_bytes(used_b),
                used_i,
                m.mount_point.display(),
                limit_b.map_or("no".into(), fmt_bytes),
                limit_i.map_or("no".into(), |l| l.to_string())
            ),
            format!(
                "delete that user's files there, or raise usrquota_block_hardlimit / usrquota_inode_hardlimit (`mount -o remount,... {}`)",
                m.mount_point.display()
            ),
        )
    })
}

fn cgroup_cause(i: &Inputs) -> Option<Cause> {
    let c = i.cgroups.iter().find(|c| {
        let (Some(l), Some(cur)) = (c.memory_limit_bytes, c.memory_current_bytes) else {
            return false;
        };
        c.shmem_bytes > 0 && l.saturating_sub(cur) < l / CGROUP_HEADROOM_DIVISOR
    })?;
    let (l, cur) = (
        c.memory_limit_bytes.unwrap_or(0),
        c.memory_current_bytes.unwrap_or(0),
    );
    let knob = if c.cgroup_version == 1 {
        "memory.limit_in_bytes"
    } else {
        "memory.max"
    };
    Some(cause(
        CauseKind::CgroupMemory,
        true,
        format!(
            "the writer's cgroup {} (v{}) uses {} of its {} memory limit ({} left), {} of it shmem: tmpfs pages \
             are charged to the cgroup that wrote them and stay charged until the files are deleted, so the next \
             write gets a process there OOM-killed rather than ENOSPC",
            c.path,
            c.cgroup_version,
            fmt_bytes(cur),
            fmt_bytes(l),
            fmt_bytes(l.saturating_sub(cur)),
            fmt_bytes(c.shmem_bytes)
        ),
        format!(
            "{}, or raise the limit ({knob}; Kubernetes resources.limits.memory / emptyDir sizeLimit, \
             Docker --memory, systemd MemoryMax=)",
            c.holds.how_to_free(c.shmem_bytes)
        ),
    ))
}

/// Every check in [`CauseKind::ALL`]'s order (the order they would stop a
/// write); `ok` when none binds.
pub fn classify(i: &Inputs) -> Vec<Cause> {
    let mut out: Vec<Cause> = CauseKind::ALL.iter().filter_map(|k| k.check(i)).collect();
    if !out.iter().any(|c| c.binds) {
        out.push(ok_cause(i));
    }
    out
}

/// The mount point as shown, and quoted for a shell: fixes are commands to paste.
fn mount_point(i: &Inputs) -> (String, String) {
    let mp = i.mount.mount_point.display().to_string();
    let q = crate::term::shell_word(&mp);
    (mp, q)
}

fn read_only_cause(i: &Inputs) -> Option<Cause> {
    if !i.read_only {
        return None;
    }
    let (mp, q) = mount_point(i);
    Some(cause(
        CauseKind::ReadOnly,
        true,
        format!(
            "{mp} ({}) is mounted read-only: every write fails with EROFS",
            i.mount.fstype
        ),
        format!("`mount -o remount,rw {q}` if it should be writable, or write somewhere else"),
    ))
}

fn bytes_cause(i: &Inputs) -> Option<Cause> {
    let ramfs = i.mount.fstype == "ramfs";
    let s = i.stats.filter(|s| !ramfs && s.size_bytes > 0)?;
    if !nearly_none(s.avail_bytes, s.size_bytes) {
        return None;
    }
    let (mp, q) = mount_point(i);
    let bigger = tmpfs_size_option(s.size_bytes.saturating_mul(2));
    Some(cause(
        CauseKind::BytesFull,
        true,
        format!(
            "{mp} is full: {} of its {} size limit used, {} free",
            fmt_bytes(s.used_bytes),
            fmt_bytes(s.size_bytes),
            fmt_bytes(s.avail_bytes)
        ),
        format!(
            "`mount -o remount,size={bigger} {q}` (if RAM allows; to keep it after a reboot, the same size= in its \
             fstab line or mount unit), or delete the biggest consumers.{}",
            consumers(i, false)
        ),
    ))
}

fn inodes_cause(i: &Inputs) -> Option<Cause> {
    let s = i.stats.filter(|s| s.inodes_total > 0)?;
    if !inodes_nearly_none(s.inodes_free, s.inodes_total) {
        return None;
    }
    let (mp, q) = mount_point(i);
    let free_bytes = if i.mount.fstype == "ramfs" {
        String::new()
    } else {
        format!(" while {} of bytes are free", fmt_bytes(s.avail_bytes))
    };
    Some(cause(
        CauseKind::InodesFull,
        true,
        format!(
            "{mp} has used {} of its {} inodes (nr_inodes){free_bytes}: creating a file fails with ENOSPC",
            fmt_count(s.inodes_used),
            fmt_count(s.inodes_total)
        ),
        format!(
            "`mount -o remount,nr_inodes={} {q}` (and the same in its fstab line or unit), or delete many small files.{}",
            s.inodes_total.saturating_mul(2),
            consumers(i, true)
        ),
    ))
}

fn pressure_cause(i: &Inputs) -> Option<Cause> {
    let ramfs = i.mount.fstype == "ramfs";
    let could_grow = match i.stats {
        Some(s) if !ramfs && s.size_bytes > 0 => s.avail_bytes,
        _ => return None,
    };
    let ram_left = i
        .mem
        .mem_available_bytes
        .saturating_add(i.mem.swap_free_bytes);
    if could_grow <= ram_left {
        return None;
    }
    let (mp, q) = mount_point(i);
    Some(cause(
        CauseKind::MemoryPressure,
        true,
        format!(
            "{mp} may still grow by {}, but only {} of RAM is available (MemAvailable {} + free swap {}): \
             its size limit is a promise RAM cannot keep; filling it pushes the system into swap or the OOM killer",
            fmt_bytes(could_grow),
            fmt_bytes(ram_left),
            fmt_bytes(i.mem.mem_available_bytes),
            fmt_bytes(i.mem.swap_free_bytes)
        ),
        format!(
            "lower its size (`mount -o remount,size={} {q}`, and the same size= in its fstab line or mount unit), \
             free memory, or add swap",
            tmpfs_size_option((ram_left / 2 + s_used(i)) >> 20 << 20)
        ),
    ))
}

fn s_used(i: &Inputs) -> u64 {
    i.stats.map_or(0, |s| s.used_bytes)
}

fn ok_cause(i: &Inputs) -> Cause {
    let m = i.mount;
    let mut parts = Vec::new();
    if let Some(s) = i.stats {
        if m.fstype == "ramfs" {
            parts.push("ramfs has no size limit (a runaway writer can take all RAM)".to_string());
        } else {
            parts.push(format!(
                "{} of {} free ({} inodes free)",
                fmt_bytes(s.avail_bytes),
                fmt_bytes(s.size_bytes),
                fmt_count(s.inodes_free)
            ));
        }
    }
    if let Some(c) = i.cgroups.iter().find(|c| c.memory_limit_bytes.is_some()) {
        let (l, cur) = (
            c.memory_limit_bytes.unwrap_or(0),
            c.memory_current_bytes.unwrap_or(0),
        );
        parts.push(format!(
            "cgroup {} has {} left of {}",
            c.path,
            fmt_bytes(l.saturating_sub(cur)),
            fmt_bytes(l)
        ));
    }
    parts.push(format!(
        "MemAvailable {}",
        fmt_bytes(i.mem.mem_available_bytes)
    ));
    cause(
        CauseKind::Ok,
        false,
        format!(
            "nothing binds at {}: {}",
            i.path.display(),
            parts.join("; ")
        ),
        "nothing to fix".into(),
    )
}

#[cfg(test)]
mod tests;
