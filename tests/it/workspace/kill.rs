//! `run` takes down CMD and all it started, even when tmpfsctl itself is killed,
//! and the next run removes what a killed one left.

use super::*;

#[test]
fn sigkilled_tmpfsctl_takes_cmd_and_what_it_started() {
    require_root!();
    // CMD starts a daemon (setsid, away from CMD), then becomes `sleep`.
    let (mut child, cmd_pid, line, _rest) = start(&[
        "run",
        "--size",
        "16M",
        "--",
        "sh",
        "-c",
        "head -c 2M /dev/urandom > $TMPDIR/d; setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $$ $!; exec sleep 60",
    ]);
    let daemon: i32 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    wait_exec(cmd_pid, "sleep");
    wait_exec(daemon, "sleep");
    let tag = format!("tmpfsctl-{}", child.id());
    assert!(!mounts_tagged(&tag).is_empty());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        eventually(|| is_gone(cmd_pid)),
        "CMD {cmd_pid} outlived tmpfsctl"
    );
    assert!(
        eventually(|| is_gone(daemon)),
        "CMD's daemon {daemon} outlived tmpfsctl"
    );
    assert!(
        eventually(|| mounts_tagged(&tag).is_empty()),
        "scratch still mounted: {:?}",
        mounts_tagged(&tag)
    );
    assert!(anchor_is_empty(ROOT_ANCHOR));
    assert!(
        eventually(|| run_cgroups(child.id()).is_empty()),
        "cgroup left: {:?}",
        run_cgroups(child.id())
    );
}

#[test]
fn a_killed_runs_directory_is_removed_by_the_next_run() {
    require_root!();
    // A place of its own: any --no-namespace run in the same place (other
    // tests, at the same time) would remove the killed run's scratch too.
    let place = tempfile::tempdir().unwrap();
    // Used only as a runtime directory should be: the caller's, mode 0700.
    std::fs::set_permissions(place.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut cmd = bin();
    cmd.env("XDG_RUNTIME_DIR", place.path());
    let (mut child, cmd_pid, line, _rest) = start_in(
        cmd,
        &[
            "run",
            "--no-namespace",
            "--size",
            "16M",
            "--",
            "sh",
            "-c",
            "mkdir $TMPDIR/sub; echo x > $TMPDIR/sub/f; echo $$ $TMPDIR; exec sleep 60",
        ],
    );
    let scratch = PathBuf::from(line.split_whitespace().nth(1).unwrap());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        eventually(|| is_gone(cmd_pid)),
        "CMD {cmd_pid} outlived tmpfsctl"
    );
    assert!(scratch.join("sub/f").exists(), "{}", scratch.display());
    assert!(scratch.starts_with(place.path()), "{}", scratch.display());
    let o = bin()
        .env("XDG_RUNTIME_DIR", place.path())
        .args(["run", "--no-namespace", "--size", "1M", "--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!scratch.exists(), "{} left behind", scratch.display());
    assert!(
        stderr(&o).contains(&format!(
            "removed {}, the scratch of a tmpfsctl",
            scratch.display()
        )),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_daemon_started_by_cmd_is_killed_at_the_end_and_named() {
    require_root!();
    let t = tempfile::tempdir().unwrap();
    let pidfile = t.path().join("daemon.pid");
    let p = pidfile.display();
    // Double fork and setsid: the daemon is not CMD's child, nor in its
    // session or process group. CMD waits for its pid file, then exits 0.
    // The file is written by the shell itself (one write, no `mv` process
    // that could still be running when CMD ends and be killed beside it).
    let script = format!(
        "(setsid sh -c 'echo $$ > {p}; exec sleep 60' </dev/null >/dev/null 2>&1 &); \
         while [ ! -s {p} ]; do sleep 0.01; done"
    );
    for extra in [vec![], vec!["--no-namespace"]] {
        let _ = std::fs::remove_file(&pidfile);
        let mut args = vec!["run", "--size", "8M"];
        args.extend(&extra);
        args.extend(["--", "sh", "-c", &script]);
        let o = tmpfsctl(&args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            eventually(|| is_gone(pid)),
            "{extra:?}: daemon {pid} survived the run"
        );
        assert!(
            stderr(&o).contains(&format!(
                "CMD left 1 process running when it ended, killed: {pid} ("
            )),
            "{extra:?}: {}",
            stderr(&o)
        );
    }
    // Unprivileged with --no-namespace there is neither a cgroup nor a PID
    // namespace: orphans come back to tmpfsctl (a child subreaper) and are
    // killed all the same.
    if Command::new("setpriv").arg("--version").output().is_err() {
        crate::skip!("the unprivileged half: setpriv (util-linux) is not installed");
    }
    let b = nobody_bin(t.path());
    let _ = std::fs::remove_file(&pidfile);
    let o = as_nobody(
        &b,
        &[
            "run",
            "--no-namespace",
            "--size",
            "8M",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert!(o.status.success(), "nobody: {}", stderr(&o));
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(eventually(|| is_gone(pid)), "nobody: daemon {pid} survived");
    let err = stderr(&o);
    assert!(
        err.contains("no cgroup for CMD") && err.contains("no PID namespace (--no-namespace"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "CMD left 1 process running when it ended, killed: {pid} ("
        )),
        "{err}"
    );
}
