//! Ctrl-C during `revert --keep-data`'s copy back to disk: the shell sees 130
//! (a death by SIGINT, like any interrupted command), no file is lost, and
//! what the run left is either the tmpfs still on DIR with everything, or a
//! note the next run finishes from.

use std::os::unix::fs::MetadataExt;

use super::*;
use crate::common::{shell_status, signal_mid_copy};

/// The data a revert must not lose: (relative name, content).
fn fill(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let chunk: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8 + 1).collect();
    let mut v: Vec<(String, Vec<u8>)> = (0..24)
        .map(|i| (format!("big{i}"), chunk.clone()))
        .collect();
    std::fs::create_dir(dir.join("small")).unwrap();
    v.extend((0..3000).map(|i| (format!("small/f{i}"), format!("file {i}").into_bytes())));
    for (name, data) in &v {
        std::fs::write(dir.join(name), data).unwrap();
    }
    v
}

fn assert_all_there(dir: &Path, files: &[(String, Vec<u8>)], when: &str) {
    for (name, data) in files {
        let got =
            std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{when}: {name} is gone: {e}"));
        assert!(got == *data, "{when}: {name} changed");
    }
}

/// Entries revert's scratch work would leave in DIR (`.tmpfsctl-…`).
fn scratch_left(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmpfsctl"))
        .collect()
}

#[test]
fn ctrl_c_during_revert_copy_exits_130_and_loses_nothing() {
    require_root!();
    let t = scratch("mounts-intr");
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("on-disk"), b"before apply").unwrap();
    let fstab = t.path().join("fstab");
    let _cleanup = Cleanup(dir.clone());
    apply_json(&dir, &fstab, "1G");
    assert_eq!(findmnt_fstype(&dir).as_deref(), Some("tmpfs"));
    let mut files = fill(&dir);
    files.push(("on-disk".into(), b"before apply".to_vec()));

    let out = signal_mid_copy(
        &[
            "revert",
            s(&dir),
            "--fstab",
            s(&fstab),
            "--keep-data",
            "--yes",
        ],
        &dir,
        rustix::process::Signal::INT,
    );
    let err = stderr(&out);
    assert!(
        !out.status.success(),
        "revert finished before Ctrl-C: {err}"
    );
    assert_eq!(shell_status(out.status), 130, "{:?}: {err}", out.status);
    assert!(err.contains("interrupted"), "{err}");

    // Whatever state it stopped in, every file is there: on the tmpfs still
    // mounted on DIR, or (had the swap begun) in DIR.
    assert_all_there(&dir, &files, "after Ctrl-C");
    if findmnt_fstype(&dir).as_deref() == Some("tmpfs") {
        assert_eq!(scratch_left(&dir), Vec::<String>::new(), "{err}");
    }

    // The next run finishes the job (from the note, if one was kept).
    let again = revert_keep(&dir, &fstab);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(findmnt_fstype(&dir), None, "DIR is on disk again");
    assert_all_there(&dir, &files, "after the second revert");
    assert_eq!(scratch_left(&dir), Vec::<String>::new());
    assert_eq!(
        mounts_under(t.path()),
        Vec::<String>::new(),
        "no staging mount left"
    );
    let dev = std::fs::metadata(t.path()).unwrap().dev();
    assert_eq!(std::fs::metadata(&dir).unwrap().dev(), dev);
    let notes = std::fs::read_dir("/run/tmpfsctl-journal")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(s(&dir))))
        .count();
    assert_eq!(notes, 0, "no progress note left for DIR");
}

fn revert_keep(dir: &Path, fstab: &Path) -> Output {
    tmpfsctl(&[
        "revert",
        s(dir),
        "--fstab",
        s(fstab),
        "--keep-data",
        "--yes",
    ])
}

/// Run tmpfsctl under strace, which delivers `sig` as the process enters
/// its first `syscall`: the handler runs just after that call returns. For
/// apply, `move_mount` is the switch onto DIR; for revert, `umount2` is the
/// detach from DIR.
fn signal_at_syscall(syscall: &str, sig: &str, args: &[&str]) -> Output {
    signal_at_nth_syscall(syscall, 1, sig, args)
}

/// As [`signal_at_syscall`], at the `nth` call of `syscall`.
fn signal_at_nth_syscall(syscall: &str, nth: u32, sig: &str, args: &[&str]) -> Output {
    Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-e"])
        .arg(format!("trace={syscall}"))
        .arg("-e")
        .arg(format!("inject={syscall}:signal={sig}:when={nth}"))
        .arg(env!("CARGO_BIN_EXE_tmpfsctl"))
        .args(args)
        .output()
        .expect("strace (scripts/setup installs it)")
}

