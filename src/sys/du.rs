//! Disk usage of a tree, with the accounting of `du -s -x -B1`: allocated
//! blocks (st_blocks * 512), the directory itself included, hard links counted
//! once, other mounts not crossed, symlinks not followed.
//!
//! Written by hand rather than with walkdir/jwalk: those stat by path and cannot
//! count hard links once or stop at mount boundaries for free; here every stat is
//! an `fstatat` relative to an open directory, like GNU du's fts.
//!
//! Like du, the walk costs one `fstatat` per entry and one `getdents` per
//! directory, almost all of it kernel time, so a second core is the only way to
//! go faster than du: directories are shared between up to
//! `available_parallelism` threads through one LIFO stack. Helpers start only
//! once the tree has proved big, so a small tree costs no thread start-up.
//! rayon or crossbeam-deque were not used: the unit of work is a whole directory
//! (a hundred syscalls), so one mutex taken once per directory costs nothing
//! measurable, and an explicit stack (rather than rayon's recursion) keeps
//! the walk off the call stack and the number of open directories bounded
//! however deep the tree is.

use std::collections::HashSet;
use std::ffi::{CStr, CString, OsStr};
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use anyhow::{Context, Result};
use rustix::fs::{AtFlags, CWD, FileType, RawDir, Stat};
use rustix::io::Errno;

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Allocated bytes, as `du -s -x -B1`.
    pub bytes: u64,
    /// Inodes (files, directories, links...), hard links once, as `du -s -x --inodes`.
    pub inodes: u64,
    /// Oldest modification time seen, seconds since the epoch.
    pub oldest_mtime: Option<i64>,
    /// Directories that could not be read (permissions, races); their contents are not counted.
    pub unreadable_dirs: u64,
}

impl Usage {
    fn merge(&mut self, o: &Usage) {
        self.bytes += o.bytes;
        self.inodes += o.inodes;
        self.unreadable_dirs += o.unreadable_dirs;
        if let Some(m) = o.oldest_mtime {
            self.note_mtime(m);
        }
    }

    fn note_mtime(&mut self, m: i64) {
        if self.oldest_mtime.is_none_or(|o| m < o) {
            self.oldest_mtime = Some(m);
        }
    }
}

/// Entries stat'ed by every walk in this process so far, for progress
/// displays (`collect` on a terminal). Added to once per directory, not per
/// entry, so the threads of a walk do not contend on it.
pub static ENTRIES_WALKED: AtomicU64 = AtomicU64::new(0);

/// Measure a directory tree. Errors only when the top itself cannot be read.
pub fn usage(root: &Path) -> Result<Usage> {
    usage_with(root, &Config::for_this_process())
}

/// Above this many threads the fd budget per thread shrinks and the single
/// queue would start to matter; only 2 cores were measured.
const MAX_THREADS: usize = 8;

/// Below the open-depth limit a relative path from the nearest directory kept
/// open is used; once it would grow past this many bytes (PATH_MAX is 4096)
/// that directory is kept open too, so any depth can be walked.
const REL_PATH_LIMIT: usize = 2048;

#[derive(Debug, Clone)]
struct Config {
    threads: usize,
    /// Directories shallower than this stay open while their subdirectories
    /// wait in the queue; deeper ones are reopened by a relative path.
    max_open_depth: usize,
    /// Helper threads start once the calling thread has counted this many
    /// entries and has directories queued: a thread costs about as much as a
    /// hundred stats.
    spawn_after_entries: u64,
}

impl Config {
    fn for_this_process() -> Config {
        let threads = std::thread::available_parallelism()
            .map_or(1, NonZeroUsize::get)
            .min(MAX_THREADS);
        let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX);
        // Each thread's DFS keeps about one directory open per level of its
        // current path; leave three quarters of the fd limit to the rest of
        // the program (1024 / 4 / 2 threads = 128, the old single-thread value).
        let per_thread = usize::try_from(nofile / 4).unwrap_or(usize::MAX) / threads;
        Config {
            threads,
            max_open_depth: per_thread.clamp(8, 128),
            spawn_after_entries: 256,
        }
    }
}

#[cfg(test)]
use rustix::fs::{Mode, OFlags};

/// How the tests open a directory as the walk does.
#[cfg(test)]
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// A directory of the walk, its access time left alone (see
/// [`super::fs::open_dir_noatime`]).
fn open_dir<P: rustix::path::Arg + Copy>(
    at: BorrowedFd<'_>,
    path: P,
) -> rustix::io::Result<OwnedFd> {
    super::fs::open_dir_noatime(at, path, false)
}

