//! The seam between a worker and its I/O backend: the [`Backend`] trait, what
//! a run hands a backend ([`Setup`], [`RunState`]), and the [`Engine`] that
//! names each backend. One file per backend: `psync.rs` (pread/pwrite, one
//! request at a time) and `uring.rs` (io_uring, `iodepth` requests in
//! flight). A new backend is a file that implements [`Backend`], an
//! [`Engine`] variant, and its line in `Worker::new`.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use rand::rngs::SmallRng;

use super::io::{AlignedBuf, Pool, Timer};
use crate::bench::workload::{Op, Workload};

/// The timed part of a run. Everything untimed (creating and evicting files,
/// drawing offsets, run directories) is done by the worker beforehand, in
/// `st`; a backend only issues the requests, checking `s.stop` as it goes,
/// and times each one through `t` in the latency pass.
pub trait Backend: Send {
    /// `ops` operations of `s.w` (for streaming workloads: whole files).
    fn run(&mut self, st: &mut RunState, s: &Setup, ops: u64, t: &mut Timer) -> Result<()>;
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

/// The workload of a run and how it is run.
pub struct Setup<'a> {
    pub w: &'a Workload,
    pub stop: &'a AtomicBool,
    pub direct: bool,
}

/// What a run works on: the worker's directory, files and buffers, and the
/// requests drawn for the run. The worker fills it before a run (untimed);
/// the backend does the timed part over it.
pub struct RunState {
    pub dir: PathBuf,
    pub dirfd: OwnedFd,
    pub files: Vec<PathBuf>,
    /// Files opened before a random-I/O run.
    pub open: Vec<File>,
    pub pool: Pool,
    pub io: AlignedBuf,
    pub rng: SmallRng,
    /// The random requests of a run.
    pub offsets: Vec<Request>,
    pub names: Vec<CString>,
    /// Small-file and metadata runs work in a fresh directory per run (see `before_run`).
    pub run_dir: Option<(CString, OwnedFd)>,
    pub run_no: u64,
}

/// One block request: (index into the worker's files, byte offset).
pub type Request = (u32, u64);

/// Bytes of each file of a streaming or random workload.
pub fn file_bytes(w: &Workload) -> u64 {
    // Whole blocks only, so every read and write is a full `bs`.
    (w.size_bytes / w.files / w.bs_bytes).max(1) * w.bs_bytes
}

/// Bytes written per file by one sequential-write run of `ops`.
pub fn seq_write_bytes(s: &Setup, ops: u64) -> u64 {
    let w = s.w;
    if w.op == Op::SeqWrite && w.ops > 0 {
        // Op-counted (O_DSYNC): `ops` blocks spread over the files.
        (ops / w.files).max(1) * w.bs_bytes
    } else {
        file_bytes(w)
    }
}
