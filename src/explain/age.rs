//! What `systemd-tmpfiles --clean` (the daily timer) deletes under a path,
//! decided as systemd 252's `dir_cleanup` decides it, entry by entry: a
//! line of its own (or a glob: `x`, `X`, `r`, `e`, ...) keeps an entry and
//! all below it out of the clean of the directory above; a directory
//! another process holds a BSD flock on is skipped with all it holds; other
//! mounts, sticky files, live sockets and devices stay; an entry goes when
//! every timestamp its age-by letters choose is older than the age; a
//! directory goes only when it is old and ends up empty; `~` keeps the top
//! level. Directories are opened with O_NOATIME so that asking does not make
//! them look used.

use std::collections::HashSet;
use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, CWD, Dir, FileType, Statx, StatxAttributes, StatxFlags};

use crate::sys::Sysroot;
use crate::sys::fs::{self, open_dir_noatime};
use crate::sys::proc::{self, Flock};
use crate::sys::tmpfiles::{self, Age, Config, Rule, is_under};

/// systemd's MAX_DEPTH: deeper directories are not entered.
const MAX_DEPTH: usize = 256;
/// At most this many entries are looked at in all: an answer, not a hang.
const WALK_LIMIT: usize = 500_000;

/// An entry the clean deletes.
#[derive(Debug, Clone)]
pub struct Doomed {
    pub path: String,
    /// Seconds since the newest timestamp the rule looks at.
    pub age_s: u64,
    pub bytes: u64,
    pub dev: u64,
    pub ino: u64,
    pub rule_age_s: u64,
}

/// A directory the clean skips, with all below it, because a process holds
/// a flock on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locked {
    pub path: String,
    pub pid: u32,
}

pub struct Clean<'a> {
    root: &'a Sysroot,
    cfg: &'a Config,
    /// Only what lies on the way to, or under, this path is looked at.
    limit: &'a str,
    now_ns: i128,
    locks: Vec<Flock>,
    sockets: HashSet<String>,
    walked: usize,
    pub doomed: Vec<Doomed>,
    pub locked: Vec<Locked>,
}

/// Where in the walk a directory is: how deep it may still go, whether its
/// entries are the top level that `~` keeps, whether it is a mount's root.
#[derive(Clone, Copy)]
struct Level {
    depth: usize,
    keep: bool,
    mountpoint: bool,
}

/// The state of one rule's walk: its age and where it started.
struct Walk<'r> {
    age: &'r Age,
    cutoff_ns: i128,
    dev: (u32, u32),
}

impl<'a> Clean<'a> {
    pub fn new(root: &'a Sysroot, cfg: &'a Config, limit: &'a str, now_ns: i128) -> Self {
        Clean {
            root,
            cfg,
            limit,
            now_ns,
            locks: proc::flocks(root),
            sockets: proc::unix_socket_paths(root),
            walked: 0,
            doomed: Vec::new(),
            locked: Vec::new(),
        }
    }

    /// Run every cleaning line whose directory is on the way to, or under,
    /// the asked path, as the timer's run would.
    pub fn run(mut self) -> Self {
        let cfg = self.cfg;
        for r in cfg.items.iter().chain(&cfg.globs).filter(|r| r.cleans()) {
            // d, D, v, q, Q, C and x name their directory literally; e and X
            // are globs expanded to the directories they match.
            let tops = if matches!(r.kind, 'e' | 'X') {
                expand(self.root, &r.path)
            } else {
                vec![r.path.clone()]
            };
            for top in tops {
                if is_under(self.limit, &top) || is_under(&top, self.limit) {
                    self.instance(r, &top);
                }
            }
        }
        self.doomed
            .sort_by(|a, b| b.age_s.cmp(&a.age_s).then_with(|| a.path.cmp(&b.path)));
        self.doomed.dedup_by(|a, b| a.path == b.path);
        self
    }

    fn instance(&mut self, r: &Rule, top: &str) {
        let Some(age) = &r.age else { return };
        // systemd opens the top directory following symlinks, as opendir does.
        let Ok(fd) = open_dir_noatime(CWD, &self.root.path(top), true) else {
            return;
        };
        let Ok(sx) = rustix::fs::statx(&fd, c"", AtFlags::EMPTY_PATH, StatxFlags::BASIC_STATS)
        else {
            return;
        };
        let mountpoint = sx.stx_attributes.contains(StatxAttributes::MOUNT_ROOT);
        let w = Walk {
            age,
            cutoff_ns: self.now_ns - i128::from(age.seconds) * 1_000_000_000,
            dev: (sx.stx_dev_major, sx.stx_dev_minor),
        };
        let top_level = Level {
            depth: MAX_DEPTH,
            keep: age.below_top_only,
            mountpoint,
        };
        self.dir(&w, top, fd, top_level);
    }

    /// Clean one directory; true when everything in it goes (it ends empty).
    fn dir(&mut self, w: &Walk, path: &str, fd: OwnedFd, lv: Level) -> bool {
        let Ok(mut d) = Dir::read_from(&fd) else {
            return false;
        };
        let mut all_gone = true;
        while let Some(Ok(e)) = d.read() {
            let name = e.file_name();
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            self.walked += 1;
            let sub = join(path, name);
            let relevant = is_under(&sub, self.limit) || is_under(self.limit, &sub);
            if self.walked > WALK_LIMIT || !relevant || !self.entry(w, fd.as_fd(), name, &sub, lv) {
                all_gone = false;
            }
        }
        all_gone
    }

