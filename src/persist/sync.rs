//! Writing one generation: walk DIR, refer to the current generation's
//! object for what is unchanged (never copied again), copy what changed into
//! new objects, write the manifest, make all of it durable (syncfs of the
//! store), switch `current` (rename + fsync), prune.
//!
//! A file that keeps changing while it is copied (its size, mtime or ctime
//! differ after the copy, or a recently touched file hashes differently on a
//! second read) is retried a few times; if it never holds still, the new
//! generation keeps its previous version. So each file in a generation is a
//! version that existed as a whole, never a torn mix; across files a
//! generation is not one instant (see docs/persist.md).

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::content;
use super::manifest::{self, Entry, Kind};
use super::scan::{self, Verdict, show};
use super::store::{OBJECT_TMP, Store, gen_name, object_name};
use crate::sys::fs::{self, Obj};

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct SyncReport {
    pub generation: u64,
    pub previous_generation: Option<u64>,
    pub entries: u64,
    pub files: u64,
    pub bytes: u64,
    pub copied_files: u64,
    pub copied_bytes: u64,
    pub shared_files: u64,
    /// Files that changed throughout the sync: their previous version kept.
    pub unsettled: Vec<String>,
    pub skipped_mounts: Vec<String>,
    pub pruned: Vec<u64>,
    pub swept_partials: usize,
    pub duration_ns: u64,
}

pub fn now_unix_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

struct Ctx<'a> {
    src: BorrowedFd<'a>,
    /// STORE/objects.
    objects: BorrowedFd<'a>,
    buf: Vec<u8>,
    cancel: &'a AtomicBool,
    /// Objects this sync added (removed again if it fails).
    created: Vec<String>,
    tmp_seq: u64,
}

enum Copied {
    Done(Entry),
    /// Deleted or replaced by a non-file since the walk.
    Gone,
    /// Never held still long enough to copy whole.
    Unsettled,
}

/// Tries at a read lease before copying without one.
const LEASE_TRIES: u64 = 3;

/// A read lease (fcntl F_SETLEASE) on a file being copied. The kernel grants
/// it only when no one has the file open for writing, and while we hold it
/// an open for writing or a truncate blocks until we let go: the bytes we
/// copy are one version, whatever the writer's timing. Released on drop.
struct Lease<'f>(BorrowedFd<'f>);

impl<'f> Lease<'f> {
    /// The lease, or whether trying again may get one (EAGAIN: open for
    /// writing now; anything else, such as EACCES for a file someone else
    /// owns when not root, will not change).
    fn take(fd: &'f OwnedFd) -> Result<Lease<'f>, bool> {
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl on an fd we own, with integer arguments only.
        let r = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETLEASE, libc::F_RDLCK) };
        if r == 0 {
            Ok(Lease(fd.as_fd()))
        } else {
            Err(std::io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN))
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as in take().
        unsafe {
            libc::fcntl(self.0.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK);
        }
    }
}

/// Wait until no write to the file is in flight. A write holds the inode
/// lock from before it updates mtime/ctime until its last byte is in, and
/// lseek(SEEK_DATA) takes that lock (tmpfs exclusively, ext4 shared), so it
/// returns only after a write in progress has finished. Between a barrier
/// and our fstat, then, the file is whole; a write that starts after that
/// fstat moves mtime/ctime (multigrain timestamps make even one within the
/// same clock tick visible once a stat has read them), which the fstat after
/// the closing barrier sees. The result of the seek is irrelevant.
fn write_barrier(fd: &OwnedFd) {
    let _ = rustix::fs::seek(fd, rustix::fs::SeekFrom::Data(0));
}

/// A lease break is announced with SIGIO, whose default action kills; the
/// break itself needs no handling (we let go right after the copy).
fn ignore_sigio() {
    // SAFETY: SIG_IGN is always a valid disposition.
    unsafe {
        libc::signal(libc::SIGIO, libc::SIG_IGN);
    }
}

