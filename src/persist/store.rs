//! The generation store: STORE/gen-NNNNNN directories (each holding the
//! generation's `manifest`: every entry of DIR with its metadata and the
//! identity of its content), STORE/objects (file contents, one file per
//! distinct content, named by its identity and shared by every generation
//! that holds that content) and one `current` symlink naming the newest
//! complete generation.
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
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use super::manifest::{self, Entry, hex, unhex};
use super::scan::LiveIndex;
use crate::sys::atomic::AtomicWrite;
use crate::sys::fs;

pub const CURRENT: &str = "current";
const CURRENT_TMP: &str = ".current.tmp";
const PARTIAL: &str = ".partial-gen-";
const LIVE_INDEX: &str = "live-index";
const LOCK: &str = "lock";
pub const OBJECTS: &str = "objects";
const TRASH: &str = "trash";
const TRASH_LOCK: &str = "trash.lock";
/// Prefix of an object being written (renamed to its hash when complete).
pub const OBJECT_TMP: &str = ".tmp-";

/// `objects/ab/abcd…`: a content object by identity, fanned out over 256
/// directories so none grows huge.
pub fn object_rel(h: &[u8; 16]) -> String {
    format!("{OBJECTS}/{}", object_name(h))
}

/// `ab/abcd…` under STORE/objects.
pub fn object_name(h: &[u8; 16]) -> String {
    format!("{:02x}/{}", h[0], hex(h))
}

pub struct Store {
    pub path: PathBuf,
    fd: OwnedFd,
}

/// The generation a sync builds on and a restore loads, and what was passed
/// over to find it.
#[derive(Debug, Default)]
pub struct Resolved {
    pub generation: Option<u64>,
    pub notes: Vec<String>,
}

pub fn gen_name(g: u64) -> String {
    format!("gen-{g:06}")
}

