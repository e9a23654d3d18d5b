//! The host side of a crash state: a scratch file system that clones
//! images cheaply (xfs with reflink, on a loop device), loop devices for
//! each state, and tmpfsctl run against what a state holds. Every loop
//! device and mount is undone by the one that made it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn sh(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"))
}

pub fn ok(cmd: &str, args: &[&str]) -> String {
    let o = sh(cmd, args);
    assert!(
        o.status.success(),
        "{cmd} {args:?}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

pub fn p(path: &Path) -> &str {
    path.to_str().expect("scratch paths are UTF-8")
}

/// A loop device over an image file, detached (by its own name) on drop.
pub struct Loop(pub String);

impl Loop {
    pub fn attach(img: &Path) -> Loop {
        Loop(ok("losetup", &["-f", "--show", p(img)]))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = sh("losetup", &["-d", &self.0]);
    }
}

/// A mount, unmounted on drop.
pub struct Mounted(pub PathBuf);

impl Mounted {
    pub fn mount(dev: &str, fs: &str, at: &Path) -> Result<Mounted, String> {
        std::fs::create_dir_all(at).unwrap();
        // Every crash state of one xfs is a clone with its UUID: nouuid, or
        // the kernel refuses the next while one is still being released.
        let opts = if fs == "xfs" { "nouuid" } else { "defaults" };
        let o = sh("mount", &["-t", fs, "-o", opts, dev, p(at)]);
        if o.status.success() {
            Ok(Mounted(at.to_path_buf()))
        } else {
            Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let o = sh("umount", &[p(&self.0)]);
        if !o.status.success() {
            eprintln!(
                "umount {}: {}; detaching it lazily",
                self.0.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            );
            let _ = sh("umount", &["-l", p(&self.0)]);
        }
    }
}

/// The suite's scratch: an xfs file system (reflink: a crash state is a
/// clone of an image, not a copy) on a sparse file in /var/tmp.
pub struct Scratch {
    pub dir: PathBuf,
    pub work: PathBuf,
    /// Left in place (unmounted) for a look at the log and images.
    pub keep: bool,
    mounted: Option<Mounted>,
    lo: Option<Loop>,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("tmpfsctl-crash-")
            .tempdir_in("/var/tmp")
            .unwrap()
            .keep();
        let img = dir.join("scratch.xfs");
        let f = std::fs::File::create(&img).unwrap();
        f.set_len(24 << 30).unwrap();
        ok("mkfs.xfs", &["-q", "-f", "-m", "reflink=1", p(&img)]);
        let lo = Loop::attach(&img);
        let work = dir.join("w");
        let m = Mounted::mount(&lo.0, "xfs", &work).expect("mount the scratch xfs");
        Scratch {
            dir,
            work,
            keep: false,
            mounted: Some(m),
            lo: Some(lo),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.mounted.take();
        self.lo.take();
        let asked = std::env::var_os("TMPFSCTL_CRASH_KEEP").is_some();
        if !(asked && (self.keep || std::thread::panicking())) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `dst` as a clone of `src` (shares every block until written).
pub fn clone(src: &Path, dst: &Path) {
    let s = std::fs::File::open(src).unwrap();
    let d = std::fs::File::create(dst).unwrap();
    if rustix::fs::ioctl_ficlone(&d, &s).is_err() {
        drop(d);
        std::fs::copy(src, dst).unwrap();
    }
}

/// The host's build of tmpfsctl, against a scratch registry.
pub fn tmpfsctl(registry: &Path, args: &[&str]) -> Output {
    let mut a = vec!["persist", "--registry", p(registry)];
    a.extend_from_slice(args);
    sh(env!("CARGO_BIN_EXE_tmpfsctl"), &a)
}
