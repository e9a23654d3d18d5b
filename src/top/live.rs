//! The refreshing view: one screenful redrawn in place every interval; keys
//! sort, filter to one mount and show help; `q` quits, Ctrl-C too, and
//! the terminal is always given back as it was (a guard restores it on every
//! way out, errors included).

use std::collections::HashMap;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{TopQuery, add_growth, render, snapshot};
use crate::command::{Context, ExitCode};
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
        // The alternate screen (given back as it was on exit, as top and
        // less do) and no cursor while redrawing.
        print!("\x1b[?1049h\x1b[?25l");
        Some(Cbreak { fd, saved })
    }
}

impl Drop for Cbreak {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in `enter` on the same fd.
        unsafe {
            libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved);
        }
        print!("\x1b[?25h\x1b[?1049l");
        let _ = std::io::stdout().flush();
    }
}

/// What ended a wait.
enum Wake {
    /// The interval is over: time for a new snapshot.
    Refresh,
    /// Keys typed since the last frame, in order.
    Keys(Vec<u8>),
    Quit,
}

/// Wait up to `d` for a key on `fd` (the terminal), until `stop` is set.
fn wait_for_key(fd: RawFd, d: Duration, stop: &AtomicBool) -> Wake {
    let end = Instant::now() + d;
    while !stop.load(Ordering::Relaxed) {
        // Keys are looked at even when the interval is already over (a
        // snapshot slower than the interval): otherwise `q` is never read.
        let left = end.saturating_duration_since(Instant::now());
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
                // stdin closed: keep refreshing until Ctrl-C.
                std::thread::sleep(left);
                return Wake::Refresh;
            }
            let keys = &b[..got as usize];
            if keys.iter().any(|&c| c == b'q' || c == b'Q') {
                return Wake::Quit;
            }
            // An escape sequence (an arrow key) is not a command.
            if keys.first() != Some(&0x1b) {
                return Wake::Keys(keys.to_vec());
            }
        } else if left.is_zero() {
            return Wake::Refresh;
        }
    }
    Wake::Quit
}

/// The terminal's height in rows (24 when it does not say).
fn rows() -> usize {
    // SAFETY: winsize is plain integers; all-zero is a valid value to fill.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ fills one winsize; fd 1 is stdout, a terminal here.
    let ok = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_row >= 2 {
        usize::from(ws.ws_row)
    } else {
        24
    }
}

/// Apply a key to the view; the mounts it may filter to come from `r`.
fn press(view: &mut render::View, key: u8, r: &super::TopReport) {
    if view.help {
        // Any key leaves the help.
        view.help = false;
        return;
    }
    match key {
        b'b' | b'B' => view.sort = render::SortBy::Bytes,
        b'i' | b'I' => view.sort = render::SortBy::Inodes,
        b'g' | b'G' => view.sort = render::SortBy::Growth,
        b'a' | b'A' => view.only = None,
        b'f' | b'F' => {
            let names: Vec<&String> = r.mounts.iter().map(|m| &m.mountpoint).collect();
            let next = match &view.only {
                None => 0,
                Some(cur) => names.iter().position(|n| *n == cur).map_or(0, |i| i + 1),
            };
            view.only = names.get(next).map(|n| (*n).clone());
        }
        b'?' | b'h' | b'H' => view.help = true,
        _ => {}
    }
}

pub fn run(ctx: &Context, paths: &[PathBuf], q: &TopQuery) -> Result<ExitCode> {
    // A second Ctrl-C must not skip the terminal restore: one flag, one way out.
    let stop = Interrupt::install(false)?;
    let stopped = stop.flag();
    let stdin = std::io::stdin().as_raw_fd();
    let _term = Cbreak::enter();
    let mut prev: HashMap<String, (Instant, u64)> = HashMap::new();
    let mut view = render::View::default();
    'snapshots: loop {
        let at = Instant::now();
        let mut r = snapshot(ctx, paths, q.top_n)?;
        add_growth(&mut r, &prev, at);
        prev = r
            .mounts
            .iter()
            .filter_map(|m| Some((m.mountpoint.clone(), (at, m.used_bytes?))))
            .collect();
        let next = at + q.interval;
        loop {
            let cols = crate::render::terminal_columns().unwrap_or(80);
            // One write per frame, drawn over the last: no flicker, no scrolling.
            let frame = render::frame(&r, &view, q.interval, cols, rows());
            let mut out = std::io::stdout().lock();
            out.write_all(frame.as_bytes())?;
            out.flush()?;
            drop(out);
            match wait_for_key(
                stdin,
                next.saturating_duration_since(Instant::now()),
                &stopped,
            ) {
                Wake::Refresh => continue 'snapshots,
                Wake::Quit => break 'snapshots,
                // Redraw the same snapshot at once: a key answers now, not at the next refresh.
                Wake::Keys(ks) => ks.into_iter().for_each(|k| press(&mut view, k, &r)),
            }
        }
    }
    Ok(if stop.is_set() {
        ExitCode::Interrupted
    } else {
        ExitCode::Ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_typed_during_a_slow_snapshot_is_read_though_the_interval_is_over() {
        let (r, mut w) = std::io::pipe().unwrap();
        w.write_all(b"q").unwrap();
        let stop = AtomicBool::new(false);
        assert!(matches!(
            wait_for_key(r.as_raw_fd(), Duration::ZERO, &stop),
            Wake::Quit
        ));
        w.write_all(b"i").unwrap();
        assert!(matches!(
            wait_for_key(r.as_raw_fd(), Duration::ZERO, &stop),
            Wake::Keys(k) if k == b"i"
        ));
        assert!(matches!(
            wait_for_key(r.as_raw_fd(), Duration::ZERO, &stop),
            Wake::Refresh
        ));
    }
}