    /// One entry of a directory being cleaned; true when it is deleted.
    fn entry(&mut self, w: &Walk, at: BorrowedFd, name: &CStr, sub: &str, lv: Level) -> bool {
        let want = StatxFlags::TYPE
            | StatxFlags::MODE
            | StatxFlags::UID
            | StatxFlags::ATIME
            | StatxFlags::MTIME
            | StatxFlags::CTIME
            | StatxFlags::BTIME
            | StatxFlags::INO
            | StatxFlags::BLOCKS;
        let Ok(sx) = rustix::fs::statx(
            at,
            name,
            AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT,
            want,
        ) else {
            return false;
        };
        let other_mount = if sx.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT) {
            sx.stx_attributes.contains(StatxAttributes::MOUNT_ROOT)
        } else {
            (sx.stx_dev_major, sx.stx_dev_minor) != w.dev
        };
        if other_mount || self.cfg.has_own_line(sub) {
            return false;
        }
        let ft = FileType::from_raw_mode(u32::from(sx.stx_mode));
        let leaf = name.to_bytes();
        if ft == FileType::Directory {
            if lv.mountpoint && leaf == b"lost+found" && sx.stx_uid == 0 {
                return false;
            }
            let mut emptied = false;
            if lv.depth > 0 {
                let Ok(fd) = open_dir_noatime(at, name, false) else {
                    return false;
                };
                if let Some(l) = self.locks.iter().find(|l| {
                    (l.major, l.minor, l.ino) == (sx.stx_dev_major, sx.stx_dev_minor, sx.stx_ino)
                }) {
                    // systemd takes LOCK_EX|LOCK_NB on it and skips it, with
                    // all it holds, when that fails.
                    self.locked.push(Locked {
                        path: sub.to_string(),
                        pid: l.pid,
                    });
                    return false;
                }
                let below = Level {
                    depth: lv.depth - 1,
                    keep: false,
                    mountpoint: false,
                };
                emptied = self.dir(w, sub, fd, below);
            }
            if lv.keep || !emptied {
                return false;
            }
            self.judge(w, &sx, sub, true)
        } else {
            let skip = (sx.stx_mode as u32 & libc::S_ISVTX) != 0
                || (lv.mountpoint
                    && ft == FileType::RegularFile
                    && sx.stx_uid == 0
                    && matches!(leaf, b".journal" | b"aquota.user" | b"aquota.group"))
                || (ft == FileType::Socket && self.sockets.contains(sub))
                || matches!(ft, FileType::CharacterDevice | FileType::BlockDevice)
                || lv.keep;
            !skip && self.judge(w, &sx, sub, false)
        }
    }

    /// Old enough by every chosen timestamp: noted as deleted.
    fn judge(&mut self, w: &Walk, sx: &Statx, sub: &str, dir: bool) -> bool {
        let (a, b, c, m) = w.age.by.for_kind(dir);
        let ns = |t: rustix::fs::StatxTimestamp| {
            i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec)
        };
        let has_btime = sx.stx_mask & StatxFlags::BTIME.bits() != 0;
        let chosen = [
            (a, ns(sx.stx_atime)),
            (b && has_btime, ns(sx.stx_btime)),
            (c, ns(sx.stx_ctime)),
            (m, ns(sx.stx_mtime)),
        ];
        if chosen.iter().any(|(on, t)| *on && *t >= w.cutoff_ns) {
            return false;
        }
        let newest = chosen
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, t)| *t)
            .max()
            .unwrap_or(0);
        if is_under(sub, self.limit) {
            self.doomed.push(Doomed {
                path: sub.to_string(),
                age_s: ((self.now_ns - newest) / 1_000_000_000).max(0) as u64,
                bytes: sx.stx_blocks * 512,
                dev: rustix::fs::makedev(sx.stx_dev_major, sx.stx_dev_minor),
                ino: sx.stx_ino,
                rule_age_s: w.age.seconds,
            });
        }
        true
    }
}

fn join(dir: &str, name: &CStr) -> String {
    let n = String::from_utf8_lossy(name.to_bytes());
    if dir == "/" {
        format!("/{n}")
    } else {
        format!("{dir}/{n}")
    }
}

/// The existing paths a tmpfiles glob matches, as glob(3) finds them (a
/// wildcard does not match a leading dot).
pub fn expand(root: &Sysroot, pattern: &str) -> Vec<String> {
    let mut found = vec![String::new()];
    for comp in pattern.split('/').filter(|c| !c.is_empty()) {
        let mut next = Vec::new();
        for base in &found {
            if !comp.contains(['*', '?', '[']) {
                let p = format!("{base}/{comp}");
                if std::fs::symlink_metadata(root.path(&p)).is_ok() {
                    next.push(p);
                }
                continue;
            }
            let dir = if base.is_empty() { "/" } else { base.as_str() };
            for n in names_noatime(root, dir) {
                if tmpfiles::glob_match(comp, &n) {
                    next.push(format!("{base}/{n}"));
                }
            }
        }
        found = next;
        if found.len() > 10_000 {
            break;
        }
    }
    found.sort();
    found
}

/// A directory's entry names, read without touching its access time.
pub(super) fn names_noatime(root: &Sysroot, dir: &str) -> Vec<String> {
    let Ok(fd) = open_dir_noatime(CWD, &root.path(dir), true) else {
        return Vec::new();
    };
    fs::names(fd.as_fd())
        .unwrap_or_default()
        .into_iter()
        .map(|n| String::from_utf8_lossy(n.to_bytes()).into_owned())
        .collect()
}
