//! Integration tests for `collect` and `fleet analyze`: real trees, real mounts,
//! real Prometheus and node_exporter.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{bin, json, tmpfsctl};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn du(args: &[&str], p: &Path) -> u64 {
    let o = Command::new("du").args(args).arg(p).output().unwrap();
    assert!(o.status.success());
    stdout(&o)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// A small /tmp-like tree: nested dirs, a hard link, a symlink, a sparse file.
fn make_tree(d: &Path) {
    std::fs::create_dir_all(d.join("a/b/c")).unwrap();
    std::fs::write(d.join("a/f1"), vec![1u8; 100_000]).unwrap();
    std::fs::write(d.join("a/b/c/f2"), vec![2u8; 5000]).unwrap();
    std::fs::hard_link(d.join("a/f1"), d.join("a/b/f1-link")).unwrap();
    std::os::unix::fs::symlink("/usr", d.join("usr-link")).unwrap();
    let f = std::fs::File::create(d.join("sparse")).unwrap();
    f.set_len(10 << 20).unwrap();
}

#[test]
fn collect_json_agrees_with_du_and_meminfo() {
    let t = tempfile::tempdir().unwrap();
    make_tree(t.path());
    let p = t.path().to_str().unwrap();
    let o = tmpfsctl(&["collect", "--path", p]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "one JSON line: {out}");
    let j = json(&o);
    assert_eq!(j["schema_version"], 1);
    let pu = &j["paths"][0];
    assert_eq!(pu["path"], p);
    assert_eq!(pu["source"], "du");
    assert_eq!(
        pu["used_bytes"].as_u64().unwrap(),
        du(&["-s", "-x", "-B1"], t.path())
    );
    assert_eq!(
        pu["inodes"].as_u64().unwrap(),
        du(&["-s", "-x", "--inodes"], t.path())
    );
    assert_eq!(pu["unreadable_dirs"], 0);
    assert!(pu["oldest_age_s"].as_i64().unwrap() >= 0);
    let mem = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total: u64 = mem
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(j["mem_total_bytes"].as_u64().unwrap(), total * 1024);
    let uts = rustix::system::uname();
    assert_eq!(j["host"], uts.nodename().to_str().unwrap());

    let a = json(&tmpfsctl(&["collect", "--path", p, "--anonymize"]));
    let b = json(&tmpfsctl(&["collect", "--path", p, "--anonymize"]));
    assert_eq!(a["host"], b["host"], "anonymized name must be stable");
    assert!(a["host"].as_str().unwrap().starts_with("anon-"));
    assert_ne!(a["host"], j["host"]);
    let c = json(
        &bin()
            .args(["collect", "--path", p, "--anonymize"])
            .env("TMPFSCTL_ANON_SALT", "s3cret")
            .output()
            .unwrap(),
    );
    assert_ne!(a["host"], c["host"], "the salt changes the hash");
}