/// How recently a file must have changed for its copy to be checked by a
/// second read: a write in flight when we read could leave the size, mtime
/// and ctime of the first fstat unchanged (tmpfs updates them at the start
/// of a write), so only a second identical read proves the bytes settled.
const RECENT: Duration = Duration::from_secs(2);

fn recent(st: &rustix::fs::Stat) -> bool {
    let ct = st.st_ctime as i128 * 1_000_000_000 + st.st_ctime_nsec as i128;
    now_unix_ns() - ct < RECENT.as_nanos() as i128
}

fn same_stat(a: &rustix::fs::Stat, b: &rustix::fs::Stat) -> bool {
    a.st_size == b.st_size
        && a.st_ino == b.st_ino
        && fs::stat_times(a)[1..] == fs::stat_times(b)[1..]
}

impl Ctx<'_> {
    /// Copy one regular file into the new generation, with its metadata
    /// taken from the same fstat as its content.
    fn copy_file(&mut self, rel: &[u8]) -> Result<Copied> {
        let mut lease_misses = 0;
        for attempt in 0..8u64 {
            let (fd, _) = match fs::open_regular_beneath(self.src, rel) {
                Ok(x) => x,
                Err(Errno::NOENT | Errno::NOTSUP | Errno::LOOP | Errno::XDEV | Errno::NOTDIR) => {
                    return Ok(Copied::Gone);
                }
                Err(e) => return Err(e).with_context(|| format!("open {}", show(rel))),
            };
            let leased = Lease::take(&fd);
            if leased.as_ref().is_err_and(|&busy| busy) && lease_misses < LEASE_TRIES {
                // Open for writing right now: give the writer a moment to
                // close it rather than copy under its pen.
                lease_misses += 1;
                drop(leased);
                drop(fd);
                std::thread::sleep(Duration::from_millis(lease_misses));
                continue;
            }
            write_barrier(&fd);
            let pre = rustix::fs::fstat(&fd)?;
            let xattrs = Obj::Fd(fd.as_fd())
                .all()
                .with_context(|| format!("xattrs of {}", show(rel)))?;
            self.tmp_seq += 1;
            let tmp = format!("{OBJECT_TMP}{}-{}", std::process::id(), self.tmp_seq);
            let dst = rustix::fs::openat(
                self.objects,
                tmp.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .with_context(|| format!("store: create the object for {}", show(rel)))?;
            let hash = content::copy_hash(fd.as_fd(), &pre, Some(dst.as_fd()), &mut self.buf)
                .with_context(|| format!("copying {} into the store", show(rel)))?;
            write_barrier(&fd);
            let post = rustix::fs::fstat(&fd)?;
            let mut settled = same_stat(&pre, &post);
            if settled && leased.is_err() && recent(&post) {
                // No lease (a writer keeps it open) and changed just now: a
                // second identical read after a pause as well, in case the
                // filesystem's timestamps are too coarse to show a write.
                std::thread::sleep(Duration::from_millis(2));
                let again = content::copy_hash(fd.as_fd(), &post, None, &mut self.buf)?;
                write_barrier(&fd);
                let after = rustix::fs::fstat(&fd)?;
                settled = again == hash && same_stat(&post, &after);
            }
            drop(leased);
            if !settled {
                let _ = rustix::fs::unlinkat(self.objects, tmp.as_str(), AtFlags::empty());
                std::thread::sleep(Duration::from_millis(5 * attempt));
                continue;
            }
            self.publish(&tmp, &hash)?;
            drop(dst);
            let mut e = scan::entry_from_stat(rel.to_vec(), &pre);
            e.hash = Some(hash);
            e.xattrs = xattrs;
            return Ok(Copied::Done(e));
        }
        Ok(Copied::Unsettled)
    }

    /// Give the finished temp object its name (its content identity). An
    /// object of that name already holds the same content: it is kept (it
    /// may be referenced and is durable) and the temp one dropped.
    fn publish(&mut self, tmp: &str, h: &[u8; 16]) -> Result<()> {
        let sub = format!("{:02x}", h[0]);
        match rustix::fs::mkdirat(self.objects, sub.as_str(), Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e).context("store: mkdir in objects"),
        }
        let name = object_name(h);
        match rustix::fs::renameat_with(
            self.objects,
            tmp,
            self.objects,
            name.as_str(),
            RenameFlags::NOREPLACE,
        ) {
            Ok(()) => {
                self.created.push(name);
                Ok(())
            }
            Err(Errno::EXIST) => {
                rustix::fs::unlinkat(self.objects, tmp, AtFlags::empty())?;
                Ok(())
            }
            Err(e) => Err(e).context("store: naming an object"),
        }
    }

    /// Hash the source without copying (for a file whose stat moved but
    /// whose content may not have): the entry when it equals `prev`.
    fn same_content(&mut self, rel: &[u8], cur: &Entry, prev: &Entry) -> Result<Option<Entry>> {
        let Ok((fd, st)) = fs::open_regular_beneath(self.src, rel) else {
            return Ok(None);
        };
        let xattrs = Obj::Fd(fd.as_fd()).all()?;
        let h = content::copy_hash(fd.as_fd(), &st, None, &mut self.buf)?;
        let after = rustix::fs::fstat(&fd)?;
        if Some(h) != prev.hash || xattrs != prev.xattrs || !same_stat(&st, &after) {
            return Ok(None);
        }
        let mut e = scan::entry_from_stat(rel.to_vec(), &after);
        if !e.same_meta(prev) && (e.size, e.mtime) != (cur.size, cur.mtime) {
            return Ok(None);
        }
        e.hash = prev.hash;
        e.xattrs = xattrs;
        Ok(Some(e))
    }
}

