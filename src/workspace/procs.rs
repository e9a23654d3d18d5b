//! Process primitives both ways of starting CMD use (in its own cgroup, or
//! as the child of a PID namespace's init): clone3's arguments, the
//! single-thread check a raw clone needs, and naming a process.

use crate::sys::{Sysroot, proc};

/// A process CMD left running when it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub pid: i32,
    pub comm: String,
}

pub(super) fn read_comm(pid: i32) -> String {
    proc::name_or_unknown(&Sysroot::live(), pid as u32)
}

/// `struct clone_args` of clone3(2), up to `cgroup` (the kernel's
/// CLONE_ARGS_SIZE_VER2, the same on every architecture).
#[repr(C)]
#[derive(Default)]
pub(super) struct CloneArgs {
    pub flags: u64,
    pub pidfd: u64,
    pub child_tid: u64,
    pub parent_tid: u64,
    pub exit_signal: u64,
    pub stack: u64,
    pub stack_size: u64,
    pub tls: u64,
    pub set_tid: u64,
    pub set_tid_size: u64,
    pub cgroup: u64,
}

/// Only one thread: then the child of a raw clone may allocate (no other
/// thread can hold the allocator's lock), which `Command::exec` does.
pub(super) fn single_threaded() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|d| d.count() == 1)
}
