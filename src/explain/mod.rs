//! `tmpfsctl explain PATH`: why a write at PATH fails or would fail (the
//! limit that binds first, with its numbers and its fix), and what the next
//! tmpfiles clean would delete there.

mod age;
mod causes;
mod clean;
mod render;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::command::Context;
use crate::sys::cgroup::{self, Hierarchy};
use crate::sys::{self, Sysroot, passwd, procfd, statfs, tmpfiles};

use crate::sys::hidden::{self, HiddenBelow};
pub use causes::{Cause, CgroupCheck, help_list};
pub use clean::{Cleaned, FlockHeld, RuleOut};

/// 2: `largest_files` and `hidden_below` are new. 3: `flock_protected`,
/// `tmpfiles_rules[].boot_only` and `.ignored` are new; `age_by` names
/// btime and the directory defaults systemd applies; `will_be_cleaned`
/// lists directories too.
pub const SCHEMA_VERSION: u32 = 3;

/// Whose cgroup pays for the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writer {
    /// tmpfsctl's own process: the caller's cgroup.
    Caller,
    Pid(u32),
    /// A cgroup path inside its hierarchy ("/system.slice/x.service").
    Cgroup(String),
}

/// What `explain` is asked: the plain request the CLI hands to [`run`].
#[derive(Debug, Clone)]
pub struct ExplainQuery {
    pub path: PathBuf,
    pub writer: Writer,
    /// tmpfiles.d directories to read instead of systemd's (highest priority first).
    pub tmpfiles_dirs: Vec<PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExplainReport {
    pub schema_version: u32,
    pub path: String,
    /// The existing directory or file the answer is about (PATH, or its
    /// parent when PATH does not exist yet).
    pub resolved: String,
    pub mountpoint: String,
    pub fstype: String,
    pub source: String,
    pub ram_backed: bool,
    pub read_only: bool,
    pub size_bytes: Option<u64>,
    pub used_bytes: Option<u64>,
    pub avail_bytes: Option<u64>,
    pub inodes_total: Option<u64>,
    pub inodes_used: Option<u64>,
    pub inodes_free: Option<u64>,
    pub mem_available_bytes: u64,
    pub swap_free_bytes: u64,
    /// The writer's memory cgroups with a limit (innermost first).
    pub cgroups: Vec<CgroupCheck>,
    /// True when a write here fails (or gets the writer killed) now.
    pub binds: bool,
    /// What binds first comes first; `ok` when nothing does.
    pub causes: Vec<Cause>,
    /// What the filesystem below holds at this mount point, hidden by the
    /// mount (PATH is a mount point; root only); null otherwise.
    pub hidden_below: Option<HiddenBelow>,
    /// Why `hidden_below` is null at a mount point (not root, ...).
    pub hidden_below_unknown: Option<String>,
    /// The mount's largest files, its root included (RAM-backed mounts only).
    pub largest_files: Vec<crate::attrib::LargeFile>,
    pub tmpfiles_rules: Vec<RuleOut>,
    pub will_be_cleaned: Vec<Cleaned>,
    /// A `D`, `R` or `r` rule removes PATH (a directory: its contents) at
    /// every boot, whatever its age and whatever `x`/`X` say.
    pub will_be_removed_at_boot: bool,
    /// That rule, as `TYPE PATH (FILE:LINE)`; null when none.
    pub removed_at_boot_by: Option<String>,
    /// Directories on the way to PATH or below it that the clean skips,
    /// with everything in them, while a process holds a flock on them.
    pub flock_protected: Vec<FlockHeld>,
    /// `systemctl show systemd-tmpfiles-clean.timer`'s next run; null without systemd.
    pub tmpfiles_clean_next: Option<String>,
}

/// PATH made absolute; PATH itself when it exists, else its parent (a new
/// file's directory). An error when neither exists.
fn resolve(root: &Sysroot, p: &Path) -> Result<PathBuf> {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    };
    root.resolve(&abs)
        .or_else(|e| match abs.parent() {
            Some(parent) => root.resolve(parent),
            None => Err(e),
        })
        .with_context(|| {
            format!(
                "{}: neither it nor its parent directory exists; give a path whose directory exists",
                p.display()
            )
        })
}

/// The cgroups that pay for the writer's pages, checked before measuring.
fn writer_cgroups(
    root: &Sysroot,
    hs: &[Hierarchy],
    w: &Writer,
) -> Result<Vec<(Hierarchy, String)>> {
    Ok(match w {
        Writer::Caller => cgroup::of_pid(root, hs, std::process::id()),
        Writer::Pid(pid) => {
            if !root.path(format!("/proc/{pid}")).is_dir() {
                anyhow::bail!(
                    "--pid {pid}: no such process; give the pid of the writer (see `pgrep NAME`)"
                );
            }
            cgroup::of_pid(root, hs, *pid)
        }
        Writer::Cgroup(path) => {
            // Accept the path inside the hierarchy or the full /sys/fs/cgroup/... path.
            let mut found = Vec::new();
            for h in hs {
                let rel = Path::new(path)
                    .strip_prefix(&h.mount_point)
                    .map(|r| format!("/{}", r.display()))
                    .unwrap_or_else(|_| path.clone());
                let rel = if rel.starts_with('/') {
                    rel
                } else {
                    format!("/{rel}")
                };
                if root
                    .path(h.mount_point.join(rel.trim_start_matches('/')))
                    .is_dir()
                {
                    found.push((h.clone(), rel));
                }
            }
            if found.is_empty() {
                let where_: Vec<String> = hs
                    .iter()
                    .map(|h| h.mount_point.display().to_string())
                    .collect();
                anyhow::bail!(
                    "--cgroup {path}: no such memory cgroup under {}; give its path as in /proc/PID/cgroup (e.g. /system.slice/foo.service)",
                    if where_.is_empty() {
                        "any memory hierarchy (none is mounted)".to_string()
                    } else {
                        where_.join(" or ")
                    }
                );
            }
            found
        }
    })
}

