//! The measuring loop. A run does a fixed amount of work between two clock
//! reads (no clock read per I/O); latency is sampled in a separate pass that
//! reads the clock around every op and subtracts the measured cost of doing so.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, RngExt, SeedableRng};
use rustix::fs::{AtFlags, Mode, OFlags};

use super::stock::Stock;
use super::workload::{CacheWant, KEEP_RUN_DIRS, Op, Sync, Workload};
use crate::sys::signals::Interrupted;

/// Random bytes written by every write workload: random so compression or
/// dedup cannot shorten the work, and stamped per block so no two blocks match.
const POOL_BYTES: usize = 8 << 20;
const ALIGN: usize = 4096;
/// Op-counted runs are sized so that about this many fit into --min-time.
pub const OP_RUNS_PER_MIN_TIME: u32 = 10;
/// Untimed warm-up of op-counted workloads: this share of --min-time ...
const WARMUP_SHARE_OF_MIN_TIME: u64 = 5;
/// ... but never more runs than this.
const MAX_WARMUP_RUNS: u32 = 20;

/// A 4 KiB-aligned byte buffer (O_DIRECT needs aligned memory) without unsafe:
/// over-allocate a Vec and start at the first aligned byte.
pub struct AlignedBuf {
    raw: Vec<u8>,
    off: usize,
    len: usize,
}

impl AlignedBuf {
    pub fn new(len: usize) -> AlignedBuf {
        let raw = vec![0u8; len + ALIGN];
        let off = raw.as_ptr().align_offset(ALIGN);
        AlignedBuf { raw, off, len }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.raw[self.off..self.off + self.len]
    }
}

struct Pool {
    buf: AlignedBuf,
    counter: u64,
    nonce: u64,
}

impl Pool {
    fn new(max_bs: usize, rng: &mut SmallRng) -> Pool {
        let mut buf = AlignedBuf::new(POOL_BYTES + max_bs);
        rng.fill_bytes(buf.as_mut_slice());
        Pool {
            buf,
            counter: 0,
            nonce: rng.random(),
        }
    }

    /// The next block to write: an aligned window into the pool whose first
    /// 16 bytes are replaced with a unique (nonce, counter) stamp.
    fn block(&mut self, bs: usize) -> &[u8] {
        let slots = (POOL_BYTES / ALIGN) as u64;
        // A multiplier coprime to `slots` walks every slot before repeating.
        let slot = (self.counter.wrapping_mul(40_503)) % slots;
        let off = slot as usize * ALIGN;
        self.counter += 1;
        let b = &mut self.buf.as_mut_slice()[off..off + bs];
        if bs >= 16 {
            b[..8].copy_from_slice(&self.nonce.to_le_bytes());
            b[8..16].copy_from_slice(&self.counter.to_le_bytes());
        }
        b
    }
}

/// How to reach and label the cache state of reads on one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheMode {
    /// Writes, or RAM-backed targets.
    NotApplicable(&'static str),
    /// posix_fadvise(DONTNEED) before each run, checked with mincore.
    Evict,
    /// O_DIRECT reads bypass the page cache.
    Direct,
    /// Served from the page cache (wanted, or eviction did not work).
    Warm,
}

/// Everything a measuring thread owns.
struct Worker {
    dir: PathBuf,
    dirfd: OwnedFd,
    files: Vec<PathBuf>,
    open: Vec<File>,
    pool: Pool,
    io: AlignedBuf,
    rng: SmallRng,
    offsets: Vec<(u32, u64)>,
    names: Vec<CString>,
    /// Small-file and metadata runs work in a fresh directory per run (see `before_run`).
    run_dir: Option<(CString, OwnedFd)>,
    /// Emptied run directories kept until later (see `after_run`).
    old_run_dirs: std::collections::VecDeque<CString>,
    run_no: u64,
    /// Queue depth > 1: an io_uring and one buffer per in-flight request.
    ring: Option<io_uring::IoUring>,
    slots: Vec<AlignedBuf>,
}

pub struct Setup<'a> {
    pub w: &'a Workload,
    pub stop: &'a AtomicBool,
    pub direct: bool,
}

fn check_stop(stop: &AtomicBool) -> Result<()> {
    if stop.load(Ordering::Relaxed) {
        anyhow::bail!(Interrupted);
    }
    Ok(())
}

fn io_err(e: std::io::Error, what: &str, p: &Path) -> anyhow::Error {
    if e.raw_os_error() == Some(libc::ENOSPC) {
        anyhow::anyhow!(
            "{what} {}: no space left on device (ENOSPC) although free space was checked before; \
             something else filled the filesystem. The run was stopped and its files removed.",
            p.display()
        )
    } else {
        anyhow::anyhow!("{what} {}: {e}", p.display())
    }
}

fn open_flags(w: &Workload, direct: bool, write: bool) -> i32 {
    let mut f = libc::O_NOFOLLOW | libc::O_CLOEXEC;
    if direct {
        f |= libc::O_DIRECT;
    }
    if write && w.sync == Sync::Dsync {
        f |= libc::O_DSYNC;
    }
    f
}