#[test]
fn collect_errors_name_the_path() {
    let o = tmpfsctl(&["collect", "--path", "/nonexistent/tmpfsctl-xyz"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent/tmpfsctl-xyz"),
        "{}",
        stderr(&o)
    );
    let o = tmpfsctl(&["collect", "--path", "relative/dir"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("absolute"), "{}", stderr(&o));
    let o = tmpfsctl(&[
        "collect", "--format", "kirkland", "--path", "/tmp", "--path", "/var/tmp",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("exactly one --path"));
}

/// A fixture system root: /proc/meminfo, /proc/self/mountinfo and a /tmp tree.
fn sysroot() -> tempfile::TempDir {
    let s = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(s.path().join("proc/self")).unwrap();
    std::fs::create_dir_all(s.path().join("etc")).unwrap();
    std::fs::write(
        s.path().join("proc/meminfo"),
        "MemTotal:        4000000 kB\nMemFree:         1000000 kB\nMemAvailable:    2500000 kB\n\
         Buffers:           20000 kB\nCached:           900000 kB\nShmem:             30000 kB\n\
         SwapTotal:       2000000 kB\nSwapFree:        1500000 kB\n",
    )
    .unwrap();
    std::fs::write(
        s.path().join("proc/self/mountinfo"),
        "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n",
    )
    .unwrap();
    std::fs::create_dir_all(s.path().join("tmp")).unwrap();
    make_tree(&s.path().join("tmp"));
    s
}

#[test]
fn collect_kirkland_row_has_the_survey_columns_in_kib() {
    let s = sysroot();
    let root = s.path().to_str().unwrap();
    let o = tmpfsctl(&[
        "--sysroot",
        root,
        "collect",
        "--format",
        "kirkland",
        "--host",
        "web-7",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = stdout(&o);
    let f: Vec<&str> = line.trim_end().split('\t').collect();
    assert_eq!(f.len(), 12, "{line}");
    let bytes = du(&["-s", "-x", "-B1"], &s.path().join("tmp"));
    let inodes = du(&["-s", "-x", "--inodes"], &s.path().join("tmp"));
    assert_eq!(f[0], "web-7");
    assert_eq!(f[1], bytes.div_ceil(1024).to_string());
    // free(1) of procps 3.3.9: total used free shared buffers cached; swap total used free.
    assert_eq!(
        &f[2..11],
        [
            "4000000", "3000000", "1000000", "30000", "20000", "900000", "2000000", "500000",
            "1500000"
        ]
    );
    assert_eq!(f[11], inodes.to_string());

    // ... and fleet analyze reads it back.
    let d = tempfile::tempdir().unwrap();
    let k = d.path().join("k.tsv");
    std::fs::write(&k, &line).unwrap();
    let j = json(&tmpfsctl(&[
        "fleet",
        "analyze",
        k.to_str().unwrap(),
        "--json",
        "--target",
        "50",
    ]));
    assert_eq!(j["hosts"], 1);
    assert_eq!(
        j["mem_total_bytes"]["max"].as_u64().unwrap(),
        4_000_000 * 1024
    );
    assert_eq!(
        j["tmp_used_bytes"]["max"].as_u64().unwrap(),
        bytes.div_ceil(1024) * 1024
    );
    // MemAvailable estimated from free's columns: free + buffers + cached.
    assert_eq!(
        j["mem_available_bytes"]["max"].as_u64().unwrap(),
        1_920_000 * 1024
    );
}

#[test]
fn collect_prom_output_is_atomic_and_world_readable() {
    let s = sysroot();
    let root = s.path().to_str().unwrap();
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("tmpfsctl.prom");
    std::fs::write(&f, "old\n").unwrap();
    let o = tmpfsctl(&[
        "--sysroot",
        root,
        "collect",
        "--format",
        "prom",
        "--output",
        f.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let text = std::fs::read_to_string(&f).unwrap();
    let bytes = du(&["-s", "-x", "-B1"], &s.path().join("tmp"));
    assert!(
        text.contains(&format!(
            "tmpfsctl_path_used_bytes{{path=\"/tmp\"}} {bytes}\n"
        )),
        "{text}"
    );
    assert!(text.contains("# TYPE tmpfsctl_path_inodes gauge\n"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
        0o644
    );
    let names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        [std::ffi::OsString::from("tmpfsctl.prom")],
        "temp file left behind"
    );
    // promtool, when installed, must accept it as exposition format.
    if let Ok(c) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        use std::io::Write;
        let mut c = c;
        c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let r = c.wait_with_output().unwrap();
        assert!(r.status.success(), "promtool check metrics: {}", stderr(&r));
    }
    // A directory that does not exist: exit 2, nothing written.
    let bad = d.path().join("nope/x.prom");
    let o = tmpfsctl(&[
        "--sysroot",
        root,
        "collect",
        "--format",
        "prom",
        "--output",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));
}

#[test]
fn collect_under_sysroot_names_the_sysroots_host_not_this_one() {
    let live = rustix::system::uname()
        .nodename()
        .to_str()
        .unwrap()
        .to_string();
    let s = sysroot();
    let root = s.path().to_str().unwrap();
    let proc_name = s.path().join("proc/sys/kernel/hostname");
    let etc_name = s.path().join("etc/hostname");
    std::fs::create_dir_all(proc_name.parent().unwrap()).unwrap();
    std::fs::write(&proc_name, "img-proc-host\n").unwrap();
    std::fs::write(
        &etc_name,
        "# written by the image builder\n\n  img-etc-host \n",
    )
    .unwrap();
    let collect = |extra: &[&str]| {
        let mut a = vec!["--sysroot", root, "collect"];
        a.extend_from_slice(extra);
        tmpfsctl(&a)
    };
    let host_of = |o: &Output| {
        assert!(o.status.success(), "{}", stderr(o));
        json(o)["host"].as_str().unwrap().to_string()
    };
    let kirkland_host = |o: &Output| {
        assert!(o.status.success(), "{}", stderr(o));
        stdout(o).split('\t').next().unwrap().to_string()
    };
    let prom_ok = |o: &Output| {
        assert!(o.status.success(), "{}", stderr(o));
        let t = stdout(o);
        assert!(
            t.contains("tmpfsctl_path_used_bytes{path=\"/tmp\"} "),
            "{t}"
        );
        // The textfile carries no host name at all (the scraper's instance label
        // names the host): every sample is `name{path="..."} v` or the timestamp.
        for l in t.lines().filter(|l| !l.starts_with('#')) {
            let labels = l.split_once('{').map(|(_, r)| r.split_once('}').unwrap().0);
            match labels {
                Some(ls) => assert!(ls.starts_with("path=\"") && !ls.contains(','), "{l}"),
                None => assert!(l.starts_with("tmpfsctl_collect_timestamp_seconds "), "{l}"),
            }
        }
        assert!(!t.contains("img-") && !t.contains("anon-"), "{t}");
    };

    // No osrelease in the image: its kernel is unknown, not this machine's.
    assert_eq!(json(&collect(&[]))["kernel"], "unknown");
    std::fs::write(s.path().join("proc/sys/kernel/osrelease"), "6.1.0-img\n").unwrap();
    assert_eq!(json(&collect(&[]))["kernel"], "6.1.0-img");

    // proc/sys/kernel/hostname wins: it is what the kernel of that system said.
    assert_eq!(host_of(&collect(&[])), "img-proc-host");
    assert_eq!(
        kirkland_host(&collect(&["--format", "kirkland"])),
        "img-proc-host"
    );
    prom_ok(&collect(&["--format", "prom"]));

    // Without it, etc/hostname's first real line, trimmed.
    std::fs::remove_file(&proc_name).unwrap();
    assert_eq!(host_of(&collect(&[])), "img-etc-host");
    assert_eq!(
        kirkland_host(&collect(&["--format", "kirkland"])),
        "img-etc-host"
    );
    prom_ok(&collect(&["--format", "prom"]));
    // --anonymize hashes the sysroot's name, not this machine's.
    let anon = host_of(&collect(&["--anonymize"]));
    assert_eq!(
        anon,
        tmpfsctl::fleet::collect::anonymize("img-etc-host", "")
    );
    assert_ne!(anon, tmpfsctl::fleet::collect::anonymize(&live, ""));
    // --host still overrides.
    assert_eq!(host_of(&collect(&["--host", "web-9"])), "web-9");
    let o = collect(&["--host", " "]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--host"), "{}", stderr(&o));

    // Neither file: JSON and Kirkland fail naming both paths and the fix,
    // and write nothing; prom does not need a name and still works.
    std::fs::remove_file(&etc_name).unwrap();
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("snap.jsonl");
    for fmt in ["json", "kirkland"] {
        let o = collect(&["--format", fmt, "--output", dest.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{fmt}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains(proc_name.to_str().unwrap()) && e.contains(etc_name.to_str().unwrap()),
            "{fmt}: {e}"
        );
        assert!(e.contains("--host NAME"), "{fmt}: {e}");
        assert!(o.stdout.is_empty());
        assert_eq!(
            std::fs::read_dir(out.path()).unwrap().count(),
            0,
            "{fmt}: file written"
        );
    }
    prom_ok(&collect(&["--format", "prom"]));
    // Options that would only seem to hide or rename the host are refused.
    for extra in [&["--anonymize"][..], &["--host", "web-1"][..]] {
        let mut a = vec!["--format", "prom"];
        a.extend_from_slice(extra);
        let o = collect(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}");
        assert!(stderr(&o).contains("instance"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty());
    }
    assert_eq!(host_of(&collect(&["--host", "web-9"])), "web-9");
    assert_eq!(
        kirkland_host(&collect(&["--format", "kirkland", "--host", "web-9"])),
        "web-9"
    );
}

#[test]
fn collect_counts_unreadable_dirs_without_failing() {
    crate::require_root!();
    let t = tempfile::tempdir().unwrap();
    let top = t.path().join("tmp");
    make_tree(&top);
    std::fs::create_dir(top.join("secret")).unwrap();
    std::fs::write(top.join("secret/big"), vec![0u8; 200_000]).unwrap();
    use std::os::unix::fs::PermissionsExt;
    for p in [
        t.path(),
        &top,
        &top.join("a"),
        &top.join("a/b"),
        &top.join("a/b/c"),
    ] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(top.join("secret"), std::fs::Permissions::from_mode(0o700)).unwrap();
    // The binary must be reachable by `nobody`; skip if the checkout is private.
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_tmpfsctl"));
    let probe = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .arg("--version")
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        _ => {
            eprintln!(
                "SKIP collect_counts_unreadable_dirs: `nobody` cannot run {} (private checkout or no setpriv)",
                exe.display()
            );
            return;
        }
    }
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args(["collect", "--path", top.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 directories could not be read"),
        "{}",
        stderr(&o)
    );
    let j = json(&o);
    assert_eq!(j["paths"][0]["unreadable_dirs"], 1);
    let as_root = json(&tmpfsctl(&["collect", "--path", top.to_str().unwrap()]));
    let diff = as_root["paths"][0]["used_bytes"].as_u64().unwrap()
        - j["paths"][0]["used_bytes"].as_u64().unwrap();
    assert!(
        diff >= 200_000,
        "the unreadable file is missing from the unprivileged figure: {diff}"
    );
}

#[test]
fn collect_on_a_tmpfs_mount_uses_statfs() {
    crate::require_root!();
    let m = crate::common::TestMount::tmpfs("size=16M,nr_inodes=1000");
    std::fs::write(m.path.join("f"), vec![3u8; 1 << 20]).unwrap();
    std::fs::create_dir(m.path.join("d")).unwrap();
    let j = json(&tmpfsctl(&["collect", "--path", m.path.to_str().unwrap()]));
    let p = &j["paths"][0];
    assert_eq!(p["fstype"], "tmpfs");
    assert_eq!(p["own_mount"], true);
    assert_eq!(p["source"], "statfs");
    assert_eq!(p["tmpfs_size_bytes"].as_u64().unwrap(), 16 << 20);
    let (_, used, _) = crate::common::df_bytes(&m.path);
    assert_eq!(p["used_bytes"].as_u64().unwrap(), used);
    let (_, iused) = crate::common::df_inodes(&m.path);
    assert_eq!(p["inodes"].as_u64().unwrap(), iused);
}

// ---------------------------------------------------------------- analyze

/// Ten hosts, figures in KiB: (name, /tmp, RAM, free, swap total, swap free).
/// Buffers and cache are 0, so MemAvailable (estimated) = free.
const KIRKLAND: [(&str, u64, u64, u64, u64, u64); 10] = [
    ("h01", 4, 4_000_000, 1_000_000, 2_000_000, 2_000_000),
    ("h02", 4, 4_000_000, 1_000_000, 2_000_000, 2_000_000),
    ("h03", 4, 4_000_000, 1_000_000, 2_000_000, 2_000_000),
    ("h04", 16, 4_000_000, 1_000_000, 2_000_000, 2_000_000),
    ("h05", 16, 4_000_000, 1_000_000, 2_000_000, 2_000_000),
    ("h06", 1000, 4_000_000, 1_000_000, 2_000_000, 2_000_000),
    ("h07", 50_000, 4_000_000, 1_000_000, 2_000_000, 2_000_000),
    ("h08", 1_500_000, 4_000_000, 1_000_000, 2_000_000, 2_000_000),
    ("h09", 3_000_000, 4_000_000, 1_000_000, 2_000_000, 2_000_000),
    (
        "h10",
        105_906_176,
        8_000_000,
        1_000_000,
        2_000_000,
        2_000_000,
    ),
];

fn kirkland_text() -> String {
    KIRKLAND
        .iter()
        .enumerate()
        .map(|(i, (h, tmp, ram, free, st, sf))| {
            format!(
                "{h}\t{tmp}\t{ram}\t{}\t{free}\t0\t0\t0\t{st}\t{}\t{sf}\t{}\n",
                ram - free,
                st - sf,
                i + 1
            )
        })
        .collect()
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn analyze_kirkland_statistics_fit_and_recommendation_are_exact() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("tmpfs.txt");
    std::fs::write(&f, kirkland_text()).unwrap();
    let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap(), "--json"]);
    // 80 % fit half their RAM: below the default 99 % target -> exit 1.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["schema_version"], 2);
    assert_eq!(j["hosts"], 10);
    let t = &j["tmp_used_bytes"];
    assert_eq!(t["max"], 105_906_176u64 * 1024);
    assert_eq!(t["min"], 4096);
    assert_eq!(t["median"].as_f64(), Some(((16 + 1000) / 2 * 1024) as f64));
    assert_eq!(t["mode"], 4096);
    assert_eq!(t["mode_count"], 3);
    assert_eq!(t["p90"], 3_000_000u64 * 1024);
    assert_eq!(t["p99"], 105_906_176u64 * 1024);
    let mean: u64 = KIRKLAND.iter().map(|h| h.1 * 1024).sum::<u64>() / 10;
    assert!((t["mean"].as_f64().unwrap() - mean as f64).abs() < 1.0);
    for k in [
        "mem_total_bytes",
        "swap_total_bytes",
        "swap_used_bytes",
        "tmp_inodes",
    ] {
        for s in ["max", "min", "mean", "median", "mode", "p90", "p99"] {
            assert!(!j[k][s].is_null(), "{k}.{s} missing");
        }
    }
    assert_eq!(j["mem_total_bytes"]["mode"], 4_000_000u64 * 1024);
    assert_eq!(j["swap_used_bytes"]["max"], 0);
    let shares: Vec<(u64, f64)> = j["tmp_used_buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["count"].as_u64().unwrap(), b["percent"].as_f64().unwrap()))
        .collect();
    assert_eq!(
        shares,
        [(6, 60.0), (6, 60.0), (7, 70.0), (7, 70.0), (9, 90.0)]
    );

    let fit = &j["fit"];
    assert_eq!(fit["half_ram"]["count"], 8);
    assert_eq!(fit["half_ram"]["percent"], 80.0);
    assert_eq!(names(&fit["half_ram"]["misfits"]), ["h10", "h09"]);
    assert_eq!(fit["mem_available"]["count"], 7);
    assert_eq!(
        names(&fit["mem_available"]["misfits"]),
        ["h10", "h09", "h08"]
    );
    assert_eq!(fit["mem_available_plus_swap"]["count"], 9);
    assert_eq!(names(&fit["mem_available_plus_swap"]["misfits"]), ["h10"]);
    assert_eq!(fit["inodes"]["count"], 10);

    let r = &j["recommendation"];
    assert_eq!(r["target_percent"], 99.0);
    // 99 % of 10 hosts is all 10, and h10 needs 1323 % of its RAM: not reachable.
    assert_eq!(r["target_reached"], false);
    assert_eq!(r["size_percent_of_ram"], 50.0);
    assert_eq!(j["outliers"][0]["host"], "h10");

    // 80 % target, no headroom: the 8th smallest need is h08's 37.5 % -> 40 %.
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        f.to_str().unwrap(),
        "--json",
        "--target",
        "80%",
        "--headroom",
        "0",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "80 % fit and 80 % asked: {}",
        stderr(&o)
    );
    let j = json(&o);
    assert_eq!(j["recommendation"]["size_percent_of_ram"], 40.0);
    assert_eq!(j["recommendation"]["fits_percent"], 80.0);
    assert_eq!(j["recommendation"]["target_reached"], true);
    assert_eq!(j["outliers_total"], 2);

    // --size and --nr-inodes change the models.
    let j = json(&tmpfsctl(&[
        "fleet",
        "analyze",
        f.to_str().unwrap(),
        "--json",
        "--size",
        "1G",
        "--nr-inodes",
        "5",
    ]));
    assert_eq!(j["fit"]["half_ram"]["count"], 7);
    assert_eq!(j["fit"]["inodes"]["count"], 5);
    assert_eq!(names(&j["fit"]["inodes"]["misfits"])[0], "h10");
}

#[test]
fn analyze_text_and_markdown_reports() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("tmpfs.txt");
    std::fs::write(&f, kirkland_text()).unwrap();
    let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap(), "--buckets", "2G"]);
    let t = stdout(&o);
    for want in [
        "Statistics",
        "/tmp used",
        "101 GiB",
        "Fit models",
        "80.0%",
        "h10",
        "Recommendation",
        "fstab: tmpfs /tmp tmpfs",
        "one snapshot per host",
        "2.00 GiB",
    ] {
        assert!(t.contains(want), "text lacks {want:?}:\n{t}");
    }
    let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap(), "--markdown"]);
    let m = stdout(&o);
    assert!(m.starts_with("# Would /tmp fit"), "{m}");
    assert!(
        m.contains("| figure | max | min | mean | median | mode | p90 | p99 |"),
        "{m}"
    );
    assert!(m.contains("## Outliers to handle by hand"));
}

#[test]
fn analyze_html_has_three_charts_and_renders_in_chromium() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("tmpfs.txt");
    std::fs::write(&f, kirkland_text()).unwrap();
    let h = d.path().join("report.html");
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        f.to_str().unwrap(),
        "--html",
        h.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let html = std::fs::read_to_string(&h).unwrap();
    assert_eq!(html.matches("<svg").count(), 3);
    assert_eq!(
        html.matches("class=\"bucket\"").count(),
        5,
        "one line per bucket"
    );
    assert!(html.contains("class=\"cdf\""));
    assert!(html.contains("50% of RAM"));
    assert_eq!(html.matches("<circle").count(), 10, "one dot per host");
    assert_eq!(
        html.matches("class=\"bar\"").count(),
        2,
        "4 GiB and 8 GiB bins"
    );
    let Ok(_) = Command::new("chromium").arg("--version").output() else {
        eprintln!("SKIP html rendering: chromium is not installed");
        return;
    };
    let png = d.path().join("r.png");
    let r = Command::new("timeout")
        .args([
            "60",
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1000,2000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            d.path().join("profile").display()
        ))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", h.display()))
        .output()
        .unwrap();
    assert!(r.status.success(), "chromium: {}", stderr(&r));
    assert!(
        std::fs::metadata(&png).unwrap().len() > 20_000,
        "rendered page is suspiciously small"
    );
}

#[test]
fn analyze_mixed_formats_stdin_and_duplicates() {
    let d = tempfile::tempdir().unwrap();
    let k = d.path().join("old.tsv");
    std::fs::write(&k, kirkland_text()).unwrap();
    // h10 again, newer (it has a timestamp), now with a small /tmp.
    let j = d.path().join("new.jsonl");
    std::fs::write(
        &j,
        "{\"host\":\"h10\",\"timestamp_unix_s\":1700000000,\"paths\":[{\"path\":\"/tmp\",\"used_bytes\":8192,\"inodes\":2}],\
         \"mem_total_bytes\":8192000000,\"mem_available_bytes\":4000000000,\"swap_total_bytes\":0,\"swap_free_bytes\":0}\n",
    )
    .unwrap();
    let c = d.path().join("more.csv");
    std::fs::write(&c, "host,tmp_used_bytes,mem_total_bytes,mem_available_bytes\nc1,1048576,2147483648,1073741824\n").unwrap();
    let mut child = bin()
        .args([
            "fleet",
            "analyze",
            k.to_str().unwrap(),
            j.to_str().unwrap(),
            "-",
            c.to_str().unwrap(),
            "--json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut i = child.stdin.take().unwrap();
        i.write_all(b"s1\t4\t1000000\t0\t1000000\t0\t0\t0\t0\t0\t0\t1\n")
            .unwrap();
    }
    let o = child.wait_with_output().unwrap();
    let v = json(&o);
    assert_eq!(v["hosts"], 12, "10 + c1 + s1, h10 once");
    assert_eq!(v["input"]["duplicates_dropped"], 1);
    let formats: Vec<&str> = v["input"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["format"].as_str().unwrap())
        .collect();
    assert_eq!(formats, ["kirkland", "jsonl", "kirkland", "csv"]);
    assert!(
        stderr(&o).contains("duplicate host: h10: kept"),
        "{}",
        stderr(&o)
    );
    assert!(
        !names(&v["fit"]["half_ram"]["misfits"]).contains(&"h10".to_string()),
        "the newer h10 fits"
    );
    assert_eq!(v["tmp_used_bytes"]["max"], 3_000_000u64 * 1024);
}

#[test]
fn analyze_malformed_input_stops_or_is_counted_with_skip_bad() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("bad.tsv");
    let mut t = kirkland_text();
    t.push_str("h11\t12\t4000000\n");
    t.push_str("h12\tx\t4000000\t0\t0\t0\t0\t0\t0\t0\t0\t0\n");
    std::fs::write(&f, &t).unwrap();
    let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "{}:11: wrong column count: 3 columns",
            f.display()
        )),
        "{e}"
    );
    assert!(e.contains("--skip-bad"));
    assert!(o.stdout.is_empty(), "nothing half-written on stdout");
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        f.to_str().unwrap(),
        "--skip-bad",
        "--json",
    ]);
    let v = json(&o);
    assert_eq!(v["hosts"], 10);
    assert_eq!(v["input"]["skipped"], 2);
    let reasons: Vec<&str> = v["input"]["skip_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert!(
        reasons.contains(&"wrong column count") && reasons.contains(&"not a number"),
        "{reasons:?}"
    );
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("2 input lines were skipped"))
    );

    let o = tmpfsctl(&["fleet", "analyze", "/nonexistent/fleet.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/fleet.jsonl"));
    let o = tmpfsctl(&["fleet", "analyze"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nothing to analyze"));
    let o = tmpfsctl(&["fleet", "analyze", "-", "-"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn collect_then_analyze_round_trip() {
    let t = tempfile::tempdir().unwrap();
    make_tree(t.path());
    let p = t.path().to_str().unwrap();
    let mut lines = String::new();
    for h in ["a", "b", "c"] {
        let o = tmpfsctl(&["collect", "--path", p, "--host", h]);
        assert!(o.status.success());
        lines.push_str(&stdout(&o));
    }
    let f = t.path().join("fleet.jsonl");
    std::fs::write(&f, &lines).unwrap();
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        f.to_str().unwrap(),
        "--path",
        p,
        "--json",
    ]);
    let v = json(&o);
    assert_eq!(v["hosts"], 3);
    let used = du(&["-s", "-x", "-B1"], t.path());
    // The tree grew by fleet.jsonl only after the snapshots were taken.
    assert_eq!(
        v["tmp_used_bytes"]["mode"].as_u64().unwrap(),
        used - std::fs::metadata(&f)
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                m.blocks() * 512
            })
            .unwrap()
    );
    // The default --path /tmp is not in these snapshots: a clear error.
    let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no entry for path /tmp"),
        "{}",
        stderr(&o)
    );
}