fn has_tmpfs_line(fstab: &Path, dir: &Path) -> bool {
    std::fs::read_to_string(fstab)
        .unwrap()
        .lines()
        .any(|l| l.starts_with("tmpfs ") && l.split_whitespace().nth(1) == Some(s(dir)))
}

#[test]
fn a_signal_just_after_applys_switch_says_what_is_left_and_a_rerun_finishes() {
    require_root!();
    let t = scratch("mounts-switch");
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..20 {
        std::fs::write(dir.join(format!("f{i}")), format!("{i}")).unwrap();
    }
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"").unwrap();
    let _cleanup = Cleanup(dir.clone());
    let args = [
        "apply",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--size",
        "16M",
        "--yes",
    ];
    let o = signal_at_syscall("move_mount", "SIGINT", &args);
    let err = stderr(&o);
    assert_eq!(shell_status(o.status), 130, "{err}");
    // What was done, what is not, and the command that finishes it.
    assert!(err.contains("is on tmpfs now"), "{err}");
    assert!(err.contains("has no line for it yet"), "{err}");
    assert!(
        err.contains(&format!("run `tmpfsctl apply {}", s(&dir)))
            && err.contains("again to finish"),
        "{err}"
    );
    assert!(!err.contains("failed"), "a signal is no failure: {err}");
    assert_eq!(findmnt_fstype(&dir).as_deref(), Some("tmpfs"));
    assert!(!has_tmpfs_line(&fstab, &dir));

    let again = tmpfsctl(&args);
    ok(&again);
    assert!(
        stderr(&again).contains("was interrupted"),
        "{}",
        stderr(&again)
    );
    assert_eq!(findmnt_fstype(&dir).as_deref(), Some("tmpfs"));
    assert!(has_tmpfs_line(&fstab, &dir), "the rerun added the line");
    for i in 0..20 {
        assert_eq!(
            std::fs::read_to_string(dir.join(format!("f{i}"))).unwrap(),
            format!("{i}")
        );
    }
}

#[test]
fn a_signal_just_after_reverts_switch_says_what_is_left_and_a_rerun_finishes() {
    require_root!();
    let t = scratch("mounts-unswitch");
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("on-disk"), b"before apply").unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"").unwrap();
    let _cleanup = Cleanup(dir.clone());
    apply_json(&dir, &fstab, "16M");
    for i in 0..20 {
        std::fs::write(dir.join(format!("f{i}")), format!("{i}")).unwrap();
    }
    let dev_tmpfs = std::fs::metadata(&dir).unwrap().dev();
    let args = [
        "revert",
        s(&dir),
        "--fstab",
        s(&fstab),
        "--keep-data",
        "--yes",
    ];
    let o = signal_at_syscall("umount2", "SIGTERM", &args);
    let err = stderr(&o);
    assert_eq!(shell_status(o.status), 143, "{err}");
    assert!(err.contains("files are back on disk"), "{err}");
    assert!(err.contains("still mounted at"), "{err}");
    assert!(
        err.contains(&format!("{} still has its line", s(&fstab))),
        "{err}"
    );
    assert!(
        err.contains(&format!("run `tmpfsctl revert {} --keep-data", s(&dir)))
            && err.contains("again to finish"),
        "{err}"
    );
    assert!(!err.contains("failed"), "a signal is no failure: {err}");
    assert_eq!(findmnt_fstype(&dir), None, "the tmpfs is off DIR");
    assert!(has_tmpfs_line(&fstab, &dir));
    let stage = err
        .split("still mounted at ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap()
        .to_string();
    assert_eq!(
        std::fs::metadata(&stage).unwrap().dev(),
        dev_tmpfs,
        "the staging mount holds the tmpfs"
    );

    let again = revert_keep(&dir, &fstab);
    ok(&again);
    assert!(
        stderr(&again).contains("was interrupted"),
        "{}",
        stderr(&again)
    );
    assert!(!has_tmpfs_line(&fstab, &dir), "the rerun removed the line");
    assert_ne!(
        std::fs::metadata(&stage).map(|m| m.dev()).ok(),
        Some(dev_tmpfs),
        "the staging mount is gone"
    );
    assert_eq!(std::fs::read(dir.join("on-disk")).unwrap(), b"before apply");
    for i in 0..20 {
        assert_eq!(
            std::fs::read_to_string(dir.join(format!("f{i}"))).unwrap(),
            format!("{i}")
        );
    }
}