/// Whether O_DIRECT opens work on this directory (tmpfs gained it only in 6.6).
pub fn direct_supported(dir: &Path) -> bool {
    let p = dir.join(".direct-probe");
    let r = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT | libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&p);
    let ok = r.is_ok();
    let _ = std::fs::remove_file(&p);
    ok
}

/// Fraction of a file's pages in the page cache, via mmap + mincore.
pub fn resident_fraction(f: &File) -> Result<f64> {
    let len = f.metadata()?.len() as usize;
    if len == 0 {
        return Ok(0.0);
    }
    let page = rustix::param::page_size();
    let pages = len.div_ceil(page);
    // SAFETY: a read-only shared mapping of a file we hold open; we never
    // dereference it, only ask the kernel which of its pages are resident,
    // into a vector of exactly one byte per page; then unmap it.
    unsafe {
        use std::os::fd::AsRawFd;
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        if addr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context("mmap for mincore");
        }
        let mut vec = vec![0u8; pages];
        let r = libc::mincore(addr, len, vec.as_mut_ptr());
        let err = std::io::Error::last_os_error();
        libc::munmap(addr, len);
        if r != 0 {
            return Err(err).context("mincore");
        }
        Ok(vec.iter().filter(|&&b| b & 1 == 1).count() as f64 / pages as f64)
    }
}

/// Drop a file's clean pages from the page cache (flushing dirty ones first).
/// Unlike `echo 3 > /proc/sys/vm/drop_caches` this needs no root and leaves
/// every other program's cache alone.
fn evict(f: &File) -> Result<()> {
    f.sync_data()?;
    rustix::fs::fadvise(f, 0, None, rustix::fs::Advice::DontNeed)?;
    Ok(())
}

/// Read a file front to back, untimed, through the page cache.
fn read_through(p: &Path, stop: &AtomicBool) -> Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    let f = File::open(p).map_err(|e| io_err(e, "opening", p))?;
    let mut off = 0u64;
    loop {
        check_stop(stop)?;
        let n = f
            .read_at(&mut buf, off)
            .map_err(|e| io_err(e, "reading", p))?;
        if n == 0 {
            return Ok(());
        }
        off += n as u64;
    }
}