// ---------------------------------------------------------------- Prometheus

/// A server process killed (and reaped) when the test ends, pass or fail.
struct Server {
    child: std::process::Child,
    name: &'static str,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(name: &'static str, cmd: &mut Command, log: PathBuf) -> Option<Server> {
        let f = std::fs::File::create(&log).unwrap();
        match cmd.stdout(f.try_clone().unwrap()).stderr(f).spawn() {
            Ok(child) => Some(Server { child, name, log }),
            Err(e) => {
                eprintln!(
                    "SKIP: cannot start {name} ({e}); install Debian's prometheus and prometheus-node-exporter"
                );
                None
            }
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn http_get(url: &str) -> Option<String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(5)))
        .build()
        .into();
    agent.get(url).call().ok()?.body_mut().read_to_string().ok()
}

/// Poll until `ok` holds for the body at `url`, up to 60 s.
fn wait_for(srv: &Server, url: &str, ok: impl Fn(&str) -> bool) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(60) {
        if let Some(b) = http_get(url)
            && ok(&b)
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!("{} not ready at {url}; log:\n{}", srv.name, srv.log());
}

fn prometheus(dir: &Path, data: &Path, scrape: Option<u16>) -> Option<(Server, String)> {
    let port = free_port();
    let cfg = dir.join("prometheus.yml");
    let jobs = match scrape {
        Some(p) => format!(
            "scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{p}']\n"
        ),
        None => "scrape_configs: []\n".into(),
    };
    std::fs::write(
        &cfg,
        format!("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n{jobs}"),
    )
    .unwrap();
    let srv = Server::start(
        "prometheus",
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg("--storage.tsdb.retention.time=30d")
            .arg(format!("--web.listen-address=127.0.0.1:{port}")),
        dir.join("prometheus.log"),
    )?;
    let url = format!("http://127.0.0.1:{port}");
    wait_for(&srv, &format!("{url}/-/ready"), |_| true);
    Some((srv, url))
}

