//! The store seam: what sync, restore, status, verify, enable and disable
//! ask of a store, whatever its layout on disk.
//!
//! Sync hands a store bytes (each file's content, written into a
//! [`NewObject`] and kept under its content identity) and metadata (the
//! generation's entries); the backend owns where and how they lie, how a
//! generation is made durable and how the pointer to the newest one is
//! switched. What does not depend on the layout lives here, once, so every
//! backend keeps it: which generation to trust after a crash ([`Store::resolve`]:
//! the pointer when its manifest reads, else the newest older one whose
//! objects are all there), the one-sync-at-a-time lock, the live index, and
//! the checks on the store's directory (see `trust`) made before a backend
//! ever sees it.
//!
//! The one backend today is the generation store ([`generations`]). A new
//! one is a file in this folder implementing [`Store`] and [`NewGeneration`],
//! and its line in [`backend`].

pub mod generations;
#[cfg(test)]
mod seam_tests;

use std::collections::HashSet;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use super::manifest::{Entry, hex, unhex};
use super::scan::LiveIndex;
use crate::sys::atomic::AtomicWrite;
use crate::sys::atomic::NewMode;
use crate::sys::fs;
use crate::sys::mountinfo;

/// A content identity: what names an object (see `content`).
pub type Id = [u8; 16];

const LOCK: &str = "lock";
const LIVE_INDEX: &str = "live-index";

/// How persist names generation `g` to people (and the generation store on
/// disk): `gen-000042`.
pub fn gen_name(g: u64) -> String {
    format!("gen-{g:06}")
}

/// The store's directory, opened once by a path that passed every trust
/// check; everything in it is reached through this descriptor.
#[derive(Debug)]
pub struct StoreDir {
    pub path: PathBuf,
    fd: OwnedFd,
}

impl StoreDir {
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Open the existing store at `path`, checked (see `trust`): through a path
/// with no symlink, owned and writable only by root (or the caller).
pub fn open(path: &Path) -> Result<Box<dyn Store>> {
    let t = super::trust::open(path)?;
    backend(StoreDir {
        path: t.path,
        fd: t.fd,
    })
}

/// Open the store at `path`, creating it (mode 0700: it holds other users'
/// files) when missing, after the checks `open` makes passed for what exists.
pub fn create(path: &Path) -> Result<Box<dyn Store>> {
    let t = super::trust::create(path)?;
    backend(StoreDir {
        path: t.path,
        fd: t.fd,
    })
}

/// The backend that owns the layout of the store in `dir`. One today; a
/// second one recognises its own layout here (a marker it writes when it
/// creates a store) and the rest stay with the generation store, so a store
/// already on disk is always read by the layout that wrote it.
fn backend(dir: StoreDir) -> Result<Box<dyn Store>> {
    Ok(Box::new(generations::GenStore::new(dir)))
}

/// The generation a sync builds on and a restore loads, and what was passed
/// over to find it.
#[derive(Debug, Default)]
pub struct Resolved {
    pub generation: Option<u64>,
    pub notes: Vec<String>,
}

/// What a prune did.
#[derive(Debug, Default)]
pub struct Pruned {
    /// Generations removed (beyond --keep).
    pub generations: Vec<u64>,
    /// Older generations whose manifest does not read, moved aside, with
    /// why and where to.
    pub moved_aside: Vec<String>,
}

/// What a killed sync or prune left, cleared before a new generation is
/// written.
#[derive(Debug, Default, Clone, Copy)]
pub struct Leftovers {
    /// Unfinished generations, pointer temps and objects removed.
    pub swept: usize,
    /// A prune was stopped half way: objects only the generations it removed
    /// held may remain, so the next prune looks at every object.
    pub interrupted_prune: bool,
}

/// An object being written: a file the backend made for it, written (and
/// read back, to compare) through [`fd`](Self::fd), then kept under its
/// content identity ([`NewGeneration::keep_object`]) or dropped.
#[derive(Debug)]
pub struct NewObject {
    fd: OwnedFd,
    /// The backend's name for it until it is kept.
    name: String,
}

impl NewObject {
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// One generation being written by a sync. Nothing it writes is seen by a
/// reader until [`finish`](Self::finish) made it durable and
/// [`Store::switch`] pointed at it; [`abandon`](Self::abandon) takes back
/// all of it (a full disk is then not fuller for the next try).
pub trait NewGeneration {
    /// A fresh, empty object to copy a file's content into.
    fn new_object(&mut self) -> Result<NewObject>;
    /// Keep the object under its content identity `h`. When the store already
    /// holds an object of that identity (the same content), that one is kept
    /// and this one dropped.
    fn keep_object(&mut self, obj: NewObject, h: &Id) -> Result<()>;
    /// Drop an object that will not be kept (the file changed under the copy).
    fn drop_object(&mut self, obj: NewObject);
    /// Write the generation's entries (its manifest, `synced_ns` its time)
    /// and make the whole generation durable, every object it added with it.
    fn finish(&mut self, entries: &[Entry], synced_ns: i128) -> Result<()>;
    /// Remove everything this generation wrote; the store is as before.
    fn abandon(self: Box<Self>);
}

/// A store: numbered generations, each a manifest (every entry of DIR with
/// its metadata and the identity of its content) and the content objects it
/// refers to, shared between generations; and a pointer naming the newest
/// complete generation. Layout, durability and the pointer switch belong to
/// the backend; what to trust after a crash is decided here once.
pub trait Store {
    /// The store's checked directory.
    fn dir(&self) -> &StoreDir;

