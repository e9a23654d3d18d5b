//! zram targets (`zram[:ALG]`): a real device made on this kernel, its RAM
//! cost read from mm_stat, and nothing left after the run, a signal, or a
//! kill -9 (the next run removes the device).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{bin, json, stderr, tmpfsctl};
use crate::require_root;
use crate::zram_devices::{MadeBy, algorithm, diskseq, made_by};

#[test]
fn a_zram_target_reports_its_ram_cost_and_leaves_no_device() {
    require_root!();
    let alg = algorithm();
    let target = format!("zram:{alg}");
    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--preset",
        "dd",
        "--no-latency",
        "--json",
        &target,
        "tmpfs:huge=never",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let t = &v["targets"][0];
    assert_eq!(t["zram"]["algorithm"], alg.as_str());
    assert_eq!(t["fstype"], "ext4");
    assert_eq!(t["ext4_journal"], false, "no journal on a RAM device");
    let dev = t["zram"]["device"].as_str().unwrap().to_string();
    let seq = diskseq(&dev);
    assert!(t["zram"]["disksize_bytes"].as_u64().unwrap() >= 8 << 20);
    let path = t["path"].as_str().unwrap();
    let mut costs = 0;
    for r in v["results"].as_array().unwrap() {
        if r["target"] != path {
            assert!(r.get("zram").is_none(), "only zram targets carry a cost");
            continue;
        }
        let z = &r["zram"];
        let orig = z["orig_data_bytes"].as_u64().unwrap();
        let ram = z["mem_used_total_bytes"].as_u64().unwrap();
        let file = r["bytes_per_run"].as_u64().unwrap();
        // The workload's file is on the device, written out: at least
        // its size went in, and random data cannot compress, so it costs
        // about as much RAM as it holds.
        assert!(orig >= file, "{r}");
        assert!(ram >= file * 9 / 10, "random data costs its size: {r}");
        let ratio = z["data_per_ram_ratio"].as_f64().unwrap();
        assert!((ratio - orig as f64 / ram as f64).abs() < 1e-6);
        costs += 1;
    }
    assert!(costs >= 2, "every workload on zram has its cost");
    assert!(
        diskseq(&dev).is_none() || diskseq(&dev) != seq,
        "{dev} removed at the end of the run"
    );

    // And the text output names the cost.
    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--rw",
        "seq-write",
        "--size",
        "4M",
        "--no-latency",
        &target,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mem_used_total"), "{text}");
    assert!(text.contains(&format!("zram {alg}")), "{text}");
}

#[test]
fn an_algorithm_the_kernel_lacks_exits_2_before_making_anything() {
    require_root!();
    let child = bin()
        .args(["bench", "--quick", "zram:nosuchalg", "/var/tmp"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("zram:nosuchalg") && err.contains(&algorithm()),
        "names the target and what the kernel offers: {err}"
    );
    // Tests alongside make devices of their own: only this run's notes count.
    assert!(made_by(pid).is_empty(), "no device left");
}

/// Start a long zram bench and return it once its device exists.
fn spawn_until_device(tmp: &std::path::Path) -> (std::process::Child, String) {
    let mut child = bin()
        .args([
            "bench",
            "--quick",
            "--rw",
            "seq-write",
            "--size",
            "4M",
            "--min-time",
            "60",
            "--max-runs",
            "1000000",
            "--no-latency",
            &format!("zram:{}", algorithm()),
        ])
        .env("TMPDIR", tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        let mine = made_by(child.id());
        let mounted = std::fs::read_to_string(format!("/proc/{}/mountinfo", child.id()))
            .is_ok_and(|m| mine.iter().any(|d| m.contains(&format!("/dev/{d} "))));
        if mounted {
            // A moment more, so that a signal lands mid-run.
            std::thread::sleep(Duration::from_millis(300));
            return (child, mine[0].clone());
        }
        assert!(child.try_wait().unwrap().is_none(), "bench ended early");
        assert!(t.elapsed() < Duration::from_secs(60), "no device appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_mid_run_removes_the_device() {
    require_root!();
    let tmp = tempfile::tempdir().unwrap();
    let (child, dev) = spawn_until_device(tmp.path());
    let _made = MadeBy(child.id());
    let seq = diskseq(&dev);
    assert!(seq.is_some());
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        crate::common::shell_status(out.status),
        143,
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("zram devices"),
        "says what it cleaned: {}",
        stderr(&out)
    );
    assert!(diskseq(&dev) != seq, "{dev} removed");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn sigkill_leaves_a_device_that_the_next_run_removes() {
    require_root!();
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, dev) = spawn_until_device(tmp.path());
    let pid = child.id();
    let _made = MadeBy(pid);
    child.kill().unwrap(); // SIGKILL: no cleanup code runs
    child.wait().unwrap();
    let seq = diskseq(&dev);
    assert!(seq.is_some(), "{dev} outlives a kill -9");
    assert_eq!(
        made_by(pid),
        [dev.as_str()],
        "its note names the dead maker"
    );
    // Its mount went with the private mount namespace.
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&format!("/dev/{dev} ")));

    let out = bin()
        .args([
            "bench",
            "--quick",
            "--rw",
            "seq-write",
            "--size",
            "1M",
            "--no-latency",
            &format!("zram:{}", algorithm()),
        ])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(made_by(pid).is_empty(), "note removed");
    assert!(diskseq(&dev) != seq, "{dev} removed by the next run");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}
