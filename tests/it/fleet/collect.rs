//! `collect` against real trees and mounts: du, df and /proc/meminfo agree with it,
//! its survey row and Prometheus textfile are exact.

use super::*;

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

    let unsalted = tmpfsctl(&["collect", "--path", p, "--anonymize"]);
    // Without a salt anyone can hash likely names: said, not silent.
    assert!(
        stderr(&unsalted).contains("warning: --anonymize without a salt")
            && stderr(&unsalted).contains("TMPFSCTL_ANON_SALT"),
        "{}",
        stderr(&unsalted)
    );
    let a = json(&unsalted);
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
    let salted = tmpfsctl(&["collect", "--path", p, "--anonymize", "--salt", "s3cret"]);
    assert!(!stderr(&salted).contains("warning"), "{}", stderr(&salted));
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
    // A copy `nobody` can run: the checkout may sit in a 0700 home.
    let bin_dir = tempfile::tempdir().unwrap();
    let exe = crate::common::nobody_bin(bin_dir.path());
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