fn query_has_result(url: &str, q: &str) -> bool {
    let enc: String = q
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    http_get(&format!("{url}/api/v1/query?query={enc}"))
        .map(|b| b.contains("\"result\":[{"))
        .unwrap_or(false)
}

#[test]
fn prometheus_scrape_of_collect_textfile_matches_the_file_path() {
    let d = tempfile::tempdir().unwrap();
    let tree = d.path().join("tree");
    make_tree(&tree);
    let textdir = d.path().join("textfile");
    std::fs::create_dir(&textdir).unwrap();
    let treep = tree.to_str().unwrap();
    let o = tmpfsctl(&[
        "collect",
        "--format",
        "prom",
        "--path",
        treep,
        "--output",
        textdir.join("tmpfsctl.prom").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let snap = tmpfsctl(&["collect", "--path", treep]);
    let snapfile = d.path().join("snap.jsonl");
    std::fs::write(&snapfile, &snap.stdout).unwrap();

    let ne_port = free_port();
    let Some(ne) = Server::start(
        "node_exporter",
        Command::new("prometheus-node-exporter")
            .arg(format!("--web.listen-address=127.0.0.1:{ne_port}"))
            .arg(format!(
                "--collector.textfile.directory={}",
                textdir.display()
            )),
        d.path().join("ne.log"),
    ) else {
        return;
    };
    wait_for(&ne, &format!("http://127.0.0.1:{ne_port}/metrics"), |b| {
        b.contains("tmpfsctl_path_used_bytes")
    });
    let data = d.path().join("data");
    let Some((srv, url)) = prometheus(d.path(), &data, Some(ne_port)) else {
        return;
    };
    wait_for(
        &srv,
        &format!("{url}/api/v1/query?query=tmpfsctl_path_inodes"),
        |b| b.contains("\"result\":[{"),
    );
    assert!(query_has_result(&url, "node_memory_MemTotal_bytes"));

    let files = json(&tmpfsctl(&[
        "fleet",
        "analyze",
        snapfile.to_str().unwrap(),
        "--path",
        treep,
        "--json",
    ]));
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &url,
        "--path",
        treep,
        "--window",
        "1h",
        "--json",
        "--verbose",
    ]);
    assert!(o.status.code() != Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("PromQL: max_over_time(tmpfsctl_path_used_bytes{path="),
        "{}",
        stderr(&o)
    );
    let p = json(&o);
    assert_eq!(p["source"]["value"], "peak");
    assert_eq!(p["source"]["window_s"], 3600);
    assert_eq!(p["hosts"], 1);
    assert_eq!(p["fit"]["half_ram"]["count"], 1);
    for k in [
        "tmp_used_bytes",
        "tmp_inodes",
        "mem_total_bytes",
        "swap_total_bytes",
    ] {
        assert_eq!(p[k]["max"], files[k]["max"], "{k}: prometheus vs file");
    }
    let (pa, fa) = (
        p["mem_available_bytes"]["max"].as_f64().unwrap(),
        files["mem_available_bytes"]["max"].as_f64().unwrap(),
    );
    assert!((pa - fa).abs() / fa < 0.2, "MemAvailable {pa} vs {fa}");
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &url,
        "--path",
        treep,
        "--instant",
    ]);
    let t = stdout(&o);
    assert!(
        t.contains("latest value (instant query)"),
        "{t}\n{}",
        stderr(&o)
    );

    // Where the path is a mount, node_filesystem_* is used: a real tmpfs.
    if crate::common::is_root() {
        let m = crate::common::TestMount::tmpfs("size=64M");
        std::fs::write(m.path.join("f"), vec![5u8; 3 << 20]).unwrap();
        let mp = m.path.to_str().unwrap();
        let q = format!("node_filesystem_avail_bytes{{mountpoint=\"{mp}\"}}");
        let start = std::time::Instant::now();
        while !query_has_result(&url, &q) {
            assert!(
                start.elapsed().as_secs() < 30,
                "no node_filesystem series for {mp}"
            );
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        let p = json(&tmpfsctl(&[
            "fleet",
            "analyze",
            "--prometheus",
            &url,
            "--path",
            mp,
            "--window",
            "1h",
            "--json",
        ]));
        let (_, used, _) = crate::common::df_bytes(&m.path);
        assert_eq!(p["tmp_used_bytes"]["max"].as_u64().unwrap(), used);
    }
    drop(srv);
    drop(ne);
}

