//! Private tmpfs targets with the kernel's options (`tmpfs:OPTIONS`), the
//! `--quick` marks, and what is checked before anything is measured.

use crate::common::{json, tmpfsctl};
use crate::require_root;

fn mounts_by_us() -> usize {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains("tmpfsctl-bench"))
        .count()
}

#[test]
fn tmpfs_option_targets_run_side_by_side_and_record_their_options() {
    require_root!();
    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--preset",
        "dd",
        "--no-latency",
        "--json",
        "tmpfs:huge=within_size",
        "tmpfs:huge=never",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["quick"], true);
    let t = v["targets"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t[0]["options"], "huge=within_size");
    assert_eq!(t[1]["options"], "huge=never");
    assert!(
        t.iter()
            .all(|t| t["private_mount"] == true && t["fstype"] == "tmpfs")
    );
    assert_eq!(mounts_by_us(), 0, "private mounts never outlive the run");
}

#[test]
fn a_bad_tmpfs_option_exits_2_at_once_naming_it() {
    let out = tmpfsctl(&["bench", "tmpfs:huge=never,swapiness=3", "/var/tmp"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`swapiness=3`"), "{err}");
    assert!(out.stdout.is_empty(), "refused before measuring anything");
}

#[test]
fn bad_output_paths_and_combinations_exit_2_before_measuring() {
    for args in [
        vec!["bench", "--html", "/nonexistent/dir/x.html", "/var/tmp"],
        vec![
            "bench",
            "--export-json",
            "/nonexistent/dir/x.json",
            "/var/tmp",
        ],
        vec!["bench", "--export-csv", "/", "/var/tmp"],
        vec!["bench", "--svg", "/nonexistent/dir/svg", "/var/tmp"],
        vec!["bench", "--json", "--export-markdown", "-", "/var/tmp"],
    ] {
        let out = tmpfsctl(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("tmpfsctl: error:"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing measured");
    }
}

#[test]
fn json_means_the_report_on_stdout() {
    require_root!();
    let m = crate::common::TestMount::tmpfs("size=32M");
    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--preset",
        "temp-file",
        "--no-latency",
        "--json",
        m.path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["quick"], true);
}

#[test]
fn progress_bar_with_done_total_and_eta_on_a_terminal_only() {
    require_root!();
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        crate::skip!("no `script` (util-linux) for a pty");
    }
    let bin = env!("CARGO_BIN_EXE_tmpfsctl");
    let cmd = format!("{bin} bench --quick --preset dd --no-latency tmpfs:huge=never");
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(tty.contains("/4 workloads, ETA"), "{tty}");
    let piped = tmpfsctl(&[
        "bench",
        "--quick",
        "--preset",
        "dd",
        "--no-latency",
        "tmpfs:huge=never",
    ]);
    assert!(!String::from_utf8_lossy(&piped.stderr).contains("workloads, ETA"));
}
