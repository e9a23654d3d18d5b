//! Directories a run leaves when it is killed (SIGKILL, a crash, a power
//! cut) and how the next run removes them.
//!
//! Every scratch and mount directory bench creates carries its owner in its
//! name: PID, the PID's start time (clock ticks after boot, field 22 of
//! /proc/PID/stat) and PID namespace. A later run removes such a directory
//! when its owner is gone: no process with that PID, or one that started at
//! another time (the PID was reused). A directory made in another PID
//! namespace (a container sharing the disk) is left alone, since its PID
//! cannot be checked from here; so is one owned by another user.

use crate::sys::{Sysroot, proc};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The process that owns a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pid: u32,
    start: u64,
    pidns: u64,
}

impl Owner {
    /// This process; None where /proc does not tell (then names carry no owner
    /// and are never swept).
    pub fn me() -> Option<Owner> {
        let pid = std::process::id();
        Some(Owner {
            pid,
            start: start_ticks(pid)?,
            pidns: proc::pid_namespace()?,
        })
    }

    /// `PID-START-PIDNS-`, to follow a directory's base name.
    fn tag(&self) -> String {
        format!("{}-{}-{}-", self.pid, self.start, self.pidns)
    }

    /// The owner named after `base` in a directory name, if it has one.
    fn parse(rest: &str) -> Option<Owner> {
        let mut it = rest.splitn(4, '-');
        let pid = it.next()?.parse().ok()?;
        let start = it.next()?.parse().ok()?;
        let pidns = it.next()?.parse().ok()?;
        it.next()?;
        Some(Owner { pid, start, pidns })
    }

    /// Whether this owner has ended, judged from `me`'s PID namespace.
    fn gone(&self, me: &Owner) -> bool {
        self.pidns == me.pidns && start_ticks(self.pid) != Some(self.start)
    }
}

/// The name prefix for a new directory: `base` followed by this process's tag.
pub fn prefix(base: &str) -> String {
    match Owner::me() {
        Some(o) => format!("{base}{}", o.tag()),
        None => base.to_string(),
    }
}

/// What a leftover may contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A scratch directory: removed with everything in it.
    Tree,
    /// A mount point: removed only when empty (a tmpfs still mounted on it,
    /// or anything in it, keeps it).
    MountPoint,
}

/// Remove the directories in `dir` named `base` + owner tag whose owner is
/// gone. Best effort: what cannot be read or removed stays, and the run
/// goes on. Returns the names removed.
pub fn sweep(dir: &Path, base: &str, kind: Kind) -> Vec<String> {
    let mut removed = Vec::new();
    let Some(me) = Owner::me() else {
        return removed;
    };
    let Ok(rd) = std::fs::read_dir(dir) else {
        return removed;
    };
    let euid = rustix::process::geteuid().as_raw();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(owner) = name.strip_prefix(base).and_then(Owner::parse) else {
            continue;
        };
        if owner == me || !owner.gone(&me) {
            continue;
        }
        // symlink_metadata: a symlink with a matching name is not ours and
        // is never followed.
        let Ok(m) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if !m.is_dir() || m.uid() != euid {
            continue;
        }
        let ok = match kind {
            // remove_dir_all does not follow symlinks inside the tree.
            Kind::Tree => std::fs::remove_dir_all(e.path()).is_ok(),
            Kind::MountPoint => std::fs::remove_dir(e.path()).is_ok(),
        };
        if ok {
            removed.push(name);
        }
    }
    removed
}

/// A process's start time in clock ticks after boot; None when there is no
/// such process.
fn start_ticks(pid: u32) -> Option<u64> {
    proc::stat(&Sysroot::live(), pid).map(|s| s.starttime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::dead_pid;

    #[test]
    fn tags_parse_back() {
        let me = Owner::me().expect("/proc");
        let p = prefix(".x-");
        let rest = format!("{}abc123", p.strip_prefix(".x-").unwrap());
        assert_eq!(Owner::parse(&rest), Some(me));
        assert_eq!(Owner::parse("12-34-56"), None, "no random part");
        assert_eq!(Owner::parse("abc123"), None, "a name without an owner");
        assert_eq!(Owner::parse("1-x-3-abc"), None);
    }

    #[test]
    fn only_dirs_of_gone_owners_are_removed() {
        let me = Owner::me().unwrap();
        let d = tempfile::tempdir().unwrap();
        let base = ".tmpfsctl-bench-";
        let dead = Owner {
            pid: dead_pid(),
            ..me
        };
        let reused = Owner {
            start: me.start + 1,
            ..me
        };
        let parent = Owner {
            pid: std::os::unix::process::parent_id(),
            start: start_ticks(std::os::unix::process::parent_id()).unwrap(),
            pidns: me.pidns,
        };
        let other_ns = Owner {
            pidns: me.pidns + 1,
            ..dead
        };
        let name = |o: &Owner| format!("{base}{}aaaaaa", o.tag());
        for o in [&dead, &reused, &parent, &other_ns, &me] {
            std::fs::create_dir(d.path().join(name(o))).unwrap();
            std::fs::write(d.path().join(name(o)).join("data"), b"x").unwrap();
        }
        std::fs::create_dir(d.path().join(".tmpfsctl-bench-legacy")).unwrap();
        // A symlink named like a leftover, pointing at a directory of ours.
        let victim = d.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        let link = format!("{base}{}bbbbbb", dead.tag());
        std::os::unix::fs::symlink(&victim, d.path().join(&link)).unwrap();

        let mut removed = sweep(d.path(), base, Kind::Tree);
        removed.sort();
        let mut want = vec![name(&dead), name(&reused)];
        want.sort();
        assert_eq!(removed, want);
        for o in [&parent, &other_ns, &me] {
            assert!(d.path().join(name(o)).join("data").exists(), "{o:?}");
        }
        assert!(d.path().join(".tmpfsctl-bench-legacy").exists());
        assert!(d.path().join(&link).exists() && victim.exists());
    }

    #[test]
    fn a_mount_point_is_removed_only_when_empty() {
        let me = Owner::me().unwrap();
        let d = tempfile::tempdir().unwrap();
        let base = "tmpfsctl-bench-mnt-";
        let dead = Owner {
            pid: dead_pid(),
            ..me
        };
        let empty = format!("{base}{}aaaaaa", dead.tag());
        let full = format!("{base}{}bbbbbb", dead.tag());
        std::fs::create_dir(d.path().join(&empty)).unwrap();
        std::fs::create_dir(d.path().join(&full)).unwrap();
        std::fs::write(d.path().join(&full).join("f"), b"x").unwrap();
        assert_eq!(sweep(d.path(), base, Kind::MountPoint), vec![empty]);
        assert!(d.path().join(&full).join("f").exists());
    }
}
