//! Root's report files where another user decides what is on the way:
//! uid 65534 plants a FIFO at the output name, or a symbolic link in a
//! directory it owns (as the prometheus user owns /var/lib/prometheus).
//! Root refuses (exit 2, naming what to remove), never hangs, never writes
//! where the link leads; writing into the other user's directory itself
//! still works.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::{as_nobody, bin, s, scratch, stderr};

/// Run tmpfsctl; a run still going after a minute is killed (by its PID)
/// and fails the test: a hang is the bug guarded against.
fn run_bounded(args: &[&str]) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(60) {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_child(&child),
                rustix::process::Signal::KILL,
            );
            let _ = child.wait();
            panic!("tmpfsctl {args:?} hung on a FIFO another user planted");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A world-writable sticky directory (as /tmp is) for the attacker to plant in.
fn shared_dir() -> tempfile::TempDir {
    let d = scratch("hostile-out");
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o1777),
    )
    .unwrap();
    d
}

fn refused(o: &Output, says: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    assert!(stderr(o).contains(says), "expected {says:?}: {}", stderr(o));
}

/// The commands that write a report file, with the file at `p`.
fn writers(p: &str, data: &str) -> Vec<Vec<String>> {
    [
        vec!["top", "--prom", p],
        vec!["collect", "--path", data, "--host", "h", "--output", p],
        vec!["persist", "status", "--prom", p],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect()
}

#[test]
fn a_fifo_another_user_planted_is_refused_at_once_not_waited_on() {
    crate::require_root!();
    let d = shared_dir();
    let fifo = d.path().join("tmpfsctl.prom");
    let o = as_nobody(&format!("mkfifo -m 666 {}", s(&fifo)));
    assert!(o.status.success(), "{}", stderr(&o));
    for args in writers(s(&fifo), s(d.path())) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_bounded(&args);
        refused(&o, "a FIFO that uid 65534 owns");
        assert!(
            stderr(&o).contains("remove it or give another path"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo(),
            "{args:?} replaced the FIFO"
        );
    }
}

#[test]
fn a_link_in_a_directory_another_user_owns_is_not_followed() {
    crate::require_root!();
    let d = scratch("hostile-out");
    // Root's own directory, which the attacker wants a file in.
    let victim = d.path().join("root-only");
    std::fs::create_dir(&victim).unwrap();
    std::fs::set_permissions(&victim, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    // As /var/lib/prometheus: the service user's directory.
    let prom = d.path().join("prometheus");
    std::fs::create_dir(&prom).unwrap();
    std::os::unix::fs::chown(&prom, Some(65534), Some(65534)).unwrap();
    let link = prom.join("node-exporter");
    let o = as_nobody(&format!("ln -s {} {}", s(&victim), s(&link)));
    assert!(o.status.success(), "{}", stderr(&o));
    let data = d.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let dest = link.join("tmpfsctl.prom");
    for args in writers(s(&dest), s(&data)) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_bounded(&args);
        refused(&o, "is a symbolic link that uid 65534 owns");
        assert_eq!(
            std::fs::read_dir(&victim).unwrap().count(),
            0,
            "{args:?} wrote through the link"
        );
    }
    // The report files of fleet analyze and bench go the same way.
    let snap = d.path().join("snap.jsonl");
    let o = bin()
        .args(["collect", "--path", s(&data), "--host", "h", "--output"])
        .arg(&snap)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for flag in [
        "--export-json",
        "--export-csv",
        "--export-markdown",
        "--html",
    ] {
        let o = run_bounded(&[
            "fleet",
            "analyze",
            s(&snap),
            "--path",
            s(&data),
            flag,
            s(&link.join("r.out")),
        ]);
        refused(&o, "is a symbolic link that uid 65534 owns");
    }
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
    // Into the service user's directory itself: written, root's file.
    let mine = prom.join("tmpfsctl.prom");
    let o = run_bounded(&["top", "--prom", s(&mine)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = std::fs::symlink_metadata(&mine).unwrap();
    assert!(m.is_file() && m.uid() == 0 && m.mode() & 0o777 == 0o644);
    assert!(
        std::fs::read_dir(&prom)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with(".tmpfsctl-")),
        "a temp file was left behind"
    );
}

#[test]
fn root_still_writes_through_its_own_links_and_to_a_fifo_it_made() {
    crate::require_root!();
    let d = scratch("hostile-out");
    let real = d.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let via = d.path().join("via");
    std::os::unix::fs::symlink(&real, &via).unwrap();
    let o = run_bounded(&["top", "--prom", s(&via.join("t.prom"))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(real.join("t.prom").is_file());
    // Root's FIFO with no reader: an error, not a wait.
    let fifo = d.path().join("f");
    let o = as_root_mkfifo(&fifo);
    assert!(o.status.success());
    let o = run_bounded(&["top", "--prom", s(&fifo)]);
    refused(&o, "no one is reading");
}

fn as_root_mkfifo(p: &Path) -> Output {
    std::process::Command::new("mkfifo")
        .arg(p)
        .output()
        .unwrap()
}
