//! What persist's tmpfs and its tree removal guard against: the flags every
//! tmpfs tmpfsctl makes, a filesystem mounted inside DIR, and a name swapped
//! for a symlink while an entry's metadata is set.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use super::{World, s, show};
use crate::require_root;

/// The per-mount flags of the mount exactly at `p`, from mountinfo.
fn mount_flags(p: &Path) -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let want = s(p).replace(' ', "\\040");
    text.lines()
        .rfind(|l| l.split(' ').nth(4) == Some(want.as_str()))
        .map(|l| {
            let f = l.split(' ').nth(5).unwrap_or("");
            f.split(',').map(str::to_string).collect()
        })
        .unwrap_or_default()
}

#[test]
fn persist_tmpfs_is_nosuid_nodev() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    w.enable();
    let flags = mount_flags(&w.dir);
    assert!(
        flags.iter().any(|f| f == "nosuid") && flags.iter().any(|f| f == "nodev"),
        "persist's tmpfs on {} has flags {flags:?}",
        w.dir.display()
    );
    // Lost (a reboot), then restored: the new tmpfs has them too.
    w.unmount(&[]);
    w.ok(&["persist", "restore", s(&w.dir)]);
    let flags = mount_flags(&w.dir);
    assert!(
        flags.iter().any(|f| f == "nosuid") && flags.iter().any(|f| f == "nodev"),
        "restored tmpfs has flags {flags:?}"
    );
}

/// A directory from elsewhere bind-mounted on `at`, unmounted when dropped.
struct Bind(std::path::PathBuf);

impl Bind {
    fn new(from: &Path, at: &Path) -> Bind {
        let st = Command::new("mount")
            .arg("--bind")
            .arg(from)
            .arg(at)
            .status()
            .unwrap();
        assert!(st.success(), "mount --bind {from:?} {at:?}");
        Bind(at.to_path_buf())
    }
}

impl Drop for Bind {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A directory on another filesystem (a tmpfs of its own, outside DIR)
/// holding one file, to bind-mount inside DIR.
fn outside(w: &World) -> (std::path::PathBuf, Bind) {
    let o = w.root.path().join("outside");
    std::fs::create_dir(&o).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1M", "tmpfsctl-it-house"])
        .arg(&o)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::write(o.join("precious"), b"not DIR's").unwrap();
    (o.clone(), Bind(o))
}

#[test]
fn restore_force_refuses_a_mount_inside_dir_and_removes_nothing() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("keep"), b"v1").unwrap();
    w.enable();
    let (o, _fs) = outside(&w);
    std::fs::create_dir(w.dir.join("zz")).unwrap();
    let _b = Bind::new(&o, &w.dir.join("zz"));
    std::fs::write(w.dir.join("keep"), b"v2").unwrap();
    let out = w.run(&["persist", "restore", s(&w.dir), "--force"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(s(&w.dir.join("zz"))), "{err}");
    assert_eq!(std::fs::read(o.join("precious")).unwrap(), b"not DIR's");
    assert_eq!(std::fs::read(w.dir.join("keep")).unwrap(), b"v2");
}

