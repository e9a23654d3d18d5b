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
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec!["advise", "--quick", "--json"];
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
    let m = TestMount::tmpfs("size=512M,nr_inodes=100000");
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
            && c.contains("--persist")
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
    let m = TestMount::tmpfs("size=256M");
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
