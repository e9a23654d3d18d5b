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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use anyhow::{Context, Result};
use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, RawDir, Stat};
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

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

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
            At::Open(fd) => rustix::fs::openat(fd, name, DIR_FLAGS, Mode::empty()),
            At::Below { anchor, rel } => {
                let fd = anchor.fd().ok_or(Errno::BADF)?;
                let path = rel.join(OsStr::from_bytes(name.to_bytes()));
                rustix::fs::openat(fd, &path, DIR_FLAGS, Mode::empty())
            }
        }
    }
}

/// A subdirectory already counted (stat'ed in its parent), still to be read.
struct Job<'a> {
    parent: Arc<DirRef<'a>>,
    name: CString,
    ino: u64,
    depth: usize,
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
}

impl Worker {
    fn new() -> Worker {
        Worker {
            usage: Usage::default(),
            buf: Vec::with_capacity(32 << 10),
        }
    }

    fn account(&mut self, shared: &Shared, st: &Stat) {
        let is_dir = FileType::from_raw_mode(st.st_mode) == FileType::Directory;
        if !is_dir && st.st_nlink > 1 && !lock(&shared.links).insert(st.st_ino) {
            return;
        }
        self.usage.bytes += (st.st_blocks as u64) * 512;
        self.usage.inodes += 1;
        self.usage.note_mtime(st.st_mtime);
    }

