//! Writing one generation: walk DIR, refer to the current generation's
//! object for what is unchanged (never copied again), copy what changed into
//! new objects, write the manifest, make all of it durable (syncfs of the
//! store), switch `current` (rename + fsync), prune.
//!
//! A file that changes while it is copied (its size, mtime or ctime differ
//! after the copy, or a recently touched file hashes differently on a second
//! read) is stored as the prefix that was copied when it only grew (its
//! first bytes read the same again), else copied again a few times and, if
//! it never holds still, stored as copied and marked torn in the manifest.
//! Every regular file is in every generation; across files a generation is
//! not one instant (see docs/persist.md).

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use rustix::io::Errno;

use super::content;
use super::manifest::{Entry, Kind};
use super::scan::{self, Verdict, show};
use super::store::{Id, NewGeneration, Store, gen_name};
use crate::sys::fs::{self, Obj};
use crate::sys::signals::Interrupted;

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
    /// Files that grew while copied: stored as their beginning, as long as
    /// the file was when its copy began.
    pub prefixed: Vec<PrefixFile>,
    /// Files stored as copied although they changed in place throughout
    /// (or are journals journald had open): marked torn in the manifest.
    pub torn: Vec<TornFile>,
    /// Shared objects found missing, of the wrong size or with content
    /// changed in the store: copied again from DIR (the damaged path in the
    /// store named).
    pub repaired_objects: Vec<String>,
    /// How the generation built on was found when `current` was missing or
    /// its manifest damaged.
    pub notes: Vec<String>,
    /// Older generations whose manifest did not read, moved aside.
    pub moved_aside: Vec<String>,
    pub skipped_mounts: Vec<String>,
    /// Entries whose path below DIR is too long to store (over PATH_MAX),
    /// left out with everything below them; the sync exits 1.
    pub too_long: Vec<String>,
    pub pruned: Vec<u64>,
    pub swept_partials: usize,
    /// st_dev of the filesystem DIR was read from.
    pub dir_dev: u64,
    pub duration_ns: u64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PrefixFile {
    pub path: String,
    pub stored_bytes: u64,
    pub size_after_copy_bytes: u64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct TornFile {
    pub path: String,
    pub reason: String,
}

pub fn now_unix_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

struct Ctx<'a> {
    src: BorrowedFd<'a>,
    /// The generation being written: where copied content goes.
    out: Box<dyn NewGeneration + 'a>,
    buf: Vec<u8>,
    cancel: &'a AtomicBool,
    store: &'a dyn Store,
    /// Objects found sound (present, right size, sealed or hashed) during
    /// this sync.
    checked: HashSet<Id>,
}

enum Copied {
    Done(Entry, How),
    /// Deleted or replaced by a non-file since the walk.
    Gone,
}

/// How a copied file's bytes relate to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// One version that existed as a whole.
    Whole,
    /// The file grew while it was copied (to this size); the object is its
    /// unchanged beginning, as long as the file was when the copy began.
    Prefix(u64),
    /// Stored as read, possibly mixing versions; the reason.
    Torn(&'static str),
}

/// Tries at a read lease before copying without one.
const LEASE_TRIES: u64 = 3;

/// A read lease (fcntl F_SETLEASE) on a file being copied. The kernel grants
/// it only when no one has the file open for writing, and while we hold it
/// an open for writing or a truncate blocks until we let go: the bytes we
/// copy are one version, whatever the writer's timing. Released on drop.
pub struct Lease<'f>(BorrowedFd<'f>);

