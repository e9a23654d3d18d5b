//! Integration tests for `plan`, `apply`, `revert`: real tmpfs mounts on
//! directories under a fresh temp root (never the machine's /tmp mount,
//! /etc/fstab or systemd directories: every run passes --fstab/--unit-dir).

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::hash::Hasher;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{is_root, json, tmpfsctl};
use crate::require_root;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        stderr(o)
    );
}

/// `apply DIR --fstab FSTAB --size SIZE --yes --json`, which must succeed; its JSON.
fn apply_json(dir: &Path, fstab: &Path, size: &str) -> serde_json::Value {
    let out = tmpfsctl(&[
        "apply",
        s(dir),
        "--fstab",
        s(fstab),
        "--size",
        size,
        "--yes",
        "--json",
    ]);
    ok(&out);
    json(&out)
}

/// `revert DIR --fstab FSTAB --keep-data --yes --json`, which must succeed; its JSON.
fn revert_keep_json(dir: &Path, fstab: &Path) -> serde_json::Value {
    let out = tmpfsctl(&[
        "revert",
        s(dir),
        "--fstab",
        s(fstab),
        "--keep-data",
        "--yes",
        "--json",
    ]);
    ok(&out);
    json(&out)
}

/// The fstype mounted exactly at `p`, from findmnt (an independent reader).
fn fstype_at(p: &Path) -> Option<String> {
    let o = Command::new("findmnt")
        .args(["-n", "-o", "FSTYPE", "--mountpoint"])
        .arg(p)
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !t.is_empty()).then_some(t)
}

fn options_at(p: &Path) -> String {
    let o = Command::new("findmnt")
        .args(["-n", "-o", "OPTIONS", "--mountpoint"])
        .arg(p)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Unmounts whatever is still at `path` when a test fails half way.
struct Cleanup(PathBuf);
impl Drop for Cleanup {
    fn drop(&mut self) {
        while fstype_at(&self.0).is_some() {
            if !Command::new("umount")
                .arg("-l")
                .arg(&self.0)
                .status()
                .is_ok_and(|s| s.success())
            {
                break;
            }
        }
    }
}

fn root_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tmpfsctl-it-mounts-")
        .tempdir()
        .unwrap()
}

fn xattrs(p: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut names = vec![0u8; 4096];
    let n = rustix::fs::llistxattr(p, &mut names[..]).unwrap_or(0);
    let mut v: Vec<(Vec<u8>, Vec<u8>)> = names[..n]
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|name| {
            let mut val = vec![0u8; 65536];
            let c = std::ffi::CString::new(name).unwrap();
            let len = rustix::fs::lgetxattr(p, &c, &mut val[..]).unwrap();
            (name.to_vec(), val[..len].to_vec())
        })
        .collect();
    v.sort();
    v
}

/// Everything about a tree a faithful copy must keep, by relative path: file
/// type and mode, owner, ns mtime, size, device number, symlink target,
/// xattrs, content hash, and which names share an inode. Written with std
/// and rustix calls independent of the code under test.
fn tree(root: &Path) -> BTreeMap<Vec<u8>, String> {
    let mut out = BTreeMap::new();
    let mut inodes: HashMap<u64, Vec<Vec<u8>>> = HashMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let p = root.join(&rel);
        let m = std::fs::symlink_metadata(&p).unwrap();
        let ft = m.file_type();
        let mut desc = format!(
            "mode={:o} uid={} gid={} mtime={}.{:09} xattrs={:?}",
            m.mode(),
            m.uid(),
            m.gid(),
            m.mtime(),
            m.mtime_nsec(),
            xattrs(&p)
        );
        if ft.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(rel.join(e.unwrap().file_name()));
            }
        } else {
            desc += &format!(" size={} rdev={}", m.size(), m.rdev());
            if m.nlink() > 1 {
                inodes
                    .entry(m.ino())
                    .or_default()
                    .push(rel.as_os_str().as_bytes().to_vec());
            }
        }
        if ft.is_symlink() {
            desc += &format!(" -> {:?}", std::fs::read_link(&p).unwrap());
        }
        if ft.is_file() {
            desc += &format!(" hash={:x}", file_hash(&p));
        }
        out.insert(rel.as_os_str().as_bytes().to_vec(), desc);
    }
    for (_, mut names) in inodes {
        names.sort();
        for n in &names {
            let e = out.get_mut(n).unwrap();
            *e += &format!(
                " links={:?}",
                names
                    .iter()
                    .map(|x| String::from_utf8_lossy(x))
                    .collect::<Vec<_>>()
            );
        }
    }
    out
}

/// Hash of every byte of a file, read in order in 1 MiB pieces (a GiB-long
/// sparse file need not fit in memory at once).
fn file_hash(p: &Path) -> u64 {
    use std::io::Read;
    let mut f = std::fs::File::open(p).unwrap();
    let mut h = std::hash::DefaultHasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            return h.finish();
        }
        h.write(&buf[..n]);
    }
}