pub fn gather(ctx: &Context, q: &ExplainQuery) -> Result<ExplainReport> {
    let root = &ctx.sysroot;
    // Inputs first: a bad PATH, pid or cgroup fails before anything is measured.
    let resolved = resolve(root, &q.path)?;
    let (mounts, _) = root.mountinfo()?;
    let (mem, _) = root.meminfo()?;
    let hs = cgroup::hierarchies(root, &mounts);
    let writer = writer_cgroups(root, &hs, &q.writer)?;
    for d in &q.tmpfiles_dirs {
        if !root.path(d).is_dir() {
            anyhow::bail!(
                "--tmpfiles-dir {}: not a directory; give a directory of *.conf files",
                d.display()
            );
        }
    }

    let m = sys::mountinfo::mount_for(&mounts, &resolved).with_context(|| {
        format!(
            "{}: no mount holds it in {}",
            resolved.display(),
            root.path("/proc/self/mountinfo").display()
        )
    })?;
    let stats = if root.is_live() {
        statfs::statfs(&resolved).ok()
    } else {
        None
    };
    let ram = sys::is_ram_backed(&m.fstype);
    let read_only = m.has_flag("ro") || m.super_options.iter().any(|o| o == "ro");
    let scan = if root.is_live() {
        procfd::scan(root, 2)
    } else {
        procfd::Scan::default()
    };

    // One walk of a RAM-backed mount names its largest files and
    // directories, for the JSON and for the causes' "biggest consumers".
    let walk = (root.is_live() && ram)
        .then(|| sys::du::breakdown(&m.mount_point, 2).ok())
        .flatten();
    let largest = walk
        .as_ref()
        .map(|w| {
            crate::attrib::largest_files(
                root,
                w,
                &scan,
                &passwd::users(root),
                sys::du::LARGEST_FILES,
            )
        })
        .unwrap_or_default();
    let (hidden_below, hidden_below_unknown) = if root.is_live() && m.mount_point == resolved {
        match hidden::open(&mounts, m) {
            Ok(b) => (b.measure(), None),
            Err(e) => (None, Some(e.reason().to_string())),
        }
    } else {
        (None, None)
    };
    let cgroups = causes::cgroup_checks(root, &writer, &scan, &mounts);
    let ctx_in = causes::Inputs {
        path: &resolved,
        mount: m,
        stats: stats.as_ref(),
        mem: &mem,
        cgroups: &cgroups,
        read_only,
        scan: &scan,
        writer_uid: writer_uid(root, &q.writer),
        root,
        walk: walk.as_ref(),
        largest: &largest,
    };
    let causes = causes::classify(&ctx_in);
    let binds = causes.iter().any(|c| c.binds);

    let dirs: Vec<PathBuf> = if q.tmpfiles_dirs.is_empty() {
        tmpfiles::DIRS.iter().map(PathBuf::from).collect()
    } else {
        q.tmpfiles_dirs.clone()
    };
    let here = resolved.to_string_lossy().into_owned();
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let tmp = clean::answer(root, &dirs, &here, &scan, now_ns);

    let ramfs = m.fstype == "ramfs";
    Ok(ExplainReport {
        schema_version: SCHEMA_VERSION,
        path: q.path.to_string_lossy().into_owned(),
        resolved: here,
        mountpoint: m.mount_point.to_string_lossy().into_owned(),
        fstype: m.fstype.clone(),
        source: m.source.clone(),
        ram_backed: ram,
        read_only,
        size_bytes: stats
            .as_ref()
            .and_then(|s| (s.size_bytes > 0 && !ramfs).then_some(s.size_bytes)),
        used_bytes: stats.as_ref().map(|s| s.used_bytes),
        avail_bytes: stats
            .as_ref()
            .and_then(|s| (!ramfs).then_some(s.avail_bytes)),
        inodes_total: stats
            .as_ref()
            .and_then(|s| (s.inodes_total > 0).then_some(s.inodes_total)),
        inodes_used: stats.as_ref().map(|s| s.inodes_used),
        inodes_free: stats
            .as_ref()
            .and_then(|s| (s.inodes_total > 0).then_some(s.inodes_free)),
        mem_available_bytes: mem.mem_available_bytes,
        swap_free_bytes: mem.swap_free_bytes,
        cgroups,
        binds,
        causes,
        hidden_below,
        hidden_below_unknown,
        largest_files: largest,
        tmpfiles_rules: tmp.rules,
        will_be_cleaned: tmp.cleaned,
        will_be_removed_at_boot: tmp.removed_at_boot_by.is_some(),
        removed_at_boot_by: tmp.removed_at_boot_by,
        flock_protected: tmp.flock_protected,
        tmpfiles_clean_next: clean::next_clean(root),
    })
}

/// The uid a write would be charged to for quotas: the writer's, else ours.
fn writer_uid(root: &Sysroot, w: &Writer) -> u32 {
    if let Writer::Pid(pid) = w
        && let Some(uid) = sys::proc::euid(root, *pid)
    {
        return uid;
    }
    rustix::process::geteuid().as_raw()
}

/// `tmpfsctl explain`: exit 0 when nothing binds, 1 when something does.
impl crate::command::Request for ExplainQuery {
    type Report = ExplainReport;

    fn run(&self, ctx: &Context) -> Result<ExplainReport> {
        gather(ctx, self)
    }
}
