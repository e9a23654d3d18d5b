//! Open files of every process, from `/proc/PID/fd`: what `du` cannot see
//! (files deleted but still open, memfd) and who holds files on a mount.
//!
//! Each fd link is read (its target text: " (deleted)" suffix, "/memfd:NAME")
//! and stat'ed through the link, which reaches the open file itself even when
//! its name is gone: its device says which mount holds it, its blocks what it
//! costs. Processes are split between threads: one readlink and one stat per
//! fd, all kernel time, like the tree walk.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::Sysroot;
use crate::term::safe_path;

/// One open regular file (or memfd) of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFile {
    pub fd: u32,
    /// The link's text, " (deleted)" removed.
    pub path: PathBuf,
    pub deleted: bool,
    /// `Some(name)` for a memfd (link "/memfd:NAME (deleted)").
    pub memfd: Option<String>,
    /// `st_dev` of the open file (compare with a mount's major:minor).
    pub dev: u64,
    pub ino: u64,
    /// Allocated bytes (st_blocks * 512): what it costs the filesystem.
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub files: Vec<OpenFile>,
}

/// Every process's open regular files. Processes that vanish or cannot be read
/// (another user's, without root) are skipped: `unreadable` counts them.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    pub processes: Vec<Process>,
    pub unreadable: u64,
}

pub use super::proc::pids;

/// `/proc/PID/comm` without its newline; "?" when gone. [`scan`] does not
/// read it: a report reads it for the few processes it names (reading it for
/// every process is a third of the scan).
pub use super::proc::name_or_unknown as comm;

/// Split a link's text into (path, deleted, memfd name).
pub fn parse_link(target: &[u8]) -> (PathBuf, bool, Option<String>) {
    let (body, deleted) = match target.strip_suffix(b" (deleted)") {
        Some(b) => (b, true),
        None => (target, false),
    };
    let memfd = body
        .strip_prefix(b"/memfd:")
        .map(|n| String::from_utf8_lossy(n).into_owned());
    (PathBuf::from(OsStr::from_bytes(body)), deleted, memfd)
}

/// Every open descriptor of `pid`: `f` gets the /proc/PID/fd directory (to
/// stat an entry through), the fd's number and name there, and its link's
/// text. False when the directory cannot be read at all (gone, or another
/// user's without root). The one walk of /proc/PID/fd.
pub fn each_fd(
    root: &Sysroot,
    pid: u32,
    mut f: impl FnMut(&rustix::fd::OwnedFd, u32, &std::ffi::CStr, &[u8]),
) -> bool {
    use rustix::fs::{Mode, OFlags, RawDir};
    // Everything relative to the open fd directory: each readlink and stat
    // then resolves one name instead of walking /proc/PID/fd/N from the root
    // (procfs lookups are most of this scan's cost).
    let Ok(dir) = rustix::fs::open(
        root.path(format!("/proc/{pid}/fd")),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    let mut buf = Vec::with_capacity(4096);
    let mut names = Vec::new();
    let mut rd = RawDir::new(&dir, buf.spare_capacity_mut());
    while let Some(Ok(e)) = rd.next() {
        let name = e.file_name();
        if let Some(fd) = std::str::from_utf8(name.to_bytes())
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
        {
            names.push((fd, name.to_owned()));
        }
    }
    for (fd, name) in names {
        let Ok(target) = rustix::fs::readlinkat(&dir, &name, Vec::new()) else {
            continue; // closed since listed
        };
        f(&dir, fd, &name, target.as_bytes());
    }
    true
}

/// One process's open files; None when it cannot be read at all.
pub fn process(root: &Sysroot, pid: u32) -> Option<Process> {
    use rustix::fs::{AtFlags, FileType};
    let mut files = Vec::new();
    let read = each_fd(root, pid, |dir, fd, name, t| {
        // Sockets, pipes and anon inodes ("socket:[123]") hold no file data,
        // nor do the terminals and null devices almost every process has open.
        if !t.starts_with(b"/") || is_common_device(t) {
            return;
        }
        let Ok(st) = rustix::fs::statat(dir, name, AtFlags::empty()) else {
            return;
        };
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return;
        }
        let (path, deleted, memfd) = parse_link(t);
        files.push(OpenFile {
            fd,
            path,
            deleted,
            memfd,
            dev: st.st_dev,
            ino: st.st_ino,
            bytes: (st.st_blocks as u64) * 512,
        });
    });
    if !read {
        return None;
    }
    files.sort_by_key(|f| f.fd);
    Some(Process { pid, files })
}

