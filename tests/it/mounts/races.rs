//! `apply` and `revert` racing a live writer or a user who swaps DIR for a symlink.

use super::*;

/// Writes a file every `interval` seconds under `dir` (open, write, fsync,
/// close), then prints its number: printed means acknowledged.
fn spawn_writer(dir: &Path, interval: f64, stop: &Path) -> std::process::Child {
    let script = "import os,sys,time\nd,iv,stop=sys.argv[1],float(sys.argv[2]),sys.argv[3]\ni=0\n\
while not os.path.exists(stop):\n    p=os.path.join(d,'w-%d'%i)\n    \
fd=os.open(p,os.O_WRONLY|os.O_CREAT|os.O_TRUNC,0o644)\n    os.write(fd,b'payload %d'%i)\n    os.fsync(fd)\n    os.close(fd)\n    \
print(i,flush=True)\n    i+=1\n    time.sleep(iv)\n";
    Command::new("python3")
        .args(["-c", script, s(dir), &interval.to_string(), s(stop)])
        .current_dir("/")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Run tmpfsctl, retrying while it refuses because the writer happened to
/// hold its file open at the moment of the check (a refusal changes nothing).
fn run_past_writer(args: &[&str]) -> Output {
    for _ in 0..20 {
        let out = tmpfsctl(args);
        let e = stderr(&out);
        if out.status.success() || !(e.contains("open for writing") || e.contains("is busy")) {
            return out;
        }
    }
    tmpfsctl(args)
}

#[test]
fn a_writer_during_apply_and_revert_loses_no_acknowledged_file() {
    require_root!();
    let mut table = Vec::new();
    let mut any_carried = false;
    for interval in [0.05, 0.1, 0.3, 0.5, 1.0] {
        let t = scratch("mounts");
        let dir = t.path().join("live");
        std::fs::create_dir(&dir).unwrap();
        // Enough to copy that writes land during the copy and the switch.
        for i in 0..3000 {
            std::fs::write(dir.join(format!("seed-{i}")), vec![b'x'; 4096]).unwrap();
        }
        let _c = Cleanup(dir.clone());
        let stop = t.path().join("stop");
        let w = spawn_writer(&dir, interval, &stop);
        std::thread::sleep(std::time::Duration::from_secs_f64(interval.max(0.1)));
        let none = t.path().join("no-fstab");
        let a = run_past_writer(&[
            "apply",
            s(&dir),
            "--fstab",
            s(&none),
            "--boot",
            "none",
            "--size",
            "64M",
            "--yes",
        ]);
        ok(&a);
        std::thread::sleep(std::time::Duration::from_secs_f64(interval * 2.0));
        let r = run_past_writer(&[
            "revert",
            s(&dir),
            "--fstab",
            s(&none),
            "--keep-data",
            "--yes",
        ]);
        ok(&r);
        std::thread::sleep(std::time::Duration::from_secs_f64(interval * 2.0));
        std::fs::write(&stop, b"").unwrap();
        let out = w.wait_with_output().unwrap();
        let acked: Vec<u64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        assert_eq!(findmnt_fstype(&dir), None);
        let mut lost = Vec::new();
        for i in &acked {
            match std::fs::read(dir.join(format!("w-{i}"))) {
                Ok(b) if b == format!("payload {i}").as_bytes() => {}
                other => lost.push((
                    *i,
                    other.map(|b| String::from_utf8_lossy(&b).into_owned()).ok(),
                )),
            }
        }
        let carried = String::from_utf8_lossy(&a.stdout).contains("brought across")
            || String::from_utf8_lossy(&r.stdout).contains("brought back");
        table.push(format!(
            "interval {interval:>4} s: {} acknowledged, {} lost, delta carried: {carried}",
            acked.len(),
            lost.len()
        ));
        assert!(lost.is_empty(), "interval {interval}: lost {lost:?}");
        assert!(!acked.is_empty());
        any_carried |= carried;
    }
    eprintln!("{}", table.join("\n"));
    // Without one catch-up the writer never landed inside a copy, and the
    // test proved nothing about the delta pass it is here for.
    assert!(
        any_carried,
        "no run brought a delta across:\n{}",
        table.join("\n")
    );
}

/// As uid 65534: swap `a` and `b` with renameat2(RENAME_EXCHANGE) in a loop
/// until `stop` exists (or 120 s pass), printing how many swaps it made.
fn spawn_swapper(a: &Path, b: &Path, stop: &Path) -> std::process::Child {
    let script = "import ctypes,os,sys,time\nlibc=ctypes.CDLL(None,use_errno=True)\n\
a,b,stop=[x.encode() for x in sys.argv[1:4]]\nn=0\nend=time.time()+120\n\
while not os.path.exists(stop) and time.time()<end:\n    \
if libc.renameat2(-100,a,-100,b,2)==0: n+=1\nprint(n,flush=True)\n";
    // The system's python: a per-user one (pyenv under /root) is out of
    // reach for uid 65534.
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            script,
        ])
        .args([s(a), s(b), s(stop)])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_user_swapping_dir_for_a_symlink_never_redirects_apply() {
    require_root!();
    if Command::new("setpriv").arg("--version").output().is_err() {
        crate::skip!("setpriv (util-linux) is not installed");
    }
    let t = scratch("mounts");
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = t.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(secret.join("s"), b"secret").unwrap();
    let p = t.path().join("p");
    std::fs::create_dir(&p).unwrap();
    let dir = p.join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("mine"), b"user data").unwrap();
    let link = p.join("l");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    for x in [&p, &dir, &dir.join("mine")] {
        std::os::unix::fs::chown(x, Some(65534), Some(65534)).unwrap();
    }
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    let _c1 = Cleanup(dir.clone());
    let _c2 = Cleanup(secret.clone());
    let _c3 = Cleanup(link.clone());
    let stop = t.path().join("stop");
    let swapper = spawn_swapper(&dir, &link, &stop);
    let (mut applied, mut refused) = (0, 0);
    let mut reasons: HashMap<&str, usize> = HashMap::new();
    for run in 0..40 {
        // As root directly, the owner of the parent is not trusted; run half
        // as if that user had called sudo, so the descriptor work is what
        // stands between them and the root-only directory.
        let mut cmd = crate::common::bin();
        cmd.args(["apply", s(&dir), "--boot", "none", "--size", "16M", "--yes"]);
        if run % 2 == 1 {
            cmd.env("SUDO_UID", "65534");
        } else {
            cmd.env_remove("SUDO_UID");
        }
        let out = cmd.output().unwrap();
        let e = stderr(&out);
        let mounted = mounts_under(t.path());
        assert!(
            !mounted.iter().any(|m| Path::new(m) == secret),
            "run {run}: the root-only directory got the mount: {mounted:?}\n{e}"
        );
        if out.status.success() {
            assert!(
                run % 2 == 1,
                "run {run}: applied as root on a directory the user could swap\n{e}"
            );
            applied += 1;
            // The tmpfs went onto the user's directory; the user may rename
            // their own directory afterwards (the mount moves with it), so
            // it is found by content, not by name.
            assert_eq!(mounted.len(), 1, "run {run}: {mounted:?}\n{e}");
            let m = Path::new(&mounted[0]);
            assert!(m == dir || m == link, "run {run}: {mounted:?}");
            assert_eq!(std::fs::read(m.join("mine")).unwrap(), b"user data");
            assert!(
                !m.join("s").exists(),
                "run {run}: root-only file copied where the user can read it"
            );
            // The user keeps renaming it while we unmount: retry by its
            // current name.
            for _ in 0..100 {
                let left = mounts_under(t.path());
                if left.is_empty() {
                    break;
                }
                for m in &left {
                    let _ = Command::new("umount").arg("-l").arg(m).status();
                }
            }
            assert!(mounts_under(t.path()).is_empty());
        } else {
            refused += 1;
            assert_eq!(out.status.code(), Some(2), "run {run}: {e}");
            assert!(
                mounted.is_empty(),
                "run {run}: a refused apply left {mounted:?}\n{e}"
            );
            let why = if e.contains("uid 65534") {
                "parent owned by the user"
            } else if e.contains("symbolic link") {
                "symlink refused"
            } else if e.contains("moved or replaced") || e.contains("renamed or replaced") {
                "moved while working"
            } else {
                eprintln!("run {run}: other refusal: {e}");
                "other"
            };
            *reasons.entry(why).or_default() += 1;
        }
        assert_eq!(std::fs::read(secret.join("s")).unwrap(), b"secret");
    }
    std::fs::write(&stop, b"").unwrap();
    let out = swapper.wait_with_output().unwrap();
    let swaps = String::from_utf8_lossy(&out.stdout).trim().to_string();
    eprintln!("swaps {swaps}; applied {applied}, refused {refused}: {reasons:?}");
    assert!(
        swaps.parse::<u64>().unwrap_or(0) > 0,
        "the swapper never ran"
    );
    assert!(!reasons.contains_key("other"), "{reasons:?}");
}