impl Worker {
    fn new(dir: PathBuf, w: &Workload, seed: u64) -> Result<Worker> {
        std::fs::create_dir(&dir).map_err(|e| io_err(e, "creating", &dir))?;
        let dirfd = rustix::fs::open(
            &dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .with_context(|| format!("opening {}", dir.display()))?;
        if matches!(w.op, Op::SmallFiles | Op::Metadata) {
            // ext4 does not reuse an inode deleted in the last 60-300 s: each
            // create scans past the recently deleted ones of its block group
            // (`recently_deleted()`), so in a directory whose group saw many
            // deletions — the previous run, the previous workload, another
            // program — creates are up to 25x slower (measured: 3.3k vs 55-110k
            // creates/s). The "top of hierarchy" flag makes ext4 (Orlov) place
            // each per-run directory in a lightly used group, so earlier runs
            // do not decide the next figure. Other filesystems ignore or refuse it.
            if let Ok(f) = rustix::fs::ioctl_getflags(&dirfd) {
                let _ = rustix::fs::ioctl_setflags(&dirfd, f | rustix::fs::IFlags::TOPDIR);
            }
        }
        let mut rng = SmallRng::seed_from_u64(seed);
        let bs = w.bs_bytes as usize;
        let files = (0..w.files)
            .map(|i| dir.join(format!("f{i}.dat")))
            .collect();
        Ok(Worker {
            pool: Pool::new(bs.max(16), &mut rng),
            io: AlignedBuf::new(bs.max(16)),
            rng,
            dir,
            dirfd,
            files,
            open: Vec::new(),
            offsets: Vec::new(),
            names: Vec::new(),
            run_dir: None,
            old_run_dirs: Default::default(),
            run_no: 0,
            ring: None,
            slots: Vec::new(),
        })
    }

    /// Set up io_uring for queue depth `qd`; false when the kernel refuses
    /// (io_uring disabled by sysctl, seccomp, old kernel).
    fn enable_uring(&mut self, w: &Workload) -> bool {
        let Ok(ring) = io_uring::IoUring::new(w.iodepth.next_power_of_two()) else {
            return false;
        };
        self.ring = Some(ring);
        let bs = w.bs_bytes as usize;
        self.slots = (0..w.iodepth)
            .map(|_| {
                let mut b = AlignedBuf::new(bs.max(16));
                self.rng.fill_bytes(b.as_mut_slice());
                b
            })
            .collect();
        true
    }

    /// The timed part for queue depth > 1: keep `iodepth` requests in flight.
    fn run_uring(
        &mut self,
        s: &Setup,
        ops: u64,
        mut lat: Option<&mut Histogram<u64>>,
        clock_ns: u64,
    ) -> Result<()> {
        use io_uring::{opcode, types};
        use std::os::fd::AsRawFd;
        let w = s.w;
        let bs = w.bs_bytes as usize;
        let write = matches!(w.op, Op::SeqWrite | Op::RandWrite);
        // Streaming workloads open their files inside the timing, as the QD1 path does.
        let mut owned: Vec<File> = Vec::new();
        let list: Vec<(u32, u64)> = match w.op {
            Op::SeqWrite | Op::SeqRead => {
                for p in &self.files {
                    let mut oo = OpenOptions::new();
                    oo.mode(0o600).custom_flags(open_flags(w, s.direct, write));
                    if write {
                        oo.write(true).create_new(true);
                    } else {
                        oo.read(true);
                    }
                    owned.push(oo.open(p).map_err(|e| io_err(e, "opening", p))?);
                }
                let per = if w.op == Op::SeqWrite && w.ops > 0 {
                    (ops / w.files).max(1) * w.bs_bytes
                } else {
                    Self::file_bytes(w)
                };
                (0..self.files.len() as u32)
                    .flat_map(|f| (0..per / w.bs_bytes).map(move |b| (f, b * w.bs_bytes)))
                    .collect()
            }
            _ => std::mem::take(&mut self.offsets),
        };
        let files: &[File] = if owned.is_empty() { &self.open } else { &owned };
        let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        let qd = self.slots.len();
        let Some(ring) = self.ring.as_mut() else {
            anyhow::bail!("io_uring not set up");
        };
        let mut free: Vec<usize> = (0..qd).collect();
        let mut started: Vec<Option<Instant>> = vec![None; qd];
        let (mut next, mut done) = (0usize, 0usize);
        let mut cqes: Vec<(u64, i32)> = Vec::with_capacity(qd);
        while done < list.len() {
            check_stop(s.stop)?;
            while next < list.len() {
                let Some(slot) = free.pop() else { break };
                let (f, off) = list[next];
                let buf = self.slots[slot].as_mut_slice();
                if write && bs >= 16 {
                    // Unique content per block (the slot is not in flight now).
                    buf[..8].copy_from_slice(&(next as u64).to_le_bytes());
                    buf[8..16].copy_from_slice(&self.run_no.to_le_bytes());
                }
                let fd = types::Fd(fds[f as usize]);
                let e = if write {
                    opcode::Write::new(fd, buf.as_ptr(), bs as u32)
                        .offset(off)
                        .build()
                } else {
                    opcode::Read::new(fd, buf.as_mut_ptr(), bs as u32)
                        .offset(off)
                        .build()
                };
                if lat.is_some() {
                    started[slot] = Some(Instant::now());
                }
                // SAFETY: the buffer is this slot's own allocation, which lives
                // in `self.slots` until the run ends; the slot is not reused
                // (or touched) until its completion is reaped below, and every
                // submitted request is reaped before this function returns.
                unsafe { ring.submission().push(&e.user_data(slot as u64)) }
                    .map_err(|_| anyhow::anyhow!("io_uring submission queue full"))?;
                next += 1;
            }
            ring.submit_and_wait(1).context("io_uring submit")?;
            cqes.clear();
            cqes.extend(ring.completion().map(|c| (c.user_data(), c.result())));
            for &(slot, res) in &cqes {
                let slot = slot as usize;
                done += 1;
                free.push(slot);
                if let (Some(h), Some(t)) = (lat.as_deref_mut(), started[slot].take()) {
                    let ns = (t.elapsed().as_nanos() as u64).saturating_sub(clock_ns);
                    let _ = h.record(ns.max(1));
                }
                if res < 0 {
                    let e = std::io::Error::from_raw_os_error(-res);
                    // Drain what is still in flight before giving up: the kernel
                    // may still use those buffers.
                    let inflight = qd - free.len();
                    if inflight > 0 {
                        let _ = ring.submit_and_wait(inflight);
                    }
                    return Err(io_err(
                        e,
                        if write { "writing" } else { "reading" },
                        &self.dir,
                    ));
                }
                if res as usize != bs {
                    let inflight = qd - free.len();
                    if inflight > 0 {
                        let _ = ring.submit_and_wait(inflight);
                    }
                    anyhow::bail!(
                        "short {} of {res} bytes in {}",
                        if write { "write" } else { "read" },
                        self.dir.display()
                    );
                }
            }
        }
        if write
            && matches!(
                w.sync,
                Sync::FsyncEnd | Sync::FsyncEach | Sync::FsyncEvery(_)
            )
        {
            for (f, p) in files.iter().zip(&self.files) {
                f.sync_all().map_err(|e| io_err(e, "fsync", p))?;
            }
        }
        Ok(())
    }

    fn file_bytes(w: &Workload) -> u64 {
        // Whole blocks only, so every read and write is a full `bs`.
        (w.size_bytes / w.files / w.bs_bytes).max(1) * w.bs_bytes
    }

    /// Write the files a read/rewrite/random workload works on (untimed),
    /// or take them from an earlier workload's stock.
    fn prepare(&mut self, s: &Setup, stock: &Stock) -> Result<()> {
        if !s.w.op.reads_existing_files() {
            return Ok(());
        }
        let bs = s.w.bs_bytes as usize;
        let per = Self::file_bytes(s.w);
        for p in self.files.clone() {
            if s.w.takes_stock() && stock.take(per, &p)? {
                continue;
            }
            let f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&p)
                .map_err(|e| io_err(e, "creating", &p))?;
            let mut off = 0;
            while off < per {
                check_stop(s.stop)?;
                f.write_all_at(self.pool.block(bs), off)
                    .map_err(|e| io_err(e, "writing", &p))?;
                off += bs as u64;
            }
            f.sync_all().map_err(|e| io_err(e, "fsync", &p))?;
        }
        Ok(())
    }

