//! Integration tests for `bench`: real tmpfs mounts (CI is root), a real disk
//! directory under /var/tmp, real signals. No timing is asserted.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{TestMount, bin, chromium_dom, json, tmpfsctl};
use crate::require_root;

mod hostile;
mod outputs;
mod targets;
pub(crate) mod zram;

fn entries(p: &Path) -> Vec<String> {
    std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A fresh directory on a disk filesystem (not tmpfs), removed on drop.
fn disk_dir() -> Option<tempfile::TempDir> {
    let d = tempfile::Builder::new()
        .prefix("tmpfsctl-it-bench-")
        .tempdir_in("/var/tmp")
        .ok()?;
    let out = std::process::Command::new("findmnt")
        .args(["-n", "-o", "FSTYPE", "-T"])
        .arg(d.path())
        .output()
        .ok()?;
    let fs = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if fs == "tmpfs" || fs == "ramfs" {
        eprintln!("/var/tmp is {fs}; no disk directory for the disk-target checks");
        return None;
    }
    Some(d)
}

/// Start `tmpfsctl ARGS TARGET` (stdout discarded, stderr piped) and return
/// once it has created its scratch directory in TARGET.
fn spawn_until_scratch(args: &[&str], target: &Path) -> std::process::Child {
    let child = bin()
        .args(args)
        .arg(target)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while entries(target).is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "scratch directory never appeared"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn quick_suite_on_tmpfs_and_disk_has_every_field_and_leaves_nothing() {
    require_root!();
    let m = TestMount::tmpfs("size=64M");
    let disk = disk_dir();
    let mp = m.path.to_str().unwrap();
    let mut args = vec!["bench", "--quick", "--json", mp];
    let dp = disk
        .as_ref()
        .map(|d| d.path().to_str().unwrap().to_string());
    if let Some(d) = &dp {
        args.push(d);
    }
    let out = tmpfsctl(&args);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["schema_version"], 2);
    let targets = v["targets"].as_array().unwrap();
    assert_eq!(targets.len(), args.len() - 3);
    assert_eq!(targets[0]["path"], mp);
    assert_eq!(targets[0]["fstype"], "tmpfs");
    assert_eq!(targets[0]["ram_backed"], true);
    if dp.is_some() {
        assert_eq!(targets[1]["ram_backed"], false);
    }
    assert!(v["ceiling"]["memcpy_bytes_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["ceiling"]["all_core_copy_bytes_per_s"].as_f64().unwrap() > 0.0);

    let workloads = v["workloads"].as_array().unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(workloads.len(), 9, "default suite");
    assert_eq!(results.len(), workloads.len() * targets.len());
    for r in results {
        let unit = r["unit"].as_str().unwrap();
        let key = if unit == "bytes_per_s" {
            "throughput_bytes_per_s"
        } else {
            "ops_per_s"
        };
        let med = r[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} missing in {r}"));
        assert!(med > 0.0, "{r}");
        assert_eq!(r["median"].as_f64().unwrap(), med);
        let (min, max) = (r["min"].as_f64().unwrap(), r["max"].as_f64().unwrap());
        assert!(min <= med && med <= max, "{r}");
        assert!(r["runs"].as_u64().unwrap() >= 3);
        assert_eq!(
            r["samples"].as_array().unwrap().len() as u64,
            r["runs"].as_u64().unwrap()
        );
        let lat = &r["latency_ns"];
        let (p50, p99, p999) = (
            lat["p50"].as_u64().unwrap(),
            lat["p99"].as_u64().unwrap(),
            lat["p999"].as_u64().unwrap(),
        );
        assert!(p50 > 0 && p50 <= p99 && p99 <= p999, "{lat}");
        assert!(["cold", "warm", "n/a"].contains(&r["cache_state"].as_str().unwrap()));
        assert!(r["flags"].is_array());
        assert!(r["workload"].is_string() && r["target"].is_string());
    }
    // Reads on tmpfs have no cold state; on the disk the cold rows are cold
    // (eviction verified or O_DIRECT) and the warm row says warm.
    let get = |w: &str, t: &str| {
        results
            .iter()
            .find(|r| r["workload"] == w && r["target"] == t)
            .unwrap_or_else(|| panic!("no result {w} on {t}"))
    };
    assert_eq!(get("seq-read-1m-cold", mp)["cache_state"], "n/a");
    if let Some(d) = &dp {
        assert_eq!(get("seq-read-1m-cold", d)["cache_state"], "cold");
        assert_eq!(get("rand-read-4k-cold", d)["cache_state"], "cold");
        assert_eq!(get("seq-read-1m-warm", d)["cache_state"], "warm");
        let bw = get("rand-write-4k", d)["flags"].as_array().unwrap().clone();
        assert!(bw.iter().any(|f| f == "not_durable_page_cache"), "{bw:?}");
        let ratios = v["ratios"].as_array().unwrap();
        assert_eq!(ratios.len(), 9);
        for x in ratios {
            // Targets ran in alternation: same run count, one ratio per pair,
            // and the median per-run ratio inside its own interval.
            let w = x["workload"].as_str().unwrap();
            let runs = get(w, mp)["runs"].as_u64().unwrap();
            assert_eq!(get(w, d)["runs"].as_u64().unwrap(), runs, "{w}");
            assert_eq!(x["paired"], true, "{x}");
            assert_eq!(x["pairs"].as_u64().unwrap(), runs, "{x}");
            let (lo, r, hi) = (
                x["ratio_ci95_low"].as_f64().unwrap(),
                x["ratio"].as_f64().unwrap(),
                x["ratio_ci95_high"].as_f64().unwrap(),
            );
            assert!(lo <= r && r <= hi && lo > 0.0, "{x}");
            assert!(x["ratio_uncertainty_percent"].as_f64().unwrap() >= 0.0);
            let flagged = x["flags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "ratio_uncertain");
            assert_eq!(
                flagged,
                x["ratio_uncertainty_percent"].as_f64().unwrap() > 10.0,
                "{x}"
            );
        }
        // Single-thread runs report how long they waited for a CPU.
        assert!(get("metadata", d)["cpu_wait_percent"].as_f64().unwrap() >= 0.0);
        assert!(
            get("metadata", d)["label"]
                .as_str()
                .unwrap()
                .ends_with("fresh dir")
        );
    }
    // Nothing left behind, on either target.
    assert_eq!(entries(&m.path), Vec::<String>::new());
    if let Some(d) = &disk {
        assert_eq!(entries(d.path()), Vec::<String>::new());
    }
}

#[test]
fn alternation_ends_on_even_rounds_until_precise_and_reports_the_order_effect() {
    require_root!();
    let a = TestMount::tmpfs("size=32M");
    let b = TestMount::tmpfs("size=32M");
    let run = |precision: &str| {
        let out = tmpfsctl(&[
            "bench",
            "--rw",
            "rand-read",
            "--bs",
            "4k",
            "--size",
            "4M",
            "--min-time",
            "0",
            "--min-runs",
            "3",
            "--no-latency",
            "--ceiling-size",
            "32M",
            "--ratio-precision",
            precision,
            "--max-time",
            "0.2s",
            "--json",
            a.path.to_str().unwrap(),
            b.path.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
        json(&out)["ratios"][0].clone()
    };
    // Off: exactly --min-runs rounds.
    let x = run("0");
    assert_eq!(x["pairs"], 3, "{x}");
    // A precision no run can reach: at least one more round so that each
    // target ran first as often as second, then max-time ends it.
    let x = run("0.0001");
    let pairs = x["pairs"].as_u64().unwrap();
    assert!(pairs >= 4 && pairs.is_multiple_of(2), "{x}");
    assert!(x["order_effect"].as_f64().unwrap() > 0.0, "{x}");
    for m in [&a, &b] {
        assert!(
            entries(&m.path).is_empty(),
            "left behind: {:?}",
            entries(&m.path)
        );
    }
    // A bad precision is refused before anything is written.
    let out = tmpfsctl(&[
        "bench",
        "--ratio-precision",
        "150",
        a.path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--ratio-precision"),
        "{}",
        stderr(&out)
    );
    assert!(entries(&a.path).is_empty());
}

#[test]
fn refuses_before_writing_when_space_is_short() {
    require_root!();
    let m = TestMount::tmpfs("size=8M");
    let mp = m.path.to_str().unwrap();
    let out = tmpfsctl(&["bench", "--quick", "--size", "16M", mp]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains(mp), "names the target: {e}");
    assert!(e.contains("not enough free space"), "{e}");
    assert!(e.contains("16.0 MiB of test data"), "names the need: {e}");
    assert!(e.contains("free"), "{e}");
    assert_eq!(entries(&m.path), Vec::<String>::new(), "nothing written");
    assert!(out.stdout.is_empty());
}

#[test]
fn refuses_when_inodes_are_short() {
    require_root!();
    let m = TestMount::tmpfs("size=64M,nr_inodes=100");
    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--files",
        "500",
        m.path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("not enough free inodes"),
        "{}",
        stderr(&out)
    );
    assert_eq!(entries(&m.path), Vec::<String>::new());
}

#[test]
fn missing_and_read_only_targets_are_clear_errors() {
    require_root!();
    let out = tmpfsctl(&["bench", "--quick", "/nonexistent/tmpfsctl-bench-target"]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("/nonexistent/tmpfsctl-bench-target") && e.contains("no such directory"),
        "{e}"
    );

    let ro = TestMount::tmpfs("size=8M,ro");
    let good = TestMount::tmpfs("size=64M");
    // The bad target is second: the good one must not be written to either.
    let out = tmpfsctl(&[
        "bench",
        "--quick",
        good.path.to_str().unwrap(),
        ro.path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains(ro.path.to_str().unwrap()) && e.contains("read-only"),
        "{e}"
    );
    assert_eq!(entries(&good.path), Vec::<String>::new());

    let file = tempfile::NamedTempFile::new().unwrap();
    let out = tmpfsctl(&["bench", "--quick", file.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a directory"), "{}", stderr(&out));

    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--size",
        "lots",
        good.path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--size"), "{}", stderr(&out));
}

fn interrupt_mid_run(sig: rustix::process::Signal) {
    let m = TestMount::tmpfs("size=64M");
    let mut child = spawn_until_scratch(
        &[
            "bench",
            "--quick",
            "--min-time",
            "60",
            "--max-runs",
            "1000000",
            "--no-latency",
        ],
        &m.path,
    );
    // A bit more, so that the signal lands mid-run.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "still running before the signal"
    );
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, sig).unwrap();
    let out = child.wait_with_output().unwrap();
    // 130 for SIGINT, 143 for SIGTERM: 128 + the signal, as a shell says.
    assert_eq!(
        crate::common::shell_status(out.status),
        128 + sig.as_raw(),
        "stderr: {}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    assert_eq!(
        entries(&m.path),
        Vec::<String>::new(),
        "nothing left behind"
    );
}

#[test]
fn sigint_mid_run_leaves_nothing() {
    require_root!();
    interrupt_mid_run(rustix::process::Signal::INT);
}

#[test]
fn sigterm_mid_run_leaves_nothing() {
    require_root!();
    interrupt_mid_run(rustix::process::Signal::TERM);
}

#[test]
fn custom_workload_knobs() {
    require_root!();
    let m = TestMount::tmpfs("size=64M");
    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--rw",
        "rand-write",
        "--bs",
        "8k",
        "--size",
        "4M",
        "--sync",
        "dsync",
        "--threads",
        "2",
        "--json",
        m.path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let v = json(&out);
    let w = &v["workloads"][0];
    assert_eq!(w["op"], "rand-write");
    assert_eq!(w["bs_bytes"], 8192);
    assert_eq!(w["sync"], "dsync");
    assert_eq!(w["threads"], 2);
    assert_eq!(v["results"][0]["label"], "rand write 8 KiB, O_DSYNC, Q1T2");
    assert_eq!(entries(&m.path), Vec::<String>::new());

    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--rw",
        "seq-read",
        "--sync",
        "sometimes",
        m.path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--sync"), "{}", stderr(&out));
}

#[test]
fn html_report_renders_in_chromium_with_charts_and_heat_map() {
    require_root!();
    let a = TestMount::tmpfs("size=64M");
    let b = TestMount::new("tmpfs", "second", "size=64M");
    let work = tempfile::tempdir().unwrap();
    let html = work.path().join("report.html");
    let svg = work.path().join("svg");
    // The iozone preset (at quick scale) gives both bar charts and heat maps;
    // the default suite gives the ceiling line.
    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--preset",
        "iozone",
        "--no-latency",
        "--html",
        html.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--json",
        a.path.to_str().unwrap(),
        b.path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let v = json(&out);
    let cells = v["workloads"].as_array().unwrap().len();
    assert!(cells >= 6 * 2, "iozone matrix at quick scale: {cells}");
    for r in v["results"].as_array().unwrap() {
        assert!(
            ["cpu-cache", "llc", "ram", "page-cache", "device"]
                .contains(&r["tier"].as_str().unwrap()),
            "{r}"
        );
    }
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(!text.contains("<script"), "no scripts");
    assert!(
        !text.contains("src=") && !text.contains("<link"),
        "self-contained: no external assets"
    );
    let Some(dom) = chromium_dom(&html) else {
        return;
    };
    // 6 iozone operations x 2 targets.
    assert_eq!(
        dom.matches("class=\"heatmap\"").count(),
        12,
        "heat maps in the rendered DOM"
    );
    assert_eq!(
        dom.matches("class=\"cell\"").count(),
        cells * 2,
        "one cell per workload and target"
    );
    // The bar chart section has bars: one per cell and target.
    assert_eq!(
        dom.matches("class=\"bar\"").count(),
        cells * 2,
        "iozone bars in the rendered DOM"
    );
    let svgs = std::fs::read_dir(&svg).unwrap().count();
    assert_eq!(
        svgs,
        12 + 6,
        "--svg writes the heat maps and a bar chart per operation"
    );

    let html2 = work.path().join("default.html");
    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--no-latency",
        "--html",
        html2.to_str().unwrap(),
        a.path.to_str().unwrap(),
        b.path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let dom = chromium_dom(&html2).unwrap();
    assert_eq!(
        dom.matches("class=\"chart\"").count(),
        9,
        "one bar chart per workload"
    );
    assert_eq!(
        dom.matches("class=\"bar\"").count(),
        18,
        "a bar per target side by side"
    );
    assert!(
        dom.contains("class=\"ceiling\"") || dom.contains("class=\"ceiling-note\""),
        "ceiling drawn"
    );
    assert!(dom.contains("memcpy ceiling"));
    assert_eq!(entries(&a.path), Vec::<String>::new());
    assert_eq!(entries(&b.path), Vec::<String>::new());
}

#[test]
fn presets_run_on_tmpfs() {
    require_root!();
    let m = TestMount::tmpfs("size=64M");
    for (p, n) in [
        ("dd", 4),
        ("sysbench", 3),
        ("smallfiles", 5),
        ("crystal", 8),
        ("temp-file", 4),
    ] {
        let out = tmpfsctl(&[
            "bench",
            "--quick",
            "--no-latency",
            "--preset",
            p,
            "--json",
            m.path.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{p}: {}", stderr(&out));
        let v = json(&out);
        assert_eq!(v["results"].as_array().unwrap().len(), n, "{p}");
        if p == "crystal" {
            let q32 = v["results"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["workload"] == "crystal-rnd4k-q32t1-read")
                .unwrap();
            assert!(
                ["io_uring", "psync-threads"].contains(&q32["engine"].as_str().unwrap()),
                "{q32}"
            );
            if q32["engine"] == "psync-threads" {
                assert!(
                    q32["flags"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|f| f == "iodepth_emulated_with_threads")
                );
            }
        }
        assert_eq!(entries(&m.path), Vec::<String>::new(), "{p} left files");
    }
}

#[test]
fn enospc_during_a_run_stops_cleans_up_and_reports() {
    require_root!();
    // The space check passes; then another writer fills the filesystem while
    // the benchmark repeats its write runs, so a run hits ENOSPC.
    let m = TestMount::tmpfs("size=48M");
    let t = Instant::now();
    let mut child = spawn_until_scratch(
        &[
            "bench",
            "--rw",
            "seq-write",
            "--size",
            "16M",
            "--min-time",
            "60",
            "--max-runs",
            "100000",
            "--no-latency",
            "--ceiling-size",
            "8M",
        ],
        &m.path,
    );
    // Keep grabbing every byte that frees up until the benchmark gives up.
    use std::io::Write;
    let mut filler = std::fs::File::create(m.path.join("filler")).unwrap();
    let chunk = vec![0x5au8; 256 << 10];
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("benchmark never hit ENOSPC");
        }
        if filler.write_all(&chunk).is_err() {
            std::thread::yield_now();
        }
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "stderr: {err}");
    assert!(err.contains("no space left on device"), "{err}");
    assert_eq!(
        entries(&m.path),
        vec!["filler".to_string()],
        "scratch removed: {err}"
    );
}

/// Whether any process's mount table shows something under `p`.
fn mounted_anywhere(p: &Path) -> Vec<String> {
    let needle = p.to_str().unwrap();
    let mut hits = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(mi) = std::fs::read_to_string(e.path().join("mountinfo"))
            && mi.contains(needle)
        {
            hits.push(name);
        }
    }
    hits
}

#[test]
fn sigkill_leaves_no_mount_and_the_next_run_sweeps_what_is_left() {
    require_root!();
    // The default disk target is /var/tmp's disk; skip where that is RAM.
    if disk_dir().is_none() {
        return;
    }
    let var_tmp = std::fs::canonicalize("/var/tmp").unwrap();
    // The private tmpfs's mount point goes into TMPDIR.
    let tmp = tempfile::tempdir().unwrap();
    let mut child = bin()
        .args([
            "bench",
            "--quick",
            "--min-time",
            "60",
            "--max-runs",
            "1000000",
            "--no-latency",
        ])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let tag = format!(".tmpfsctl-bench-{pid}-");
    let scratch = || -> Vec<String> {
        entries(&var_tmp)
            .into_iter()
            .filter(|n| n.starts_with(&tag))
            .collect()
    };
    let t = Instant::now();
    while scratch().is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no scratch directory {tag}* appeared in {}",
            var_tmp.display()
        );
        assert!(child.try_wait().unwrap().is_none(), "bench ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Mounted, but only in bench's own mount namespace.
    let theirs = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
    assert!(
        theirs.contains(tmp.path().to_str().unwrap()) && theirs.contains(" tmpfs "),
        "the private tmpfs is in bench's mount table"
    );
    let ours = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !ours.contains(tmp.path().to_str().unwrap()),
        "the private tmpfs is not in the test's mount namespace"
    );

    child.kill().unwrap(); // SIGKILL: no cleanup code runs
    child.wait().unwrap();
    assert_eq!(
        mounted_anywhere(tmp.path()),
        Vec::<String>::new(),
        "processes that still see a mount under {}",
        tmp.path().display()
    );
    let left_scratch = scratch();
    assert_eq!(left_scratch.len(), 1, "the killed run's scratch is left");
    let left_mnt = entries(tmp.path());
    assert_eq!(left_mnt.len(), 1, "and its (empty) mount point");
    assert!(left_mnt[0].starts_with(&format!("tmpfsctl-bench-mnt-{pid}-")));

    // The next run (a short one) removes both, then its own.
    let out = bin()
        .args([
            "bench",
            "--quick",
            "--rw",
            "seq-write",
            "--size",
            "1M",
            "--no-latency",
        ])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(scratch(), Vec::<String>::new(), "scratch swept");
    assert!(!var_tmp.join(&left_scratch[0]).exists());
    assert_eq!(
        entries(tmp.path()),
        Vec::<String>::new(),
        "mount point swept"
    );
}

/// `bench /dev/shm /dev/shm` (or the same directory by another path)
/// compares a target with itself: refused before anything is written.
#[test]
fn a_target_given_twice_is_refused_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    let other = d.path().join("link");
    std::os::unix::fs::symlink(d.path(), &other).unwrap();
    for (a, b) in [
        (d.path().to_path_buf(), d.path().to_path_buf()),
        (d.path().to_path_buf(), other.clone()),
    ] {
        let o = crate::common::bin()
            .args(["bench", "--quick"])
            .arg(&a)
            .arg(&b)
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains("are the same") && e.contains("itself"), "{e}");
        assert!(o.stdout.is_empty());
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n != "link")
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
    let o = crate::common::tmpfsctl(&["bench", "--quick", "tmpfs:huge=never", "tmpfs:huge=never"]);
    assert_eq!(o.status.code(), Some(2));
}
