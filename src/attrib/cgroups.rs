//! What each memory cgroup charged with shmem holds on RAM-backed storage:
//! the files its processes (and those of the cgroups below it that hold
//! shmem) have open, memfds included, and the mounts they are on; for the
//! one cgroup explain asks about, the files they map too (a /proc/PID/maps
//! read per process is too dear for every cgroup of a snapshot).
//!
//! Pages are charged to the cgroup that first wrote them, and the kernel
//! says which files a process holds, not which files a cgroup wrote: a file
//! written and closed is linked to no cgroup here.

use std::collections::HashMap;

use serde::Serialize;

use crate::sys::cgroup::{self, CgroupMemory, Hierarchy};
use crate::sys::procfd::{self, MappedFile, Scan};
use crate::sys::{MountInfo, Sysroot};
use crate::units::fmt_bytes;

/// Holders listed per file; the rest are counted.
const HOLDERS_SHOWN: usize = 5;

/// A process holding a file: by a descriptor, or (`fd` null) by a mapping.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HeldBy {
    pub pid: u32,
    pub comm: String,
    pub fd: Option<u32>,
}

/// A file on RAM-backed storage that processes of the cgroup hold.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HeldFile {
    /// Its name (the one it had, when deleted); `/memfd:NAME` for a memfd.
    pub path: String,
    /// The RAM-backed mount holding it; null for a memfd, which is on none.
    pub mountpoint: Option<String>,
    /// Allocated bytes; null when only a mapping reaches it and that could
    /// not be stat'ed (not root, name gone).
    pub bytes: Option<u64>,
    pub deleted: bool,
    pub memfd: bool,
    /// Up to five of its holders in the cgroup.
    pub held_by: Vec<HeldBy>,
    /// How many of the cgroup's processes hold it.
    pub holders: u64,
}

/// A RAM-backed mount that processes of the cgroup hold files on.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HeldMount {
    pub mountpoint: String,
    /// Distinct files held there.
    pub files: u64,
    /// Their allocated bytes, each file once (those whose size is known).
    pub bytes: u64,
}

/// What a cgroup's processes hold on RAM-backed storage.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Holdings {
    /// Processes in the cgroup and in the cgroups below it that hold shmem.
    pub processes: u64,
    /// The mounts they hold files on, most bytes first.
    pub held_mounts: Vec<HeldMount>,
    /// The largest files they hold open (or, for explain, mapped), memfds included.
    pub held_files: Vec<HeldFile>,
    /// Bytes of all the files they hold, each once (memfds included).
    pub held_bytes: u64,
}

impl Holdings {
    /// How to give back the pages a cgroup's processes hold: each file named
    /// with its mount and holder, and the command that frees it; what they do
    /// not hold (written and closed) the kernel does not name.
    pub fn how_to_free(&self, shmem: u64) -> String {
        let h = self;
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
                            format!(", then `rm {}`", crate::term::shell_word(&f.path))
                        },
                        fd = b.fd.unwrap_or_default(),
                    ),
                    Some(b) if !f.deleted && !f.memfd => format!(
                        "mapped by pid {} ({}): `rm {}`, and its pages go when pid {} unmaps it or exits",
                        b.pid,
                        b.comm,
                        crate::term::shell_word(&f.path),
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
}

/// A memory cgroup charged with shmem, with what its processes hold.
#[derive(Debug, Clone, Serialize)]
pub struct CgroupTop {
    #[serde(flatten)]
    pub memory: CgroupMemory,
    #[serde(flatten)]
    pub holds: Holdings,
}

/// `st_dev` of each RAM-backed mount -> the mount point shown for it.
pub type RamDevs = HashMap<u64, String>;

