//! Helpers the library's unit tests share, so each exists once.

/// The pid of a process that has ended: a child, reaped. Nothing runs under
/// it until the kernel hands the number out again, which takes a wrap of the
/// pid space.
pub(crate) fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}
