//! The seam holds: a second backend with another layout (objects as flat
//! files named `obj-HEX`, generations and the pointer kept in memory),
//! written in this one file, is synced into, restored from and compared
//! with by the same sync, load and diff code the generation store serves,
//! and the crash rule in `Store::resolve` (a generation newer than the
//! pointer is never read) holds for it without its saying so.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashSet};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};
use rustix::fs::{AtFlags, Mode, OFlags};

use super::{Id, Leftovers, NewGeneration, NewObject, Pruned, Store, StoreDir};
use crate::persist::manifest::{Entry, hex};
use crate::persist::{load, sync};

#[derive(Default)]
struct Memory {
    gens: RefCell<BTreeMap<u64, (Vec<Entry>, i128)>>,
    current: Cell<Option<u64>>,
    seq: Cell<u64>,
}

struct FlatStore {
    dir: StoreDir,
    mem: Memory,
}

fn obj(h: &Id) -> String {
    format!("obj-{}", hex(h))
}

impl Store for FlatStore {
    fn dir(&self) -> &StoreDir {
        &self.dir
    }
    fn current(&self) -> Result<Option<u64>> {
        Ok(self.mem.current.get())
    }
    fn generations(&self) -> Result<Vec<u64>> {
        Ok(self.mem.gens.borrow().keys().copied().collect())
    }
    fn manifest(&self, g: u64) -> Result<(Vec<Entry>, i128)> {
        match self.mem.gens.borrow().get(&g) {
            Some(m) => Ok(m.clone()),
            None => bail!("no generation {g}"),
        }
    }
    fn open_object(&self, h: &Id) -> rustix::io::Result<OwnedFd> {
        rustix::fs::openat(self.fd(), obj(h).as_str(), OFlags::RDONLY, Mode::empty())
    }
    fn object_problem(&self, h: &Id, size: u64) -> Option<String> {
        match rustix::fs::statat(self.fd(), obj(h).as_str(), AtFlags::empty()) {
            Ok(st) if st.st_size as u64 == size => None,
            _ => Some(format!("{} is damaged", obj(h))),
        }
    }
    fn unreferenced_objects(&self, _: &HashSet<Id>) -> u64 {
        0
    }
    fn current_path(&self) -> PathBuf {
        self.dir.path.join("(memory)")
    }
    fn manifest_path(&self, g: u64) -> PathBuf {
        self.dir.path.join(format!("(memory {g})"))
    }
    fn object_path(&self, h: &Id) -> PathBuf {
        self.dir.path.join(obj(h))
    }
    fn clear_leftovers(&self) -> Result<Leftovers> {
        Ok(Leftovers::default())
    }
    fn begin(&self, g: u64) -> Result<Box<dyn NewGeneration + '_>> {
        Ok(Box::new(FlatWriter { store: self, g }))
    }
    fn discard_object(&self, h: &Id) -> Result<()> {
        let _ = rustix::fs::unlinkat(self.fd(), obj(h).as_str(), AtFlags::empty());
        Ok(())
    }
    fn switch(&self, g: u64) -> Result<()> {
        self.mem.current.set(Some(g));
        Ok(())
    }
    fn prune(&self, keep: usize, _full: bool) -> Result<Pruned> {
        let mut gens = self.mem.gens.borrow_mut();
        let mut out = Pruned::default();
        while gens.len() > keep.max(1) {
            if let Some((g, _)) = gens.pop_first() {
                out.generations.push(g);
            }
        }
        Ok(out)
    }
    fn empty_trash(&self, _wait: bool) -> Result<()> {
        Ok(())
    }
}

struct FlatWriter<'a> {
    store: &'a FlatStore,
    g: u64,
}

impl NewGeneration for FlatWriter<'_> {
    fn new_object(&mut self) -> Result<NewObject> {
        let n = self.store.mem.seq.get() + 1;
        self.store.mem.seq.set(n);
        let name = format!("new-{n}");
        let fd = rustix::fs::openat(
            self.store.fd(),
            name.as_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL,
            Mode::from_raw_mode(0o600),
        )?;
        Ok(NewObject { fd, name })
    }
    fn keep_object(&mut self, o: NewObject, h: &Id) -> Result<()> {
        let d = self.store.fd();
        rustix::fs::renameat(d, o.name.as_str(), d, obj(h).as_str())?;
        Ok(())
    }
    fn drop_object(&mut self, o: NewObject) {
        let _ = rustix::fs::unlinkat(self.store.fd(), o.name.as_str(), AtFlags::empty());
    }
    fn finish(&mut self, entries: &[Entry], synced_ns: i128) -> Result<()> {
        let mut gens = self.store.mem.gens.borrow_mut();
        gens.insert(self.g, (entries.to_vec(), synced_ns));
        Ok(())
    }
    fn abandon(self: Box<Self>) {}
}

fn flat(path: &std::path::Path) -> FlatStore {
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
    FlatStore {
        dir: StoreDir {
            path: path.to_path_buf(),
            fd,
        },
        mem: Memory::default(),
    }
}

fn open(p: &std::path::Path) -> OwnedFd {
    crate::persist::open_dir(p).unwrap()
}

#[test]
fn sync_restore_and_diff_run_on_another_layout_through_the_seam() {
    let src = tempfile::tempdir().unwrap();
    let st = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::create_dir(src.path().join("sub")).unwrap();
    std::fs::write(src.path().join("a"), b"first file").unwrap();
    std::fs::write(src.path().join("sub/b"), vec![7u8; 100_000]).unwrap();
    std::os::unix::fs::symlink("a", src.path().join("link")).unwrap();
    let store = flat(st.path());
    let never = AtomicBool::new(false);

    let one = sync::sync(open(src.path()).as_fd(), &store, 2, &never).unwrap();
    assert_eq!((one.generation, one.copied_files, one.files), (1, 2, 2));
    let objects = || {
        std::fs::read_dir(st.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("obj-")
            })
            .count()
    };
    assert_eq!(objects(), 2, "the backend's layout holds the content");

    std::fs::write(src.path().join("a"), b"changed").unwrap();
    let two = sync::sync(open(src.path()).as_fd(), &store, 2, &never).unwrap();
    assert_eq!(two.previous_generation, Some(1));
    assert_eq!((two.copied_files, two.shared_files), (1, 1), "{two:?}");
    assert_eq!(objects(), 3);
    assert!(
        load::diff(open(src.path()).as_fd(), &store, Some(2))
            .unwrap()
            .is_empty()
    );

    let (rep, _) = load::load(&store, 2, open(out.path()).as_fd()).unwrap();
    assert_eq!(rep.files, 2);
    assert_eq!(std::fs::read(out.path().join("a")).unwrap(), b"changed");
    assert_eq!(
        std::fs::read(out.path().join("sub/b")).unwrap(),
        vec![7u8; 100_000]
    );
    assert_eq!(
        std::fs::read_link(out.path().join("link")).unwrap(),
        PathBuf::from("a")
    );

    // A generation finished but never pointed at (a sync killed before its
    // switch) is passed over by the shared rule, whatever the backend.
    store.mem.gens.borrow_mut().insert(3, (Vec::new(), 0));
    assert_eq!(store.newest_complete().unwrap(), Some(2));
    assert_eq!(store.next_gen().unwrap(), 4);
}
