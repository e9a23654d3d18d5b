//! Shared helpers for integration tests: the binary, root checks, real tmpfs mounts.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tmpfsctl"))
}

/// Run tmpfsctl with args; returns the output (never panics on failure exit).
pub fn tmpfsctl(args: &[&str]) -> Output {
    bin().args(args).output().expect("spawn tmpfsctl")
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Skip (return early) with a printed reason unless running as root.
#[macro_export]
macro_rules! require_root {
    () => {
        if !$crate::common::is_root() {
            eprintln!(
                "SKIP {}: needs root to mount tmpfs (CI runs as root)",
                module_path!()
            );
            return;
        }
    };
}

/// A real tmpfs (or ramfs) mounted on a fresh directory, unmounted (lazily) on drop.
pub struct TestMount {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl TestMount {
    /// Mount `fstype` with `opts` at `<tempdir>/<name>`.
    pub fn new(fstype: &str, name: &str, opts: &str) -> TestMount {
        let dir = tempfile::Builder::new()
            .prefix("tmpfsctl-it-")
            .tempdir()
            .unwrap();
        let path = dir.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        let st = Command::new("mount")
            .args(["-t", fstype, "-o", opts, fstype])
            .arg(&path)
            .status()
            .expect("run mount");
        assert!(
            st.success(),
            "mount -t {fstype} -o {opts} {} failed",
            path.display()
        );
        TestMount { dir, path }
    }

    pub fn tmpfs(opts: &str) -> TestMount {
        Self::new("tmpfs", "mnt", opts)
    }
}

impl Drop for TestMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Parse stdout as JSON, with the output in the panic message when it is not.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): status {:?}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The numbers df prints for a path with the given `--output` columns.
fn df(args: &[&str], p: &Path) -> Vec<u64> {
    let out = Command::new("df").args(args).arg(p).output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    s.lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect()
}

/// `df -B1` for a path: (size, used, avail).
pub fn df_bytes(p: &Path) -> (u64, u64, u64) {
    let v = df(&["-B1", "--output=size,used,avail"], p);
    (v[0], v[1], v[2])
}

/// `df -i` for a path: (inodes, inodes used).
pub fn df_inodes(p: &Path) -> (u64, u64) {
    let v = df(&["--output=itotal,iused"], p);
    (v[0], v[1])
}
