//! Where there is no cgroup for CMD (an unprivileged user without a delegated
//! subtree), CMD's tree is held by a PID namespace instead.
//!
//! tmpfsctl clones an *init* (`clone3` with `CLONE_NEWPID | CLONE_NEWNS`, and
//! `CLONE_NEWUSER` when tmpfsctl holds no user namespace of its own yet).
//! The init sets `PR_SET_PDEATHSIG(SIGKILL)`, mounts a fresh /proc (so `ps`
//! in CMD shows the namespace, not the machine) and starts CMD as its child.
//! When the init dies — because CMD ended, or because tmpfsctl died and the
//! kernel sent it SIGKILL — the kernel kills every process left in the
//! namespace, setsid daemons included: nothing CMD started can outlive the
//! run, however tmpfsctl ends.
//!
//! The init passes on the signals tmpfsctl sends it (the terminal's own
//! signals already reach CMD, which shares the process group), reaps
//! orphans, and when CMD ends writes CMD's wait status and the processes
//! still running (as CMD saw them) to a pipe, then exits.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, ExitStatus};

use rustix::mount::{MountFlags, MountPropagationFlags};

use super::procs::Leftover;
use crate::sys::{Sysroot, proc};

/// At most this many leftovers are named: the report must fit the pipe's
/// buffer, which nobody reads until the init has exited.
const MAX_NAMED: usize = 64;

/// Why no PID namespace could be made; the run falls back to the subreaper.
pub struct NotPossible(pub String);

pub enum SpawnError {
    NotPossible(NotPossible),
    /// The namespace was made but CMD could not be started (exec failed).
    Exec(io::Error),
}

/// The init of CMD's PID namespace, seen from tmpfsctl.
pub struct Init {
    pub pid: i32,
    /// Read end of the init's report pipe.
    report: OwnedFd,
    /// /proc in the namespace could not be mounted: leftovers go unnamed.
    pub proc_note: Option<String>,
}

/// What the init said when CMD ended.
pub struct Report {
    pub status: ExitStatus,
    pub leftovers: Vec<Leftover>,
    /// More were running than [`MAX_NAMED`]; all were killed.
    pub unnamed: u32,
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned only here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Why the kernel's policy forbids unprivileged user namespaces, if it does.
pub fn userns_policy() -> Option<String> {
    userns_policy_in(Path::new("/"))
}

/// [`userns_policy`] with /proc under `root` (a fixture in tests).
fn userns_policy_in(root: &Path) -> Option<String> {
    let read_num = |p: &str| -> Option<i64> {
        let text = std::fs::read_to_string(root.join(p.trim_start_matches('/'))).ok()?;
        text.trim().parse().ok()
    };
    [
        ("/proc/sys/user/max_user_namespaces", 0),
        ("/proc/sys/kernel/unprivileged_userns_clone", 0),
        ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 1),
    ]
    .into_iter()
    .find(|(p, off)| read_num(p) == Some(*off))
    .map(|(p, off)| format!("{p} is {off}"))
}

fn read_full(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match rustix::io::read(fd, &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(got)
}

/// Start `cmd` as the only child of a new PID namespace's init. `cmd` must
/// not carry a parent-death pre_exec check (its parent is the init).
pub fn spawn(cmd: &mut Command) -> Result<Init, SpawnError> {
    let np = |s: String| SpawnError::NotPossible(NotPossible(s));
    if !super::procs::single_threaded() {
        return Err(np("tmpfsctl runs more than one thread".into()));
    }
    let (report_rd, report_wr) = pipe().map_err(|e| np(format!("pipe: {e}")))?;
    let (life_rd, life_wr) = pipe().map_err(|e| np(format!("pipe: {e}")))?;
    // Read here, not in the init: in a new user namespace without a map
    // yet, getuid() says the overflow uid (65534), and mapping that instead
    // of our own uid is refused (EPERM).
    let ids = (
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
    );
    let mut flags = (libc::CLONE_NEWPID | libc::CLONE_NEWNS) as u64;
    let mut r = clone(flags);
    let mut new_user = false;
    if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) {
        flags |= libc::CLONE_NEWUSER as u64;
        new_user = true;
        r = clone(flags);
    }
    if r < 0 {
        let e = io::Error::last_os_error();
        let policy = userns_policy()
            .map(|p| format!(", {p}"))
            .unwrap_or_default();
        return Err(np(format!("clone(CLONE_NEWPID): {e}{policy}")));
    }
    if r == 0 {
        drop(report_rd);
        drop(life_wr);
        init_main(cmd, new_user.then_some(ids), &report_wr, &life_rd);
    }
    drop(report_wr);
    drop(life_rd);
    let pid = r as i32;
    // The first message: 'R' and whether /proc was mounted; 'E' and the
    // exec error; 'F' and why the namespace could not be set up.
    let mut head = [0u8; 5];
    let got = read_full(&report_rd, &mut head).unwrap_or(0);
    let fail = |why: SpawnError| {
        reap(pid);
        Err(why)
    };
    drop(life_wr);
    match (got, head[0]) {
        (5, b'R') => Ok(Init {
            pid,
            report: report_rd,
            proc_note: (head[1] == 0)
                .then(|| "/proc could not be mounted in CMD's PID namespace: processes CMD leaves running are killed but not named".to_string()),
        }),
        (5, b'E') => {
            let errno = i32::from_ne_bytes([head[1], head[2], head[3], head[4]]);
            fail(SpawnError::Exec(io::Error::from_raw_os_error(errno)))
        }
        (5, b'F') => {
            let mut why = vec![0u8; 512];
            let n = read_full(&report_rd, &mut why).unwrap_or(0);
            let why = String::from_utf8_lossy(&why[..n]).into_owned();
            fail(np(why))
        }
        _ => fail(np("the namespace's init ended before starting CMD".into())),
    }
}