#[test]
fn disable_refuses_a_mount_inside_dir_on_disk_and_removes_nothing() {
    require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("keep"), b"v1").unwrap();
    w.enable();
    // The tmpfs is lost (a reboot without the boot unit); DIR on disk has
    // a filesystem mounted inside and differs from the store.
    w.unmount(&[]);
    let (o, _fs) = outside(&w);
    std::fs::create_dir(w.dir.join("zz")).unwrap();
    let _b = Bind::new(&o, &w.dir.join("zz"));
    std::fs::write(w.dir.join("keep"), b"v2").unwrap();
    let out = w.run(&["persist", "disable", s(&w.dir), "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(s(&w.dir.join("zz"))), "{err}");
    assert_eq!(std::fs::read(o.join("precious")).unwrap(), b"not DIR's");
    assert_eq!(std::fs::read(w.dir.join("keep")).unwrap(), b"v2");
}

/// FIFOs owned by uid 65534 in a 1777 DIR, each with mode 04777 in the store.
const FIFOS: usize = 8;

fn fifos(dir: &Path) {
    for k in 0..FIFOS {
        let p = dir.join(format!("p{k:03}"));
        let c = std::ffi::CString::new(s(&p)).unwrap();
        // SAFETY: a valid C string; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o4777)).unwrap();
    }
}

/// As uid 65534, four processes: exchange a symlink to `target` with the
/// FIFOs (renameat2 RENAME_EXCHANGE), each over and over. In a sticky
/// directory the exchange only works on an entry uid 65534 owns: a FIFO
/// root has just made and given to it, its mode not set yet. Forked
/// children running raw system calls only (no allocation after the fork):
/// an interpreter's loop is too slow to hit a window of two calls.
fn racers(dir: &Path, target: &Path) -> Vec<libc::pid_t> {
    let c = |p: &Path| std::ffi::CString::new(s(p)).unwrap();
    let t = c(target);
    (0..4)
        .map(|i| {
            let pairs: Vec<_> = (0..FIFOS)
                .map(|k| {
                    (
                        c(&dir.join(format!(".l{i}-{k:03}"))),
                        c(&dir.join(format!("p{k:03}"))),
                    )
                })
                .collect();
            // SAFETY: the child makes only async-signal-safe system calls
            // on memory prepared before the fork, and never returns.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                unsafe {
                    // The child lives on without exec, so close-on-exec
                    // never closes what it inherited: a file another test
                    // thread had open for writing at the fork would stay
                    // open here, and that test's enable would refuse it as
                    // an open writer. It needs no descriptor at all.
                    libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
                    if libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(65534) != 0
                        || libc::setuid(65534) != 0
                    {
                        libc::_exit(1);
                    }
                    loop {
                        for (l, p) in &pairs {
                            let r = libc::syscall(
                                libc::SYS_renameat2,
                                libc::AT_FDCWD,
                                l.as_ptr(),
                                libc::AT_FDCWD,
                                p.as_ptr(),
                                libc::RENAME_EXCHANGE,
                            );
                            if r != 0 {
                                libc::symlink(t.as_ptr(), l.as_ptr());
                            }
                        }
                    }
                }
            }
            pid
        })
        .collect()
}

fn stop(pids: Vec<libc::pid_t>) {
    for pid in pids {
        // SAFETY: our own children, by PID.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
}

/// A root-owned file outside DIR that a followed chmod would change.
fn root_target(w: &World) -> std::path::PathBuf {
    let t = w.root.path().join("root-binary");
    std::fs::write(&t, b"#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o700)).unwrap();
    t
}

fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_symlink_swapped_over_a_fifo_is_never_chmodded_through() {
    require_root!();
    let w = World::new();
    std::fs::set_permissions(w.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&w.dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let target = root_target(&w);
    fifos(&w.dir);
    w.enable();
    // restore --force loads into the visible tmpfs while the racers swap.
    let r = racers(&w.dir, &target);
    let mut loaded = 0;
    let mut failures = Vec::new();
    for _ in 0..40 {
        std::fs::write(w.dir.join("changed"), b"x").unwrap();
        let o = w.run(&["persist", "restore", s(&w.dir), "--force"]);
        if o.status.success() {
            loaded += 1;
        } else {
            failures.push(show(&o));
        }
    }
    stop(r);
    // Restores that all failed early would prove nothing about the chmod:
    // some must have loaded DIR while the racers ran.
    eprintln!("restore --force under racers: {loaded} of 40 loaded");
    assert!(loaded > 0, "no restore got through: {failures:#?}");
    assert_eq!(
        mode_of(&target),
        0o700,
        "restore chmodded through a symlink"
    );
    // disable loads DIR on disk while the racers swap there.
    for round in 0..3 {
        std::fs::write(w.dir.join("changed"), b"x").unwrap();
        let r = racers(&w.dir, &target);
        let raced = w.run(&["persist", "disable", s(&w.dir), "--yes"]);
        stop(r);
        assert_eq!(
            mode_of(&target),
            0o700,
            "disable chmodded through a symlink"
        );
        // A disable stopped by a detected swap is finished without racers;
        // one of the two must have gone through, or neither proved anything.
        if !raced.status.success() {
            let calm = w.run(&["persist", "disable", s(&w.dir), "--yes"]);
            assert!(
                calm.status.success(),
                "disable failed with and without racers:\n{}\n{}",
                show(&raced),
                show(&calm)
            );
        }
        while super::is_mount(&w.dir) {
            w.unmount(&[]);
        }
        for e in std::fs::read_dir(&w.dir).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        fifos(&w.dir);
        let store = w.root.path().join(format!("store-{round}"));
        let o = w.enable_at(&w.dir, &store, &["--persist", "none"]);
        assert!(o.status.success(), "{}", show(&o));
    }
}