impl<'f> Lease<'f> {
    /// The lease, or whether trying again may get one (EAGAIN: open for
    /// writing now; anything else, such as EACCES for a file someone else
    /// owns when not root, will not change).
    pub fn take(fd: &'f OwnedFd) -> Result<Lease<'f>, bool> {
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
pub fn ignore_sigio() {
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

/// Copies of a file that keeps changing in place before it is stored as
/// copied and marked torn.
const TRIES: u64 = 8;

/// journald's file header: signature, then at byte 16 the state (0 offline,
/// 1 online, 2 archived). An online journal is being written by journald and
/// a copy of it may not open cleanly.
const JOURNAL_SIGNATURE: &[u8; 8] = b"LPKSHHRH";
const JOURNAL_STATE_ONLINE: u8 = 1;

fn is_online_journal(rel: &[u8], stored: BorrowedFd<'_>) -> bool {
    if !(rel.ends_with(b".journal") || rel.ends_with(b".journal~")) {
        return false;
    }
    let mut head = [0u8; 17];
    matches!(rustix::io::pread(stored, &mut head, 0), Ok(17))
        && &head[..8] == JOURNAL_SIGNATURE
        && head[16] == JOURNAL_STATE_ONLINE
}

/// The first `len` bytes of `a` and `b` are equal (a byte compare, no hash:
/// reading a file twice costs far less than hashing it twice).
fn same_bytes(a: BorrowedFd<'_>, b: BorrowedFd<'_>, len: u64, buf: &mut Vec<u8>) -> Result<bool> {
    buf.resize(2 * content::BUF, 0);
    let (x, y) = buf.split_at_mut(content::BUF);
    let mut off = 0u64;
    while off < len {
        let want = ((len - off) as usize).min(content::BUF);
        let n = rustix::io::pread(a, &mut x[..want], off)?;
        if n == 0 {
            return Ok(false);
        }
        let mut m = 0;
        while m < n {
            let k = rustix::io::pread(b, &mut y[m..n], off + m as u64)?;
            if k == 0 {
                return Ok(false);
            }
            m += k;
        }
        if x[..n] != y[..n] {
            return Ok(false);
        }
        off += n as u64;
    }
    Ok(true)
}

impl Ctx<'_> {
    /// Copy one regular file into the new generation, with its metadata
    /// taken from the same fstat as its content. A file that grew during
    /// the copy but whose first bytes did not change is stored as that
    /// prefix (what a log reader expects); one that changed otherwise is
    /// copied again up to [`TRIES`] times, then stored as copied and marked
    /// torn.
    fn copy_file(&mut self, rel: &[u8]) -> Result<Copied> {
        let mut lease_misses = 0;
        let mut attempt = 0u64;
        loop {
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
            attempt += 1;
            write_barrier(&fd);
            let pre = rustix::fs::fstat(&fd)?;
            let xattrs = match Obj::Fd(fd.as_fd()).all() {
                Ok(x) => x,
                Err(Errno::NOENT) => return Ok(Copied::Gone),
                Err(e) => return Err(e).with_context(|| format!("xattrs of {}", show(rel))),
            };
            let dst = self
                .out
                .new_object()
                .with_context(|| format!("store: create the object for {}", show(rel)))?;
            let hash = content::copy_hash(fd.as_fd(), &pre, Some(dst.fd()), &mut self.buf)
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
            let mut how = How::Whole;
            if !settled {
                // Grown, with the bytes we copied still the same: those bytes
                // are a prefix of the file as it is now (an appender only
                // adds after them), as long as it was when the copy began.
                let now = rustix::fs::fstat(&fd)?;
                let grew = now.st_ino == pre.st_ino && now.st_size >= pre.st_size;
                if grew && same_bytes(fd.as_fd(), dst.fd(), pre.st_size as u64, &mut self.buf)? {
                    how = How::Prefix(now.st_size as u64);
                } else if attempt < TRIES {
                    drop(leased);
                    self.out.drop_object(dst);
                    std::thread::sleep(Duration::from_millis(5 * attempt));
                    continue;
                } else {
                    how = How::Torn("changed in place throughout the copy");
                }
            }
            drop(leased);
            if !matches!(how, How::Torn(_)) && is_online_journal(rel, dst.fd()) {
                how = How::Torn("a journal journald had open (online)");
            }
            // Sealed before it is named: a write to it later breaks the
            // seal and the next sync checks it before sharing it.
            let st = rustix::fs::fstat(dst.fd())?;
            super::store::seal(dst.fd(), &st, &hash)
                .with_context(|| format!("store: sealing the object of {}", show(rel)))?;
            self.out.keep_object(dst, &hash)?;
            let mut e = scan::entry_from_stat(rel.to_vec(), &pre);
            e.hash = Some(hash);
            e.xattrs = xattrs;
            e.torn = matches!(how, How::Torn(_));
            return Ok(Copied::Done(e, how));
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
    store: &dyn Store,
    keep: usize,
    cancel: &AtomicBool,
) -> Result<SyncReport> {
    let t0 = Instant::now();
    ignore_sigio();
    let _lock = store.lock()?;
    let left = store.clear_leftovers()?;
    let resolved = store.resolve()?;
    let prev_gen = resolved.generation;
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
    let failed = |e: anyhow::Error| {
        e.context(format!(
            "sync failed; nothing switched, the store still holds {}",
            prev_gen.map_or("no generation".to_string(), gen_name)
        ))
    };
    let mut cx = Ctx {
        src,
        out: store.begin(g).map_err(failed)?,
        buf: Vec::new(),
        cancel,
        store,
        checked: HashSet::new(),
    };
    let result = write_entries(&mut cx, &scan, &prev_map, &live).and_then(|(entries, rep)| {
        cx.out.finish(&entries, now_unix_ns())?;
        Ok((entries, rep))
    });
    let (entries, mut rep) = match result {
        Ok(x) => x,
        Err(e) => {
            cx.out.abandon();
            return Err(failed(e));
        }
    };
    drop(cx);
    rep.skipped_mounts = scan.skipped_mounts.iter().map(|p| show(p)).collect();
    rep.too_long = scan.too_long.iter().map(|p| scan::show_long(p)).collect();
    store.switch(g)?;
    let pruned = store.prune(keep, left.swept > 0 || left.interrupted_prune)?;
    rep.pruned = pruned.generations;
    rep.moved_aside = pruned.moved_aside;
    rep.notes = resolved.notes;
    rep.generation = g;
    rep.previous_generation = prev_gen;
    rep.entries = entries.len() as u64;
    rep.swept_partials = left.swept;
    rep.dir_dev = scan.dev;
    rep.duration_ns = t0.elapsed().as_nanos() as u64;
    Ok(rep)
}

/// A regular file under `root` that some process has open for writing
/// (a read lease is refused), if any.
pub fn open_for_writing(root: BorrowedFd<'_>) -> Result<Option<String>> {
    ignore_sigio();
    for f in scan::walk(root)?.found.iter().filter(|f| f.e.is_file()) {
        let Ok((fd, _)) = fs::open_regular_beneath(root, &f.e.path) else {
            continue;
        };
        if matches!(Lease::take(&fd), Err(true)) {
            return Ok(Some(show(&f.e.path)));
        }
    }
    Ok(None)
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
            bail!(Interrupted);
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
        if verdict == Verdict::Same
            && let Some(p) = p
            && let Some(h) = p.hash
            && !cx.checked.contains(&h)
        {
            // Shared only when its object is there with the right size: a
            // damaged store must not spread into the new generation while
            // the data is still in RAM to copy again.
            let problem = cx.store.object_problem(&h, p.size).or_else(|| {
                (!cx.store.object_sealed(&h) && !cx.store.check_and_seal(&h, &mut cx.buf)).then(
                    || {
                        format!(
                            "{} does not hold the content its manifest names (changed in the store)",
                            cx.store.object_path(&h).display()
                        )
                    },
                )
            });
            match problem {
                None => {
                    cx.checked.insert(h);
                }
                Some(why) => {
                    cx.store.discard_object(&h)?;
                    rep.repaired_objects.push(why);
                    verdict = Verdict::Changed;
                }
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
                Copied::Done(e, how) => {
                    rep.copied_files += 1;
                    rep.copied_bytes += e.size;
                    match how {
                        How::Whole => {}
                        How::Prefix(now) => rep.prefixed.push(PrefixFile {
                            path: show(rel),
                            stored_bytes: e.size,
                            size_after_copy_bytes: now,
                        }),
                        How::Torn(why) => rep.torn.push(TornFile {
                            path: show(rel),
                            reason: why.to_string(),
                        }),
                    }
                    e
                }
                Copied::Gone => continue,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A read lease is refused, retryably, exactly while someone holds the
    /// file open for writing: what the copy waits on and disable looks for.
    #[test]
    fn a_file_open_for_writing_is_found_and_refuses_a_lease_until_closed() {
        let d = tempfile::tempdir_in("/var/tmp").unwrap();
        let dir = std::fs::File::open(d.path()).unwrap();
        let root = dir.as_fd();
        std::fs::write(d.path().join("idle"), b"i").unwrap();
        std::fs::write(d.path().join("log"), b"l").unwrap();
        let (fd, _) = fs::open_regular_beneath(root, b"log").unwrap();
        assert!(Lease::take(&fd).is_ok(), "no writer: a lease");
        assert_eq!(open_for_writing(root).unwrap(), None);

        let w = std::fs::OpenOptions::new()
            .append(true)
            .open(d.path().join("log"))
            .unwrap();
        assert!(
            matches!(Lease::take(&fd), Err(true)),
            "open for writing: refused, worth another try"
        );
        assert_eq!(open_for_writing(root).unwrap().as_deref(), Some("log"));
        drop(w);
        assert!(Lease::take(&fd).is_ok(), "the writer closed it");
        assert_eq!(open_for_writing(root).unwrap(), None);
    }

    fn stat_at(ctime: (i64, u32)) -> rustix::fs::Stat {
        // SAFETY: a stat is plain integers; all zero is a valid one.
        let mut st: rustix::fs::Stat = unsafe { std::mem::zeroed() };
        st.st_ctime = ctime.0 as _;
        st.st_ctime_nsec = ctime.1 as _;
        st
    }

    #[test]
    fn recent_means_changed_within_the_last_two_seconds() {
        let now = now_unix_ns();
        let (s, ns) = ((now / 1_000_000_000) as i64, (now % 1_000_000_000) as u32);
        assert!(recent(&stat_at((s, ns))), "changed now");
        assert!(recent(&stat_at((s - 1, ns))), "a second ago");
        assert!(!recent(&stat_at((s - 3, ns))), "three seconds ago");
        assert!(!recent(&stat_at((s - 3, 999_999_999))), "nanoseconds count");
        assert!(!recent(&stat_at((s - 2, 0))), "two seconds and more ago");
    }

    #[test]
    fn same_stat_is_size_inode_mtime_and_ctime_not_atime() {
        let a = stat_at((100, 5));
        let mut b = a;
        b.st_atime = 7;
        assert!(same_stat(&a, &b), "only the atime moved");
        for change in [
            |x: &mut rustix::fs::Stat| x.st_size = 1,
            |x: &mut rustix::fs::Stat| x.st_ino = 1,
            |x: &mut rustix::fs::Stat| x.st_mtime = 1,
            |x: &mut rustix::fs::Stat| x.st_mtime_nsec = 1,
            |x: &mut rustix::fs::Stat| x.st_ctime = 1,
            |x: &mut rustix::fs::Stat| x.st_ctime_nsec = 1,
        ] {
            let mut c = a;
            change(&mut c);
            assert!(!same_stat(&a, &c));
            assert!(!same_stat(&c, &a));
        }
    }

    #[test]
    fn only_an_online_journal_by_name_and_header_is_one() {
        let d = tempfile::tempdir_in("/var/tmp").unwrap();
        let head = |state: u8| {
            let mut h = JOURNAL_SIGNATURE.to_vec();
            h.extend([0u8; 8]);
            h.push(state);
            h.extend([0u8; 100]);
            h
        };
        let check = |name: &str, data: &[u8]| {
            let p = d.path().join(name);
            std::fs::write(&p, data).unwrap();
            let f = std::fs::File::open(&p).unwrap();
            is_online_journal(name.as_bytes(), f.as_fd())
        };
        assert!(check("system.journal", &head(1)));
        assert!(check("user.journal~", &head(1)));
        assert!(!check("system.journal", &head(0)), "offline");
        assert!(!check("system.journal", &head(2)), "archived");
        assert!(!check("system.log", &head(1)), "not a journal's name");
        assert!(!check("short.journal", &head(1)[..16]), "no state byte");
        let mut other = head(1);
        other[0] = b'X';
        assert!(!check("other.journal", &other), "another signature");
    }

    #[test]
    fn same_bytes_compares_the_first_len_bytes_across_buffers() {
        let d = tempfile::tempdir_in("/var/tmp").unwrap();
        let big = content::BUF + 4096;
        let a: Vec<u8> = (0..big).map(|i| (i % 251) as u8).collect();
        let open = |name: &str, data: &[u8]| {
            let p = d.path().join(name);
            std::fs::write(&p, data).unwrap();
            std::fs::File::open(&p).unwrap()
        };
        let fa = open("a", &a);
        let same = open("same", &a);
        let mut late = a.clone();
        late[content::BUF + 100] ^= 1;
        let late = open("late", &late);
        let mut early = a.clone();
        early[0] ^= 1;
        let early = open("early", &early);
        let longer = open("longer", &[a.as_slice(), b"more"].concat());
        let short = open("short", &a[..content::BUF]);
        let mut buf = Vec::new();
        let mut cmp = |b: &std::fs::File, len: usize| {
            same_bytes(fa.as_fd(), b.as_fd(), len as u64, &mut buf).unwrap()
        };
        assert!(cmp(&same, big));
        assert!(cmp(&longer, big), "a prefix of what the file holds now");
        assert!(!cmp(&late, big), "a byte past the first buffer differs");
        assert!(
            cmp(&late, content::BUF + 100),
            "the difference lies past len"
        );
        assert!(!cmp(&early, 1));
        assert!(!cmp(&short, big), "the other file ends first");
        assert!(cmp(&early, 0));
    }
}
