//! Integration tests for `advise`: real directories on disk and on real tmpfs
//! mounts, checked for verdict kind, numbers present, and nothing left behind.

use std::path::Path;

use crate::common::{TestMount, json, tmpfsctl};
use crate::require_root;

/// Names in a directory, sorted: compared before and after to prove nothing was left.
fn listing(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Run `advise --quick --json` with its own TMPDIR, and check that the private
/// tmpfs and scratch it makes there are gone afterwards (other tests mount
/// tmpfs concurrently, so a global mount count would not do).
fn advise(dir: &Path, extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    let mut args = vec!["--quick"];
    args.extend_from_slice(extra);
    advise_measured(dir, &args)
}

/// As [`advise`], measuring as long as `extra` says (no `--quick` of its own).
fn advise_measured(dir: &Path, extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec!["advise", "--json"];
    args.extend_from_slice(extra);
    args.push(dir.to_str().unwrap());
    let out = crate::common::bin()
        .args(&args)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let v = json(&out);
    assert!(
        listing(tmp.path()).is_empty(),
        "left in TMPDIR: {:?}",
        listing(tmp.path())
    );
    let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mi.contains(tmp.path().to_str().unwrap()),
        "a private tmpfs was left mounted"
    );
    (out, v)
}

fn assert_numbers_present(v: &serde_json::Value) {
    assert_eq!(v["schema_version"], 1);
    for k in ["current_bytes", "current_inodes", "decided_on_bytes"] {
        assert!(v["usage"][k].is_u64(), "usage.{k}: {}", v["usage"]);
    }
    for k in [
        "mem_total_bytes",
        "mem_available_bytes",
        "swap_total_bytes",
        "swap_free_bytes",
    ] {
        assert!(v["memory"][k].is_u64(), "memory.{k}");
    }
    assert!(v["fit"]["tmpfs_size_bytes"].as_u64().unwrap() > 0);
    assert!(v["fit"]["fits_size"].is_boolean());
    let sp = v["speedups"].as_array().unwrap();
    assert_eq!(
        sp.len(),
        4,
        "seq write, random read, small files, metadata: {sp:?}"
    );
    for s in sp {
        assert!(s["ratio"].as_f64().unwrap() > 0.0, "{s}");
    }
    assert!(
        v["bench"]["ceiling"]["memcpy_bytes_per_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(!v["verdict"]["headline"].as_str().unwrap().is_empty());
    assert!(!v["verdict"]["reasons"].as_array().unwrap().is_empty());
}

#[test]
fn directory_on_disk_is_advised_to_move() {
    require_root!(); // the RAM side of the measurement is a private tmpfs
    let base = if Path::new("/var/tmp").is_dir() {
        "/var/tmp"
    } else {
        "/root"
    };
    let d = tempfile::Builder::new()
        .prefix("tmpfsctl-advise-")
        .tempdir_in(base)
        .unwrap();
    std::fs::write(d.path().join("keep.txt"), b"user data").unwrap();
    let fstab_before = std::fs::read("/etc/fstab").ok();
    let before = listing(d.path());

    let (out, v) = advise(d.path(), &[]);
    assert_numbers_present(&v);
    assert_eq!(v["location"]["ram_backed"], false);
    // A small directory on a virtio disk on a 24 GiB machine: moving wins.
    assert_eq!(v["verdict"]["kind"], "move", "{}", v["verdict"]);
    assert_eq!(out.status.code(), Some(1), "a recommended change exits 1");
    let act = v["commands"]["act"].as_array().unwrap();
    assert!(
        act.iter()
            .any(|c| c.as_str().unwrap().contains("tmpfsctl apply")),
        "{act:?}"
    );
    assert!(
        v["commands"]["undo"][0]
            .as_str()
            .unwrap()
            .contains("tmpfsctl revert")
    );

    // Read-only plus its scratch: nothing left, nothing changed.
    assert_eq!(listing(d.path()), before);
    assert_eq!(
        std::fs::read(d.path().join("keep.txt")).unwrap(),
        b"user data"
    );
    assert_eq!(std::fs::read("/etc/fstab").ok(), fstab_before);
}

/// A right-sized tmpfs that nothing mounts at boot (no fstab line, no
/// unit) is gone after a reboot: advise says so and how to persist it.
#[test]
fn well_sized_live_only_tmpfs_is_persisted() {
    require_root!();
    // nosuid,nodev as apply mounts it: with other options apply refuses to
    // persist it (a conflict), and advise says that instead.
    let m = TestMount::tmpfs("nosuid,nodev,size=512M,nr_inodes=100000");
    std::fs::write(m.path.join("a"), vec![1u8; 1 << 20]).unwrap();
    let before = listing(&m.path);
    let (out, v) = advise(&m.path, &[]);
    assert_numbers_present(&v);
    assert_eq!(v["location"]["ram_backed"], true);
    assert_eq!(v["location"]["size_limit_bytes"].as_u64(), Some(512 << 20));
    assert_eq!(v["verdict"]["kind"], "persist", "{}", v["verdict"]);
    assert!(
        v["verdict"]["headline"]
            .as_str()
            .unwrap()
            .contains("gone after a reboot"),
        "{}",
        v["verdict"]
    );
    assert_eq!(out.status.code(), Some(1));
    let act: Vec<&str> = v["commands"]["act"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        act.iter().any(|c| c.starts_with("sudo tmpfsctl apply")
            && c.contains("--boot")
            && c.contains(m.path.to_str().unwrap())),
        "{act:?}"
    );
    // The configuration keeps the size the tmpfs has.
    assert!(
        v["commands"]["config"]
            .as_str()
            .unwrap()
            .contains("size=512M"),
        "{}",
        v["commands"]
    );
    assert_eq!(listing(&m.path), before);
}

#[test]
fn tmpfs_too_small_is_resized() {
    require_root!();
    let m = TestMount::tmpfs("size=4M");
    std::fs::write(m.path.join("a"), vec![1u8; 3584 << 10]).unwrap();
    // Without measuring: the bench needs room the full tmpfs does not have.
    let out = tmpfsctl(&["advise", "--no-bench", "--json", m.path.to_str().unwrap()]);
    let v = json(&out);
    assert_eq!(v["verdict"]["kind"], "resize", "{}", v["verdict"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        v["commands"]["act"][0]
            .as_str()
            .unwrap()
            .contains("--resize")
    );
    assert!(v["bench"].is_null());
}

#[test]
fn history_peak_drives_the_verdict() {
    let d = tempfile::tempdir().unwrap();
    let snap = tmpfsctl(&[
        "collect",
        "--path",
        d.path().to_str().unwrap(),
        "--host",
        "h1",
    ]);
    assert!(
        snap.status.success(),
        "{}",
        String::from_utf8_lossy(&snap.stderr)
    );
    let mut line: serde_json::Value = serde_json::from_slice(&snap.stdout).unwrap();
    // A second, older snapshot with a peak far beyond RAM: /tmp must stay on disk.
    let mut peak = line.clone();
    let huge = line["mem_total_bytes"].as_u64().unwrap() * 2;
    peak["paths"][0]["used_bytes"] = huge.into();
    peak["timestamp_unix_s"] = (line["timestamp_unix_s"].as_i64().unwrap() - 3600).into();
    line["host"] = "h1".into();
    let hist = d.path().join("history.jsonl");
    std::fs::write(&hist, format!("{peak}\n{line}\n")).unwrap();
    let out = tmpfsctl(&[
        "advise",
        "--no-bench",
        "--json",
        "--host",
        "h1",
        "--history",
        hist.to_str().unwrap(),
        "--",
        d.path().to_str().unwrap(),
    ]);
    let v = json(&out);
    assert_eq!(v["usage"]["source"], "history");
    assert_eq!(v["usage"]["peak_bytes"].as_u64(), Some(huge));
    assert_eq!(v["usage"]["decided_on_bytes"].as_u64(), Some(huge));
    assert_eq!(v["verdict"]["kind"], "keep_on_disk", "{}", v["verdict"]);
    assert_eq!(v["fit"]["fits_mem_available"], false);
    assert_eq!(out.status.code(), Some(0));

    // A host missing from the history is an error naming the fix.
    let out = tmpfsctl(&[
        "advise",
        "--no-bench",
        "--host",
        "nope",
        "--history",
        hist.to_str().unwrap(),
        "--",
        d.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--host"));
}

#[test]
fn html_report_has_the_verdict_and_charts() {
    require_root!();
    // nosuid,nodev like every tmpfs apply makes: a hand-made tmpfs without
    // them is one apply refuses to take over, and advise then shows that
    // refusal instead of commands.
    let m = TestMount::tmpfs("nosuid,nodev,size=256M");
    let d = tempfile::tempdir().unwrap();
    let html = d.path().join("advice.html");
    let out = tmpfsctl(&[
        "advise",
        "--quick",
        "--html",
        html.to_str().unwrap(),
        m.path.to_str().unwrap(),
    ]);
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(r#"id="verdict""#));
    // Commands are copyable code blocks, not bullets.
    let code = page
        .split("<pre><code>")
        .nth(1)
        .and_then(|c| c.split("</code></pre>").next())
        .unwrap_or_else(|| panic!("no <pre><code> block in the page"));
    assert!(code.contains("sudo tmpfsctl apply"), "{code}");
    assert!(!page.contains("<li>sudo tmpfsctl"), "commands as bullets");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&html).unwrap().permissions().mode() & 0o777,
        0o644
    );
    assert_eq!(
        page.matches("<svg").count(),
        4,
        "one chart per measured operation"
    );
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http") && !page.contains("<script"),
        "self-contained"
    );
    // The text output leads with the verdict.
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Verdict: "));
}

#[test]
fn bad_input_exits_2() {
    let out = tmpfsctl(&["advise", "--no-bench", "/no/such/dir"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/dir"));
    let out = tmpfsctl(&[
        "advise",
        "--prometheus",
        "http://127.0.0.1:1",
        "--window",
        "bogus",
        "/tmp",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--window"));
    let out = tmpfsctl(&["advise", "--quick", "--html", "/no/such/dir/a.html", "/tmp"]);
    assert_eq!(out.status.code(), Some(2));
    // A directory given as the report file is refused before measuring.
    let d = tempfile::tempdir().unwrap();
    let out = tmpfsctl(&[
        "advise",
        "--quick",
        "--html",
        d.path().to_str().unwrap(),
        "/tmp",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--html") && err.contains("is a directory"),
        "{err}"
    );
}

#[test]
fn verdict_is_coloured_only_when_asked() {
    let d = tempfile::tempdir().unwrap();
    let run = |color: &str| {
        let out = tmpfsctl(&[
            "advise",
            "--no-bench",
            "--color",
            color,
            d.path().to_str().unwrap(),
        ]);
        assert!(out.status.code().is_some_and(|c| c < 2));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = run("always");
    let first = first.lines().next().unwrap();
    assert!(first.starts_with("Verdict: \x1b["), "{first:?}");
    assert!(!run("never").contains('\x1b'));
}

/// A fresh directory on disk (not tmpfs) for advise to measure against.
fn disk_dir() -> tempfile::TempDir {
    let base = if Path::new("/var/tmp").is_dir() {
        "/var/tmp"
    } else {
        "/root"
    };
    tempfile::Builder::new()
        .prefix("tmpfsctl-advise-")
        .tempdir_in(base)
        .unwrap()
}

fn huge_rows(v: &serde_json::Value) -> &Vec<serde_json::Value> {
    v["options"]["huge"]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no options.huge.rows: {}", v["options"]))
}

#[test]
fn quick_measures_huge_within_size_but_never_recommends_it() {
    require_root!(); // two private tmpfs mounts
    let d = disk_dir();
    let (_, v) = advise(d.path(), &[]);
    let h = &v["options"]["huge"];
    assert_eq!(h["compared"], "huge=within_size vs huge=never", "{h}");
    assert_eq!(h["quick"], true);
    assert_eq!(h["recommended"], false, "{h}");
    assert!(h["reason"].as_str().unwrap().contains("--quick"), "{h}");
    // Every operation of the main measurement was run on both mounts.
    let main: Vec<&str> = v["speedups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["workload"].as_str().unwrap())
        .collect();
    let rows: Vec<&str> = huge_rows(&v)
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect();
    assert_eq!(rows, main);
    assert!(
        !v["options"]["recommended"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o == "huge=within_size")
    );
    let act = v["commands"]["act"].to_string();
    assert!(!act.contains("--huge"), "{act}");
    assert_eq!(v["options"]["noswap"], false, "never without --secrets");
}

/// A real (not --quick) measurement: whatever it shows on this machine, the
/// recommendation follows the intervals, and the command carries it.
#[test]
fn huge_within_size_is_recommended_exactly_when_measured_faster_beyond_the_interval() {
    require_root!();
    let d = disk_dir();
    let (_, v) = advise_measured(d.path(), &[]);
    let h = &v["options"]["huge"];
    assert_eq!(h["quick"], false);
    let mut faster = false;
    let mut slower = false;
    for r in huge_rows(&v) {
        let (lo, hi) = (
            r["ratio_ci95_low"].as_f64().unwrap(),
            r["ratio_ci95_high"].as_f64().unwrap(),
        );
        let want = if lo > 1.0 {
            faster = true;
            "faster"
        } else if hi < 1.0 {
            slower = true;
            "slower"
        } else {
            "same"
        };
        assert_eq!(r["outcome"], want, "{r}");
    }
    let recommended = faster && !slower;
    assert_eq!(h["recommended"], recommended, "{h}");
    let act = v["commands"]["act"].to_string();
    let reasons = v["verdict"]["reasons"].to_string();
    let listed = v["options"]["recommended"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o == "huge=within_size");
    assert_eq!(listed, recommended);
    if recommended {
        assert_eq!(v["verdict"]["kind"], "move", "{}", v["verdict"]);
        assert!(
            act.contains("tmpfsctl apply") && act.contains("--huge within_size"),
            "{act}"
        );
        assert!(reasons.contains("95% interval"), "{reasons}");
        assert!(
            v["commands"]["config"]
                .as_str()
                .unwrap()
                .contains("huge=within_size"),
            "{}",
            v["commands"]["config"]
        );
    } else {
        assert!(!act.contains("--huge"), "{act}");
        eprintln!(
            "huge=within_size not recommended on this run: {}",
            h["reason"]
        );
    }
}

#[test]
fn a_tmpfs_already_on_huge_pages_is_not_measured_for_them() {
    require_root!();
    let m = TestMount::tmpfs("size=64M,huge=within_size");
    let (_, v) = advise(&m.path, &[]);
    assert!(v["options"]["huge"].is_null(), "{}", v["options"]);
    // Left out because it is on huge pages already, not for a failure.
    assert!(
        !v["notes"].to_string().contains("not measured"),
        "{}",
        v["notes"]
    );
    assert!(
        !v["verdict"]["reasons"]
            .to_string()
            .contains("huge=within_size")
    );
}

#[test]
fn noswap_is_a_json_answer_only_with_secrets() {
    let d = tempfile::tempdir().unwrap();
    let swap = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("SwapTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap();
    for (secrets, extra) in [(false, vec![]), (true, vec!["--secrets"])] {
        let mut args = vec!["advise", "--no-bench", "--json"];
        args.extend(extra);
        args.push(d.path().to_str().unwrap());
        let v = json(&tmpfsctl(&args));
        let want = secrets && swap > 0;
        assert_eq!(v["options"]["noswap"], want, "{}", v["options"]);
        let listed = v["options"]["recommended"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o == "noswap");
        assert_eq!(listed, want);
    }
}

/// On a terminal advise shows bench's bar (what runs, workloads done of
/// all, ETA) on stderr, after a line naming each measurement; piped, none.
#[test]
fn progress_only_on_a_terminal() {
    require_root!();
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        crate::skip!("script (util-linux) is not installed");
    }
    let d = disk_dir();
    let tmp = tempfile::tempdir().unwrap();
    let cmdline = format!(
        "{} advise --quick --json {} >/dev/null",
        env!("CARGO_BIN_EXE_tmpfsctl"),
        d.path().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &cmdline, "/dev/null"])
        .env("TMPDIR", tmp.path())
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(tty.contains("workloads, ETA"), "{tty}");
    assert!(tty.contains("measuring 1 of 2"), "{tty}");
    assert!(
        tty.contains("measuring 2 of 2: huge=within_size vs huge=never"),
        "{tty}"
    );
    let (out, _) = advise(d.path(), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("ETA") && !err.contains('\r'), "{err}");
    assert!(!err.contains("measuring 1 of"), "{err}");
}

/// What DIR's own files would cost in zram, estimated without root and
/// without a device: text logs compress, random data is stored whole,
/// zero pages cost nothing, and every byte of a small DIR is sampled.
#[test]
fn advise_estimates_the_zram_cost_of_dirs_own_files_without_root() {
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;
    let d = tempfile::Builder::new()
        .prefix("tmpfsctl-it-zram-est-")
        .tempdir_in("/var/tmp")
        .unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let log: String = (0..40_000)
        .map(|i| {
            format!(
                "2026-11-27T21:{:02}:{:02} web-{:02} nginx[{}]: GET /api/v1/items status=200 in {} ms\n",
                i % 60,
                (i * 7) % 60,
                i % 12,
                1000 + i % 5000,
                i % 900
            )
        })
        .collect();
    std::fs::write(d.path().join("app.log"), &log).unwrap();
    let mut random = vec![0u8; 1 << 20];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").unwrap(),
        &mut random,
    )
    .unwrap();
    std::fs::write(d.path().join("blob"), &random).unwrap();
    std::fs::write(d.path().join("zeros"), vec![0u8; 1 << 20]).unwrap();
    for p in ["app.log", "blob", "zeros"] {
        std::fs::set_permissions(d.path().join(p), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let mut cmd = crate::common::bin();
    if rustix::process::geteuid().is_root() {
        // As nobody: the estimate needs no root.
        cmd.uid(65534).gid(65534);
    }
    let out = cmd
        .args(["advise", "--no-bench", "--json"])
        .arg(d.path())
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let z = &v["zram_estimate"];
    let total = (log.len() + (2 << 20)) as u64;
    assert_eq!(z["bytes_sampled"], total, "{z}");
    assert_eq!(z["files_sampled"], 3, "{z}");
    assert_eq!(z["algorithm"], "lz4", "{z}");
    assert_eq!(
        z["same_pages"], 256,
        "the zero file's pages cost nothing: {z}"
    );
    assert!(
        z["huge_pages"].as_u64().unwrap() >= 256,
        "random pages stored whole: {z}"
    );
    let ram = z["ram_bytes"].as_u64().unwrap();
    // The random MiB costs its size; the log well under its size.
    assert!(
        ram > 1 << 20 && ram < (1 << 20) + log.len() as u64 / 2,
        "{z}"
    );
    let ratio = z["data_per_ram_ratio"].as_f64().unwrap();
    assert!((ratio - total as f64 / ram as f64).abs() < 1e-9, "{z}");
    let text = tmpfsctl(&["advise", "--no-bench", d.path().to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("In zram (estimated, no device made)"),
        "{text}"
    );
    assert!(text.contains("lz4_flex"), "says what computed it: {text}");
}