    /// Read every file front to back `passes` times (untimed). A random-I/O
    /// run over pages that were only just written got faster run by run
    /// (tmpfs 4 KiB reads: 615k to 960k IOPS over 40 runs), so the figure
    /// depended on how long the suite ran. The likely cause: the kernel
    /// marks a cached page accessed on its first read and moves it to the
    /// active list on its second, taking an LRU lock each time. Two passes
    /// lifted the first run from 615k to about 750k IOPS; six did no better,
    /// and the untimed warm-up runs take the rest of the climb.
    fn touch(&mut self, passes: u32, stop: &AtomicBool) -> Result<()> {
        for _ in 0..passes {
            for p in &self.files {
                read_through(p, stop)?;
            }
        }
        Ok(())
    }

    /// Untimed work before a run: remove the last run's output, set the cache
    /// state, open files and draw random offsets.
    fn before_run(&mut self, s: &Setup, mode: &CacheMode, ops: u64) -> Result<()> {
        self.run_no += 1;
        self.open.clear();
        let w = s.w;
        match w.op {
            Op::SeqWrite => {
                for p in &self.files {
                    match std::fs::remove_file(p) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                            return Err(io_err(e, "removing", p));
                        }
                        _ => {}
                    }
                }
            }
            Op::SmallFiles | Op::Metadata => {
                let n = ops as usize;
                let r = self.run_no;
                self.names = (0..n)
                    .map(|i| CString::new(format!("f{i}")).unwrap_or_default())
                    .collect();
                // A random name: ext4 starts its search for a lightly used
                // group at the hash of the name, so a fixed name would pick the
                // group the previous suite run just left full of deletions.
                let tag: u64 = rand::random();
                let name = CString::new(format!("r{r}-{tag:016x}")).unwrap_or_default();
                rustix::fs::mkdirat(&self.dirfd, name.as_c_str(), Mode::from_raw_mode(0o700))
                    .map_err(|e| io_err(e.into(), "creating a run directory in", &self.dir))?;
                let fd = rustix::fs::openat(
                    &self.dirfd,
                    name.as_c_str(),
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| io_err(e.into(), "opening a run directory in", &self.dir))?;
                self.run_dir = Some((name, fd));
            }
            _ => {}
        }
        // Start every run with nothing dirty on the filesystem — after removing
        // the last run's file, so that ext4 frees (and, mounted with `discard`,
        // trims) its blocks here and not inside this run's fsync: writeback or
        // a journal commit left over from the previous run, workload or target
        // would otherwise land in this run's timing by chance.
        rustix::fs::syncfs(&self.dirfd).context("syncfs before a run")?;
        if w.op.is_read() && *mode == CacheMode::Evict {
            for p in &self.files {
                let f = File::open(p).map_err(|e| io_err(e, "opening", p))?;
                evict(&f)
                    .with_context(|| format!("evicting {} from the page cache", p.display()))?;
            }
        }
        if matches!(w.op, Op::RandRead | Op::RandWrite) {
            let write = w.op == Op::RandWrite;
            for p in &self.files {
                let f = OpenOptions::new()
                    .read(true)
                    .write(write)
                    .custom_flags(open_flags(w, s.direct, write))
                    .open(p)
                    .map_err(|e| io_err(e, "opening", p))?;
                if w.op == Op::RandRead {
                    // Readahead would turn a random 4 KiB read into a 128 KiB one.
                    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::Random)?;
                }
                self.open.push(f);
            }
            let blocks = (Self::file_bytes(w) / w.bs_bytes).max(1);
            let nf = self.files.len() as u32;
            self.offsets = (0..ops)
                .map(|_| {
                    let f = if nf > 1 {
                        self.rng.random_range(0..nf)
                    } else {
                        0
                    };
                    (f, self.rng.random_range(0..blocks) * w.bs_bytes)
                })
                .collect();
        }
        Ok(())
    }

    /// Untimed cleanup after a run; then let the filesystem settle, so the
    /// next run (of this or another target) does not share the disk with it.
    fn after_run(&mut self, s: &Setup) -> Result<()> {
        self.open.clear();
        if let Some((name, fd)) = self.run_dir.take() {
            if s.w.op == Op::SmallFiles {
                for n in &self.names {
                    match rustix::fs::unlinkat(&fd, n.as_c_str(), AtFlags::empty()) {
                        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
                        Err(e) => return Err(e).context("removing small files"),
                    }
                }
            }
            drop(fd);
            // An emptied directory stays a while: ext4 places a new directory in
            // a group with the fewest directories, so while this one exists the
            // next runs go elsewhere instead of back to the inodes just deleted.
            self.old_run_dirs.push_back(name);
            while self.old_run_dirs.len() > KEEP_RUN_DIRS {
                if let Some(old) = self.old_run_dirs.pop_front() {
                    rustix::fs::unlinkat(&self.dirfd, old.as_c_str(), AtFlags::REMOVEDIR)
                        .map_err(|e| io_err(e.into(), "removing a run directory in", &self.dir))?;
                }
            }
        }
        rustix::fs::syncfs(&self.dirfd).context("syncfs after a run")?;
        Ok(())
    }

    /// The timed part. `lat` is Some only in the latency pass.
    fn run(
        &mut self,
        s: &Setup,
        ops: u64,
        mut lat: Option<&mut Histogram<u64>>,
        clock_ns: u64,
    ) -> Result<()> {
        if self.ring.is_some() {
            return self.run_uring(s, ops, lat, clock_ns);
        }
        let w = s.w;
        let bs = w.bs_bytes as usize;
        macro_rules! timed {
            ($e:expr) => {{
                match lat.as_deref_mut() {
                    None => $e,
                    Some(h) => {
                        let t = Instant::now();
                        let r = $e;
                        let ns = (t.elapsed().as_nanos() as u64).saturating_sub(clock_ns);
                        let _ = h.record(ns.max(1));
                        r
                    }
                }
            }};
        }
        match w.op {
            Op::SeqWrite | Op::Rewrite => {
                let per = if w.op == Op::SeqWrite && w.ops > 0 {
                    // Op-counted (O_DSYNC): `ops` blocks spread over the files.
                    (ops / w.files).max(1) * w.bs_bytes
                } else {
                    Self::file_bytes(w)
                };
                let mut writes = 0u64;
                for p in &self.files {
                    let mut oo = OpenOptions::new();
                    oo.write(true)
                        .mode(0o600)
                        .custom_flags(open_flags(w, s.direct, true));
                    if w.op == Op::SeqWrite {
                        oo.create_new(true);
                    }
                    let f = oo.open(p).map_err(|e| io_err(e, "creating", p))?;
                    let mut off = 0;
                    while off < per {
                        check_stop(s.stop)?;
                        let b = self.pool.block(bs);
                        timed!(f.write_all_at(b, off)).map_err(|e| io_err(e, "writing", p))?;
                        off += bs as u64;
                        writes += 1;
                        if let Sync::FsyncEvery(n) = w.sync
                            && writes.is_multiple_of(n)
                        {
                            timed!(f.sync_all()).map_err(|e| io_err(e, "fsync", p))?;
                        }
                    }
                    if matches!(
                        w.sync,
                        Sync::FsyncEnd | Sync::FsyncEvery(_) | Sync::FsyncEach
                    ) {
                        timed!(f.sync_all()).map_err(|e| io_err(e, "fsync", p))?;
                    }
                }
            }
            Op::SeqRead => {
                let per = Self::file_bytes(w);
                for p in &self.files {
                    let f = OpenOptions::new()
                        .read(true)
                        .custom_flags(open_flags(w, s.direct, false))
                        .open(p)
                        .map_err(|e| io_err(e, "opening", p))?;
                    let mut off = 0;
                    while off < per {
                        check_stop(s.stop)?;
                        let b = self.io.as_mut_slice();
                        timed!(f.read_exact_at(&mut b[..bs], off))
                            .map_err(|e| io_err(e, "reading", p))?;
                        off += bs as u64;
                    }
                }
            }
            Op::RandRead => {
                for &(fi, off) in &self.offsets {
                    check_stop(s.stop)?;
                    let f = &self.open[fi as usize];
                    let b = self.io.as_mut_slice();
                    timed!(f.read_exact_at(&mut b[..bs], off))
                        .map_err(|e| io_err(e, "reading", &self.files[fi as usize]))?;
                }
            }
            Op::RandWrite => {
                for &(fi, off) in &self.offsets {
                    check_stop(s.stop)?;
                    let f = &self.open[fi as usize];
                    let b = self.pool.block(bs);
                    timed!(f.write_all_at(b, off))
                        .map_err(|e| io_err(e, "writing", &self.files[fi as usize]))?;
                }
                if matches!(
                    w.sync,
                    Sync::FsyncEnd | Sync::FsyncEach | Sync::FsyncEvery(_)
                ) {
                    for (f, p) in self.open.iter().zip(&self.files) {
                        timed!(f.sync_all()).map_err(|e| io_err(e, "fsync", p))?;
                    }
                }
            }
            Op::SmallFiles => {
                let Some((_, rd)) = self.run_dir.as_ref() else {
                    anyhow::bail!("small-file run without its directory");
                };
                let flags = OFlags::WRONLY
                    | OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC;
                for n in &self.names {
                    check_stop(s.stop)?;
                    let b = self.pool.block(bs);
                    timed!((|| -> rustix::io::Result<()> {
                        let fd = rustix::fs::openat(
                            rd,
                            n.as_c_str(),
                            flags,
                            Mode::from_raw_mode(0o600),
                        )?;
                        let mut done = 0;
                        while done < b.len() {
                            done += rustix::io::write(&fd, &b[done..])?;
                        }
                        if w.sync.durable() {
                            rustix::fs::fsync(&fd)?;
                        }
                        Ok(())
                    })())
                    .map_err(|e| io_err(e.into(), "creating a small file in", &self.dir))?;
                }
                if w.sync.durable() {
                    // The new names are durable only once the directory is.
                    timed!(rustix::fs::fsync(rd))
                        .map_err(|e| io_err(e.into(), "fsync", &self.dir))?;
                }
            }
            Op::Metadata => {
                let flags = OFlags::WRONLY
                    | OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC;
                let Some((_, rd)) = self.run_dir.as_ref() else {
                    anyhow::bail!("metadata run without its directory");
                };
                let d = rd.as_fd();
                for n in &self.names {
                    check_stop(s.stop)?;
                    timed!(rustix::fs::openat(
                        d,
                        n.as_c_str(),
                        flags,
                        Mode::from_raw_mode(0o600)
                    ))
                    .map_err(|e| io_err(e.into(), "creating a file in", &self.dir))?;
                }
                for n in &self.names {
                    check_stop(s.stop)?;
                    let st = timed!(rustix::fs::statat(
                        d,
                        n.as_c_str(),
                        AtFlags::SYMLINK_NOFOLLOW
                    ))
                    .map_err(|e| io_err(e.into(), "stat in", &self.dir))?;
                    std::hint::black_box(st);
                }
                for n in &self.names {
                    check_stop(s.stop)?;
                    timed!(rustix::fs::unlinkat(d, n.as_c_str(), AtFlags::empty()))
                        .map_err(|e| io_err(e.into(), "unlink in", &self.dir))?;
                }
            }
        }
        Ok(())
    }
}

