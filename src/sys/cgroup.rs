//! Memory cgroups that hold shmem (tmpfs pages are charged to the cgroup of
//! the process that first wrote them, and stay charged after it exits), v1
//! and v2, found through mountinfo so a `--sysroot` fixture works the same.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{MountInfo, Sysroot};

/// Where a memory hierarchy is mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// 1 or 2.
    pub version: u8,
    pub mount_point: PathBuf,
}

/// The memory hierarchies of the inspected system: v1's `memory` controller
/// and v2 (when its root lists the memory controller).
pub fn hierarchies(root: &Sysroot, mounts: &[MountInfo]) -> Vec<Hierarchy> {
    let mut out = Vec::new();
    for m in mounts {
        let v = match m.fstype.as_str() {
            "cgroup" if m.super_options.iter().any(|o| o == "memory") => 1,
            "cgroup2" => 2,
            _ => continue,
        };
        if v == 2 {
            let ctl = std::fs::read_to_string(root.path(m.mount_point.join("cgroup.controllers")))
                .unwrap_or_default();
            if !ctl.split_whitespace().any(|c| c == "memory") {
                continue;
            }
        }
        if !out
            .iter()
            .any(|h: &Hierarchy| h.mount_point == m.mount_point)
        {
            out.push(Hierarchy {
                version: v,
                mount_point: m.mount_point.clone(),
            });
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CgroupMemory {
    /// Path inside its hierarchy ("/system.slice/foo.service").
    pub path: String,
    pub cgroup_version: u8,
    /// Shmem charged to this cgroup and its descendants (v2 `shmem`, v1
    /// `total_shmem`).
    pub shmem_bytes: u64,
    /// Null when unlimited.
    pub memory_limit_bytes: Option<u64>,
    pub memory_current_bytes: Option<u64>,
    /// Kubernetes pod UID, when the path names one.
    pub pod: Option<String>,
    /// Docker / containerd / CRI-O container id, when the path names one.
    pub container: Option<String>,
    /// The systemd unit (service or scope), when the path names one.
    pub unit: Option<String>,
    /// Processes directly in this cgroup (its `cgroup.procs`), read by
    /// [`scan`] for the cgroups it keeps: whose files can hold its pages.
    #[serde(skip)]
    pub procs: Vec<u32>,
}

/// v1 reports "no limit" as a page-rounded i64::MAX.
const V1_UNLIMITED: u64 = 1 << 62;

fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

fn read_num(p: &Path) -> Option<u64> {
    let t = std::fs::read_to_string(p).ok()?;
    let t = t.trim();
    if t == "max" {
        return None;
    }
    t.parse().ok()
}

/// One cgroup's memory numbers; None when its files are not there.
pub fn read(root: &Sysroot, h: &Hierarchy, path: &str) -> Option<CgroupMemory> {
    let dir = root.path(h.mount_point.join(path.trim_start_matches('/')));
    let stat = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
    let (shmem, limit, current) = if h.version == 1 {
        (
            stat_value(&stat, "total_shmem").or_else(|| stat_value(&stat, "shmem")),
            read_num(&dir.join("memory.limit_in_bytes")).filter(|&l| l < V1_UNLIMITED),
            read_num(&dir.join("memory.usage_in_bytes")),
        )
    } else {
        (
            stat_value(&stat, "shmem"),
            read_num(&dir.join("memory.max")),
            read_num(&dir.join("memory.current")),
        )
    };
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    let (pod, container, unit) = owners(&path);
    Some(CgroupMemory {
        path,
        cgroup_version: h.version,
        shmem_bytes: shmem.unwrap_or(0),
        memory_limit_bytes: limit,
        memory_current_bytes: current,
        pod,
        container,
        unit,
        procs: Vec::new(),
    })
}

/// The pids directly in a cgroup; empty when it cannot be read.
pub fn procs(root: &Sysroot, h: &Hierarchy, path: &str) -> Vec<u32> {
    pids_at(&root.path(h.mount_point.join(path.trim_start_matches('/'))))
}

/// The pids directly in the cgroup directory `dir` (its `cgroup.procs`);
/// empty when it cannot be read (gone, or not a cgroup).
pub fn pids_at(dir: &std::path::Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Every cgroup below the hierarchy roots that holds shmem (the roots
/// themselves are the whole machine and are left out), most shmem first,
/// each with its processes.
pub fn scan(root: &Sysroot, hs: &[Hierarchy]) -> Vec<CgroupMemory> {
    let mut out = Vec::new();
    for h in hs {
        out.extend(scan_below(root, h, ""));
    }
    out.sort_by(|a, b| b.shmem_bytes.cmp(&a.shmem_bytes).then(a.path.cmp(&b.path)));
    out
}

/// The cgroup `start` ("" for the root, left out) and those below it that
/// hold shmem, each with its processes. A cgroup without shmem is skipped
/// with its processes: whatever they hold open, none of it is charged there.
pub fn scan_below(root: &Sysroot, h: &Hierarchy, start: &str) -> Vec<CgroupMemory> {
    let mut out = Vec::new();
    let base = root.path(&h.mount_point);
    let mut stack: Vec<String> = vec![start.trim_end_matches('/').to_string()];
    while let Some(rel) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(base.join(rel.trim_start_matches('/'))) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let name = e.file_name().to_string_lossy().into_owned();
                stack.push(format!("{rel}/{name}"));
            }
        }
        if rel.is_empty() {
            continue;
        }
        if let Some(mut c) = read(root, h, &rel).filter(|c| c.shmem_bytes > 0) {
            c.procs = procs(root, h, &rel);
            out.push(c);
        }
    }
    out
}

/// The memory cgroup path of `pid` in each hierarchy, from /proc/PID/cgroup
/// (v1 line "N:memory:/x" or "N:...,memory,...:/x"; v2 line "0::/x").
pub fn of_pid(root: &Sysroot, hs: &[Hierarchy], pid: u32) -> Vec<(Hierarchy, String)> {
    let Ok(text) = std::fs::read_to_string(root.path(format!("/proc/{pid}/cgroup"))) else {
        return Vec::new();
    };
    parse_proc_cgroup(&text, hs)
}

pub fn parse_proc_cgroup(text: &str, hs: &[Hierarchy]) -> Vec<(Hierarchy, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(ctl), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let version = if ctl.is_empty() {
            2
        } else if ctl.split(',').any(|c| c == "memory") {
            1
        } else {
            continue;
        };
        if let Some(h) = hs.iter().find(|h| h.version == version) {
            out.push((h.clone(), path.to_string()));
        }
    }
    out
}

/// `path` and each of its ancestors below the root, innermost first.
pub fn ancestors(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut p = path.trim_end_matches('/').to_string();
    while !p.is_empty() && p != "/" {
        out.push(p.clone());
        match p.rfind('/') {
            Some(i) => p.truncate(i),
            None => break,
        }
    }
    out
}

/// The Kubernetes pod, container and systemd unit a cgroup path names.
pub fn owners(path: &str) -> (Option<String>, Option<String>, Option<String>) {
    let (mut pod, mut container, mut unit) = (None, None, None);
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        // kubepods-burstable-pod1234_56.slice (systemd driver), pod1234-56 (cgroupfs).
        let bare = seg.strip_suffix(".slice").unwrap_or(seg);
        let id = bare
            .strip_prefix("pod")
            .or_else(|| bare.rfind("-pod").map(|i| &bare[i + 4..]));
        if let Some(id) = id.filter(|id| id.len() >= 8 && path.contains("kubepods")) {
            pod = Some(id.replace('_', "-"));
        }
        let scope = seg.strip_suffix(".scope").unwrap_or(seg);
        for prefix in ["docker-", "cri-containerd-", "crio-", "libpod-"] {
            if let Some(id) = scope.strip_prefix(prefix).filter(|id| is_container_id(id)) {
                container = Some(id.to_string());
            }
        }
        if is_container_id(seg) {
            container = Some(seg.to_string());
        }
        if [".service", ".scope", ".socket", ".mount", ".swap"]
            .iter()
            .any(|s| seg.ends_with(s))
        {
            unit = Some(seg.to_string());
        }
    }
    (pod, container, unit)
}

