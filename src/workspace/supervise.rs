//! Process helpers for supervising CMD: its process group, passing signals on.
//! The signal handling itself (signalfd, masks) is in [`crate::sys::signals`].

pub use crate::sys::signals::{FORWARDED, Signals, unblock_in_child};

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

/// CMD's exit status once it has ended (reaping it), else None.
pub fn try_wait(pid: i32) -> std::io::Result<Option<std::process::ExitStatus>> {
    use std::os::unix::process::ExitStatusExt;
    let mut st = 0;
    loop {
        // SAFETY: waits for our own child, into a local.
        let r = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
        match r {
            0 => return Ok(None),
            r if r == pid => return Ok(Some(std::process::ExitStatus::from_raw(st))),
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}