/// Open directories kept by the walk, now and at most (tests check the bound).
#[derive(Default)]
struct FdCount {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl FdCount {
    fn add(&self) {
        let n = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(n, Ordering::Relaxed);
    }
}

/// A directory whose subdirectories wait in the queue, and how to reach it.
struct DirRef<'a> {
    at: At<'a>,
    fds: &'a FdCount,
}

enum At<'a> {
    Open(OwnedFd),
    /// `rel` below `anchor`, which is always `At::Open`.
    Below {
        anchor: Arc<DirRef<'a>>,
        rel: PathBuf,
    },
}

impl Drop for DirRef<'_> {
    fn drop(&mut self) {
        if matches!(self.at, At::Open(_)) {
            self.fds.now.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl<'a> DirRef<'a> {
    fn open(fd: OwnedFd, fds: &'a FdCount) -> DirRef<'a> {
        fds.add();
        DirRef {
            at: At::Open(fd),
            fds,
        }
    }

    fn fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.at {
            At::Open(fd) => Some(fd.as_fd()),
            At::Below { .. } => None,
        }
    }

    fn open_child(&self, name: &CStr) -> rustix::io::Result<OwnedFd> {
        match &self.at {
            At::Open(fd) => open_dir(fd.as_fd(), name),
            At::Below { anchor, rel } => {
                let fd = anchor.fd().ok_or(Errno::BADF)?;
                let path = rel.join(OsStr::from_bytes(name.to_bytes()));
                open_dir(fd, &path)
            }
        }
    }
}

/// A subdirectory found by `read`: (name, inode, its breakdown directory id).
type Sub = (CString, u64, u32);

/// A directory with totals of its own in a breakdown: (parent id, name).
type DirEntry = (u32, CString);

/// A subdirectory already counted (stat'ed in its parent), still to be read.
struct Job<'a> {
    parent: Arc<DirRef<'a>>,
    name: CString,
    ino: u64,
    depth: usize,
    /// The [`breakdown`] directory its entries are counted in (0 when off).
    dir: u32,
}

struct Queue<'a> {
    jobs: Vec<Job<'a>>,
    /// Threads holding a job: they may still push more.
    busy: usize,
    idle: usize,
    done: bool,
}

struct Shared<'a> {
    dev: u64,
    cfg: Config,
    fds: &'a FdCount,
    /// Inode numbers of multiply-linked non-directories already counted (all
    /// on `dev`: other filesystems are skipped). Only taken for nlink > 1.
    links: Mutex<HashSet<u64>>,
    queue: Mutex<Queue<'a>>,
    wake: Condvar,
    /// Directories down to this depth get their own totals (0: plain usage).
    detail_depth: usize,
    /// Those directories, as (parent id, name); id 0 is the root.
    dirs: Mutex<Vec<(u32, CString)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<'a> Shared<'a> {
    /// Hand back the finished job's subdirectories and take the next job (the
    /// last pushed: depth first keeps few directories open). None when the
    /// whole tree is done. Also returns how many jobs are left queued.
    fn next(&self, finished: bool, children: &mut Vec<Job<'a>>) -> (Option<Job<'a>>, usize) {
        let mut q = lock(&self.queue);
        if finished {
            q.busy -= 1;
        }
        q.jobs.append(children);
        if q.idle > 0 && q.jobs.len() > 1 {
            self.wake.notify_all();
        }
        loop {
            if let Some(j) = q.jobs.pop() {
                q.busy += 1;
                return (Some(j), q.jobs.len());
            }
            if q.busy == 0 || q.done {
                q.done = true;
                self.wake.notify_all();
                return (None, 0);
            }
            q.idle += 1;
            q = self.wake.wait(q).unwrap_or_else(PoisonError::into_inner);
            q.idle -= 1;
        }
    }
}

/// One thread's share of the walk.
struct Worker {
    usage: Usage,
    buf: Vec<u8>,
    tally: Option<breakdown::Tally>,
}

impl Worker {
    fn new(shared: &Shared) -> Worker {
        Worker {
            usage: Usage::default(),
            buf: Vec::with_capacity(32 << 10),
            tally: (shared.detail_depth > 0).then(breakdown::Tally::default),
        }
    }

    /// A directory whose contents are not counted (permissions, races),
    /// charged to its breakdown directory so a report can say which;
    /// `itself`: that is the unreadable directory, not an ancestor of it.
    fn unreadable(&mut self, dir: u32, itself: bool) {
        self.usage.unreadable_dirs += 1;
        if let Some(t) = &mut self.tally {
            t.note_unreadable(dir, itself);
        }
    }