/// OpenMetrics history for `hosts` hosts over 7 days at 1 h steps, ending a
/// minute ago: /tmp at 10 MiB except one spike per host; even hosts spike to
/// 6 GiB (more than half their 8 GiB), odd ones to 1 GiB.
/// MemFree of host `h` in [`history`]: 3 GiB on every fourth host from the
/// second, 512 MiB on the others.
fn history_free(h: usize) -> u64 {
    if h % 4 == 1 { 3 << 30 } else { 512 << 20 }
}

/// The peak /tmp of host `h` in [`history`].
fn history_peak(h: usize) -> u64 {
    if h.is_multiple_of(2) {
        6 << 30
    } else {
        1 << 30
    }
}

fn history(hosts: usize, now: i64) -> String {
    const MIB: u64 = 1 << 20;
    let steps = 7 * 24 - 1;
    let t0 = now - 60 - steps as i64 * 3600;
    let mut o = String::new();
    let fam = |o: &mut String, name: &str, val: &dyn Fn(usize, usize) -> u64, path: bool| {
        o.push_str(&format!("# HELP {name} x\n# TYPE {name} gauge\n"));
        for h in 0..hosts {
            let labels = if path {
                format!("{{instance=\"host-{h:03}\",path=\"/tmp\"}}")
            } else {
                format!("{{instance=\"host-{h:03}\"}}")
            };
            for s in 0..=steps {
                o.push_str(&format!(
                    "{name}{labels} {} {}\n",
                    val(h, s),
                    t0 + s as i64 * 3600
                ));
            }
        }
    };
    let spike_at = |h: usize| 5 + (h * 7) % (steps - 10);
    fam(
        &mut o,
        "tmpfsctl_path_used_bytes",
        &|h, s| {
            if s == spike_at(h) {
                history_peak(h)
            } else {
                10 * MIB
            }
        },
        true,
    );
    fam(&mut o, "tmpfsctl_path_inodes", &|_, _| 100, true);
    fam(&mut o, "node_memory_MemTotal_bytes", &|_, _| 8 << 30, false);
    fam(
        &mut o,
        "node_memory_MemAvailable_bytes",
        &|_, _| 7 << 30,
        false,
    );
    fam(
        &mut o,
        "node_memory_MemFree_bytes",
        &|h, _| history_free(h),
        false,
    );
    fam(&mut o, "node_memory_SwapTotal_bytes", &|_, _| 0, false);
    fam(&mut o, "node_memory_SwapFree_bytes", &|_, _| 0, false);
    o.push_str("# EOF\n");
    o
}

