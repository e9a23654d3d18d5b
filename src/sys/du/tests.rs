use super::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;

/// Forces helpers to start at once, so even small trees are shared
/// between threads.
fn parallel() -> Config {
    Config {
        threads: 2,
        max_open_depth: 128,
        spawn_after_entries: 0,
    }
}

fn serial() -> Config {
    Config {
        threads: 1,
        ..parallel()
    }
}

/// (bytes, inodes) as `du -s -x` reports them, run as `uid` when given.
/// du exits 1 on unreadable directories but still prints its total.
fn gnu_du(path: &Path, as_uid: Option<u32>) -> (u64, u64) {
    let run = |opt: &str| {
        let mut c = match as_uid {
            Some(uid) => {
                let mut c = Command::new("setpriv");
                c.args([
                    format!("--reuid={uid}"),
                    format!("--regid={uid}"),
                    "--clear-groups".into(),
                    "du".into(),
                ]);
                c
            }
            None => Command::new("du"),
        };
        let out = c.args(["-s", "-x", opt]).arg(path).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let first = text.split_whitespace().next();
        first
            .unwrap_or_else(|| panic!("du {opt} {}: no output", path.display()))
            .parse::<u64>()
            .unwrap()
    };
    (run("-B1"), run("--inodes"))
}

fn assert_matches_du(path: &Path, cfg: &Config) -> Walk {
    let w = walk(path, cfg).unwrap();
    let (bytes, inodes) = gnu_du(path, None);
    assert_eq!(
        (w.usage.bytes, w.usage.inodes),
        (bytes, inodes),
        "{cfg:?} on {}",
        path.display()
    );
    w
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[test]
fn counts_hard_links_once_and_skips_symlink_targets() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::create_dir_all(d.join("a/b/c")).unwrap();
    std::fs::write(d.join("a/f1"), vec![7u8; 100_000]).unwrap();
    std::fs::hard_link(d.join("a/f1"), d.join("a/b/f1-link")).unwrap();
    std::os::unix::fs::symlink("/usr", d.join("a/usr-link")).unwrap();
    let u = usage(d).unwrap();
    // root, a, b, c, f1 (once), symlink
    assert_eq!(u.inodes, 6);
    let f1 = std::fs::metadata(d.join("a/f1")).unwrap();
    assert!(u.bytes >= f1.blocks() * 512);
    assert!(u.bytes < 2 * f1.blocks() * 512 + 64 * 4096, "{u:?}");
    assert_eq!(u.unreadable_dirs, 0);
    assert!(u.oldest_mtime.is_some());
}

#[test]
fn missing_root_is_an_error_naming_it() {
    let e = usage(Path::new("/nonexistent/xyz")).unwrap_err();
    assert!(format!("{e:#}").contains("/nonexistent/xyz"));
}

/// 60 directories of 40 files (sizes 0..20 KiB, some sparse), hard links
/// whose names sit in directories far apart (so in jobs that different
/// threads take), a FIFO, and symlink loops.
fn generated_tree(d: &Path) {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..60 {
        let dir = d.join(format!("g{}/d{i}", i % 6));
        std::fs::create_dir_all(&dir).unwrap();
        for j in 0..40 {
            let len = (rnd() % 20_000) as usize;
            std::fs::write(dir.join(format!("f{j}")), vec![1u8; len]).unwrap();
        }
        let sparse = std::fs::File::create(dir.join("sparse")).unwrap();
        sparse.set_len(1 << 20).unwrap();
    }
    for k in 0..30 {
        let (a, b) = (k * 2 % 60, (k * 2 + 31) % 60);
        let src = d.join(format!("g{}/d{a}/f{k}", a % 6));
        for n in 0..3 {
            let bb = (b + n * 7) % 60;
            let dst = d.join(format!("g{}/d{bb}/link{k}-{n}", bb % 6));
            std::fs::hard_link(&src, dst).unwrap();
        }
    }
    // A hard link right next to its twin at the top, too.
    std::fs::write(d.join("top"), vec![2u8; 50_000]).unwrap();
    std::fs::hard_link(d.join("top"), d.join("top2")).unwrap();
    crate::test_support::mkfifo(&d.join("fifo"), 0o644);
    let s = |target: &str, name: &str| std::os::unix::fs::symlink(target, d.join(name)).unwrap();
    s(".", "self");
    s("..", "up");
    s("loop", "loop");
    s("ping", "pong");
    s("pong", "ping");
    s("g1", "g0/d0/to-sibling");
    std::os::unix::fs::symlink("../../..", d.join("g0/d0/back-to-top")).unwrap();
}

