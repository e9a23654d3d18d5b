//! Starting CMD the way `posix_spawn` does: a clone that shares tmpfsctl's
//! memory (`CLONE_VM | CLONE_VFORK`, on a stack of its own) and runs only
//! raw system calls until it execs, with tmpfsctl suspended meanwhile.
//!
//! A fork instead copies tmpfsctl's page tables and makes every page either
//! side writes afterwards a copy-on-write fault, then throws it all away at
//! exec: for `run -- true` that was about a fifth of the run's CPU. A fork
//! also cannot be born into a cgroup with glibc's `clone`, hence `clone3`,
//! whose child starts on the new stack (see [`clone3_on_stack`]).
//!
//! Everything the child needs (argv, envp, where to look for the program,
//! the directory) is built before the clone; the child allocates nothing and
//! writes only its own stack and the `errno` field of its [`ChildArgs`],
//! which tmpfsctl reads once it resumes (the exec succeeded if it is 0).

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::Command;

use super::procs::CloneArgs;

const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
/// The child needs a few hundred bytes; untouched pages cost nothing.
const STACK_SIZE: usize = 64 * 1024;

/// A command ready to start: every string NUL-terminated, every pointer
/// array NULL-terminated, owned here for as long as the child may read them.
pub(super) struct Prepared {
    /// Where to try the program, in order (one entry when it has a slash).
    paths: Vec<CString>,
    argv: Vec<CString>,
    envp: Vec<CString>,
    cwd: Option<CString>,
}

/// Why nothing runs.
pub(super) enum SpawnError {
    /// The kernel has no clone3 (or not with these flags): nothing started.
    Unsupported,
    Failed(io::Error),
}

fn cstring(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an argument or variable contains a NUL byte",
        )
    })
}

/// The environment CMD gets: tmpfsctl's, with `cmd`'s changes applied (as
/// `Command` would apply them).
fn environment(cmd: &Command) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (k, v) in cmd.get_envs() {
        env.retain(|(ek, _)| ek != k);
        if let Some(v) = v {
            env.push((k.to_os_string(), v.to_os_string()));
        }
    }
    env
}

/// The candidates `execvp` would try for `program`: itself when it names a
/// path, else each directory of `PATH` (an empty entry is the current
/// directory; without `PATH`, glibc's default `/bin:/usr/bin`).
fn candidates(program: &OsStr, path: Option<&OsStr>) -> Vec<OsString> {
    if program.as_bytes().contains(&b'/') {
        return vec![program.to_os_string()];
    }
    let path = path.unwrap_or(OsStr::new("/bin:/usr/bin"));
    path.as_bytes()
        .split(|&c| c == b':')
        .map(|dir| {
            let mut p = if dir.is_empty() {
                Vec::new()
            } else {
                let mut d = dir.to_vec();
                d.push(b'/');
                d
            };
            p.extend_from_slice(program.as_bytes());
            OsString::from_vec(p)
        })
        .collect()
}

impl Prepared {
    pub(super) fn new(cmd: &Command) -> io::Result<Prepared> {
        let env = environment(cmd);
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_os_str());
        let paths = candidates(cmd.get_program(), path)
            .iter()
            .map(|p| cstring(p.as_bytes()))
            .collect::<io::Result<_>>()?;
        let argv = std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(|a| cstring(a.as_bytes()))
            .collect::<io::Result<_>>()?;
        let envp = env
            .iter()
            .map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                cstring(&kv)
            })
            .collect::<io::Result<_>>()?;
        let cwd = cmd
            .get_current_dir()
            .map(|d| cstring(d.as_os_str().as_bytes()))
            .transpose()?;
        Ok(Prepared {
            paths,
            argv,
            envp,
            cwd,
        })
    }
}

/// What the child reads (and, on failure, writes `errno` into).
#[repr(C)]
struct ChildArgs {
    paths: *const *const libc::c_char,
    argv: *const *const libc::c_char,
    /// `/bin/sh`, a slot for the file, argv[1..]: a file without `#!` or
    /// ELF header runs as a shell script, as `execvp` does.
    sh_argv: *mut *const libc::c_char,
    envp: *const *const libc::c_char,
    /// NULL: stay where tmpfsctl is.
    cwd: *const libc::c_char,
    /// Not 0: die with this parent (`PR_SET_PDEATHSIG`), and at once if it
    /// is already gone.
    parent: libc::pid_t,
    errno: libc::c_int,
}