fn assert_same_tree(a: &BTreeMap<Vec<u8>, String>, b: &BTreeMap<Vec<u8>, String>) {
    let show = |k: &Vec<u8>| String::from_utf8_lossy(k).escape_debug().to_string();
    for (k, v) in a {
        assert_eq!(Some(v), b.get(k), "entry {} differs", show(k));
    }
    for k in b.keys() {
        assert!(a.contains_key(k), "extra entry {}", show(k));
    }
}

/// The tree the issue lists: files, nested dirs, a sticky dir, symlinks (one
/// dangling), hard links, a FIFO, a socket, a device node, an xattr and an
/// ACL, odd names, several owners, a setuid file.
fn build_tree(d: &Path) {
    std::fs::create_dir_all(d.join("nested/deeper/deepest")).unwrap();
    std::fs::write(d.join("plain.txt"), b"hello tmpfs\n").unwrap();
    let big: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(d.join("nested/big.bin"), &big).unwrap();
    std::fs::write(d.join("nested/deeper/deepest/leaf"), b"leaf").unwrap();
    std::fs::create_dir(d.join("sticky")).unwrap();
    std::fs::set_permissions(d.join("sticky"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::os::unix::fs::symlink("plain.txt", d.join("link-ok")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/target", d.join("link-dangling")).unwrap();
    std::fs::hard_link(d.join("plain.txt"), d.join("nested/hardlink")).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        d.join("fifo"),
        rustix::fs::Mode::from_raw_mode(0o620),
    )
    .unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(d.join("socket")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        d.join("null-dev"),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o600),
        rustix::fs::makedev(1, 3),
    )
    .unwrap();
    rustix::fs::setxattr(
        d.join("plain.txt"),
        "user.origin",
        b"disk",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    if Command::new("setfacl")
        .args(["-m", "u:1234:rw"])
        .arg(d.join("nested/big.bin"))
        .status()
        .is_ok_and(|s| s.success())
    {
        assert!(
            xattrs(&d.join("nested/big.bin"))
                .iter()
                .any(|(n, _)| n == b"system.posix_acl_access")
        );
    } else {
        eprintln!("note: setfacl missing; ACL not exercised (install acl)");
    }
    for name in [
        &b"with space"[..],
        b"new\nline",
        b"latin1-\xe9\xff",
        b"-dash",
        b".hidden",
    ] {
        std::fs::write(d.join(OsStr::from_bytes(name)), name).unwrap();
    }
    std::fs::write(d.join("suid"), b"#!/bin/sh\n").unwrap();
    std::os::unix::fs::chown(d.join("suid"), Some(1000), Some(1000)).unwrap();
    std::fs::set_permissions(d.join("suid"), std::fs::Permissions::from_mode(0o4755)).unwrap();
    std::os::unix::fs::chown(d.join("nested"), Some(65534), Some(65534)).unwrap();
    std::os::unix::fs::lchown(d.join("link-dangling"), Some(1000), Some(100)).unwrap();
    std::os::unix::fs::chown(d.join("nested/deeper/deepest/leaf"), Some(4242), Some(4343)).unwrap();
    // Old, precise timestamps (ns) that a careless copy would lose.
    let t = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: 1_000_000_000,
            tv_nsec: 123_456_789,
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: 1_100_000_000,
            tv_nsec: 987_654_321,
        },
    };
    for p in ["plain.txt", "nested/deeper", "fifo", "link-ok", "sticky"] {
        rustix::fs::utimensat(
            rustix::fs::CWD,
            d.join(p),
            &t,
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .unwrap();
    }
}

#[test]
fn apply_then_revert_keep_data_preserves_everything() {
    require_root!();
    let t = root_dir();
    let dir = t.path().join("data dir");
    std::fs::create_dir(&dir).unwrap();
    build_tree(&dir);
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"# empty\n").unwrap();
    let _c = Cleanup(dir.clone());
    let before = tree(&dir);

    let r = apply_json(&dir, &fstab, "64M");
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["mounted"], true);
    assert_eq!(r["copied"]["hard_links"], 1);
    assert_eq!(r["copied"]["special_files"], 3);
    assert_eq!(r["verified_entries"].as_u64().unwrap(), before.len() as u64);
    assert_eq!(fstype_at(&dir).as_deref(), Some("tmpfs"));
    let opts = options_at(&dir);
    for o in ["nosuid", "nodev", "size=65536k", "mode=755"] {
        assert!(opts.contains(o), "{o} in {opts}");
    }
    assert_same_tree(&before, &tree(&dir));

    // Meanwhile: new files, a changed one, a removed one.
    std::fs::write(dir.join("written-meanwhile"), b"new data").unwrap();
    std::fs::create_dir(dir.join("new-dir")).unwrap();
    std::fs::write(dir.join("plain.txt"), b"changed on tmpfs\n").unwrap();
    std::fs::remove_file(dir.join("with space")).unwrap();
    let on_tmpfs = tree(&dir);

    let r = revert_keep_json(&dir, &fstab);
    assert_eq!(r["unmounted"], true);
    assert_eq!(fstype_at(&dir), None, "still mounted after revert");
    assert_same_tree(&on_tmpfs, &tree(&dir));
    assert_eq!(std::fs::read(&fstab).unwrap(), b"# empty\n");
    // No scratch directories left behind.
    assert!(std::fs::read_dir(&dir).unwrap().all(|e| {
        !e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".tmpfsctl")
    }));
}