pub fn ram_devs(mounts: &[&MountInfo]) -> RamDevs {
    mounts
        .iter()
        .map(|m| {
            (
                procfd::dev_of(m.major, m.minor),
                m.mount_point.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// The files each of `pids` maps on RAM-backed storage (memfds included):
/// one read of /proc/PID/maps per process.
fn mapped(
    root: &Sysroot,
    pids: impl IntoIterator<Item = u32>,
    rams: &RamDevs,
) -> HashMap<u32, Vec<MappedFile>> {
    pids.into_iter()
        .filter_map(|pid| {
            let m = procfd::mapped_files(root, pid, |dev, name| {
                rams.contains_key(&dev) || name.starts_with(b"/memfd:")
            });
            (!m.is_empty()).then_some((pid, m))
        })
        .collect()
}

/// What `pids` hold: their open and mapped files on `rams` and memfds.
pub fn holdings(
    root: &Sysroot,
    pids: &[u32],
    scan: &Scan,
    maps: &HashMap<u32, Vec<MappedFile>>,
    rams: &RamDevs,
    top_n: usize,
) -> Holdings {
    let mut files: Vec<HeldFile> = Vec::new();
    let mut index: HashMap<(u64, u64), usize> = HashMap::new();
    let mut add = |dev: u64, ino: u64, pid: u32, fd: Option<u32>, new: &dyn Fn() -> HeldFile| {
        let i = *index.entry((dev, ino)).or_insert_with(|| {
            files.push(new());
            files.len() - 1
        });
        let f = &mut files[i];
        // One process counts once per file, by its first fd.
        if !f.held_by.iter().any(|h| h.pid == pid) {
            f.holders += 1;
            f.held_by.push(HeldBy {
                pid,
                comm: String::new(),
                fd,
            });
        }
    };
    for &pid in pids {
        if let Ok(i) = scan.processes.binary_search_by_key(&pid, |p| p.pid) {
            for o in &scan.processes[i].files {
                let mp = rams.get(&o.dev);
                if mp.is_none() && o.memfd.is_none() {
                    continue;
                }
                add(o.dev, o.ino, pid, Some(o.fd), &|| HeldFile {
                    path: o.path.to_string_lossy().into_owned(),
                    mountpoint: mp.cloned(),
                    bytes: Some(o.bytes),
                    deleted: o.deleted && o.memfd.is_none(),
                    memfd: o.memfd.is_some(),
                    held_by: Vec::new(),
                    holders: 0,
                });
            }
        }
        for m in maps.get(&pid).into_iter().flatten() {
            add(m.dev, m.ino, pid, None, &|| HeldFile {
                path: m.path.to_string_lossy().into_owned(),
                mountpoint: rams.get(&m.dev).cloned(),
                bytes: m.bytes,
                deleted: m.deleted && m.memfd.is_none(),
                memfd: m.memfd.is_some(),
                held_by: Vec::new(),
                holders: 0,
            });
        }
    }
    let mut mounts: Vec<HeldMount> = Vec::new();
    for f in &files {
        let Some(mp) = &f.mountpoint else { continue };
        match mounts.iter_mut().find(|m| &m.mountpoint == mp) {
            Some(m) => {
                m.files += 1;
                m.bytes += f.bytes.unwrap_or(0);
            }
            None => mounts.push(HeldMount {
                mountpoint: mp.clone(),
                files: 1,
                bytes: f.bytes.unwrap_or(0),
            }),
        }
    }
    mounts.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.mountpoint.cmp(&b.mountpoint)));
    let held_bytes = files.iter().filter_map(|f| f.bytes).sum();
    files.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.path.cmp(&b.path)));
    files.truncate(top_n);
    for f in &mut files {
        f.held_by.sort_by_key(|h| h.pid);
        f.held_by.truncate(HOLDERS_SHOWN);
        for h in &mut f.held_by {
            h.comm = procfd::comm(root, h.pid);
        }
    }
    let mut all: Vec<u32> = pids.to_vec();
    all.sort_unstable();
    all.dedup();
    Holdings {
        processes: all.len() as u64,
        held_mounts: mounts,
        held_files: files,
        held_bytes,
    }
}

/// The processes of `row` and of the rows below it (same hierarchy).
fn members(row: &CgroupMemory, rows: &[CgroupMemory]) -> Vec<u32> {
    let below = format!("{}/", row.path.trim_end_matches('/'));
    rows.iter()
        .filter(|r| {
            r.cgroup_version == row.cgroup_version
                && (r.path == row.path || r.path.starts_with(&below))
        })
        .flat_map(|r| r.procs.iter().copied())
        .collect()
}

