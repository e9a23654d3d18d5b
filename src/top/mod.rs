//! `tmpfsctl top`: where RAM-backed storage goes, now — per mount by owner
//! and directory, files deleted but still open, who holds files there, memfd,
//! SysV shared memory, the cgroups charged, and how much of meminfo's Shmem
//! all that explains.

mod live;
mod prom;
mod render;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::attrib::cgroups::{self, CgroupTop};
use crate::attrib::{LargeFile, largest_files, ram_mounts};
use crate::command::Context;
use crate::sys::cgroup;
use crate::sys::procfd::{self, Scan};
use crate::sys::sysvshm::{self, ShmSegment};
use crate::sys::{MountInfo, Sysroot, du, mountinfo, passwd, statfs};

/// 2: `mounts[].largest_files`, `deleted_open_known`, `usage_source`,
/// `by_dir[].unreadable(_dirs)` and `paths_not_ram_backed` are new.
/// 3: `cgroups[].processes`, `held_mounts`, `held_files` and `held_bytes`
/// (what each cgroup's processes hold open or mapped) are new.
pub const SCHEMA_VERSION: u32 = 3;

/// How `top` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Refresh on a terminal until `q` (falls back to one snapshot when not a terminal).
    Live,
    /// One snapshot (`--once`, `--json`, `--prom`).
    Once,
}

/// What `top` is asked: the plain request the CLI hands to [`run`].
#[derive(Debug, Clone)]
pub struct TopQuery {
    /// Only the mounts holding these paths (all RAM-backed mounts when empty).
    pub paths: Vec<PathBuf>,
    /// Rows per list (largest directories, owners, processes).
    pub top_n: usize,
    pub interval: Duration,
    pub mode: Mode,
}

/// Directory levels below a mount point that get their own totals.
const DIR_DEPTH: usize = 3;