fn parse_gen(name: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(name).ok()?.strip_prefix("gen-")?;
    (s.len() >= 6 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

impl Store {
    /// Open an existing store, checked (see `trust`): through a path with
    /// no symlink, owned and writable only by root (or the caller).
    pub fn open(path: &Path) -> Result<Store> {
        let t = super::trust::open(path)?;
        Ok(Store {
            path: t.path,
            fd: t.fd,
        })
    }

    /// Open the store, creating it (mode 0700: it holds other users' files)
    /// when missing, after the checks `open` makes passed for what exists.
    pub fn create(path: &Path) -> Result<Store> {
        let t = super::trust::create(path)?;
        Ok(Store {
            path: t.path,
            fd: t.fd,
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// One sync (or restore) at a time per store; a second one fails at once
    /// rather than queueing behind a long copy.
    pub fn lock(&self) -> Result<OwnedFd> {
        let f = rustix::fs::openat(
            &self.fd,
            LOCK,
            OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::from_raw_mode(0o600),
        )
        .with_context(|| format!("store {}: cannot open its lock file", self.path.display()))?;
        match rustix::fs::flock(&f, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(f),
            Err(Errno::WOULDBLOCK) => bail!(
                "store {}: another sync or restore is running on it; try again when it ends",
                self.path.display()
            ),
            Err(e) => Err(e).context("flock of the store's lock file"),
        }
    }

    /// The generation `current` points to.
    pub fn current(&self) -> Result<Option<u64>> {
        match rustix::fs::readlinkat(&self.fd, CURRENT, Vec::new()) {
            Ok(t) => match parse_gen(t.as_bytes()) {
                Some(g) => Ok(Some(g)),
                None => bail!(
                    "store {}: `current` points to {:?}, not a generation",
                    self.path.display(),
                    t
                ),
            },
            Err(Errno::NOENT) => Ok(None),
            Err(e) => {
                Err(e).with_context(|| format!("store {}: readlink current", self.path.display()))
            }
        }
    }

    /// Complete generations present (`gen-NNNNNN`), ascending.
    pub fn generations(&self) -> Result<Vec<u64>> {
        let mut v: Vec<u64> = fs::names(self.fd())
            .with_context(|| format!("listing store {}", self.path.display()))?
            .iter()
            .filter_map(|n| parse_gen(n.to_bytes()))
            .collect();
        v.sort_unstable();
        Ok(v)
    }

    /// The newest complete generation: the one `current` names when its
    /// manifest reads back whole; else (no `current`, or its manifest
    /// damaged) the newest older generation whose manifest reads and whose
    /// objects all exist with their sizes. A generation newer than `current`
    /// is a sync that did not finish and is never chosen.
    pub fn newest_complete(&self) -> Result<Option<u64>> {
        Ok(self.resolve()?.generation)
    }

    /// Generations to try, newest first: `current` and those older than it,
    /// or every generation when there is no `current`.
    pub fn candidates(&self) -> Result<Vec<u64>> {
        let cur = self.current().unwrap_or(None);
        let mut v: Vec<u64> = self
            .generations()?
            .into_iter()
            .filter(|&g| cur.is_none_or(|c| g <= c))
            .collect();
        v.reverse();
        Ok(v)
    }

    /// [`newest_complete`](Self::newest_complete), with what was skipped on
    /// the way and why, naming the damaged paths in the store.
    pub fn resolve(&self) -> Result<Resolved> {
        let cur = match self.current() {
            Ok(c) => c,
            Err(e) => {
                return Ok(Resolved {
                    notes: vec![format!("{e:#}")],
                    ..self.resolve_from(None)?
                });
            }
        };
        let mut r = self.resolve_from(cur)?;
        if cur.is_none() && !self.generations()?.is_empty() {
            r.notes.insert(
                0,
                format!(
                    "store {}: `current` is missing; looking for the newest generation that verifies",
                    self.path.display()
                ),
            );
        }
        Ok(r)
    }

    fn resolve_from(&self, cur: Option<u64>) -> Result<Resolved> {
        let mut notes = Vec::new();
        for g in self.candidates()? {
            let entries = match self.manifest(g) {
                Ok((e, _)) => e,
                Err(e) => {
                    notes.push(format!("{e:#}; skipping {}", gen_name(g)));
                    continue;
                }
            };
            if cur != Some(g) {
                let bad = self.check_objects(&entries);
                if !bad.is_empty() {
                    notes.push(format!(
                        "{} is damaged ({}); skipping it",
                        gen_name(g),
                        bad.join("; ")
                    ));
                    continue;
                }
                if !notes.is_empty() || cur.is_none() {
                    notes.push(format!(
                        "using {} of {}, the newest generation that verifies",
                        gen_name(g),
                        self.path.display()
                    ));
                }
            }
            return Ok(Resolved {
                generation: Some(g),
                notes,
            });
        }
        Ok(Resolved {
            generation: None,
            notes,
        })
    }

    /// Objects the entries refer to that are missing or not of the size the
    /// manifest gives, by their path in the store (cheap: one stat each).
    pub fn check_objects(&self, entries: &[Entry]) -> Vec<String> {
        let mut bad = Vec::new();
        let mut seen = HashSet::new();
        for e in entries.iter().filter(|e| e.is_file()) {
            let Some(h) = e.hash else {
                bad.push(format!(
                    "{}: no content identity in the manifest",
                    e.path.escape_ascii()
                ));
                continue;
            };
            if !seen.insert(h) {
                continue;
            }
            if let Some(why) = self.object_problem(&h, e.size) {
                bad.push(why);
            }
        }
        bad
    }

    /// Why the object `h` cannot hold `size` bytes of content: missing, or
    /// of another size; the message names its path in the store.
    pub fn object_problem(&self, h: &[u8; 16], size: u64) -> Option<String> {
        let rel = object_rel(h);
        let p = self.path.join(&rel);
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

    /// Move a damaged object out of the way (into the trash) so a fresh copy
    /// can take its name.
    pub fn discard_object(&self, h: &[u8; 16]) -> Result<()> {
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

    /// A prune was killed after moving a generation into the trash: the
    /// objects only it held may still be in `objects/`.
    pub fn interrupted_prune(&self) -> bool {
        let Ok(t) = fs::open_dir_beneath(self.fd(), TRASH.as_bytes()) else {
            return false;
        };
        fs::names(t.as_fd()).is_ok_and(|v| v.iter().any(|n| parse_gen(n.to_bytes()).is_some()))
    }

    pub fn manifest(&self, g: u64) -> Result<(Vec<Entry>, i128)> {
        let p = self.path.join(gen_name(g)).join("manifest");
        let bytes = std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?;
        manifest::decode(&bytes).with_context(|| format!("{}", p.display()))
    }

    /// STORE/objects, created when missing.
    pub fn objects_fd(&self) -> Result<OwnedFd> {
        match rustix::fs::mkdirat(&self.fd, OBJECTS, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("store {}: mkdir objects", self.path.display()));
            }
        }
        fs::open_dir_beneath(self.fd(), OBJECTS.as_bytes())
            .with_context(|| format!("store {}: open objects", self.path.display()))
    }

    /// The content object with identity `h`, opened for reading.
    pub fn open_object(&self, h: &[u8; 16]) -> rustix::io::Result<OwnedFd> {
        fs::open_beneath(self.fd(), object_rel(h).as_bytes(), OFlags::RDONLY)
    }

    /// Remove what a killed sync left: generations newer than `current`
    /// (without a `current`: only those newer than the newest complete one
    /// whose manifest does not read back whole; a lost pointer never costs a
    /// good generation), a pointer temp and objects never finished
    /// (`objects/.tmp-*`).
    pub fn sweep(&self) -> Result<usize> {
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
            if unfinished || b.starts_with(PARTIAL.as_bytes()) || b == CURRENT_TMP.as_bytes() {
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

    pub fn next_gen(&self) -> Result<u64> {
        let max_dir = self.generations()?.last().copied().unwrap_or(0);
        Ok(max_dir.max(self.current()?.unwrap_or(0)) + 1)
    }

    pub fn fsync_dir(&self) -> Result<()> {
        rustix::fs::fsync(&self.fd).with_context(|| format!("store {}: fsync", self.path.display()))
    }

    /// Point `current` at generation `g`, durably: symlink under a temp
    /// name, rename over `current`, fsync STORE.
    pub fn switch(&self, g: u64) -> Result<()> {
        let _ = rustix::fs::unlinkat(&self.fd, CURRENT_TMP, AtFlags::empty());
        rustix::fs::symlinkat(gen_name(g), &self.fd, CURRENT_TMP)
            .context("creating the new `current` pointer")?;
        rustix::fs::renameat(&self.fd, CURRENT_TMP, &self.fd, CURRENT)
            .context("renaming the new `current` pointer into place")?;
        self.fsync_dir()
    }

    /// Remove generations beyond the newest `keep` (the current one always
    /// stays), then the content objects no kept generation refers to. Called
    /// only after the new pointer is durable. `full` also scans every object
    /// (after a killed sync, which may have left unreferenced ones); else
    /// only the objects of the removed generations are candidates, so a
    /// prune costs what changed, not what the tree holds.
    pub fn prune(&self, keep: usize, full: bool) -> Result<Pruned> {
        let mut out = Pruned::default();
        let Some(cur) = self.current()? else {
            return Ok(out);
        };
        let gens = self.generations()?;
        let mut older: Vec<u64> = Vec::new();
        for g in gens.iter().copied().filter(|&g| g < cur) {
            if let Err(e) = self.manifest(g) {
                // Not a generation a restore could use, and not to be
                // counted as kept: moved aside whole for inspection, never
                // deleted behind the user's back.
                let aside = format!("damaged-{}", gen_name(g));
                rustix::fs::renameat(&self.fd, gen_name(g).as_str(), &self.fd, aside.as_str())
                    .with_context(|| format!("moving {} aside", gen_name(g)))?;
                out.moved_aside.push(format!(
                    "{e:#}; moved to {}",
                    self.path.join(&aside).display()
                ));
                continue;
            }
            older.push(g);
        }
        let keep_older = keep.max(1) - 1;
        let cut = older.len().saturating_sub(keep_older);
        older.truncate(cut);
        let trash = self.trash_fd()?;
        let mut candidates: HashSet<[u8; 16]> = HashSet::new();
        for &g in &older {
            // A generation whose manifest cannot be read offers no candidates
            // (its objects are found by the next full scan).
            if let Ok((entries, _)) = self.manifest(g) {
                candidates.extend(entries.iter().filter_map(|e| e.hash));
            }
            rustix::fs::renameat(&self.fd, gen_name(g).as_str(), &trash, gen_name(g).as_str())
                .with_context(|| format!("removing old generation {}", gen_name(g)))?;
        }
        out.generations = older;
        if candidates.is_empty() && !full {
            return Ok(out);
        }
        let mut referenced: HashSet<[u8; 16]> = HashSet::new();
        for g in self.generations()? {
            // Only the generations kept above remain, and their manifests
            // read; one that cannot be read now refers to nothing reachable.
            if let Ok((entries, _)) = self.manifest(g) {
                referenced.extend(entries.iter().filter_map(|e| e.hash));
            }
        }
        let objects = self.objects_fd()?;
        // Into the trash by rename: freeing a file's blocks costs a journal
        // round trip each on ext4 (more with `discard`), a rename does not;
        // the trash is emptied after the sync has returned.
        let discard = |dir: BorrowedFd<'_>, name: &str, hexname: &str| {
            let _ = rustix::fs::renameat(dir, name, &trash, hexname);
        };
        if full {
            for sub in fs::names(objects.as_fd())? {
                let Ok(d) = fs::open_dir_beneath(objects.as_fd(), sub.to_bytes()) else {
                    continue;
                };
                for n in fs::names(d.as_fd())? {
                    let name = n.to_string_lossy().into_owned();
                    let keep_it = unhex(&name)
                        .ok()
                        .and_then(|v| <[u8; 16]>::try_from(v.as_slice()).ok())
                        .is_some_and(|h| referenced.contains(&h));
                    if !keep_it {
                        discard(d.as_fd(), &name, &name);
                    }
                }
            }
        } else {
            for h in candidates.difference(&referenced) {
                discard(objects.as_fd(), &object_name(h), &hex(h));
            }
        }
        // No fsync: a removal lost to a crash only leaves garbage for a later
        // full scan; `current` is already durable.
        Ok(out)
    }

    /// STORE/trash, created when missing.
    pub fn trash_fd(&self) -> Result<OwnedFd> {
        match rustix::fs::mkdirat(&self.fd, TRASH, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e).context("store: mkdir trash"),
        }
        Ok(fs::open_dir_beneath(self.fd(), TRASH.as_bytes())?)
    }

    /// Free what prune put in the trash, unless another process is at it.
    pub fn empty_trash(&self, wait: bool) -> Result<()> {
        let lock = rustix::fs::openat(
            &self.fd,
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

    /// Inode and ctime of each file as the last restore of generation `g`
    /// into a filesystem with st_dev `dev` left it; empty when the index is
    /// for another generation or filesystem (then hashing decides).
    pub fn live_index(&self, g: u64, dev: u64) -> LiveIndex {
        let mut idx = LiveIndex::default();
        let Ok(text) = std::fs::read(self.path.join(LIVE_INDEX)) else {
            return idx;
        };
        let text = String::from_utf8_lossy(&text);
        let mut lines = text.lines();
        if lines.next() != Some(format!("tmpfsctl-persist-live 1 {g} {dev}").as_str()) {
            return idx;
        }
        for l in lines {
            let f: Vec<&str> = l.split(' ').collect();
            if f.len() != 4 {
                return LiveIndex::default();
            }
            let (Ok(p), Ok(ino), Ok(s), Ok(ns)) = (
                unhex(f[0]),
                f[1].parse::<u64>(),
                f[2].parse::<i64>(),
                f[3].parse::<u32>(),
            ) else {
                return LiveIndex::default();
            };
            idx.files.insert(p, (ino, (s, ns)));
        }
        idx
    }

    /// st_dev of the tmpfs the last restore filled, from the live index.
    pub fn live_index_dev(&self) -> Option<u64> {
        let text = std::fs::read(self.path.join(LIVE_INDEX)).ok()?;
        let first = text.split(|&b| b == b'\n').next()?;
        let first = std::str::from_utf8(first).ok()?;
        first
            .strip_prefix("tmpfsctl-persist-live 1 ")?
            .split(' ')
            .nth(1)?
            .parse()
            .ok()
    }

    pub fn write_live_index(&self, g: u64, dev: u64, idx: &LiveIndex) -> Result<()> {
        let mut s = format!("tmpfsctl-persist-live 1 {g} {dev}\n");
        for (p, (ino, (cs, cns))) in &idx.files {
            s.push_str(&format!("{} {ino} {cs} {cns}\n", hex(p)));
        }
        AtomicWrite {
            what: "the store's live index",
            mode: crate::sys::atomic::NewMode::Exactly(0o600),
        }
        .write(&self.path.join(LIVE_INDEX), s.as_bytes())
    }

    pub fn drop_live_index(&self) {
        let _ = rustix::fs::unlinkat(&self.fd, LIVE_INDEX, AtFlags::empty());
    }
}

/// What a prune did.
#[derive(Debug, Default)]
pub struct Pruned {
    /// Generations removed (beyond --keep).
    pub generations: Vec<u64>,
    /// Older generations whose manifest does not read, moved to
    /// `damaged-gen-N`, with why.
    pub moved_aside: Vec<String>,
}

const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// tmpfs or ramfs, by the filesystem's magic number.
// f_type is i64 on some targets and not others.
#[allow(clippy::unnecessary_cast)]
fn is_ram_fs(p: &Path) -> rustix::io::Result<bool> {
    let t = rustix::fs::statfs(p)?.f_type as i64;
    Ok(t == TMPFS_MAGIC || t == RAMFS_MAGIC)
}

/// Refuse a store that would not survive what it is for: on tmpfs or ramfs,
/// on DIR's own filesystem, inside DIR (or DIR inside it), on a read-only
/// mount, or in an overlayfs lower, upper or work directory (writing there
/// behind overlayfs's back is undefined behaviour).
pub fn check_store(store: &Path, dir: &Path, mounts: &[crate::sys::MountInfo]) -> Result<()> {
    let sp = store.display();
    if is_ram_fs(store).with_context(|| format!("store {sp}: statfs"))? {
        bail!(
            "store {sp} is on a RAM-backed filesystem (tmpfs/ramfs): it would not survive a reboot; \
             give a directory on a disk, e.g. /var/lib/tmpfsctl/persist/NAME"
        );
    }
    let sdev = rustix::fs::stat(store)?.st_dev;
    let ddev = rustix::fs::stat(dir)
        .with_context(|| format!("stat {}", dir.display()))?
        .st_dev;
    // DIR still on disk (enable, disable) may share its disk with the store;
    // DIR's tmpfs may not (the store would be RAM too).
    let dir_ram = is_ram_fs(dir).unwrap_or(false);
    if sdev == ddev && dir_ram {
        bail!(
            "store {sp} is on the same filesystem as {}: losing one would lose both; \
             give a directory on another (disk) filesystem",
            dir.display()
        );
    }
    if store.starts_with(dir) || dir.starts_with(store) {
        bail!(
            "store {sp} and {} are inside one another; give a store outside DIR",
            dir.display()
        );
    }
    if let Some(m) = crate::sys::mountinfo::mount_for(mounts, store)
        && m.mount_options.iter().any(|o| o == "ro")
    {
        bail!(
            "store {sp} is on a read-only mount ({})",
            m.mount_point.display()
        );
    }
    for m in mounts.iter().filter(|m| m.fstype == "overlay") {
        for key in ["lowerdir", "upperdir", "workdir"] {
            let Some(v) = m.option(key) else { continue };
            // lowerdir lists several directories separated by ':'.
            for d in v.split(':').filter(|d| !d.is_empty()) {
                let d = Path::new(d);
                if store.starts_with(d) || d.starts_with(store) {
                    bail!(
                        "store {sp} is in the overlayfs {key} {} of {}: writing there behind \
                         overlayfs is undefined behaviour; give a directory outside it",
                        d.display(),
                        m.mount_point.display()
                    );
                }
            }
        }
    }
    Ok(())
}