fn is_common_device(t: &[u8]) -> bool {
    matches!(
        t,
        b"/dev/null"
            | b"/dev/zero"
            | b"/dev/urandom"
            | b"/dev/random"
            | b"/dev/ptmx"
            | b"/dev/tty"
            | b"/dev/console"
    ) || t.starts_with(b"/dev/pts/")
}

/// Scan every process, on up to `threads` threads. Processes with no
/// regular file open are left out.
pub fn scan(root: &Sysroot, threads: usize) -> Scan {
    let all = pids(root);
    let threads = threads.clamp(1, 8);
    let chunk = all.len().div_ceil(threads).max(1);
    let mut out = Scan::default();
    std::thread::scope(|s| {
        let handles: Vec<_> = all
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut got = Vec::new();
                    let mut bad = 0u64;
                    for &pid in part {
                        match process(root, pid) {
                            Some(p) if p.files.is_empty() => {}
                            Some(p) => got.push(p),
                            // A process that ended during the scan was not
                            // hidden from us: only one still there counts.
                            None if root.path(format!("/proc/{pid}")).exists() => bad += 1,
                            None => {}
                        }
                    }
                    (got, bad)
                })
            })
            .collect();
        for h in handles {
            if let Ok((got, bad)) = h.join() {
                out.processes.extend(got);
                out.unreadable += bad;
            }
        }
    });
    out.processes.sort_by_key(|p| p.pid);
    out
}

/// A file a process has mapped (from /proc/PID/maps), each file once:
/// POSIX shared memory and memfds often stay mapped after their fd is closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedFile {
    /// The mapping's name, " (deleted)" removed.
    pub path: PathBuf,
    pub deleted: bool,
    /// `Some(name)` for a memfd.
    pub memfd: Option<String>,
    pub dev: u64,
    pub ino: u64,
    /// Allocated bytes, stat'ed through /proc/PID/map_files (root) or the
    /// name; null when neither reaches it.
    pub bytes: Option<u64>,
}

/// One line of /proc/PID/maps: (st_dev, inode, name); None for anonymous
/// memory (inode 0) and lines that do not parse.
pub fn parse_maps_line(line: &[u8]) -> Option<(&[u8], u64, u64, &[u8])> {
    let mut rest = line;
    let mut field = || {
        let s = rest.iter().position(|b| *b != b' ')?;
        rest = &rest[s..];
        let e = rest.iter().position(|b| *b == b' ').unwrap_or(rest.len());
        let f = &rest[..e];
        rest = &rest[e..];
        Some(f)
    };
    let (range, _perms, _off, dev, ino) = (field()?, field()?, field()?, field()?, field()?);
    let ino: u64 = std::str::from_utf8(ino).ok()?.parse().ok()?;
    let (maj, min) = std::str::from_utf8(dev).ok()?.split_once(':')?;
    let dev = rustix::fs::makedev(
        u32::from_str_radix(maj, 16).ok()?,
        u32::from_str_radix(min, 16).ok()?,
    );
    let name = rest.trim_ascii_start();
    (ino != 0 && name.starts_with(b"/")).then_some((range, dev, ino, name))
}

/// The files `pid` has mapped that `keep(dev, name)` wants, each once.
pub fn mapped_files(
    root: &Sysroot,
    pid: u32,
    keep: impl Fn(u64, &[u8]) -> bool,
) -> Vec<MappedFile> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let Ok(text) = std::fs::read(root.path(format!("/proc/{pid}/maps"))) else {
        return Vec::new();
    };
    let mut out: Vec<MappedFile> = Vec::new();
    let mut files_dir = None;
    for line in text.split(|b| *b == b'\n') {
        let Some((range, dev, ino, name)) = parse_maps_line(line) else {
            continue;
        };
        if out.iter().any(|m| m.dev == dev && m.ino == ino) || !keep(dev, name) {
            continue;
        }
        let (path, deleted, memfd) = parse_link(name);
        // The mapping itself reaches the file even when its name is gone.
        let dir = files_dir.get_or_insert_with(|| {
            rustix::fs::open(
                root.path(format!("/proc/{pid}/map_files")),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok()
        });
        let st = dir
            .as_ref()
            .and_then(|d| rustix::fs::statat(d, range, AtFlags::empty()).ok())
            .or_else(|| (!deleted).then(|| rustix::fs::stat(&path).ok()).flatten())
            .filter(|st| st.st_dev == dev && st.st_ino == ino);
        out.push(MappedFile {
            path,
            deleted,
            memfd,
            dev,
            ino,
            bytes: st.map(|st| (st.st_blocks as u64) * 512),
        });
    }
    out
}

