//! `run`: exit codes and signals pass through, the scratch is private and gone
//! after every kind of exit.

use super::*;

#[test]
fn exit_codes_propagate_including_signals() {
    for (script, code, summary) in [
        ("exit 0", 0, "CMD exit 0"),
        ("exit 7", 7, "CMD exit 7"),
        ("kill -TERM $$", 143, "killed by SIGTERM (status 143)"),
        ("kill -KILL $$", 137, "killed by SIGKILL (status 137)"),
    ] {
        let o = tmpfsctl(&["run", "--size", "8M", "--", "sh", "-c", script]);
        assert_eq!(o.status.code(), Some(code), "{script}: {}", stderr(&o));
        assert!(stderr(&o).contains(summary), "{script}: {}", stderr(&o));
    }
    let o = tmpfsctl(&["run", "--size", "8M", "--", "/no/such/program"]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot run /no/such/program"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn environment_cd_and_a_real_private_tmpfs() {
    require_root!();
    let here = std::env::current_dir().unwrap();
    let o = tmpfsctl(&[
        "run",
        "--size",
        "8M",
        "--cd",
        "--json",
        "fd:2",
        "--quiet",
        "--",
        "sh",
        "-c",
        "echo \"$TMPDIR|$TMP|$TEMP|$TMPFSCTL_WORKSPACE|$(pwd)|$(stat -f -c %T .)|$(df -B1 --output=size . | tail -1)\"",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = stdout(&o);
    let f: Vec<&str> = line.trim().split('|').collect();
    assert_eq!(f[..5], [ROOT_ANCHOR; 5], "{line}");
    assert_eq!(f[5], "tmpfs", "{line}");
    assert_eq!(f[6].trim(), (8u64 << 20).to_string(), "{line}");
    let j: serde_json::Value = serde_json::from_str(&stderr(&o)).unwrap();
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["mode"], "private-mount");
    assert_eq!(j["size_bytes"], 8u64 << 20);
    assert_eq!(j["cap_enforced"], true);
    assert_eq!(j["removed"], true);
    // Without --cd the working directory is left alone.
    let o = tmpfsctl(&["run", "-q", "--size", "8M", "--", "pwd"]);
    assert_eq!(stdout(&o).trim(), here.to_str().unwrap());
}

#[test]
fn no_scratch_after_normal_exit() {
    require_root!();
    let (mut child, _, _, _rest) = start(&[
        "run",
        "--size",
        "16M",
        "--",
        "sh",
        "-c",
        "head -c 1M /dev/urandom > $TMPDIR/data; echo $$; read x || true; exit 0",
    ]);
    let tag = format!("tmpfsctl-{}", child.id());
    assert!(
        !mounts_tagged(&tag).is_empty(),
        "the running scratch should be found"
    );
    assert!(
        anchor_is_empty(ROOT_ANCHOR),
        "the scratch must not show in the normal namespace"
    );
    // EOF on CMD's stdin ends it normally.
    drop(child.stdin.take());
    let (st, err) = finish(child);
    assert!(st.success(), "{err}");
    assert!(err.contains("peak 1.00 MiB"), "{err}");
    assert!(mounts_tagged(&tag).is_empty(), "{:?}", mounts_tagged(&tag));
    assert!(anchor_is_empty(ROOT_ANCHOR));
}

#[test]
fn no_scratch_after_cmd_is_sigkilled() {
    require_root!();
    let (child, cmd_pid, _, _rest) = start(&[
        "run",
        "--size",
        "16M",
        "--",
        "sh",
        "-c",
        "head -c 1M /dev/urandom > $TMPDIR/d; echo $$; exec sleep 60",
    ]);
    let tag = format!("tmpfsctl-{}", child.id());
    assert!(!mounts_tagged(&tag).is_empty());
    kill(cmd_pid, "KILL");
    let (st, err) = finish(child);
    assert_eq!(st.code(), Some(137), "{err}");
    assert!(err.contains("peak 1.00 MiB"), "{err}");
    assert!(mounts_tagged(&tag).is_empty(), "{:?}", mounts_tagged(&tag));
    assert!(anchor_is_empty(ROOT_ANCHOR));
}

#[test]
fn signals_to_tmpfsctl_reach_cmd_then_cleanup_runs() {
    require_root!();
    for (sig, num) in [("INT", 2), ("TERM", 15), ("HUP", 1)] {
        let (child, cmd_pid, _, _rest) = start(&[
            "run",
            "--size",
            "16M",
            "--",
            "sh",
            "-c",
            "echo $$; exec sleep 60",
        ]);
        wait_exec(cmd_pid, "sleep");
        let tag = format!("tmpfsctl-{}", child.id());
        assert!(!mounts_tagged(&tag).is_empty());
        kill(child.id() as i32, sig);
        let (st, err) = finish(child);
        assert_eq!(st.code(), Some(128 + num), "SIG{sig}: {err}");
        assert!(err.contains(&format!("killed by SIG{sig}")), "{err}");
        assert!(
            mounts_tagged(&tag).is_empty(),
            "SIG{sig}: {:?}",
            mounts_tagged(&tag)
        );
    }
    // A CMD that handles the signal decides the exit status itself.
    let (child, _, _, _rest) = start(&[
        "run",
        "--size",
        "16M",
        "--",
        "sh",
        "-c",
        "trap 'echo got-term; exit 42' TERM; echo $$; while :; do sleep 0.05; done",
    ]);
    kill(child.id() as i32, "TERM");
    let (st, err) = finish(child);
    assert_eq!(st.code(), Some(42), "{err}");
}