#[test]
fn revert_without_keep_data_brings_back_the_disk_contents() {
    require_root!();
    let t = root_dir();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("old"), b"on disk").unwrap();
    let _c = Cleanup(dir.clone());
    let before = tree(&dir);
    ok(&tmpfsctl(&[
        "apply",
        s(&dir),
        "--boot",
        "none",
        "--size",
        "8M",
        "--yes",
    ]));
    std::fs::write(dir.join("scratch"), b"x").unwrap();
    // --yes only skips the prompt: files on the tmpfs need --keep-data or --discard.
    let out = tmpfsctl(&[
        "revert",
        s(&dir),
        "--yes",
        "--fstab",
        s(&t.path().join("none")),
    ]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("scratch") && e.contains("--keep-data") && e.contains("--discard"),
        "{e}"
    );
    assert_eq!(fstype_at(&dir).as_deref(), Some("tmpfs"));
    assert_eq!(std::fs::read(dir.join("scratch")).unwrap(), b"x");
    ok(&tmpfsctl(&[
        "revert",
        s(&dir),
        "--discard",
        "--yes",
        "--fstab",
        s(&t.path().join("none")),
    ]));
    assert_eq!(fstype_at(&dir), None);
    assert_same_tree(&before, &tree(&dir));
    // The progress notes of both runs are gone: nothing was interrupted.
    let notes: Vec<String> = std::fs::read_dir("/run/tmpfsctl-journal")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter(|n| n.contains(s(&dir)))
        .collect();
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn copy_failure_aborts_with_nothing_changed() {
    require_root!();
    let t = root_dir();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("small"), b"x").unwrap();
    // tmpfs charges user xattrs to the space nr_inodes allows (1 KiB per
    // inode): with --inodes exactly the 3 inodes in use, the files fit but a
    // 3000-byte xattr cannot be copied, half way through the copy. (A sparse
    // file used to serve here; the copy keeps it sparse now.)
    std::fs::write(dir.join("annotated"), b"y").unwrap();
    rustix::fs::setxattr(
        dir.join("annotated"),
        "user.note",
        &[b'n'; 3000],
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"proc /proc proc defaults 0 0\n").unwrap();
    let _c = Cleanup(dir.clone());
    let before = tree(&dir);
    let out = tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--size",
        "8M",
        "--inodes",
        "3",
        "--yes",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("nothing was changed"), "{e}");
    assert!(e.contains("annotated"), "names the file: {e}");
    assert_eq!(fstype_at(&dir), None, "nothing may stay mounted");
    assert_same_tree(&before, &tree(&dir));
    assert_eq!(
        std::fs::read(&fstab).unwrap(),
        b"proc /proc proc defaults 0 0\n"
    );
    assert!(!PathBuf::from(format!("{}.tmpfsctl.bak", fstab.display())).exists());
}

fn blocks(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().blocks()
}

/// A 1 GiB file holding 3 MiB (holes at the start, the middle and the end)
/// goes into a 64 MiB tmpfs and back to disk: same bytes both times, and
/// still sparse (allocated blocks within a page per extent of the source's).
#[test]
fn sparse_files_stay_sparse_through_apply_and_revert() {
    use std::os::unix::fs::FileExt;
    require_root!();
    let t = root_dir();
    let dir = t.path().join("sparse dir");
    std::fs::create_dir(&dir).unwrap();
    let img = dir.join("disk.img");
    let f = std::fs::File::create(&img).unwrap();
    f.set_len(1 << 30).unwrap();
    const MIB: u64 = 1 << 20;
    let extents = [100 * MIB, 500 * MIB + 12_345, 900 * MIB];
    for (i, &off) in extents.iter().enumerate() {
        let data: Vec<u8> = (0..MIB as u32)
            .map(|j| ((j ^ i as u32).wrapping_mul(2654435761) >> 11) as u8 | 1)
            .collect();
        f.write_all_at(&data, off).unwrap();
    }
    f.sync_all().unwrap();
    drop(f);
    std::fs::write(dir.join("dense.txt"), b"not sparse\n").unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"# empty\n").unwrap();
    let _c = Cleanup(dir.clone());
    let before = tree(&dir);
    let disk_blocks = blocks(&img);
    assert!(
        disk_blocks * 512 < 8 * MIB,
        "the test file is not sparse here"
    );
    // A page of rounding per extent (and one for the unaligned start).
    let slack = 8 * (extents.len() as u64 + 1);

    let r = apply_json(&dir, &fstab, "64M");
    assert_eq!(r["mounted"], true);
    assert_eq!(r["copied"]["sparse_files"], 1);
    assert_eq!(
        r["copied"]["content_bytes"].as_u64().unwrap(),
        (1 << 30) + 11
    );
    let data = r["copied"]["data_bytes"].as_u64().unwrap();
    assert!((3 * MIB..5 * MIB).contains(&data), "data_bytes {data}");
    assert_eq!(fstype_at(&dir).as_deref(), Some("tmpfs"));
    assert_same_tree(&before, &tree(&dir));
    let tmpfs_blocks = blocks(&img);
    assert!(
        tmpfs_blocks <= disk_blocks + slack,
        "copy on tmpfs has {tmpfs_blocks} blocks, source {disk_blocks}"
    );
    let used = rustix::fs::statvfs(&dir).unwrap();
    assert!(
        (used.f_blocks - used.f_bfree) * used.f_frsize < 8 * MIB,
        "the tmpfs holds more than the data"
    );

    std::fs::write(dir.join("dense.txt"), b"changed on tmpfs\n").unwrap();
    let on_tmpfs = tree(&dir);
    let r = revert_keep_json(&dir, &fstab);
    assert_eq!(r["copied_back"]["sparse_files"], 1);
    assert_eq!(fstype_at(&dir), None, "still mounted after revert");
    assert_same_tree(&on_tmpfs, &tree(&dir));
    let back_blocks = blocks(&img);
    assert!(
        back_blocks <= tmpfs_blocks + slack,
        "copy back on disk has {back_blocks} blocks, tmpfs {tmpfs_blocks}"
    );
}

