//! What `plan`, `apply` and `revert` refuse, before changing anything: busy mounts,
//! non-root callers, bad, system or swappable directories, open writers.

use super::*;

#[test]
fn revert_refuses_when_busy_unless_lazy() {
    require_root!();
    let t = scratch("mounts");
    let dir = t.path().join("busy");
    std::fs::create_dir(&dir).unwrap();
    let _c = Cleanup(dir.clone());
    apply_live(&dir, "8M");
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
    assert_eq!(findmnt_fstype(&dir).as_deref(), Some("tmpfs"));
    ok(&tmpfsctl(&[
        "revert",
        s(&dir),
        "--fstab",
        s(&none),
        "--lazy",
        "--yes",
    ]));
    assert_eq!(findmnt_fstype(&dir), None);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_process_in_the_disk_directory_below_does_not_make_revert_busy() {
    require_root!();
    let t = scratch("mounts");
    let dir = t.path().join("below");
    std::fs::create_dir(&dir).unwrap();
    let _c = Cleanup(dir.clone());
    // Its cwd is DIR on disk, taken before the tmpfs covers it: the same
    // path, another directory, and no hold on the tmpfs.
    let mut child = Command::new("sleep")
        .arg("60")
        .current_dir(&dir)
        .spawn()
        .unwrap();
    apply_live(&dir, "8M");
    let none = t.path().join("no-fstab");
    let out = tmpfsctl(&["revert", s(&dir), "--fstab", s(&none), "--yes"]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(out.status.success(), "called busy: {}", stderr(&out));
    assert_eq!(findmnt_fstype(&dir), None);
}

#[test]
fn non_root_gets_a_clear_error() {
    require_root!(); // needs root to drop privileges with setpriv
    let t = scratch("mounts");
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
    assert_eq!(findmnt_fstype(&dir), None);
}

#[test]
fn bad_directories_get_clear_messages() {
    let t = scratch("mounts");
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
        assert_eq!(findmnt_fstype(&dir), None);
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
    let t = scratch("mounts");
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

#[test]
fn symlinks_and_system_directories_are_refused() {
    require_root!();
    let t = scratch("mounts");
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
    assert_eq!(findmnt_fstype(&real), None);
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

/// /var/log, /var/cache/*, /var/tmp, /var/spool, /var/mail, /srv, /home/*
/// keep files across reboots: plan says so in its first lines and exits 1,
/// apply refuses without --force naming what a reboot deletes and `persist`.
#[test]
fn directories_that_outlive_a_reboot_are_warned_about_first_and_refused() {
    require_root!();
    for d in ["/var/log", "/var/tmp", "/var/cache/apt", "/var/spool"] {
        if !Path::new(d).is_dir() {
            continue;
        }
        let out = tmpfsctl(&["plan", d]);
        assert_eq!(out.status.code(), Some(1), "{d}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let head: String = text.lines().take(4).collect::<Vec<_>>().join("\n");
        assert!(
            head.contains("outlive a reboot") && head.contains(&format!("persist enable {d}")),
            "{d}: not in the first lines:\n{text}"
        );
        assert!(!text.contains("scratch directory"), "{d}: {text}");
        let j = json(&tmpfsctl(&["plan", d, "--json"]));
        assert!(
            j["blockers"]
                .to_string()
                .contains("must keep its contents across reboots"),
            "{d}: {j}"
        );
        assert_eq!(j["warnings"][0]["code"], "outlives_reboot", "{d}: {j}");
        // No --yes: had the refusal not come first, apply stops at the
        // prompt (stdin is no terminal) and changes nothing either way.
        let out = tmpfsctl(&["apply", d, "--boot", "none"]);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{d}: {e}");
        assert!(
            e.contains("a reboot would delete them")
                && e.contains(&format!("tmpfsctl persist enable {d}"))
                && e.contains("--force"),
            "{d}: {e}"
        );
        assert_ne!(findmnt_fstype(Path::new(d)).as_deref(), Some("tmpfs"));
    }
}

#[test]
fn package_files_are_a_blocker_lifted_only_by_the_flag() {
    require_root!();
    // bash's documentation directory: dpkg installed the files in it.
    let doc = Path::new("/usr/share/doc/bash");
    if !doc.is_dir() || !Path::new("/var/lib/dpkg/info/bash.list").exists() {
        crate::skip!("no dpkg-installed bash docs here");
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
    let t = scratch("mounts");
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
    assert_eq!(findmnt_fstype(&dir), None);
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
    let t = scratch("mounts");
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
    assert_eq!(findmnt_fstype(&dir), None);
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
    let t = scratch("mounts");
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
    assert_eq!(findmnt_fstype(&dir), None);
    assert!(mounts_under(t.path()).is_empty());
}