fn clone(flags: u64) -> libc::c_long {
    let args = super::procs::CloneArgs {
        flags,
        exit_signal: libc::SIGCHLD as u64,
        ..Default::default()
    };
    // SAFETY: clone3 without a new stack continues like fork in both
    // processes; the arguments live across the call. The process has one
    // thread (checked by the caller), so the child may allocate.
    unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const super::procs::CloneArgs,
            std::mem::size_of::<super::procs::CloneArgs>(),
        )
    }
}

fn reap(pid: i32) {
    let mut st = 0;
    // SAFETY: waits for our own child, into a local.
    unsafe { libc::waitpid(pid, &mut st, 0) };
}

fn write_all(fd: &OwnedFd, mut b: &[u8]) {
    while !b.is_empty() {
        match rustix::io::write(fd, b) {
            Ok(n) => b = &b[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
    }
}

/// The init could not set the namespace up: say why, and end.
fn failed(report: &OwnedFd, why: String) -> ! {
    write_all(report, b"F\0\0\0\0");
    write_all(report, why.as_bytes());
    leave(1)
}

/// Leave the init without running tmpfsctl's exit handlers or destructors.
fn leave(code: i32) -> ! {
    // SAFETY: _exit ends the process at once; nothing is shared with it.
    unsafe { libc::_exit(code) }
}

/// `map`: the (uid, gid) to map onto themselves when the init is in a new
/// user namespace.
fn init_main(cmd: &mut Command, map: Option<(u32, u32)>, report: &OwnedFd, life: &OwnedFd) -> ! {
    if rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .is_err()
    {
        leave(1);
    }
    // tmpfsctl may have died before the prctl: its end of `life` is then
    // closed (getppid cannot tell, it is 0 for a namespace's init).
    let mut pfd = libc::pollfd {
        fd: life.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    if unsafe { libc::poll(&mut pfd, 1, 0) } != 0 {
        leave(1);
    }
    if let Some((uid, gid)) = map
        && let Err(e) = super::scratch::map_ids(uid, gid)
    {
        failed(report, format!("{e:#}"));
    }
    // The /proc mounted below must not propagate to the namespace tmpfsctl
    // runs in (as root that is the machine's own).
    if let Err(e) = rustix::mount::mount_change(
        "/",
        MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
    ) {
        failed(
            report,
            format!("making / a slave mount in CMD's namespace: {e}"),
        );
    }
    let proc_ok = rustix::mount::mount(
        "proc",
        "/proc",
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .is_ok();
    // Started without a copy of the init's memory (see `vspawn`); by fork
    // where the kernel cannot.
    let started = super::vspawn::Prepared::new(cmd).map_err(super::vspawn::SpawnError::Failed);
    let started = match started.and_then(|p| super::vspawn::spawn(&p, None, None)) {
        Err(super::vspawn::SpawnError::Unsupported) => cmd.spawn().map(|c| c.id() as i32),
        Err(super::vspawn::SpawnError::Failed(e)) => Err(e),
        Ok(pid) => Ok(pid),
    };
    let child = match started {
        Ok(c) => c,
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(libc::EINVAL).to_ne_bytes();
            write_all(report, &[b'E', errno[0], errno[1], errno[2], errno[3]]);
            leave(127)
        }
    };
    write_all(report, &[b'R', u8::from(proc_ok), 0, 0, 0]);
    let status = supervise(child);
    let mut out = status.to_ne_bytes().to_vec();
    let left = if proc_ok { running() } else { Vec::new() };
    out.extend((left.len() as u32).to_ne_bytes());
    for (pid, comm) in left.iter().take(MAX_NAMED) {
        out.extend(pid.to_ne_bytes());
        let c = &comm.as_bytes()[..comm.len().min(255)];
        out.push(c.len() as u8);
        out.extend(c);
    }
    write_all(report, &out);
    // Exiting is what kills the rest of the namespace.
    leave(0)
}

/// Pass tmpfsctl's signals on to CMD and reap orphans until CMD ends;
/// returns CMD's wait status.
fn supervise(child: i32) -> i32 {
    // SAFETY (whole function): sigset_t is plain data set up by sigemptyset;
    // every pointer is to a live local.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in super::supervise::FORWARDED.iter().chain(&[libc::SIGCHLD]) {
            libc::sigaddset(&mut set, *s);
        }
        // Already blocked by tmpfsctl before the clone; kept so for sigwaitinfo.
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        loop {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let sig = libc::sigwaitinfo(&set, &mut info);
            if sig == libc::SIGCHLD {
                loop {
                    let mut st = 0;
                    let p = libc::waitpid(-1, &mut st, libc::WNOHANG);
                    if p == child {
                        return st;
                    }
                    if p <= 0 {
                        break;
                    }
                }
            } else if sig > 0 && info.si_code <= 0 && info.si_pid() == 0 {
                // Sent from outside the namespace (tmpfsctl): CMD's. The
                // kernel's own (the terminal's ^C) reached CMD directly.
                libc::kill(child, sig);
            }
        }
    }
}

/// The processes in the namespace besides the init, with their names;
/// zombies (exited, waiting to be reaped) are not running.
fn running() -> Vec<(i32, String)> {
    let root = Sysroot::live();
    proc::pids(&root)
        .into_iter()
        .filter(|&p| p != 1)
        .filter_map(|p| proc::stat(&root, p))
        .filter(|s| s.state != 'Z')
        .filter_map(|s| {
            Some((
                i32::try_from(s.pid).ok()?,
                super::procs::read_comm(s.pid as i32),
            ))
        })
        .collect()
}

impl Init {
    /// The init has exited (reaped with `st`): read its report. Without one
    /// the init itself was killed, and with it everything CMD started.
    pub fn finish(self, st: ExitStatus) -> Report {
        use std::os::unix::process::ExitStatusExt;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(n) = rustix::io::read(&self.report, &mut chunk) {
            if n == 0 {
                break;
            }
            buf.extend(&chunk[..n]);
        }
        let num = |at: usize| -> Option<i32> {
            Some(i32::from_ne_bytes(buf.get(at..at + 4)?.try_into().ok()?))
        };
        let (Some(status), Some(count)) = (num(0), num(4)) else {
            return Report {
                status: st,
                leftovers: Vec::new(),
                unnamed: 0,
            };
        };
        let mut leftovers = Vec::new();
        let mut at = 8;
        while let (Some(pid), Some(&len)) = (num(at), buf.get(at + 4)) {
            let end = at + 5 + usize::from(len);
            let Some(name) = buf.get(at + 5..end) else {
                break;
            };
            leftovers.push(Leftover {
                pid,
                comm: OsStr::from_bytes(name).to_string_lossy().into_owned(),
            });
            at = end;
        }
        Report {
            status: ExitStatus::from_raw(status),
            unnamed: (count as u32).saturating_sub(leftovers.len() as u32),
            leftovers,
        }
    }

    /// An early end (tmpfsctl failing): take the namespace down now.
    pub fn kill(self) {
        if let Some(p) = rustix::process::Pid::from_raw(self.pid) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        }
        reap(self.pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_that_forbids_user_namespaces_is_named() {
        let t = tempfile::tempdir().unwrap();
        let set = |p: &str, v: &str| {
            let f = t.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, v).unwrap();
        };
        // Absent files (most kernels lack two of them) forbid nothing.
        assert_eq!(userns_policy_in(t.path()), None);
        set("proc/sys/user/max_user_namespaces", "63000\n");
        set(
            "proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "0\n",
        );
        assert_eq!(userns_policy_in(t.path()), None);
        set(
            "proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "1\n",
        );
        assert_eq!(
            userns_policy_in(t.path()).as_deref(),
            Some("/proc/sys/kernel/apparmor_restrict_unprivileged_userns is 1")
        );
        set("proc/sys/user/max_user_namespaces", "0\n");
        assert_eq!(
            userns_policy_in(t.path()).as_deref(),
            Some("/proc/sys/user/max_user_namespaces is 0")
        );
    }
}