    /// Count one entry; false when it was a hard link already counted.
    fn account(&mut self, shared: &Shared, st: &Stat, dir: u32) -> bool {
        let is_dir = FileType::from_raw_mode(st.st_mode) == FileType::Directory;
        if !is_dir && st.st_nlink > 1 && !lock(&shared.links).insert(st.st_ino) {
            return false;
        }
        self.usage.bytes += (st.st_blocks as u64) * 512;
        self.usage.inodes += 1;
        self.usage.note_mtime(st.st_mtime);
        if let Some(t) = &mut self.tally {
            t.note(st, dir);
        }
        true
    }

    /// Count every entry of the open directory `fd` and return its
    /// subdirectories on our filesystem, (name, inode), still to be read.
    fn read(&mut self, shared: &Shared, fd: &OwnedFd, here: u32, depth: usize) -> Vec<Sub> {
        let mut subdirs = Vec::new();
        let mut unreadable = false;
        let mut seen = 0u64;
        // One reused 32 KiB getdents buffer, read straight from `fd`: as GNU du
        // does, one or two getdents calls per directory and no reopen of "."
        // (rustix's Dir starts at 768 bytes and dups the fd).
        let mut buf = std::mem::take(&mut self.buf);
        let mut dir = RawDir::new(fd, buf.spare_capacity_mut());
        while let Some(ent) = dir.next() {
            let Ok(ent) = ent else {
                unreadable = true;
                break;
            };
            let name: &CStr = ent.file_name();
            let b = name.to_bytes();
            if b == b"." || b == b".." {
                continue;
            }
            // Every entry needs its stat (du counts the blocks of each), so
            // d_type saves nothing here.
            let st = match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(Errno::NOENT) => continue, // vanished while we walked
                Err(_) => {
                    // e.g. a directory we may list but not search (r--): du
                    // cannot count its entries either.
                    unreadable = true;
                    continue;
                }
            };
            seen += 1;
            if st.st_dev != shared.dev {
                continue; // a mount point: du -x does not count it
            }
            if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
                // A directory shallow enough gets its own totals, its own
                // inode included (as `du -s DIR` counts it).
                let own = if depth < shared.detail_depth {
                    let mut dirs = lock(&shared.dirs);
                    dirs.push((here, name.to_owned()));
                    u32::try_from(dirs.len() - 1).unwrap_or(here)
                } else {
                    here
                };
                self.account(shared, &st, own);
                subdirs.push((name.to_owned(), st.st_ino, own));
            } else if self.account(shared, &st, here)
                && let Some(t) = &mut self.tally
            {
                t.note_file(&st, fd, name);
            }
        }
        self.buf = buf;
        ENTRIES_WALKED.fetch_add(seen, Ordering::Relaxed);
        if unreadable {
            self.unreadable(here, depth <= shared.detail_depth);
        }
        subdirs
    }

    /// Read one queued directory; its subdirectories are appended to `out`.
    fn run<'a>(&mut self, shared: &Shared<'a>, job: Job<'a>, out: &mut Vec<Job<'a>>) {
        let fd = match job.parent.open_child(&job.name) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return, // removed since its parent was read
            Err(_) => {
                self.unreadable(job.dir, job.depth <= shared.detail_depth);
                return;
            }
        };
        // It was stat'ed as a directory on our filesystem; if something was
        // renamed or mounted over it since, this is not that directory (GNU
        // fts makes the same check).
        match rustix::fs::fstat(&fd) {
            Ok(st) if st.st_dev == shared.dev && st.st_ino == job.ino => {}
            _ => {
                self.usage.unreadable_dirs += 1;
                return;
            }
        }
        let subdirs = self.read(shared, &fd, job.dir, job.depth);
        if subdirs.is_empty() {
            return;
        }
        let depth = job.depth;
        let here = if depth < shared.cfg.max_open_depth {
            DirRef::open(fd, shared.fds)
        } else {
            let name = OsStr::from_bytes(job.name.to_bytes());
            let (anchor, rel) = match &job.parent.at {
                At::Open(_) => (job.parent.clone(), PathBuf::from(name)),
                At::Below { anchor, rel } => (anchor.clone(), rel.join(name)),
            };
            if rel.as_os_str().len() > REL_PATH_LIMIT {
                // Too long to reopen through: keep this one open instead.
                DirRef::open(fd, shared.fds)
            } else {
                DirRef {
                    at: At::Below { anchor, rel },
                    fds: shared.fds,
                }
            }
        };
        let here = Arc::new(here);
        out.extend(subdirs.into_iter().map(|(name, ino, dir)| Job {
            parent: here.clone(),
            name,
            ino,
            depth: depth + 1,
            dir,
        }));
    }
}

