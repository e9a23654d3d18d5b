//! The generation store, the one [`Store`] backend: STORE/gen-NNNNNN
//! directories (each holding the generation's `manifest`: every entry of
//! DIR with its metadata and the identity of its content), STORE/objects
//! (file contents, one file per distinct content, named by its identity and
//! shared by every generation that holds that content) and one `current`
//! symlink naming the newest complete generation.
//!
//! The pointer is switched the only way that survives a power cut at any
//! instant: a new symlink under a temp name, rename(2) over `current`, fsync
//! of STORE. A generation is written in full and made durable before the
//! pointer names it; a generation newer than `current` (left by a kill) is
//! never read and is swept by the next sync. Objects hold content only (mode 0600, owned by whoever syncs):
//! modes, owners, times and xattrs live in the manifest, so an unchanged file
//! is shared between generations whatever its metadata does, and a sync or
//! a prune touches only what changed, never one entry per file of DIR.

use std::collections::HashSet;
use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::{Id, Leftovers, NewGeneration, NewObject, Pruned, Store, StoreDir, gen_name};
use crate::persist::manifest::{self, Entry, hex, unhex};
use crate::sys::knockout::durable;
use crate::sys::{atomic, fs};

const CURRENT: &str = "current";
const CURRENT_TMP: &str = ".current.tmp";
const PARTIAL: &str = ".partial-gen-";
const OBJECTS: &str = "objects";
const TRASH: &str = "trash";
const TRASH_LOCK: &str = "trash.lock";
/// Prefix of an object being written (renamed to its hash when complete).
const OBJECT_TMP: &str = ".tmp-";

/// `objects/ab/abcd…`: a content object by identity, fanned out over 256
/// directories so none grows huge.
fn object_rel(h: &Id) -> String {
    format!("{OBJECTS}/{}", object_name(h))
}

/// `ab/abcd…` under STORE/objects.
fn object_name(h: &Id) -> String {
    format!("{:02x}/{}", h[0], hex(h))
}

pub struct GenStore {
    dir: StoreDir,
}