#[test]
fn prometheus_backfilled_history_the_peak_drives_the_fit() {
    if Command::new("promtool").arg("--version").output().is_err() {
        eprintln!("SKIP: promtool not installed (Debian package prometheus)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let om = d.path().join("history.om");
    std::fs::write(&om, history(200, now)).unwrap();
    let data = d.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let o = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics", "--quiet"])
        .arg(&om)
        .arg(&data)
        .output()
        .unwrap();
    assert!(o.status.success(), "promtool: {}", stderr(&o));
    let Some((srv, url)) = prometheus(d.path(), &data, None) else {
        return;
    };
    wait_for(
        &srv,
        &format!("{url}/api/v1/query?query=count(node_memory_MemTotal_bytes)"),
        |b| b.contains("\"200\""),
    );

    let o = tmpfsctl(&["fleet", "analyze", "--prometheus", &url, "--json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "half the hosts' peaks do not fit: {}",
        stderr(&o)
    );
    let p = json(&o);
    assert_eq!(p["hosts"], 200);
    assert_eq!(p["source"]["value"], "peak");
    assert_eq!(p["tmp_used_bytes"]["max"], 6u64 << 30);
    assert_eq!(
        p["tmp_used_bytes"]["min"],
        1u64 << 30,
        "every host's peak, not its last value"
    );
    let fit = &p["fit"]["half_ram"];
    assert_eq!(
        (fit["count"].as_u64(), fit["misfits_total"].as_u64()),
        (Some(100), Some(100))
    );
    let mis = names(&fit["misfits"]);
    assert!(
        mis.iter()
            .all(|h| h[5..].parse::<usize>().unwrap() % 2 == 0),
        "{mis:?}"
    );
    // The study's free-memory model, from node_memory_MemFree_bytes.
    let free_fits = (0..200)
        .filter(|&h| history_peak(h) <= history_free(h))
        .count();
    let m = &p["fit"]["mem_free"];
    assert_eq!(m["count"], free_fits as u64, "{m}");
    assert_eq!(m["evaluated"], 200);
    assert_eq!(p["fit"]["mem_free_plus_swap"]["count"], free_fits as u64);
    assert_eq!(p["recommendation"]["target_reached"], false);
    assert_eq!(
        p["recommendation"]["size_bytes_advisable"], false,
        "8G is all of these hosts' RAM"
    );

    let t = stdout(&tmpfsctl(&["fleet", "analyze", "--prometheus", &url]));
    assert!(t.contains("PEAK over the last 7d"), "{t}");

    // The latest values alone would say everything fits.
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &url,
        "--instant",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let i = json(&o);
    assert_eq!(i["hosts"], 200);
    assert_eq!(i["tmp_used_bytes"]["max"], 10u64 << 20);
    assert_eq!(i["fit"]["half_ram"]["count"], 200);

    // A window that misses every spike.
    let j = json(&tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &url,
        "--window",
        "2m",
        "--json",
    ]));
    assert_eq!(j["tmp_used_bytes"]["max"], 10u64 << 20);

    // Empty result: a path nobody reports.
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &url,
        "--path",
        "/no/such/dir",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("has no peak usage for /no/such/dir") && e.contains("--window"),
        "{e}"
    );
    // Series without the host label cannot be attributed: say which flag fixes it.
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &format!("{url}/"),
        "--host-label",
        "nope",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("lack that label"), "{}", stderr(&o));

    // advise reads the same history: one host's peak, not its last value.
    let a = json(&tmpfsctl(&[
        "advise",
        "--no-bench",
        "--json",
        "--prometheus",
        &url,
        "--host",
        "host-001",
        "/tmp",
    ]));
    assert_eq!(a["usage"]["source"], "prometheus");
    assert_eq!(a["usage"]["peak_bytes"].as_u64(), Some(1 << 30));
    assert_eq!(a["usage"]["window"], "7d");
    let o = tmpfsctl(&[
        "advise",
        "--no-bench",
        "--prometheus",
        &url,
        "--host",
        "nope",
        "/tmp",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--host"), "{}", stderr(&o));
    drop(srv);
}

/// Answer every connection with a fixed HTTP response, until the test ends.
fn fake_http(response: &'static str) -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            use std::io::{Read, Write};
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(response.as_bytes());
        }
    });
    port
}