#[test]
fn matches_du_with_hard_links_across_threads_and_symlink_loops() {
    let t = tempfile::tempdir().unwrap();
    generated_tree(t.path());
    let s = assert_matches_du(t.path(), &serial());
    assert_eq!(s.helpers, 0);
    // Races between the threads over the shared link set would show as a
    // varying count: repeat.
    for _ in 0..20 {
        let p = assert_matches_du(t.path(), &parallel());
        assert_eq!(p.helpers, 1);
        assert_eq!(p.usage, s.usage);
    }
    let d = assert_matches_du(t.path(), &Config::for_this_process());
    assert_eq!(d.usage, s.usage);
    // 1 + 6 + 60 dirs, 60 * 41 files, top/top2 once, fifo, 7 symlinks;
    // the 90 extra names are links to counted files.
    assert_eq!(s.usage.inodes, 1 + 6 + 60 + 60 * 41 + 1 + 1 + 7);
    assert_eq!(s.usage.unreadable_dirs, 0);
}

#[test]
fn small_tree_starts_no_thread_and_big_one_does() {
    let t = tempfile::tempdir().unwrap();
    for i in 0..10 {
        std::fs::create_dir(t.path().join(format!("d{i}"))).unwrap();
        std::fs::write(t.path().join(format!("d{i}/f")), b"x").unwrap();
    }
    let cfg = Config {
        spawn_after_entries: 256,
        ..parallel()
    };
    assert_eq!(assert_matches_du(t.path(), &cfg).helpers, 0);
    generated_tree(t.path());
    assert_eq!(assert_matches_du(t.path(), &cfg).helpers, 1);
}

#[test]
fn a_file_root_is_its_own_usage() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("f");
    std::fs::write(&f, vec![3u8; 70_000]).unwrap();
    let w = assert_matches_du(&f, &parallel());
    assert_eq!(w.usage.inodes, 1);
}