/// Every cgroup row with what its processes hold.
pub fn link(
    root: &Sysroot,
    rows: Vec<CgroupMemory>,
    scan: &Scan,
    maps: &HashMap<u32, Vec<MappedFile>>,
    rams: &RamDevs,
    top_n: usize,
) -> Vec<CgroupTop> {
    let held: Vec<Holdings> = rows
        .iter()
        .map(|r| holdings(root, &members(r, &rows), scan, maps, rams, top_n))
        .collect();
    rows.into_iter()
        .zip(held)
        .map(|(memory, holds)| CgroupTop { memory, holds })
        .collect()
}

/// What the processes of cgroup `path` and of the cgroups below it that
/// hold shmem hold on the RAM-backed `mounts`: for one cgroup, as explain
/// asks.
pub fn holdings_below(
    root: &Sysroot,
    h: &Hierarchy,
    path: &str,
    scan: &Scan,
    mounts: &[MountInfo],
    top_n: usize,
) -> Holdings {
    let rows = cgroup::scan_below(root, h, path);
    let pids: Vec<u32> = rows.iter().flat_map(|r| r.procs.iter().copied()).collect();
    let ram: Vec<&MountInfo> = super::ram_mounts(mounts, &[]);
    let rams = ram_devs(&ram);
    let maps = mapped(root, pids.iter().copied(), &rams);
    holdings(root, &pids, scan, &maps, &rams, top_n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::procfd::{OpenFile, Process};

    fn row(path: &str, procs: &[u32]) -> CgroupMemory {
        CgroupMemory {
            path: path.into(),
            cgroup_version: 2,
            shmem_bytes: 1,
            memory_limit_bytes: None,
            memory_current_bytes: None,
            pod: None,
            container: None,
            unit: None,
            procs: procs.to_vec(),
        }
    }

    fn open(fd: u32, path: &str, dev: u64, ino: u64, bytes: u64) -> OpenFile {
        OpenFile {
            fd,
            path: path.into(),
            deleted: false,
            memfd: path.strip_prefix("/memfd:").map(str::to_string),
            dev,
            ino,
            bytes,
        }
    }

    #[test]
    fn a_cgroup_holds_what_its_processes_and_those_below_hold() {
        let rams = RamDevs::from([(40, "/t".to_string()), (41, "/u".to_string())]);
        let scan = Scan {
            processes: vec![
                Process {
                    pid: 10,
                    files: vec![
                        open(3, "/t/big", 40, 1, 4096 * 10),
                        open(4, "/t/big", 40, 1, 4096 * 10),
                        open(5, "/home/x", 99, 7, 1 << 30),
                    ],
                },
                Process {
                    pid: 20,
                    files: vec![
                        open(0, "/u/small", 41, 2, 4096),
                        open(1, "/memfd:buf", 1, 3, 8192),
                    ],
                },
                Process {
                    pid: 30,
                    files: vec![open(0, "/t/other", 40, 9, 1 << 20)],
                },
            ],
            unreadable: 0,
        };
        let maps = HashMap::from([(
            20,
            vec![MappedFile {
                path: "/t/big".into(),
                deleted: false,
                memfd: None,
                dev: 40,
                ino: 1,
                bytes: Some(4096 * 10),
            }],
        )]);
        let rows = vec![
            row("/job", &[10]),
            row("/job/sub", &[20]),
            row("/jobless", &[30]),
        ];
        let got = link(&Sysroot::new("/nonexistent"), rows, &scan, &maps, &rams, 5);
        let job = &got[0].holds;
        assert_eq!(job.processes, 2);
        let paths: Vec<&str> = job.held_files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            vec!["/t/big", "/memfd:buf", "/u/small"],
            "disk file left out"
        );
        let big = &job.held_files[0];
        assert_eq!(big.holders, 2, "by fd in /job, by a mapping in /job/sub");
        assert_eq!(big.held_by[0].fd, Some(3));
        assert_eq!(big.held_by[1].fd, None);
        assert_eq!(job.held_mounts[0].mountpoint, "/t");
        assert_eq!(job.held_mounts[0].files, 1);
        assert_eq!(job.held_bytes, 4096 * 10 + 8192 + 4096);
        assert!(job.held_files[1].memfd && job.held_files[1].mountpoint.is_none());
        let sub = &got[1].holds;
        assert_eq!(sub.processes, 1);
        assert_eq!(sub.held_files.len(), 3);
        assert_eq!(
            got[2].holds.held_files[0].path, "/t/other",
            "/jobless is not below /job"
        );
    }
}