/// Ops (the unit of a result) and bytes moved by one run of `ops`.
pub fn run_volume(w: &Workload, ops: u64) -> (u64, u64) {
    let per_thread = match w.op {
        Op::SeqWrite if w.ops > 0 => {
            let blocks = (ops / w.files).max(1) * w.files;
            (blocks, blocks * w.bs_bytes)
        }
        Op::SeqWrite | Op::Rewrite | Op::SeqRead => {
            let blocks = Worker::file_bytes(w) / w.bs_bytes * w.files;
            (blocks, blocks * w.bs_bytes)
        }
        Op::RandRead | Op::RandWrite | Op::SmallFiles => (ops, ops * w.bs_bytes),
        Op::Metadata => (3 * ops, 0),
    };
    let t = w.threads as u64;
    (per_thread.0 * t, per_thread.1 * t)
}

/// One measured (workload, target) pair before statistics.
pub struct Measured {
    /// The workload as run (queue depth emulated with threads when io_uring is missing).
    pub effective: Workload,
    pub engine: Engine,
    /// Nanoseconds of each measured run.
    pub run_ns: Vec<u64>,
    /// Per run: share of its time this thread was runnable but not running
    /// (another program had the CPU); empty for multi-thread workloads.
    pub cpu_wait: Vec<f64>,
    pub ops_per_run: u64,
    pub latency: Option<Histogram<u64>>,
    pub cache_mode: CacheMode,
    /// Resident fraction seen after eviction (max over runs), or before warm runs.
    pub resident: Option<f64>,
}