/// 300 levels of 60-byte names: the path (18 KB) is far past PATH_MAX, so
/// it can only be walked relative to directories kept open.
#[test]
fn deep_tree_matches_du_with_few_open_directories() {
    let t = tempfile::tempdir().unwrap();
    let name = "n".repeat(60);
    let mut fd = rustix::fs::openat(CWD, t.path(), DIR_FLAGS, Mode::empty()).unwrap();
    for level in 0..300 {
        // Leaf siblings at each level: whichever of them getdents lists
        // before the deep one are still queued while it is walked, so
        // their parent (this level) must stay reachable.
        // Names differ per level so the hash order differs too.
        for k in 0..3 {
            let leaf = format!("leaf{level}-{k}");
            rustix::fs::mkdirat(&fd, leaf.as_str(), Mode::from_raw_mode(0o755)).unwrap();
        }
        let leaf = format!("leaf{level}-0");
        let leaf = rustix::fs::openat(&fd, leaf.as_str(), DIR_FLAGS, Mode::empty()).unwrap();
        let file = rustix::fs::openat(
            &leaf,
            "f",
            OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        rustix::io::write(&file, &vec![5u8; level * 10]).unwrap();
        rustix::fs::mkdirat(&fd, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
        fd = rustix::fs::openat(&fd, name.as_str(), DIR_FLAGS, Mode::empty()).unwrap();
    }
    drop(fd);
    let def = assert_matches_du(t.path(), &Config::for_this_process());
    assert_eq!(def.usage.unreadable_dirs, 0);
    assert_eq!(def.usage.inodes, 1 + 300 * 5);
    // Without the limit, parents pile up: the limit below is what bounds
    // them. (One thread: a helper would take the leaves early.)
    let unbounded = Config {
        max_open_depth: 1000,
        ..serial()
    };
    assert!(walk(t.path(), &unbounded).unwrap().peak_open_dirs > 100);
    for threads in [1, 2] {
        let cfg = Config {
            threads,
            max_open_depth: 4,
            spawn_after_entries: 0,
        };
        let w = assert_matches_du(t.path(), &cfg);
        assert_eq!(w.usage, def.usage);
        // 4 levels per thread, plus one anchor per 2048 bytes of path
        // below them (61 bytes a level: 9 anchors over 300 levels).
        assert!(w.peak_open_dirs <= threads * 4 + 10, "{}", w.peak_open_dirs);
    }
}

struct Mounted(PathBuf);
impl Drop for Mounted {
    fn drop(&mut self) {
        use crate::sys::unmount::{At, How, unmount};
        let _ = unmount(At::Dir(&self.0), How::Detach);
    }
}

#[test]
fn nested_tmpfs_is_not_crossed() {
    if !is_root() {
        crate::skip!("mounting a tmpfs needs root");
    }
    let t = tempfile::tempdir().unwrap();
    generated_tree(t.path());
    let before = walk(t.path(), &serial()).unwrap().usage;
    let mnt = t.path().join("g2/d2/mnt");
    std::fs::create_dir(&mnt).unwrap();
    rustix::mount::mount(
        "tmpfsctl-du-test",
        &mnt,
        "tmpfs",
        rustix::mount::MountFlags::empty(),
        c"size=4M",
    )
    .unwrap();
    let _m = Mounted(mnt.clone());
    std::fs::create_dir(mnt.join("inside")).unwrap();
    std::fs::write(mnt.join("inside/big"), vec![9u8; 1 << 20]).unwrap();
    let p = assert_matches_du(t.path(), &parallel());
    // The mount point itself is not counted either (du -x skips it).
    assert_eq!(p.usage.inodes, before.inodes);
    assert_eq!(p.usage.bytes, before.bytes);
    assert_matches_du(t.path(), &serial());
}

#[test]
fn unreadable_directories_as_non_root_match_du() {
    if !is_root() {
        crate::skip!("making a directory unreadable to us needs another uid (root)");
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    generated_tree(d);
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    // For "other" (nobody): nothing, write+search but no read, and read
    // (names listed) but no search (entries cannot be stat'ed).
    for (dir, mode) in [("g1/d1", 0o700), ("g2/d2", 0o733), ("g3/d3", 0o744)] {
        std::fs::set_permissions(d.join(dir), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    const NOBODY: u32 = 65534;
    let (bytes, inodes) = gnu_du(d, Some(NOBODY));
    let root = d.to_path_buf();
    // Credentials are per thread in the kernel (rustix makes the raw
    // syscall, not glibc's process-wide setuid), and the walker's helper
    // threads inherit them from this one.
    let w = std::thread::spawn(move || {
        use rustix::process::{Gid, Uid};
        rustix::thread::set_thread_groups(&[]).unwrap();
        let gid = Gid::from_raw(NOBODY);
        rustix::thread::set_thread_res_gid(gid, gid, gid).unwrap();
        let uid = Uid::from_raw(NOBODY);
        rustix::thread::set_thread_res_uid(uid, uid, uid).unwrap();
        (
            walk(&root, &parallel()).unwrap(),
            walk(&root, &serial()).unwrap(),
        )
    })
    .join()
    .unwrap();
    for walked in [&w.0, &w.1] {
        assert_eq!((walked.usage.bytes, walked.usage.inodes), (bytes, inodes));
        assert_eq!(walked.usage.unreadable_dirs, 3, "{:?}", walked.usage);
    }
    // As root everything is readable: more is counted.
    let all = assert_matches_du(d, &parallel());
    assert!(all.usage.inodes > inodes);
    assert_eq!(all.usage.unreadable_dirs, 0);
}