fn is_container_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_pods_containers_and_units() {
        let id = "a".repeat(64);
        let (pod, c, u) = owners(&format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12345678_aaaa_bbbb.slice/cri-containerd-{id}.scope"
        ));
        assert_eq!(pod.as_deref(), Some("12345678-aaaa-bbbb"));
        assert_eq!(c.as_deref(), Some(id.as_str()));
        assert_eq!(u, Some(format!("cri-containerd-{id}.scope")));
        let (pod, c, _) = owners(&format!("/kubepods/besteffort/pod0c2a43b2-1111-2222/{id}"));
        assert_eq!(pod.as_deref(), Some("0c2a43b2-1111-2222"));
        assert_eq!(c.as_deref(), Some(id.as_str()));
        let (pod, c, u) = owners("/system.slice/nginx.service");
        assert_eq!((pod, c, u.as_deref()), (None, None, Some("nginx.service")));
        let (_, c, _) = owners(&format!("/docker/{id}"));
        assert!(c.is_some());
        assert_eq!(owners("/user.slice/podcast"), (None, None, None));
    }

    #[test]
    fn proc_cgroup_lines_pick_the_memory_hierarchies() {
        let hs = vec![
            Hierarchy {
                version: 1,
                mount_point: "/sys/fs/cgroup/memory".into(),
            },
            Hierarchy {
                version: 2,
                mount_point: "/sys/fs/cgroup/unified".into(),
            },
        ];
        let got = parse_proc_cgroup("5:cpu,cpuacct:/a\n4:memory:/job/x\n0::/user.slice\n", &hs);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1, "/job/x");
        assert_eq!(got[1].0.version, 2);
        assert_eq!(ancestors("/a/b/c"), vec!["/a/b/c", "/a/b", "/a"]);
        assert!(ancestors("/").is_empty());
    }
}