#[derive(Debug, Clone, Serialize)]
pub struct Owner {
    pub uid: u32,
    /// From the system's passwd; null for a uid with no entry.
    pub user: Option<String>,
    pub bytes: u64,
    pub inodes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DirUse {
    pub path: String,
    pub bytes: u64,
    pub inodes: u64,
    /// The directory itself could not be read: `bytes` is not its contents.
    pub unreadable: bool,
    /// Directories below it (itself included) whose contents were not counted.
    pub unreadable_dirs: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeletedOpen {
    pub pid: u32,
    pub comm: String,
    pub fd: u32,
    pub bytes: u64,
    /// The name it had before it was deleted.
    pub path: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Holder {
    pub pid: u32,
    pub comm: String,
    /// Distinct files open on the mount.
    pub files: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct MountTop {
    pub mountpoint: String,
    pub fstype: String,
    /// `major:minor`; bind mounts of one tmpfs share it (shown once).
    pub device: String,
    /// As `df -B1` (statfs); null only for a --sysroot that is not this machine.
    pub used_bytes: Option<u64>,
    /// Null when unlimited.
    pub size_bytes: Option<u64>,
    pub avail_bytes: Option<u64>,
    pub inodes_used: Option<u64>,
    pub inodes_total: Option<u64>,
    /// Bytes reachable by name (like `du -s -x -B1`).
    pub visible_bytes: u64,
    pub by_owner: Vec<Owner>,
    pub by_dir: Vec<DirUse>,
    /// Largest files anywhere on the mount, its root included, largest first.
    pub largest_files: Vec<LargeFile>,
    pub deleted_open: Vec<DeletedOpen>,
    /// Bytes of deleted-but-open files, each file once.
    pub deleted_open_bytes: u64,
    /// False when some processes' open files could not be read (not root):
    /// `deleted_open_bytes` is then a lower bound, not "none".
    pub deleted_open_known: bool,
    /// Where `used_bytes` comes from: statfs (as df), or a walk for ramfs.
    pub usage_source: statfs::UsageSource,
    pub open_by: Vec<Holder>,
    /// From the previous refresh; null on a single snapshot.
    pub growth_bytes_per_s: Option<f64>,
    /// At the current growth; null when not growing or on a single snapshot.
    pub time_to_full_s: Option<f64>,
    pub unreadable_dirs: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Memfd {
    pub pid: u32,
    pub comm: String,
    pub fds: Vec<u32>,
    pub names: Vec<String>,
    /// Each memfd once, even when open on several fds.
    pub bytes: u64,
}

/// A PATH given to `top` that is not on tmpfs or ramfs, and where it lives.
#[derive(Debug, Clone, Serialize)]
pub struct NotRam {
    pub path: String,
    pub mountpoint: String,
    pub fstype: String,
    pub source: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct TopReport {
    pub schema_version: u32,
    pub taken_at_unix_s: u64,
    pub mounts: Vec<MountTop>,
    pub memfd: Vec<Memfd>,
    pub sysv_shm: Vec<ShmSegment>,
    /// Memory cgroups charged with shmem, with the files their processes hold.
    pub cgroups: Vec<CgroupTop>,
    /// meminfo's Shmem: RAM held by tmpfs, shared memory and memfd.
    pub shmem_bytes: u64,
    /// What this report attributes: RAM-backed mounts (each superblock once),
    /// memfd (each once), SysV segments (resident).
    pub accounted_bytes: u64,
    /// Shmem minus accounted (0 when accounted is larger: swapped-out tmpfs pages count in df, not in Shmem).
    pub unattributed_bytes: u64,
    /// Processes whose open files could not be read.
    pub unreadable_processes: u64,
    /// PATH arguments that live on a disk, not on a RAM-backed mount.
    pub paths_not_ram_backed: Vec<NotRam>,
    pub notes: Vec<String>,
}

/// Resolve the PATH arguments up front, so a typo fails before any measuring.
pub fn resolve_paths(root: &Sysroot, paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    paths
        .iter()
        .map(|p| {
            root.resolve(p).with_context(|| {
                format!(
                    "{}: no such file or directory; give an existing PATH on the mount to show (or none for every RAM-backed mount)",
                    p.display()
                )
            })
        })
        .collect()
}

fn mount_top(
    root: &Sysroot,
    m: &MountInfo,
    walk: Option<du::Breakdown>,
    scan: &Scan,
    names: &HashMap<u32, String>,
    top_n: usize,
) -> MountTop {
    let mp = m.mount_point.to_string_lossy().into_owned();
    let stats = if root.is_live() {
        statfs::statfs(&m.mount_point).ok()
    } else {
        None
    };
    let walk = walk.unwrap_or_default();
    let dev = procfd::dev_of(m.major, m.minor);
    let mut deleted = Vec::new();
    let mut deleted_seen = HashSet::new();
    let mut deleted_bytes = 0u64;
    let mut open_by = Vec::new();
    for p in &scan.processes {
        let mut seen = HashSet::new();
        let (mut files, mut bytes) = (0u64, 0u64);
        for f in p.files.iter().filter(|f| f.dev == dev) {
            if seen.insert(f.ino) {
                files += 1;
                bytes += f.bytes;
            }
            if f.deleted {
                deleted.push(DeletedOpen {
                    pid: p.pid,
                    comm: procfd::comm(root, p.pid),
                    fd: f.fd,
                    bytes: f.bytes,
                    path: f.path.to_string_lossy().into_owned(),
                });
                if deleted_seen.insert(f.ino) {
                    deleted_bytes += f.bytes;
                }
            }
        }
        if files > 0 {
            open_by.push(Holder {
                pid: p.pid,
                comm: String::new(),
                files,
                bytes,
            });
        }
    }
    deleted.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.pid.cmp(&b.pid)));
    open_by.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(b.files.cmp(&a.files))
            .then(a.pid.cmp(&b.pid))
    });
    open_by.truncate(top_n);
    for h in &mut open_by {
        h.comm = procfd::comm(root, h.pid);
    }
    let by_dir = walk
        .dirs
        .iter()
        .take(top_n)
        .map(|d| DirUse {
            path: m.mount_point.join(&d.path).to_string_lossy().into_owned(),
            bytes: d.bytes,
            inodes: d.inodes,
            unreadable: d.unreadable,
            unreadable_dirs: d.unreadable_dirs,
        })
        .collect();
    let by_owner = walk
        .by_owner
        .iter()
        .map(|o| Owner {
            uid: o.uid,
            user: names.get(&o.uid).cloned(),
            bytes: o.bytes,
            inodes: o.inodes,
        })
        .collect();
    // ramfs reports no usage through statfs: its data is what the walk sees.
    let ramfs = m.fstype == "ramfs";
    MountTop {
        mountpoint: mp,
        fstype: m.fstype.clone(),
        device: format!("{}:{}", m.major, m.minor),
        used_bytes: stats.as_ref().map(|s| {
            if ramfs {
                walk.usage.bytes + deleted_bytes
            } else {
                s.used_bytes
            }
        }),
        size_bytes: stats
            .as_ref()
            .and_then(|s| (s.size_bytes > 0 && !ramfs).then_some(s.size_bytes)),
        avail_bytes: stats
            .as_ref()
            .and_then(|s| (!ramfs).then_some(s.avail_bytes)),
        inodes_used: stats.as_ref().map(|s| s.inodes_used),
        inodes_total: stats
            .as_ref()
            .and_then(|s| (s.inodes_total > 0).then_some(s.inodes_total)),
        visible_bytes: walk.usage.bytes,
        by_owner,
        by_dir,
        largest_files: largest_files(root, &walk, scan, names, top_n),
        deleted_open: deleted,
        deleted_open_bytes: deleted_bytes,
        deleted_open_known: scan.unreadable == 0,
        usage_source: match (&stats, ramfs) {
            (None, _) => statfs::UsageSource::Unknown,
            (Some(_), true) => statfs::UsageSource::Walk,
            (Some(_), false) => statfs::UsageSource::Statfs,
        },
        open_by,
        growth_bytes_per_s: None,
        time_to_full_s: None,
        unreadable_dirs: walk.usage.unreadable_dirs,
    }
}

fn memfds(root: &Sysroot, scan: &Scan) -> (Vec<Memfd>, u64) {
    let mut seen = HashSet::new();
    let mut total = 0u64;
    let mut out = Vec::new();
    for p in &scan.processes {
        let mut e = Memfd {
            pid: p.pid,
            comm: String::new(),
            fds: Vec::new(),
            names: Vec::new(),
            bytes: 0,
        };
        let mut mine = HashSet::new();
        for f in &p.files {
            let Some(name) = &f.memfd else { continue };
            e.fds.push(f.fd);
            if mine.insert((f.dev, f.ino)) {
                e.bytes += f.bytes;
                if !e.names.contains(name) {
                    e.names.push(name.clone());
                }
            }
            if seen.insert((f.dev, f.ino)) {
                total += f.bytes;
            }
        }
        if !e.fds.is_empty() {
            out.push(e);
        }
    }
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.pid.cmp(&b.pid)));
    for e in &mut out {
        e.comm = procfd::comm(root, e.pid);
    }
    (out, total)
}

