//! `tmpfsctl collect`: one snapshot of this host (paths' usage and /proc/meminfo),
//! printed as a JSON line, a row of the 12-column /tmp survey TSV (Kirkland,
//! 2016), or node_exporter textfile metrics.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::command::{self, Format, Report};
use crate::render::exposition::Exposition;
use crate::sys::{self, MemInfo, Sysroot};

pub const SNAPSHOT_SCHEMA_VERSION: u32 = 1;

/// One directory's usage at snapshot time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathUsage {
    /// The path as the user named it (`/tmp`).
    pub path: String,
    /// Allocated bytes, like `du -s -x -B1`; from statfs when the path is its own mount.
    pub used_bytes: u64,
    /// Inodes under the path (hard links once); from statfs when the path is its own mount.
    pub inodes: u64,
    /// `du` (tree walk) or `statfs` (the path is a mount point: the whole filesystem counts).
    pub source: String,
    /// Age of the oldest file or directory under the path, seconds; null for an empty tree.
    pub oldest_age_s: Option<i64>,
    /// Directories that could not be read: their contents are missing from a `du` figure.
    pub unreadable_dirs: u64,
    pub fstype: String,
    pub mountpoint: String,
    /// The path is a mount point itself.
    pub own_mount: bool,
    /// tmpfs size limit, when the path is on a size-limited tmpfs.
    pub tmpfs_size_bytes: Option<u64>,
}

/// One host at one moment: what `fleet analyze` ingests (one JSON line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub schema_version: u32,
    /// Host name, or `anon-<hash>` with `--anonymize`.
    pub host: String,
    pub timestamp_unix_s: i64,
    pub kernel: String,
    pub paths: Vec<PathUsage>,
    /// /proc/meminfo. Flattened, and last, so the line keeps the flat
    /// `mem_total_bytes` ... `swap_free_bytes` keys, in this order, that
    /// schema_version 1 has always had (pinned by `outputs_match_the_pinned_schema`).
    #[serde(flatten)]
    pub mem: MemInfo,
}

/// How to name the host in a snapshot.
#[derive(Debug, Clone, Default)]
pub enum HostName {
    /// The inspected system's: uname's nodename live, the sysroot's files
    /// under `--sysroot` (see [`crate::sys::Sysroot::hostname_from_files`]).
    #[default]
    Real,
    /// A stable, salted hash of the nodename: the same host always gets the same
    /// name, so fleet snapshots over time still line up, but the name is not shown.
    Anonymized { salt: String },
    /// A fixed name (tests, containers whose nodename means nothing).
    Fixed(String),
    /// None is looked up and `host` stays empty: for outputs that carry no host
    /// name (prom, where the scraper's `instance` label names the host).
    Unused,
}