    /// The generation the pointer names (`None`: no pointer).
    fn current(&self) -> Result<Option<u64>>;
    /// Generations present, complete or not, ascending.
    fn generations(&self) -> Result<Vec<u64>>;
    /// Generation `g`'s entries and the time it was synced (ns since the
    /// epoch); an error when its manifest does not read back whole.
    fn manifest(&self, g: u64) -> Result<(Vec<Entry>, i128)>;
    /// The content object `h`, open for reading.
    fn open_object(&self, h: &Id) -> rustix::io::Result<OwnedFd>;
    /// Why object `h` cannot hold `size` bytes of content (missing, another
    /// size, not a file), naming its path; cheap (no read of the content).
    fn object_problem(&self, h: &Id, size: u64) -> Option<String>;
    /// Objects present that are not in `referenced` (left by an interrupted
    /// prune; not damage).
    fn unreferenced_objects(&self, referenced: &HashSet<Id>) -> u64;

    /// Where the user finds the pointer, a generation's manifest and an
    /// object, for messages about damage.
    fn current_path(&self) -> PathBuf;
    fn manifest_path(&self, g: u64) -> PathBuf;
    fn object_path(&self, h: &Id) -> PathBuf;

    /// Clear what a killed sync or prune left (never a generation a restore
    /// could use); called under the lock before a new generation is written.
    fn clear_leftovers(&self) -> Result<Leftovers>;
    /// Start writing generation `g` (see [`next_gen`](Self::next_gen)).
    fn begin(&self, g: u64) -> Result<Box<dyn NewGeneration + '_>>;
    /// Put a damaged object out of the way so a fresh copy can take its
    /// identity.
    fn discard_object(&self, h: &Id) -> Result<()>;
    /// Point at generation `g`, durably, in one step a power cut cannot
    /// tear; `g` was finished and made durable before.
    fn switch(&self, g: u64) -> Result<()>;
    /// Remove generations beyond the newest `keep` (the current one always
    /// stays), then the objects no kept generation refers to; called only
    /// once the new pointer is durable. `full`: look at every object (after
    /// [`Leftovers`] said so), else only at those of the removed generations.
    fn prune(&self, keep: usize, full: bool) -> Result<Pruned>;
    /// Free what prune set aside (slow on some filesystems, so done after
    /// the sync has answered); `wait`: for another process doing it.
    fn empty_trash(&self, wait: bool) -> Result<()>;

    fn path(&self) -> &Path {
        &self.dir().path
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.dir().fd()
    }

