use super::*;
use std::ffi::OsStr;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;

use crate::sys::copy::verify::content_hash;
use crate::sys::fs::remove_tree;
use crate::sys::tmpfs;
use rustix::fs::{Mode, SeekFrom};
use std::os::fd::OwnedFd;

fn dirfd(p: &std::path::Path) -> OwnedFd {
    rustix::fs::openat(
        rustix::fs::CWD,
        p,
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
    )
    .unwrap()
}

#[test]
fn copies_a_tree_and_the_copy_compares_equal() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    let dst = t.path().join("dst");
    std::fs::create_dir_all(src.join("a/b")).unwrap();
    std::fs::create_dir(&dst).unwrap();
    std::fs::write(src.join("a/f"), b"hello").unwrap();
    std::fs::hard_link(src.join("a/f"), src.join("a/b/g")).unwrap();
    std::os::unix::fs::symlink("nowhere", src.join("dangling")).unwrap();
    std::fs::write(src.join(OsStr::from_bytes(b"odd \n\xff")), b"x").unwrap();
    std::fs::set_permissions(src.join("a/b"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    crate::test_support::mkfifo(&src.join("fifo"), 0o640);
    let cancel = AtomicBool::new(false);
    let (s, d) = (dirfd(&src), dirfd(&dst));
    let stats = copy_tree(s.as_fd(), d.as_fd(), true, &cancel, &|_| {}).unwrap();
    assert_eq!(stats.files, 2);
    assert_eq!(stats.hard_links, 1);
    assert_eq!(stats.symlinks, 1);
    assert_eq!(stats.special_files, 1);
    assert_eq!(stats.dirs, 2);
    let a = snapshot(s.as_fd(), &cancel).unwrap();
    let b = snapshot(d.as_fd(), &cancel).unwrap();
    assert_eq!(differences(&a, &b), Vec::<String>::new());
    assert_eq!(
        std::fs::metadata(dst.join("a/b")).unwrap().mode() & 0o7777,
        0o1777
    );
    assert_eq!(
        std::fs::metadata(dst.join("a/f")).unwrap().ino(),
        std::fs::metadata(dst.join("a/b/g")).unwrap().ino()
    );
    // A change is seen.
    std::fs::write(dst.join("a/f"), b"HELLO").unwrap();
    let b = snapshot(d.as_fd(), &cancel).unwrap();
    let diff = differences(&a, &b);
    // a/b/g sorts first, so the hard-link group's content is compared there.
    assert!(
        diff.iter()
            .any(|d| d.starts_with("a/b/g: differs (content")),
        "{diff:?}"
    );
}

#[test]
fn remove_tree_does_not_follow_symlinks() {
    let t = tempfile::tempdir().unwrap();
    let keep = t.path().join("keep");
    std::fs::create_dir(&keep).unwrap();
    std::fs::write(keep.join("precious"), b"1").unwrap();
    let gone = t.path().join("gone");
    std::fs::create_dir_all(gone.join("sub")).unwrap();
    std::os::unix::fs::symlink(&keep, gone.join("sub/link")).unwrap();
    let root = dirfd(t.path());
    remove_tree(root.as_fd(), c"gone").unwrap();
    assert!(!gone.exists());
    assert!(keep.join("precious").exists());
}

/// Deterministic non-zero-heavy bytes (never a whole zero block).
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8 | 1
        })
        .collect()
}

/// A file of length `len` whose only data is `data` (offset, length);
/// everything else is a hole.
fn make(path: &std::path::Path, len: u64, data: &[(u64, usize)]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::create(path).unwrap();
    f.set_len(len).unwrap();
    for (i, &(off, n)) in data.iter().enumerate() {
        f.write_all_at(&noise(i as u64 + off, n), off).unwrap();
    }
    f.sync_all().unwrap();
}

fn blocks(p: &std::path::Path) -> u64 {
    std::fs::metadata(p).unwrap().blocks()
}

