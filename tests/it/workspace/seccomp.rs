//! Where a seccomp filter refuses unshare(2) (a container runtime's profile,
//! systemd's `SystemCallFilter=`), an unprivileged run gets no private
//! mount: tmpfsctl says so and uses a 0700 directory, and CMD still runs in
//! a PID namespace of its own, made by clone3 with a new user namespace
//! whose uid_map the namespace's init writes: the caller mapped onto
//! themselves, so CMD runs as the caller and owns what it writes.

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use super::{nobody_bin, read_json, stderr, stdout};
use crate::require_root;

/// A uid with no other use on the test machine.
const CALLER: u32 = 4243;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// Make `cmd` start under a seccomp filter that fails unshare(2) with
/// EPERM and allows everything else (clone3 included). Written out here:
/// six BPF instructions for one test do not warrant a seccomp crate.
fn deny_unshare(cmd: &mut Command) {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    let ins = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    // seccomp_data: nr at offset 0, arch at offset 4.
    let prog = [
        ins(LD_W_ABS, 0, 0, 4),
        ins(JEQ_K, 0, 3, AUDIT_ARCH),
        ins(LD_W_ABS, 0, 0, 0),
        ins(JEQ_K, 0, 1, libc::SYS_unshare as u32),
        ins(RET_K, 0, 0, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        ins(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    // SAFETY: runs between fork and exec; prctl is async-signal-safe, and
    // the filter array is a copy owned by the closure for the call.
    unsafe {
        cmd.pre_exec(move || {
            let mut filter = prog;
            let fprog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_mut_ptr(),
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &fprog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Live processes with `arg` as one of their arguments.
fn procs_with_arg(arg: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == arg.as_bytes()))
        })
        .count()
}

#[test]
fn with_unshare_refused_cmd_still_gets_a_pid_namespace_mapped_to_the_caller() {
    require_root!();
    let t = tempfile::tempdir().unwrap();
    let b = nobody_bin(t.path());
    let js = t.path().join("s.json");
    let mark = format!("1007.{}", std::process::id());
    // CMD says its pid, its uid, the owner of a file it makes in the
    // scratch, and leaves a daemon behind that the namespace must take.
    let script = format!(
        "echo pid=$$; echo uid=$(id -u); touch \"$TMPDIR/f\"; echo owner=$(stat -c %u \"$TMPDIR/f\"); \
         setsid sleep {mark} </dev/null >/dev/null 2>&1 &"
    );
    let mut cmd = Command::new("setpriv");
    cmd.args([
        &format!("--reuid={CALLER}"),
        &format!("--regid={CALLER}"),
        "--clear-groups",
        "--",
    ])
    .arg(&b)
    .args(["run", "--size", "1M", "--json", js.to_str().unwrap()])
    .args(["--", "sh", "-c", &script])
    .env_remove("XDG_RUNTIME_DIR")
    .current_dir("/")
    .stdin(Stdio::null());
    deny_unshare(&mut cmd);
    let o = cmd.output().unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{err}");
    let j = read_json(&js);
    // No private mount: said, with the reason, and the cap called soft.
    assert_eq!(j["mode"], "directory", "{j}");
    assert!(
        err.contains("no private mount possible") && err.contains("user namespace"),
        "{err}"
    );
    assert!(err.contains("the size cap is soft"), "{err}");
    // The PID namespace was still made (CMD is its init's first child),
    // through a new user namespace mapping the caller onto themselves.
    assert!(!err.contains("no PID namespace"), "{err}");
    assert!(
        out.contains("pid=2\n"),
        "CMD not in a PID namespace: {out}{err}"
    );
    assert!(out.contains(&format!("uid={CALLER}\n")), "{out}{err}");
    assert!(out.contains(&format!("owner={CALLER}\n")), "{out}{err}");
    // The scratch was the caller's own 0700 directory on RAM, and is gone.
    let path = j["path"].as_str().unwrap();
    assert!(
        path.starts_with(&format!("/dev/shm/tmpfsctl-{CALLER}-")),
        "{path}"
    );
    assert_eq!(j["ram_backed"], true, "{j}");
    assert!(
        std::fs::symlink_metadata(path).is_err(),
        "{path} left behind"
    );
    let base = std::path::Path::new(path).parent().unwrap();
    let m = std::fs::metadata(base).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o777), (CALLER, 0o700), "{base:?}");
    // The daemon CMD left died with the namespace.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while procs_with_arg(&mark) > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "CMD's daemon outlived the run"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The per-user places this uid's runs made (the anchor the refused
    // unshare never used, the directory base): nothing is left for a
    // uid that has no other use here.
    let _ = std::fs::remove_dir_all(base);
    let _ = std::fs::remove_dir(format!("/dev/shm/tmpfsctl-{CALLER}"));
}