pub struct Plan {
    pub min_runs: u32,
    pub min_time: Duration,
    pub warmup: bool,
    pub latency: bool,
    pub clock_ns: u64,
    /// Per-run time bound for op-counted workloads (`--runtime`).
    pub runtime: Option<Duration>,
}

/// How requests are issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// pread/pwrite, one request at a time per thread.
    Psync,
    /// io_uring keeping `iodepth` requests in flight per thread.
    IoUring,
    /// No io_uring: `iodepth` threads per requested thread, each at depth 1.
    PsyncThreads,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Psync => "psync",
            Engine::IoUring => "io_uring",
            Engine::PsyncThreads => "psync-threads",
        }
    }
}

/// Whether this kernel lets us use io_uring (it may be disabled by sysctl or seccomp).
pub fn uring_available() -> bool {
    io_uring::IoUring::new(2).is_ok()
}

/// The workload to run and how: queue depth via io_uring, or the stated fallback.
fn effective(w: &Workload) -> (Workload, Engine) {
    if w.iodepth <= 1 {
        return (w.clone(), Engine::Psync);
    }
    if uring_available() {
        return (w.clone(), Engine::IoUring);
    }
    let q = w.iodepth as u64;
    let mut e = w.clone();
    e.threads = w.threads * w.iodepth;
    e.iodepth = 1;
    // Same total bytes and ops, split over the extra threads.
    e.size_bytes = ((w.size_bytes / q) / (w.bs_bytes * w.files)).max(1) * w.bs_bytes * w.files;
    e.ops = if w.ops > 0 { (w.ops / q).max(1) } else { 0 };
    (e, Engine::PsyncThreads)
}

/// Median cost of one `Instant::now()` pair, subtracted from latency samples.
pub fn clock_overhead_ns() -> u64 {
    let mut v: Vec<u64> = (0..1001)
        .map(|_| {
            let t = Instant::now();
            t.elapsed().as_nanos() as u64
        })
        .collect();
    v.sort_unstable();
    v[v.len() / 2]
}

fn new_hist() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).context("histogram")
}

/// This thread's time spent runnable but waiting for a CPU, from
/// /proc/thread-self/schedstat (its second field, ns); None where unavailable.
fn runqueue_wait_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().nth(1)?.parse().ok()
}

