//! What every I/O backend and the worker share: aligned buffers, the pool
//! of random data writes draw from, the stop check, error wording, open
//! flags, page-cache control (and how a target's reads are made cold),
//! and the latency clock.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context as _, Result};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, RngExt};

use super::super::workload::{Sync, Workload};
use crate::sys::signals::Interrupted;

/// Random bytes written by every write workload: random so compression or
/// dedup cannot shorten the work, and stamped per block so no two blocks match.
const POOL_BYTES: usize = 8 << 20;
const ALIGN: usize = 4096;

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

pub struct Pool {
    buf: AlignedBuf,
    counter: u64,
    nonce: u64,
}

impl Pool {
    pub fn new(max_bs: usize, rng: &mut SmallRng) -> Pool {
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
    pub fn block(&mut self, bs: usize) -> &[u8] {
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

pub fn check_stop(stop: &AtomicBool) -> Result<()> {
    if stop.load(Ordering::Relaxed) {
        anyhow::bail!(Interrupted);
    }
    Ok(())
}

pub fn io_err(e: std::io::Error, what: &str, p: &Path) -> anyhow::Error {
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

pub fn open_flags(w: &Workload, direct: bool, write: bool) -> i32 {
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
pub fn evict(f: &File) -> Result<()> {
    f.sync_data()?;
    rustix::fs::fadvise(f, 0, None, rustix::fs::Advice::DontNeed)?;
    Ok(())
}

/// Read a file front to back, untimed, through the page cache.
pub fn read_through(p: &Path, stop: &AtomicBool) -> Result<()> {
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

/// The clock of the latency pass: with a histogram, each timed call is
/// measured and recorded (minus the clock's own cost); without one (the
/// measured runs), nothing is read.
pub struct Timer<'a> {
    lat: Option<&'a mut Histogram<u64>>,
    clock_ns: u64,
}

impl<'a> Timer<'a> {
    pub fn new(lat: Option<&'a mut Histogram<u64>>, clock_ns: u64) -> Timer<'a> {
        Timer { lat, clock_ns }
    }

    /// Whether this run records latency.
    pub fn on(&self) -> bool {
        self.lat.is_some()
    }

    /// Run `f`, timed when recording.
    #[inline]
    pub fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        match self.lat.as_deref_mut() {
            None => f(),
            Some(h) => {
                let t = Instant::now();
                let r = f();
                let ns = (t.elapsed().as_nanos() as u64).saturating_sub(self.clock_ns);
                let _ = h.record(ns.max(1));
                r
            }
        }
    }

    /// Record the time since `t` (a request started then and completed now).
    pub fn record_since(&mut self, t: Instant) {
        if let Some(h) = self.lat.as_deref_mut() {
            let ns = (t.elapsed().as_nanos() as u64).saturating_sub(self.clock_ns);
            let _ = h.record(ns.max(1));
        }
    }
}