/// A signal while apply writes the boot entry (after its last stopping
/// point): apply finishes, says what it did, and exits 143, not 0, so a
/// `systemctl stop` or a script sees that a signal came.
#[test]
fn a_signal_while_apply_writes_fstab_finishes_it_says_so_and_exits_143() {
    require_root!();
    let t = scratch("mounts-late-signal");
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("f"), b"kept").unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"").unwrap();
    let _cleanup = Cleanup(dir.clone());
    // The renames, in order: the progress note made, its "switched" and
    // "caught-up" steps, then (the 4th) the fstab backup, after the last
    // point apply stops at.
    let o = signal_at_nth_syscall(
        "renameat",
        4,
        "SIGTERM",
        &[
            "apply",
            s(&dir),
            "--fstab",
            s(&fstab),
            "--size",
            "16M",
            "--yes",
        ],
    );
    let err = stderr(&o);
    assert!(has_tmpfs_line(&fstab, &dir), "apply finished: {err}");
    assert_eq!(findmnt_fstype(&dir).as_deref(), Some("tmpfs"));
    assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"kept");
    assert_eq!(shell_status(o.status), 143, "{err}");
    assert!(err.contains("apply finished first"), "{err}");
    assert!(err.contains(&format!("added to {}", s(&fstab))), "{err}");
    assert!(!err.contains("failed"), "a signal is no failure: {err}");
}

/// A signal while revert flushes the copy back (after its last stopping
/// point): revert finishes, says so, and exits 130.
#[test]
fn a_signal_while_revert_flushes_finishes_it_says_so_and_exits_130() {
    require_root!();
    let t = scratch("mounts-late-unsignal");
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"").unwrap();
    let _cleanup = Cleanup(dir.clone());
    apply_json(&dir, &fstab, "16M");
    std::fs::write(dir.join("f"), b"written on tmpfs").unwrap();
    // The first syncfs flushes the copy back before the switch; the second,
    // after the catch-up, is past the last point revert stops at.
    let o = signal_at_nth_syscall(
        "syncfs",
        2,
        "SIGINT",
        &[
            "revert",
            s(&dir),
            "--fstab",
            s(&fstab),
            "--keep-data",
            "--yes",
        ],
    );
    let err = stderr(&o);
    assert_eq!(findmnt_fstype(&dir), None, "the tmpfs is off DIR: {err}");
    assert!(!has_tmpfs_line(&fstab, &dir), "revert finished: {err}");
    assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"written on tmpfs");
    assert_eq!(shell_status(o.status), 130, "{err}");
    assert!(err.contains("revert finished first"), "{err}");
    assert!(err.contains("copied 1 file"), "{err}");
    assert!(!err.contains("failed"), "a signal is no failure: {err}");
}

/// A test that fails half way leaves no mount behind: [`Cleanup`] takes
/// the staging mount a stopped revert holds (and its note), not only DIR.
#[test]
fn cleanup_after_a_stopped_revert_leaves_no_staging_mount() {
    require_root!();
    let t = scratch("mounts-cleanup-stage");
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let fstab = t.path().join("fstab");
    std::fs::write(&fstab, b"").unwrap();
    let cleanup = Cleanup(dir.clone());
    apply_json(&dir, &fstab, "16M");
    std::fs::write(dir.join("f"), b"x").unwrap();
    let o = signal_at_syscall(
        "umount2",
        "SIGTERM",
        &[
            "revert",
            s(&dir),
            "--fstab",
            s(&fstab),
            "--keep-data",
            "--yes",
        ],
    );
    assert_eq!(shell_status(o.status), 143, "{}", stderr(&o));
    let notes = super::progress_notes(&dir);
    let stage = notes
        .iter()
        .find_map(|(_, st)| st.clone())
        .unwrap_or_else(|| panic!("no note naming a stage: {notes:?}"));
    assert_eq!(findmnt_fstype(&stage).as_deref(), Some("tmpfs"));
    // What a test that failed here would leave: its Cleanup runs.
    drop(cleanup);
    assert_eq!(findmnt_fstype(&stage), None, "{} still mounted", s(&stage));
    assert!(!stage.exists(), "{}", s(&stage));
    assert!(super::progress_notes(&dir).is_empty());
    assert_eq!(findmnt_fstype(&dir), None);
}
