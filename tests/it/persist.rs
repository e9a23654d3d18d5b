//! Integration tests for `persist`: real tmpfs mounts, a store on disk (the
//! temp root is on the root filesystem), a loop-mounted ext4 image for
//! ENOSPC. Every run uses its own registry (TMPFSCTL_PERSIST_REGISTRY) and
//! --persist none or a private --unit-dir: never the machine's units.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{TestMount, bin, json};
use crate::require_root;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A test world: a temp root on disk with DIR, STORE and a registry.
struct World {
    root: tempfile::TempDir,
    dir: PathBuf,
    store: PathBuf,
    registry: PathBuf,
}

impl World {
    fn new() -> World {
        let root = tempfile::Builder::new()
            .prefix("tmpfsctl-it-persist-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let dir = root.path().join("hot dir");
        let store = root.path().join("store");
        std::fs::create_dir(&dir).unwrap();
        let registry = root.path().join("registry.json");
        World {
            root,
            dir,
            store,
            registry,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        bin()
            .env("TMPFSCTL_PERSIST_REGISTRY", &self.registry)
            .args(args)
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> Output {
        let o = self.run(args);
        assert!(o.status.success(), "{args:?}: {}", show(&o));
        o
    }

    fn enable(&self) {
        self.ok(&[
            "persist",
            "enable",
            s(&self.dir),
            "--store",
            s(&self.store),
            "--size",
            "64M",
            "--persist",
            "none",
            "--yes",
        ]);
    }

    fn sync(&self) -> Output {
        self.run(&["persist", "sync", s(&self.dir)])
    }
}

impl Drop for World {
    fn drop(&mut self) {
        while is_mount(&self.dir) {
            if !Command::new("umount")
                .arg("-l")
                .arg(&self.dir)
                .status()
                .is_ok_and(|s| s.success())
            {
                break;
            }
        }
        let _ = self.root.path();
    }
}

fn is_mount(p: &Path) -> bool {
    Command::new("mountpoint")
        .arg("-q")
        .arg(p)
        .status()
        .is_ok_and(|s| s.success())
}

fn fstype(p: &Path) -> String {
    let o = Command::new("findmnt")
        .args(["-n", "-o", "FSTYPE", "--mountpoint"])
        .arg(p)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn xattrs(p: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut names = vec![0u8; 4096];
    let n = rustix::fs::llistxattr(p, &mut names[..]).unwrap_or(0);
    let mut v: Vec<_> = names[..n]
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

/// Everything a faithful restore keeps, per relative path (std and rustix
/// calls only, independent of the code under test): type, mode, owner, ns
/// mtime, size, allocated-or-not, symlink target, xattrs, content hash, and
/// which names share an inode. Directory mtimes are left out when
/// `dir_times` is false (a sync killed half way does not change DIR).
fn tree(root: &Path, dir_times: bool) -> BTreeMap<Vec<u8>, String> {
    let mut out = BTreeMap::new();
    let mut inodes: HashMap<u64, Vec<Vec<u8>>> = HashMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let p = root.join(&rel);
        let m = std::fs::symlink_metadata(&p).unwrap();
        let ft = m.file_type();
        let mtime = if ft.is_dir() && !dir_times {
            String::new()
        } else {
            format!("{}.{:09}", m.mtime(), m.mtime_nsec())
        };
        let mut d = format!(
            "mode={:o} uid={} gid={} mtime={mtime} xattrs={:?}",
            m.mode(),
            m.uid(),
            m.gid(),
            xattrs(&p)
        );
        if ft.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(rel.join(e.unwrap().file_name()));
            }
        } else if ft.is_symlink() {
            d += &format!(" link={:?}", std::fs::read_link(&p).unwrap());
        } else if ft.is_file() {
            let data = std::fs::read(&p).unwrap();
            let mut h = std::collections::hash_map::DefaultHasher::new();
            h.write(&data);
            d += &format!(
                " size={} hash={:x} sparse={}",
                m.size(),
                h.finish(),
                m.blocks() * 512 < m.size()
            );
            if m.nlink() > 1 {
                inodes
                    .entry(m.ino())
                    .or_default()
                    .push(rel.as_os_str().as_bytes().to_vec());
            }
        } else if ft.is_fifo() {
            d += " fifo";
        }
        out.insert(rel.as_os_str().as_bytes().to_vec(), d);
    }
    for (_, mut names) in inodes {
        names.sort();
        for n in &names {
            let e = out.get_mut(n).unwrap();
            *e += &format!(" links={:?}", names);
        }
    }
    out
}

/// Content objects in the store (documented layout: objects/XX/HASH).
fn objects(store: &Path) -> usize {
    std::fs::read_dir(store.join("objects"))
        .unwrap()
        .map(|d| std::fs::read_dir(d.unwrap().path()).unwrap().count())
        .sum()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|c| format!("{c:02x}")).collect()
}

/// The content the current generation holds for `rel`, found through the
/// manifest (documented format: kind, hex path, …, 15th field the content
/// identity) independently of the code under test.
fn stored(store: &Path, rel: &str) -> Vec<u8> {
    let m = std::fs::read_to_string(store.join("current/manifest")).unwrap();
    let want = hex(rel.as_bytes());
    let line = m
        .lines()
        .find(|l| l.starts_with("f ") && l.split(' ').nth(1) == Some(want.as_str()))
        .unwrap_or_else(|| panic!("{rel} not in the manifest"));
    let h = line.split(' ').nth(14).unwrap();
    std::fs::read(store.join("objects").join(&h[..2]).join(h)).unwrap()
}

/// A tree with everything persist must keep.
fn populate(dir: &Path) {
    let w = |rel: &str, data: &[u8]| std::fs::write(dir.join(rel), data).unwrap();
    std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
    w("a.txt", b"alpha\n");
    w(
        "sub/b.bin",
        &(0..70_000u32).map(|i| (i * 7) as u8).collect::<Vec<_>>(),
    );
    w("sub/deeper/c", b"c");
    std::fs::hard_link(dir.join("a.txt"), dir.join("sub/a-link")).unwrap();
    std::os::unix::fs::symlink("../../etc/passwd", dir.join("sub/escape")).unwrap();
    std::os::unix::fs::symlink("a.txt", dir.join("rel-link")).unwrap();
    let odd = dir.join(std::ffi::OsStr::from_bytes(b"odd \xff\n name"));
    std::fs::write(&odd, b"odd").unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        dir.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o640),
        0,
    )
    .unwrap();
    let f = std::fs::File::create(dir.join("sparse")).unwrap();
    f.set_len(8 << 20).unwrap();
    rustix::io::pwrite(&f, b"middle", 4 << 20).unwrap();
    std::fs::set_permissions(dir.join("a.txt"), std::fs::Permissions::from_mode(0o4750)).unwrap();
    std::os::unix::fs::chown(dir.join("sub/b.bin"), Some(1234), Some(5678)).unwrap();
    std::os::unix::fs::lchown(dir.join("rel-link"), Some(42), Some(43)).unwrap();
    rustix::fs::setxattr(
        dir.join("sub/b.bin"),
        "user.color",
        b"blue\x00\xff",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    rustix::fs::setxattr(
        dir.join("sub"),
        "user.d",
        b"1",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    std::fs::set_permissions(
        dir.join("sub/deeper"),
        std::fs::Permissions::from_mode(0o711),
    )
    .unwrap();
}

#[test]
fn enable_sync_restore_keep_everything() {
    require_root!();
    let w = World::new();
    populate(&w.dir);
    let before = tree(&w.dir, true);
    w.enable();
    assert_eq!(fstype(&w.dir), "tmpfs");
    assert_eq!(
        tree(&w.dir, true),
        before,
        "the tmpfs shows exactly DIR's tree"
    );
    // Change some, sync, lose the tmpfs, restore.
    std::fs::write(w.dir.join("sub/deeper/c"), b"changed").unwrap();
    std::fs::remove_file(w.dir.join("rel-link")).unwrap();
    std::fs::write(w.dir.join("new"), b"new").unwrap();
    let o = w.run(&["persist", "sync", s(&w.dir), "--json"]);
    assert!(o.status.success(), "{}", show(&o));
    let j = json(&o);
    assert_eq!(j["copied_files"], 2, "{j}");
    assert!(j["shared_files"].as_u64().unwrap() >= 4, "{j}");
    let synced = tree(&w.dir, true);
    assert!(
        Command::new("umount")
            .arg("-l")
            .arg(&w.dir)
            .status()
            .unwrap()
            .success()
    );
    // The stale tree on disk is never synced over the store.
    let o = w.sync();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("persist restore"),
        "{}",
        show(&o)
    );
    w.ok(&["persist", "restore", s(&w.dir)]);
    assert_eq!(fstype(&w.dir), "tmpfs");
    assert_eq!(tree(&w.dir, true), synced);
    // Unchanged files were shared with the previous generation, not copied:
    // 5 distinct contents at first (a hard link is one), then 2 new ones.
    assert_eq!(objects(&w.store), 7);
    // Old generations and the content only they held go (--keep 2): the
    // pruned content is freed in the background, within moments.
    for round in 0..3 {
        std::fs::write(w.dir.join("sub/deeper/c"), format!("round {round}")).unwrap();
        let o = w.sync();
        assert!(o.status.success(), "{}", show(&o));
    }
    let gens = std::fs::read_dir(&w.store)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("gen-")
        })
        .count();
    assert_eq!(gens, 2);
    let t = Instant::now();
    while std::fs::read_dir(w.store.join("trash")).unwrap().count() > 0 {
        assert!(t.elapsed() < Duration::from_secs(10), "trash never emptied");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(objects(&w.store), 7, "one object for c per kept generation");
    let synced = tree(&w.dir, true);
    // Disable puts the final tree back on disk and unmounts.
    w.ok(&["persist", "disable", s(&w.dir), "--yes"]);
    assert!(!is_mount(&w.dir));
    assert_eq!(tree(&w.dir, true), synced);
}

