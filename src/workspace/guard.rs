//! The guard: a process outside CMD's cgroup, blocked reading a pipe whose
//! only writer is tmpfsctl. tmpfsctl ending normally writes one byte and the
//! guard exits; tmpfsctl dying any other way (kill -9) makes the pipe read
//! EOF, and the guard kills the cgroup and removes it (see `tree`).
//!
//! The guard gets its own copy of tmpfsctl's memory (`clone` without
//! `CLONE_VM`, on a stack of its own). Sharing the memory instead would save
//! the copy-on-write faults of a fork (about a tenth of a short run's CPU),
//! but the OOM killer takes every process that shares its victim's memory:
//! an OOM kill of tmpfsctl would take the guard along, and what CMD started
//! would outlive the run. The guard is written as if it shared anyway: it
//! runs on its own stack, reads its arguments from that stack's far end and
//! makes only raw system calls (through rustix, which sets no errno), so it
//! is safe after a fork of a multi-threaded process.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use rustix::fs::OFlags;

/// How long the end of a run waits for killed processes to be gone: a bound
/// against a process stuck in the kernel, not an expected duration.
pub(super) const KILL_WAIT: Duration = Duration::from_secs(10);

/// The guard's stack; it needs a few hundred bytes, the rest is never
/// touched (anonymous memory costs nothing until written).
const STACK_SIZE: usize = 64 * 1024;
/// Longest cgroup name the guard can remove (ours are about 25 bytes).
const NAME_MAX: usize = 256;

/// What the guard works with, written at the bottom of its stack before it
/// starts and never touched by tmpfsctl afterwards.
#[repr(C)]
struct Args {
    rd: RawFd,
    kill: RawFd,
    events: RawFd,
    parent: RawFd,
    /// NUL-terminated.
    name: [u8; NAME_MAX],
}

pub(super) struct Guard {
    pid: libc::pid_t,
    /// The write end of the guard's pipe; one byte means "done, stand down".
    tell: OwnedFd,
    /// The guard's stack mapping, unmapped once the guard is reaped.
    stack: *mut libc::c_void,
}

fn open(p: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        p,
        flags | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?)
}

/// Start the guard of the cgroup at `cg`. Everything it needs is opened
/// first, so it only makes system calls.
pub(super) fn start(cg: &Path) -> io::Result<Guard> {
    let kill = open(&cg.join("cgroup.kill"), OFlags::WRONLY)?;
    let events = open(&cg.join("cgroup.events"), OFlags::RDONLY)?;
    let parent = open(
        cg.parent().unwrap_or(Path::new("/")),
        OFlags::PATH | OFlags::DIRECTORY,
    )?;
    let name = CString::new(cg.file_name().unwrap_or_default().as_bytes())?;
    let name = name.as_bytes_with_nul();
    if name.len() > NAME_MAX {
        return Err(io::Error::other("cgroup name too long for the guard"));
    }
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned only here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: a fresh private anonymous mapping, checked below.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let mut args = Args {
        rd: rd.as_raw_fd(),
        kill: kill.as_raw_fd(),
        events: events.as_raw_fd(),
        parent: parent.as_raw_fd(),
        name: [0; NAME_MAX],
    };
    args.name[..name.len()].copy_from_slice(name);
    let at = stack.cast::<Args>();
    // SAFETY: `at` is the page-aligned start of a mapping of STACK_SIZE
    // bytes, larger than Args; the stack proper grows down from the other
    // end. The child gets its own copy of the memory and of the descriptor
    // table at clone, so the descriptors may be closed here afterwards;
    // `entry` makes only raw system calls on the arguments and never returns
    // into tmpfsctl's code.
    let pid = unsafe {
        at.write(args);
        libc::clone(
            entry,
            stack.cast::<u8>().add(STACK_SIZE).cast(),
            libc::SIGCHLD,
            at.cast(),
        )
    };
    if pid == -1 {
        let e = io::Error::last_os_error();
        // SAFETY: nothing runs on the mapping: the clone failed.
        unsafe { libc::munmap(stack, STACK_SIZE) };
        return Err(e);
    }
    Ok(Guard {
        pid,
        tell: wr,
        stack,
    })
}

extern "C" fn entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `start` wrote an Args here and leaves it alone.
    let a = unsafe { &*arg.cast::<Args>() };
    guard_main(a)
}

