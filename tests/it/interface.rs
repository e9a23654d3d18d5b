//! One interface that says one thing: `--boot` on plan, apply and persist
//! enable (old spellings still work, with a note), and a printed plan that is
//! the one executed.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{json, tmpfsctl};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tmpfsctl-it-iface-")
        .tempdir()
        .unwrap()
}

#[test]
fn plan_boot_none_plans_no_config_and_says_the_mount_is_gone_after_a_reboot() {
    let t = scratch();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, "").unwrap();
    let out = tmpfsctl(&[
        "plan",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--boot",
        "none",
        "--json",
    ]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let p = json(&out);
    assert_eq!(p["persist"]["via"], "none", "{p}");
    let steps: Vec<&str> = p["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        !steps
            .iter()
            .any(|l| l.contains("append") || l.contains("drop-in ")),
        "a live-only plan lists a config step: {steps:?}"
    );
    assert!(
        p["apply_command"].as_str().unwrap().contains("--boot none"),
        "{}",
        p["apply_command"]
    );
    let text = tmpfsctl(&["plan", s(&dir), "--fstab", s(&fstab), "--boot", "none"]);
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(shown.contains("Not persisted"), "{shown}");
    assert!(!shown.contains("Append in"), "{shown}");
}

#[test]
fn old_spellings_of_boot_still_work_and_say_so_on_stderr() {
    let t = scratch();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, "").unwrap();
    let new = tmpfsctl(&[
        "plan",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--boot",
        "fstab",
        "--json",
    ]);
    let old = tmpfsctl(&[
        "plan",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--via",
        "fstab",
        "--json",
    ]);
    assert_eq!(new.status.code(), old.status.code());
    assert_eq!(
        json(&new),
        json(&old),
        "--via fstab plans what --boot fstab plans"
    );
    assert!(!stderr(&new).contains("deprecated"), "{}", stderr(&new));
    let note = stderr(&old);
    assert!(
        note.contains("--via is deprecated") && note.contains("--boot fstab"),
        "{note}"
    );
    assert_eq!(
        note.lines().filter(|l| l.contains("deprecated")).count(),
        1,
        "{note}"
    );
    // Both spellings at once contradict each other: a usage error.
    let both = tmpfsctl(&[
        "plan",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--via",
        "fstab",
        "--boot",
        "systemd",
    ]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    // The option is documented under its one name.
    for cmd in [
        &["plan", "--help"][..],
        &["apply", "--help"],
        &["persist", "enable", "--help"],
    ] {
        let h = String::from_utf8_lossy(&tmpfsctl(cmd).stdout).into_owned();
        assert!(h.contains("--boot"), "{cmd:?}: {h}");
        assert!(
            !h.contains("--via") && !h.contains("--persist <"),
            "{cmd:?}: {h}"
        );
    }
}

#[test]
fn apply_with_the_old_persist_none_prints_the_plan_it_executes() {
    crate::require_root!();
    let t = scratch();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("f"), b"x").unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, "# empty\n").unwrap();
    let out = tmpfsctl(&[
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--persist",
        "none",
        "--size",
        "8M",
        "--yes",
    ]);
    let err = stderr(&out);
    let mounted = Command::new("findmnt")
        .args(["-n", "-o", "FSTYPE", "--mountpoint"])
        .arg(&dir)
        .output()
        .unwrap();
    let _ = Command::new("umount").arg(&dir).status();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&mounted.stdout).trim(), "tmpfs");
    assert_eq!(std::fs::read_to_string(&fstab).unwrap(), "# empty\n");
    assert!(err.contains("--persist is deprecated"), "{err}");
    assert!(
        !err.contains("Append in") && !err.contains("append the line"),
        "the printed plan promises an fstab line that is never written: {err}"
    );
}
