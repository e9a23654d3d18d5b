//! Integration tests for `workspace`: `tmpfsctl run` and `tmpfsctl shell`.
//!
//! "No scratch remains" is checked where a private scratch could hide: every
//! tmpfsctl mount is named `tmpfsctl-<pid of tmpfsctl>` (its source), and
//! every /proc/PID/mountinfo on the machine (every mount namespace) is
//! searched for it; each such test first sees it present (so the search is
//! known to work) and then gone.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::Duration;

use crate::common::{bin, is_root, json, tmpfsctl};
use crate::require_root;

mod pidns;
mod secure;

const ROOT_ANCHOR: &str = "/run/tmpfsctl";

pub(super) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(super) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Mount lines in any namespace whose source is `tag`.
pub(super) fn mounts_tagged(tag: &str) -> Vec<String> {
    let needle = format!(" - tmpfs {tag} ");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // Processes come and go while we look; unreadable ones are skipped.
        if let Ok(text) = std::fs::read_to_string(e.path().join("mountinfo")) {
            for l in text.lines().filter(|l| l.contains(&needle)) {
                found.push(format!("pid {}: {l}", name.to_string_lossy()));
            }
        }
    }
    found
}

/// Poll `f` every 10 ms, for at most 20 s (a bound against hangs, not a timing assert).
pub(super) fn eventually(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..2000 {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

pub(super) fn anchor_is_empty(p: &str) -> bool {
    std::fs::read_dir(p)
        .map(|mut d| d.next().is_none())
        .unwrap_or(true)
}

/// Give tmpfsctl (and so CMD) default signal dispositions: a test binary
/// started as a background job inherits SIGINT ignored, which CMD would
/// inherit in turn (correctly, as with nohup), hiding what is tested here.
fn default_signals(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only signal(2) between fork and exec, async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}

/// Start tmpfsctl with CMD printing its pid (and whatever else) on the first
/// stdout line once its setup is done; returns (tmpfsctl, CMD pid, first line, rest of stdout).
fn start(args: &[&str]) -> (Child, i32, String, BufReader<ChildStdout>) {
    start_in(bin(), args)
}

/// [`start`] with a prepared command (environment, ...).
pub(super) fn start_in(
    mut cmd: Command,
    args: &[&str],
) -> (Child, i32, String, BufReader<ChildStdout>) {
    default_signals(&mut cmd);
    let mut child = cmd
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let pid: i32 = line
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("CMD did not print its pid first: {line:?}"));
    (child, pid, line, out)
}

/// Wait until `pid` has exec'd `comm`: a shell that gets SIGINT between
/// `echo $$` and `exec` may lose it (dash catches SIGINT under -c), which
/// would test the shell, not tmpfsctl.
fn wait_exec(pid: i32, comm: &str) {
    let ok = eventually(|| {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm)
    });
    assert!(ok, "pid {pid} never became {comm}");
}

fn kill(pid: i32, sig: &str) {
    let st = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(st.success(), "kill -{sig} {pid}");
}

fn finish(mut child: Child) -> (std::process::ExitStatus, String) {
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap(), err)
}

pub(super) fn read_json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("no JSON summary at {}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON ({e}): {text}"))
}

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

/// True once `pid` has exited (gone, or a zombie waiting for init).
pub(super) fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(st) => st
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// The per-run cgroup directories named after tmpfsctl's `pid`, wherever
/// cgroup v2 is mounted.
fn run_cgroups(pid: u32) -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let name = format!("tmpfsctl-run-{pid}");
    let mut found = Vec::new();
    for l in info.lines().filter(|l| l.contains(" - cgroup2 ")) {
        let mp = l.split(' ').nth(4).unwrap();
        for e in walkdir(Path::new(mp)) {
            if e.file_name().is_some_and(|n| n == name.as_str()) {
                found.push(e);
            }
        }
    }
    found
}