/// One workload on one target, prepared and ready to be run again and again,
/// so a suite can interleave the targets run by run (A B B A ...) and both see
/// the same state of the machine.
pub struct Session<'a> {
    wdir: PathBuf,
    w: Workload,
    engine: Engine,
    workers: Vec<Worker>,
    direct: bool,
    mode: CacheMode,
    ram_backed: bool,
    resident: Option<f64>,
    ops: u64,
    plan: &'a Plan,
    stop: &'a AtomicBool,
    run_ns: Vec<u64>,
    cpu_wait: Vec<f64>,
    measured: Duration,
    removed: bool,
    stock: Stock,
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if !self.removed {
            self.workers.clear();
            let _ = std::fs::remove_dir_all(&self.wdir);
        }
    }
}

impl<'a> Session<'a> {
    /// Create the workload's directory in `scratch`, write its files, check
    /// the cache state, size its runs and do the warm-up (all untimed).
    pub fn start(
        w: &Workload,
        scratch: &Path,
        ram_backed: bool,
        plan: &'a Plan,
        stop: &'a AtomicBool,
    ) -> Result<Session<'a>> {
        let wdir = scratch.join(&w.id);
        std::fs::create_dir(&wdir).map_err(|e| io_err(e, "creating", &wdir))?;
        let (eff, engine) = effective(w);
        let mut sess = Session {
            wdir,
            w: eff,
            engine,
            workers: Vec::new(),
            direct: w.direct,
            mode: CacheMode::NotApplicable("write"),
            ram_backed,
            resident: None,
            ops: 0,
            plan,
            stop,
            run_ns: Vec::new(),
            cpu_wait: Vec::new(),
            measured: Duration::ZERO,
            removed: false,
            stock: Stock::in_scratch(scratch),
        };
        // On error the session is dropped, which removes its directory.
        sess.init()?;
        Ok(sess)
    }

    fn init(&mut self) -> Result<()> {
        let wdir = self.wdir.clone();
        if self.direct && !direct_supported(&wdir) {
            anyhow::ensure!(
                self.ram_backed,
                "O_DIRECT is not supported on {}; drop --direct for this target",
                wdir.display()
            );
            // Older tmpfs refuses O_DIRECT; its data is RAM either way.
            self.direct = false;
        }
        let w = self.w.clone();
        self.mode = if !w.op.is_read() {
            CacheMode::NotApplicable("write")
        } else if self.ram_backed {
            CacheMode::NotApplicable("RAM-backed: the data is the cache")
        } else if self.direct {
            CacheMode::Direct
        } else if w.cache == CacheWant::Warm {
            CacheMode::Warm
        } else {
            CacheMode::Evict
        };
        self.workers = (0..w.threads)
            .map(|t| Worker::new(wdir.join(format!("t{t}")), &w, 0x7e57_0000 + t as u64))
            .collect::<Result<_>>()?;
        if self.engine == Engine::IoUring {
            for wk in &mut self.workers {
                anyhow::ensure!(wk.enable_uring(&w), "io_uring setup failed for {}", w.id);
            }
        }
        let setup = Setup {
            w: &w,
            stop: self.stop,
            direct: self.direct,
        };
        // Keep only stocked files this workload can use: it must not write
        // its own while another workload's are still there.
        self.stock
            .trim(w.takes_stock().then(|| Worker::file_bytes(&w)))?;
        for wk in &mut self.workers {
            wk.prepare(&setup, &self.stock)?;
        }
        // Check once that eviction really empties the cache; if not, O_DIRECT, else say "warm".
        if self.mode == CacheMode::Evict {
            let f = File::open(&self.workers[0].files[0])?;
            evict(&f)?;
            let r = resident_fraction(&f)?;
            self.resident = Some(r);
            if r > 0.01 {
                if direct_supported(&wdir) {
                    self.mode = CacheMode::Direct;
                    self.direct = true;
                } else {
                    self.mode = CacheMode::Warm;
                }
            }
        }
        let resident_between_runs =
            matches!(self.mode, CacheMode::NotApplicable(_) | CacheMode::Warm) && !self.direct;
        if resident_between_runs && matches!(w.op, Op::RandRead | Op::RandWrite) {
            for wk in &mut self.workers {
                wk.touch(2, self.stop)?;
            }
        }
        // How many ops a run does: whole files for streaming, otherwise sized
        // so that a run lasts about min_time / min_runs (bounded by the nominal count).
        let adaptive = w.ops > 0;
        self.ops = if adaptive { w.ops } else { 0 };
        if adaptive {
            let probe = w.ops.min(64);
            let (ns, _) = self.run_all(probe, false)?;
            let per_op = ns as f64 / probe as f64;
            // Many short runs rather than a few long ones: a median of many
            // resists the stalls a virtual disk has every few hundred ms.
            let mut target_ns = self.plan.min_time.as_nanos() as f64
                / self.plan.min_runs.max(OP_RUNS_PER_MIN_TIME) as f64;
            if let Some(rt) = self.plan.runtime {
                target_ns = rt.as_nanos() as f64;
            }
            if target_ns > 0.0 {
                self.ops = ((target_ns / per_op) as u64).clamp(probe, w.ops);
            }
        }
        if self.plan.warmup {
            if adaptive {
                // The rate of short runs climbs for the first ~100 ms even
                // over pages in their steady state (tmpfs 4 KiB random reads:
                // 770k, 820k, 850k, 880k, then flat near 900k IOPS); untimed
                // runs take that climb, or it lands in the first pairs.
                let budget = self.plan.min_time.as_nanos() as u64 / WARMUP_SHARE_OF_MIN_TIME;
                let mut spent = 0;
                for _ in 0..MAX_WARMUP_RUNS {
                    if spent >= budget {
                        break;
                    }
                    spent += self.run_all(self.ops, false)?.0;
                }
            } else {
                self.run_all(self.ops, false)?;
            }
        }
        if self.mode == CacheMode::Warm && !self.ram_backed {
            let f = File::open(&self.workers[0].files[0])?;
            self.resident = Some(resident_fraction(&f)?);
        }
        Ok(())
    }

    /// One run of every worker: untimed preparation, the timed part, untimed
    /// cleanup. Returns the run's ns and, in the latency pass, its histogram.
    fn run_all(&mut self, ops: u64, lat: bool) -> Result<(u64, Option<Histogram<u64>>)> {
        let setup = Setup {
            w: &self.w,
            stop: self.stop,
            direct: self.direct,
        };
        let clock_ns = self.plan.clock_ns;
        for wk in self.workers.iter_mut() {
            wk.before_run(&setup, &self.mode, ops)?;
        }
        let mut hists: Vec<Option<Histogram<u64>>> = (0..self.workers.len())
            .map(|_| if lat { new_hist().ok() } else { None })
            .collect();
        let single = self.workers.len() == 1;
        let wait0 = if single { runqueue_wait_ns() } else { None };
        let t = Instant::now();
        if single {
            self.workers[0].run(&setup, ops, hists[0].as_mut(), clock_ns)?;
        } else {
            let setup = &setup;
            std::thread::scope(|sc| -> Result<()> {
                let hs: Vec<_> = self
                    .workers
                    .iter_mut()
                    .zip(hists.iter_mut())
                    .map(|(wk, h)| sc.spawn(move || wk.run(setup, ops, h.as_mut(), clock_ns)))
                    .collect();
                for h in hs {
                    h.join()
                        .map_err(|_| anyhow::anyhow!("benchmark thread panicked"))??;
                }
                Ok(())
            })?;
        }
        let ns = t.elapsed().as_nanos() as u64;
        if let (Some(a), Some(b), false) = (wait0, runqueue_wait_ns().filter(|_| single), lat) {
            self.cpu_wait
                .push(b.saturating_sub(a) as f64 / ns.max(1) as f64);
        }
        for wk in self.workers.iter_mut() {
            wk.after_run(&setup)?;
        }
        let mut merged: Option<Histogram<u64>> = None;
        for h in hists.into_iter().flatten() {
            match merged.as_mut() {
                None => merged = Some(h),
                Some(m) => {
                    let _ = m.add(&h);
                }
            }
        }
        Ok((ns.max(1), merged))
    }

    /// One measured run; returns its nanoseconds.
    pub fn run_once(&mut self) -> Result<u64> {
        check_stop(self.stop)?;
        let (ns, _) = self.run_all(self.ops, false)?;
        self.run_ns.push(ns);
        self.measured += Duration::from_nanos(ns);
        Ok(ns)
    }

    pub fn run_ns(&self) -> &[u64] {
        &self.run_ns
    }

    pub fn runs(&self) -> u32 {
        self.run_ns.len() as u32
    }

    /// Measured time so far (all runs).
    pub fn measured(&self) -> Duration {
        self.measured
    }

    /// The latency pass (when planned), the last eviction check, and removal
    /// of the workload's files.
    pub fn finish(mut self) -> Result<Measured> {
        let latency = if self.plan.latency {
            self.run_all(self.ops, true)?.1
        } else {
            None
        };
        if self.mode == CacheMode::Evict {
            let f = File::open(&self.workers[0].files[0])?;
            evict(&f)?;
            self.resident = Some(self.resident.unwrap_or(0.0).max(resident_fraction(&f)?));
        }
        // Complete data files go to the stock for the next workload; the
        // rest goes, so each workload starts from the same free space.
        if self.w.op.leaves_complete_files() && self.w.bs_bytes > 0 && self.w.files > 0 {
            let files: Vec<PathBuf> = self.workers.iter().flat_map(|w| w.files.clone()).collect();
            self.stock.put(&files, Worker::file_bytes(&self.w))?;
        }
        self.workers.clear();
        self.removed = true;
        std::fs::remove_dir_all(&self.wdir).map_err(|e| io_err(e, "removing", &self.wdir))?;
        Ok(Measured {
            effective: self.w.clone(),
            engine: self.engine,
            run_ns: std::mem::take(&mut self.run_ns),
            cpu_wait: std::mem::take(&mut self.cpu_wait),
            ops_per_run: self.ops,
            latency,
            cache_mode: self.mode.clone(),
            resident: self.resident,
        })
    }
}
