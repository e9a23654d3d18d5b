//! One interface that says one thing: `--boot` on plan, apply and persist
//! enable (old spellings still work, with a note), and a printed plan that is
//! the one executed.

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::common::{findmnt_fstype, findmnt_options, json, s, scratch, stderr, tmpfsctl};

/// A scratch directory holding DIR (`d`, empty) and an fstab with `text`.
fn dir_and_fstab(text: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = scratch("iface");
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, text).unwrap();
    (t, dir, fstab)
}

#[test]
fn plan_boot_none_plans_no_config_and_says_the_mount_is_gone_after_a_reboot() {
    let (_t, dir, fstab) = dir_and_fstab("");
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
    let (_t, dir, fstab) = dir_and_fstab("");
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
    // Other tmpfs mounts may come and go meanwhile (warnings): compare what
    // the option decides.
    let (jn, jo) = (json(&new), json(&old));
    assert_eq!(
        (&jn["persist"], &jn["mount_options"], &jn["apply_command"]),
        (&jo["persist"], &jo["mount_options"], &jo["apply_command"]),
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
    let (_t, dir, fstab) = dir_and_fstab("# empty\n");
    std::fs::write(dir.join("f"), b"x").unwrap();
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
    let mounted = findmnt_fstype(&dir);
    let _ = Command::new("umount").arg(&dir).status();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(mounted.as_deref(), Some("tmpfs"));
    assert_eq!(std::fs::read_to_string(&fstab).unwrap(), "# empty\n");
    assert!(err.contains("--persist is deprecated"), "{err}");
    assert!(
        !err.contains("Append in") && !err.contains("append the line"),
        "the printed plan promises an fstab line that is never written: {err}"
    );
}

#[test]
fn apply_twice_changes_nothing_and_a_share_of_ram_stays_a_share() {
    crate::require_root!();
    let (_t, dir, fstab) = dir_and_fstab("");
    let args = |extra: &[&'static str]| {
        let mut v = vec![
            "apply",
            s(&dir),
            "--fstab",
            s(&fstab),
            "--boot",
            "fstab",
            "--yes",
        ];
        v.extend_from_slice(extra);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        tmpfsctl(&a)
    };
    let first = run(args(&["--size", "25%"]));
    let line1 = std::fs::read_to_string(&fstab).unwrap();
    let again = run(args(&[]));
    let line2 = std::fs::read_to_string(&fstab).unwrap();
    let plan = {
        let o = tmpfsctl(&["plan", s(&dir), "--fstab", s(&fstab), "--json"]);
        json(&o)
    };
    let _ = Command::new("umount").arg(&dir).status();
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(line1.contains("size=25%"), "{line1}");
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(line1, line2, "the second apply rewrote the line");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&again.stdout),
        stderr(&again)
    );
    assert!(!said.contains("Changed:"), "{said}");
    assert_eq!(plan["size_option"], "25%", "{plan}");
}

#[test]
fn a_unit_configured_with_a_share_of_ram_is_planned_with_that_share() {
    crate::require_root!();
    let t = scratch("iface");
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let units = t.path().join("units");
    std::fs::create_dir(&units).unwrap();
    let esc = Command::new("systemd-escape")
        .args(["--path", "--suffix=mount"])
        .arg(&dir)
        .output()
        .unwrap();
    let unit = String::from_utf8(esc.stdout).unwrap().trim().to_string();
    // As Debian's tmp.mount spells it: `%%` is a literal percent sign.
    std::fs::write(
        units.join(&unit),
        format!(
            "[Mount]\nWhat=tmpfs\nWhere={}\nType=tmpfs\nOptions=mode=1777,nosuid,nodev,size=10%%\n",
            dir.display()
        ),
    )
    .unwrap();
    let ok = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            "mode=1777,nosuid,nodev,size=10%",
            "tmpfs",
        ])
        .arg(&dir)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, "").unwrap();
    let o = tmpfsctl(&[
        "plan",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--unit-dir",
        s(&units),
        "--boot",
        "systemd",
        "--json",
    ]);
    let opts = findmnt_options(&dir);
    let _ = Command::new("umount").arg(&dir).status();
    let p = json(&o);
    assert_eq!(p["size_option"], "10%", "mounted {opts}: {p}");
}

/// Runs a command tmpfsctl printed, pasted into `sh -c` as a user would,
/// with `tmpfsctl` meaning the binary under test.
pub(crate) fn paste(cmd: &str) -> Output {
    let cmd = cmd.trim();
    let rest = cmd
        .strip_prefix("tmpfsctl ")
        .unwrap_or_else(|| panic!("not a tmpfsctl command: {cmd}"));
    Command::new("sh")
        .arg("-c")
        .arg(format!("\"$0\" {rest}"))
        .arg(env!("CARGO_BIN_EXE_tmpfsctl"))
        .output()
        .unwrap()
}

#[test]
fn printed_commands_paste_for_a_directory_with_shell_characters() {
    crate::require_root!();
    let t = scratch("iface");
    let dir = t.path().join("a b$c 'q'");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("f"), b"kept").unwrap();
    let fstab = t.path().join("fs tab");
    std::fs::write(&fstab, "").unwrap();
    let p = json(&tmpfsctl(&[
        "plan",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--boot",
        "fstab",
        "--size",
        "8M",
        "--json",
    ]));
    let apply = format!("{} --yes", p["apply_command"].as_str().unwrap());
    let out = paste(&apply);
    let mounted = findmnt_options(&dir);
    let undo = String::from_utf8_lossy(&out.stdout)
        .lines()
        .chain(
            stderr(&out)
                .lines()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .iter()
                .map(|s| s.as_str()),
        )
        .find_map(|l| l.strip_prefix("Undo with: ").map(str::to_string));
    let reverted = undo.as_deref().map(|u| paste(&format!("{u} --yes")));
    let still = findmnt_options(&dir);
    if !still.is_empty() {
        let _ = Command::new("umount").arg(&dir).status();
    }
    assert_eq!(out.status.code(), Some(0), "{apply}: {}", stderr(&out));
    assert!(
        mounted.contains("size=8192k"),
        "{apply}: mounted {mounted:?}"
    );
    let undo = undo.expect("apply prints its undo command");
    let reverted = reverted.unwrap();
    assert_eq!(
        reverted.status.code(),
        Some(0),
        "{undo}: {}",
        stderr(&reverted)
    );
    assert!(still.is_empty(), "{undo} left {still}");
    assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"kept");
    assert_eq!(std::fs::read_to_string(&fstab).unwrap(), "");
}

#[test]
fn bare_tmpfsctl_prints_the_short_help_not_an_error() {
    let out = tmpfsctl(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("Usage:") && err.contains("status"), "{err}");
    assert!(!err.contains("error:"), "{err}");
}