/// Byte-for-byte comparison with plain reads (independent of the hash
/// under test).
fn same_bytes(a: &std::path::Path, b: &std::path::Path) -> bool {
    let (mut fa, mut fb) = (
        std::fs::File::open(a).unwrap(),
        std::fs::File::open(b).unwrap(),
    );
    // Two files without any data (ENXIO from offset 0) read as zeros
    // throughout: then only the lengths can differ, and reading a GiB of
    // zeros per mover would only slow the test down.
    let no_data = |f: &std::fs::File| rustix::fs::seek(f, SeekFrom::Data(0)) == Err(Errno::NXIO);
    if no_data(&fa) && no_data(&fb) {
        return fa.metadata().unwrap().len() == fb.metadata().unwrap().len();
    }
    for f in [&fa, &fb] {
        rustix::fs::seek(f, SeekFrom::Start(0)).unwrap();
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let na = std::io::Read::read(&mut fa, &mut ba).unwrap();
        let mut nb = 0;
        while nb < na {
            let n = std::io::Read::read(&mut fb, &mut bb[nb..na]).unwrap();
            if n == 0 {
                return false;
            }
            nb += n;
        }
        if ba[..na] != bb[..na] {
            return false;
        }
        if na == 0 {
            return std::io::Read::read(&mut fb, &mut bb[..1]).unwrap() == 0;
        }
    }
}

fn extents_of(p: &std::path::Path, len: u64) -> Vec<Range<u64>> {
    let f = std::fs::File::open(p).unwrap();
    Extents::new(f.as_fd(), len)
        .collect::<std::io::Result<Vec<_>>>()
        .unwrap()
}

const MIB: u64 = 1 << 20;

/// A test file: name, length, data extents (offset, length).
type Layout = (&'static str, u64, Vec<(u64, usize)>);

/// (name, length, data extents): holes at the start, middle and end; a
/// fully sparse 1 GiB file; a dense file; data at both ends with a hole
/// between; an empty file; a length that is not block-aligned.
fn layouts() -> Vec<Layout> {
    vec![
        (
            "holes-start-middle-end",
            6 * MIB,
            vec![(MIB, 100 << 10), (3 * MIB, 8 << 10)],
        ),
        ("fully-sparse", 1 << 30, vec![]),
        ("dense", 300_000, vec![(0, 300_000)]),
        (
            "data-both-ends",
            4 * MIB,
            vec![(0, 4096), (4 * MIB - 5000, 5000)],
        ),
        ("empty", 0, vec![]),
        ("odd-length", 5 * MIB + 123, vec![(2 * MIB + 7, 999)]),
    ]
}

#[test]
fn extents_skip_holes_and_cover_the_data() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("f");
    make(&p, 6 * MIB, &[(MIB, 100 << 10), (3 * MIB, 8 << 10)]);
    let bs = rustix::fs::statvfs(t.path()).unwrap().f_bsize;
    let e = extents_of(&p, 6 * MIB);
    assert_eq!(e.len(), 2, "{e:?}");
    // Reported at filesystem-block granularity around what was written.
    assert!(e[0].start <= MIB && e[0].start > MIB - bs, "{e:?}");
    assert!(e[0].end >= MIB + (100 << 10) && e[0].end < MIB + (100 << 10) + bs);
    assert!(e[1].start <= 3 * MIB && e[1].end >= 3 * MIB + (8 << 10));
    assert!(e[1].end < 3 * MIB + (8 << 10) + bs);
    // Asked for less than the whole file: clipped.
    let e = extents_of(&p, MIB + 10);
    assert_eq!(e, vec![e[0].start..MIB + 10]);
    // No data at all, and data right to the end.
    make(&p, 64 * MIB, &[]);
    assert_eq!(extents_of(&p, 64 * MIB), Vec::<Range<u64>>::new());
    make(&p, 8192, &[(0, 8192)]);
    assert_eq!(extents_of(&p, 8192), vec![0..8192]);
}

#[test]
fn extents_fall_back_to_the_whole_file_without_seek_data() {
    // procfs files use seq_lseek, which answers EINVAL to SEEK_DATA.
    let f = std::fs::File::open("/proc/self/status").unwrap();
    let e: Vec<_> = Extents::new(f.as_fd(), 100)
        .collect::<std::io::Result<_>>()
        .unwrap();
    assert_eq!(e, vec![0..100]);
}

#[test]
fn dense_files_are_not_probed() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("f");
    make(&p, 3 * MIB, &[(0, 3 << 20)]);
    let f = std::fs::File::open(&p).unwrap();
    let st = rustix::fs::fstat(&f).unwrap();
    let mut e = Extents::for_stat(f.as_fd(), &st);
    assert!(!e.probes());
    assert_eq!(e.next().unwrap().unwrap(), 0..3 * MIB);
    assert!(e.next().is_none());
}

