//! CMD's whole process tree lives and dies with the run.
//!
//! Three layers, because each alone has a hole:
//! * `PR_SET_PDEATHSIG(SIGKILL)` in CMD: the kernel kills CMD the moment
//!   tmpfsctl dies, however it dies (kill -9 included). It covers CMD only:
//!   the setting is cleared in CMD's own children, and when CMD is a setuid
//!   program.
//! * A cgroup v2 of its own, which CMD is born in (`clone3` with
//!   `CLONE_INTO_CGROUP`; before Linux 5.7 it moves in between fork and
//!   exec), so every process CMD starts (double-forked, setsid daemons too) is
//!   in it and an unprivileged one cannot leave it. When CMD ends, whatever is still in the
//!   cgroup is listed, reported and killed (`cgroup.kill`), before the scratch
//!   is torn down.
//! * A guard process, started from tmpfsctl before CMD starts and outside the
//!   cgroup, blocked reading a pipe whose only writer is tmpfsctl. When
//!   tmpfsctl ends normally it writes one byte and the guard exits; when it
//!   dies any other way the pipe reads EOF and the guard kills the cgroup and
//!   removes it. The guard is what makes kill -9 of tmpfsctl take CMD's
//!   daemons along; it runs in a process group of its own, so a SIGKILL sent to
//!   tmpfsctl's whole process group (`timeout -s KILL`) does not reach it.
//!
//! Without a usable cgroup v2 (an unprivileged user without a delegated
//! subtree, a kernel without cgroup2 mounted) CMD runs in a PID namespace of
//! its own whose init dies with tmpfsctl (see `pidns`): the kernel then kills
//! the whole namespace. Only where that is impossible too (user namespaces
//! disabled, `--no-namespace`) tmpfsctl becomes a child subreaper: orphans
//! of CMD are reparented to tmpfsctl rather than to init, so at the end it
//! finds them as its own children and kills them. A kill -9 of tmpfsctl then
//! still takes CMD, but not what CMD left running; a note says so and why.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode as FsMode, OFlags};
use rustix::process::{Pid, Signal};

use super::guard::{self, KILL_WAIT, wait_empty};
use super::pidns;
pub use super::procs::Leftover;
use super::procs::{CloneArgs, read_comm, single_threaded};
use super::vspawn;
use crate::sys::{Sysroot, cgroup, mountinfo, proc};

/// Prefix of the per-run cgroups, followed by tmpfsctl's pid.
const CGROUP_PREFIX: &str = "tmpfsctl-run-";

/// What the end of the run did to CMD's tree.
#[derive(Debug, Default)]
pub struct Ended {
    /// Processes still running when CMD ended, all killed.
    pub killed: Vec<Leftover>,
    pub notes: Vec<String>,
}

struct Cgroup {
    path: PathBuf,
    /// The cgroup directory, for `clone3(CLONE_INTO_CGROUP)`.
    dir: OwnedFd,
    /// `cgroup.procs`, for kernels without `CLONE_INTO_CGROUP`: the child
    /// joins with one write(2) between fork and exec.
    procs: OwnedFd,
}

/// The leash on CMD's process tree, from before CMD starts to after it ends.
pub struct Tree {
    cgroup: Option<Cgroup>,
    guard: Option<guard::Guard>,
    /// Set when there is no cgroup: orphans come back to tmpfsctl.
    subreaper: bool,
    parent: Pid,
    /// No cgroup (and why), and a PID namespace may be tried instead.
    try_pidns: Option<String>,
    /// CMD's PID namespace, while its init runs.
    init: Option<pidns::Init>,
    /// What the init reported when CMD ended.
    report: Option<pidns::Report>,
    pub notes: Vec<String>,
}

