//! Unprivileged runs (no cgroup to hold CMD's tree): CMD runs in a PID
//! namespace whose init dies with tmpfsctl, so nothing CMD started survives
//! tmpfsctl, not even a kill -9.

use std::path::Path;
use std::process::Command;

use super::{
    anchor_is_empty, eventually, mounts_tagged, nobody_bin, read_json, start_in, stderr, stdout,
};
use crate::require_root;

/// Live (not zombie) processes with `arg` as one of their arguments.
fn procs_with_arg(arg: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes()) && !super::is_gone(pid) {
            found.push(pid);
        }
    }
    found
}

/// A `sleep` duration no other process on the machine uses: the mark that
/// finds CMD's processes from outside its namespace.
fn marker(n: u32) -> String {
    format!("100{n}.{}", std::process::id())
}

fn nobody(b: &Path) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(b)
        .env_remove("XDG_RUNTIME_DIR")
        .current_dir("/");
    c
}

/// False (with the reason printed) where the test cannot run as meant.
fn userns_usable(b: &Path, name: &str) -> bool {
    if Command::new("setpriv").arg("--version").output().is_err() {
        crate::skip_part!("{name}: setpriv (util-linux) is not installed");
        return false;
    }
    let o = nobody(b)
        .args([
            "run", "--json", "fd:1", "--quiet", "--size", "1M", "--", "true",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    if j["mode"] != "user-namespace" {
        crate::skip_part!(
            "{name}: the kernel refuses unprivileged user namespaces here: {}",
            j["notes"]
        );
        return false;
    }
    true
}

#[test]
fn unprivileged_kill_9_of_tmpfsctl_takes_cmd_and_its_daemons() {
    require_root!();
    let t = tempfile::tempdir().unwrap();
    let b = nobody_bin(t.path());
    if !userns_usable(
        &b,
        "unprivileged_kill_9_of_tmpfsctl_takes_cmd_and_its_daemons",
    ) {
        return;
    }
    let (daemon_mark, cmd_mark) = (marker(1), marker(2));
    let script = format!(
        "head -c 1M /dev/zero > $TMPDIR/d; setsid sleep {daemon_mark} </dev/null >/dev/null 2>&1 & \
         echo $$ $!; exec sleep {cmd_mark}"
    );
    let (mut child, cmd_pid, _line, _rest) = start_in(
        nobody(&b),
        &["run", "--size", "8M", "--", "sh", "-c", &script],
    );
    // CMD sees itself as the second process of its own namespace, after the init.
    assert_eq!(cmd_pid, 2, "CMD is not in a PID namespace of its own");
    assert!(
        eventually(
            || procs_with_arg(&daemon_mark).len() == 1 && procs_with_arg(&cmd_mark).len() == 1
        ),
        "CMD and its daemon never both ran"
    );
    let tag = format!("tmpfsctl-{}", child.id());
    assert!(
        !mounts_tagged(&tag).is_empty(),
        "the scratch search finds nothing"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    for m in [&daemon_mark, &cmd_mark] {
        assert!(
            eventually(|| procs_with_arg(m).is_empty()),
            "sleep {m} outlived tmpfsctl: {:?}",
            procs_with_arg(m)
        );
    }
    assert!(
        eventually(|| mounts_tagged(&tag).is_empty()),
        "scratch still mounted: {:?}",
        mounts_tagged(&tag)
    );
    assert!(anchor_is_empty("/dev/shm/tmpfsctl-65534"));
    // The next run starts clean and ends clean.
    let js = t.path().join("next.json");
    let o = nobody(&b)
        .args(["run", "--size", "1M", "--json", js.to_str().unwrap(), "--"])
        .args(["sh", "-c", "ls -A $TMPDIR | wc -l"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        "0",
        "the next run's scratch is not empty"
    );
    assert_eq!(read_json(&js)["removed"], true);
    assert!(anchor_is_empty("/dev/shm/tmpfsctl-65534"));
}

#[test]
fn unprivileged_daemons_are_named_and_killed_at_the_end_and_ps_shows_the_namespace() {
    require_root!();
    let t = tempfile::tempdir().unwrap();
    let b = nobody_bin(t.path());
    if !userns_usable(
        &b,
        "unprivileged_daemons_are_named_and_killed_at_the_end_and_ps_shows_the_namespace",
    ) {
        return;
    }
    let mark = marker(3);
    // A double-forked setsid daemon, then CMD counts the processes it can
    // see (init, sh, the daemon, ls) and exits 7.
    let script = format!(
        "(setsid sh -c 'exec sleep {mark}' </dev/null >/dev/null 2>&1 &); \
         while ! pgrep -f '^sleep {mark}' >/dev/null; do sleep 0.01; done; \
         echo $$; ls /proc | grep -c '^[0-9]'; exit 7"
    );
    let o = nobody(&b)
        .args(["run", "--size", "4M", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(7), "{err}");
    let out = stdout(&o);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("2"), "{out}");
    let seen: u32 = lines.next().unwrap().trim().parse().unwrap();
    assert!(
        seen <= 5,
        "CMD sees {seen} processes: not its own namespace"
    );
    assert!(
        err.contains("CMD left 1 process running when it ended, killed: ")
            && err.contains(" (sleep)"),
        "{err}"
    );
    assert!(!err.contains("no cgroup for CMD"), "{err}");
    assert!(
        eventually(|| procs_with_arg(&mark).is_empty()),
        "the daemon survived the run"
    );
}