/// Debian 12's installer output, with aligned columns, comments and a
/// commented-out line.
const DEBIAN_FSTAB: &[u8] = include_bytes!("../fixtures/debian.fstab");

#[test]
fn fstab_round_trips_and_second_apply_adds_nothing() {
    require_root!();
    let t = root_dir();
    let dir = t.path().join("scratch");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, DEBIAN_FSTAB).unwrap();
    let _c = Cleanup(dir.clone());
    let out = tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--size",
        "16M",
        "--yes",
        "--json",
    ]);
    ok(&out);
    let line = json(&out)["plan"]["persist"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        line.starts_with(&format!(
            "tmpfs {} tmpfs nosuid,nodev,size=16M,",
            dir.display()
        )),
        "{line}"
    );
    let after = std::fs::read(&fstab).unwrap();
    assert_eq!(after, [DEBIAN_FSTAB, line.as_bytes(), b"\n"].concat());
    assert_eq!(
        std::fs::read(format!("{}.tmpfsctl.bak", fstab.display())).unwrap(),
        DEBIAN_FSTAB
    );
    let v = Command::new("findmnt")
        .arg("--verify")
        .arg("--tab-file")
        .arg(&fstab)
        .arg("--target")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        v.status.success(),
        "findmnt --verify: {}",
        String::from_utf8_lossy(&v.stdout)
    );

    // Same apply again: no second line, nothing mounted twice.
    let r = apply_json(&dir, &fstab, "16M");
    assert_eq!(r["mounted"], false);
    assert_eq!(r["persist"]["edit"], "unchanged");
    assert_eq!(std::fs::read(&fstab).unwrap(), after);
    let stacked = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.split(' ').nth(4) == Some(s(&dir)))
        .count();
    assert_eq!(stacked, 1);
    // Without --size it keeps the current size (idempotent).
    ok(&tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--yes",
    ]));
    assert_eq!(std::fs::read(&fstab).unwrap(), after);

    // Resize: live and in fstab; never below usage.
    std::fs::write(dir.join("three-mib"), vec![1u8; 3 << 20]).unwrap();
    let out = tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--resize",
        "2M",
        "--yes",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("below"), "{}", stderr(&out));
    ok(&tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--resize",
        "32M",
        "--yes",
    ]));
    assert!(
        options_at(&dir).contains("size=32768k"),
        "{}",
        options_at(&dir)
    );
    assert!(
        options_at(&dir).contains("nosuid"),
        "resize must keep flags: {}",
        options_at(&dir)
    );
    let resized = String::from_utf8(std::fs::read(&fstab).unwrap()).unwrap();
    assert_eq!(resized.matches(&format!(" {} ", dir.display())).count(), 1);
    assert!(resized.contains("size=32M"), "{resized}");

    ok(&tmpfsctl(&[
        "revert",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--discard",
        "--yes",
    ]));
    assert_eq!(std::fs::read(&fstab).unwrap(), DEBIAN_FSTAB);
    assert!(!PathBuf::from(format!("{}.tmpfsctl.bak", fstab.display())).exists());
    assert_eq!(fstype_at(&dir), None);
}