fn ptrs(v: &[CString]) -> Vec<*const libc::c_char> {
    v.iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// Start the prepared command, born in the cgroup `cgroup` (a directory
/// descriptor) when given, dying with `parent` when given; returns its pid
/// once it has exec'd.
pub(super) fn spawn(
    p: &Prepared,
    cgroup: Option<libc::c_int>,
    parent: Option<libc::pid_t>,
) -> Result<libc::pid_t, SpawnError> {
    let paths = ptrs(&p.paths);
    let argv = ptrs(&p.argv);
    let envp = ptrs(&p.envp);
    let sh = c"/bin/sh";
    let mut sh_argv: Vec<*const libc::c_char> = vec![sh.as_ptr(), std::ptr::null()];
    sh_argv.extend(argv.iter().skip(1));
    let mut args = ChildArgs {
        paths: paths.as_ptr(),
        argv: argv.as_ptr(),
        sh_argv: sh_argv.as_mut_ptr(),
        envp: envp.as_ptr(),
        cwd: p.cwd.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
        parent: parent.unwrap_or(0),
        errno: 0,
    };
    // 16-byte aligned, as the ABI wants the stack at a call; never
    // initialised here: the child writes what it uses (zeroing 64 KiB cost
    // more than the rest of the spawn).
    let mut stack: Vec<u128> = Vec::with_capacity(STACK_SIZE / 16);
    let mut flags = (libc::CLONE_VM | libc::CLONE_VFORK) as u64;
    if cgroup.is_some() {
        flags |= CLONE_INTO_CGROUP;
    }
    let cl = CloneArgs {
        flags,
        exit_signal: libc::SIGCHLD as u64,
        stack: stack.as_mut_ptr() as u64,
        stack_size: STACK_SIZE as u64,
        cgroup: cgroup.unwrap_or(0) as u64,
        ..Default::default()
    };
    // No handler of tmpfsctl's may run in the child, on shared memory,
    // before it has reset them: everything is blocked across the clone.
    let all = !0u64;
    let mut old = 0u64;
    // SAFETY: valid 8-byte sets; this thread's mask only.
    unsafe { sigprocmask(libc::SIG_SETMASK, &all, &mut old) };
    // SAFETY: `child` runs on `stack` and reads `args` and the arrays it
    // points to, all alive until the clone returns: CLONE_VFORK suspends
    // this thread until the child has exec'd or exited.
    let r = unsafe {
        clone3_on_stack(
            &cl,
            child,
            (&mut args as *mut ChildArgs).cast::<libc::c_void>(),
        )
    };
    // SAFETY: as above.
    unsafe { sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    drop(stack);
    if r < 0 {
        let e = -r as i32;
        return Err(match e {
            libc::ENOSYS | libc::EINVAL | libc::E2BIG | libc::EOPNOTSUPP => SpawnError::Unsupported,
            _ => SpawnError::Failed(io::Error::from_raw_os_error(e)),
        });
    }
    let pid = r as libc::pid_t;
    // The child's write, seen now that it has exec'd or exited.
    // SAFETY: a plain read of our own local.
    let errno = unsafe { std::ptr::read_volatile(&args.errno) };
    if errno != 0 {
        let mut st = 0;
        // SAFETY: waits for our own child, into a local.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        return Err(SpawnError::Failed(io::Error::from_raw_os_error(errno)));
    }
    Ok(pid)
}

/// rt_sigprocmask with the kernel's 8-byte set; returns the raw result.
unsafe fn sigprocmask(how: libc::c_int, set: *const u64, old: *mut u64) -> libc::c_long {
    // SAFETY: the caller passes valid sets (or NULL for `old`).
    unsafe { libc::syscall(libc::SYS_rt_sigprocmask, how, set, old, 8usize) }
}

/// clone3, the child calling `f(arg)` on the stack `args` names (it never
/// returns); returns the child's pid or minus the error number. The child
/// cannot return from the system call into Rust code: the frame it would
/// return into is on tmpfsctl's stack, hence the few instructions of
/// assembly (what glibc's own `clone` does).
///
/// # Safety
/// `args` names a stack `f` may use; with `CLONE_VM` `f` runs on shared
/// memory and must only make system calls.
#[cfg(target_arch = "x86_64")]
unsafe fn clone3_on_stack(
    args: &CloneArgs,
    f: extern "C" fn(*mut libc::c_void) -> !,
    arg: *mut libc::c_void,
) -> isize {
    let ret: isize;
    // SAFETY: the system call reads `args`; in the child (rax 0) rsp is the
    // top of the new stack, which is 16-byte aligned, as a call expects.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor ebp, ebp",
            "mov rdi, r12",
            "call r13",
            "ud2",
            "2:",
            inlateout("rax") libc::SYS_clone3 as isize => ret,
            in("rdi") args as *const CloneArgs,
            in("rsi") std::mem::size_of::<CloneArgs>(),
            in("r12") arg,
            in("r13") f,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// Elsewhere: the caller falls back to a fork.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn clone3_on_stack(
    _args: &CloneArgs,
    _f: extern "C" fn(*mut libc::c_void) -> !,
    _arg: *mut libc::c_void,
) -> isize {
    -(libc::ENOSYS as isize)
}

/// A raw system call's result: the value, or minus the error number. No
/// errno is touched (it lives in tmpfsctl's thread-local storage, shared).
macro_rules! raw {
    ($($a:expr),+) => {
        // SAFETY: the caller's arguments; see `child`.
        unsafe { syscall_raw([$($a as usize),+]) }
    };
}

/// A system call by number with up to four arguments, without errno.
#[cfg(target_arch = "x86_64")]
unsafe fn syscall_raw<const N: usize>(a: [usize; N]) -> isize {
    let get = |i: usize| a.get(i).copied().unwrap_or(0);
    let ret: isize;
    // SAFETY: the caller vouches for the call and its arguments.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") get(0) as isize => ret,
            in("rdi") get(1),
            in("rsi") get(2),
            in("rdx") get(3),
            in("r10") get(4),
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn syscall_raw<const N: usize>(_a: [usize; N]) -> isize {
    -(libc::ENOSYS as isize)
}

/// The kernel's `struct sigaction` on x86_64 (handler, flags, restorer, mask).
#[repr(C)]
struct KernelSigaction([usize; 4]);

extern "C" fn child(arg: *mut libc::c_void) -> ! {
    // SAFETY: `spawn` passed its ChildArgs, alive while we run.
    let a = unsafe { &mut *arg.cast::<ChildArgs>() };
    // tmpfsctl's handlers would run on its memory: back to the default
    // (the kernel resets them at exec anyway), and SIGPIPE too, as
    // `Command` does.
    for sig in 1..=64usize {
        if sig == libc::SIGKILL as usize || sig == libc::SIGSTOP as usize {
            continue;
        }
        let mut cur = KernelSigaction([0; 4]);
        if raw!(
            libc::SYS_rt_sigaction,
            sig,
            0usize,
            &mut cur as *mut _ as usize,
            8usize
        ) != 0
        {
            continue;
        }
        let handled = cur.0[0] != libc::SIG_DFL && cur.0[0] != libc::SIG_IGN;
        if handled || sig == libc::SIGPIPE as usize {
            let dfl = KernelSigaction([libc::SIG_DFL, 0, 0, 0]);
            raw!(
                libc::SYS_rt_sigaction,
                sig,
                &dfl as *const _ as usize,
                0usize,
                8usize
            );
        }
    }
    if a.parent != 0 {
        raw!(libc::SYS_prctl, libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // tmpfsctl may have died before the prctl: nobody would send the
        // signal, so act as if it had been sent.
        if raw!(libc::SYS_getppid) != a.parent as isize {
            leave(128 + libc::SIGKILL);
        }
    }
    if !a.cwd.is_null() {
        let r = raw!(libc::SYS_chdir, a.cwd);
        if r < 0 {
            fail(a, -r as i32);
        }
    }
    let none = 0u64;
    raw!(
        libc::SYS_rt_sigprocmask,
        libc::SIG_SETMASK,
        &none as *const u64,
        0usize,
        8usize
    );
    // execvp's search: a missing or unreadable candidate moves on, and
    // EACCES wins over the last error when nothing ran.
    let mut seen_eacces = false;
    let mut err = libc::ENOENT;
    let mut i = 0;
    loop {
        // SAFETY: `paths` is NULL-terminated.
        let path = unsafe { *a.paths.add(i) };
        if path.is_null() {
            break;
        }
        i += 1;
        let r = raw!(libc::SYS_execve, path, a.argv, a.envp);
        err = -r as i32;
        if err == libc::ENOEXEC {
            // SAFETY: slot 1 of sh_argv is ours to fill.
            unsafe { *a.sh_argv.add(1) = path };
            let r = raw!(libc::SYS_execve, c"/bin/sh".as_ptr(), a.sh_argv, a.envp);
            err = -r as i32;
            break;
        }
        match err {
            libc::EACCES => seen_eacces = true,
            libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
            _ => break,
        }
    }
    if seen_eacces && matches!(err, libc::ENOENT | libc::ENOTDIR) {
        err = libc::EACCES;
    }
    fail(a, err)
}

fn fail(a: &mut ChildArgs, errno: i32) -> ! {
    // SAFETY: tmpfsctl reads it after we are gone.
    unsafe { std::ptr::write_volatile(&mut a.errno, errno) };
    leave(127)
}

fn leave(code: i32) -> ! {
    raw!(libc::SYS_exit_group, code);
    // exit_group does not return.
    #[allow(clippy::empty_loop)]
    loop {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_looked_for_like_execvp() {
        let c = |p: &str, path: Option<&str>| -> Vec<String> {
            candidates(OsStr::new(p), path.map(OsStr::new))
                .into_iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(c("./x", Some("/a")), ["./x"]);
        assert_eq!(c("x", Some("/a::/b")), ["/a/x", "x", "/b/x"]);
        assert_eq!(c("x", None), ["/bin/x", "/usr/bin/x"]);
    }
}
