//! Unit tests of the I/O backends, each driven through a worker on a
//! temporary directory: what a run leaves on disk, how many requests the
//! latency pass saw, and that a stop request or a failed request ends a run
//! with the right error. The io_uring tests skip (saying why) only where the
//! kernel refuses io_uring.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;
use crate::bench::workload::{CacheWant, Sync};
use crate::sys::signals::Interrupted;

const BS: u64 = 4096;

fn workload(op: Op, size: u64, files: u64, ops: u64, iodepth: u32) -> Workload {
    Workload {
        id: "t".into(),
        label: String::new(),
        op,
        bs_bytes: if op == Op::Metadata { 1 } else { BS },
        size_bytes: size,
        files,
        ops,
        sync: Sync::None,
        direct: false,
        cache: CacheWant::Warm,
        threads: 1,
        iodepth,
    }
}

/// A worker for `w` in `dir`, its files prepared as a suite would.
fn worker(dir: &Path, w: &Workload, engine: Engine, stop: &AtomicBool) -> Worker {
    let mut wk = Worker::new(dir.join("t0"), w, 1, engine).unwrap();
    let setup = Setup {
        w,
        stop,
        direct: false,
    };
    wk.prepare(&setup, &Stock::in_scratch(dir)).unwrap();
    wk
}

/// One run of `ops` (untimed preparation, the backend's part, cleanup
/// deferred to the caller); returns the latency samples recorded.
fn run(wk: &mut Worker, w: &Workload, ops: u64, stop: &AtomicBool) -> Result<u64> {
    let setup = Setup {
        w,
        stop,
        direct: false,
    };
    wk.before_run(&setup, &CacheMode::NotApplicable("test"), ops)?;
    let mut h = new_hist()?;
    wk.run(&setup, ops, Some(&mut h), 0)?;
    Ok(h.len())
}

/// The 16-byte stamps at the start of every block of `p`: writes stamp
/// each block, so repeated stamps mean a block was written twice or not at all.
fn stamps(p: &Path) -> Vec<[u8; 16]> {
    let f = File::open(p).unwrap();
    let len = f.metadata().unwrap().len();
    (0..len / BS)
        .map(|b| {
            let mut s = [0u8; 16];
            f.read_exact_at(&mut s, b * BS).unwrap();
            s
        })
        .collect()
}

fn all_distinct(v: &[[u8; 16]]) -> bool {
    v.iter().collect::<HashSet<_>>().len() == v.len()
}

/// Skip (with the reason) where the kernel refuses io_uring.
macro_rules! require_uring {
    () => {
        if !uring::available() {
            crate::skip!(
                "io_uring is not available here (kernel.io_uring_disabled, seccomp or an old kernel)"
            );
        }
    };
}

/// The backends to test: psync always, io_uring where the kernel has it.
fn engines() -> Vec<(Engine, u32)> {
    let mut v = vec![(Engine::Psync, 1)];
    if uring::available() {
        v.push((Engine::IoUring, 4));
    } else {
        eprintln!("io_uring is not available here; testing psync only");
    }
    v
}

#[test]
fn seq_write_writes_every_block_of_every_file_once() {
    for (engine, qd) in engines() {
        let d = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let w = workload(Op::SeqWrite, 64 * BS, 2, 0, qd);
        let mut wk = worker(d.path(), &w, engine, &stop);
        let samples = run(&mut wk, &w, 0, &stop).unwrap();
        assert_eq!(samples, 64, "{engine:?}: one latency sample per block");
        for p in &wk.st.files {
            assert_eq!(std::fs::metadata(p).unwrap().len(), 32 * BS, "{engine:?}");
            assert!(all_distinct(&stamps(p)), "{engine:?}: {}", p.display());
        }
        // The next run starts from nothing: seq-write creates its files anew.
        let setup = Setup {
            w: &w,
            stop: &stop,
            direct: false,
        };
        wk.after_run(&setup).unwrap();
        run(&mut wk, &w, 0, &stop).unwrap();
        assert_eq!(std::fs::metadata(&wk.st.files[0]).unwrap().len(), 32 * BS);
    }
}

#[test]
fn seq_read_and_random_reads_issue_the_requests_asked_for() {
    for (engine, qd) in engines() {
        let d = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let seq = workload(Op::SeqRead, 48 * BS, 3, 0, qd);
        let mut wk = worker(d.path(), &seq, engine, &stop);
        assert_eq!(run(&mut wk, &seq, 0, &stop).unwrap(), 48, "{engine:?}");

        let d = tempfile::tempdir().unwrap();
        let rand = workload(Op::RandRead, 16 * BS, 2, 100, qd);
        let mut wk = worker(d.path(), &rand, engine, &stop);
        let before: Vec<_> = wk.st.files.iter().map(|p| stamps(p)).collect();
        assert_eq!(run(&mut wk, &rand, 37, &stop).unwrap(), 37, "{engine:?}");
        let after: Vec<_> = wk.st.files.iter().map(|p| stamps(p)).collect();
        assert_eq!(before, after, "{engine:?}: reads change nothing");
    }
}

