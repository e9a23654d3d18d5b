//! Signals, one module for all of tmpfsctl.
//!
//! Three ways a command meets SIGINT/SIGTERM, each for a reason, and one way
//! out: an interrupted command returns an error holding [`Interrupted`] (or
//! any error once a signal was caught), and `run` turns it into exit 130
//! (143 for SIGTERM) after the command has cleaned up ([`is_interrupted`], [`exit_as_caught`]).
//! * [`Interrupt`]: a flag set by the handler, polled by long loops (bench,
//!   copies), which then stop cleanly; a second signal exits at once.
//! * [`SignalsHeld`]: signals blocked for a short critical section (a rename
//!   into place), delivered right after it.
//! * [`Signals`]: signals blocked and read from a signalfd, for a supervisor
//!   (`run`) whose `poll` on that fd doubles as its sampling timer; a blocked
//!   signal cannot interrupt cleanup half way. The mask is inherited across
//!   fork and exec (std's spawn does not reset it), so a child gets an empty
//!   mask set before exec ([`unblock_in_child`]).
//!
//! rustix has no signalfd or sigprocmask wrapper, hence the libc calls here.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// The error a long operation returns when [`Interrupt`] was set; commands
/// turn it into exit code 130 after cleaning up.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted by a signal")
    }
}

impl std::error::Error for Interrupted {}

/// The signal [`Interrupt`] caught (0: none yet), for the one way out.
fn caught_signal() -> &'static Arc<AtomicUsize> {
    static CAUGHT: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    CAUGHT.get_or_init(|| Arc::new(AtomicUsize::new(0)))
}

/// The signal an [`Interrupt`] caught in this process, if any.
pub fn caught() -> Option<i32> {
    match caught_signal().load(Ordering::Relaxed) {
        0 => None,
        s => i32::try_from(s).ok(),
    }
}

/// A command that finished (or rolled back) rather than stop half way ends
/// like an interrupted one once a signal was caught: `what` says what it
/// did, and the exit code says a signal came (130, 143 for SIGTERM).
pub fn check_finished(what: impl FnOnce() -> String) -> anyhow::Result<()> {
    if caught().is_some() {
        return Err(anyhow::Error::new(Interrupted).context(what()));
    }
    Ok(())
}

/// Whether `e` ends a command that was interrupted: it holds
/// [`Interrupted`], or a signal was caught (whatever failed after it failed
/// because the work was being stopped).
pub fn is_interrupted(e: &anyhow::Error) -> bool {
    caught().is_some() || e.chain().any(|c| c.downcast_ref::<Interrupted>().is_some())
}

/// What an interrupted command says on stderr: what it reported on its way
/// out (the error's context), without the bare "interrupted by a signal".
pub fn interrupted_message(e: &anyhow::Error) -> String {
    let said: Vec<String> = e
        .chain()
        .filter(|c| c.downcast_ref::<Interrupted>().is_none())
        .map(|c| c.to_string())
        .collect();
    if said.is_empty() {
        "interrupted".into()
    } else {
        format!("interrupted: {}", said.join(": "))
    }
}

/// End the process the way the caught signal asks, after cleanup: a SIGINT
/// is raised again with its default action, so the shell sees a death by
/// SIGINT (`$?` 130) and a script running tmpfsctl stops too (bash goes on
/// after a child that *exited* 130, taking it for a program that handled
/// Ctrl-C itself). Any other signal exits 128 + its number (SIGTERM: 143,
/// what systemd and shell scripts expect of a service stopped by it); a
/// return from the raise exits 130.
pub fn exit_as_caught() -> ! {
    let _ = std::io::Write::flush(&mut std::io::stdout());
    if caught() == Some(libc::SIGINT) {
        // SAFETY: SIG_DFL is a valid disposition; unblocking SIGINT and
        // raising it only ends this process, whose cleanup has run.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(libc::SIGINT);
        }
    }
    std::process::exit(exit_status(caught()))
}

/// The exit status of a process stopped by `sig`: 128 + its number, 130
/// when none is known.
fn exit_status(sig: Option<i32>) -> i32 {
    128 + sig.unwrap_or(libc::SIGINT)
}

/// SIGINT/SIGTERM set a flag instead of killing the process, so loops stop
/// at a safe point and clean up. Handlers are removed on drop.
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl Interrupt {
    /// Install the handlers. With `second_exits`, a second signal ends the
    /// process at once with status 128 + its number (the first one is the
    /// clean way out; the second is for a user who cannot wait). Commands
    /// that must not stop half way (persist's disable, enable, restore)
    /// pass false and finish or roll back whatever comes.
    pub fn install(second_exits: bool) -> io::Result<Interrupt> {
        Interrupt::install_on(Arc::new(AtomicBool::new(false)), second_exits)
    }

    /// As [`Interrupt::install`], setting an existing flag.
    pub fn install_on(flag: Arc<AtomicBool>, second_exits: bool) -> io::Result<Interrupt> {
        use signal_hook::consts::signal::{SIGINT, SIGTERM};
        let mut ids = Vec::new();
        for sig in [SIGINT, SIGTERM] {
            if second_exits {
                ids.push(signal_hook::flag::register_conditional_shutdown(
                    sig,
                    exit_status(Some(sig)),
                    Arc::clone(&flag),
                )?);
            }
            ids.push(signal_hook::flag::register(sig, Arc::clone(&flag))?);
            ids.push(signal_hook::flag::register_usize(
                sig,
                Arc::clone(caught_signal()),
                sig as usize,
            )?);
        }
        Ok(Interrupt { flag, ids })
    }

    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP until dropped; a signal that arrived
/// meanwhile is delivered (with its disposition) right after.
pub struct SignalsHeld {
    old: libc::sigset_t,
}

impl SignalsHeld {
    #[allow(clippy::new_without_default)]
    pub fn new() -> SignalsHeld {
        // SAFETY: sigset_t is plain data; the calls only read/write the sets we own.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigaddset(&mut set, libc::SIGHUP);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            SignalsHeld { old }
        }
    }
}

impl Drop for SignalsHeld {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in new().
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}

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
