//! Restoring a generation into a directory, and telling how a directory
//! differs from a generation (what a power loss would cost now; what a
//! restore would overwrite).
//!
//! Every file's data is hashed while it is copied out of the store and
//! compared with the manifest: a store damaged on disk fails the restore
//! loudly instead of loading bad bytes. Owners are set before modes (chown
//! clears set-uid bits) and xattrs after chown (it drops
//! security.capability); directory times last, after their entries exist.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, FileType, Gid, Mode, OFlags, Timestamps, Uid};

use super::content;
use super::manifest::{Entry, Kind};
use super::scan::{self, LiveIndex, Verdict, show};
use super::store::Store;
use crate::sys::fs::{self, Obj, os};

/// The store's copy of something is missing or not what its manifest says;
/// the message names the damaged path in the store. A restore tries an
/// older generation on this error and on no other.
#[derive(Debug)]
pub struct Damaged(pub String);

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Damaged {}

pub fn is_damage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<Damaged>().is_some())
}

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct LoadReport {
    pub files: u64,
    pub bytes: u64,
    /// Files whose object in this generation is damaged, loaded from an
    /// older generation where theirs verifies.
    pub from_older: Vec<FromOlder>,
    /// Files no kept generation holds sound: not restored, with why.
    pub not_restored: Vec<String>,
}

/// A file taken from an older generation, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FromOlder {
    pub path: String,
    pub generation: u64,
    pub damage: String,
}

/// Where a file whose object is damaged is looked for: older generations,
/// newest first, their manifests read once each when first needed.
pub struct Fallback<'a> {
    store: &'a dyn Store,
    gens: Vec<u64>,
    read: HashMap<u64, Option<HashMap<Vec<u8>, Entry>>>,
}

impl<'a> Fallback<'a> {
    /// Generations older than `g` in `store`, newest first.
    pub fn older_than(store: &'a dyn Store, g: u64) -> Result<Fallback<'a>> {
        let mut gens: Vec<u64> = store
            .generations()?
            .into_iter()
            .filter(|&x| x < g)
            .collect();
        gens.reverse();
        Ok(Fallback {
            store,
            gens,
            read: HashMap::new(),
        })
    }

    /// The entries for `path` in the older generations, newest first, that
    /// hold other content than `bad`.
    fn candidates(&mut self, path: &[u8], bad: Option<super::store::Id>) -> Vec<(u64, Entry)> {
        let mut out = Vec::new();
        for &g in &self.gens {
            let m = self.read.entry(g).or_insert_with(|| {
                self.store.manifest(g).ok().map(|(es, _)| {
                    es.into_iter()
                        .filter(|e| e.kind == Kind::File)
                        .map(|e| (e.path.clone(), e))
                        .collect()
                })
            });
            if let Some(e) = m.as_ref().and_then(|m| m.get(path))
                && e.hash.is_some()
                && e.hash != bad
            {
                out.push((g, e.clone()));
            }
        }
        out
    }
}

fn times(e: &Entry) -> Timestamps {
    Timestamps {
        last_access: fs::ts(e.atime),
        last_modification: fs::ts(e.mtime),
    }
}

/// The parent directory of `rel` under `root`, cached across consecutive
/// siblings (the manifest lists them together).
struct Parents<'a> {
    root: BorrowedFd<'a>,
    last: Option<(Vec<u8>, OwnedFd)>,
}

impl Parents<'_> {
    fn get(&mut self, parent: &[u8]) -> Result<BorrowedFd<'_>> {
        if parent.is_empty() {
            return Ok(self.root);
        }
        if self
            .last
            .as_ref()
            .is_none_or(|(p, _)| p.as_slice() != parent)
        {
            let fd = fs::open_dir_beneath(self.root, parent)
                .with_context(|| format!("open {}", show(parent)))?;
            self.last = Some((parent.to_vec(), fd));
        }
        match &self.last {
            Some((_, fd)) => Ok(fd.as_fd()),
            None => bail!("unreachable"),
        }
    }
}

/// Load generation `g` of `store` into the empty directory `dst`; returns
/// what was loaded and the inode/ctime of each file for the live index.
/// A damaged object fails the load ([`Damaged`]).
pub fn load(store: &dyn Store, g: u64, dst: BorrowedFd<'_>) -> Result<(LoadReport, LiveIndex)> {
    load_with(store, g, dst, None)
}