    /// One sync (or restore) at a time per store; a second one fails at once
    /// rather than queueing behind a long copy.
    fn lock(&self) -> Result<OwnedFd> {
        let f = rustix::fs::openat(
            self.fd(),
            LOCK,
            OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::from_raw_mode(0o600),
        )
        .with_context(|| format!("store {}: cannot open its lock file", self.path().display()))?;
        match rustix::fs::flock(&f, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(f),
            Err(Errno::WOULDBLOCK) => bail!(
                "store {}: another sync or restore is running on it; try again when it ends",
                self.path().display()
            ),
            Err(e) => Err(e).context("flock of the store's lock file"),
        }
    }

    /// The number the next generation gets: above every one present and
    /// the pointer's.
    fn next_gen(&self) -> Result<u64> {
        let max_dir = self.generations()?.last().copied().unwrap_or(0);
        // A pointer that names no generation (see `pointer_problem`) is
        // replaced by the sync's switch, not a reason to refuse the sync
        // that repairs the store.
        Ok(max_dir.max(self.current().unwrap_or(None).unwrap_or(0)) + 1)
    }

    /// The newest complete generation: the one the pointer names when its
    /// manifest reads back whole; else (no pointer, or its manifest
    /// damaged) the newest older generation whose manifest reads and whose
    /// objects all exist with their sizes. A generation newer than the
    /// pointer is a sync that did not finish and is never chosen.
    fn newest_complete(&self) -> Result<Option<u64>> {
        Ok(self.resolve()?.generation)
    }

    /// Generations to try, newest first: the pointer's and those older than
    /// it, or every generation when there is no pointer.
    fn candidates(&self) -> Result<Vec<u64>> {
        let cur = self.current().unwrap_or(None);
        let mut v: Vec<u64> = self
            .generations()?
            .into_iter()
            .filter(|&g| cur.is_none_or(|c| g <= c))
            .collect();
        v.reverse();
        Ok(v)
    }

    /// Why the pointer cannot be followed, when it cannot: missing (with
    /// generations present), not naming a generation, or naming one that
    /// is not there. Said by sync and restore before they fall back to the
    /// newest generation that verifies.
    fn pointer_problem(&self) -> Result<Option<String>> {
        let gens = self.generations()?;
        let what = match self.current() {
            Err(e) => format!("{e:#}"),
            Ok(None) if gens.is_empty() => return Ok(None),
            Ok(None) => format!("store {}: `current` is missing", self.path().display()),
            Ok(Some(c)) if gens.contains(&c) => return Ok(None),
            Ok(Some(c)) => format!(
                "store {}: `current` names {}, which is not there",
                self.path().display(),
                gen_name(c)
            ),
        };
        Ok(Some(format!(
            "{what}; looking for the newest generation that verifies"
        )))
    }

    /// [`newest_complete`](Self::newest_complete), with what was skipped on
    /// the way and why, naming the damaged paths in the store.
    fn resolve(&self) -> Result<Resolved> {
        let mut r = self.resolve_from(self.current().unwrap_or(None))?;
        if let Some(n) = self.pointer_problem()? {
            r.notes.insert(0, n);
        }
        Ok(r)
    }

    /// The newest candidate that reads, trusting `cur` (the pointer) without
    /// checking its objects: a sync made them durable before pointing at it.
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
                // Not the pointer's generation: say which one is used.
                notes.push(format!(
                    "using {} of {}, the newest generation that verifies",
                    gen_name(g),
                    self.path().display()
                ));
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

    /// Whether object `h` still holds what was stored: it carries the seal
    /// ([`seal`]) sync put on it, which any write to it since breaks. An
    /// unsealed object is hashed before it is shared again (and sealed when
    /// its content is sound): a changed byte never spreads into a new
    /// generation while the data is still in RAM to copy again.
    fn object_sealed(&self, h: &Id) -> bool {
        self.open_object(h)
            .and_then(|fd| rustix::fs::fstat(&fd))
            .is_ok_and(|st| is_sealed(&st, h))
    }