impl Tree {
    /// Set up the cgroup and its guard, or the subreaper fallback. Call
    /// before anything else forks, and before leaving the user namespace
    /// tmpfsctl started in (the cgroup files are opened here).
    /// `pidns`: without a cgroup, CMD may run in a PID namespace of its own
    /// (false for `--no-namespace`).
    pub fn new(pidns: bool) -> Tree {
        let parent = rustix::process::getpid();
        let mut notes = Vec::new();
        let mut try_pidns = None;
        let (cgroup, guard) = match make_cgroup(parent) {
            Ok(cg) => match guard::start(&cg.path) {
                Ok(g) => (Some(cg), Some(g)),
                Err(e) => {
                    notes.push(format!(
                        "no guard process ({e}): if tmpfsctl is killed, what CMD started keeps running"
                    ));
                    (Some(cg), None)
                }
            },
            Err(why) if pidns => {
                try_pidns = Some(why);
                (None, None)
            }
            Err(why) => {
                notes.push(no_leash(&why, "--no-namespace asks for none"));
                (None, None)
            }
        };
        let subreaper =
            cgroup.is_none() && rustix::process::set_child_subreaper(Some(parent)).is_ok();
        Tree {
            cgroup,
            guard,
            subreaper,
            parent,
            try_pidns,
            init: None,
            report: None,
            notes,
        }
    }

    /// Start `cmd` in the tree, dying with tmpfsctl; returns its pid. The
    /// caller waits for it with waitpid.
    /// A PID namespace that cannot be made is said through `note` before
    /// CMD starts.
    pub fn spawn(
        &mut self,
        cmd: &mut std::process::Command,
        note: &mut dyn FnMut(String),
    ) -> io::Result<i32> {
        use std::os::unix::process::CommandExt;
        if let Some(why) = self.try_pidns.take() {
            match pidns::spawn(cmd) {
                Ok(init) => {
                    note_opt(note, init.proc_note.clone());
                    let pid = init.pid;
                    self.init = Some(init);
                    return Ok(pid);
                }
                Err(pidns::SpawnError::Exec(e)) => return Err(e),
                Err(pidns::SpawnError::NotPossible(pidns::NotPossible(w))) => {
                    note(no_leash(&why, &w));
                }
            }
        }
        let parent = self.parent;
        // SAFETY: the closure runs between fork and exec and makes only
        // async-signal-safe system calls (prctl, getppid, _exit).
        unsafe {
            cmd.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
                // tmpfsctl may have died between fork and prctl: then nobody
                // would send the signal, so act as if it had been sent.
                if rustix::process::getppid() != Some(parent) {
                    libc::_exit(128 + libc::SIGKILL);
                }
                Ok(())
            });
        }
        // Born in the cgroup: moving a process into one takes a lock whose
        // writer waits for an RCU grace period, 10-20 ms per run.
        let cg_fd = self.cgroup.as_ref().map(|cg| cg.dir.as_raw_fd());
        let prepared = vspawn::Prepared::new(cmd)?;
        match vspawn::spawn(&prepared, cg_fd, Some(parent.as_raw_nonzero().get())) {
            Ok(pid) => return Ok(pid),
            Err(vspawn::SpawnError::Failed(e)) => return Err(e),
            Err(vspawn::SpawnError::Unsupported) => {}
        }
        let Some(cg) = &self.cgroup else {
            return Ok(cmd.spawn()?.id() as i32);
        };
        if single_threaded() {
            match clone_into(&cg.dir, cmd) {
                Err(Clone3::Unsupported) => {}
                Err(Clone3::Failed(e)) => return Err(e),
                Ok(pid) => return Ok(pid),
            }
        }
        let procs: RawFd = cg.procs.as_raw_fd();
        // SAFETY: as above (write); the descriptor stays open in the parent
        // for as long as `self` lives.
        unsafe {
            cmd.pre_exec(move || {
                // "0" is the writing process itself.
                if libc::write(procs, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(cmd.spawn()?.id() as i32)
    }

    /// CMD has ended: kill and report whatever it left running, remove the
    /// cgroup and stand the guard down.
    pub fn end(mut self) -> Ended {
        let mut out = Ended::default();
        if let Some(init) = self.init.take() {
            init.kill();
        }
        if let Some(r) = self.report.take() {
            out.killed = r.leftovers;
            if r.unnamed > 0 {
                out.notes.push(format!(
                    "and {} more processes CMD left running, killed with its PID namespace",
                    r.unnamed
                ));
            }
        } else if let Some(cg) = self.cgroup.take() {
            end_cgroup(&cg, &mut out);
        } else if self.subreaper {
            end_orphans(self.parent, &mut out);
        }
        if let Some(g) = self.guard.take() {
            guard::stand_down(g);
        }
        if !out.killed.is_empty() {
            let n = out.killed.len();
            let list: Vec<String> = out
                .killed
                .iter()
                .map(|l| format!("{} ({})", l.pid, crate::term::safe(&l.comm)))
                .collect();
            out.notes.insert(
                0,
                format!(
                    "CMD left {n} process{} running when it ended, killed: {}",
                    if n == 1 { "" } else { "es" },
                    list.join(", ")
                ),
            );
        }
        out
    }
}

impl Tree {
    /// CMD's status, from the status of the process `spawn` returned (in a
    /// PID namespace that is the init, which reports CMD's own).
    pub fn cmd_status(&mut self, st: std::process::ExitStatus) -> std::process::ExitStatus {
        let Some(init) = self.init.take() else {
            return st;
        };
        let r = init.finish(st);
        let status = r.status;
        self.report = Some(r);
        status
    }
}

fn note_opt(note: &mut dyn FnMut(String), n: Option<String>) {
    if let Some(n) = n {
        note(n);
    }
}

/// The note for a run whose CMD's tree is held by nothing stronger than the
/// subreaper.
fn no_leash(no_cgroup: &str, no_pidns: &str) -> String {
    format!(
        "no cgroup for CMD ({no_cgroup}) and no PID namespace ({no_pidns}): what CMD leaves running is killed at the end, but not if tmpfsctl itself is killed"
    )
}

impl Drop for Tree {
    /// Reached without `end` only on an early error: still leave nothing.
    fn drop(&mut self) {
        if let Some(init) = self.init.take() {
            init.kill();
        }
        if let Some(cg) = self.cgroup.take() {
            end_cgroup(&cg, &mut Ended::default());
        }
        if let Some(g) = self.guard.take() {
            guard::stand_down(g);
        }
    }
}

fn open_path(p: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        p,
        flags | OFlags::CLOEXEC,
        FsMode::empty(),
    )?)
}