#[test]
fn prometheus_unreachable_http_errors_and_non_prometheus_exit_2() {
    let closed = free_port();
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &format!("http://127.0.0.1:{closed}"),
        "--timeout",
        "5s",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot reach Prometheus at http://127.0.0.1:"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());

    let p = fake_http(
        "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found",
    );
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &format!("http://127.0.0.1:{p}/prom"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("answered HTTP 404"), "{}", stderr(&o));

    let p = fake_http(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\nConnection: close\r\n\r\n<html></html>",
    );
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &format!("http://127.0.0.1:{p}"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did not answer with Prometheus API JSON"),
        "{}",
        stderr(&o)
    );

    let body = r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#;
    let resp: &'static str = Box::leak(
        format!("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
            .into_boxed_str(),
    );
    let p = fake_http(resp);
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &format!("http://127.0.0.1:{p}"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("rejected the query (HTTP 400, bad_data): parse error"),
        "{}",
        stderr(&o)
    );
}

// ---------------------------------------------------------------- systemd example

#[test]
fn systemd_example_units_verify_and_their_command_runs() {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/systemd");
    let service = std::fs::read_to_string(ex.join("tmpfsctl-collect.service")).unwrap();
    let timer = std::fs::read_to_string(ex.join("tmpfsctl-collect.timer")).unwrap();
    let exec = service
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    let args: Vec<&str> = exec.split_whitespace().collect();
    assert_eq!(args[0], "/usr/local/bin/tmpfsctl");
    // Run the unit's command line with our binary and the output in a temp dir.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("tmpfsctl.prom");
    let mut cmd: Vec<String> = args[1..].iter().map(|s| s.to_string()).collect();
    let i = cmd.iter().position(|a| a == "--output").unwrap();
    assert_eq!(
        cmd[i + 1],
        "/var/lib/prometheus/node-exporter/tmpfsctl.prom"
    );
    cmd[i + 1] = out.to_str().unwrap().to_string();
    let refs: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let o = tmpfsctl(&refs);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("tmpfsctl_path_used_bytes{path=\"/tmp\"}"),
        "{text}"
    );
    assert!(
        text.contains("tmpfsctl_path_used_bytes{path=\"/var/tmp\"}"),
        "{text}"
    );
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIP systemd-analyze verify: systemd-analyze not installed");
        return;
    }
    std::fs::write(
        d.path().join("tmpfsctl-collect.service"),
        service.replace("/usr/local/bin/tmpfsctl", env!("CARGO_BIN_EXE_tmpfsctl")),
    )
    .unwrap();
    std::fs::write(d.path().join("tmpfsctl-collect.timer"), timer).unwrap();
    let v = Command::new("systemd-analyze")
        .arg("verify")
        .arg(d.path().join("tmpfsctl-collect.service"))
        .arg(d.path().join("tmpfsctl-collect.timer"))
        .output()
        .unwrap();
    assert!(
        v.status.success() && v.stderr.is_empty(),
        "systemd-analyze verify: {}",
        stderr(&v)
    );
}