fn walkdir(p: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.push(e.path());
                out.extend(walkdir(&e.path()));
            }
        }
    }
    out
}

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
    let script = format!(
        "(setsid sh -c 'echo $$ > {p}.tmp; mv {p}.tmp {p}; exec sleep 60' </dev/null >/dev/null 2>&1 &); \
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
        eprintln!("SKIP the unprivileged half: setpriv (util-linux) is not installed");
        return;
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

#[test]
fn cleanup_detaches_a_mount_made_inside_and_keeps_its_files() {
    require_root!();
    // One outside directory on the scratch's own filesystem (a device check
    // alone would not see the mount), one elsewhere.
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let disk = tempfile::tempdir().unwrap();
    for outside in [shm.path(), disk.path()] {
        std::fs::write(outside.join("precious"), "keep me").unwrap();
        std::fs::create_dir_all(outside.join("sub")).unwrap();
        std::fs::write(outside.join("sub/also"), "keep me too").unwrap();
        for extra in [vec!["--no-namespace"], vec![]] {
            let t = tempfile::tempdir().unwrap();
            let js = t.path().join("s.json");
            let o_ = outside.display();
            let script = format!(
                "set -e; mkdir $TMPDIR/b $TMPDIR/b2; mount --bind {o_} $TMPDIR/b; mount --bind {o_}/sub $TMPDIR/b2; ln -s {o_} $TMPDIR/l"
            );
            let mut args = vec!["run", "--size", "8M", "--json", js.to_str().unwrap()];
            args.extend(&extra);
            args.extend(["--", "sh", "-c", &script]);
            let o = tmpfsctl(&args);
            assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
            for (f, text) in [("precious", "keep me"), ("sub/also", "keep me too")] {
                assert_eq!(
                    std::fs::read_to_string(outside.join(f)).ok().as_deref(),
                    Some(text),
                    "{extra:?} {}: {f} lost; {}",
                    outside.display(),
                    stderr(&o)
                );
            }
            let j = read_json(&js);
            assert_eq!(j["removed"], true, "{j}");
            let scratch = j["path"].as_str().unwrap();
            let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
            assert!(
                !info.contains(&format!(" {scratch}/")),
                "mount left below the scratch: {info}"
            );
            if !extra.is_empty() {
                assert!(!Path::new(scratch).exists(), "{scratch} left behind");
            }
            let err = stderr(&o);
            assert!(
                err.contains(
                    "CMD left 2 mounts inside the scratch: detached without touching their files"
                ),
                "{extra:?}: {err}"
            );
            assert!(err.contains(&format!("{scratch}/b2")), "{err}");
        }
    }
}

#[test]
fn the_cap_gives_enospc_and_says_so() {
    require_root!();
    let t = tempfile::tempdir().unwrap();
    let js = t.path().join("s.json");
    let o = tmpfsctl(&[
        "run",
        "--size",
        "4M",
        "--json",
        js.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "dd if=/dev/zero of=$TMPDIR/f bs=1M count=8 2>&1; echo dd=$?",
    ]);
    let out = stdout(&o);
    assert!(out.contains("No space left on device"), "{out}");
    assert!(!out.contains("dd=0"), "{out}");
    assert!(
        stderr(&o).contains("workspace full at 4.00 MiB"),
        "{}",
        stderr(&o)
    );
    let j = read_json(&js);
    assert_eq!(j["full"], true);
    assert_eq!(j["peak_used_bytes"], 4u64 << 20);
    // Inside the cap nothing is said.
    let o = tmpfsctl(&[
        "run",
        "--size",
        "4M",
        "--",
        "sh",
        "-c",
        "head -c 1M /dev/zero > $TMPDIR/f",
    ]);
    assert!(o.status.success());
    assert!(!stderr(&o).contains("workspace full"), "{}", stderr(&o));
}

#[test]
fn concurrent_runs_do_not_see_each_other() {
    require_root!();
    let (a, a_cmd, _, _rest) = start(&[
        "run",
        "--size",
        "8M",
        "--",
        "sh",
        "-c",
        "echo secret > $TMPDIR/a-secret; echo $$; exec sleep 60",
    ]);
    let o = tmpfsctl(&[
        "run",
        "--size",
        "8M",
        "--",
        "sh",
        "-c",
        "echo $TMPDIR; ls -A $TMPDIR; echo end",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("{ROOT_ANCHOR}\nend\n"),
        "B saw A's scratch"
    );
    // And from outside any scratch the path is just the empty anchor.
    assert!(anchor_is_empty(ROOT_ANCHOR));
    wait_exec(a_cmd, "sleep");
    kill(a.id() as i32, "TERM");
    let (st, _) = finish(a);
    assert_eq!(st.code(), Some(143));
}

fn plant_symlinks_script(outside: &Path) -> String {
    let o = outside.display();
    format!(
        "set -e; ln -s {o} $TMPDIR/dir-link; ln -s {o}/precious $TMPDIR/file-link; mkdir -p $TMPDIR/a/b; \
         ln -s {o} $TMPDIR/a/b/deep-link; ln -s / $TMPDIR/a/root-link; echo junk > $TMPDIR/a/b/junk"
    )
}

#[test]
fn cleanup_never_follows_symlinks_out_of_the_scratch() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("precious"), "keep me").unwrap();
    std::fs::create_dir(outside.path().join("sub")).unwrap();
    std::fs::write(outside.path().join("sub/also"), "keep me too").unwrap();
    let script = plant_symlinks_script(outside.path());
    let t = tempfile::tempdir().unwrap();
    let mut modes = vec![vec!["--no-namespace"]];
    if is_root() {
        modes.push(vec![]);
    }
    for extra in modes {
        let js = t.path().join("s.json");
        let mut args = vec!["run", "--size", "8M", "--json", js.to_str().unwrap()];
        args.extend(&extra);
        args.extend(["--", "sh", "-c", &script]);
        let o = tmpfsctl(&args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let j = read_json(&js);
        assert_eq!(j["removed"], true, "{extra:?}");
        let scratch = PathBuf::from(j["path"].as_str().unwrap());
        if extra.is_empty() {
            assert!(anchor_is_empty(scratch.to_str().unwrap()));
        } else {
            assert_eq!(j["mode"], "directory");
            assert!(!scratch.exists(), "{} left behind", scratch.display());
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("precious")).unwrap(),
            "keep me"
        );
        assert_eq!(
            std::fs::read_to_string(outside.path().join("sub/also")).unwrap(),
            "keep me too"
        );
    }
}