    /// Hash object `h`: sealed and true when it holds the content its
    /// identity names, false when it does not (or cannot be read).
    fn check_and_seal(&self, h: &Id, buf: &mut Vec<u8>) -> bool {
        let Ok(fd) = self.open_object(h) else {
            return false;
        };
        let Ok(st) = rustix::fs::fstat(&fd) else {
            return false;
        };
        let sound = super::content::copy_hash(fd.as_fd(), &st, None, buf).is_ok_and(|x| x == *h);
        if sound {
            let _ = seal(fd.as_fd(), &st, h);
        }
        sound
    }

    /// Objects the entries refer to that are missing or not of the size the
    /// manifest gives, by their path in the store (cheap: one stat each).
    fn check_objects(&self, entries: &[Entry]) -> Vec<String> {
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

    /// Inode and ctime of each file as the last restore of generation `g`
    /// into a filesystem with st_dev `dev` left it; empty when the index is
    /// for another generation or filesystem (then hashing decides).
    fn live_index(&self, g: u64, dev: u64) -> LiveIndex {
        let mut idx = LiveIndex::default();
        let Ok(text) = read_beneath(self.fd(), LIVE_INDEX) else {
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
    fn live_index_dev(&self) -> Option<u64> {
        let text = read_beneath(self.fd(), LIVE_INDEX).ok()?;
        let first = text.split(|&b| b == b'\n').next()?;
        let first = std::str::from_utf8(first).ok()?;
        first
            .strip_prefix("tmpfsctl-persist-live 1 ")?
            .split(' ')
            .nth(1)?
            .parse()
            .ok()
    }

    fn write_live_index(&self, g: u64, dev: u64, idx: &LiveIndex) -> Result<()> {
        let mut s = format!("tmpfsctl-persist-live 1 {g} {dev}\n");
        for (p, (ino, (cs, cns))) in &idx.files {
            s.push_str(&format!("{} {ino} {cs} {cns}\n", hex(p)));
        }
        AtomicWrite {
            what: "the store's live index",
            mode: NewMode::Exactly(0o600),
        }
        .write_beneath(self.fd(), self.path(), LIVE_INDEX, s.as_bytes())
    }

    fn drop_live_index(&self) {
        let _ = rustix::fs::unlinkat(self.fd(), LIVE_INDEX, AtFlags::empty());
    }
}

/// The whole of the file `rel` below the store's descriptor, reached
/// without following a symlink or leaving the store.
pub fn read_beneath(store: BorrowedFd<'_>, rel: &str) -> std::io::Result<Vec<u8>> {
    let fd = fs::open_beneath(store, rel.as_bytes(), OFlags::RDONLY)?;
    let mut b = Vec::new();
    std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut b)?;
    Ok(b)
}

/// The nanoseconds of a sealed object's mtime: taken from its identity,
/// so a write (which sets the mtime to the clock's) breaks the seal with
/// odds of one in a billion of keeping it. The seconds are left as they
/// were: no object looks old to a cleaner that goes by age.
fn seal_ns(h: &Id) -> u32 {
    u32::from_le_bytes([h[0], h[1], h[2], h[3]]) % 1_000_000_000
}

// st_mtime_nsec is u64 on some targets and i64 on others.
#[allow(clippy::unnecessary_cast)]
fn is_sealed(st: &rustix::fs::Stat, h: &Id) -> bool {
    st.st_mtime_nsec as u64 == u64::from(seal_ns(h))
}

/// Seal an object whose content was just written or checked (see
/// [`Store::object_sealed`]); `st` is its fstat.
pub fn seal(fd: BorrowedFd<'_>, st: &rustix::fs::Stat, h: &Id) -> rustix::io::Result<()> {
    let t = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: st.st_atime as _,
            tv_nsec: st.st_atime_nsec as _,
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: st.st_mtime as _,
            tv_nsec: seal_ns(h) as _,
        },
    };
    rustix::fs::futimens(fd, &t)
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
    if let Some(m) = mountinfo::mount_for(mounts, store)
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