fn guard_main(a: &Args) -> ! {
    // SAFETY: the descriptors are open in this process (its table is a copy
    // of tmpfsctl's at clone) until the close_range calls below, which keep them.
    let fd = |n: RawFd| unsafe { BorrowedFd::borrow_raw(n) };
    // A process group of its own: `kill -9 -PGID` or `timeout -s KILL`
    // aimed at tmpfsctl's group must not take the guard along, or CMD's
    // daemons, cgroup and scratch would outlive it. Not a session: the
    // terminal's signals reach only its foreground group and the guard
    // blocks them anyway, and a new session costs a scheduler autogroup
    // (about 1% of a short run).
    let _ = rustix::process::setpgid(None, None);
    // No signal from the terminal or tmpfsctl's process group may stop the
    // guard; only SIGKILL can. The raw call: glibc's wrapper could set errno.
    let all: u64 = !0;
    // SAFETY: a valid 8-byte set and no old-set pointer; cannot fail.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &all as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        );
    }
    // Hold nothing of tmpfsctl's: its stdout/stderr pipes would stay open
    // for whoever reads them (and its end of our pipe would never close).
    let mut keep = [a.rd, a.kill, a.events, a.parent];
    keep.sort_unstable();
    let mut from: libc::c_uint = 0;
    for k in keep {
        if (k as libc::c_uint) > from {
            close_range(from, k as libc::c_uint - 1);
        }
        from = k as libc::c_uint + 1;
    }
    close_range(from, libc::c_uint::MAX);
    // Nor keep its working directory busy.
    let _ = rustix::process::chdir(c"/");
    let mut b = [0u8; 1];
    loop {
        match rustix::io::read(fd(a.rd), &mut b) {
            Ok(1) => leave(),
            Err(rustix::io::Errno::INTR) => continue,
            _ => break,
        }
    }
    // tmpfsctl is gone without standing us down: take CMD's tree with it.
    let _ = rustix::io::write(fd(a.kill), b"1");
    let events = fd(a.events);
    wait_empty(events);
    let len = a.name.iter().position(|&c| c == 0).unwrap_or(0);
    if let Ok(name) = std::ffi::CStr::from_bytes_with_nul(&a.name[..=len]) {
        let _ = rustix::fs::unlinkat(fd(a.parent), name, rustix::fs::AtFlags::REMOVEDIR);
    }
    leave()
}

fn close_range(from: libc::c_uint, to: libc::c_uint) {
    // SAFETY: closes descriptors of this process only; glibc's syscall()
    // touches errno only on failure, and close_range over a valid range
    // does not fail.
    unsafe {
        libc::syscall(libc::SYS_close_range, from, to, 0);
    }
}

fn leave() -> ! {
    // SAFETY: exit_group at once: no exit handlers, nothing of tmpfsctl's run.
    unsafe { libc::syscall(libc::SYS_exit_group, 0) };
    // exit_group does not return.
    #[allow(clippy::empty_loop)]
    loop {}
}

/// Tell the guard tmpfsctl ended normally, and reap it.
pub(super) fn stand_down(g: Guard) {
    let _ = rustix::io::write(&g.tell, b"x");
    drop(g.tell);
    let mut st = 0;
    // SAFETY: waits for our own child, into a local; __WCLONE is not
    // needed: the guard reports to us with SIGCHLD like a forked child.
    let reaped = unsafe { libc::waitpid(g.pid, &mut st, 0) } == g.pid;
    if reaped {
        // SAFETY: the guard, the only user of this stack, is gone.
        unsafe { libc::munmap(g.stack, STACK_SIZE) };
    }
}

/// Whether `cgroup.events` (read whole from offset 0) says "populated 0".
fn unpopulated(events: &[u8]) -> bool {
    let key = b"populated ";
    events
        .windows(key.len() + 1)
        .any(|w| w.starts_with(key) && w[key.len()] == b'0')
}

/// Wait, with the bound of [`KILL_WAIT`], until the cgroup has no process.
/// Only raw system calls: the guard runs it, and so does the end of a run.
pub(super) fn wait_empty(events: BorrowedFd<'_>) -> bool {
    let step = Duration::from_millis(2);
    let mut buf = [0u8; 256];
    for _ in 0..(KILL_WAIT.as_millis() / step.as_millis()) {
        match rustix::io::pread(events, &mut buf, 0) {
            Ok(n) if unpopulated(&buf[..n]) => return true,
            Ok(_) => {}
            // The cgroup is gone.
            Err(_) => return true,
        }
        let ts = rustix::thread::Timespec {
            tv_sec: 0,
            tv_nsec: step.as_nanos() as _,
        };
        let _ = rustix::thread::nanosleep(&ts);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn populated_is_read_from_cgroup_events() {
        assert!(unpopulated(b"populated 0\nfrozen 0\n"));
        assert!(!unpopulated(b"populated 1\nfrozen 0\n"));
        assert!(!unpopulated(b""));
    }
}
