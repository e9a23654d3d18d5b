//! SIGTERM (what systemd and shutdown send) is SIGINT: enable, disable and
//! restore finish or roll back to a state that loses nothing, then exit 143
//! (130 for SIGINT), saying what they did.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use rustix::process::Signal;

use super::{LOGGER_LINES, World, logged, logger, s, show};
use crate::common::{bin, catches, has_open_under, shell_status};
use crate::require_root;

/// Where a disable is when the signal comes.
#[derive(Debug, Clone, Copy)]
enum Point {
    /// As soon as it handles the signal (its sync not begun).
    Started,
    /// Its tmpfs detached, catching up what the writer wrote since.
    Detached,
}

fn tmpfs_on(dir: &Path) -> bool {
    super::findmnt_fstype(dir).as_deref() == Some("tmpfs")
}

/// Run `args` (with the world's registry) and send `sig` at `point`.
fn signal_at(w: &World, args: &[&str], sig: Signal, point: Point) -> Output {
    let mut child = bin()
        .env("TMPFSCTL_PERSIST_REGISTRY", &w.registry)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        let ready = catches(pid, sig.as_raw())
            && match point {
                Point::Started => true,
                Point::Detached => !tmpfs_on(&w.dir),
            };
        if ready {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(pid as i32).unwrap(),
                sig,
            );
            break;
        }
        std::thread::yield_now();
    }
    child.wait_with_output().unwrap()
}

#[test]
fn sigterm_or_sigint_during_disable_loses_no_line_of_a_writer() {
    require_root!();
    for (sig, point, code) in [
        (Signal::INT, Point::Started, 130),
        (Signal::TERM, Point::Started, 143),
        (Signal::TERM, Point::Detached, 143),
    ] {
        let w = World::new();
        let path = w.dir.join("app.log");
        std::fs::write(&path, b"").unwrap();
        w.enable();
        let h = logger(&path);
        std::thread::sleep(Duration::from_millis(100));
        let o = signal_at(&w, &["persist", "disable", s(&w.dir), "--yes"], sig, point);
        h.join().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            shell_status(o.status),
            code,
            "{sig:?} {point:?}: {}",
            show(&o)
        );
        if sig == Signal::TERM {
            assert_eq!(
                o.status.code(),
                Some(143),
                "exited, not killed: {}",
                show(&o)
            );
        }
        assert!(err.contains("disable"), "says what was done: {err}");
        // Rolled back (DIR on its tmpfs) or finished (DIR on disk): every
        // line in the file DIR shows now.
        let got = logged(&path);
        assert_eq!(
            got,
            (0..LOGGER_LINES).collect::<Vec<_>>(),
            "{sig:?} {point:?}: {} lines lost; {err}",
            LOGGER_LINES as usize - got.len()
        );
        match point {
            Point::Started => assert!(tmpfs_on(&w.dir), "rolled back: {err}"),
            Point::Detached => assert!(!tmpfs_on(&w.dir), "finished: {err}"),
        }
    }
}

#[test]
fn sigterm_during_enable_leaves_dir_untouched_and_no_temp_object() {
    require_root!();
    let w = World::new();
    let chunk: Vec<u8> = (0..4u32 << 20).map(|i| (i % 251) as u8).collect();
    for i in 0..40 {
        std::fs::write(w.dir.join(format!("f{i}")), &chunk).unwrap();
    }
    let args = [
        "persist",
        "enable",
        s(&w.dir),
        "--store",
        s(&w.store),
        "--size",
        "512M",
        "--boot",
        "none",
        "--yes",
    ];
    let mut child = bin()
        .env("TMPFSCTL_PERSIST_REGISTRY", &w.registry)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    while !(catches(pid, libc::SIGTERM) && has_open_under(pid, &w.dir))
        && child.try_wait().unwrap().is_none()
    {
        std::thread::yield_now();
    }
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        Signal::TERM,
    );
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("enable stopped"), "{err}");
    assert!(!tmpfs_on(&w.dir), "nothing mounted");
    for i in 0..40 {
        assert_eq!(std::fs::read(w.dir.join(format!("f{i}"))).unwrap(), chunk);
    }
    let temps: Vec<String> = std::fs::read_dir(w.store.join("objects"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".tmp-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(temps.is_empty(), "left {temps:?}");
    // The rerun completes it.
    let o = w.run(&args);
    assert!(o.status.success(), "{}", show(&o));
    assert!(tmpfs_on(&w.dir));
}
