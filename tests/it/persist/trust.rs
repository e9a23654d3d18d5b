//! A store another user can change must never make root act for them:
//! unsafe stores are refused at enable (nothing created, nothing mounted),
//! a store on RAM (directly or through a loop device) is refused, a store
//! replaced after enable is refused by restore, and persist's tmpfs honours
//! no set-uid bit or device node unless asked.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use super::{World, is_mount, s, says, show};
use crate::common::{TestMount, as_nobody, findmnt_options};

fn chown(p: &Path, uid: u32) {
    std::os::unix::fs::chown(p, Some(uid), Some(uid)).unwrap();
}

fn enable_with(w: &World, store: &Path, extra: &[&str]) -> Output {
    let mut a = vec!["--size", "16M", "--boot", "none"];
    a.extend(extra);
    w.enable_at(&w.dir, store, &a)
}

/// Refused with exit 2 and `says` in the message, and nothing done: DIR
/// not mounted, no registry written.
fn refused(w: &World, o: &Output, says: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "{}", show(o));
    let e = String::from_utf8_lossy(&o.stderr);
    for x in says {
        assert!(e.contains(x), "expected {x:?}: {}", show(o));
    }
    assert!(!is_mount(&w.dir), "DIR mounted after a refusal");
    assert!(!w.registry.exists(), "registry written after a refusal");
}

#[test]
fn stores_another_user_could_change_are_refused_and_nothing_is_left() {
    crate::require_root!();
    // Owned by uid 65534.
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    std::fs::create_dir(&w.store).unwrap();
    chown(&w.store, 65534);
    let o = enable_with(&w, &w.store, &[]);
    refused(&w, &o, &["belongs to uid 65534"]);
    assert_eq!(std::fs::read_dir(&w.store).unwrap().count(), 0);

    // Under a parent uid 65534 owns: not even created.
    let w = World::new();
    let parent = w.root.path().join("theirs");
    std::fs::create_dir(&parent).unwrap();
    chown(&parent, 65534);
    let store = parent.join("store");
    let o = enable_with(&w, &store, &[]);
    refused(&w, &o, &["uid 65534", s(&parent)]);
    assert!(!store.exists(), "store created under a refused parent");

    // Mode 0777.
    let w = World::new();
    std::fs::create_dir(&w.store).unwrap();
    std::fs::set_permissions(&w.store, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = enable_with(&w, &w.store, &[]);
    refused(&w, &o, &["mode 777", "everyone"]);
    assert_eq!(std::fs::read_dir(&w.store).unwrap().count(), 0);

    // A symlink in its path (uid 65534 could re-point it at any time).
    let w = World::new();
    let real = w.root.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = w.root.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = enable_with(&w, &link.join("store"), &[]);
    refused(&w, &o, &["symbolic link", s(&link)]);
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
}

#[test]
fn stores_on_ram_directly_or_through_a_loop_device_are_refused() {
    crate::require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let ram = TestMount::tmpfs("size=96M");
    let o = enable_with(&w, &ram.path.join("st"), &[]);
    refused(&w, &o, &["RAM-backed"]);
    assert!(!ram.path.join("st").exists());
    // An ext4 image whose file lives on that tmpfs, loop-mounted: a disk
    // filesystem in name only.
    let img = ram.path.join("disk.img");
    let ok = |c: &mut Command| {
        let o = c.output().unwrap();
        assert!(o.status.success(), "{c:?}: {}", show(&o));
    };
    ok(Command::new("truncate").args(["-s", "64M"]).arg(&img));
    ok(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&img));
    let mnt = w.root.path().join("loopmnt");
    std::fs::create_dir(&mnt).unwrap();
    ok(Command::new("mount")
        .args(["-o", "loop"])
        .arg(&img)
        .arg(&mnt));
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _u = Unmount(&mnt);
    let o = enable_with(&w, &mnt.join("st"), &[]);
    refused(&w, &o, &["loop device", "disk.img", "RAM-backed"]);
    assert!(!mnt.join("st").exists());
}

