//! What another user (uid 65534) or a blunt kill can do to a run: a group
//! SIGKILL, a planted `--json` symlink, a foreign `$XDG_RUNTIME_DIR`, a cap
//! that means "no limit", a flood of empty files.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use super::{
    eventually, is_gone, mounts_tagged, nobody_bin, read_json, run_cgroups, start_in, stderr,
    stdout, wait_exec,
};
use crate::common::{bin, tmpfsctl};
use crate::require_root;

/// `timeout -s KILL` and `kill -9 -PGID` hit tmpfsctl's whole process group
/// at once; CMD's setsid daemon, its cgroup and the scratch must still go.
#[test]
fn a_sigkill_of_the_whole_process_group_leaves_nothing() {
    require_root!();
    let mut cmd = bin();
    cmd.process_group(0);
    let (mut child, cmd_pid, line, _rest) = start_in(
        cmd,
        &[
            "run",
            "--size",
            "16M",
            "--",
            "sh",
            "-c",
            "head -c 1M /dev/urandom > $TMPDIR/d; setsid sleep 61 </dev/null >/dev/null 2>&1 & echo $$ $!; exec sleep 61",
        ],
    );
    let daemon: i32 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    wait_exec(cmd_pid, "sleep");
    wait_exec(daemon, "sleep");
    let pgid = child.id() as i32;
    let tag = format!("tmpfsctl-{pgid}");
    assert!(!mounts_tagged(&tag).is_empty());
    assert!(!run_cgroups(child.id()).is_empty());
    // SAFETY: kill(2) of the process group this test just created.
    assert_eq!(unsafe { libc::kill(-pgid, libc::SIGKILL) }, 0);
    child.wait().unwrap();
    assert!(eventually(|| is_gone(cmd_pid)), "CMD {cmd_pid} survived");
    assert!(
        eventually(|| is_gone(daemon)),
        "CMD's daemon {daemon} survived a group SIGKILL"
    );
    assert!(
        eventually(|| run_cgroups(child.id()).is_empty()),
        "cgroup left: {:?}",
        run_cgroups(child.id())
    );
    assert!(
        eventually(|| mounts_tagged(&tag).is_empty()),
        "scratch still mounted: {:?}",
        mounts_tagged(&tag)
    );
}

/// CMD (as uid 65534, in a directory it owns) turns the `--json` file into a
/// symlink to a root-only file; root writes the summary after CMD ended.
#[test]
fn a_json_symlink_planted_by_cmd_is_not_followed() {
    require_root!();
    let t = tempfile::tempdir().unwrap();
    let secret = t.path().join("secret");
    std::fs::write(&secret, b"root only\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let theirs = t.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let js = theirs.join("summary.json");
    let o = tmpfsctl(&[
        "run",
        "--size",
        "4M",
        "--json",
        js.to_str().unwrap(),
        "--",
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
        "ln",
        "-s",
        secret.to_str().unwrap(),
        js.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&secret).unwrap(), b"root only\n");
    assert_eq!(std::fs::metadata(&secret).unwrap().mode() & 0o777, 0o600);
    let m = std::fs::symlink_metadata(&js).unwrap();
    assert!(m.is_file(), "the planted link was kept");
    assert_eq!(read_json(&js)["schema_version"], 1);
}

/// `sudo -E` keeps the user's XDG_RUNTIME_DIR: root must not make its
/// scratch where that user can swap it.
#[test]
fn a_runtime_dir_of_another_user_is_not_used() {
    require_root!();
    let t = tempfile::tempdir().unwrap();
    let xdg = t.path().join("run-user-65534");
    std::fs::create_dir(&xdg).unwrap();
    std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&xdg, Some(65534), Some(65534)).unwrap();
    let js = t.path().join("s.json");
    let o = bin()
        .env("XDG_RUNTIME_DIR", &xdg)
        .args(["run", "--no-namespace", "--size", "4M", "--json"])
        .arg(&js)
        .args(["--", "sh", "-c", "echo $TMPDIR"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let used = stdout(&o);
    assert!(!used.starts_with(xdg.to_str().unwrap()), "{used}");
    let j = read_json(&js);
    assert!(
        !j["path"]
            .as_str()
            .unwrap()
            .starts_with(xdg.to_str().unwrap()),
        "{j}"
    );
    assert!(
        stderr(&o).contains("XDG_RUNTIME_DIR not used") && stderr(&o).contains("uid 65534"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_dir(&xdg).unwrap().count(), 0);
    // A directory of root's own, but open to others: not used either.
    let open = t.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = bin()
        .env("XDG_RUNTIME_DIR", &open)
        .args(["run", "--no-namespace", "--size", "4M", "--"])
        .args(["sh", "-c", "echo $TMPDIR"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !stdout(&o).starts_with(open.to_str().unwrap()),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_size_beyond_ram_and_swap_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let marker = t.path().join("ran");
    for size in ["18446744073709551615", "16383P"] {
        let o = tmpfsctl(&[
            "run",
            "--size",
            size,
            "--",
            "touch",
            marker.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{size}: {}", stderr(&o));
        assert!(stderr(&o).contains("RAM + swap"), "{size}: {}", stderr(&o));
        assert!(!marker.exists(), "{size}: CMD ran");
    }
}

/// As uid 65534 (a user-namespace scratch): empty files cost no `size=`
/// but about 1 KiB of kernel memory each; under --size 1M they stop at
/// 1M / 4 KiB = 256 inodes (the root directory is one).
#[test]
fn empty_files_stop_at_one_inode_per_4_kib_of_the_cap() {
    require_root!();
    let t = tempfile::tempdir().unwrap();
    let b = nobody_bin(t.path());
    let js = t.path().join("s.json");
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&b)
        .args(["run", "--size", "1M", "--json"])
        .arg(&js)
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 10000 ] && printf '' > $TMPDIR/f$i; do i=$((i+1)); done; echo $i",
        ])
        .env_remove("XDG_RUNTIME_DIR")
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let j = read_json(&js);
    if j["mode"] == "directory" {
        crate::skip!("no user namespace for uid 65534 here, so no tmpfs: {j}");
    }
    let made: u64 = stdout(&o).trim().parse().unwrap();
    assert_eq!(made, 255, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("No space left on device"),
        "{}",
        stderr(&o)
    );
    assert_eq!(j["peak_inodes"], 255, "{j}");
}