/// The cgroup v2 line of /proc/self/cgroup: this process's cgroup, relative
/// to the root of its cgroup namespace.
fn own_cgroup_path() -> Result<String, String> {
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    own.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_string)
        .ok_or_else(|| "no cgroup v2 line in /proc/self/cgroup".to_string())
}

/// Where the cgroup v2 hierarchy is usually mounted (unified, or beside v1
/// in the hybrid layout), checked with statfs so no mount table is read.
/// The mount is taken to show its namespace's whole tree, as a mount made
/// in that namespace does; `make_cgroup` falls back to mountinfo when the
/// cgroup is not found below it.
fn usual_cgroup_dir(rel: &str) -> Option<PathBuf> {
    const CGROUP2_SUPER_MAGIC: u64 = 0x6367_7270;
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .find(|p| {
            // f_type's width differs between architectures.
            #[allow(clippy::unnecessary_cast)]
            rustix::fs::statfs(*p).is_ok_and(|st| st.f_type as u64 == CGROUP2_SUPER_MAGIC)
        })
        .map(|p| Path::new(p).join(rel.trim_start_matches('/')))
}

/// Where cgroup v2 is mounted and which cgroup this process is in, from
/// the mount table (any mount point, any mount root).
fn own_cgroup_dir(rel: &str) -> Result<PathBuf, String> {
    let text =
        std::fs::read("/proc/self/mountinfo").map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    let (mounts, _) = mountinfo::parse(&text);
    let m = mounts
        .iter()
        .find(|m| m.fstype == "cgroup2")
        .ok_or("cgroup v2 is not mounted")?;
    let rel = Path::new(rel)
        .strip_prefix(&m.root)
        .map_err(|_| format!("own cgroup {rel} is outside the cgroup2 mount"))?;
    Ok(m.mount_point.join(rel))
}

