//! The io_uring backend: `iodepth` requests in flight per thread (fio's
//! `io_uring` engine), for streaming and random reads and writes.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, Result};
use io_uring::{IoUring, opcode, types};
use rand::Rng;
use rand::rngs::SmallRng;

use super::backend::{Backend, Request, RunState, Setup, seq_write_bytes};
use super::io::{AlignedBuf, Timer, check_stop, io_err, open_flags};
use crate::bench::workload::{Op, Sync, Workload};

pub struct Uring {
    ring: IoUring,
    /// One buffer per request in flight.
    slots: Vec<AlignedBuf>,
}

impl Uring {
    /// A ring and buffers for `w.iodepth` requests; None when the kernel
    /// refuses (io_uring disabled by sysctl, seccomp, an old kernel).
    pub fn new(w: &Workload, rng: &mut SmallRng) -> Option<Uring> {
        let ring = IoUring::new(w.iodepth.next_power_of_two()).ok()?;
        let bs = w.bs_bytes as usize;
        let slots = (0..w.iodepth)
            .map(|_| {
                let mut b = AlignedBuf::new(bs.max(16));
                rng.fill_bytes(b.as_mut_slice());
                b
            })
            .collect();
        Some(Uring { ring, slots })
    }
}

/// Whether this kernel lets us use io_uring (it may be disabled by sysctl or seccomp).
pub fn available() -> bool {
    IoUring::new(2).is_ok()
}

impl Backend for Uring {
    fn run(&mut self, st: &mut RunState, s: &Setup, ops: u64, t: &mut Timer) -> Result<()> {
        let w = s.w;
        let write = matches!(w.op, Op::SeqWrite | Op::RandWrite);
        let (owned, list) = requests(st, s, ops, write)?;
        let files: &[File] = if owned.is_empty() { &st.open } else { &owned };
        let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        let run = Run {
            fds: &fds,
            list: &list,
            write,
            bs: w.bs_bytes as usize,
            run_no: st.run_no,
            dir: &st.dir,
        };
        self.keep_in_flight(&run, s, t)?;
        if write
            && matches!(
                w.sync,
                Sync::FsyncEnd | Sync::FsyncEach | Sync::FsyncEvery(_)
            )
        {
            for (f, p) in files.iter().zip(&st.files) {
                f.sync_all().map_err(|e| io_err(e, "fsync", p))?;
            }
        }
        Ok(())
    }
}

/// The run's requests as (file index, offset), and the files opened for it:
/// streaming workloads open their files inside the timing, as psync does;
/// random ones use the offsets and files the worker drew and opened.
fn requests(
    st: &mut RunState,
    s: &Setup,
    ops: u64,
    write: bool,
) -> Result<(Vec<File>, Vec<Request>)> {
    let w = s.w;
    if !matches!(w.op, Op::SeqWrite | Op::SeqRead) {
        return Ok((Vec::new(), std::mem::take(&mut st.offsets)));
    }
    let mut owned = Vec::new();
    for p in &st.files {
        let mut oo = OpenOptions::new();
        oo.mode(0o600).custom_flags(open_flags(w, s.direct, write));
        if write {
            oo.write(true).create_new(true);
        } else {
            oo.read(true);
        }
        owned.push(oo.open(p).map_err(|e| io_err(e, "opening", p))?);
    }
    let per = seq_write_bytes(s, ops);
    let bs = w.bs_bytes;
    let list = (0..st.files.len() as u32)
        .flat_map(|f| (0..per / bs).map(move |b| (f, b * bs)))
        .collect();
    Ok((owned, list))
}

/// One run's requests and what its errors name.
struct Run<'a> {
    fds: &'a [i32],
    list: &'a [Request],
    write: bool,
    bs: usize,
    run_no: u64,
    dir: &'a Path,
}

impl Uring {
    /// Keep every slot busy until all of `run.list` has completed.
    fn keep_in_flight(&mut self, run: &Run, s: &Setup, t: &mut Timer) -> Result<()> {
        let qd = self.slots.len();
        let mut free: Vec<usize> = (0..qd).collect();
        let mut started: Vec<Option<Instant>> = vec![None; qd];
        let (mut next, mut done) = (0usize, 0usize);
        let mut cqes: Vec<(u64, i32)> = Vec::with_capacity(qd);
        while done < run.list.len() {
            if let Err(e) = check_stop(s.stop) {
                self.drain(qd - free.len());
                return Err(e);
            }
            while next < run.list.len() {
                let Some(slot) = free.pop() else { break };
                let e = self.entry(run, next, slot);
                if t.on() {
                    started[slot] = Some(Instant::now());
                }
                // SAFETY: the buffer is this slot's own allocation, which
                // lives in `self.slots` as long as the ring; the slot is not
                // reused (or touched) until its completion is reaped below,
                // and every submitted request is reaped (or drained) before
                // this function returns.
                unsafe { self.ring.submission().push(&e.user_data(slot as u64)) }
                    .map_err(|_| anyhow::anyhow!("io_uring submission queue full"))?;
                next += 1;
            }
            self.ring.submit_and_wait(1).context("io_uring submit")?;
            cqes.clear();
            cqes.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
            // The whole batch is reaped before a failure is acted on, so
            // that `free` counts every request no longer in flight.
            let mut failure = None;
            for &(slot, res) in &cqes {
                let slot = slot as usize;
                done += 1;
                free.push(slot);
                if let Some(at) = started[slot].take() {
                    t.record_since(at);
                }
                if failure.is_none() && (res < 0 || res as usize != run.bs) {
                    failure = Some(res);
                }
            }
            if let Some(res) = failure {
                self.drain(qd - free.len());
                return Err(failed(run, res));
            }
        }
        Ok(())
    }

    /// Wait for the `inflight` requests still running before giving up (the
    /// kernel may still use their buffers) and consume their completions, so
    /// that the next run does not take them for its own.
    fn drain(&mut self, mut inflight: usize) {
        while inflight > 0 {
            match self.ring.submit_and_wait(inflight) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(_) => return,
            }
            inflight = inflight.saturating_sub(self.ring.completion().count());
        }
    }

    /// The submission entry for request `i` of the run, into `slot`'s buffer.
    fn entry(&mut self, run: &Run, i: usize, slot: usize) -> io_uring::squeue::Entry {
        let (f, off) = run.list[i];
        let buf = self.slots[slot].as_mut_slice();
        if run.write && run.bs >= 16 {
            // Unique content per block (the slot is not in flight now).
            buf[..8].copy_from_slice(&(i as u64).to_le_bytes());
            buf[8..16].copy_from_slice(&run.run_no.to_le_bytes());
        }
        let fd = types::Fd(run.fds[f as usize]);
        if run.write {
            opcode::Write::new(fd, buf.as_ptr(), run.bs as u32)
                .offset(off)
                .build()
        } else {
            opcode::Read::new(fd, buf.as_mut_ptr(), run.bs as u32)
                .offset(off)
                .build()
        }
    }
}

/// The error for a completion that failed (`res` < 0) or moved too few bytes.
fn failed(run: &Run, res: i32) -> anyhow::Error {
    if res < 0 {
        let e = std::io::Error::from_raw_os_error(-res);
        return io_err(e, if run.write { "writing" } else { "reading" }, run.dir);
    }
    anyhow::anyhow!(
        "short {} of {res} bytes in {}",
        if run.write { "write" } else { "read" },
        run.dir.display()
    )
}