#[test]
fn peak_is_within_5_percent_of_what_was_written() {
    let t = tempfile::tempdir().unwrap();
    let mut modes: Vec<Vec<&str>> = vec![vec!["--no-namespace"]];
    if is_root() {
        modes.push(vec![]);
    }
    let written = 20u64 << 20;
    for extra in modes {
        // Left in place: the reading at CMD's exit must see it.
        // Deleted before exit: only the periodic samples can see it.
        for (what, tail) in [("kept", ""), ("deleted", "; sleep 1; rm $TMPDIR/f")] {
            let js = t.path().join("s.json");
            let mut args = vec!["run", "--size", "64M", "--json", js.to_str().unwrap()];
            args.extend(&extra);
            let script = format!("head -c {written} /dev/urandom > $TMPDIR/f{tail}");
            args.extend(["--", "sh", "-c", &script]);
            let o = tmpfsctl(&args);
            assert!(o.status.success(), "{}", stderr(&o));
            let j = read_json(&js);
            let peak = j["peak_used_bytes"].as_u64().unwrap();
            let lo = written as f64 * 0.95;
            let hi = written as f64 * 1.05;
            assert!(
                (lo..=hi).contains(&(peak as f64)),
                "{extra:?} {what}: peak {peak} vs written {written}: {j}"
            );
            assert!(j["peak_inodes"].as_u64().unwrap() >= 1, "{j}");
            if what == "deleted" {
                assert_eq!(j["final_used_bytes"], 0, "{j}");
            }
        }
    }
}