/// [`load`], and with `fallback` a file whose object is damaged costs only
/// itself: it is taken from the newest older generation where it verifies,
/// or left out and named ([`LoadReport::not_restored`]).
pub fn load_with(
    store: &dyn Store,
    g: u64,
    dst: BorrowedFd<'_>,
    mut fallback: Option<Fallback<'_>>,
) -> Result<(LoadReport, LiveIndex)> {
    let mut lost: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    let (entries, _) = store.manifest(g)?;
    let mut rep = LoadReport::default();
    let mut live = LiveIndex::default();
    let mut parents = Parents {
        root: dst,
        last: None,
    };
    let mut buf = Vec::new();
    let own = |e: &Entry| (Some(Uid::from_raw(e.uid)), Some(Gid::from_raw(e.gid)));
    for e in &entries {
        if e.path.is_empty() {
            continue;
        }
        let (parent, name) = fs::split(&e.path);
        let pfd = parents.get(parent)?;
        let ctx = || format!("restoring {}", show(&e.path));
        match &e.kind {
            Kind::Dir => {
                rustix::fs::mkdirat(pfd, os(name), Mode::from_raw_mode(0o700)).with_context(ctx)?
            }
            Kind::File => {
                let made = match fallback.as_mut() {
                    None => restore_file(store, g, pfd, name, e, &mut buf)?,
                    Some(fb) => match restore_file(store, g, pfd, name, e, &mut buf) {
                        Ok(x) => x,
                        Err(err) if is_damage(&err) => {
                            let _ = rustix::fs::unlinkat(pfd, os(name), AtFlags::empty());
                            let damage = format!("{err:#}");
                            let mut done = None;
                            for (og, oe) in fb.candidates(&e.path, e.hash) {
                                match restore_file(store, og, pfd, name, &oe, &mut buf) {
                                    Ok(_) => {
                                        done = Some((og, oe));
                                        break;
                                    }
                                    Err(err) if is_damage(&err) => {
                                        let _ =
                                            rustix::fs::unlinkat(pfd, os(name), AtFlags::empty());
                                    }
                                    Err(err) => return Err(err),
                                }
                            }
                            let Some((og, oe)) = done else {
                                rep.not_restored.push(format!(
                                    "{}: {damage}; no older generation holds it sound",
                                    show(&e.path)
                                ));
                                lost.insert(e.path.clone());
                                continue;
                            };
                            rep.from_older.push(FromOlder {
                                path: show(&e.path),
                                generation: og,
                                damage,
                            });
                            // Not in the live index: it is not the file
                            // generation `g` names, and the next sync must
                            // see that and copy it.
                            rep.bytes += oe.size;
                            rep.files += 1;
                            continue;
                        }
                        Err(err) => return Err(err),
                    },
                };
                live.files.insert(e.path.clone(), made);
                rep.files += 1;
                rep.bytes += e.size;
                continue;
            }
            Kind::HardLink(first) => {
                if lost.contains(first) {
                    rep.not_restored.push(format!(
                        "{}: a hard link to {}, which was not restored",
                        show(&e.path),
                        show(first)
                    ));
                    continue;
                }
                rustix::fs::linkat(dst, os(first), pfd, os(name), AtFlags::empty())
                    .with_context(ctx)?;
                continue;
            }
            Kind::Symlink(t) => rustix::fs::symlinkat(os(t), pfd, os(name)).with_context(ctx)?,
            k => {
                let (ft, rdev) = match k {
                    Kind::Fifo => (FileType::Fifo, 0),
                    Kind::Socket => (FileType::Socket, 0),
                    Kind::Char(r) => (FileType::CharacterDevice, *r),
                    Kind::Block(r) => (FileType::BlockDevice, *r),
                    _ => (FileType::Fifo, 0),
                };
                rustix::fs::mknodat(pfd, os(name), ft, Mode::from_raw_mode(0o600), rdev)
                    .with_context(ctx)?;
            }
        }
        if e.kind != Kind::Dir {
            set_meta_of_new(pfd, name, e).with_context(ctx)?;
        }
    }
    drop(parents);
    // Directories deepest first, DIR itself last: creating entries moves a
    // directory's mtime, so its times are set once nothing more goes in.
    for e in entries.iter().rev().filter(|e| e.kind == Kind::Dir) {
        let d = if e.path.is_empty() {
            rustix::fs::openat(
                dst,
                ".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?
        } else {
            fs::open_dir_beneath(dst, &e.path)?
        };
        let ctx = || format!("restoring directory {}", show(&e.path));
        let (u, gr) = own(e);
        rustix::fs::fchown(&d, u, gr).with_context(ctx)?;
        rustix::fs::fchmod(&d, Mode::from_raw_mode(e.mode)).with_context(ctx)?;
        Obj::Fd(d.as_fd()).set_all(&e.xattrs).with_context(ctx)?;
        rustix::fs::futimens(&d, &times(e)).with_context(ctx)?;
    }
    Ok((rep, live))
}

/// Restore the file `e` of generation `g` as `name` under `pfd`, its data
/// hashed while copied and checked against the manifest; its inode and
/// ctime for the live index. A damaged object is a [`Damaged`] error (the
/// half-written file is the caller's to remove).
fn restore_file(
    store: &dyn Store,
    g: u64,
    pfd: BorrowedFd<'_>,
    name: &[u8],
    e: &Entry,
    buf: &mut Vec<u8>,
) -> Result<(u64, (i64, u32))> {
    let ctx = || format!("restoring {}", show(&e.path));
    let Some(hash) = e.hash else {
        bail!(Damaged(format!(
            "{}: {} has no content identity",
            store.manifest_path(g).display(),
            show(&e.path)
        )));
    };
    let src = store.open_object(&hash).map_err(|err| {
        Damaged(format!(
            "{}: {err} (the content of {})",
            store.object_path(&hash).display(),
            show(&e.path)
        ))
    })?;
    let st = rustix::fs::fstat(&src)?;
    let f = rustix::fs::openat(
        pfd,
        os(name),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .with_context(ctx)?;
    let h = content::copy_hash(src.as_fd(), &st, Some(f.as_fd()), buf).with_context(ctx)?;
    if h != hash || st.st_size as u64 != e.size {
        bail!(Damaged(format!(
            "{} does not match its manifest (the content of {}; damaged store)",
            store.object_path(&hash).display(),
            show(&e.path)
        )));
    }
    rustix::fs::fchown(&f, Some(Uid::from_raw(e.uid)), Some(Gid::from_raw(e.gid)))
        .with_context(ctx)?;
    rustix::fs::fchmod(&f, Mode::from_raw_mode(e.mode)).with_context(ctx)?;
    Obj::Fd(f.as_fd()).set_all(&e.xattrs).with_context(ctx)?;
    rustix::fs::futimens(&f, &times(e)).with_context(ctx)?;
    let after = rustix::fs::fstat(&f)?;
    Ok((after.st_ino, fs::stat_times(&after)[2]))
}

/// Owner, mode, xattrs and times of the symlink or special file just made
/// as `name` under `dir`, through a descriptor of that entry: never opened
/// for I/O, and never by name (a mode change by name follows a symlink
/// renamed over the entry meanwhile, in a shared sticky DIR).
fn set_meta_of_new(dir: BorrowedFd<'_>, name: &[u8], e: &Entry) -> Result<()> {
    let ft = match e.kind {
        Kind::Symlink(_) => FileType::Symlink,
        Kind::Socket => FileType::Socket,
        Kind::Char(_) => FileType::CharacterDevice,
        Kind::Block(_) => FileType::BlockDevice,
        _ => FileType::Fifo,
    };
    let new = fs::Created::open(dir, &fs::cstr(name)?, ft).map_err(|err| match err {
        rustix::io::Errno::STALE => anyhow::anyhow!(
            "it was replaced by another entry right after it was created (someone else \
             writes in this directory); it was left untouched"
        ),
        err => err.into(),
    })?;
    new.chown(Some(Uid::from_raw(e.uid)), Some(Gid::from_raw(e.gid)))?;
    if ft != FileType::Symlink {
        new.chmod(Mode::from_raw_mode(e.mode))?;
    }
    new.obj().set_all(&e.xattrs)?;
    new.set_times(&times(e))?;
    Ok(())
}

/// How a directory differs from a generation.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Diff {
    /// In both, but content or metadata differ.
    pub changed: Vec<String>,
    /// In the directory only.
    pub added: Vec<String>,
    /// In the generation only.
    pub removed: Vec<String>,
    /// Sizes of changed and added regular files: what a power loss would lose.
    pub changed_bytes: u64,
    /// Entries in the directory (DIR itself not counted).
    pub entries: u64,
}

impl Diff {
    pub fn changed_files(&self) -> u64 {
        (self.changed.len() + self.added.len() + self.removed.len()) as u64
    }

    pub fn is_empty(&self) -> bool {
        self.changed_files() == 0
    }
}

/// Compare the tree under `dir` with generation `g`, exactly: a file whose
/// stat says "maybe" is hashed.
pub fn diff(dir: BorrowedFd<'_>, store: &dyn Store, g: Option<u64>) -> Result<Diff> {
    let (entries, _) = match g {
        Some(g) => store.manifest(g)?,
        None => (Vec::new(), 0),
    };
    let scan = scan::walk(dir)?;
    let live = match g {
        Some(g) => store.live_index(g, scan.dev),
        None => LiveIndex::default(),
    };
    let mut prev: HashMap<&[u8], &Entry> = entries.iter().map(|e| (e.path.as_slice(), e)).collect();
    let mut d = Diff::default();
    let mut buf = Vec::new();
    for f in &scan.found {
        let cur = &f.e;
        let p = prev.remove(cur.path.as_slice());
        if cur.path.is_empty() {
            continue;
        }
        d.entries += 1;
        // A hard link is recorded once as a file and then by name.
        let p = p.map(|p| match &p.kind {
            Kind::HardLink(first) => entries.iter().find(|x| &x.path == first).unwrap_or(p),
            _ => p,
        });
        let mut v = scan::classify(cur, p, &live);
        // A sync copies a torn entry again every time, but what a restore
        // must not overwrite is only data that differs from the stored copy
        // (an online journal loaded from the store is that copy): compare it.
        if v == Verdict::Changed
            && let Some(p) = p
            && p.torn
        {
            let whole = Entry {
                torn: false,
                ..p.clone()
            };
            if scan::classify(cur, Some(&whole), &live) != Verdict::Changed {
                v = Verdict::SameIfContent;
            }
        }
        if v == Verdict::SameIfContent
            && let Some(p) = p
        {
            v = match fs::open_regular_beneath(dir, &cur.path) {
                Ok((fd, st)) => {
                    let h = content::copy_hash(fd.as_fd(), &st, None, &mut buf)?;
                    let x = Obj::Fd(fd.as_fd()).all()?;
                    if Some(h) == p.hash && x == p.xattrs {
                        Verdict::Same
                    } else {
                        Verdict::Changed
                    }
                }
                Err(_) => Verdict::Changed,
            };
        }
        match v {
            Verdict::Same => {}
            Verdict::New => {
                d.added.push(show(&cur.path));
                d.changed_bytes += cur.size;
            }
            _ => {
                d.changed.push(show(&cur.path));
                d.changed_bytes += cur.size;
            }
        }
    }
    let mut removed: Vec<&Entry> = prev.into_values().filter(|e| !e.path.is_empty()).collect();
    removed.sort_by(|a, b| a.path.cmp(&b.path));
    d.removed = removed.iter().map(|e| show(&e.path)).collect();
    Ok(d)
}

/// Read every file of generation `g` back and compare with the manifest
/// (after writing generation 1 from DIR on disk, before DIR is covered).
pub fn verify(store: &dyn Store, g: u64) -> Result<u64> {
    let (entries, _) = store.manifest(g)?;
    let mut buf = Vec::new();
    let mut n = 0;
    for e in entries.iter().filter(|e| e.is_file()) {
        let fd = e
            .hash
            .ok_or_else(|| anyhow::anyhow!("manifest: file without content identity"))
            .and_then(|h| Ok(store.open_object(&h)?))
            .with_context(|| format!("verify: open the content of {}", show(&e.path)))?;
        let st = rustix::fs::fstat(&fd)?;
        let h = content::copy_hash(fd.as_fd(), &st, None, &mut buf)?;
        if Some(h) != e.hash {
            bail!(
                "verify: {} in the store does not match what was read from DIR",
                show(&e.path)
            );
        }
        n += 1;
    }
    Ok(n)
}