/// Take jobs until the tree is done. `grow` is called after each directory
/// with the number of queued jobs (the calling thread uses it to start helpers).
fn work<'a>(shared: &Shared<'a>, w: &mut Worker, mut grow: impl FnMut(&Worker, usize)) {
    let mut children = Vec::new();
    let (mut job, mut queued) = shared.next(false, &mut children);
    while let Some(j) = job {
        w.run(shared, j, &mut children);
        grow(w, queued + children.len());
        (job, queued) = shared.next(true, &mut children);
    }
}

fn usage_with(root: &Path, cfg: &Config) -> Result<Usage> {
    Ok(walk(root, cfg)?.usage)
}

/// What a walk found, and how it went (for tests).
struct Walk {
    usage: Usage,
    /// Most directories held open at once (queued subdirectories' parents).
    // Read by the tests only: they prove the fd bound and the lazy thread start.
    #[cfg_attr(not(test), allow(dead_code))]
    peak_open_dirs: usize,
    #[cfg_attr(not(test), allow(dead_code))]
    helpers: usize,
}

fn walk(root: &Path, cfg: &Config) -> Result<Walk> {
    Ok(walk_detailed(root, cfg, 0)?.0)
}

/// The walk, with per-owner and per-directory totals down to `detail_depth`
/// (0: none) gathered by the same stats.
fn walk_detailed(
    root: &Path,
    cfg: &Config,
    detail_depth: usize,
) -> Result<(Walk, Vec<breakdown::Tally>, Vec<DirEntry>)> {
    let st = rustix::fs::statat(CWD, root, AtFlags::empty())
        .with_context(|| format!("cannot stat {}", root.display()))?;
    let fds = FdCount::default();
    let shared = Shared {
        dev: st.st_dev,
        cfg: cfg.clone(),
        fds: &fds,
        links: Mutex::new(HashSet::new()),
        queue: Mutex::new(Queue {
            jobs: Vec::new(),
            busy: 0,
            idle: 0,
            done: false,
        }),
        wake: Condvar::new(),
        detail_depth,
        dirs: Mutex::new(vec![(0, CString::default())]),
    };
    let mut main = Worker::new(&shared);
    main.account(&shared, &st, 0);
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        let walk = Walk {
            usage: main.usage,
            peak_open_dirs: 0,
            helpers: 0,
        };
        return Ok((walk, main.tally.into_iter().collect(), Vec::new()));
    }
    let fd =
        open_dir(CWD, root).with_context(|| format!("cannot open directory {}", root.display()))?;
    let subdirs = main.read(&shared, &fd, 0, 0);
    if !subdirs.is_empty() {
        let here = Arc::new(DirRef::open(fd, &fds));
        lock(&shared.queue)
            .jobs
            .extend(subdirs.into_iter().map(|(name, ino, dir)| Job {
                parent: here.clone(),
                name,
                ino,
                depth: 1,
                dir,
            }));
    }
    let mut total = Usage::default();
    let mut tallies = Vec::new();
    let mut helper_count = 0;
    std::thread::scope(|s| {
        let mut helpers = Vec::new();
        let mut started = false;
        let shared = &shared;
        work(shared, &mut main, |w, queued| {
            if !started
                && cfg.threads > 1
                && queued > 0
                && w.usage.inodes >= cfg.spawn_after_entries
            {
                started = true;
                for _ in 1..cfg.threads {
                    let b = std::thread::Builder::new().name("du".into());
                    // Without a helper the calling thread simply does it all.
                    if let Ok(h) = b.spawn_scoped(s, move || {
                        let mut w = Worker::new(shared);
                        work(shared, &mut w, |_, _| {});
                        (w.usage, w.tally)
                    }) {
                        helpers.push(h);
                    }
                }
            }
        });
        total.merge(&main.usage);
        tallies.extend(main.tally.take());
        helper_count = helpers.len();
        for h in helpers {
            match h.join() {
                Ok((u, t)) => {
                    total.merge(&u);
                    tallies.extend(t);
                }
                Err(p) => std::panic::resume_unwind(p),
            }
        }
    });
    let walk = Walk {
        usage: total,
        peak_open_dirs: fds.peak.load(Ordering::Relaxed),
        helpers: helper_count,
    };
    let dirs = std::mem::take(&mut *lock(&shared.dirs));
    Ok((walk, tallies, dirs))
}

mod breakdown;
pub use breakdown::{Breakdown, LARGEST_FILES, breakdown};

#[cfg(test)]
mod tests;