/// `anon-` and 16 hex digits of SHA-256(salt || name): stable across runs and
/// hosts, and with a private salt not reversible by hashing a list of guesses.
pub fn anonymize(name: &str, salt: &str) -> String {
    let mut h = sha2::Sha256::new();
    h.update(salt.as_bytes());
    h.update([0u8]);
    h.update(name.as_bytes());
    let d = h.finalize();
    let mut s = String::from("anon-");
    for b in &d[..8] {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Take one snapshot: usage of each path (relative to the sysroot) and meminfo.
/// Unreadable subdirectories are counted in `unreadable_dirs`, never fatal; a
/// path that does not exist is an error naming it.
pub fn snapshot(root: &Sysroot, paths: &[PathBuf], name: &HostName) -> Result<Snapshot> {
    let (mem, _) = root.meminfo()?;
    let (mounts, _) = root.mountinfo()?;
    let uts = rustix::system::uname();
    let host = match name {
        HostName::Real => system_host_name(root)?,
        HostName::Anonymized { salt } => anonymize(&system_host_name(root)?, salt),
        HostName::Fixed(s) => s.clone(),
        HostName::Unused => String::new(),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        out.push(path_usage(root, p, &mounts, now)?);
    }
    Ok(Snapshot {
        schema_version: SNAPSHOT_SCHEMA_VERSION,
        host,
        timestamp_unix_s: now,
        kernel: system_kernel(root, &uts),
        paths: out,
        mem,
    })
}

/// The kernel release of the system being inspected: under `--sysroot`,
/// DIR/proc/sys/kernel/osrelease, else "unknown" (an image has no running
/// kernel, and the live machine's would be a false label).
fn system_kernel(root: &crate::sys::Sysroot, uts: &rustix::system::Uname) -> String {
    if root.is_live() {
        return uts.release().to_string_lossy().into_owned();
    }
    std::fs::read(root.path("/proc/sys/kernel/osrelease"))
        .ok()
        .map(|t| String::from_utf8_lossy(&t).trim().to_string())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// The host name of the system being inspected. Under `--sysroot` this must
/// come from the tree, never from the machine running tmpfsctl: a snapshot of
/// an image or a container's root labelled with the live host's name would
/// silently merge two hosts in `fleet analyze`.
fn system_host_name(root: &Sysroot) -> Result<String> {
    if root.is_live() {
        return Ok(rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned());
    }
    root.hostname_from_files()?.ok_or_else(|| {
        anyhow::anyhow!(
            "--sysroot {}: no host name in {} or {}; give one with --host NAME",
            root.root().display(),
            root.path("/proc/sys/kernel/hostname").display(),
            root.path("/etc/hostname").display()
        )
    })
}

fn path_usage(root: &Sysroot, p: &Path, mounts: &[sys::MountInfo], now: i64) -> Result<PathUsage> {
    if !p.is_absolute() {
        anyhow::bail!("--path {}: give an absolute path (e.g. /tmp)", p.display());
    }
    let resolved = root.resolve(p).with_context(|| {
        format!(
            "--path {}: cannot be resolved; give an existing directory",
            p.display()
        )
    })?;
    // The path on the machine doing the reading (under --sysroot for fixtures).
    let canon = root.path(&resolved);
    let m = sys::mountinfo::mount_for(mounts, &resolved);
    let mountpoint = m
        .map(|m| m.mount_point.clone())
        .unwrap_or_else(|| "/".into());
    let fstype = m
        .map(|m| m.fstype.clone())
        .unwrap_or_else(|| "unknown".into());
    let own_mount = m.is_some() && mountpoint == resolved;
    let u = sys::du::usage(&canon)
        .with_context(|| format!("--path {}: cannot be read", p.display()))?;
    // A mount point's statfs counts everything the filesystem holds, including
    // files in directories we could not read and deleted-but-open files: for a
    // tmpfs that is exactly the RAM it pins. Only meaningful on the live system.
    let stats = if own_mount && root.is_live() {
        sys::statfs::statfs(&canon).ok()
    } else {
        None
    };
    // ramfs reports no blocks and no inode limit: only the walk knows.
    let (used, inodes, source) = match stats {
        Some(s) if s.size_bytes > 0 => (
            s.used_bytes,
            if s.inodes_total > 0 {
                s.inodes_used
            } else {
                u.inodes
            },
            "statfs",
        ),
        _ => (u.bytes, u.inodes, "du"),
    };
    let tmpfs_size = if fstype == "tmpfs" && root.is_live() {
        sys::statfs::statfs(&canon)
            .ok()
            .map(|s| s.size_bytes)
            .filter(|&b| b > 0)
    } else {
        None
    };
    Ok(PathUsage {
        path: p.to_string_lossy().into_owned(),
        used_bytes: used,
        inodes,
        source: source.into(),
        oldest_age_s: u.oldest_mtime.map(|m| (now - m).max(0)),
        unreadable_dirs: u.unreadable_dirs,
        fstype,
        mountpoint: mountpoint.to_string_lossy().into_owned(),
        own_mount,
        tmpfs_size_bytes: tmpfs_size,
    })
}

/// The 12-column /tmp survey TSV (Kirkland, 2016), sizes in KiB.
pub const KIRKLAND: Format = Format::new("kirkland");

/// A snapshot as `collect` writes it: one JSON line (what `fleet analyze`
/// reads), the Kirkland TSV, or node_exporter textfile metrics.
impl Report for Snapshot {
    command::its_own_document!();

    const ONE_LINE: bool = true;

    fn render(&self, f: Format) -> Option<Result<Vec<u8>>> {
        match f {
            KIRKLAND => Some(render_kirkland(self)),
            Format::PROM => Some(render_prom(self)),
            _ => None,
        }
    }
}

fn kib_ceil(b: u64) -> u64 {
    b.div_ceil(1024)
}

/// The /tmp survey's 12 tab-separated columns (Kirkland, 2016), all sizes in KiB as `du -s` and
/// procps-3.3.9 `free` print them: host, /tmp KB, mem total/used/free/shared/
/// buffers/cached, swap total/used/free, /tmp inodes. "used" is total - free,
/// as old `free` computed it (buffers and cache included).
pub fn render_kirkland(s: &Snapshot) -> Result<Vec<u8>> {
    let p = match s.paths.as_slice() {
        [p] => p,
        _ => anyhow::bail!("--format kirkland has a single /tmp column; give exactly one --path"),
    };
    let k = |b: u64| b / 1024;
    let line = format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
        s.host.replace(['\t', '\n'], " "),
        kib_ceil(p.used_bytes),
        k(s.mem.mem_total_bytes),
        k(s.mem.mem_total_bytes.saturating_sub(s.mem.mem_free_bytes)),
        k(s.mem.mem_free_bytes),
        k(s.mem.shmem_bytes),
        k(s.mem.buffers_bytes),
        k(s.mem.cached_bytes),
        k(s.mem.swap_total_bytes),
        k(s.mem.swap_used_bytes()),
        k(s.mem.swap_free_bytes),
        p.inodes
    );
    Ok(line.into_bytes())
}

/// node_exporter textfile-collector metrics. Memory is not repeated here:
/// node_exporter's meminfo collector already exports `node_memory_*_bytes`.
pub fn render_prom(s: &Snapshot) -> Result<Vec<u8>> {
    type Get = fn(&PathUsage) -> Option<u64>;
    let metrics: [(&str, &str, Get); 5] = [
        (
            "tmpfsctl_path_used_bytes",
            "Bytes used under the path (du -s -x -B1; statfs when the path is a mount point).",
            |p| Some(p.used_bytes),
        ),
        (
            "tmpfsctl_path_inodes",
            "Inodes under the path, hard links once.",
            |p| Some(p.inodes),
        ),
        (
            "tmpfsctl_path_oldest_file_age_seconds",
            "Age of the oldest file under the path.",
            |p| p.oldest_age_s.map(|a| a as u64),
        ),
        (
            "tmpfsctl_path_unreadable_dirs",
            "Directories under the path that could not be read (their contents are not counted).",
            |p| Some(p.unreadable_dirs),
        ),
        (
            "tmpfsctl_path_tmpfs_size_bytes",
            "Size limit of the tmpfs holding the path.",
            |p| p.tmpfs_size_bytes,
        ),
    ];
    let mut o = Exposition::new();
    for (name, help, get) in metrics {
        o.gauge_if_any(
            name,
            help,
            s.paths
                .iter()
                .filter_map(|p| get(p).map(|v| ([("path", p.path.as_str())], v))),
        );
    }
    o.gauge(
        "tmpfsctl_collect_timestamp_seconds",
        "When tmpfsctl collect took this snapshot.",
    )
    .sample(
        "tmpfsctl_collect_timestamp_seconds",
        &[],
        s.timestamp_unix_s,
    );
    Ok(o.finish().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::{Fleet, HostRecord};

    fn snap() -> Snapshot {
        Snapshot {
            schema_version: 1,
            host: "web\"1".into(),
            timestamp_unix_s: 1_700_000_000,
            kernel: "6.1".into(),
            paths: vec![PathUsage {
                path: "/tmp".into(),
                used_bytes: 16 * 1024 + 512,
                inodes: 7,
                source: "du".into(),
                oldest_age_s: Some(60),
                unreadable_dirs: 1,
                fstype: "ext4".into(),
                mountpoint: "/".into(),
                own_mount: false,
                tmpfs_size_bytes: None,
            }],
            mem: MemInfo {
                mem_total_bytes: 4096 * 1024,
                mem_free_bytes: 1024 * 1024,
                mem_available_bytes: 3000 * 1024,
                buffers_bytes: 100 * 1024,
                cached_bytes: 1000 * 1024,
                shmem_bytes: 20 * 1024,
                swap_total_bytes: 2048 * 1024,
                swap_free_bytes: 2000 * 1024,
            },
        }
    }

    #[test]
    fn kirkland_has_twelve_kib_columns() {
        let l = String::from_utf8(render_kirkland(&snap()).unwrap()).unwrap();
        let f: Vec<&str> = l.trim_end().split('\t').collect();
        assert_eq!(
            f,
            [
                "web\"1", "17", "4096", "3072", "1024", "20", "100", "1000", "2048", "48", "2000",
                "7"
            ]
        );
    }

    #[test]
    fn prom_escapes_labels_and_skips_unknowns() {
        let mut s = snap();
        s.paths[0].path = "/t\"m\\p".into();
        let t = String::from_utf8(render_prom(&s).unwrap()).unwrap();
        assert!(
            t.contains("tmpfsctl_path_used_bytes{path=\"/t\\\"m\\\\p\"} 16896\n"),
            "{t}"
        );
        assert!(t.contains("# TYPE tmpfsctl_path_inodes gauge\ntmpfsctl_path_inodes{"));
        assert!(
            !t.contains("tmpfs_size_bytes{"),
            "no tmpfs, no size metric: {t}"
        );
    }

    #[test]
    fn anonymized_names_are_stable_and_salted() {
        assert_eq!(anonymize("web1", ""), anonymize("web1", ""));
        assert_ne!(anonymize("web1", ""), anonymize("web2", ""));
        assert_ne!(anonymize("web1", "a"), anonymize("web1", "b"));
        assert_eq!(anonymize("web1", "").len(), 5 + 16);
    }

    #[test]
    fn json_line_round_trips() {
        let s = snap();
        let l = command::render(&s, Format::JSON).unwrap().unwrap();
        assert_eq!(l.iter().filter(|&&b| b == b'\n').count(), 1);
        let back: Snapshot = serde_json::from_slice(&l).unwrap();
        assert_eq!(back, s);
    }

    /// A snapshot exercising every field: two paths (one a tmpfs mount with a
    /// size, one with no files and unreadable dirs), a host name that needs escaping.
    fn golden_snapshot() -> Snapshot {
        Snapshot {
            schema_version: SNAPSHOT_SCHEMA_VERSION,
            host: "db-\"7\"\u{e9}".into(),
            timestamp_unix_s: 1_700_000_123,
            kernel: "6.1.0-18-amd64".into(),
            paths: vec![
                PathUsage {
                    path: "/tmp".into(),
                    used_bytes: 123_456_789,
                    inodes: 4321,
                    source: "statfs".into(),
                    oldest_age_s: Some(86_400),
                    unreadable_dirs: 0,
                    fstype: "tmpfs".into(),
                    mountpoint: "/tmp".into(),
                    own_mount: true,
                    tmpfs_size_bytes: Some(2 << 30),
                },
                PathUsage {
                    path: "/var/tmp".into(),
                    used_bytes: 0,
                    inodes: 1,
                    source: "du".into(),
                    oldest_age_s: None,
                    unreadable_dirs: 3,
                    fstype: "ext4".into(),
                    mountpoint: "/".into(),
                    own_mount: false,
                    tmpfs_size_bytes: None,
                },
            ],
            mem: MemInfo {
                mem_total_bytes: 8_000_000 * 1024,
                mem_free_bytes: 1_000_001 * 1024,
                mem_available_bytes: 5_000_002 * 1024,
                buffers_bytes: 30_003 * 1024,
                cached_bytes: 2_000_004 * 1024,
                shmem_bytes: 120_005 * 1024,
                swap_total_bytes: 1_000_006 * 1024,
                swap_free_bytes: 900_007 * 1024,
            },
        }
    }

    // The three outputs below were printed by the code on main before the
    // Snapshot/MemInfo de-duplication; they pin the on-disk schema (field names,
    // order, escaping) that `fleet analyze`, `advise --history`, scrapers and
    // users' own scripts read. Change them only with a schema_version bump.
    const GOLDEN_JSON: &str = concat!(
        r#"{"schema_version":1,"host":"db-\"7\"é","timestamp_unix_s":1700000123,"kernel":"6.1.0-18-amd64","#,
        r#""paths":[{"path":"/tmp","used_bytes":123456789,"inodes":4321,"source":"statfs","oldest_age_s":86400,"#,
        r#""unreadable_dirs":0,"fstype":"tmpfs","mountpoint":"/tmp","own_mount":true,"tmpfs_size_bytes":2147483648},"#,
        r#"{"path":"/var/tmp","used_bytes":0,"inodes":1,"source":"du","oldest_age_s":null,"unreadable_dirs":3,"#,
        r#""fstype":"ext4","mountpoint":"/","own_mount":false,"tmpfs_size_bytes":null}],"#,
        r#""mem_total_bytes":8192000000,"mem_free_bytes":1024001024,"mem_available_bytes":5120002048,"#,
        r#""buffers_bytes":30723072,"cached_bytes":2048004096,"shmem_bytes":122885120,"#,
        r#""swap_total_bytes":1024006144,"swap_free_bytes":921607168}"#,
        "\n"
    );
    const GOLDEN_TSV: &str = "db-\"7\"\u{e9}\t120564\t8000000\t6999999\t1000001\t120005\t30003\t2000004\t1000006\t99999\t900007\t4321\n";
    const GOLDEN_PROM: &str = "\
# HELP tmpfsctl_path_used_bytes Bytes used under the path (du -s -x -B1; statfs when the path is a mount point).
# TYPE tmpfsctl_path_used_bytes gauge
tmpfsctl_path_used_bytes{path=\"/tmp\"} 123456789
tmpfsctl_path_used_bytes{path=\"/var/tmp\"} 0
# HELP tmpfsctl_path_inodes Inodes under the path, hard links once.
# TYPE tmpfsctl_path_inodes gauge
tmpfsctl_path_inodes{path=\"/tmp\"} 4321
tmpfsctl_path_inodes{path=\"/var/tmp\"} 1
# HELP tmpfsctl_path_oldest_file_age_seconds Age of the oldest file under the path.
# TYPE tmpfsctl_path_oldest_file_age_seconds gauge
tmpfsctl_path_oldest_file_age_seconds{path=\"/tmp\"} 86400
# HELP tmpfsctl_path_unreadable_dirs Directories under the path that could not be read (their contents are not counted).
# TYPE tmpfsctl_path_unreadable_dirs gauge
tmpfsctl_path_unreadable_dirs{path=\"/tmp\"} 0
tmpfsctl_path_unreadable_dirs{path=\"/var/tmp\"} 3
# HELP tmpfsctl_path_tmpfs_size_bytes Size limit of the tmpfs holding the path.
# TYPE tmpfsctl_path_tmpfs_size_bytes gauge
tmpfsctl_path_tmpfs_size_bytes{path=\"/tmp\"} 2147483648
# HELP tmpfsctl_collect_timestamp_seconds When tmpfsctl collect took this snapshot.
# TYPE tmpfsctl_collect_timestamp_seconds gauge
tmpfsctl_collect_timestamp_seconds 1700000123
";

    #[test]
    fn outputs_match_the_pinned_schema() {
        let s = golden_snapshot();
        let json = String::from_utf8(command::render(&s, Format::JSON).unwrap().unwrap()).unwrap();
        assert_eq!(json, GOLDEN_JSON);
        let back: Snapshot = serde_json::from_str(GOLDEN_JSON).unwrap();
        assert_eq!(
            back, s,
            "a pinned line must read back into the same snapshot"
        );
        assert_eq!(
            String::from_utf8(render_prom(&s).unwrap()).unwrap(),
            GOLDEN_PROM
        );
        let mut one = s;
        one.paths.truncate(1);
        assert_eq!(
            String::from_utf8(render_kirkland(&one).unwrap()).unwrap(),
            GOLDEN_TSV
        );
    }

    /// What `fleet analyze` makes of one pinned file.
    fn ingest_one(name: &str, text: &str) -> crate::fleet::HostRecord {
        use crate::fleet::ingest;
        let mut f = Fleet::default();
        let mut r = ingest::IngestReport::default();
        let opts = ingest::IngestOptions::default();
        ingest::ingest(name, Box::new(text.as_bytes()), &opts, &mut f, &mut r).unwrap();
        assert_eq!(f.len(), 1, "{name}");
        f.record(0)
    }

    #[test]
    fn pinned_outputs_ingest_to_the_same_host_record() {
        let s = golden_snapshot();
        let want = HostRecord::from_snapshot(&s, "/tmp").unwrap();
        assert_eq!(ingest_one("golden.jsonl", GOLDEN_JSON), want);
        // The Kirkland row keeps KiB and free(1)'s columns: /tmp rounded up to
        // whole KiB, MemAvailable estimated as free + buffers + cached.
        let k = ingest_one("golden.tsv", GOLDEN_TSV);
        assert_eq!(k.host, s.host);
        assert_eq!(k.tmp_used_bytes, 120_564 * 1024);
        assert_eq!(k.mem_total_bytes, s.mem.mem_total_bytes);
        assert_eq!(
            k.mem_available_bytes,
            Some(s.mem.mem_free_bytes + s.mem.buffers_bytes + s.mem.cached_bytes)
        );
        assert_eq!(k.swap_free_bytes, Some(s.mem.swap_free_bytes));
        assert_eq!(k.tmp_inodes, Some(4321));
    }
}