fn make_cgroup(own: Pid) -> Result<Cgroup, String> {
    let rel = own_cgroup_path()?;
    let base = match usual_cgroup_dir(&rel).filter(|b| b.is_dir()) {
        Some(b) => b,
        None => own_cgroup_dir(&rel)?,
    };
    sweep_cgroups(&base);
    let path = base.join(format!("{CGROUP_PREFIX}{}", own.as_raw_nonzero()));
    match std::fs::create_dir(&path) {
        Ok(()) => {}
        // Left by an earlier tmpfsctl with this pid and already empty.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            std::fs::remove_dir(&path)
                .and_then(|()| std::fs::create_dir(&path))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Err(e) => return Err(format!("mkdir {}: {e}", path.display())),
    }
    let opened = open_path(&path, OFlags::RDONLY | OFlags::DIRECTORY).and_then(|dir| {
        let procs = open_path(&path.join("cgroup.procs"), OFlags::WRONLY)?;
        Ok((dir, procs))
    });
    match opened {
        Ok((dir, procs)) => Ok(Cgroup { path, dir, procs }),
        Err(e) => {
            let _ = std::fs::remove_dir(&path);
            Err(format!("{}: {e}", path.display()))
        }
    }
}

/// Remove the cgroups of runs whose tmpfsctl and guard were both killed,
/// killing what is still in them: nobody is left to answer for it.
fn sweep_cgroups(base: &Path) {
    let Ok(rd) = std::fs::read_dir(base) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(CGROUP_PREFIX))
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // Only ESRCH means the owner is gone: EPERM is a live tmpfsctl of
        // another user (root's, seen from an unprivileged run), whose CMD
        // may run as our uid and would otherwise be killed here mid-run.
        let gone = Pid::from_raw(pid)
            .is_some_and(|p| rustix::process::test_kill_process(p) == Err(rustix::io::Errno::SRCH));
        if !gone {
            continue;
        }
        let _ = kill_and_remove(&e.path());
    }
}

/// `dir` and every cgroup below it (CMD, as root, may have made some),
/// parents before children.
fn cgroup_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = std::fs::read_dir(&out[i]) {
            out.extend(
                rd.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
        i += 1;
    }
    out
}

fn pids_in(dirs: &[PathBuf]) -> Vec<i32> {
    dirs.iter()
        .flat_map(|d| cgroup::pids_at(d))
        .filter_map(|p| i32::try_from(p).ok())
        .collect()
}

/// Kill everything in the cgroup at `path` (and below), wait until it is
/// empty and remove it; returns who was in it, and what went wrong.
fn kill_and_remove(path: &Path) -> (Vec<Leftover>, Option<String>) {
    let dirs = cgroup_dirs(path);
    let killed: Vec<Leftover> = pids_in(&dirs)
        .into_iter()
        .map(|pid| Leftover {
            pid,
            comm: read_comm(pid),
        })
        .collect();
    let by_kill_file = match open_path(&path.join("cgroup.kill"), OFlags::WRONLY) {
        Ok(fd) => rustix::io::write(&fd, b"1").is_ok(),
        Err(_) => false,
    };
    if !by_kill_file {
        // Kernels before 5.14 have no cgroup.kill: one by one, until empty.
        for _ in 0..100 {
            let pids = pids_in(&cgroup_dirs(path));
            if pids.is_empty() {
                break;
            }
            for p in pids.into_iter().filter_map(Pid::from_raw) {
                let _ = rustix::process::kill_process(p, Signal::KILL);
            }
        }
    }
    let empty = match open_path(&path.join("cgroup.events"), OFlags::RDONLY) {
        Ok(ev) => wait_empty(ev.as_fd()),
        Err(_) => true,
    };
    let shown = crate::term::safe_path(path);
    if !empty {
        let why = format!(
            "processes CMD started were still exiting after {} s; cgroup {shown} left in place",
            KILL_WAIT.as_secs()
        );
        return (killed, Some(why));
    }
    for d in cgroup_dirs(path).iter().rev() {
        if let Err(e) = std::fs::remove_dir(d) {
            let d = crate::term::safe_path(d);
            return (killed, Some(format!("cannot remove cgroup {d}: {e}")));
        }
    }
    (killed, None)
}

