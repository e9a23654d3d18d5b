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

use crate::common::{bin, is_root, json, stderr, stdout, tmpfsctl};
use crate::require_root;

mod cleanup;
mod kill;
mod signals;
mod usage;

mod pidns;
mod seccomp;
mod secure;
mod squat;

const ROOT_ANCHOR: &str = "/run/tmpfsctl";

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

pub(super) use crate::common::nobody_bin;

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