#[test]
fn random_writes_change_blocks_in_place() {
    for (engine, qd) in engines() {
        let d = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let mut w = workload(Op::RandWrite, 64 * BS, 1, 200, qd);
        w.sync = Sync::FsyncEnd;
        let mut wk = worker(d.path(), &w, engine, &stop);
        let p = wk.st.files[0].clone();
        let before = stamps(&p);
        let samples = run(&mut wk, &w, 200, &stop).unwrap();
        // psync also times the closing fsync; io_uring issues it after the ring.
        let want = if engine == Engine::Psync { 201 } else { 200 };
        assert_eq!(samples, want, "{engine:?}");
        let after = stamps(&p);
        assert_eq!(after.len(), before.len(), "{engine:?}: size unchanged");
        assert!(
            after.iter().zip(&before).filter(|(a, b)| a != b).count() > 10,
            "{engine:?}: blocks were rewritten"
        );
    }
}

#[test]
fn psync_rewrite_keeps_the_files_and_replaces_their_data() {
    let d = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let w = workload(Op::Rewrite, 16 * BS, 1, 0, 1);
    let mut wk = worker(d.path(), &w, Engine::Psync, &stop);
    let before = stamps(&wk.st.files[0]);
    assert_eq!(run(&mut wk, &w, 0, &stop).unwrap(), 16);
    let after = stamps(&wk.st.files[0]);
    assert_eq!(after.len(), 16);
    assert!(after.iter().zip(&before).all(|(a, b)| a != b));
}

#[test]
fn psync_small_files_and_metadata_work_in_a_fresh_directory_per_run() {
    let d = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut w = workload(Op::SmallFiles, 0, 50, 50, 1);
    w.bs_bytes = 1024;
    w.sync = Sync::FsyncEnd;
    let mut wk = worker(d.path(), &w, Engine::Psync, &stop);
    // Each file's create+write+fsync is one sample, plus the directory's fsync.
    assert_eq!(run(&mut wk, &w, 20, &stop).unwrap(), 21);
    let (name, _) = wk.st.run_dir.as_ref().unwrap();
    let rd = wk.st.dir.join(name.to_str().unwrap());
    let files: Vec<_> = std::fs::read_dir(&rd).unwrap().flatten().collect();
    assert_eq!(files.len(), 20);
    assert!(files.iter().all(|e| e.metadata().unwrap().len() == 1024));
    let setup = Setup {
        w: &w,
        stop: &stop,
        direct: false,
    };
    wk.after_run(&setup).unwrap();
    assert_eq!(std::fs::read_dir(&rd).unwrap().count(), 0, "emptied after");

    let d = tempfile::tempdir().unwrap();
    let m = workload(Op::Metadata, 0, 30, 30, 1);
    let mut wk = worker(d.path(), &m, Engine::Psync, &stop);
    // create, stat and unlink of each name.
    assert_eq!(run(&mut wk, &m, 30, &stop).unwrap(), 90);
    let (name, _) = wk.st.run_dir.as_ref().unwrap();
    let rd = wk.st.dir.join(name.to_str().unwrap());
    assert_eq!(std::fs::read_dir(&rd).unwrap().count(), 0);
}

#[test]
fn a_stop_request_ends_the_run_as_interrupted() {
    for (engine, qd) in engines() {
        let d = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let w = workload(Op::RandRead, 16 * BS, 1, 100, qd);
        let mut wk = worker(d.path(), &w, engine, &stop);
        stop.store(true, Ordering::Relaxed);
        let e = run(&mut wk, &w, 100, &stop).unwrap_err();
        assert!(
            e.downcast_ref::<Interrupted>().is_some(),
            "{engine:?}: {e:#}"
        );
    }
}

#[test]
fn uring_reports_a_short_read_and_drains_the_ring() {
    require_uring!();
    let d = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let w = workload(Op::SeqRead, 32 * BS, 1, 0, 4);
    let mut wk = worker(d.path(), &w, Engine::IoUring, &stop);
    // Cut the file mid-block after it was prepared: the read of that block
    // comes back short, the ones after it empty.
    let f = OpenOptions::new()
        .write(true)
        .open(&wk.st.files[0])
        .unwrap();
    f.set_len(10 * BS + 100).unwrap();
    let e = run(&mut wk, &w, 0, &stop).unwrap_err();
    assert!(format!("{e:#}").contains("short read of"), "{e:#}");
    // The ring is usable again: nothing of the failed run is left in flight.
    f.set_len(32 * BS).unwrap();
    assert_eq!(run(&mut wk, &w, 0, &stop).unwrap(), 32);
}

#[test]
fn uring_reports_a_failed_request_with_the_directory() {
    require_uring!();
    let d = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let w = workload(Op::RandWrite, 16 * BS, 1, 50, 4);
    let mut wk = worker(d.path(), &w, Engine::IoUring, &stop);
    let setup = Setup {
        w: &w,
        stop: &stop,
        direct: false,
    };
    wk.before_run(&setup, &CacheMode::NotApplicable("test"), 50)
        .unwrap();
    // Swap the opened file for a read-only one: every write fails with EBADF.
    wk.st.open[0] = File::open(&wk.st.files[0]).unwrap();
    let e = wk.run(&setup, 50, None, 0).unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.starts_with("writing ") && msg.contains(wk.st.dir.to_str().unwrap()),
        "{msg}"
    );
}