#[test]
fn store_on_tmpfs_or_on_dirs_tmpfs_is_refused() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let ram = TestMount::tmpfs("size=16M");
    let o = w.run(&[
        "persist",
        "enable",
        s(&w.dir),
        "--store",
        s(&ram.path.join("st")),
        "--persist",
        "none",
        "--yes",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("RAM-backed"),
        "{}",
        show(&o)
    );
    assert!(!is_mount(&w.dir), "nothing mounted after a refusal");
    w.enable();
    std::fs::create_dir(w.dir.join("st")).unwrap();
    let inside = w.dir.join("st");
    let o = w.run(&["persist", "sync", s(&w.dir), "--store", s(&inside)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
}

#[test]
fn restore_refuses_to_clobber_newer_data_unless_forced() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("keep"), b"v1").unwrap();
    w.enable();
    std::fs::write(w.dir.join("keep"), b"v2, newer than the store").unwrap();
    std::fs::write(w.dir.join("fresh"), b"only here").unwrap();
    let o = w.run(&["persist", "restore", s(&w.dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("changed: keep") && err.contains("only in DIR: fresh"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(w.dir.join("keep")).unwrap(),
        b"v2, newer than the store"
    );
    // Status says what a power loss would cost now, exactly.
    let st = json(&w.run(&["persist", "status", s(&w.dir), "--json"]));
    assert_eq!(st["dirs"][0]["changed_files"], 2, "{st}");
    assert_eq!(st["dirs"][0]["changed_bytes"], 24 + 9, "{st}");
    w.ok(&["persist", "restore", s(&w.dir), "--force"]);
    assert_eq!(std::fs::read(w.dir.join("keep")).unwrap(), b"v1");
    assert!(!w.dir.join("fresh").exists());
    let o = w.ok(&["persist", "restore", s(&w.dir)]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("nothing to restore"),
        "{}",
        show(&o)
    );
}

#[test]
fn status_is_a_problem_when_syncs_fall_behind_and_writes_prom() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    w.enable();
    let prom = w.root.path().join("persist.prom");
    let o = w.run(&["persist", "status", "--json", "--prom", s(&prom)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let j = json(&o);
    assert!(j["dirs"][0]["last_sync_unix_s"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(j["dirs"][0]["generations_kept"], 1);
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(
        text.contains("tmpfsctl_persist_last_sync_timestamp_seconds{dir=\""),
        "{text}"
    );
    std::thread::sleep(Duration::from_millis(3100));
    let o = w.run(&["persist", "status", s(&w.dir), "--interval", "1s"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("STALE"),
        "{}",
        show(&o)
    );
}

#[test]
fn systemd_units_verify_and_disable_removes_them() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let units = w.root.path().join("units");
    w.ok(&[
        "persist",
        "enable",
        s(&w.dir),
        "--store",
        s(&w.store),
        "--persist",
        "systemd",
        "--unit-dir",
        s(&units),
        "--interval",
        "5min",
        "--yes",
    ]);
    let mut names: Vec<PathBuf> = std::fs::read_dir(&units)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    let timer = names.iter().find(|p| s(p).ends_with(".timer")).unwrap();
    assert!(
        std::fs::read_to_string(timer)
            .unwrap()
            .contains("OnUnitActiveSec=300s")
    );
    let main = names.iter().find(|p| !s(p).contains("-sync-")).unwrap();
    let text = std::fs::read_to_string(main).unwrap();
    assert!(
        text.contains("ExecStop=") && text.contains("Before=local-fs.target"),
        "{text}"
    );
    assert!(
        units
            .join("local-fs.target.wants")
            .read_dir()
            .unwrap()
            .count()
            == 1
    );
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok()
    {
        let o = Command::new("systemd-analyze")
            .arg("verify")
            .args(&names)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success() && !err.contains("tmpfsctl-persist"),
            "{err}"
        );
    } else {
        eprintln!("SKIP systemd-analyze verify: not installed");
    }
    w.ok(&["persist", "disable", s(&w.dir), "--yes"]);
    assert_eq!(
        std::fs::read_dir(&units)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().is_file())
            .count(),
        0
    );
    assert!(!is_mount(&w.dir));
}

/// A loop-mounted ext4 image of `mib` MiB, or None (with the reason printed).
struct LoopFs {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl LoopFs {
    fn new(mib: u64) -> Option<LoopFs> {
        let d = tempfile::Builder::new()
            .prefix("tmpfsctl-it-loop-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let img = d.path().join("img");
        let path = d.path().join("mnt");
        std::fs::create_dir(&path).unwrap();
        std::fs::File::create(&img)
            .unwrap()
            .set_len(mib << 20)
            .unwrap();
        let mk = Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(&img)
            .output();
        if !mk.is_ok_and(|o| o.status.success()) {
            eprintln!("SKIP: mkfs.ext4 not available or failed");
            return None;
        }
        let m = Command::new("mount")
            .args(["-o", "loop"])
            .arg(&img)
            .arg(&path)
            .status();
        if !m.is_ok_and(|s| s.success()) {
            eprintln!("SKIP: loop devices not available");
            return None;
        }
        Some(LoopFs { _dir: d, path })
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

#[test]
fn enospc_in_the_store_switches_nothing_and_leaves_no_partial() {
    require_root!();
    let Some(lfs) = LoopFs::new(16) else { return };
    let mut w = World::new();
    w.store = lfs.path.join("store");
    std::fs::write(w.dir.join("small"), b"v1").unwrap();
    w.enable();
    let before = tree(&w.dir, true);
    let used = |p: &Path| rustix::fs::statvfs(p).map(|s| s.f_bfree).unwrap();
    let free_before = used(&lfs.path);
    // 24 MiB of incompressible data into a 16 MiB store.
    let big: Vec<u8> = (0..24u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(w.dir.join("big"), &big).unwrap();
    std::fs::write(w.dir.join("small"), b"v2").unwrap();
    let o = w.sync();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("nothing switched") && err.contains("gen-000001"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_link(w.store.join("current")).unwrap(),
        Path::new("gen-000001")
    );
    let leftovers: Vec<_> = std::fs::read_dir(&w.store)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".partial") || n == "gen-000002")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(
        used(&lfs.path) + 64 >= free_before,
        "the partial generation's blocks are freed"
    );
    // The previous generation is intact: a power loss now restores it.
    assert!(
        Command::new("umount")
            .arg("-l")
            .arg(&w.dir)
            .status()
            .unwrap()
            .success()
    );
    w.ok(&["persist", "restore", s(&w.dir)]);
    assert_eq!(tree(&w.dir, true), before);
}

#[test]
fn concurrent_writer_each_file_is_old_or_new_never_torn() {
    require_root!();
    let w = World::new();
    const N: usize = 8;
    const LEN: usize = 1 << 20;
    for i in 0..N {
        std::fs::write(w.dir.join(format!("f{i}")), vec![b'a'; LEN]).unwrap();
    }
    w.enable();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dir = w.dir.clone();
    let st = stop.clone();
    // In-place rewrites (no truncate, one pwrite of the whole file): every
    // version is one byte repeated, so a torn copy shows two bytes.
    let writer = std::thread::spawn(move || {
        let mut v = 0u8;
        let mut n = 0u64;
        while !st.load(std::sync::atomic::Ordering::Relaxed) {
            v = v.wrapping_add(1);
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join(format!("f{}", v as usize % N)))
                .unwrap();
            rustix::io::pwrite(&f, &vec![b'a' + v % 26; LEN], 0).unwrap();
            n += 1;
        }
        n
    });
    let t0 = Instant::now();
    let mut syncs = 0;
    while t0.elapsed() < Duration::from_secs(8) {
        let o = w.sync();
        assert!(o.status.success(), "{}", show(&o));
        syncs += 1;
        let cur = std::fs::read_link(w.store.join("current")).unwrap();
        for i in 0..N {
            let data = stored(&w.store, &format!("f{i}"));
            assert_eq!(data.len(), LEN);
            if !data.iter().all(|&b| b == data[0]) {
                let mut runs = vec![(0usize, data[0])];
                for (k, &b) in data.iter().enumerate() {
                    if b != runs.last().unwrap().1 {
                        runs.push((k, b));
                    }
                }
                let m = std::fs::read_to_string(w.store.join(&cur).join("manifest")).unwrap();
                panic!(
                    "f{i} torn in {cur:?}: runs {:?}\n{m}",
                    &runs[..runs.len().min(10)]
                );
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.join().unwrap();
    eprintln!("concurrent writer: {writes} rewrites during {syncs} syncs, no torn file");
}

/// Rewrite about a third of the files (content and size) and add or remove
/// one, so two consecutive trees differ in many places at once.
fn mutate(dir: &Path, round: u64, rng: &mut u64) {
    let mut next = || {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng
    };
    for i in 0..24u64 {
        if next() % 3 == 0 {
            let len = (next() % 200_000) as usize;
            let byte = (round % 250) as u8 + 1;
            std::fs::write(dir.join(format!("d{}/f{i}", i % 4)), vec![byte; len]).unwrap();
        }
    }
    let extra = dir.join(format!("d0/extra{}", round % 3));
    if extra.exists() {
        std::fs::remove_file(&extra).unwrap();
    } else {
        std::fs::write(&extra, round.to_le_bytes()).unwrap();
    }
}

#[test]
fn crash_loop_kill9_then_power_loss_restores_old_or_new_tree() {
    require_root!();
    let w = World::new();
    for d in 0..4 {
        std::fs::create_dir(w.dir.join(format!("d{d}"))).unwrap();
    }
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    mutate(&w.dir, 0, &mut rng);
    w.enable();
    // How long a whole sync of one round's change takes here (process start
    // included), to spread the kills over it and a little past its end.
    mutate(&w.dir, 1000, &mut rng);
    let t = Instant::now();
    assert!(w.sync().status.success());
    let full = t.elapsed();
    let mut old = tree(&w.dir, false);
    let budget = Duration::from_secs(40);
    let t0 = Instant::now();
    let (mut iters, mut got_old, mut got_new) = (0u64, 0u64, 0u64);
    // Kills spread over 0..window; widened when the machine is slower than
    // the calibration said and no kill has missed a sync for a while.
    let mut window = full * 2;
    let mut since_new = 0;
    while t0.elapsed() < budget && iters < 200 {
        iters += 1;
        mutate(&w.dir, iters, &mut rng);
        let new = tree(&w.dir, false);
        let mut child = bin()
            .env("TMPFSCTL_PERSIST_REGISTRY", &w.registry)
            .args(["persist", "sync", s(&w.dir)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let wait = rng % (window.as_micros() as u64 + 1);
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        std::thread::sleep(Duration::from_micros(wait));
        let _ = child.kill();
        let _ = child.wait();
        // Power loss: the tmpfs and everything in it are gone.
        assert!(
            Command::new("umount")
                .arg("-l")
                .arg(&w.dir)
                .status()
                .unwrap()
                .success()
        );
        let o = w.run(&["persist", "restore", s(&w.dir)]);
        assert!(o.status.success(), "iteration {iters}: {}", show(&o));
        let got = tree(&w.dir, false);
        if got == new {
            got_new += 1;
            since_new = 0;
            old = new;
        } else if got == old {
            got_old += 1;
            since_new += 1;
            if since_new >= 8 {
                window = window * 3 / 2;
                since_new = 0;
            }
        } else {
            let diff: Vec<_> = got
                .iter()
                .filter(|(k, v)| old.get(*k) != Some(v) && new.get(*k) != Some(v))
                .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                .collect();
            panic!("iteration {iters}: restored tree is neither old nor new: {diff:?}");
        }
    }
    eprintln!(
        "crash loop: {iters} kill -9 + power-loss iterations in {:.1} s (full sync {:.1} ms, kills over 0..{:.1} ms): {got_old} restored the old tree, {got_new} the new one, 0 mixed",
        t0.elapsed().as_secs_f64(),
        full.as_secs_f64() * 1e3,
        window.as_secs_f64() * 1e3
    );
    assert!(iters >= 10);
}
