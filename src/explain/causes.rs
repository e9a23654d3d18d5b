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

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cause {
    /// bytes_full, inodes_full, quota, cgroup_memory, memory_pressure,
    /// read_only, not_ram_backed, ok.
    pub kind: String,
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
    pub holds: crate::top::Holdings,
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
    /// Walks and statfs are meaningful (not a --sysroot fixture).
    pub live: bool,
    /// The mount's walk (per directory and largest files), when it was walked.
    pub walk: Option<&'a du::Breakdown>,
    /// The largest files of that walk, with owners and holders.
    pub largest: &'a [crate::top::LargeFile],
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
                    crate::top::holdings_below(root, h, &p, scan, mounts, 5)
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

fn cause(kind: &str, binds: bool, detail: String, fix: String) -> Cause {
    Cause {
        kind: kind.into(),
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
                procfd::comm(&Sysroot::default(), p.pid),
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
            "not_ram_backed",
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
            "not_ram_backed",
            true,
            format!("{head} It is that disk that is full: {what}."),
            format!(
                "free space on the disk at {mp} (`du -x -d1 {mp} | sort -n` shows where it went), or put the work on tmpfs"
            ),
        )
    } else {
        cause(
            "not_ram_backed",
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
        .live
        .then(|| du::breakdown(&m.mount_point, 1).ok())
        .flatten()?;
    let mine = b.by_owner.iter().find(|o| o.uid == i.writer_uid);
    let (used_b, used_i) = mine.map_or((0, 0), |o| (o.bytes, o.inodes));
    let over_b = limit_b.is_some_and(|l| used_b + 4096 > l);
    let over_i = limit_i.is_some_and(|l| used_i >= l);
    (over_b || over_i).then(|| {
        cause(
            "quota",
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
        "cgroup_memory",
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
            free_held(c.shmem_bytes, &c.holds)
        ),
    ))
}

/// How to give back the pages a cgroup's processes hold: each file named
/// with its mount and holder, and the command that frees it; what they do
/// not hold (written and closed) the kernel does not name.
fn free_held(shmem: u64, h: &crate::top::Holdings) -> String {
    let files: Vec<String> = h
        .held_files
        .iter()
        .take(3)
        .map(|f| {
            let size = f.bytes.map_or("size unknown".into(), fmt_bytes);
            let on = f
                .mountpoint
                .as_ref()
                .map_or(String::new(), |m| format!(" on {m}"));
            let how = match f.held_by.first() {
                // Truncating through the holder's fd frees the pages now,
                // whether the name is still there or not.
                Some(b) if b.fd.is_some() && !f.memfd => format!(
                    "open by pid {} ({}) fd {fd}: `: > /proc/{}/fd/{fd}` frees it now{}",
                    b.pid,
                    b.comm,
                    b.pid,
                    if f.deleted {
                        String::new()
                    } else {
                        format!(", then `rm {}`", crate::render::term::shell_word(&f.path))
                    },
                    fd = b.fd.unwrap_or_default(),
                ),
                Some(b) if !f.deleted && !f.memfd => format!(
                    "mapped by pid {} ({}): `rm {}`, and its pages go when pid {} unmaps it or exits",
                    b.pid,
                    b.comm,
                    crate::render::term::shell_word(&f.path),
                    b.pid
                ),
                Some(b) => format!("held by pid {} ({}): restart it to free it", b.pid, b.comm),
                None => String::new(),
            };
            format!("{} ({size}{on}, {how})", f.path)
        })
        .collect();
    if files.is_empty() {
        return "delete the files its processes wrote on tmpfs (none holds one open now: \
                `tmpfsctl top` lists each mount's largest files)"
            .into();
    }
    let rest = shmem.saturating_sub(h.held_bytes);
    let unnamed = if rest > shmem / 10 {
        format!(
            "; {} more of its shmem is in files its processes wrote and closed, which the kernel does not \
             name (`tmpfsctl top` lists each mount's largest files)",
            fmt_bytes(rest)
        )
    } else {
        String::new()
    };
    format!(
        "free the files its processes hold on tmpfs: {}{unnamed}",
        files.join("; ")
    )
}

/// Every check, binding ones first (in the order they would stop a write),
/// then what does not bind; `ok` when nothing does.
pub fn classify(i: &Inputs) -> Vec<Cause> {
    let m = i.mount;
    let mp = m.mount_point.display().to_string();
    // The fixes are commands to paste: the mount point quoted for a shell.
    let q = crate::render::term::shell_word(&mp);
    let mut out = Vec::new();
    if i.read_only {
        out.push(cause(
            "read_only",
            true,
            format!(
                "{mp} ({}) is mounted read-only: every write fails with EROFS",
                m.fstype
            ),
            format!("`mount -o remount,rw {q}` if it should be writable, or write somewhere else"),
        ));
    }
    if !crate::sys::is_ram_backed(&m.fstype) {
        let d = disk_cause(i);
        let binds = d.binds;
        out.push(d);
        if !binds && !i.read_only {
            out.push(ok_cause(i));
        }
        return out;
    }
    let ramfs = m.fstype == "ramfs";
    if let Some(s) = i.stats.filter(|s| !ramfs && s.size_bytes > 0)
        && nearly_none(s.avail_bytes, s.size_bytes)
    {
        let bigger = tmpfs_size_option(s.size_bytes.saturating_mul(2));
        out.push(cause(
            "bytes_full",
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
        ));
    }
    if let Some(s) = i.stats.filter(|s| s.inodes_total > 0)
        && inodes_nearly_none(s.inodes_free, s.inodes_total)
    {
        let free_bytes = if ramfs {
            String::new()
        } else {
            format!(" while {} of bytes are free", fmt_bytes(s.avail_bytes))
        };
        out.push(cause(
            "inodes_full",
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
        ));
    }
    out.extend(quota_cause(i));
    out.extend(cgroup_cause(i));
    let could_grow = match i.stats {
        Some(s) if !ramfs && s.size_bytes > 0 => Some(s.avail_bytes),
        _ => None,
    };
    let ram_left = i
        .mem
        .mem_available_bytes
        .saturating_add(i.mem.swap_free_bytes);
    if let Some(g) = could_grow.filter(|&g| g > ram_left) {
        out.push(cause(
            "memory_pressure",
            true,
            format!(
                "{mp} may still grow by {}, but only {} of RAM is available (MemAvailable {} + free swap {}): \
                 its size limit is a promise RAM cannot keep; filling it pushes the system into swap or the OOM killer",
                fmt_bytes(g),
                fmt_bytes(ram_left),
                fmt_bytes(i.mem.mem_available_bytes),
                fmt_bytes(i.mem.swap_free_bytes)
            ),
            format!(
                "lower its size (`mount -o remount,size={} {q}`, and the same size= in its fstab line or mount unit), \
                 free memory, or add swap",
                tmpfs_size_option((ram_left / 2 + s_used(i)) >> 20 << 20)
            ),
        ));
    }
    if out.is_empty() {
        out.push(ok_cause(i));
    }
    out
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
        "ok",
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
mod tests {
    use super::*;

    fn mount(line: &str) -> MountInfo {
        crate::sys::mountinfo::parse_line(line.as_bytes()).unwrap()
    }

    fn stats(size: u64, avail: u64, itotal: u64, ifree: u64) -> FsStats {
        FsStats {
            block_size: 4096,
            size_bytes: size,
            used_bytes: size - avail,
            avail_bytes: avail,
            inodes_total: itotal,
            inodes_used: itotal - ifree,
            inodes_free: ifree,
        }
    }

    fn kinds(
        m: &MountInfo,
        s: Option<&FsStats>,
        cg: &[CgroupCheck],
        ro: bool,
        mem_avail: u64,
    ) -> Vec<(String, bool)> {
        let mem = MemInfo {
            mem_total_bytes: 8 << 30,
            mem_available_bytes: mem_avail,
            ..Default::default()
        };
        let scan = Scan::default();
        let i = Inputs {
            path: Path::new("/t/x"),
            mount: m,
            stats: s,
            mem: &mem,
            cgroups: cg,
            read_only: ro,
            scan: &scan,
            writer_uid: 0,
            live: false,
            walk: None,
            largest: &[],
        };
        classify(&i)
            .into_iter()
            .map(|c| (c.kind, c.binds))
            .collect()
    }

    #[test]
    fn each_limit_is_named_and_ok_only_when_none_binds() {
        let t = mount("2 1 0:40 / /t rw - tmpfs tmpfs rw,size=1024k");
        let big = 4 << 30;
        let k = |s: FsStats, ro| kinds(&t, Some(&s), &[], ro, big);
        assert_eq!(
            k(stats(1 << 20, 0, 100, 50), false),
            vec![("bytes_full".into(), true)]
        );
        assert_eq!(
            k(stats(1 << 20, 1 << 19, 100, 0), false),
            vec![("inodes_full".into(), true)]
        );
        assert_eq!(
            k(stats(1 << 20, 1 << 19, 100, 50), false),
            vec![("ok".into(), false)]
        );
        assert_eq!(
            k(stats(1 << 20, 1 << 19, 100, 50), true)[0],
            ("read_only".into(), true)
        );
        // A limit bigger than the RAM left.
        let p = kinds(
            &t,
            Some(&stats(8 << 30, 8 << 30, 100, 50)),
            &[],
            false,
            1 << 30,
        );
        assert_eq!(p, vec![("memory_pressure".into(), true)]);
        let cg = CgroupCheck {
            path: "/job".into(),
            cgroup_version: 2,
            shmem_bytes: 50 << 20,
            memory_limit_bytes: Some(64 << 20),
            memory_current_bytes: Some(62 << 20),
            holds: Default::default(),
        };
        let c = kinds(
            &t,
            Some(&stats(1 << 30, 1 << 29, 100, 50)),
            std::slice::from_ref(&cg),
            false,
            big,
        );
        assert_eq!(c, vec![("cgroup_memory".into(), true)]);
        let calm = CgroupCheck {
            memory_current_bytes: Some(10 << 20),
            ..cg
        };
        let c = kinds(
            &t,
            Some(&stats(1 << 30, 1 << 29, 100, 50)),
            &[calm],
            false,
            big,
        );
        assert_eq!(c, vec![("ok".into(), false)]);
    }

    #[test]
    fn a_disk_says_so_and_binds_only_when_full() {
        let d = mount("1 0 253:1 / / rw - ext4 /dev/vda1 rw");
        let roomy = kinds(
            &d,
            Some(&stats(1 << 30, 1 << 29, 100, 50)),
            &[],
            false,
            1 << 30,
        );
        assert_eq!(
            roomy,
            vec![("not_ram_backed".into(), false), ("ok".into(), false)]
        );
        let full = kinds(&d, Some(&stats(1 << 30, 0, 100, 50)), &[], false, 1 << 30);
        assert_eq!(full, vec![("not_ram_backed".into(), true)]);
    }
}
