//! `top --prom FILE`: one snapshot as node_exporter textfile-collector
//! metrics — who holds the pages of each RAM-backed mount, which cgroups pay
//! for them, and how much of meminfo's Shmem that explains. node_exporter's
//! own filesystem collector says how full a tmpfs is; it cannot say why.
//!
//! Growth is not written: one snapshot has no rate, and a rate made up from
//! nothing would be a lie an alert could fire on. Prometheus computes it
//! from the series (`deriv(tmpfsctl_mount_used_bytes[15m])`, and
//! `predict_linear` for the time to full).

use super::TopReport;
use crate::render::exposition::Exposition;

/// The labels that name a mount in every per-mount family. `mountpoint` and
/// `fstype` are node_exporter's own names, so the two join without relabelling.
fn mount_labels(m: &super::MountTop) -> [(&str, &str); 2] {
    [
        ("mountpoint", m.mountpoint.as_str()),
        ("fstype", m.fstype.as_str()),
    ]
}

fn mount_families(e: &mut Exposition, r: &TopReport) {
    type Get = fn(&super::MountTop) -> Option<u64>;
    let per_mount: [(&str, &str, Get); 6] = [
        (
            "tmpfsctl_mount_used_bytes",
            "Bytes used on the RAM-backed mount, as df -B1 (statfs; a walk for ramfs).",
            |m| m.used_bytes,
        ),
        (
            "tmpfsctl_mount_size_bytes",
            "Size limit of the mount (absent when unlimited).",
            |m| m.size_bytes,
        ),
        (
            "tmpfsctl_mount_inodes_used",
            "Inodes in use on the mount, as df -i.",
            |m| m.inodes_used,
        ),
        (
            "tmpfsctl_mount_inodes_limit",
            "Inode limit of the mount (absent when unlimited).",
            |m| m.inodes_total,
        ),
        (
            "tmpfsctl_mount_deleted_open_bytes",
            "Bytes of files deleted but still held open on the mount, each file once (what du cannot see).",
            |m| Some(m.deleted_open_bytes),
        ),
        (
            "tmpfsctl_mount_deleted_open_known",
            "1 when every process's open files could be read; 0 means deleted_open_bytes is a lower bound (run as root).",
            |m| Some(u64::from(m.deleted_open_known)),
        ),
    ];
    for (name, help, get) in per_mount {
        e.gauge_if_any(
            name,
            help,
            r.mounts
                .iter()
                .filter_map(|m| get(m).map(|v| (mount_labels(m), v))),
        );
    }
    // Growth exists only when the report was made from two snapshots.
    e.gauge_if_any(
        "tmpfsctl_mount_growth_bytes_per_second",
        "Change of used bytes per second between the last two snapshots.",
        r.mounts
            .iter()
            .filter_map(|m| m.growth_bytes_per_s.map(|g| (mount_labels(m), g))),
    );
}

fn owner_families(e: &mut Exposition, r: &TopReport) {
    let mut owned: Vec<(String, String, String, String, u64, u64)> = Vec::new();
    for m in &r.mounts {
        for o in &m.by_owner {
            owned.push((
                m.mountpoint.clone(),
                m.fstype.clone(),
                o.uid.to_string(),
                o.user.clone().unwrap_or_else(|| o.uid.to_string()),
                o.bytes,
                o.inodes,
            ));
        }
    }
    fn labels(o: &(String, String, String, String, u64, u64)) -> [(&str, &str); 4] {
        [
            ("mountpoint", o.0.as_str()),
            ("fstype", o.1.as_str()),
            ("uid", o.2.as_str()),
            ("user", o.3.as_str()),
        ]
    }
    e.gauge_if_any(
        "tmpfsctl_owner_bytes",
        "Bytes reachable by name on the mount owned by the user (du -x per file owner).",
        owned.iter().map(|o| (labels(o), o.4)),
    );
    e.gauge_if_any(
        "tmpfsctl_owner_inodes",
        "Inodes on the mount owned by the user, hard links once.",
        owned.iter().map(|o| (labels(o), o.5)),
    );
}

fn cgroup_families(e: &mut Exposition, r: &TopReport) {
    let version: Vec<String> = r
        .cgroups
        .iter()
        .map(|c| c.memory.cgroup_version.to_string())
        .collect();
    e.gauge_if_any(
        "tmpfsctl_cgroup_shmem_bytes",
        "Shmem (tmpfs, shared memory, memfd) charged to the memory cgroup and its descendants; \
         unit, pod and container are empty when the cgroup path names none.",
        r.cgroups.iter().zip(&version).map(|(c, v)| {
            let c = &c.memory;
            (
                [
                    ("cgroup", c.path.as_str()),
                    ("cgroup_version", v.as_str()),
                    ("unit", c.unit.as_deref().unwrap_or("")),
                    ("pod", c.pod.as_deref().unwrap_or("")),
                    ("container", c.container.as_deref().unwrap_or("")),
                ],
                c.shmem_bytes,
            )
        }),
    );
}

/// The whole textfile for one report.
pub fn text(r: &TopReport) -> String {
    let mut e = Exposition::new();
    mount_families(&mut e, r);
    owner_families(&mut e, r);
    cgroup_families(&mut e, r);
    let machine: [(&str, &str, u64); 4] = [
        (
            "tmpfsctl_shmem_bytes",
            "Shmem from /proc/meminfo: RAM held by tmpfs, shared memory and memfd.",
            r.shmem_bytes,
        ),
        (
            "tmpfsctl_shmem_accounted_bytes",
            "Shmem attributed by top: RAM-backed mounts (each superblock once), memfd, SysV segments.",
            r.accounted_bytes,
        ),
        (
            "tmpfsctl_shmem_unattributed_bytes",
            "Shmem minus accounted (0 when more is attributed than Shmem holds).",
            r.unattributed_bytes,
        ),
        (
            "tmpfsctl_unreadable_processes",
            "Processes whose open files could not be read (deleted-open and memfd figures miss them).",
            r.unreadable_processes,
        ),
    ];
    for (name, help, v) in machine {
        e.gauge(name, help).sample(name, &[], v);
    }
    e.gauge(
        "tmpfsctl_top_timestamp_seconds",
        "When tmpfsctl top took this snapshot (Unix time).",
    )
    .sample("tmpfsctl_top_timestamp_seconds", &[], r.taken_at_unix_s);
    e.finish()
}
