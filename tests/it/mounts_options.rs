//! The kernel's own tmpfs options in `plan`/`apply`: huge= spellings and
//! per-user/per-group quotas, refused before anything changes where the
//! kernel lacks them.

use std::path::Path;

use super::{findmnt_fstype, s, scratch, stderr};
use crate::common::{is_root, json, signal_mid_copy, tmpfsctl};

#[test]
fn huge_takes_the_kernels_spelling_and_the_cli_one() {
    let t = scratch("mounts");
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    for spelling in ["within_size", "within-size"] {
        let out = tmpfsctl(&[
            "plan",
            s(&dir),
            "--fstab",
            s(&fstab),
            "--huge",
            spelling,
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "{spelling}: {}", stderr(&out));
        let p = json(&out);
        let opts = p["mount_options"].as_str().unwrap();
        assert!(
            opts.split(',').any(|o| o == "huge=within_size"),
            "{spelling}: {opts}"
        );
    }
}

/// Whether this kernel's tmpfs takes usrquota, asked the way the kernel
/// documents it (a mount attempt), independently of tmpfsctl's probe.
fn kernel_has_tmpfs_quota(scratch: &Path) -> bool {
    let m = scratch.join("q");
    std::fs::create_dir(&m).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "usrquota,size=1M", "tmpfs"])
        .arg(&m)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    if ok {
        let _ = std::process::Command::new("umount").arg(&m).status();
    }
    ok
}

#[test]
fn quotas_refused_before_anything_changes_where_the_kernel_lacks_them() {
    crate::require_root!();
    let t = scratch("mounts");
    if kernel_has_tmpfs_quota(t.path()) {
        crate::skip!("this kernel's tmpfs has quotas: nothing to refuse");
    }
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("f"), b"kept").unwrap();
    let fstab = t.path().join("fstab");
    let release = String::from_utf8(
        std::process::Command::new("uname")
            .arg("-r")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for (cmd, flag) in [("plan", "--user-quota"), ("apply", "--group-quota")] {
        let mut args = vec![cmd, s(&dir), "--fstab", s(&fstab), flag, "1G"];
        if cmd == "apply" {
            args.push("--yes");
        }
        let out = tmpfsctl(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains(release.trim()),
            "{cmd} names the kernel: {err}"
        );
        assert!(err.contains("CONFIG_TMPFS_QUOTA"), "{cmd}: {err}");
        assert!(err.contains(flag), "{cmd}: {err}");
        assert_eq!(findmnt_fstype(&dir), None, "{cmd} mounted nothing");
        assert!(!fstab.exists(), "{cmd} wrote no fstab");
        assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"kept");
    }
    assert!(is_root());
}

#[test]
fn quotas_are_applied_where_the_kernel_has_them() {
    crate::require_root!();
    let t = scratch("mounts");
    if !kernel_has_tmpfs_quota(t.path()) {
        crate::skip!("this kernel's tmpfs has no quotas: nothing to apply");
    }
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("f"), b"kept").unwrap();
    let none = t.path().join("no-fstab");
    let out = tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&none),
        "--boot",
        "none",
        "--size",
        "16M",
        "--user-quota",
        "1M",
        "--yes",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let opts = crate::common::findmnt_options(&dir);
    assert!(opts.contains("usrquota"), "{opts}");
    let out = tmpfsctl(&[
        "revert",
        s(&dir),
        "--fstab",
        s(&none),
        "--keep-data",
        "--yes",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(findmnt_fstype(&dir), None);
    assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"kept");
}

#[test]
fn printed_apply_command_carries_every_option_given() {
    let t = scratch("mounts");
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    let units = t.path().join("units");
    std::fs::create_dir(&units).unwrap();
    let out = tmpfsctl(&[
        "plan",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--unit-dir",
        s(&units),
        "--size",
        "1G",
        "--huge",
        "within_size",
        "--noexec",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let want = format!(
        "Steps `tmpfsctl apply {} --size 1G --huge within-size --noexec --fstab {} --unit-dir {}` takes",
        s(&dir),
        s(&fstab),
        s(&units)
    );
    assert!(text.contains(&want), "want {want}\n{text}");
    let p = json(&tmpfsctl(&[
        "plan",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--inodes",
        "5000",
        "--json",
    ]));
    assert_eq!(
        p["apply_command"],
        format!(
            "tmpfsctl apply {} --inodes 5000 --fstab {}",
            s(&dir),
            s(&fstab)
        )
    );
}

#[test]
fn revert_help_names_dir_as_what_is_taken_off_tmpfs() {
    let out = tmpfsctl(&["revert", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("The directory to put on tmpfs"), "{text}");
    assert!(text.contains("take off tmpfs"), "{text}");
}

#[test]
fn plan_warnings_are_coloured_only_when_asked() {
    let t = scratch("mounts");
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    // ramfs is a blocker, so "apply would refuse" is printed.
    let run = |color: &str| {
        let out = tmpfsctl(&[
            "plan",
            s(&dir),
            "--fstab",
            s(&fstab),
            "--fstype",
            "ramfs",
            "--color",
            color,
        ]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coloured = run("always");
    // ramfs gets no tmpfs steps, only what to run instead.
    assert!(!coloured.contains("is the new tmpfs"), "{coloured}");
    assert!(!coloured.contains("Steps `tmpfsctl apply"), "{coloured}");
    assert!(coloured.contains("plan a tmpfs instead"), "{coloured}");
    let line = coloured
        .lines()
        .find(|l| l.contains("apply would refuse"))
        .unwrap();
    assert!(line.contains("\x1b["), "{line:?}");
    assert!(!run("never").contains('\x1b'));
}

#[test]
fn sigterm_during_the_copy_mounts_nothing_and_keeps_the_source() {
    crate::require_root!();
    let t = scratch("mounts");
    let dir = t.path().join("big");
    std::fs::create_dir(&dir).unwrap();
    // Enough data that the copy and its check take a while: large files for
    // the bytes, many small ones for the per-entry work.
    let chunk: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8 + 1).collect();
    for i in 0..40 {
        std::fs::write(dir.join(format!("big{i}")), &chunk).unwrap();
    }
    let small = dir.join("small");
    std::fs::create_dir(&small).unwrap();
    for i in 0..4000 {
        std::fs::write(small.join(format!("f{i}")), format!("file {i}")).unwrap();
    }
    let fstab = t.path().join("fstab");
    // SIGTERM once the copy runs (or apply ends, which fails below).
    let out = signal_mid_copy(
        &["apply", s(&dir), "--fstab", s(&fstab), "--yes"],
        &dir,
        rustix::process::Signal::TERM,
    );
    let err = stderr(&out);
    assert!(
        !out.status.success(),
        "apply finished before SIGTERM: {err}"
    );
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert_eq!(findmnt_fstype(&dir), None, "nothing left mounted: {err}");
    assert!(!fstab.exists(), "no fstab line written");
    for i in 0..40 {
        assert_eq!(std::fs::read(dir.join(format!("big{i}"))).unwrap(), chunk);
    }
    assert_eq!(std::fs::read_dir(&small).unwrap().count(), 4000);
    assert_eq!(
        std::fs::read_to_string(small.join("f3999")).unwrap(),
        "file 3999"
    );
}