fn hash_of(p: &std::path::Path) -> u64 {
    let f = std::fs::File::open(p).unwrap();
    content_hash(f.as_fd(), &rustix::fs::fstat(&f).unwrap()).unwrap()
}

#[test]
fn content_hash_sees_bytes_not_holes() {
    use std::os::unix::fs::FileExt;
    let t = tempfile::tempdir().unwrap();
    let (sparse, dense) = (t.path().join("sparse"), t.path().join("dense"));
    make(&sparse, 5 * MIB + 3, &[(MIB + 5, 70_000)]);
    // The same bytes with the zeros written out.
    std::fs::write(&dense, std::fs::read(&sparse).unwrap()).unwrap();
    assert!(blocks(&dense) > 4 * blocks(&sparse));
    assert_eq!(hash_of(&sparse), hash_of(&dense));
    // One byte in a hole.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&dense)
        .unwrap();
    f.write_all_at(b"x", 4 * MIB).unwrap();
    assert_ne!(hash_of(&sparse), hash_of(&dense));
    // The same data one byte later.
    let shifted = t.path().join("shifted");
    std::fs::write(&shifted, {
        let mut v = std::fs::read(&sparse).unwrap();
        v.insert(0, 0);
        v.pop();
        v
    })
    .unwrap();
    assert_ne!(hash_of(&sparse), hash_of(&shifted));
    // All zeros of different lengths.
    let (z1, z2) = (t.path().join("z1"), t.path().join("z2"));
    make(&z1, MIB, &[]);
    make(&z2, MIB + 1, &[]);
    assert_ne!(hash_of(&z1), hash_of(&z2));
    // A file reading as zeros hashes as its hole twin.
    std::fs::write(&z2, vec![0u8; MIB as usize]).unwrap();
    assert_eq!(hash_of(&z1), hash_of(&z2));
}

fn copy_layouts_into(dst: BorrowedFd<'_>, dst_path: Option<&std::path::Path>, mover: Mover) {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let all = layouts();
    for (name, len, data) in &all {
        make(&src.join(name), *len, data);
    }
    let cancel = AtomicBool::new(false);
    let moved = std::sync::atomic::AtomicU64::new(0);
    let s = dirfd(&src);
    let stats = copy_tree_with(
        s.as_fd(),
        dst,
        false,
        &cancel,
        &|n| {
            moved.fetch_add(n, Ordering::Relaxed);
        },
        mover,
    )
    .unwrap();
    assert_eq!(stats.files, all.len() as u64);
    assert_eq!(moved.load(Ordering::Relaxed), stats.data_bytes);
    let logical: u64 = all.iter().map(|l| l.1).sum();
    assert_eq!(stats.content_bytes, logical);
    // Data moved: what was written, rounded out to blocks, nowhere near
    // the 1 GiB of holes.
    assert!(stats.data_bytes < 2 * MIB, "{stats:?}");
    assert_eq!(stats.sparse_files, 4, "{stats:?}");
    // The roots themselves were not copied (root_meta false).
    let mut a = snapshot(s.as_fd(), &cancel).unwrap();
    let mut b = snapshot(dst, &cancel).unwrap();
    a.remove(&Vec::new());
    b.remove(&Vec::new());
    assert_eq!(differences(&a, &b), Vec::<String>::new());
    // Through the path as well, with reads independent of the code under test.
    let dp = dst_path
        .map(|p| p.to_path_buf())
        .unwrap_or_else(|| PathBuf::from(format!("/proc/self/fd/{}", dst.as_raw_fd())));
    for (name, len, data) in &all {
        let (sp, cp) = (src.join(name), dp.join(name));
        assert_eq!(std::fs::metadata(&cp).unwrap().len(), *len, "{name}");
        assert!(same_bytes(&sp, &cp), "{name}: contents differ ({mover:?})");
        // A page per extent of slack for block/page rounding.
        let slack = 8 * data.len() as u64;
        assert!(
            blocks(&cp) <= blocks(&sp) + slack,
            "{name}: copy has {} blocks, source {} ({mover:?})",
            blocks(&cp),
            blocks(&sp)
        );
    }
}