#[test]
fn systemd_dropin_is_written_verified_and_removed() {
    require_root!();
    let t = root_dir();
    let dir = t.path().join("unitdir");
    std::fs::create_dir(&dir).unwrap();
    let units = t.path().join("units");
    std::fs::create_dir_all(units.join("local-fs.target.wants")).unwrap();
    let name = String::from_utf8(
        Command::new("systemd-escape")
            .args(["-p", "--suffix=mount"])
            .arg(&dir)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    std::fs::write(
        units.join(&name),
        format!("[Unit]\nDescription=test\n[Mount]\nWhat=tmpfs\nWhere={}\nType=tmpfs\nOptions=mode=1777\n", dir.display()),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        format!("../{name}"),
        units.join("local-fs.target.wants").join(&name),
    )
    .unwrap();
    let fstab = t.path().join("fstab");
    let _c = Cleanup(dir.clone());
    // Auto: the unit is enabled, so systemd is chosen.
    let out = tmpfsctl(&[
        "plan",
        s(&dir),
        "--unit-dir",
        s(&units),
        "--fstab",
        s(&fstab),
        "--json",
    ]);
    let p = json(&out);
    assert_eq!(p["persist"]["via"], "systemd", "{p}");
    ok(&tmpfsctl(&[
        "apply",
        s(&dir),
        "--unit-dir",
        s(&units),
        "--fstab",
        s(&fstab),
        "--size",
        "8M",
        "--yes",
    ]));
    let dropin = units.join(format!("{name}.d/override.conf"));
    let text = std::fs::read_to_string(&dropin).unwrap();
    assert!(text.contains("\nOptions=nosuid,nodev,size=8M,"), "{text}");
    assert!(
        text.contains(&format!("\nWhere={}\n", dir.display())),
        "{text}"
    );
    assert!(
        !fstab.exists(),
        "fstab untouched when persisting via systemd"
    );
    let v = Command::new("systemd-analyze")
        .arg("verify")
        .arg(units.join(&name))
        .output()
        .unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    ok(&tmpfsctl(&[
        "revert",
        s(&dir),
        "--unit-dir",
        s(&units),
        "--fstab",
        s(&fstab),
        "--yes",
    ]));
    assert!(!dropin.exists());
    assert!(!units.join(format!("{name}.d")).exists());
    assert_eq!(fstype_at(&dir), None);
}

#[test]
fn revert_refuses_when_busy_unless_lazy() {
    require_root!();
    let t = root_dir();
    let dir = t.path().join("busy");
    std::fs::create_dir(&dir).unwrap();
    let _c = Cleanup(dir.clone());
    ok(&tmpfsctl(&[
        "apply",
        s(&dir),
        "--boot",
        "none",
        "--size",
        "8M",
        "--yes",
    ]));
    let mut child = Command::new("sleep")
        .arg("60")
        .current_dir(&dir)
        .spawn()
        .unwrap();
    let none = t.path().join("no-fstab");
    let out = tmpfsctl(&["revert", s(&dir), "--fstab", s(&none), "--yes"]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&child.id().to_string()) && e.contains("--lazy"),
        "{e}"
    );
    assert_eq!(fstype_at(&dir).as_deref(), Some("tmpfs"));
    ok(&tmpfsctl(&[
        "revert",
        s(&dir),
        "--fstab",
        s(&none),
        "--lazy",
        "--yes",
    ]));
    assert_eq!(fstype_at(&dir), None);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn non_root_gets_a_clear_error() {
    require_root!(); // needs root to drop privileges with setpriv
    let t = root_dir();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    for cmd in ["apply", "revert"] {
        let out = Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                env!("CARGO_BIN_EXE_tmpfsctl"),
                cmd,
            ])
            .arg(&dir)
            .arg("--yes")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("needs root"),
            "{cmd}: {}",
            stderr(&out)
        );
    }
    assert_eq!(fstype_at(&dir), None);
}

