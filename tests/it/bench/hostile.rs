//! `bench` as root into a directory uid 65534 owns: while it runs, uid 65534
//! renames every scratch directory bench makes there and puts a link to a
//! root-only directory at its name. Nothing lands in the root-only
//! directory (no benchmark file, no `.stock`), and bench completes.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{TestMount, bin, stderr};
use crate::require_root;

#[test]
fn a_scratch_swapped_for_a_link_by_the_directorys_owner_is_not_followed() {
    require_root!();
    let m = TestMount::tmpfs("size=256M");
    let victim = m.path.join("root-only");
    std::fs::create_dir(&victim).unwrap();
    std::fs::set_permissions(&victim, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let theirs = m.path.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let swap = format!(
        "cd {} || exit 1; while :; do for d in .tmpfsctl-bench-*; do \
         if [ -d \"$d\" ] && [ ! -L \"$d\" ]; then mv \"$d\" \"moved$d\" && ln -s {} \"$d\"; fi; \
         done; sleep 0.01; done",
        theirs.display(),
        victim.display()
    );
    let mut attacker = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "sh",
            "-c",
            &swap,
        ])
        .current_dir("/")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = bin()
        .args([
            "bench",
            "--quick",
            "--size",
            "8M",
            "--ceiling-size",
            "32M",
            "--no-latency",
            "--max-time",
            "0.2s",
        ])
        .arg(&theirs)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() && t.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let o = child.wait_with_output().unwrap();
    let _ = attacker.kill();
    let _ = attacker.wait();
    let left: Vec<_> = std::fs::read_dir(&victim)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "root wrote where the link led: {left:?}; {}",
        stderr(&o)
    );
    // Renaming its scratch changes nothing for bench: it completes.
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The renamed scratch directories are root's, emptied.
    for e in std::fs::read_dir(&theirs).unwrap().flatten() {
        let p = e.path();
        if std::fs::symlink_metadata(&p).unwrap().is_dir() {
            assert_eq!(std::fs::read_dir(&p).unwrap().count(), 0, "{}", p.display());
        }
    }
}
