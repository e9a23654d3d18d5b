//! Waiting for CMD while sampling the scratch and passing signals on.
//!
//! One thread, no handlers: SIGINT/SIGTERM/SIGHUP/SIGCHLD are blocked and read
//! from a signalfd, and `poll` on that fd doubles as the sampling timer. A
//! blocked signal cannot interrupt cleanup half way. The mask is inherited
//! across fork and exec (std's spawn does not reset it), so CMD gets an empty
//! mask set in the child before exec ([`unblock_in_child`]).
//!
//! rustix has no signalfd or sigprocmask wrapper, hence the libc calls here;
//! they are the only `unsafe` in the workspace module.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// The signals tmpfsctl passes on to CMD.
pub const FORWARDED: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A signal read from the signalfd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    pub signo: i32,
    /// Sent by the kernel itself (the terminal's ^C, ^\, hangup), which
    /// delivers it to the whole foreground process group, CMD included.
    pub from_kernel: bool,
}

/// Blocks the handled signals for the life of the value and reads them from a
/// signalfd; the previous mask is restored on drop.
pub struct Signals {
    fd: OwnedFd,
    old_mask: libc::sigset_t,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Signals {
    pub fn block() -> io::Result<Signals> {
        // SAFETY: sigset_t is plain data initialised by sigemptyset before any
        // other use; the pointers passed are to live locals.
        unsafe {
            let mut set = MaybeUninit::<libc::sigset_t>::uninit();
            cvt(libc::sigemptyset(set.as_mut_ptr()))?;
            let mut set = set.assume_init();
            for s in FORWARDED.iter().chain(&[libc::SIGCHLD]) {
                cvt(libc::sigaddset(&mut set, *s))?;
            }
            let mut old = MaybeUninit::<libc::sigset_t>::uninit();
            cvt(libc::sigemptyset(old.as_mut_ptr()))?;
            let mut old = old.assume_init();
            // pthread_sigmask returns the error number instead of setting errno.
            let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            if r != 0 {
                return Err(io::Error::from_raw_os_error(r));
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            if fd < 0 {
                let e = io::Error::last_os_error();
                libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
                return Err(e);
            }
            Ok(Signals {
                fd: OwnedFd::from_raw_fd(fd),
                old_mask: old,
            })
        }
    }

    /// Wait until a signal arrives or `timeout` passes (None: forever) and
    /// return what arrived, in order. EINTR (a stopped-and-continued tmpfsctl)
    /// counts as a wake-up with nothing received.
    pub fn wait(&self, timeout: Option<Duration>) -> io::Result<Vec<Received>> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = match timeout {
            None => -1,
            Some(d) => d.as_millis().clamp(0, i32::MAX as u128) as i32,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(Vec::new())
            } else {
                Err(e)
            };
        }
        self.drain()
    }

    /// Read every pending signal without waiting.
    pub fn drain(&self) -> io::Result<Vec<Received>> {
        let mut out = Vec::new();
        loop {
            let mut info = MaybeUninit::<libc::signalfd_siginfo>::uninit();
            let size = std::mem::size_of::<libc::signalfd_siginfo>();
            // SAFETY: the buffer is exactly one signalfd_siginfo; the kernel
            // writes whole records only.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), info.as_mut_ptr().cast(), size) };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(out),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            if n as usize != size {
                return Ok(out);
            }
            // SAFETY: read() filled the whole record.
            let info = unsafe { info.assume_init() };
            out.push(Received {
                signo: info.ssi_signo as i32,
                from_kernel: info.ssi_code == libc::SI_KERNEL,
            });
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        // A signal still pending is delivered (default action) once
        // unblocked; callers drain first when that is not wanted.
        // SAFETY: restoring the mask saved in block().
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old_mask, std::ptr::null_mut());
        }
    }
}

/// Make `cmd`'s child start with no signal blocked, whatever our mask is.
pub fn unblock_in_child(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and only calls
    // sigemptyset and pthread_sigmask, which are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let mut set = MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigemptyset(set.as_mut_ptr());
            let r = libc::pthread_sigmask(libc::SIG_SETMASK, set.as_ptr(), std::ptr::null_mut());
            if r != 0 {
                Err(io::Error::from_raw_os_error(r))
            } else {
                Ok(())
            }
        });
    }
}

/// The process group of `pid`, if it still exists.
pub fn pgid_of(pid: u32) -> Option<u32> {
    let p = rustix::process::Pid::from_raw(pid as i32)?;
    rustix::process::getpgid(Some(p))
        .ok()
        .map(|g| g.as_raw_nonzero().get() as u32)
}

pub fn own_pgid() -> u32 {
    rustix::process::getpgrp().as_raw_nonzero().get() as u32
}

/// Send `signo` to `pid` (CMD). Errors (CMD already gone) do not matter.
pub fn send(pid: u32, signo: i32) {
    if let (Some(p), Some(s)) = (
        rustix::process::Pid::from_raw(pid as i32),
        rustix::process::Signal::from_named_raw(signo),
    ) {
        let _ = rustix::process::kill_process(p, s);
    }
}