fn parse_gen(name: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(name).ok()?.strip_prefix("gen-")?;
    (s.len() >= 6 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

impl GenStore {
    pub fn new(dir: StoreDir) -> GenStore {
        GenStore { dir }
    }

    fn show(&self) -> std::path::Display<'_> {
        self.dir.path.display()
    }

    /// A prune was killed after moving a generation into the trash: the
    /// objects only it held may still be in `objects/`.
    fn interrupted_prune(&self) -> bool {
        let Ok(t) = fs::open_dir_beneath(self.fd(), TRASH.as_bytes()) else {
            return false;
        };
        fs::names(t.as_fd()).is_ok_and(|v| v.iter().any(|n| parse_gen(n.to_bytes()).is_some()))
    }

    /// STORE/objects, created when missing.
    fn objects_fd(&self) -> Result<OwnedFd> {
        match rustix::fs::mkdirat(self.fd(), OBJECTS, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => {
                return Err(e).with_context(|| format!("store {}: mkdir objects", self.show()));
            }
        }
        fs::open_dir_beneath(self.fd(), OBJECTS.as_bytes())
            .with_context(|| format!("store {}: open objects", self.show()))
    }

    /// STORE/trash, created when missing.
    fn trash_fd(&self) -> Result<OwnedFd> {
        match rustix::fs::mkdirat(self.fd(), TRASH, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e).context("store: mkdir trash"),
        }
        Ok(fs::open_dir_beneath(self.fd(), TRASH.as_bytes())?)
    }

    /// Remove what a killed sync left: generations newer than `current`
    /// (without a `current`: only those newer than the newest complete one
    /// whose manifest does not read back whole; a lost pointer never costs a
    /// good generation), a pointer temp and objects never finished
    /// (`objects/.tmp-*`).
    fn sweep(&self) -> Result<usize> {
        let cur = self.current().unwrap_or(None);
        let newest = match cur {
            Some(_) => None,
            None => self.resolve_from(None)?.generation,
        };
        let mut n = 0;
        for name in fs::names(self.fd())? {
            let b = name.to_bytes();
            let unfinished = parse_gen(b).is_some_and(|g| match cur {
                Some(c) => g > c,
                None => newest.is_none_or(|ok| g > ok) && self.manifest(g).is_err(),
            });
            // A temp file of a replaced record (live index, last-sync) a kill -9 left.
            let temp = b.starts_with(atomic::TEMP_PREFIX.as_bytes());
            if unfinished
                || temp
                || b.starts_with(PARTIAL.as_bytes())
                || b == CURRENT_TMP.as_bytes()
            {
                fs::remove_tree(self.fd(), &name)
                    .with_context(|| format!("removing leftover {}", String::from_utf8_lossy(b)))?;
                n += 1;
            }
        }
        let objects = self.objects_fd()?;
        for name in fs::names(objects.as_fd())? {
            if name.to_bytes().starts_with(OBJECT_TMP.as_bytes()) {
                fs::remove_tree(objects.as_fd(), &name)?;
                n += 1;
            }
        }
        Ok(n)
    }

    fn fsync_dir(&self) -> Result<()> {
        rustix::fs::fsync(self.fd()).with_context(|| format!("store {}: fsync", self.show()))
    }

    /// Every object name under objects/ab/ with the identity it parses to.
    fn each_object(&self, mut f: impl FnMut(BorrowedFd<'_>, &str, Option<Id>)) -> Result<()> {
        let objects = self.objects_fd()?;
        for sub in fs::names(objects.as_fd())? {
            let Ok(d) = fs::open_dir_beneath(objects.as_fd(), sub.to_bytes()) else {
                continue;
            };
            for n in fs::names(d.as_fd())? {
                let name = n.to_string_lossy();
                let id = unhex(&name)
                    .ok()
                    .and_then(|v| <Id>::try_from(v.as_slice()).ok());
                f(d.as_fd(), &name, id);
            }
        }
        Ok(())
    }
}

impl Store for GenStore {
    fn dir(&self) -> &StoreDir {
        &self.dir
    }

    fn current(&self) -> Result<Option<u64>> {
        match rustix::fs::readlinkat(self.fd(), CURRENT, Vec::new()) {
            Ok(t) => match parse_gen(t.as_bytes()) {
                Some(g) => Ok(Some(g)),
                None => bail!(
                    "store {}: `current` points to {:?}, not a generation",
                    self.show(),
                    t
                ),
            },
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e).with_context(|| format!("store {}: readlink current", self.show())),
        }
    }

    /// Generation directories present (`gen-NNNNNN`), ascending.
    fn generations(&self) -> Result<Vec<u64>> {
        let mut v: Vec<u64> = fs::names(self.fd())
            .with_context(|| format!("listing store {}", self.show()))?
            .iter()
            .filter_map(|n| parse_gen(n.to_bytes()))
            .collect();
        v.sort_unstable();
        Ok(v)
    }

    fn manifest(&self, g: u64) -> Result<(Vec<Entry>, i128)> {
        let p = self.manifest_path(g);
        let bytes = super::read_beneath(self.fd(), &format!("{}/manifest", gen_name(g)))
            .with_context(|| format!("reading {}", p.display()))?;
        manifest::decode(&bytes).with_context(|| format!("{}", p.display()))
    }

    fn open_object(&self, h: &Id) -> rustix::io::Result<OwnedFd> {
        fs::open_beneath(self.fd(), object_rel(h).as_bytes(), OFlags::RDONLY)
    }

    fn object_problem(&self, h: &Id, size: u64) -> Option<String> {
        let rel = object_rel(h);
        let p = self.dir.path.join(&rel);
        match rustix::fs::statat(self.fd(), rel.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if st.st_mode & libc::S_IFMT != libc::S_IFREG => {
                Some(format!("{} is not a regular file", p.display()))
            }
            Ok(st) if st.st_size as u64 != size => Some(format!(
                "{} holds {} bytes, the manifest says {size}",
                p.display(),
                st.st_size
            )),
            Ok(_) => None,
            Err(Errno::NOENT) => Some(format!("{} is missing", p.display())),
            Err(e) => Some(format!("{}: {e}", p.display())),
        }
    }

    fn unreferenced_objects(&self, referenced: &HashSet<Id>) -> u64 {
        let mut n = 0;
        let _ = self.each_object(|_, _, id| {
            n += u64::from(!id.is_some_and(|h| referenced.contains(&h)));
        });
        n
    }

    fn current_path(&self) -> PathBuf {
        self.dir.path.join(CURRENT)
    }

    fn manifest_path(&self, g: u64) -> PathBuf {
        self.dir.path.join(gen_name(g)).join("manifest")
    }

    fn object_path(&self, h: &Id) -> PathBuf {
        self.dir.path.join(object_rel(h))
    }

    fn clear_leftovers(&self) -> Result<Leftovers> {
        // Looked at before the sweep: a prune killed after moving a
        // generation into the trash left the objects only it held.
        let interrupted_prune = self.interrupted_prune();
        let swept = self.sweep()?;
        // What a previous prune left for a background emptier that did not
        // run (killed with its service, say): freed now, before writing.
        self.empty_trash(false)?;
        Ok(Leftovers {
            swept,
            interrupted_prune,
        })
    }

    fn begin(&self, g: u64) -> Result<Box<dyn NewGeneration + '_>> {
        let objects = self.objects_fd()?;
        let w = GenWriter {
            store: self,
            g,
            objects,
            created: Vec::new(),
            tmp_seq: 0,
        };
        if let Err(e) =
            rustix::fs::mkdirat(self.fd(), gen_name(g).as_str(), Mode::from_raw_mode(0o700))
        {
            Box::new(w).abandon();
            return Err(e).with_context(|| format!("store {}: mkdir {}", self.show(), gen_name(g)));
        }
        Ok(Box::new(w))
    }

    fn discard_object(&self, h: &Id) -> Result<()> {
        let trash = self.trash_fd()?;
        let objects = self.objects_fd()?;
        match rustix::fs::renameat(
            &objects,
            object_name(h).as_str(),
            &trash,
            format!("{}.damaged", hex(h)).as_str(),
        ) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e).context("store: moving a damaged object aside"),
        }
    }

    /// Symlink under a temp name, rename over `current`, fsync STORE.
    fn switch(&self, g: u64) -> Result<()> {
        let fd = self.fd();
        let _ = rustix::fs::unlinkat(fd, CURRENT_TMP, AtFlags::empty());
        rustix::fs::symlinkat(gen_name(g), fd, CURRENT_TMP)
            .context("creating the new `current` pointer")?;
        rustix::fs::renameat(fd, CURRENT_TMP, fd, CURRENT)
            .context("renaming the new `current` pointer into place")?;
        durable!("current-dir-fsync", "", self.fsync_dir())
    }

    fn prune(&self, keep: usize, full: bool) -> Result<Pruned> {
        let mut out = Pruned::default();
        let Some(cur) = self.current()? else {
            return Ok(out);
        };
        let fd = self.fd();
        let gens = self.generations()?;
        let mut older: Vec<u64> = Vec::new();
        for g in gens.iter().copied().filter(|&g| g < cur) {
            if let Err(e) = self.manifest(g) {
                // Not a generation a restore could use, and not to be
                // counted as kept: moved aside whole for inspection, never
                // deleted behind the user's back.
                let aside = format!("damaged-{}", gen_name(g));
                rustix::fs::renameat(fd, gen_name(g).as_str(), fd, aside.as_str())
                    .with_context(|| format!("moving {} aside", gen_name(g)))?;
                out.moved_aside.push(format!(
                    "{e:#}; moved to {}",
                    self.dir.path.join(&aside).display()
                ));
                continue;
            }
            older.push(g);
        }
        let keep_older = keep.max(1) - 1;
        let cut = older.len().saturating_sub(keep_older);
        older.truncate(cut);
        let trash = self.trash_fd()?;
        let mut candidates: HashSet<Id> = HashSet::new();
        for &g in &older {
            // A generation whose manifest cannot be read offers no candidates
            // (its objects are found by the next full scan).
            if let Ok((entries, _)) = self.manifest(g) {
                candidates.extend(entries.iter().filter_map(|e| e.hash));
            }
            rustix::fs::renameat(fd, gen_name(g).as_str(), &trash, gen_name(g).as_str())
                .with_context(|| format!("removing old generation {}", gen_name(g)))?;
        }
        out.generations = older;
        if candidates.is_empty() && !full {
            return Ok(out);
        }
        let mut referenced: HashSet<Id> = HashSet::new();
        for g in self.generations()? {
            // Only the generations kept above remain, and their manifests
            // read; one that cannot be read now refers to nothing reachable.
            if let Ok((entries, _)) = self.manifest(g) {
                referenced.extend(entries.iter().filter_map(|e| e.hash));
            }
        }
        // Into the trash by rename: freeing a file's blocks costs a journal
        // round trip each on ext4 (more with `discard`), a rename does not;
        // the trash is emptied after the sync has returned.
        let discard = |dir: BorrowedFd<'_>, name: &str, hexname: &str| {
            let _ = rustix::fs::renameat(dir, name, &trash, hexname);
        };
        if full {
            self.each_object(|d, name, id| {
                if !id.is_some_and(|h| referenced.contains(&h)) {
                    discard(d, name, name);
                }
            })?;
        } else {
            let objects = self.objects_fd()?;
            for h in candidates.difference(&referenced) {
                discard(objects.as_fd(), &object_name(h), &hex(h));
            }
        }
        // No fsync: a removal lost to a crash only leaves garbage for a later
        // full scan; `current` is already durable.
        Ok(out)
    }

    fn empty_trash(&self, wait: bool) -> Result<()> {
        let lock = rustix::fs::openat(
            self.fd(),
            TRASH_LOCK,
            OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::from_raw_mode(0o600),
        )?;
        let op = if wait {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::NonBlockingLockExclusive
        };
        if rustix::fs::flock(&lock, op).is_err() {
            return Ok(());
        }
        let trash = self.trash_fd()?;
        fs::clear_dir(trash.as_fd()).context("emptying the store's trash")?;
        Ok(())
    }
}