/// Processes holding the file `dev`/`ino` open: (pid, comm).
pub fn holders(root: &Sysroot, scan: &Scan, dev: u64, ino: u64) -> Vec<(u32, String)> {
    scan.processes
        .iter()
        .filter(|p| p.files.iter().any(|f| f.dev == dev && f.ino == ino))
        .map(|p| (p.pid, comm(root, p.pid)))
        .collect()
}

/// A process using something under a directory (open file, mapping, cwd or
/// root): what holds a mount busy.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProcUse {
    pub pid: u32,
    pub comm: String,
    /// `cwd`, `root`, `fd N: PATH` or `map: PATH` (first few only).
    pub uses: Vec<String>,
}

fn under(p: &Path, dir: &Path) -> bool {
    p == dir || p.starts_with(dir)
}

/// Every process under `root`'s /proc but this one.
fn other_processes(root: &Sysroot) -> impl Iterator<Item = u32> {
    let me = std::process::id();
    pids(root).into_iter().filter(move |&p| p != me)
}

/// The open files of `pid` that lie under `dir`, as (fd, path), through the
/// one walk of /proc/PID/fd.
fn fds_under(root: &Sysroot, pid: u32, dir: &Path) -> Vec<(u32, PathBuf)> {
    let mut v = Vec::new();
    each_fd(root, pid, |_, fd, _, t| {
        let (t, _, _) = parse_link(t);
        if t.is_absolute() && under(&t, dir) {
            v.push((fd, t));
        }
    });
    v
}

fn proc_use(root: &Sysroot, pid: u32, mut uses: Vec<String>) -> ProcUse {
    uses.truncate(5);
    ProcUse {
        pid,
        comm: super::proc::name(root, pid).unwrap_or_default(),
        uses,
    }
}

/// Processes whose cwd, root, open files or mapped files are under `dir`,
/// from `/proc/*/{cwd,root,fd/*,maps}`: each of these keeps a mount there
/// busy. Processes we may not inspect are skipped.
pub fn users_of(root: &Sysroot, dir: &Path) -> Vec<ProcUse> {
    users(root, dir, None)
}

/// [`users_of`] the mount whose st_dev is `dev` on `dir`: a use of the
/// directory below that mount (a process whose cwd is the disk directory
/// the mount covers has the same path) does not keep the mount busy.
pub fn users_of_mount(root: &Sysroot, dir: &Path, dev: u64) -> Vec<ProcUse> {
    users(root, dir, Some(dev))
}

fn users(root: &Sysroot, dir: &Path, dev: Option<u64>) -> Vec<ProcUse> {
    // Through the /proc link itself: it reaches the object in use, which
    // its path may no longer (or never did, under a mount) name.
    let on = |link: &str| {
        dev.is_none_or(|d| {
            std::fs::metadata(root.path(link)).is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                m.dev() == d
            })
        })
    };
    let mut out = Vec::new();
    for pid in other_processes(root) {
        let mut uses = Vec::new();
        for what in ["cwd", "root"] {
            if let Ok(t) = std::fs::read_link(root.path(format!("/proc/{pid}/{what}")))
                && under(&t, dir)
                && !(what == "root" && t == Path::new("/"))
                && on(&format!("/proc/{pid}/{what}"))
            {
                uses.push(what.to_string());
            }
        }
        let mut fds = fds_under(root, pid, dir);
        fds.retain(|(fd, _)| on(&format!("/proc/{pid}/fd/{fd}")));
        for (fd, t) in &fds {
            uses.push(format!("fd {fd}: {}", safe_path(t)));
        }
        // A mapping outlives the descriptor it was made from (a loaded
        // library, a closed shm segment): only those not listed as an fd.
        for m in mapped_files(root, pid, |mdev, name| {
            under(&parse_link(name).0, dir) && dev.is_none_or(|d| d == mdev)
        }) {
            if !fds.iter().any(|(_, t)| *t == m.path) {
                uses.push(format!("map: {}", safe_path(&m.path)));
            }
        }
        if !uses.is_empty() {
            out.push(proc_use(root, pid, uses));
        }
    }
    out.sort_by_key(|p| p.pid);
    out
}

/// Processes holding a file under `dir` open for writing (O_WRONLY or
/// O_RDWR in `/proc/PID/fdinfo/N`), each with those files.
pub fn writers_of(root: &Sysroot, dir: &Path) -> Vec<ProcUse> {
    let mut out = Vec::new();
    for pid in other_processes(root) {
        let mut uses = Vec::new();
        for (fd, t) in fds_under(root, pid, dir) {
            let info = std::fs::read_to_string(root.path(format!("/proc/{pid}/fdinfo/{fd}")))
                .unwrap_or_default();
            let flags = info
                .lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
                .unwrap_or(0);
            // O_ACCMODE: 1 write-only, 2 read-write.
            if flags & 3 != 0 && t.is_file() {
                uses.push(format!("fd {fd} writes {}", safe_path(&t)));
            }
        }
        if !uses.is_empty() {
            out.push(proc_use(root, pid, uses));
        }
    }
    out.sort_by_key(|p| p.pid);
    out
}

