//! Helpers the library's unit tests share, so each exists once.

use std::path::Path;

/// The pid of a process that has ended: a child, reaped. Nothing runs under
/// it until the kernel hands the number out again, which takes a wrap of the
/// pid space.
pub(crate) fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// A FIFO at `path` with permission bits `mode`.
pub(crate) fn mkfifo(path: &Path, mode: u32) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(mode),
        0,
    )
    .unwrap();
}
