//! uid 65534 makes another user's per-user places in /dev/shm first
//! (`tmpfsctl-UID` and `tmpfsctl-UID-scratch`, world-writable): that user's
//! runs still get a private tmpfs with CMD in its own PID namespace (or,
//! with --no-namespace, a RAM-backed directory), and the notes say what was
//! taken and what to remove.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::{nobody_bin, read_json, stderr, stdout};
use crate::common::as_nobody;
use crate::require_root;

/// A uid with no other use on the test machine: the victim.
const VICTIM: u32 = 4242;

fn as_victim(b: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args([
            &format!("--reuid={VICTIM}"),
            &format!("--regid={VICTIM}"),
            "--clear-groups",
            "--",
        ])
        .arg(b)
        .args(args)
        .env_remove("XDG_RUNTIME_DIR")
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn fresh_anchors_left() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("tmpfsctl-{VICTIM}-anchor-")))
        .collect()
}

/// CMD's PID as CMD sees it: 2 in a PID namespace (its init is 1).
fn cmd_pid(o: &Output) -> u32 {
    stdout(o)
        .lines()
        .find_map(|l| l.strip_prefix("pid="))
        .unwrap_or_else(|| panic!("no pid= line: {}", stderr(o)))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn squatted_per_user_places_block_no_run_and_no_pid_namespace() {
    require_root!();
    let anchor = format!("/dev/shm/tmpfsctl-{VICTIM}");
    let scratch = format!("{anchor}-scratch");
    for p in [&anchor, &scratch] {
        let _ = std::fs::remove_dir_all(p);
    }
    let o = as_nobody(&format!("mkdir -m 0777 {anchor} {scratch}"));
    assert!(o.status.success(), "{}", stderr(&o));
    let t = tempfile::tempdir().unwrap();
    let b = nobody_bin(t.path());
    let js = t.path().join("s.json");

    let o = as_victim(
        &b,
        &[
            "run",
            "--size",
            "1M",
            "--json",
            js.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo pid=$$",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = read_json(&js);
    assert_eq!(j["mode"], "user-namespace", "{j}");
    let e = stderr(&o);
    assert!(
        e.contains(&format!("{anchor} belongs to uid 65534")) && e.contains("rm -r"),
        "{e}"
    );
    assert!(!e.contains("no PID namespace"), "{e}");
    assert_eq!(cmd_pid(&o), 2, "CMD not in its own PID namespace: {e}");
    assert!(
        fresh_anchors_left().is_empty(),
        "{:?}",
        fresh_anchors_left()
    );

    // A plain directory (and, as asked, no namespace): RAM-backed still,
    // not in the squatter's directory, and said so.
    let o = as_victim(
        &b,
        &[
            "run",
            "--no-namespace",
            "--json",
            js.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo pid=$$",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = read_json(&js);
    assert_eq!(j["mode"], "directory", "{j}");
    assert_eq!(j["ram_backed"], true, "{j}");
    let e = stderr(&o);
    assert!(
        e.contains(&format!("{scratch} belongs to uid 65534")),
        "{e}"
    );
    assert!(e.contains("made directly in /dev/shm"), "{e}");
    let used = j["path"].as_str().unwrap();
    assert!(
        used.starts_with(&format!("/dev/shm/tmpfsctl-{VICTIM}-")),
        "{used}"
    );
    // Nothing the squatter owns was used or changed.
    for p in [&anchor, &scratch] {
        assert_eq!(std::fs::read_dir(p).unwrap().count(), 0, "{p}");
    }
    for p in [&anchor, &scratch] {
        let _ = std::fs::remove_dir_all(p);
    }
}

#[test]
fn keep_dir_reaches_the_terminal_escaped() {
    require_root!();
    let t = tempfile::tempdir().unwrap();
    let keep = t.path().join("k\x1b]0;pwned\x07");
    let mut arg = std::ffi::OsString::from("--keep=");
    arg.push(&keep);
    let o = crate::common::bin()
        .args(["run", "--size", "1M"])
        .arg(&arg)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("scratch kept in"), "{e}");
    assert!(!e.contains('\x1b') && !e.contains('\x07'), "{e:?}");
    assert!(keep.is_dir());
}