#[test]
fn soft_cap_directory_mode_warns_and_cleans_up() {
    let t = tempfile::tempdir().unwrap();
    let js = t.path().join("s.json");
    let o = tmpfsctl(&[
        "run",
        "--no-namespace",
        "--size",
        "1M",
        "--json",
        js.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "ls -ld $TMPDIR; head -c 3M /dev/zero > $TMPDIR/f; sleep 0.5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("drwx------ "),
        "scratch must be 0700: {}",
        stdout(&o)
    );
    let err = stderr(&o);
    assert!(err.contains("the size cap is soft"), "{err}");
    assert!(err.contains("over its soft cap of 1.00 MiB"), "{err}");
    let j = read_json(&js);
    assert_eq!(j["mode"], "directory");
    assert_eq!(j["cap_enforced"], false);
    assert_eq!(j["over_soft_cap"], true);
    assert!(!Path::new(j["path"].as_str().unwrap()).exists());
}

#[test]
fn keep_copies_a_private_scratch_to_disk() {
    let t = tempfile::tempdir().unwrap();
    let dest = t.path().join("kept");
    let keep = format!("--keep={}", dest.display());
    let o = tmpfsctl(&[
        "run",
        "--size",
        "8M",
        &keep,
        "--",
        "sh",
        "-c",
        "echo hi > $TMPDIR/a; mkdir $TMPDIR/d; ln -s /etc/hostname $TMPDIR/d/l",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("scratch kept in {}", dest.display())),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(dest.join("a")).unwrap(), "hi\n");
    let l = std::fs::symlink_metadata(dest.join("d/l")).unwrap();
    assert!(
        l.file_type().is_symlink(),
        "symlinks are copied as symlinks"
    );
    // The same DIR again is refused before CMD runs.
    let marker = t.path().join("ran");
    let o = tmpfsctl(&["run", &keep, "--", "touch", marker.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    assert!(!marker.exists(), "CMD must not run after a usage error");
}

#[test]
fn keep_without_a_value_copies_to_a_new_directory() {
    let o = tmpfsctl(&[
        "run",
        "--size",
        "8M",
        "--keep",
        "--",
        "sh",
        "-c",
        "echo hi > $TMPDIR/a",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let kept = err
        .lines()
        .find_map(|l| l.strip_prefix("tmpfsctl: scratch kept in "))
        .unwrap_or_else(|| panic!("no kept path: {err}"));
    let kept = PathBuf::from(kept);
    let text = std::fs::read_to_string(kept.join("a"));
    std::fs::remove_dir_all(&kept).unwrap();
    assert_eq!(text.unwrap(), "hi\n");
}

#[test]
fn bad_input_is_refused_before_cmd_runs() {
    let t = tempfile::tempdir().unwrap();
    let marker = t.path().join("ran");
    let m = marker.to_str().unwrap();
    for (args, says) in [
        (vec!["--size", "0"], "size 0"),
        (vec!["--size", "12Q"], "12Q"),
        (vec!["--size", "150%"], "more than 100%"),
        (vec!["--json", "fd:987"], "fd:987"),
        (vec!["--json", "/no/such/dir/s.json"], "does not exist"),
        (vec!["--keep=/no/such/dir/k"], "does not exist"),
    ] {
        let mut a = vec!["run"];
        a.extend(&args);
        a.extend(["--", "touch", m]);
        let o = tmpfsctl(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(!marker.exists(), "{args:?}: CMD ran");
    }
    let o = tmpfsctl(&["run"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn json_on_stdout_with_fd_1() {
    let o = tmpfsctl(&[
        "run", "--quiet", "--size", "8M", "--json", "fd:1", "--", "true",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "--quiet: {}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["command"], serde_json::json!(["true"]));
    assert_eq!(j["exit_code"], 0);
    assert_eq!(j["status"], 0);
    assert!(j["wall_ns"].as_u64().unwrap() > 0);
}

#[test]
fn shell_starts_in_the_scratch_and_cd_dash_returns() {
    let here = std::env::current_dir().unwrap();
    let o = bin()
        .env("SHELL", "/bin/sh")
        .args([
            "shell",
            "-q",
            "--size",
            "8M",
            "--",
            "-c",
            "pwd; echo $TMPDIR; cd - >/dev/null; pwd",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let l: Vec<&str> = out.lines().collect();
    assert_eq!(l[0], l[1], "shell starts in $TMPDIR: {out}");
    assert_eq!(l[2], here.to_str().unwrap(), "{out}");
    let o = bin()
        .env("SHELL", "/bin/sh")
        .args(["shell", "-q", "--size", "8M", "--", "-c", "exit 5"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5));
}

/// The binary copied where uid 65534 can run it (the build tree may sit under /root).
pub(super) fn nobody_bin(t: &Path) -> PathBuf {
    let dst = t.join("tmpfsctl");
    std::fs::copy(env!("CARGO_BIN_EXE_tmpfsctl"), &dst).unwrap();
    std::fs::set_permissions(t, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o755)).unwrap();
    dst
}

fn as_nobody(b: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(b)
        .args(args)
        .env_remove("XDG_RUNTIME_DIR")
        .current_dir("/")
        .output()
        .unwrap()
}

#[test]
fn unprivileged_user_namespace_mode() {
    require_root!();
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("SKIP unprivileged_user_namespace_mode: setpriv (util-linux) is not installed");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let b = nobody_bin(t.path());
    let js = t.path().join("s.json");
    let o = as_nobody(
        &b,
        &[
            "run",
            "--size",
            "4M",
            "--json",
            js.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "id -u; stat -f -c %T $TMPDIR; dd if=/dev/zero of=$TMPDIR/f bs=1M count=8 2>&1; exit 3",
        ],
    );
    let j = read_json(&js);
    if j["mode"] == "directory" {
        eprintln!(
            "SKIP unprivileged_user_namespace_mode: the kernel refuses unprivileged user namespaces here: {}",
            j["notes"]
        );
        return;
    }
    assert_eq!(j["mode"], "user-namespace", "{j}");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("65534\ntmpfs\n"),
        "CMD keeps its uid and gets a tmpfs: {out}"
    );
    assert!(out.contains("No space left on device"), "{out}");
    assert!(
        stderr(&o).contains("workspace full at 4.00 MiB"),
        "{}",
        stderr(&o)
    );
    assert_eq!(j["peak_used_bytes"], 4u64 << 20);
    let anchor = j["path"].as_str().unwrap();
    assert_eq!(anchor, "/dev/shm/tmpfsctl-65534");
    assert!(
        anchor_is_empty(anchor),
        "the scratch must not show outside its namespace"
    );
    // Plain directory mode as nobody too: created 0700, removed after.
    let o = as_nobody(
        &b,
        &[
            "run",
            "--no-namespace",
            "--size",
            "4M",
            "--json",
            js.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo x > $TMPDIR/f",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = read_json(&js);
    assert_eq!(j["mode"], "directory");
    let p = j["path"].as_str().unwrap();
    assert!(p.starts_with("/dev/shm/tmpfsctl-65534-"), "{p}");
    assert!(!Path::new(p).exists());
}

/// Run `sh -c script` in a scratch and return the JSON summary.
fn run_json(extra: &[&str], size: &str, script: &str) -> serde_json::Value {
    let t = tempfile::tempdir().unwrap();
    let js = t.path().join("s.json");
    let mut args = vec!["run", "--size", size, "--json", js.to_str().unwrap()];
    args.extend(extra);
    args.extend(["--", "sh", "-c", script]);
    let o = tmpfsctl(&args);
    assert!(o.status.success(), "{extra:?} {script}: {}", stderr(&o));
    read_json(&js)
}

#[test]
fn idle_sampling_backs_off() {
    // At a fixed 10 ms this would be about 200 samples; backing off to
    // 250 ms it is about 13. Only a busier-than-asked sampler can fail the
    // upper bound, whatever the machine's load.
    let j = run_json(&[], "8M", "sleep 2");
    let samples = j["samples"].as_u64().unwrap();
    assert!(samples < 60, "idle 2 s took {samples} samples: {j}");
    // Still sampling while idle (a late write would be seen), plus the one at exit.
    assert!(samples >= 2, "{j}");
    assert_eq!(j["sample_interval_max_ns"], 250_000_000u64, "{j}");
    assert_eq!(j["peak_used_bytes"], 0, "{j}");
}

#[test]
fn writes_after_an_idle_spell_are_sampled_fast_again() {
    // Idle for 1 s (the sampler is at its slowest), then 20 MiB appended in
    // 1 MiB steps, held briefly, and deleted before CMD exits: only periodic
    // samples can see the peak. The hold is shorter than the slowest
    // interval, so a sampler that stayed slow after usage moved would often
    // miss several steps (and always take few samples, checked below); at
    // the fast rate (10 ms, or 100 ms for a tree walk) the hold is sampled.
    let mut modes: Vec<(Vec<&str>, &str)> = vec![(vec!["--no-namespace"], "0.2")];
    if is_root() {
        modes.push((vec![], "0.05"));
    }
    let written = 20u64 << 20;
    for (extra, hold) in modes {
        let script = format!(
            "sleep 1; for i in $(seq 20); do head -c 1048576 /dev/urandom >> $TMPDIR/f; sleep 0.05; done; sleep {hold}; rm $TMPDIR/f"
        );
        let j = run_json(&extra, "64M", &script);
        let peak = j["peak_used_bytes"].as_u64().unwrap();
        assert!(
            (written as f64 * 0.95..=written as f64 * 1.05).contains(&(peak as f64)),
            "{extra:?}: peak {peak} vs written {written}: {j}"
        );
        assert_eq!(j["final_used_bytes"], 0, "{j}");
        if extra.is_empty() {
            // Writing takes over a second: some 60 samples at 10-20 ms,
            // against about 13 for the whole run had it stayed at 250 ms.
            let samples = j["samples"].as_u64().unwrap();
            assert!(samples > 30, "only {samples} samples while writing: {j}");
        }
    }
}

#[test]
fn a_nearly_full_scratch_is_sampled_fast() {
    require_root!();
    // 7.5 MiB of 8 MiB (94%), then idle: unchanged usage, but over 90% of
    // the cap, so the sampler stays at 10 ms (about 200 samples in 2 s; an
    // idle one takes about 13).
    let j = run_json(&[], "8M", "head -c 7864320 /dev/zero > $TMPDIR/f; sleep 2");
    assert_eq!(j["mode"], "private-mount", "{j}");
    assert_eq!(j["full"], false, "{j}");
    let samples = j["samples"].as_u64().unwrap();
    assert!(
        samples > 30,
        "near full for 2 s: only {samples} samples: {j}"
    );
}
