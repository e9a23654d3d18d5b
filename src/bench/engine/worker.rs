//! A measuring thread's state and its untimed work: creating and stocking
//! files, setting the cache state, drawing offsets and run directories
//! before each run, cleaning up after it. The timed part is the backend's.

use std::collections::VecDeque;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, Result};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use rustix::fs::{AtFlags, Mode, OFlags};

use super::backend::{Backend, Engine, RunState, Setup, file_bytes};
use super::io::{
    AlignedBuf, CacheMode, Pool, Timer, check_stop, evict, io_err, open_flags, read_through,
};
use super::psync::Psync;
use super::uring::Uring;
use crate::bench::stock::Stock;
use crate::bench::workload::{KEEP_RUN_DIRS, Op, Workload};

/// Everything a measuring thread owns.
pub struct Worker {
    pub st: RunState,
    /// Emptied run directories kept until later (see `after_run`).
    old_run_dirs: VecDeque<CString>,
    backend: Box<dyn Backend>,
}

impl Worker {
    /// A worker in a new directory `dir`, issuing its requests through the
    /// backend of `engine`.
    pub fn new(dir: PathBuf, w: &Workload, seed: u64, engine: Engine) -> Result<Worker> {
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
        let mut st = RunState {
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
            run_no: 0,
        };
        let backend: Box<dyn Backend> = match engine {
            Engine::IoUring => Box::new(
                Uring::new(w, &mut st.rng)
                    .ok_or_else(|| anyhow::anyhow!("io_uring setup failed for {}", w.id))?,
            ),
            Engine::Psync | Engine::PsyncThreads => Box::new(Psync),
        };
        Ok(Worker {
            st,
            old_run_dirs: Default::default(),
            backend,
        })
    }

    /// Write the files a read/rewrite/random workload works on (untimed),
    /// or take them from an earlier workload's stock.
    pub fn prepare(&mut self, s: &Setup, stock: &Stock) -> Result<()> {
        if !s.w.op.reads_existing_files() {
            return Ok(());
        }
        let bs = s.w.bs_bytes as usize;
        let per = file_bytes(s.w);
        for p in self.st.files.clone() {
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
                f.write_all_at(self.st.pool.block(bs), off)
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
    pub fn touch(&mut self, passes: u32, stop: &AtomicBool) -> Result<()> {
        for _ in 0..passes {
            for p in &self.st.files {
                read_through(p, stop)?;
            }
        }
        Ok(())
    }

    /// Untimed work before a run: remove the last run's output, set the cache
    /// state, open files and draw random offsets.
    pub fn before_run(&mut self, s: &Setup, mode: &CacheMode, ops: u64) -> Result<()> {
        self.st.run_no += 1;
        self.st.open.clear();
        let w = s.w;
        match w.op {
            Op::SeqWrite => {
                for p in &self.st.files {
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
                let r = self.st.run_no;
                self.st.names = (0..n)
                    .map(|i| CString::new(format!("f{i}")).unwrap_or_default())
                    .collect();
                // A random name: ext4 starts its search for a lightly used
                // group at the hash of the name, so a fixed name would pick the
                // group the previous suite run just left full of deletions.
                let tag: u64 = rand::random();
                let name = CString::new(format!("r{r}-{tag:016x}")).unwrap_or_default();
                rustix::fs::mkdirat(&self.st.dirfd, name.as_c_str(), Mode::from_raw_mode(0o700))
                    .map_err(|e| io_err(e.into(), "creating a run directory in", &self.st.dir))?;
                let fd = rustix::fs::openat(
                    &self.st.dirfd,
                    name.as_c_str(),
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| io_err(e.into(), "opening a run directory in", &self.st.dir))?;
                self.st.run_dir = Some((name, fd));
            }
            _ => {}
        }
        // Start every run with nothing dirty on the filesystem — after removing
        // the last run's file, so that ext4 frees (and, mounted with `discard`,
        // trims) its blocks here and not inside this run's fsync: writeback or
        // a journal commit left over from the previous run, workload or target
        // would otherwise land in this run's timing by chance.
        rustix::fs::syncfs(&self.st.dirfd).context("syncfs before a run")?;
        if w.op.is_read() && *mode == CacheMode::Evict {
            for p in &self.st.files {
                let f = File::open(p).map_err(|e| io_err(e, "opening", p))?;
                evict(&f)
                    .with_context(|| format!("evicting {} from the page cache", p.display()))?;
            }
        }
        if matches!(w.op, Op::RandRead | Op::RandWrite) {
            let write = w.op == Op::RandWrite;
            for p in &self.st.files {
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
                self.st.open.push(f);
            }
            let blocks = (file_bytes(w) / w.bs_bytes).max(1);
            let nf = self.st.files.len() as u32;
            self.st.offsets = (0..ops)
                .map(|_| {
                    let f = if nf > 1 {
                        self.st.rng.random_range(0..nf)
                    } else {
                        0
                    };
                    (f, self.st.rng.random_range(0..blocks) * w.bs_bytes)
                })
                .collect();
        }
        Ok(())
    }

    /// Untimed cleanup after a run; then let the filesystem settle, so the
    /// next run (of this or another target) does not share the disk with it.
    pub fn after_run(&mut self, s: &Setup) -> Result<()> {
        self.st.open.clear();
        if let Some((name, fd)) = self.st.run_dir.take() {
            if s.w.op == Op::SmallFiles {
                for n in &self.st.names {
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
                    rustix::fs::unlinkat(&self.st.dirfd, old.as_c_str(), AtFlags::REMOVEDIR)
                        .map_err(|e| {
                            io_err(e.into(), "removing a run directory in", &self.st.dir)
                        })?;
                }
            }
        }
        rustix::fs::syncfs(&self.st.dirfd).context("syncfs after a run")?;
        Ok(())
    }

    /// The timed part, done by the backend. `lat` is Some only in the latency pass.
    pub fn run(
        &mut self,
        s: &Setup,
        ops: u64,
        lat: Option<&mut Histogram<u64>>,
        clock_ns: u64,
    ) -> Result<()> {
        self.backend
            .run(&mut self.st, s, ops, &mut Timer::new(lat, clock_ns))
    }
}
