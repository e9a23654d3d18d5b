//! Integration tests for `persist`: real tmpfs mounts, a store on disk (the
//! temp root is on the root filesystem), a loop-mounted ext4 image for
//! ENOSPC. Every run uses its own registry (TMPFSCTL_PERSIST_REGISTRY) and
//! --boot none or a private --unit-dir: never the machine's units.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::{TestMount, bin, findmnt_fstype, json, s, xattrs};
use crate::require_root;

/// Files that never stop changing during syncs.
mod busy;
/// The crash loop and the concurrent writer (the long ones).
mod crash;
/// A damaged store: found, repaired, survived.
mod damage;
/// nosuid/nodev, mounts inside DIR, symlink swaps during restore.
mod guards;
/// The tmpfs lost, disable with a writer, vanishing entries, a killed prune,
/// enable --size.
mod lifecycle;
/// SIGTERM and SIGINT during enable and disable.
mod stop;
/// Stores another user could change, and persist's mount flags.
mod trust;
/// Every subcommand's JSON carries schema_version.
mod versioned;
/// `--on zram[:ALG]`: a real zram device on this kernel.
mod zram;

fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Assert that `stream` (`o`'s stdout or stderr) contains `needle`,
/// showing all of `o` when it does not.
fn says(stream: &[u8], needle: &str, o: &Output) {
    assert!(
        String::from_utf8_lossy(stream).contains(needle),
        "expected {needle:?}: {}",
        show(o)
    );
}

/// A test world: a temp root on disk with DIR, STORE and a registry.
struct World {
    root: tempfile::TempDir,
    dir: PathBuf,
    store: PathBuf,
    registry: PathBuf,
    /// The binary installed where units may name it, made on first use.
    installed: std::cell::OnceCell<Installed>,
}

/// tmpfsctl copied the way an administrator installs it (`install -m755`,
/// root-owned, in a directory only root can change, with only root-owned,
/// non-writable directories above it), so that the units enable writes
/// may run it: the build tree's binary is refused. A private directory
/// under /var/lib, not /usr/local/bin, so the machine's PATH is untouched.
struct Installed {
    _dir: tempfile::TempDir,
    bin: PathBuf,
}

fn install_bin() -> Installed {
    let dir = tempfile::Builder::new()
        .prefix("tmpfsctl-it-bin-")
        .tempdir_in("/var/lib")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("tmpfsctl");
    let st = Command::new("install")
        .args([
            "-m755",
            "-o",
            "root",
            "-g",
            "root",
            env!("CARGO_BIN_EXE_tmpfsctl"),
        ])
        .arg(&bin)
        .status()
        .unwrap();
    assert!(st.success(), "install -m755 tmpfsctl {}", bin.display());
    Installed { _dir: dir, bin }
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
            installed: std::cell::OnceCell::new(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        bin()
            .env("TMPFSCTL_PERSIST_REGISTRY", &self.registry)
            .args(args)
            .output()
            .unwrap()
    }

    /// The installed copy (see [`Installed`]).
    fn installed(&self) -> &Installed {
        self.installed.get_or_init(install_bin)
    }

    /// [`World::run`] with the installed copy: what writing units needs.
    fn run_installed(&self, args: &[&str]) -> Output {
        Command::new(&self.installed().bin)
            .env("TMPFSCTL_PERSIST_REGISTRY", &self.registry)
            .args(args)
            .output()
            .unwrap()
    }

    /// `persist enable DIR --store STORE --yes ARGS` by the installed copy,
    /// which must succeed: for enables that write units.
    fn enable_units(&self, args: &[&str]) -> Output {
        let mut a = vec![
            "persist",
            "enable",
            s(&self.dir),
            "--store",
            s(&self.store),
            "--yes",
        ];
        a.extend(args);
        self.run_installed(&a)
    }

    fn ok(&self, args: &[&str]) -> Output {
        let o = self.run(args);
        assert!(o.status.success(), "{args:?}: {}", show(&o));
        o
    }

    fn enable(&self) {
        self.enable_ok(&["--size", "64M", "--boot", "none"]);
    }

    /// `persist enable DIR --store STORE ARGS --yes`: what every enable in
    /// these tests runs, with what each one varies.
    fn enable_at(&self, dir: &Path, store: &Path, args: &[&str]) -> Output {
        let mut a = vec!["persist", "enable", s(dir), "--store", s(store), "--yes"];
        a.extend(args);
        self.run(&a)
    }

    /// [`World::enable_at`] with `--boot fstab`: the fstab and the unit
    /// directory are `fstab` and `units` in the world's root.
    fn enable_fstab(&self, size: &str, extra: &[&str]) -> Output {
        let fstab = self.root.path().join("fstab");
        let units = self.root.path().join("units");
        let mut a = vec!["--size", size, "--boot", "fstab", "--fstab", s(&fstab)];
        a.extend(["--unit-dir", s(&units)]);
        a.extend(extra);
        self.enable_units(&a)
    }

    /// [`World::enable_at`] for this world's DIR and STORE, which must succeed.
    fn enable_ok(&self, args: &[&str]) -> Output {
        let o = self.enable_at(&self.dir, &self.store, args);
        assert!(o.status.success(), "enable {args:?}: {}", show(&o));
        o
    }

    /// `umount ARGS DIR`, which must succeed: the tmpfs gone as after a
    /// reboot (`-l` where something may still hold it).
    fn unmount(&self, args: &[&str]) {
        let st = Command::new("umount").args(args).arg(&self.dir).status();
        assert!(st.is_ok_and(|s| s.success()), "umount {args:?}");
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

/// How many lines [`logger`] writes.
const LOGGER_LINES: u64 = 1500;

/// A logger: `path` held open for appending, a numbered line every
/// millisecond, [`LOGGER_LINES`] in all.
fn logger(path: &Path) -> std::thread::JoinHandle<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    std::thread::spawn(move || {
        for n in 0..LOGGER_LINES {
            writeln!(f, "{n:08}").unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

/// The numbers of the [`logger`] lines `path` holds now.
fn logged(path: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(|l| l.parse().unwrap()).collect()
}

fn is_mount(p: &Path) -> bool {
    Command::new("mountpoint")
        .arg("-q")
        .arg(p)
        .status()
        .is_ok_and(|s| s.success())
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
    assert_eq!(findmnt_fstype(&w.dir).unwrap_or_default(), "tmpfs");
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
    w.unmount(&["-l"]);
    // The stale tree on disk is never synced over the store.
    let o = w.sync();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    says(&o.stderr, "persist restore", &o);
    w.ok(&["persist", "restore", s(&w.dir)]);
    assert_eq!(findmnt_fstype(&w.dir).unwrap_or_default(), "tmpfs");
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
    let o = w.enable_at(&w.dir, &ram.path.join("st"), &["--boot", "none"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    says(&o.stderr, "RAM-backed", &o);
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
    says(&o.stdout, "nothing to restore", &o);
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
    says(&o.stdout, "STALE", &o);
}

#[test]
fn systemd_units_verify_and_disable_removes_them() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let units = w.root.path().join("units");
    let o = w.enable_units(&[
        "--boot",
        "systemd",
        "--unit-dir",
        s(&units),
        "--interval",
        "5min",
    ]);
    assert!(o.status.success(), "{}", show(&o));
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
    // The installed binary runs as root, not the build tree's.
    assert!(
        text.contains(&format!(
            "ExecStart=\"{}\" persist restore",
            w.installed().bin.display()
        )),
        "{text}"
    );
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
        crate::skip_part!("systemd-analyze verify: not installed");
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
            crate::skip_part!("mkfs.ext4 not available or failed");
            return None;
        }
        let m = Command::new("mount")
            .args(["-o", "loop"])
            .arg(&img)
            .arg(&path)
            .status();
        if !m.is_ok_and(|s| s.success()) {
            crate::skip_part!("loop devices not available");
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
    w.unmount(&["-l"]);
    w.ok(&["persist", "restore", s(&w.dir)]);
    assert_eq!(tree(&w.dir, true), before);
}

#[test]
fn fstab_mode_adds_a_verified_line_and_disable_removes_only_it() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let fstab = w.root.path().join("fstab");
    std::fs::write(&fstab, "# keep me\nUUID=1 / ext4 defaults 0 1\n").unwrap();
    let o = w.enable_fstab("32M", &[]);
    assert!(o.status.success(), "{}", show(&o));
    let text = std::fs::read_to_string(&fstab).unwrap();
    assert!(
        text.starts_with("# keep me\nUUID=1 / ext4 defaults 0 1\ntmpfs "),
        "{text}"
    );
    assert!(text.contains("hot\\040dir tmpfs size=32M"), "{text}");
    // Our line alone passes util-linux's own check (the fixture's UUID=1
    // line would not: no such device).
    let ours = w.root.path().join("ours.fstab");
    std::fs::write(&ours, text.lines().last().unwrap().to_string() + "\n").unwrap();
    let v = Command::new("findmnt")
        .args(["--verify", "--tab-file"])
        .arg(&ours)
        .output()
        .unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
    // A second enable is refused and changes nothing.
    let o = w.run(&["persist", "enable", s(&w.dir), "--boot", "none", "--yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    w.ok(&["persist", "disable", s(&w.dir), "--yes"]);
    assert_eq!(
        std::fs::read_to_string(&fstab).unwrap(),
        "# keep me\nUUID=1 / ext4 defaults 0 1\n"
    );
    assert!(!is_mount(&w.dir));
}

/// persist mounts over DIR as root, so it checks DIR the way apply does: a
/// symlinked DIR (which could be re-pointed while it works) and the system's
/// own directories are refused before anything is written.
#[test]
fn enable_refuses_a_symlinked_dir_and_system_directories() {
    crate::require_root!();
    let w = World::new();
    let link = w.root.path().join("link");
    std::os::unix::fs::symlink(&w.dir, &link).unwrap();
    let o = w.enable_at(&link, &w.store, &["--boot", "none"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("symbolic link") && e.contains("hot dir"), "{e}");
    assert!(!is_mount(&w.dir) && !w.store.exists(), "nothing done");
    for sys in ["/etc", "/var"] {
        let o = w.enable_at(Path::new(sys), &w.store, &["--boot", "none"]);
        assert_eq!(o.status.code(), Some(2), "{sys}: {}", show(&o));
        assert!(!is_mount(Path::new(sys)));
    }
    assert!(!w.store.exists(), "nothing written");
}