#[test]
fn sparse_files_copy_sparse_to_disk_with_every_mover() {
    for mover in [Mover::CopyFileRange, Mover::Sendfile, Mover::ReadWrite] {
        let t = tempfile::tempdir().unwrap();
        let d = dirfd(t.path());
        copy_layouts_into(d.as_fd(), Some(t.path()), mover);
    }
}

#[test]
fn sparse_files_copy_sparse_into_a_tmpfs_with_every_mover() {
    if !rustix::process::geteuid().is_root() {
        crate::skip!("needs root to create a tmpfs (CI runs as root)");
    }
    for mover in [Mover::CopyFileRange, Mover::Sendfile, Mover::ReadWrite] {
        // Far smaller than the 1 GiB of logical content.
        let m = tmpfs::mount_detached("size=16M", Default::default()).unwrap();
        copy_layouts_into(m.root.as_fd(), None, mover);
    }
}

#[test]
fn a_fifo_swapped_in_after_the_stat_is_refused_without_blocking() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("f"), b"data").unwrap();
    let dir = dirfd(t.path());
    let name = c"f";
    let st = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).unwrap();
    // The swap: the regular file becomes a FIFO nobody writes to. A plain
    // open(O_RDONLY) would wait for a writer forever.
    std::fs::remove_file(t.path().join("f")).unwrap();
    rustix::fs::mknodat(&dir, name, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
    assert_eq!(
        open_regular(dir.as_fd(), name, &st, true).err(),
        Some(Errno::STALE)
    );
    // And a whole-tree copy of a tree holding a FIFO recreates it, never opens it.
    let dst = tempfile::tempdir().unwrap();
    let stats = copy_tree(
        dir.as_fd(),
        dirfd(dst.path()).as_fd(),
        false,
        &AtomicBool::new(false),
        &|_| {},
    )
    .unwrap();
    assert_eq!(stats.special_files, 1);
}

#[test]
fn carry_brings_changes_across_and_keeps_newer_writes() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (pa, pb) = (a.path(), b.path());
    std::fs::write(pa.join("same"), b"1").unwrap();
    std::fs::write(pa.join("edited"), b"old").unwrap();
    std::fs::write(pa.join("deleted"), b"x").unwrap();
    std::fs::write(pa.join("both"), b"copy").unwrap();
    std::fs::create_dir(pa.join("sub")).unwrap();
    let (fa, fb) = (dirfd(pa), dirfd(pb));
    let cancel = AtomicBool::new(false);
    copy_tree(fa.as_fd(), fb.as_fd(), false, &cancel, &|_| {}).unwrap();
    let mut base = snapshot(fa.as_fd(), &cancel).unwrap();
    // After the copy: writes to the old tree...
    std::fs::write(pa.join("edited"), b"new and longer").unwrap();
    std::fs::remove_file(pa.join("deleted")).unwrap();
    std::fs::write(pa.join("sub/created"), b"late").unwrap();
    std::fs::create_dir_all(pa.join("newdir/deep")).unwrap();
    std::fs::write(pa.join("newdir/deep/f"), b"deep").unwrap();
    std::fs::write(pa.join("both"), b"old side").unwrap();
    // ...and one to the new tree since the switch, which must win.
    std::fs::write(pb.join("both"), b"new side").unwrap();
    let d = delta::carry(fa.as_fd(), fb.as_fd(), &mut base, &cancel).unwrap();
    assert_eq!(std::fs::read(pb.join("edited")).unwrap(), b"new and longer");
    assert!(!pb.join("deleted").exists());
    assert_eq!(std::fs::read(pb.join("sub/created")).unwrap(), b"late");
    assert_eq!(std::fs::read(pb.join("newdir/deep/f")).unwrap(), b"deep");
    assert_eq!(std::fs::read(pb.join("both")).unwrap(), b"new side");
    assert_eq!(d.kept_newer, vec!["both".to_string()]);
    assert_eq!(d.removed, vec!["deleted".to_string()]);
    assert!(std::fs::read_dir(pb).unwrap().all(|e| {
        !e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".tmpfsctl")
    }));
    // A second pass with nothing new changes nothing.
    assert!(
        delta::carry(fa.as_fd(), fb.as_fd(), &mut base, &cancel)
            .unwrap()
            .is_empty()
    );
}