/// A generation being written: STORE/gen-N (its manifest last) and the
/// objects it adds, each written under a temp name in objects/ and renamed
/// to its identity when whole.
struct GenWriter<'a> {
    store: &'a GenStore,
    g: u64,
    /// STORE/objects.
    objects: OwnedFd,
    /// Objects this generation added (removed again if it is abandoned).
    created: Vec<String>,
    tmp_seq: u64,
}

impl NewGeneration for GenWriter<'_> {
    fn new_object(&mut self) -> Result<NewObject> {
        self.tmp_seq += 1;
        let name = format!("{OBJECT_TMP}{}-{}", std::process::id(), self.tmp_seq);
        let fd = rustix::fs::openat(
            &self.objects,
            name.as_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        Ok(NewObject { fd, name })
    }

    /// Give the finished temp object its name (its content identity). An
    /// object of that name already holds the same content: it is kept (it
    /// may be referenced and is durable) and the temp one dropped.
    fn keep_object(&mut self, obj: NewObject, h: &Id) -> Result<()> {
        let sub = format!("{:02x}", h[0]);
        match rustix::fs::mkdirat(&self.objects, sub.as_str(), Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e).context("store: mkdir in objects"),
        }
        let name = object_name(h);
        let tmp = obj.name.as_str();
        match rustix::fs::renameat_with(
            &self.objects,
            tmp,
            &self.objects,
            name.as_str(),
            RenameFlags::NOREPLACE,
        ) {
            Ok(()) => {
                self.created.push(name);
                Ok(())
            }
            Err(Errno::EXIST) => {
                rustix::fs::unlinkat(&self.objects, tmp, AtFlags::empty())?;
                Ok(())
            }
            Err(e) => Err(e).context("store: naming an object"),
        }
    }

    fn drop_object(&mut self, obj: NewObject) {
        let _ = rustix::fs::unlinkat(&self.objects, obj.name.as_str(), AtFlags::empty());
    }

    fn finish(&mut self, entries: &[Entry], synced_ns: i128) -> Result<()> {
        let bytes = manifest::encode(entries, synced_ns);
        let mf = rustix::fs::openat(
            self.store.fd(),
            format!("{}/manifest", gen_name(self.g)).as_str(),
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
        durable!("store-syncfs", "", rustix::fs::syncfs(self.store.fd()))
            .context("flushing the store (syncfs)")?;
        Ok(())
    }

    /// The previous generation was only ever read: remove the new one and
    /// the objects only it would have used, then what else a sweep finds.
    fn abandon(self: Box<Self>) {
        if let Ok(n) = CString::new(gen_name(self.g)) {
            let _ = fs::remove_tree(self.store.fd(), &n);
        }
        for o in &self.created {
            let _ = rustix::fs::unlinkat(&self.objects, o.as_str(), AtFlags::empty());
        }
        let _ = self.store.sweep();
    }
}