fn end_cgroup(cg: &Cgroup, out: &mut Ended) {
    // Usually CMD left nothing: then the cgroup goes with one rmdir, which
    // the kernel refuses while any process or child cgroup is in it.
    let procs = std::fs::read(cg.path.join("cgroup.procs")).unwrap_or_default();
    if procs.is_empty() && std::fs::remove_dir(&cg.path).is_ok() {
        return;
    }
    let (killed, err) = kill_and_remove(&cg.path);
    out.killed = killed;
    out.notes.extend(err);
}

/// The parent pid of `pid`.
fn ppid_of(pid: i32) -> Option<i32> {
    let s = proc::stat(&Sysroot::live(), u32::try_from(pid).ok()?)?;
    i32::try_from(s.ppid).ok()
}

/// Subreaper fallback: kill every child of tmpfsctl (orphans of CMD, handed
/// to us), reap them, and repeat for their children, handed to us in turn.
fn end_orphans(me: Pid, out: &mut Ended) {
    let me = me.as_raw_nonzero().get();
    for _ in 0..100 {
        let children: Vec<i32> = proc::pids(&Sysroot::live())
            .into_iter()
            .filter_map(|p| i32::try_from(p).ok())
            .filter(|&p| ppid_of(p) == Some(me))
            .collect();
        if children.is_empty() {
            return;
        }
        for pid in children {
            out.killed.push(Leftover {
                pid,
                comm: read_comm(pid),
            });
            if let Some(p) = Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(p, Signal::KILL);
                let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::empty());
            }
        }
    }
}

const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

enum Clone3 {
    /// Nothing was started: the kernel has no clone3 or no CLONE_INTO_CGROUP.
    Unsupported,
    Failed(io::Error),
}

/// Start `cmd` as a child born in the cgroup `dir`, the way std does it: the
/// child runs `Command::exec` and, should that fail, sends the error number
/// over a close-on-exec pipe (which reads empty once exec succeeded).
fn clone_into(dir: &OwnedFd, cmd: &mut std::process::Command) -> Result<i32, Clone3> {
    use std::os::unix::process::CommandExt;
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Clone3::Failed(io::Error::last_os_error()));
    }
    // SAFETY: both descriptors were just created and are owned only here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: dir.as_raw_fd() as u64,
        ..Default::default()
    };
    // SAFETY: clone3 without a new stack continues like fork in both
    // processes; the arguments live across the call. The process has one
    // thread (checked by the caller), so the child may allocate.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOSYS | libc::EINVAL | libc::E2BIG | libc::EOPNOTSUPP) => {
                Clone3::Unsupported
            }
            _ => Clone3::Failed(e),
        });
    }
    if r == 0 {
        drop(rd);
        let e = cmd.exec();
        let code = e.raw_os_error().unwrap_or(libc::EINVAL).to_ne_bytes();
        // SAFETY: writes our own buffer, then leaves without running the
        // parent's exit handlers or destructors.
        unsafe {
            libc::write(wr.as_raw_fd(), code.as_ptr().cast(), code.len());
            libc::_exit(127)
        }
    }
    drop(wr);
    let pid = r as i32;
    let mut code = [0u8; 4];
    let mut got = 0;
    while got < code.len() {
        match rustix::io::read(&rd, &mut code[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(Clone3::Failed(e.into())),
        }
    }
    if got == 0 {
        return Ok(pid);
    }
    // exec failed: reap the child, report why.
    let mut st = 0;
    // SAFETY: waits for our own child, into a local.
    unsafe { libc::waitpid(pid, &mut st, 0) };
    Err(Clone3::Failed(io::Error::from_raw_os_error(
        i32::from_ne_bytes(code),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_pid_survives_odd_command_names() {
        let me = std::process::id() as i32;
        let parent = rustix::process::getppid().map(|p| p.as_raw_nonzero().get());
        assert_eq!(ppid_of(me), parent);
        assert_eq!(ppid_of(-5), None);
    }
}
