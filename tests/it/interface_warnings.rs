//! Warnings that fit the machine: tmpfs limits adding up past RAM + swap (as
//! on every stock systemd machine) are no warning by themselves, a
//! kernel-interface tmpfs is never named, and a full tmpfs says writes
//! already fail.

use std::path::Path;

use crate::common::{TestMount, json, stderr, tmpfsctl};

const G: u64 = 1 << 30;

/// A --sysroot of a 16 GiB machine without swap, 12 GiB available, with
/// these tmpfs mounts (mount point, size in bytes, extra mount options).
fn machine(tmpfs: &[(&str, u64, &str)]) -> tempfile::TempDir {
    let t = crate::common::scratch("ifa-warn");
    let r = t.path();
    std::fs::create_dir_all(r.join("proc/self")).unwrap();
    std::fs::create_dir_all(r.join("etc")).unwrap();
    let mut mi = String::from("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n");
    for (i, (mp, size, opts)) in tmpfs.iter().enumerate() {
        mi.push_str(&format!(
            "{} 1 0:{} / {mp} rw,nosuid,nodev{opts} - tmpfs tmpfs rw,size={}k\n",
            i + 2,
            i + 30,
            size >> 10
        ));
    }
    std::fs::write(r.join("proc/self/mountinfo"), mi).unwrap();
    std::fs::write(
        r.join("proc/meminfo"),
        "MemTotal: 16777216 kB\nMemAvailable: 12582912 kB\nShmem: 102400 kB\n\
         SwapTotal: 0 kB\nSwapFree: 0 kB\n",
    )
    .unwrap();
    std::fs::write(r.join("etc/fstab"), b"").unwrap();
    t
}

fn status(root: &Path) -> serde_json::Value {
    json(&tmpfsctl(&[
        "--sysroot",
        root.to_str().unwrap(),
        "status",
        "--json",
    ]))
}

fn overcommit(v: &serde_json::Value) -> Option<String> {
    v["warnings"].as_array().unwrap().iter().find_map(|w| {
        (w["code"] == "tmpfs_overcommit").then(|| w["message"].as_str().unwrap().to_string())
    })
}

#[test]
fn a_stock_systemd_machine_gets_no_overcommit_warning_but_a_note() {
    // systemd's defaults: /dev/shm and /tmp 50%, /run 20%, /run/user/UID
    // 10%; cgroup v1's /sys/fs/cgroup is a tmpfs too. 37 GiB of limits.
    let t = machine(&[
        ("/dev/shm", 8 * G, ""),
        ("/run", 16 * G / 5, ""),
        ("/tmp", 8 * G, ""),
        ("/run/user/1000", 16 * G / 10, ""),
        ("/sys/fs/cgroup", 8 * G, ""),
        ("/run/credentials/systemd-journald.service", G, ",ro"),
    ]);
    let v = status(t.path());
    assert!(
        v["memory"]["tmpfs_limits_bytes"].as_u64().unwrap() > 16 * G,
        "{}",
        v["memory"]
    );
    assert_eq!(overcommit(&v), None, "{}", v["warnings"]);
    let notes = v["memory"]["notes"].to_string();
    assert!(notes.contains("not a reservation"), "{notes}");
}

#[test]
fn one_mount_that_could_take_more_than_is_left_is_named_and_kernel_tmpfs_never() {
    let t = machine(&[
        ("/dev/shm", 16 * G, ""),
        ("/tmp", 4 * G, ""),
        ("/sys/fs/cgroup", 16 * G, ""),
        ("/run/credentials/x.service", 16 * G, ",ro"),
    ]);
    let v = status(t.path());
    let m = overcommit(&v).unwrap_or_else(|| panic!("no tmpfs_overcommit: {}", v["warnings"]));
    assert!(m.contains("/dev/shm"), "{m}");
    assert!(!m.contains("/tmp ") && !m.contains("/tmp,"), "{m}");
    assert!(!m.contains("/sys/fs/cgroup"), "{m}");
    assert!(!m.contains("/run/credentials"), "{m}");
    assert!(m.contains("`mount -o remount,size=NEW /dev/shm`"), "{m}");
}

#[test]
fn plan_on_a_stock_machine_does_not_warn_of_overcommit() {
    let t = machine(&[
        ("/dev/shm", 8 * G, ""),
        ("/run", 16 * G / 5, ""),
        ("/run/user/1000", 16 * G / 10, ""),
        ("/sys/fs/cgroup", 8 * G, ""),
    ]);
    let codes = plan_warnings(&t, &[]);
    assert!(
        !codes.contains(&"tmpfs_overcommit".to_string()),
        "{codes:?}"
    );
    // The same plan does warn for a size above the 12 GiB left: the
    // absence above is the check's verdict, not a plan that never looked.
    let codes = plan_warnings(&t, &["--size", "14G"]);
    assert!(codes.contains(&"tmpfs_overcommit".to_string()), "{codes:?}");
}

/// The warning codes `plan /tmp --json` gives on a fake machine.
fn plan_warnings(t: &tempfile::TempDir, extra: &[&str]) -> Vec<String> {
    std::fs::create_dir_all(t.path().join("tmp")).unwrap();
    let root = t.path().to_str().unwrap();
    let mut args = vec!["--sysroot", root, "plan", "/tmp", "--json"];
    args.extend(extra);
    let out = tmpfsctl(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let p = json(&out);
    p["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("no warnings array in plan --json: {p:#}"))
        .iter()
        .map(|w| w["code"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_full_tmpfs_says_writes_already_fail() {
    crate::require_root!();
    let m = TestMount::tmpfs("size=1M");
    // Fill it to the last block: the write that finds no room fails.
    let mut f = std::fs::File::create(m.path.join("fill")).unwrap();
    let chunk = vec![1u8; 4096];
    while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
    drop(f);
    let v = json(&tmpfsctl(&["status", "--json"]));
    let mine = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| {
            w["code"] == "tmpfs_nearly_full"
                && w["message"]
                    .as_str()
                    .unwrap()
                    .contains(m.path.to_str().unwrap())
        })
        .unwrap_or_else(|| panic!("no tmpfs_nearly_full: {}", v["warnings"]));
    let msg = mine["message"].as_str().unwrap();
    assert!(msg.contains("already get ENOSPC"), "{msg}");
    assert!(!msg.contains("soon"), "{msg}");
}
