//! How a worker issues the I/O of a run's timed part. One file per backend:
//! `psync.rs` (pread/pwrite, one request at a time) and `uring.rs`
//! (io_uring, `iodepth` requests in flight). A new backend is a file that
//! implements [`Backend`], plus an [`super::Engine`] variant that
//! `Worker::new` maps to it.

use anyhow::Result;

use super::Setup;
use super::io::Timer;
use super::worker::RunState;

/// The timed part of a run. Everything untimed (creating and evicting files,
/// drawing offsets, run directories) is done by the worker beforehand, in
/// `st`; a backend only issues the requests, checking `s.stop` as it goes,
/// and times each one through `t` in the latency pass.
pub trait Backend: Send {
    /// `ops` operations of `s.w` (for streaming workloads: whole files).
    fn run(&mut self, st: &mut RunState, s: &Setup, ops: u64, t: &mut Timer) -> Result<()>;
}
