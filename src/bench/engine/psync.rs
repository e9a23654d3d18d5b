//! The psync backend: pread/pwrite and plain syscalls, one request at a time
//! per thread (fio's `psync`); also the only backend for small-file and
//! metadata workloads.

use std::fs::OpenOptions;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use anyhow::Result;
use rustix::fs::{AtFlags, Mode, OFlags};

use super::backend::{Backend, RunState, Setup, file_bytes, seq_write_bytes};
use super::io::{Timer, check_stop, io_err, open_flags};
use crate::bench::workload::{Op, Sync};

pub struct Psync;

impl Backend for Psync {
    fn run(&mut self, st: &mut RunState, s: &Setup, ops: u64, t: &mut Timer) -> Result<()> {
        match s.w.op {
            Op::SeqWrite | Op::Rewrite => seq_write(st, s, ops, t),
            Op::SeqRead => seq_read(st, s, t),
            Op::RandRead => rand_read(st, s, t),
            Op::RandWrite => rand_write(st, s, t),
            Op::SmallFiles => small_files(st, s, t),
            Op::Metadata => metadata(st, s, t),
        }
    }
}

/// Each file written front to back (created anew by seq-write, rewritten
/// in place by rewrite), with the workload's fsyncs.
fn seq_write(st: &mut RunState, s: &Setup, ops: u64, t: &mut Timer) -> Result<()> {
    let w = s.w;
    let bs = w.bs_bytes as usize;
    let per = seq_write_bytes(s, ops);
    let mut writes = 0u64;
    for p in &st.files {
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
            let b = st.pool.block(bs);
            t.time(|| f.write_all_at(b, off))
                .map_err(|e| io_err(e, "writing", p))?;
            off += bs as u64;
            writes += 1;
            if let Sync::FsyncEvery(n) = w.sync
                && writes.is_multiple_of(n)
            {
                t.time(|| f.sync_all()).map_err(|e| io_err(e, "fsync", p))?;
            }
        }
        if matches!(
            w.sync,
            Sync::FsyncEnd | Sync::FsyncEvery(_) | Sync::FsyncEach
        ) {
            t.time(|| f.sync_all()).map_err(|e| io_err(e, "fsync", p))?;
        }
    }
    Ok(())
}

fn seq_read(st: &mut RunState, s: &Setup, t: &mut Timer) -> Result<()> {
    let w = s.w;
    let bs = w.bs_bytes as usize;
    let per = file_bytes(w);
    for p in &st.files {
        let f = OpenOptions::new()
            .read(true)
            .custom_flags(open_flags(w, s.direct, false))
            .open(p)
            .map_err(|e| io_err(e, "opening", p))?;
        let mut off = 0;
        while off < per {
            check_stop(s.stop)?;
            let b = st.io.as_mut_slice();
            t.time(|| f.read_exact_at(&mut b[..bs], off))
                .map_err(|e| io_err(e, "reading", p))?;
            off += bs as u64;
        }
    }
    Ok(())
}

fn rand_read(st: &mut RunState, s: &Setup, t: &mut Timer) -> Result<()> {
    let bs = s.w.bs_bytes as usize;
    for &(fi, off) in &st.offsets {
        check_stop(s.stop)?;
        let f = &st.open[fi as usize];
        let b = st.io.as_mut_slice();
        t.time(|| f.read_exact_at(&mut b[..bs], off))
            .map_err(|e| io_err(e, "reading", &st.files[fi as usize]))?;
    }
    Ok(())
}

fn rand_write(st: &mut RunState, s: &Setup, t: &mut Timer) -> Result<()> {
    let w = s.w;
    let bs = w.bs_bytes as usize;
    for &(fi, off) in &st.offsets {
        check_stop(s.stop)?;
        let f = &st.open[fi as usize];
        let b = st.pool.block(bs);
        t.time(|| f.write_all_at(b, off))
            .map_err(|e| io_err(e, "writing", &st.files[fi as usize]))?;
    }
    if matches!(
        w.sync,
        Sync::FsyncEnd | Sync::FsyncEach | Sync::FsyncEvery(_)
    ) {
        for (f, p) in st.open.iter().zip(&st.files) {
            t.time(|| f.sync_all()).map_err(|e| io_err(e, "fsync", p))?;
        }
    }
    Ok(())
}

const CREATE: OFlags = OFlags::WRONLY
    .union(OFlags::CREATE)
    .union(OFlags::EXCL)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Create, write (and with a durable sync, fsync) each named file in the
/// run's directory; then fsync the directory.
fn small_files(st: &mut RunState, s: &Setup, t: &mut Timer) -> Result<()> {
    let w = s.w;
    let bs = w.bs_bytes as usize;
    let Some((_, rd)) = st.run_dir.as_ref() else {
        anyhow::bail!("small-file run without its directory");
    };
    for n in &st.names {
        check_stop(s.stop)?;
        let b = st.pool.block(bs);
        t.time(|| -> rustix::io::Result<()> {
            let fd = rustix::fs::openat(rd, n.as_c_str(), CREATE, Mode::from_raw_mode(0o600))?;
            let mut done = 0;
            while done < b.len() {
                done += rustix::io::write(&fd, &b[done..])?;
            }
            if w.sync.durable() {
                rustix::fs::fsync(&fd)?;
            }
            Ok(())
        })
        .map_err(|e| io_err(e.into(), "creating a small file in", &st.dir))?;
    }
    if w.sync.durable() {
        // The new names are durable only once the directory is.
        t.time(|| rustix::fs::fsync(rd))
            .map_err(|e| io_err(e.into(), "fsync", &st.dir))?;
    }
    Ok(())
}

/// Create every named file empty, stat each, unlink each: three ops a name.
fn metadata(st: &mut RunState, s: &Setup, t: &mut Timer) -> Result<()> {
    let Some((_, rd)) = st.run_dir.as_ref() else {
        anyhow::bail!("metadata run without its directory");
    };
    let d = rd.as_fd();
    for n in &st.names {
        check_stop(s.stop)?;
        t.time(|| rustix::fs::openat(d, n.as_c_str(), CREATE, Mode::from_raw_mode(0o600)))
            .map_err(|e| io_err(e.into(), "creating a file in", &st.dir))?;
    }
    for n in &st.names {
        check_stop(s.stop)?;
        let meta = t
            .time(|| rustix::fs::statat(d, n.as_c_str(), AtFlags::SYMLINK_NOFOLLOW))
            .map_err(|e| io_err(e.into(), "stat in", &st.dir))?;
        std::hint::black_box(meta);
    }
    for n in &st.names {
        check_stop(s.stop)?;
        t.time(|| rustix::fs::unlinkat(d, n.as_c_str(), AtFlags::empty()))
            .map_err(|e| io_err(e.into(), "unlink in", &st.dir))?;
    }
    Ok(())
}