/// One snapshot: the tree walks and the /proc scan run at the same time.
pub fn snapshot(ctx: &Context, paths: &[PathBuf], top_n: usize) -> Result<TopReport> {
    let root = &ctx.sysroot;
    let (mounts, _) = root.mountinfo()?;
    let (mem, _) = root.meminfo()?;
    let names = passwd::users(root);
    let chosen = ram_mounts(&mounts, paths);
    // The walk already spreads over every core: one thread for /proc beside it
    // (a few thousand syscalls) keeps the two from fighting over the CPUs.
    let threads = if root.is_live() && !chosen.is_empty() {
        1
    } else {
        2
    };
    let (walks, scan, shm, rows) = std::thread::scope(|s| {
        let procs = s.spawn(|| procfd::scan(root, threads));
        let side = s.spawn(|| {
            let hs = cgroup::hierarchies(root, &mounts);
            (sysvshm::read(root), cgroup::scan(root, &hs))
        });
        let walks: Vec<Option<du::Breakdown>> = chosen
            .iter()
            .map(|m| {
                root.is_live()
                    .then(|| du::breakdown(&m.mount_point, DIR_DEPTH).ok())
                    .flatten()
            })
            .collect();
        let scan = procs.join().unwrap_or_default();
        let (shm, cg) = side.join().unwrap_or_default();
        (walks, scan, shm, cg)
    });
    let mut out: Vec<MountTop> = chosen
        .iter()
        .zip(walks)
        .map(|(m, w)| mount_top(root, m, w, &scan, &names, top_n))
        .collect();
    out.sort_by(|a, b| {
        b.used_bytes
            .cmp(&a.used_bytes)
            .then(a.mountpoint.cmp(&b.mountpoint))
    });
    // Open files only: reading every process's mappings as well would cost
    // a third of the walk with a thousand processes (explain reads them for
    // the one cgroup it is asked about).
    let rams = cgroups::ram_devs(&ram_mounts(&mounts, &[]));
    let cgroups = cgroups::link(root, rows, &scan, &HashMap::new(), &rams, top_n);
    let (memfd, memfd_bytes) = memfds(root, &scan);
    let mut shm = shm;
    for g in &mut shm {
        g.owner = names.get(&g.uid).cloned();
    }
    let mounts_bytes: u64 = out.iter().filter_map(|m| m.used_bytes).sum();
    let shm_bytes: u64 = shm.iter().map(|s| s.rss_bytes.unwrap_or(s.bytes)).sum();
    let accounted = mounts_bytes + memfd_bytes + shm_bytes;
    let mut notes = vec![
        "Shmem also holds shared anonymous memory (MAP_SHARED|MAP_ANONYMOUS), GPU buffers and tmpfs mounts \
         in other mount namespaces (containers, PrivateTmp=): those are the unattributed part."
            .to_string(),
    ];
    if accounted > mem.shmem_bytes {
        notes.push(
            "More is attributed than Shmem: tmpfs pages swapped out still count as used on the mount, not in Shmem."
                .into(),
        );
    }
    if !paths.is_empty() {
        notes.push(
            "Only the mounts holding the given paths are listed: accounted_bytes covers those."
                .into(),
        );
    }
    Ok(TopReport {
        schema_version: SCHEMA_VERSION,
        taken_at_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        mounts: out,
        memfd,
        sysv_shm: shm,
        cgroups,
        shmem_bytes: mem.shmem_bytes,
        accounted_bytes: accounted,
        unattributed_bytes: mem.shmem_bytes.saturating_sub(accounted),
        unreadable_processes: scan.unreadable,
        paths_not_ram_backed: paths
            .iter()
            .filter_map(|p| {
                let m = mountinfo::mount_for(&mounts, p)?;
                (!crate::sys::is_ram_backed(&m.fstype)).then(|| NotRam {
                    path: p.to_string_lossy().into_owned(),
                    mountpoint: m.mount_point.to_string_lossy().into_owned(),
                    fstype: m.fstype.clone(),
                    source: m.source.clone(),
                })
            })
            .collect(),
        notes,
    })
}