/// Refuse while `writers` (see [`writers_of`]) hold files under `dir` open
/// for writing: what they write after `dir` is copied would land in the
/// directory hidden under the tmpfs. With `force`, the warning to print
/// (exactly what may be lost) instead. apply and persist enable ask the
/// same question.
pub fn refuse_writers(
    dir: &Path,
    writers: &[ProcUse],
    force: bool,
) -> anyhow::Result<Option<String>> {
    if writers.is_empty() {
        return Ok(None);
    }
    let list: Vec<String> = writers
        .iter()
        .map(|w| {
            format!(
                "{} ({}: {})",
                w.pid,
                crate::term::safe(&w.comm),
                w.uses.join(", ")
            )
        })
        .collect();
    if !force {
        anyhow::bail!(
            "processes have files under {} open for writing: {}; what they write after the copy would be hidden \
             under the tmpfs. Stop them (or let them finish) and retry, or pass --force to go ahead anyway",
            safe_path(dir),
            list.join("; ")
        );
    }
    Ok(Some(format!(
        "--force: writes made through these open files after the copy stay in the directory \
         hidden under the tmpfs (not in the tmpfs), and are lost: {}",
        list.join("; ")
    )))
}

/// `major:minor` as the kernel encodes it in `st_dev`.
pub fn dev_of(major: u32, minor: u32) -> u64 {
    rustix::fs::makedev(major, minor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn links_are_split_into_path_deleted_and_memfd() {
        assert_eq!(
            parse_link(b"/tmp/a b (deleted)"),
            ("/tmp/a b".into(), true, None)
        );
        assert_eq!(parse_link(b"/tmp/x"), ("/tmp/x".into(), false, None));
        assert_eq!(
            parse_link(b"/memfd:wayland-shm (deleted)"),
            (
                "/memfd:wayland-shm".into(),
                true,
                Some("wayland-shm".into())
            )
        );
    }

    #[test]
    fn maps_lines_give_device_inode_and_name() {
        let l = b"7f7c668b2000-7f7c668bc000 r--p 00000000 00:2a 1045                       /dev/shm/a b (deleted)";
        let (range, dev, ino, name) = parse_maps_line(l).unwrap();
        assert_eq!(range, b"7f7c668b2000-7f7c668bc000");
        assert_eq!(dev, rustix::fs::makedev(0, 0x2a));
        assert_eq!(ino, 1045);
        assert_eq!(name, b"/dev/shm/a b (deleted)");
        assert!(parse_maps_line(b"7ffd-7ffe rw-p 00000000 00:00 0  [stack]").is_none());
        assert!(parse_maps_line(b"55d0-55d1 rw-p 00000000 00:00 0 ").is_none());
    }

    #[test]
    fn our_own_mapping_of_a_file_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mapped");
        std::fs::write(&p, vec![7u8; 8192]).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        // SAFETY: a fresh read-only shared mapping of a file we own, unmapped below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&f),
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        drop(f);
        let st = rustix::fs::stat(&p).unwrap();
        let got = mapped_files(&Sysroot::live(), std::process::id(), |d, _| d == st.st_dev);
        let hit = got
            .iter()
            .find(|m| m.ino == st.st_ino)
            .expect("mapping listed");
        assert_eq!(hit.path, p);
        assert!(hit.bytes.is_some_and(|b| b >= 8192), "{hit:?}");
        // SAFETY: the mapping made above, not used after this.
        assert_eq!(unsafe { libc::munmap(map, 8192) }, 0);
    }

    #[test]
    fn our_own_deleted_file_is_found_with_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("gone");
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(&vec![1u8; 100_000]).unwrap();
        f.sync_all().unwrap();
        std::fs::remove_file(&p).unwrap();
        let me = process(&Sysroot::live(), std::process::id()).unwrap();
        let hit = me
            .files
            .iter()
            .find(|o| o.deleted && o.path == p)
            .expect("deleted file listed");
        assert!(hit.bytes >= 100_000, "{hit:?}");
        let all = scan(&Sysroot::live(), 2);
        assert!(all.processes.iter().any(|q| q.pid == me.pid));
        let who = holders(&Sysroot::live(), &all, hit.dev, hit.ino);
        assert!(who.iter().any(|(pid, _)| *pid == me.pid), "{who:?}");
        drop(f);
    }
}