/// Write a new generation of the tree under `src` into `store`.
pub fn sync(
    src: BorrowedFd<'_>,
    store: &Store,
    keep: usize,
    cancel: &AtomicBool,
) -> Result<SyncReport> {
    let t0 = Instant::now();
    ignore_sigio();
    let _lock = store.lock()?;
    let swept = store.sweep()?;
    // What a previous prune left for a background emptier that did not run
    // (killed with its service, say): freed now, before writing.
    store.empty_trash(false)?;
    let prev_gen = store.newest_complete()?;
    let (prev_entries, _) = match prev_gen {
        Some(g) => store.manifest(g)?,
        None => (Vec::new(), 0),
    };
    let prev_map: HashMap<&[u8], &Entry> = prev_entries
        .iter()
        .map(|e| (e.path.as_slice(), e))
        .collect();
    let scan = scan::walk(src)?;
    let live = match prev_gen {
        Some(g) => store.live_index(g, scan.dev),
        None => Default::default(),
    };
    let g = store.next_gen()?;
    let gname = gen_name(g);
    let sfd = store.fd();
    let objects = store.objects_fd()?;
    let mut cx = Ctx {
        src,
        objects: objects.as_fd(),
        buf: Vec::new(),
        cancel,
        created: Vec::new(),
        tmp_seq: 0,
    };
    let result = (|| -> Result<(Vec<Entry>, SyncReport)> {
        rustix::fs::mkdirat(sfd, gname.as_str(), Mode::from_raw_mode(0o700))
            .with_context(|| format!("store {}: mkdir {gname}", store.path.display()))?;
        let (entries, mut rep) = write_entries(&mut cx, &scan, &prev_map, &live)?;
        let bytes = manifest::encode(&entries, now_unix_ns());
        let mf = rustix::fs::openat(
            sfd,
            format!("{gname}/manifest").as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let mut off = 0;
        while off < bytes.len() {
            off += rustix::io::pwrite(&mf, &bytes[off..], off as u64)?;
        }
        drop(mf);
        // Every object, objects directory, the manifest and the generation
        // directory made durable at once: syncfs(2) writes back and commits
        // the store's filesystem in one journal commit and one cache flush
        // (one fsync per file costs a flush each), and since Linux 5.8 it
        // reports any writeback error on that filesystem since the store was
        // opened, so an EIO is never missed.
        rustix::fs::syncfs(sfd).context("flushing the store (syncfs)")?;
        rep.skipped_mounts = scan.skipped_mounts.iter().map(|p| show(p)).collect();
        Ok((entries, rep))
    })();
    let (entries, mut rep) = match result {
        Ok(x) => x,
        Err(e) => {
            // The previous generation was only ever read; remove the new
            // one and the objects only it would have used, so a full disk is
            // not fuller for the next try.
            if let Ok(n) = CString::new(gname.clone()) {
                let _ = fs::remove_tree(sfd, &n);
            }
            for o in &cx.created {
                let _ = rustix::fs::unlinkat(&objects, o.as_str(), AtFlags::empty());
            }
            let _ = store.sweep();
            return Err(e.context(format!(
                "sync failed; nothing switched, the store still holds {}",
                prev_gen.map_or("no generation".to_string(), gen_name)
            )));
        }
    };
    store.switch(g)?;
    rep.pruned = store.prune(keep, swept > 0)?;
    rep.generation = g;
    rep.previous_generation = prev_gen;
    rep.entries = entries.len() as u64;
    rep.swept_partials = swept;
    rep.duration_ns = t0.elapsed().as_nanos() as u64;
    Ok(rep)
}

fn write_entries(
    cx: &mut Ctx<'_>,
    scan: &scan::Scan,
    prev: &HashMap<&[u8], &Entry>,
    live: &scan::LiveIndex,
) -> Result<(Vec<Entry>, SyncReport)> {
    let mut rep = SyncReport::default();
    let mut out = Vec::with_capacity(scan.found.len());
    // First name written for each multiply-linked inode.
    let mut links: HashMap<u64, Vec<u8>> = HashMap::new();
    for f in &scan.found {
        if cx.cancel.load(Ordering::Relaxed) {
            bail!(crate::sys::signals::Interrupted);
        }
        let cur = &f.e;
        let rel = cur.path.as_slice();
        match cur.kind {
            Kind::File => {}
            _ => {
                out.push(cur.clone());
                continue;
            }
        }
        if f.nlink > 1
            && let Some(first) = links.get(&cur.ino)
        {
            // Another name of a file already in this generation: the
            // manifest says so; a restore links it.
            let mut e = cur.clone();
            e.kind = Kind::HardLink(first.clone());
            out.push(e);
            continue;
        }
        let p = prev.get(rel).copied();
        let mut verdict = scan::classify(cur, p, live);
        let mut entry = None;
        if verdict == Verdict::SameIfContent
            && let Some(p) = p
        {
            match cx.same_content(rel, cur, p)? {
                Some(e) => {
                    verdict = Verdict::Same;
                    entry = Some(e);
                }
                None => verdict = Verdict::Changed,
            }
        }
        let e = match (verdict, p) {
            // Unchanged: the new generation refers to the same object.
            (Verdict::Same, Some(p)) if p.hash.is_some() => {
                rep.shared_files += 1;
                // The walk does not read a file's xattrs; unchanged, they are
                // the previous generation's (setting one moves the ctime).
                let mut e = entry.unwrap_or_else(|| cur.clone());
                e.hash = p.hash;
                e.xattrs = p.xattrs.clone();
                e
            }
            _ => match cx.copy_file(rel)? {
                Copied::Done(e) => {
                    rep.copied_files += 1;
                    rep.copied_bytes += e.size;
                    e
                }
                Copied::Gone => continue,
                Copied::Unsettled => {
                    rep.unsettled.push(show(rel));
                    match p {
                        Some(p) if p.is_file() && p.hash.is_some() => p.clone(),
                        _ => continue,
                    }
                }
            },
        };
        if f.nlink > 1 {
            links.insert(cur.ino, rel.to_vec());
        }
        rep.files += 1;
        rep.bytes += e.size;
        out.push(e);
    }
    Ok((out, rep))
}