#[test]
fn bad_directories_get_clear_messages() {
    let t = root_dir();
    let file = t.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let missing = t.path().join("missing");
    for (cmd, p, want) in [
        ("plan", &missing, "no such directory"),
        ("plan", &file, "is a file, not a directory"),
    ] {
        let out = tmpfsctl(&[cmd, s(p)]);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains(want), "{}", stderr(&out));
    }
    if is_root() {
        for cmd in ["apply", "revert"] {
            let out = tmpfsctl(&[cmd, s(&missing), "--yes"]);
            assert_eq!(out.status.code(), Some(2));
            assert!(
                stderr(&out).contains("no such directory"),
                "{}",
                stderr(&out)
            );
        }
        // Without a terminal and without --yes, apply asks for --yes.
        let dir = t.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        let out = tmpfsctl(&["apply", s(&dir), "--boot", "none"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
        assert_eq!(fstype_at(&dir), None);
    }
}

#[test]
fn already_tmpfs_with_other_options_is_refused() {
    require_root!();
    let m = crate::common::TestMount::tmpfs("size=16M,noexec");
    let fstab = m.dir.path().join("fstab");
    let out = tmpfsctl(&["apply", s(&m.path), "--fstab", s(&fstab), "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("already a tmpfs with other options") && e.contains("revert"),
        "{e}"
    );
    assert!(!fstab.exists());
    // plan reports it as a blocker with exit 1.
    let out = tmpfsctl(&["plan", s(&m.path), "--fstab", s(&fstab), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let p = json(&out);
    assert_eq!(p["mount_state"], "conflict");
}

#[test]
fn plan_json_on_a_real_directory() {
    let t = root_dir();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("f"), vec![0u8; 200_000]).unwrap();
    let fstab = t.path().join("fstab");
    let out = tmpfsctl(&["plan", s(&dir), "--fstab", s(&fstab), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let p = json(&out);
    assert_eq!(p["schema_version"], 1);
    assert_eq!(p["inodes"], 2);
    assert!(p["used_bytes"].as_u64().unwrap() >= 200_000);
    assert_eq!(p["mount_state"], "not_mounted");
    assert_eq!(p["persist"]["action"], "append");
    assert!(p["steps"].as_array().unwrap().len() >= 5);
    assert!(!fstab.exists(), "plan changes nothing");
    // A size below usage is refused, naming the fix.
    let out = tmpfsctl(&["plan", s(&dir), "--size", "100k"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("below what"), "{}", stderr(&out));
    // A process with its cwd there is listed.
    let mut child = Command::new("sleep")
        .arg("30")
        .current_dir(&dir)
        .spawn()
        .unwrap();
    let p = json(&tmpfsctl(&["plan", s(&dir), "--json"]));
    let _ = child.kill();
    let _ = child.wait();
    if is_root() {
        assert!(
            p["busy"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b["pid"] == child.id() && b["uses"][0] == "cwd"),
            "{}",
            p["busy"]
        );
    }
}

/// No mount of ours under `root` is left (tests clean up after failures too).
fn mounts_under(root: &Path) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(str::to_string))
        .filter(|m| Path::new(m).starts_with(root))
        .collect()
}

#[test]
fn symlinks_and_system_directories_are_refused() {
    require_root!();
    let t = root_dir();
    let real = t.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("f"), b"x").unwrap();
    let link = t.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let _c = Cleanup(real.clone());
    for cmd in ["plan", "apply"] {
        let out = tmpfsctl(
            &[cmd, s(&link), "--boot", "none", "--yes"][..if cmd == "plan" { 2 } else { 5 }],
        );
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {e}");
        assert!(
            e.contains("symbolic link") && e.contains(s(&real)) && e.contains("pass the target"),
            "{cmd}: {e}"
        );
    }
    assert_eq!(fstype_at(&real), None);
    for d in [
        "/etc", "/var", "/boot", "/home", "/usr", "/proc", "/sys", "/dev", "/run", "/lib",
    ] {
        if !Path::new(d).is_dir()
            || std::fs::symlink_metadata(d)
                .unwrap()
                .file_type()
                .is_symlink()
        {
            continue;
        }
        let out = tmpfsctl(&["plan", d]);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{d}: {e}");
        assert!(
            e.contains("refusing to put") && !e.contains("umount"),
            "{d}: {e}"
        );
    }
    for d in ["/var/tmp", "/var/log"] {
        let out = tmpfsctl(&["plan", d]);
        assert_ne!(out.status.code(), Some(2), "{d}: {}", stderr(&out));
    }
}

#[test]
fn package_files_are_a_blocker_lifted_only_by_the_flag() {
    require_root!();
    // bash's documentation directory: dpkg installed the files in it.
    let doc = Path::new("/usr/share/doc/bash");
    if !doc.is_dir() || !Path::new("/var/lib/dpkg/info/bash.list").exists() {
        eprintln!("SKIP: no dpkg-installed bash docs here");
        return;
    }
    let out = tmpfsctl(&["plan", s(doc), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let j = json(&out);
    let b = j["blockers"].to_string();
    assert!(
        b.contains("installed by packages")
            && b.contains("/usr/share/doc/bash/")
            && b.contains("--allow-package-files"),
        "{b}"
    );
}

#[test]
fn a_directory_another_user_could_swap_is_refused() {
    require_root!();
    let t = root_dir();
    let p = t.path().join("users");
    std::fs::create_dir(&p).unwrap();
    std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
    let dir = p.join("d");
    std::fs::create_dir(&dir).unwrap();
    let _c = Cleanup(dir.clone());
    let out = tmpfsctl(&["apply", s(&dir), "--boot", "none", "--size", "8M", "--yes"]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("uid 65534") && e.contains(s(&p)), "{e}");
    assert_eq!(fstype_at(&dir), None);
    // World-writable without the sticky bit: the same.
    let w = t.path().join("open");
    std::fs::create_dir(&w).unwrap();
    std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::create_dir(w.join("d")).unwrap();
    let out = tmpfsctl(&["plan", s(&w.join("d"))]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("writable by everyone"), "{e}");
}

#[test]
fn an_open_writer_blocks_apply_unless_forced() {
    require_root!();
    let t = root_dir();
    let dir = t.path().join("w");
    std::fs::create_dir(&dir).unwrap();
    let _c = Cleanup(dir.clone());
    let f = dir.join("log");
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import sys,time\nf=open(sys.argv[1],'w')\nf.write('a\\n'); f.flush()\ntime.sleep(60)",
            s(&f),
        ])
        .spawn()
        .unwrap();
    while std::fs::read(&f).map(|b| b.is_empty()).unwrap_or(true) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = tmpfsctl(&["apply", s(&dir), "--boot", "none", "--size", "8M", "--yes"]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&child.id().to_string()) && e.contains("log") && e.contains("--force"),
        "{e}"
    );
    assert_eq!(fstype_at(&dir), None);
    let out = tmpfsctl(&[
        "apply",
        s(&dir),
        "--boot",
        "none",
        "--size",
        "8M",
        "--force",
        "--yes",
    ]);
    ok(&out);
    assert!(
        stderr(&out).contains("hidden under the tmpfs"),
        "{}",
        stderr(&out)
    );
    let _ = child.kill();
    let _ = child.wait();
    ok(&tmpfsctl(&[
        "revert",
        s(&dir),
        "--fstab",
        s(&t.path().join("none")),
        "--discard",
        "--yes",
    ]));
}

#[test]
fn a_persistence_that_cannot_be_written_fails_before_mounting() {
    require_root!();
    let t = root_dir();
    let dir = t.path().join("p");
    std::fs::create_dir(&dir).unwrap();
    let _c = Cleanup(dir.clone());
    let fstab = t.path().join("nonexistent/dir/fstab");
    let out = tmpfsctl(&[
        "apply",
        s(&dir),
        "--boot",
        "fstab",
        "--fstab",
        s(&fstab),
        "--size",
        "8M",
        "--yes",
    ]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("does not exist") && e.contains("--fstab"), "{e}");
    assert_eq!(fstype_at(&dir), None);
    assert!(mounts_under(t.path()).is_empty());
}

/// Writes a file every `interval` seconds under `dir` (open, write, fsync,
/// close), then prints its number: printed means acknowledged.
fn spawn_writer(dir: &Path, interval: f64, stop: &Path) -> std::process::Child {
    let script = "import os,sys,time\nd,iv,stop=sys.argv[1],float(sys.argv[2]),sys.argv[3]\ni=0\n\
while not os.path.exists(stop):\n    p=os.path.join(d,'w-%d'%i)\n    \
fd=os.open(p,os.O_WRONLY|os.O_CREAT|os.O_TRUNC,0o644)\n    os.write(fd,b'payload %d'%i)\n    os.fsync(fd)\n    os.close(fd)\n    \
print(i,flush=True)\n    i+=1\n    time.sleep(iv)\n";
    Command::new("python3")
        .args(["-c", script, s(dir), &interval.to_string(), s(stop)])
        .current_dir("/")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Run tmpfsctl, retrying while it refuses because the writer happened to
/// hold its file open at the moment of the check (a refusal changes nothing).
fn run_past_writer(args: &[&str]) -> Output {
    for _ in 0..20 {
        let out = tmpfsctl(args);
        let e = stderr(&out);
        if out.status.success() || !(e.contains("open for writing") || e.contains("is busy")) {
            return out;
        }
    }
    tmpfsctl(args)
}

#[test]
fn a_writer_during_apply_and_revert_loses_no_acknowledged_file() {
    require_root!();
    let mut table = Vec::new();
    for interval in [0.05, 0.1, 0.3, 0.5, 1.0] {
        let t = root_dir();
        let dir = t.path().join("live");
        std::fs::create_dir(&dir).unwrap();
        // Enough to copy that writes land during the copy and the switch.
        for i in 0..3000 {
            std::fs::write(dir.join(format!("seed-{i}")), vec![b'x'; 4096]).unwrap();
        }
        let _c = Cleanup(dir.clone());
        let stop = t.path().join("stop");
        let w = spawn_writer(&dir, interval, &stop);
        std::thread::sleep(std::time::Duration::from_secs_f64(interval.max(0.1)));
        let none = t.path().join("no-fstab");
        let a = run_past_writer(&[
            "apply",
            s(&dir),
            "--fstab",
            s(&none),
            "--boot",
            "none",
            "--size",
            "64M",
            "--yes",
        ]);
        ok(&a);
        std::thread::sleep(std::time::Duration::from_secs_f64(interval * 2.0));
        let r = run_past_writer(&[
            "revert",
            s(&dir),
            "--fstab",
            s(&none),
            "--keep-data",
            "--yes",
        ]);
        ok(&r);
        std::thread::sleep(std::time::Duration::from_secs_f64(interval * 2.0));
        std::fs::write(&stop, b"").unwrap();
        let out = w.wait_with_output().unwrap();
        let acked: Vec<u64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        assert_eq!(fstype_at(&dir), None);
        let mut lost = Vec::new();
        for i in &acked {
            match std::fs::read(dir.join(format!("w-{i}"))) {
                Ok(b) if b == format!("payload {i}").as_bytes() => {}
                other => lost.push((
                    *i,
                    other.map(|b| String::from_utf8_lossy(&b).into_owned()).ok(),
                )),
            }
        }
        let carried = String::from_utf8_lossy(&a.stdout).contains("brought across")
            || String::from_utf8_lossy(&r.stdout).contains("brought back");
        table.push(format!(
            "interval {interval:>4} s: {} acknowledged, {} lost, delta carried: {carried}",
            acked.len(),
            lost.len()
        ));
        assert!(lost.is_empty(), "interval {interval}: lost {lost:?}");
        assert!(!acked.is_empty());
    }
    eprintln!("{}", table.join("\n"));
}

/// As uid 65534: swap `a` and `b` with renameat2(RENAME_EXCHANGE) in a loop
/// until `stop` exists (or 120 s pass), printing how many swaps it made.
fn spawn_swapper(a: &Path, b: &Path, stop: &Path) -> std::process::Child {
    let script = "import ctypes,os,sys,time\nlibc=ctypes.CDLL(None,use_errno=True)\n\
a,b,stop=[x.encode() for x in sys.argv[1:4]]\nn=0\nend=time.time()+120\n\
while not os.path.exists(stop) and time.time()<end:\n    \
if libc.renameat2(-100,a,-100,b,2)==0: n+=1\nprint(n,flush=True)\n";
    // The system's python: a per-user one (pyenv under /root) is out of
    // reach for uid 65534.
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            script,
        ])
        .args([s(a), s(b), s(stop)])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_user_swapping_dir_for_a_symlink_never_redirects_apply() {
    require_root!();
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("SKIP: setpriv (util-linux) is not installed");
        return;
    }
    let t = root_dir();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = t.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(secret.join("s"), b"secret").unwrap();
    let p = t.path().join("p");
    std::fs::create_dir(&p).unwrap();
    let dir = p.join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("mine"), b"user data").unwrap();
    let link = p.join("l");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    for x in [&p, &dir, &dir.join("mine")] {
        std::os::unix::fs::chown(x, Some(65534), Some(65534)).unwrap();
    }
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    let _c1 = Cleanup(dir.clone());
    let _c2 = Cleanup(secret.clone());
    let _c3 = Cleanup(link.clone());
    let stop = t.path().join("stop");
    let swapper = spawn_swapper(&dir, &link, &stop);
    let (mut applied, mut refused) = (0, 0);
    let mut reasons: HashMap<&str, usize> = HashMap::new();
    for run in 0..40 {
        // As root directly, the owner of the parent is not trusted; run half
        // as if that user had called sudo, so the descriptor work is what
        // stands between them and the root-only directory.
        let mut cmd = crate::common::bin();
        cmd.args(["apply", s(&dir), "--boot", "none", "--size", "16M", "--yes"]);
        if run % 2 == 1 {
            cmd.env("SUDO_UID", "65534");
        } else {
            cmd.env_remove("SUDO_UID");
        }
        let out = cmd.output().unwrap();
        let e = stderr(&out);
        let mounted = mounts_under(t.path());
        assert!(
            !mounted.iter().any(|m| Path::new(m) == secret),
            "run {run}: the root-only directory got the mount: {mounted:?}\n{e}"
        );
        if out.status.success() {
            assert!(
                run % 2 == 1,
                "run {run}: applied as root on a directory the user could swap\n{e}"
            );
            applied += 1;
            // The tmpfs went onto the user's directory; the user may rename
            // their own directory afterwards (the mount moves with it), so
            // it is found by content, not by name.
            assert_eq!(mounted.len(), 1, "run {run}: {mounted:?}\n{e}");
            let m = Path::new(&mounted[0]);
            assert!(m == dir || m == link, "run {run}: {mounted:?}");
            assert_eq!(std::fs::read(m.join("mine")).unwrap(), b"user data");
            assert!(
                !m.join("s").exists(),
                "run {run}: root-only file copied where the user can read it"
            );
            // The user keeps renaming it while we unmount: retry by its
            // current name.
            for _ in 0..100 {
                let left = mounts_under(t.path());
                if left.is_empty() {
                    break;
                }
                for m in &left {
                    let _ = Command::new("umount").arg("-l").arg(m).status();
                }
            }
            assert!(mounts_under(t.path()).is_empty());
        } else {
            refused += 1;
            assert_eq!(out.status.code(), Some(2), "run {run}: {e}");
            assert!(
                mounted.is_empty(),
                "run {run}: a refused apply left {mounted:?}\n{e}"
            );
            let why = if e.contains("uid 65534") {
                "parent owned by the user"
            } else if e.contains("symbolic link") {
                "symlink refused"
            } else if e.contains("moved or replaced") || e.contains("renamed or replaced") {
                "moved while working"
            } else {
                eprintln!("run {run}: other refusal: {e}");
                "other"
            };
            *reasons.entry(why).or_default() += 1;
        }
        assert_eq!(std::fs::read(secret.join("s")).unwrap(), b"secret");
    }
    std::fs::write(&stop, b"").unwrap();
    let out = swapper.wait_with_output().unwrap();
    let swaps = String::from_utf8_lossy(&out.stdout).trim().to_string();
    eprintln!("swaps {swaps}; applied {applied}, refused {refused}: {reasons:?}");
    assert!(
        swaps.parse::<u64>().unwrap_or(0) > 0,
        "the swapper never ran"
    );
    assert!(!reasons.contains_key("other"), "{reasons:?}");
}

#[path = "mounts_options.rs"]
mod options;

#[path = "mounts_crash.rs"]
mod crash;