/// A generation holding a set-uid root program and a block device node
/// anyone may open: what uid 65534 would plant in a store it controls.
fn forged_store(w: &World) -> std::path::PathBuf {
    let src = World::new();
    std::fs::copy("/usr/bin/id", src.dir.join("suid-id")).unwrap();
    std::fs::set_permissions(
        src.dir.join("suid-id"),
        std::fs::Permissions::from_mode(0o4755),
    )
    .unwrap();
    let st = Command::new("mknod")
        .args(["-m", "0666"])
        .arg(src.dir.join("disk"))
        .args(["b", "7", "0"])
        .status()
        .unwrap();
    assert!(st.success());
    let o = enable_with(&src, &src.store, &[]);
    assert!(o.status.success(), "{}", show(&o));
    let forged = w.root.path().join("forged");
    let st = Command::new("cp")
        .arg("-a")
        .arg(&src.store)
        .arg(&forged)
        .status()
        .unwrap();
    assert!(st.success());
    let st = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&forged)
        .status()
        .unwrap();
    assert!(st.success());
    forged
}

#[test]
fn a_store_replaced_or_changed_after_enable_is_refused_by_restore() {
    crate::require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("mine"), b"v1").unwrap();
    let o = enable_with(&w, &w.store, &[]);
    assert!(o.status.success(), "{}", show(&o));
    let forged = forged_store(&w);
    // Later the store ends up in uid 65534's hands (a careless chown -R),
    // who swaps in its own generation; then the machine reboots.
    let st = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&w.store)
        .status()
        .unwrap();
    assert!(st.success());
    chown(w.root.path(), 65534);
    let o = as_nobody(&format!(
        "cd '{}' && mv store store.old && mv forged store",
        w.root.path().display()
    ));
    assert!(o.status.success(), "{}", show(&o));
    let _ = forged;
    w.unmount(&[]);
    let o = w.run(&["persist", "restore", s(&w.dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    says(&o.stderr, "uid 65534", &o);
    assert!(!is_mount(&w.dir), "restore mounted a forged store");
    assert!(!w.dir.join("suid-id").exists());

    // Still root's, but not as enable left it: refused as well.
    let w = World::new();
    std::fs::write(w.dir.join("mine"), b"v1").unwrap();
    let o = enable_with(&w, &w.store, &[]);
    assert!(o.status.success(), "{}", show(&o));
    std::os::unix::fs::chown(&w.store, None, Some(65534)).unwrap();
    std::fs::set_permissions(&w.store, std::fs::Permissions::from_mode(0o750)).unwrap();
    w.unmount(&[]);
    let o = w.run(&["persist", "restore", s(&w.dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    says(&o.stderr, "changed or replaced", &o);
    assert!(!is_mount(&w.dir));
}

#[test]
fn persists_tmpfs_is_nosuid_nodev_unless_allowed() {
    crate::require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let o = enable_with(&w, &w.store, &[]);
    assert!(o.status.success(), "{}", show(&o));
    let opts = findmnt_options(&w.dir);
    assert!(opts.contains("nosuid") && opts.contains("nodev"), "{opts}");
    // After a reboot (tmpfs gone) restore mounts it the same way.
    w.unmount(&[]);
    let o = w.run(&["persist", "restore", s(&w.dir)]);
    assert!(o.status.success(), "{}", show(&o));
    let opts = findmnt_options(&w.dir);
    assert!(opts.contains("nosuid") && opts.contains("nodev"), "{opts}");
    // Asked for: set-uid honoured, devices still not; the fstab line says so.
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let o = enable_with(&w, &w.store, &["--allow-suid"]);
    assert!(o.status.success(), "{}", show(&o));
    let opts = findmnt_options(&w.dir);
    assert!(!opts.contains("nosuid") && opts.contains("nodev"), "{opts}");
    w.unmount(&[]);
    let o = w.run(&["persist", "restore", s(&w.dir)]);
    assert!(o.status.success(), "{}", show(&o));
    let opts = findmnt_options(&w.dir);
    assert!(!opts.contains("nosuid") && opts.contains("nodev"), "{opts}");
    // --allow-dev: the fstab line drops nodev only.
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let fstab = w.root.path().join("fstab");
    let o = w.enable_fstab("16M", &["--allow-dev"]);
    assert!(o.status.success(), "{}", show(&o));
    let line = std::fs::read_to_string(&fstab).unwrap();
    assert!(
        line.trim_end().ends_with(" tmpfs size=16M,nosuid 0 0"),
        "{line}"
    );
    let opts = findmnt_options(&w.dir);
    assert!(opts.contains("nosuid") && !opts.contains("nodev"), "{opts}");
    w.ok(&["persist", "disable", s(&w.dir), "--yes"]);
}

/// A tmpfs already on DIR at restore (mounted by hand or by an fstab line
/// without persist's flags) gets nosuid,nodev before anything is loaded.
#[test]
fn restore_into_a_tmpfs_without_nosuid_nodev_restricts_it_first() {
    crate::require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"kept").unwrap();
    let o = enable_with(&w, &w.store, &[]);
    assert!(o.status.success(), "{}", show(&o));
    w.unmount(&[]);
    assert!(
        Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=16M,suid,dev", "tmpfs"])
            .arg(&w.dir)
            .status()
            .unwrap()
            .success()
    );
    let opts = findmnt_options(&w.dir);
    assert!(
        !opts.contains("nosuid") && !opts.contains("nodev"),
        "{opts}"
    );
    let o = w.run(&["persist", "restore", s(&w.dir)]);
    assert!(o.status.success(), "{}", show(&o));
    let opts = findmnt_options(&w.dir);
    assert!(opts.contains("nosuid") && opts.contains("nodev"), "{opts}");
    assert_eq!(std::fs::read(w.dir.join("f")).unwrap(), b"kept");
}

/// The store's path turned into a symlink after enable (by whoever could
/// rename it): root's sync must not write `current`, generations, objects
/// or its lock wherever the link leads.
#[test]
fn sync_refuses_a_store_path_that_became_a_symlink() {
    crate::require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let o = enable_with(&w, &w.store, &[]);
    assert!(o.status.success(), "{}", show(&o));
    let elsewhere = w.root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::rename(&w.store, w.root.path().join("store.real")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &w.store).unwrap();
    std::fs::write(w.dir.join("g"), b"new").unwrap();
    let o = w.sync();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    says(&o.stderr, "symbolic link", &o);
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "sync wrote through the link"
    );
}

/// The units enable writes run as root at boot, every interval and at
/// shutdown: a binary from the build tree (gone after `cargo clean`), from
/// /var/tmp, or one another user owns or may write is refused with exit 2
/// and the fix, before anything is created; the installed copy is accepted.
#[test]
fn units_only_name_a_binary_only_root_can_change() {
    crate::require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let units = w.root.path().join("units");
    let a = ["--boot", "systemd", "--unit-dir", s(&units)];
    let mut args = vec![
        "persist",
        "enable",
        s(&w.dir),
        "--store",
        s(&w.store),
        "--yes",
    ];
    args.extend(a);
    // The binary this checkout built: refused wherever the checkout is (a
    // build tree, and maybe below /tmp too).
    let o = w.run(&args);
    refused(&w, &o, &["install -m755", "/usr/bin/tmpfsctl"]);
    assert!(!units.exists() && !w.store.exists(), "{}", show(&o));
    let inst = w.installed();
    let run_copy = |bin: &Path| {
        Command::new(bin)
            .env("TMPFSCTL_PERSIST_REGISTRY", &w.registry)
            .args(&args)
            .output()
            .unwrap()
    };
    // A build tree in a place that is otherwise safe (root's, under
    // /var/lib): what `cargo build` leaves, named as such.
    let tree = tempfile::Builder::new()
        .prefix("tmpfsctl-it-tree-")
        .tempdir_in("/var/lib")
        .unwrap();
    std::fs::set_permissions(tree.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(tree.path().join("Cargo.toml"), "[package]\n").unwrap();
    let built = tree.path().join("target/release");
    std::fs::create_dir_all(&built).unwrap();
    let built = built.join("tmpfsctl");
    std::fs::copy(&inst.bin, &built).unwrap();
    refused(&w, &run_copy(&built), &["build tree", "install -m755"]);
    assert!(!units.exists() && !w.store.exists());
    // The same bytes owned by another user, then group-writable, then in
    // /var/tmp.
    chown(&inst.bin, 1000);
    refused(&w, &run_copy(&inst.bin), &["belongs to uid 1000"]);
    chown(&inst.bin, 0);
    std::fs::set_permissions(&inst.bin, std::fs::Permissions::from_mode(0o775)).unwrap();
    refused(&w, &run_copy(&inst.bin), &["writable by its group"]);
    let tmp = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
    let in_tmp = tmp.path().join("tmpfsctl");
    std::fs::copy(&inst.bin, &in_tmp).unwrap();
    refused(&w, &run_copy(&in_tmp), &["under /var/tmp"]);
    assert!(!units.exists() && !w.store.exists());
    std::fs::set_permissions(&inst.bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = w.enable_units(&a);
    assert!(o.status.success(), "{}", show(&o));
    let o = w.run(&["persist", "status", s(&w.dir), "--json"]);
    let j = crate::common::json(&o);
    assert_eq!(j["dirs"][0]["unit_binary"], s(&inst.bin), "{}", show(&o));
    assert!(
        j["dirs"][0]["unit_binary_problem"].is_null(),
        "{}",
        show(&o)
    );
    w.ok(&["persist", "disable", s(&w.dir), "--yes"]);
}

/// `persist status` flags units whose binary went away or another user can
/// now change: the boot restore and the shutdown sync would fail or run
/// their code as root.
#[test]
fn status_flags_units_whose_binary_is_gone_or_unsafe() {
    crate::require_root!();
    let w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let units = w.root.path().join("units");
    let o = w.enable_units(&["--boot", "systemd", "--unit-dir", s(&units)]);
    assert!(o.status.success(), "{}", show(&o));
    let bin = w.installed().bin.clone();
    chown(&bin, 1000);
    let o = w.run(&["persist", "status", s(&w.dir)]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    says(&o.stdout, "UNSAFE_UNIT", &o);
    says(&o.stdout, "belongs to uid 1000", &o);
    std::fs::remove_file(&bin).unwrap();
    let o = w.run(&["persist", "status", s(&w.dir), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let j = crate::common::json(&o);
    assert_eq!(j["dirs"][0]["state"], "unsafe_unit", "{}", show(&o));
    assert!(
        j["dirs"][0]["unit_binary_problem"]
            .as_str()
            .is_some_and(|p| p.contains("cannot be found")),
        "{}",
        show(&o)
    );
    w.ok(&["persist", "disable", s(&w.dir), "--yes"]);
}

/// A store whose parents do not exist is made with them, and enable says
/// which directories it created; units written where systemd does not run
/// them (no systemd here, or another --unit-dir) are said not to be started,
/// with the sync to run meanwhile.
#[test]
fn enable_says_which_directories_it_made_and_that_its_units_are_not_running() {
    crate::require_root!();
    let mut w = World::new();
    std::fs::write(w.dir.join("f"), b"x").unwrap();
    let deep = w.root.path().join("no/such");
    w.store = deep.join("store");
    let units = w.root.path().join("units");
    let o = w.enable_units(&[
        "--size",
        "16M",
        "--boot",
        "systemd",
        "--unit-dir",
        s(&units),
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let made = format!(
        "created {}, {} to hold the store",
        w.root.path().join("no").display(),
        deep.display()
    );
    assert!(out.contains(&made), "{made:?} not in:\n{out}");
    assert!(
        out.contains("not started") && out.contains("tmpfsctl persist sync"),
        "{out}"
    );
    assert!(w.store.is_dir());
}