#[test]
fn hostile_host_names_are_escaped_in_text_and_markdown_exact_in_json() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("hosts.jsonl");
    // One host far over half its RAM: it is named as a misfit and an outlier.
    std::fs::write(
        &f,
        "{\"host\":\"evil\\u001b]0;pwned\\u0007<b>&\",\"tmp_used_bytes\":900,\"mem_total_bytes\":1000}\n\
         {\"host\":\"ok\",\"tmp_used_bytes\":1,\"mem_total_bytes\":1000}\n",
    )
    .unwrap();
    let p = f.to_str().unwrap();
    let t = stdout(&tmpfsctl(&["fleet", "analyze", p]));
    assert!(!t.contains('\x1b') && !t.contains('\x07'), "{t:?}");
    assert!(t.contains("evil\\x1b]0;pwned\\x07<b>&"), "{t}");
    let m = stdout(&tmpfsctl(&["fleet", "analyze", p, "--markdown"]));
    assert!(!m.contains('\x1b') && !m.contains("<b>"), "{m:?}");
    assert!(m.contains("evil\\x1b]0;pwned\\x07&lt;b&gt;&amp;"), "{m}");
    let j = json(&tmpfsctl(&["fleet", "analyze", p, "--json"]));
    assert_eq!(j["outliers"][0]["host"], "evil\x1b]0;pwned\x07<b>&");
}

#[test]
fn bad_input_is_quoted_short_and_escaped_in_errors() {
    let d = tempfile::tempdir().unwrap();
    // A CSV header with an escape sequence in a cell.
    let csv = d.path().join("h.csv");
    std::fs::write(&csv, "name\x1b[2J,used\n1,2\n").unwrap();
    // Binary garbage given by mistake (no newline, so all of it is "line 1").
    let bin_file = d.path().join("g.bin");
    let garbage: Vec<u8> = (0..600u32)
        .map(|i| (i * 151 % 256) as u8)
        .map(|b| if b == b'\n' { b'x' } else { b })
        .collect();
    std::fs::write(
        &bin_file,
        [b"host,tmp_used_bytes,".as_slice(), &garbage].concat(),
    )
    .unwrap();
    for f in [&csv, &bin_file] {
        let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2));
        let e = stderr(&o);
        assert!(e.contains("CSV header"), "{e}");
        assert!(!e.trim_end().chars().any(|c| c.is_control()), "{e:?}");
        assert!(e.len() < 400, "{} bytes: {e:?}", e.len());
    }
    assert!(
        stderr(&tmpfsctl(&["fleet", "analyze", csv.to_str().unwrap()])).contains("name\\x1b[2J")
    );
}

#[test]
fn a_survey_tsv_with_a_bad_first_line_reports_line_1() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("survey.tsv");
    let rest = "b\t4\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\n";
    for bad in ["-1", "NaN", "1e400"] {
        std::fs::write(
            &f,
            format!("a\t{bad}\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\n{rest}"),
        )
        .unwrap();
        let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap(), "--json"]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let e = stderr(&o);
        assert!(e.contains("survey.tsv:1: not a number"), "{e}");
    }
}

#[test]
fn a_hostile_server_answer_is_quoted_short_and_escaped() {
    let body = format!("\x1b]0;pwned\x07\x1b[2J{}", "x".repeat(600));
    let resp: &'static str = Box::leak(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_boxed_str(),
    );
    let p = fake_http(resp);
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        "--prometheus",
        &format!("http://127.0.0.1:{p}"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("\\x1b]0;pwned\\x07"), "{e}");
    assert!(!e.trim_end().chars().any(|c| c.is_control()), "{e:?}");
    assert!(e.len() < 500, "{} bytes: {e:?}", e.len());
}

#[test]
fn one_host_is_one_host_not_one_hosts() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("one.tsv");
    // /tmp 3 GiB on 4 GiB of RAM: the single host is also the single outlier.
    std::fs::write(
        &f,
        "web1\t3145728\t4194304\t0\t1048576\t0\t0\t0\t0\t0\t0\t10\n",
    )
    .unwrap();
    let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap()]);
    let out = stdout(&o);
    assert!(out.contains("1 host from files"), "{out}");
    assert!(out.contains("(1 host does not fit"), "{out}");
    assert!(!out.contains("1 hosts"), "{out}");
}