/// Fill growth and time to full from the previous snapshot of each mount.
pub fn add_growth(now: &mut TopReport, prev: &HashMap<String, (Instant, u64)>, at: Instant) {
    for m in &mut now.mounts {
        let (Some(used), Some((t0, u0))) = (m.used_bytes, prev.get(&m.mountpoint)) else {
            continue;
        };
        let dt = at.duration_since(*t0).as_secs_f64();
        if dt <= 0.0 {
            continue;
        }
        let g = (used as f64 - *u0 as f64) / dt;
        m.growth_bytes_per_s = Some(g);
        m.time_to_full_s = match m.avail_bytes {
            Some(a) if g > 0.0 => Some(a as f64 / g),
            _ => None,
        };
    }
}

/// What `top` hands back: one snapshot, or the live view's ending (it
/// drew its own screens).
#[derive(Debug)]
pub enum TopOutcome {
    Snapshot(Box<TopReport>),
    Live(crate::command::Shown),
}

/// `tmpfsctl top`: the live view on a terminal, else one snapshot for
/// `Output` to show (table, `--json`, `--prom`).
impl crate::command::Request for TopQuery {
    type Report = TopOutcome;

    fn run(&self, ctx: &Context) -> Result<TopOutcome> {
        run(ctx, self)
    }
}

fn run(ctx: &Context, q: &TopQuery) -> Result<TopOutcome> {
    let paths = resolve_paths(&ctx.sysroot, &q.paths)?;
    let live = q.mode == Mode::Live
        && crate::render::stdout_is_tty()
        && std::io::IsTerminal::is_terminal(&std::io::stdin());
    if live {
        return Ok(TopOutcome::Live(crate::command::Shown(live::run(
            ctx, &paths, q,
        )?)));
    }
    Ok(TopOutcome::Snapshot(Box::new(snapshot(
        ctx, &paths, q.top_n,
    )?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mi(line: &str) -> MountInfo {
        mountinfo::parse_line(line.as_bytes()).unwrap()
    }

    #[test]
    fn growth_and_time_to_full_come_from_two_snapshots() {
        let t0 = Instant::now();
        let mut r = TopReport {
            schema_version: 1,
            taken_at_unix_s: 0,
            mounts: vec![],
            memfd: vec![],
            sysv_shm: vec![],
            cgroups: vec![],
            shmem_bytes: 0,
            accounted_bytes: 0,
            unattributed_bytes: 0,
            unreadable_processes: 0,
            paths_not_ram_backed: vec![],
            notes: vec![],
        };
        let mut m = mount_top(
            &Sysroot::new("/nonexistent"),
            &mi("2 1 0:40 / /tmp rw - tmpfs tmpfs rw"),
            None,
            &Scan::default(),
            &HashMap::new(),
            5,
        );
        m.used_bytes = Some(3000);
        m.avail_bytes = Some(1000);
        r.mounts.push(m);
        let prev = HashMap::from([("/tmp".to_string(), (t0, 1000u64))]);
        add_growth(&mut r, &prev, t0 + Duration::from_secs(2));
        assert_eq!(r.mounts[0].growth_bytes_per_s, Some(1000.0));
        assert_eq!(r.mounts[0].time_to_full_s, Some(1.0));
    }
}
