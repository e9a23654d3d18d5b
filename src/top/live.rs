//! The refreshing view: redraw every interval, `q` quits, Ctrl-C too, and
//! the terminal is always given back as it was (a guard restores it on every
//! way out, errors included).

use std::collections::HashMap;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{TopQuery, add_growth, render, snapshot};
use crate::context::{Context, ExitCode};
use crate::sys::signals::Interrupt;

/// Non-canonical, no-echo input on stdin while alive: keys arrive one by
/// one without Enter. Signals stay on (ISIG), so Ctrl-C still reaches the
/// Interrupt flag and the loop exits through the same clean path.
struct Cbreak {
    fd: i32,
    saved: libc::termios,
}

impl Cbreak {
    fn enter() -> Option<Cbreak> {
        let fd = std::io::stdin().as_raw_fd();
        // SAFETY: termios is plain integers; all-zero is a valid value to fill.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `t` is a valid termios to fill; fd is stdin, open for our lifetime.
        if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
            return None;
        }
        let saved = t;
        t.c_lflag &= !(libc::ICANON | libc::ECHO);
        t.c_cc[libc::VMIN] = 0;
        t.c_cc[libc::VTIME] = 0;
        // SAFETY: as above; `t` is a copy of the current settings, changed.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &t) } != 0 {
            return None;
        }
        // Hide the cursor while redrawing.
        print!("\x1b[?25l");
        Some(Cbreak { fd, saved })
    }
}

impl Drop for Cbreak {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in `enter` on the same fd.
        unsafe {
            libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved);
        }
        print!("\x1b[?25h");
        let _ = std::io::stdout().flush();
    }
}

/// Wait up to `d` for a key; true when it was `q` (or `Q`).
fn wait_for_quit(d: Duration, stop: &Interrupt) -> bool {
    let end = Instant::now() + d;
    let fd = std::io::stdin().as_raw_fd();
    while !stop.is_set() {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // Short slices: a signal that does not interrupt poll is still seen soon.
        let ms = left.as_millis().min(200) as i32;
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n > 0 {
            let mut b = [0u8; 16];
            // SAFETY: reads at most b.len() bytes into b.
            let got = unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
            if got <= 0 {
                return false; // stdin closed: keep refreshing until Ctrl-C
            }
            if b[..got as usize].iter().any(|&c| c == b'q' || c == b'Q') {
                return true;
            }
        }
    }
    true
}

pub fn run(ctx: &Context, paths: &[PathBuf], q: &TopQuery) -> Result<ExitCode> {
    // A second Ctrl-C must not skip the terminal restore: one flag, one way out.
    let stop = Interrupt::install(false)?;
    let _term = Cbreak::enter();
    let mut prev: HashMap<String, (Instant, u64)> = HashMap::new();
    loop {
        let at = Instant::now();
        let mut r = snapshot(ctx, paths, q.top_n)?;
        add_growth(&mut r, &prev, at);
        prev = r
            .mounts
            .iter()
            .filter_map(|m| Some((m.mountpoint.clone(), (at, m.used_bytes?))))
            .collect();
        let mut out = std::io::stdout().lock();
        // Home and clear, then the frame: one write, no flicker of a half frame.
        let frame = format!("\x1b[H\x1b[2J{}", render::text(&r, Some(q.interval)));
        out.write_all(frame.as_bytes())?;
        out.flush()?;
        drop(out);
        if wait_for_quit(q.interval, &stop) {
            break;
        }
    }
    Ok(if stop.is_set() {
        ExitCode::Interrupted
    } else {
        ExitCode::Ok
    })
}