    /// Count every entry of the open directory `fd` and return its
    /// subdirectories on our filesystem, (name, inode), still to be read.
    fn read(&mut self, shared: &Shared, fd: &OwnedFd) -> Vec<(CString, u64)> {
        let mut subdirs = Vec::new();
        let mut unreadable = false;
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
            if st.st_dev != shared.dev {
                continue; // a mount point: du -x does not count it
            }
            self.account(shared, &st);
            if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
                subdirs.push((name.to_owned(), st.st_ino));
            }
        }
        self.buf = buf;
        if unreadable {
            self.usage.unreadable_dirs += 1;
        }
        subdirs
    }

    /// Read one queued directory; its subdirectories are appended to `out`.
    fn run<'a>(&mut self, shared: &Shared<'a>, job: Job<'a>, out: &mut Vec<Job<'a>>) {
        let fd = match job.parent.open_child(&job.name) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return, // removed since its parent was read
            Err(_) => {
                self.usage.unreadable_dirs += 1;
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
        let subdirs = self.read(shared, &fd);
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
        out.extend(subdirs.into_iter().map(|(name, ino)| Job {
            parent: here.clone(),
            name,
            ino,
            depth: depth + 1,
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
    };
    let mut main = Worker::new();
    main.account(&shared, &st);
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return Ok(Walk {
            usage: main.usage,
            peak_open_dirs: 0,
            helpers: 0,
        });
    }
    let fd = rustix::fs::openat(CWD, root, DIR_FLAGS, Mode::empty())
        .with_context(|| format!("cannot open directory {}", root.display()))?;
    let subdirs = main.read(&shared, &fd);
    if !subdirs.is_empty() {
        let here = Arc::new(DirRef::open(fd, &fds));
        lock(&shared.queue)
            .jobs
            .extend(subdirs.into_iter().map(|(name, ino)| Job {
                parent: here.clone(),
                name,
                ino,
                depth: 1,
            }));
    }
    let mut total = Usage::default();
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
                        let mut w = Worker::new();
                        work(shared, &mut w, |_, _| {});
                        w.usage
                    }) {
                        helpers.push(h);
                    }
                }
            }
        });
        total.merge(&main.usage);
        helper_count = helpers.len();
        for h in helpers {
            match h.join() {
                Ok(u) => total.merge(&u),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
    });
    Ok(Walk {
        usage: total,
        peak_open_dirs: fds.peak.load(Ordering::Relaxed),
        helpers: helper_count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::process::Command;

    /// Forces helpers to start at once, so even small trees are shared
    /// between threads.
    fn parallel() -> Config {
        Config {
            threads: 2,
            max_open_depth: 128,
            spawn_after_entries: 0,
        }
    }

    fn serial() -> Config {
        Config {
            threads: 1,
            ..parallel()
        }
    }

    /// (bytes, inodes) as `du -s -x` reports them, run as `uid` when given.
    /// du exits 1 on unreadable directories but still prints its total.
    fn gnu_du(path: &Path, as_uid: Option<u32>) -> (u64, u64) {
        let run = |opt: &str| {
            let mut c = match as_uid {
                Some(uid) => {
                    let mut c = Command::new("setpriv");
                    c.args([
                        format!("--reuid={uid}"),
                        format!("--regid={uid}"),
                        "--clear-groups".into(),
                        "du".into(),
                    ]);
                    c
                }
                None => Command::new("du"),
            };
            let out = c.args(["-s", "-x", opt]).arg(path).output().unwrap();
            let text = String::from_utf8(out.stdout).unwrap();
            let first = text.split_whitespace().next();
            first
                .unwrap_or_else(|| panic!("du {opt} {}: no output", path.display()))
                .parse::<u64>()
                .unwrap()
        };
        (run("-B1"), run("--inodes"))
    }

    fn assert_matches_du(path: &Path, cfg: &Config) -> Walk {
        let w = walk(path, cfg).unwrap();
        let (bytes, inodes) = gnu_du(path, None);
        assert_eq!(
            (w.usage.bytes, w.usage.inodes),
            (bytes, inodes),
            "{cfg:?} on {}",
            path.display()
        );
        w
    }

    fn is_root() -> bool {
        rustix::process::geteuid().is_root()
    }

    #[test]
    fn counts_hard_links_once_and_skips_symlink_targets() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::create_dir_all(d.join("a/b/c")).unwrap();
        std::fs::write(d.join("a/f1"), vec![7u8; 100_000]).unwrap();
        std::fs::hard_link(d.join("a/f1"), d.join("a/b/f1-link")).unwrap();
        std::os::unix::fs::symlink("/usr", d.join("a/usr-link")).unwrap();
        let u = usage(d).unwrap();
        // root, a, b, c, f1 (once), symlink
        assert_eq!(u.inodes, 6);
        let f1 = std::fs::metadata(d.join("a/f1")).unwrap();
        assert!(u.bytes >= f1.blocks() * 512);
        assert!(u.bytes < 2 * f1.blocks() * 512 + 64 * 4096, "{u:?}");
        assert_eq!(u.unreadable_dirs, 0);
        assert!(u.oldest_mtime.is_some());
    }

    #[test]
    fn missing_root_is_an_error_naming_it() {
        let e = usage(Path::new("/nonexistent/xyz")).unwrap_err();
        assert!(format!("{e:#}").contains("/nonexistent/xyz"));
    }

    /// 60 directories of 40 files (sizes 0..20 KiB, some sparse), hard links
    /// whose names sit in directories far apart (so in jobs that different
    /// threads take), a FIFO, and symlink loops.
    fn generated_tree(d: &Path) {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for i in 0..60 {
            let dir = d.join(format!("g{}/d{i}", i % 6));
            std::fs::create_dir_all(&dir).unwrap();
            for j in 0..40 {
                let len = (rnd() % 20_000) as usize;
                std::fs::write(dir.join(format!("f{j}")), vec![1u8; len]).unwrap();
            }
            let sparse = std::fs::File::create(dir.join("sparse")).unwrap();
            sparse.set_len(1 << 20).unwrap();
        }
        for k in 0..30 {
            let (a, b) = (k * 2 % 60, (k * 2 + 31) % 60);
            let src = d.join(format!("g{}/d{a}/f{k}", a % 6));
            for n in 0..3 {
                let bb = (b + n * 7) % 60;
                let dst = d.join(format!("g{}/d{bb}/link{k}-{n}", bb % 6));
                std::fs::hard_link(&src, dst).unwrap();
            }
        }
        // A hard link right next to its twin at the top, too.
        std::fs::write(d.join("top"), vec![2u8; 50_000]).unwrap();
        std::fs::hard_link(d.join("top"), d.join("top2")).unwrap();
        rustix::fs::mknodat(
            CWD,
            d.join("fifo").as_path(),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let s =
            |target: &str, name: &str| std::os::unix::fs::symlink(target, d.join(name)).unwrap();
        s(".", "self");
        s("..", "up");
        s("loop", "loop");
        s("ping", "pong");
        s("pong", "ping");
        s("g1", "g0/d0/to-sibling");
        std::os::unix::fs::symlink("../../..", d.join("g0/d0/back-to-top")).unwrap();
    }

    #[test]
    fn matches_du_with_hard_links_across_threads_and_symlink_loops() {
        let t = tempfile::tempdir().unwrap();
        generated_tree(t.path());
        let s = assert_matches_du(t.path(), &serial());
        assert_eq!(s.helpers, 0);
        // Races between the threads over the shared link set would show as a
        // varying count: repeat.
        for _ in 0..20 {
            let p = assert_matches_du(t.path(), &parallel());
            assert_eq!(p.helpers, 1);
            assert_eq!(p.usage, s.usage);
        }
        let d = assert_matches_du(t.path(), &Config::for_this_process());
        assert_eq!(d.usage, s.usage);
        // 1 + 6 + 60 dirs, 60 * 41 files, top/top2 once, fifo, 7 symlinks;
        // the 90 extra names are links to counted files.
        assert_eq!(s.usage.inodes, 1 + 6 + 60 + 60 * 41 + 1 + 1 + 7);
        assert_eq!(s.usage.unreadable_dirs, 0);
    }

    #[test]
    fn small_tree_starts_no_thread_and_big_one_does() {
        let t = tempfile::tempdir().unwrap();
        for i in 0..10 {
            std::fs::create_dir(t.path().join(format!("d{i}"))).unwrap();
            std::fs::write(t.path().join(format!("d{i}/f")), b"x").unwrap();
        }
        let cfg = Config {
            spawn_after_entries: 256,
            ..parallel()
        };
        assert_eq!(assert_matches_du(t.path(), &cfg).helpers, 0);
        generated_tree(t.path());
        assert_eq!(assert_matches_du(t.path(), &cfg).helpers, 1);
    }

    #[test]
    fn a_file_root_is_its_own_usage() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("f");
        std::fs::write(&f, vec![3u8; 70_000]).unwrap();
        let w = assert_matches_du(&f, &parallel());
        assert_eq!(w.usage.inodes, 1);
    }

    /// 300 levels of 60-byte names: the path (18 KB) is far past PATH_MAX, so
    /// it can only be walked relative to directories kept open.
    #[test]
    fn deep_tree_matches_du_with_few_open_directories() {
        let t = tempfile::tempdir().unwrap();
        let name = "n".repeat(60);
        let mut fd = rustix::fs::openat(CWD, t.path(), DIR_FLAGS, Mode::empty()).unwrap();
        for level in 0..300 {
            // Leaf siblings at each level: whichever of them getdents lists
            // before the deep one are still queued while it is walked, so
            // their parent (this level) must stay reachable.
            // Names differ per level so the hash order differs too.
            for k in 0..3 {
                let leaf = format!("leaf{level}-{k}");
                rustix::fs::mkdirat(&fd, leaf.as_str(), Mode::from_raw_mode(0o755)).unwrap();
            }
            let leaf = format!("leaf{level}-0");
            let leaf = rustix::fs::openat(&fd, leaf.as_str(), DIR_FLAGS, Mode::empty()).unwrap();
            let file = rustix::fs::openat(
                &leaf,
                "f",
                OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            )
            .unwrap();
            rustix::io::write(&file, &vec![5u8; level * 10]).unwrap();
            rustix::fs::mkdirat(&fd, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
            fd = rustix::fs::openat(&fd, name.as_str(), DIR_FLAGS, Mode::empty()).unwrap();
        }
        drop(fd);
        let def = assert_matches_du(t.path(), &Config::for_this_process());
        assert_eq!(def.usage.unreadable_dirs, 0);
        assert_eq!(def.usage.inodes, 1 + 300 * 5);
        // Without the limit, parents pile up: the limit below is what bounds
        // them. (One thread: a helper would take the leaves early.)
        let unbounded = Config {
            max_open_depth: 1000,
            ..serial()
        };
        assert!(walk(t.path(), &unbounded).unwrap().peak_open_dirs > 100);
        for threads in [1, 2] {
            let cfg = Config {
                threads,
                max_open_depth: 4,
                spawn_after_entries: 0,
            };
            let w = assert_matches_du(t.path(), &cfg);
            assert_eq!(w.usage, def.usage);
            // 4 levels per thread, plus one anchor per 2048 bytes of path
            // below them (61 bytes a level: 9 anchors over 300 levels).
            assert!(w.peak_open_dirs <= threads * 4 + 10, "{}", w.peak_open_dirs);
        }
    }

    struct Mounted(PathBuf);
    impl Drop for Mounted {
        fn drop(&mut self) {
            let _ = rustix::mount::unmount(&self.0, rustix::mount::UnmountFlags::DETACH);
        }
    }

    #[test]
    fn nested_tmpfs_is_not_crossed() {
        if !is_root() {
            eprintln!("skipped: mounting a tmpfs needs root");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        generated_tree(t.path());
        let before = walk(t.path(), &serial()).unwrap().usage;
        let mnt = t.path().join("g2/d2/mnt");
        std::fs::create_dir(&mnt).unwrap();
        rustix::mount::mount(
            "tmpfsctl-du-test",
            &mnt,
            "tmpfs",
            rustix::mount::MountFlags::empty(),
            c"size=4M",
        )
        .unwrap();
        let _m = Mounted(mnt.clone());
        std::fs::create_dir(mnt.join("inside")).unwrap();
        std::fs::write(mnt.join("inside/big"), vec![9u8; 1 << 20]).unwrap();
        let p = assert_matches_du(t.path(), &parallel());
        // The mount point itself is not counted either (du -x skips it).
        assert_eq!(p.usage.inodes, before.inodes);
        assert_eq!(p.usage.bytes, before.bytes);
        assert_matches_du(t.path(), &serial());
    }

    #[test]
    fn unreadable_directories_as_non_root_match_du() {
        if !is_root() {
            eprintln!("skipped: making a directory unreadable to us needs another uid (root)");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        generated_tree(d);
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        // For "other" (nobody): nothing, write+search but no read, and read
        // (names listed) but no search (entries cannot be stat'ed).
        for (dir, mode) in [("g1/d1", 0o700), ("g2/d2", 0o733), ("g3/d3", 0o744)] {
            std::fs::set_permissions(d.join(dir), std::fs::Permissions::from_mode(mode)).unwrap();
        }
        const NOBODY: u32 = 65534;
        let (bytes, inodes) = gnu_du(d, Some(NOBODY));
        let root = d.to_path_buf();
        // Credentials are per thread in the kernel (rustix makes the raw
        // syscall, not glibc's process-wide setuid), and the walker's helper
        // threads inherit them from this one.
        let w = std::thread::spawn(move || {
            use rustix::process::{Gid, Uid};
            rustix::thread::set_thread_groups(&[]).unwrap();
            let gid = Gid::from_raw(NOBODY);
            rustix::thread::set_thread_res_gid(gid, gid, gid).unwrap();
            let uid = Uid::from_raw(NOBODY);
            rustix::thread::set_thread_res_uid(uid, uid, uid).unwrap();
            (
                walk(&root, &parallel()).unwrap(),
                walk(&root, &serial()).unwrap(),
            )
        })
        .join()
        .unwrap();
        for walked in [&w.0, &w.1] {
            assert_eq!((walked.usage.bytes, walked.usage.inodes), (bytes, inodes));
            assert_eq!(walked.usage.unreadable_dirs, 3, "{:?}", walked.usage);
        }
        // As root everything is readable: more is counted.
        let all = assert_matches_du(d, &parallel());
        assert!(all.usage.inodes > inodes);
        assert_eq!(all.usage.unreadable_dirs, 0);
    }
}
