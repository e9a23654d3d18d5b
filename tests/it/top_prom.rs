//! `top --prom FILE`: node_exporter textfile metrics of a real tmpfs, read back
//! line by line, by promtool, and through a real node_exporter into a real
//! Prometheus; the shipped alerting rules checked and unit-tested by promtool.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use crate::common::{
    Server, TestMount, df_bytes, df_inodes, free_port, http_get, prometheus, query_url, s, stderr,
    tmpfsctl, wait_for,
};
use crate::require_root;
use crate::top::hold_open;

/// A mount directory name that needs every escape a label value has
/// (quote, backslash) and a space that mountinfo itself escapes.
const MOUNT_NAME: &str = "prom \"q\\x";

type Labels = Vec<(String, String)>;

/// One parsed sample line: name, labels in order, value.
fn parse_sample(line: &str) -> (String, Labels, f64) {
    let (name, rest) = match line.find('{') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => {
            let (n, v) = line.split_once(' ').unwrap();
            return (n.to_string(), vec![], v.parse().unwrap());
        }
    };
    let mut labels = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        let key: String = chars.by_ref().take_while(|&c| c != '=').collect();
        assert_eq!(chars.next(), Some('"'), "{line}");
        let mut val = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next().unwrap() {
                    'n' => val.push('\n'),
                    e @ ('\\' | '"') => val.push(e),
                    e => panic!("bad escape \\{e} in {line}"),
                },
                '"' => break,
                c => val.push(c),
            }
        }
        labels.push((key, val));
        match chars.next() {
            Some(',') => continue,
            Some('}') => break,
            c => panic!("unexpected {c:?} in {line}"),
        }
    }
    let value: String = chars.collect();
    let value = value.strip_prefix(' ').unwrap();
    (name.to_string(), labels, value.parse().unwrap())
}

/// Every line of a textfile checked for shape: HELP then TYPE gauge before a
/// family's samples, one family per name. Returns the samples.
fn parse_textfile(text: &str) -> Vec<(String, Labels, f64)> {
    assert!(text.ends_with('\n'), "no final newline");
    let mut helped: Vec<String> = Vec::new();
    let mut typed: Option<String> = None;
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("# HELP ") {
            let (name, help) = h.split_once(' ').unwrap();
            assert!(name.starts_with("tmpfsctl_"), "{line}");
            assert!(!help.is_empty(), "{line}");
            assert!(!helped.contains(&name.to_string()), "family twice: {line}");
            helped.push(name.to_string());
            typed = None;
        } else if let Some(t) = line.strip_prefix("# TYPE ") {
            assert_eq!(t, format!("{} gauge", helped.last().unwrap()), "{line}");
            typed = helped.last().cloned();
        } else {
            let smp = parse_sample(line);
            assert_eq!(
                Some(&smp.0),
                typed.as_ref(),
                "sample outside its family: {line}"
            );
            out.push(smp);
        }
    }
    out
}

fn value_for(samples: &[(String, Labels, f64)], name: &str, mountpoint: &str) -> f64 {
    let hits: Vec<f64> = samples
        .iter()
        .filter(|(n, l, _)| {
            n == name && l.iter().any(|(k, v)| k == "mountpoint" && v == mountpoint)
        })
        .map(|(_, _, v)| *v)
        .collect();
    assert_eq!(hits.len(), 1, "{name} for {mountpoint:?}: {hits:?}");
    hits[0]
}

/// `top --prom FILE PATH` into a fresh directory; the file's text.
fn write_prom(mount: &Path, dir: &Path) -> String {
    let file = dir.join("tmpfsctl-top.prom");
    let o = tmpfsctl(&["top", "--prom", s(&file), s(mount)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "--prom FILE prints nothing else");
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["tmpfsctl-top.prom"], "a temp file was left behind");
    std::fs::read_to_string(&file).unwrap()
}

#[test]
fn textfile_of_a_scratch_tmpfs_parses_and_matches_df() {
    require_root!();
    let m = TestMount::new("tmpfs", MOUNT_NAME, "size=16m,nr_inodes=500");
    std::fs::write(m.path.join("known"), vec![7u8; 3 << 20]).unwrap();
    std::fs::write(m.path.join("gone"), vec![8u8; 1 << 20]).unwrap();
    let _held = hold_open(&m.path.join("gone"));
    std::fs::remove_file(m.path.join("gone")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let text = write_prom(&m.path, out.path());
    let samples = parse_textfile(&text);
    let mp = s(&m.path);
    let (size, used, _) = df_bytes(&m.path);
    let (itotal, iused) = df_inodes(&m.path);
    assert_eq!(
        value_for(&samples, "tmpfsctl_mount_used_bytes", mp),
        used as f64
    );
    assert!(
        used >= 4 << 20,
        "df says {used}: the 3 MiB file and the deleted 1 MiB"
    );
    assert_eq!(
        value_for(&samples, "tmpfsctl_mount_size_bytes", mp),
        size as f64
    );
    assert_eq!(size, 16 << 20);
    assert_eq!(
        value_for(&samples, "tmpfsctl_mount_inodes_used", mp),
        iused as f64
    );
    assert_eq!(
        value_for(&samples, "tmpfsctl_mount_inodes_limit", mp),
        itotal as f64
    );
    assert_eq!(
        value_for(&samples, "tmpfsctl_mount_deleted_open_bytes", mp),
        f64::from(1u32 << 20)
    );
    assert_eq!(
        value_for(&samples, "tmpfsctl_mount_deleted_open_known", mp),
        1.0
    );
    // The mount label carries the name as written, every escape undone.
    let root_owned = samples.iter().find(|(n, l, _)| {
        n == "tmpfsctl_owner_bytes"
            && l.contains(&("mountpoint".into(), mp.into()))
            && l.contains(&("uid".into(), "0".into()))
            && l.contains(&("user".into(), "root".into()))
    });
    assert_eq!(
        root_owned.map(|x| x.2),
        Some(f64::from(3u32 << 20)),
        "{text}"
    );
    // One snapshot of the machine as a whole, with a figure growth cannot fake.
    let one = |n: &str| samples.iter().filter(|x| x.0 == n).count();
    for n in [
        "tmpfsctl_shmem_bytes",
        "tmpfsctl_shmem_accounted_bytes",
        "tmpfsctl_shmem_unattributed_bytes",
        "tmpfsctl_top_timestamp_seconds",
    ] {
        assert_eq!(one(n), 1, "{n}");
    }
    assert_eq!(one("tmpfsctl_mount_growth_bytes_per_second"), 0);
    // `-` is stdout, the same families.
    let o = tmpfsctl(&["top", "--prom", "-", mp]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let piped = parse_textfile(&String::from_utf8(o.stdout).unwrap());
    assert_eq!(
        value_for(&piped, "tmpfsctl_mount_size_bytes", mp),
        size as f64
    );
}

#[test]
fn bad_prom_destinations_exit_2_and_write_nothing() {
    let d = tempfile::tempdir().unwrap();
    for (dest, says) in [
        (d.path().join("missing/top.prom"), "does not exist"),
        (d.path().to_path_buf(), "is a directory"),
    ] {
        let o = tmpfsctl(&["top", "--prom", s(&dest)]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("--prom") && stderr(&o).contains(says),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    let o = tmpfsctl(&["top", "--prom", "-", "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// promtool from Debian's prometheus package, or None with the reason printed.
fn promtool() -> Option<&'static str> {
    if Command::new("promtool").arg("--version").output().is_err() {
        crate::skip_part!("promtool not installed (Debian package prometheus ships it)");
        return None;
    }
    Some("promtool")
}

#[test]
fn promtool_accepts_the_textfile_and_the_alerting_rules_fire_on_recorded_series() {
    let Some(pt) = promtool() else { return };
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/prometheus");
    let run = |args: &[&str]| {
        let o = Command::new(pt)
            .args(args)
            .current_dir(&ex)
            .output()
            .unwrap();
        let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert!(o.status.success(), "promtool {args:?}:\n{all}");
        all
    };
    assert!(run(&["check", "rules", "tmpfsctl-alerts.yml"]).contains("SUCCESS: 6 rules found"));
    assert!(run(&["test", "rules", "tmpfsctl-alerts.test.yml"]).contains("SUCCESS"));
    // Every alert is proven to fire by the test file, and one case fires none.
    let rules = std::fs::read_to_string(ex.join("tmpfsctl-alerts.yml")).unwrap();
    let tests = std::fs::read_to_string(ex.join("tmpfsctl-alerts.test.yml")).unwrap();
    for alert in rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
    {
        assert!(
            tests.contains(&format!(
                "alertname: {alert}\n        exp_alerts:\n          - exp_labels"
            )),
            "{alert} is never shown firing"
        );
        assert!(
            tests.contains(&format!("alertname: {alert}, exp_alerts: []")),
            "{alert} is never shown silent"
        );
    }
    // The metrics the rules read are the ones top writes, lint-clean.
    let o = tmpfsctl(&["top", "--prom", "-"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut c = Command::new(pt)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut c.stdin.take().unwrap(), &o.stdout).unwrap();
    let r = c.wait_with_output().unwrap();
    assert!(r.status.success(), "promtool check metrics: {}", stderr(&r));
    let text = String::from_utf8(o.stdout).unwrap();
    for name in [
        "tmpfsctl_mount_used_bytes",
        "tmpfsctl_mount_size_bytes",
        "tmpfsctl_mount_inodes_used",
        "tmpfsctl_mount_inodes_limit",
        "tmpfsctl_mount_deleted_open_bytes",
        "tmpfsctl_top_timestamp_seconds",
    ] {
        assert!(rules.contains(name), "the rules do not use {name}");
        assert!(
            text.contains(&format!("# TYPE {name} gauge")),
            "top does not write {name}"
        );
    }
}

/// Instant query; (labels, value) per series.
fn query(url: &str, q: &str) -> Vec<(HashMap<String, String>, f64)> {
    let Some(body) = http_get(&query_url(url, q)) else {
        return vec![];
    };
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                serde_json::from_value(r["metric"].clone()).unwrap(),
                r["value"][1].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn node_exporter_serves_the_textfile_and_prometheus_stores_the_mount() {
    require_root!();
    let m = TestMount::new("tmpfs", MOUNT_NAME, "size=8m");
    std::fs::write(m.path.join("known"), vec![5u8; 2 << 20]).unwrap();
    let d = tempfile::tempdir().unwrap();
    let textdir = d.path().join("textfile");
    std::fs::create_dir(&textdir).unwrap();
    write_prom(&m.path, &textdir);
    let (_, used, _) = df_bytes(&m.path);

    let ne_port = free_port();
    let Some(ne) = Server::start(
        "node_exporter",
        Command::new("prometheus-node-exporter")
            .arg(format!("--web.listen-address=127.0.0.1:{ne_port}"))
            .arg("--collector.disable-defaults")
            .arg("--collector.textfile")
            .arg(format!(
                "--collector.textfile.directory={}",
                textdir.display()
            )),
        d.path().join("ne.log"),
    ) else {
        return;
    };
    wait_for(&ne, &format!("http://127.0.0.1:{ne_port}/metrics"), |b| {
        b.contains("tmpfsctl_mount_used_bytes")
    });
    let data = d.path().join("data");
    let Some((srv, url)) = prometheus(d.path(), &data, Some(ne_port)) else {
        return;
    };
    let mp = s(&m.path).to_string();
    let ours = |q: &str| {
        query(&url, q)
            .into_iter()
            .find(|(l, _)| l.get("mountpoint") == Some(&mp))
    };
    wait_for(&srv, &format!("{url}/-/ready"), |_| {
        ours("tmpfsctl_mount_used_bytes").is_some()
    });
    let (labels, v) = ours("tmpfsctl_mount_used_bytes").unwrap();
    assert_eq!(v, used as f64, "{labels:?}");
    assert!(used >= 2 << 20);
    assert_eq!(labels.get("fstype").map(String::as_str), Some("tmpfs"));
    assert_eq!(labels.get("job").map(String::as_str), Some("node"));
    assert_eq!(
        ours("tmpfsctl_mount_size_bytes").unwrap().1,
        f64::from(8u32 << 20)
    );
    // The share a "nearly full" rule would compute, through PromQL.
    let share = ours("tmpfsctl_mount_used_bytes / tmpfsctl_mount_size_bytes")
        .unwrap()
        .1;
    assert!(
        (share - used as f64 / f64::from(8u32 << 20)).abs() < 1e-9,
        "{share}"
    );
    // node_exporter read the file without complaint.
    let err = query(&url, "node_textfile_scrape_error");
    assert_eq!(err.len(), 1, "{err:?}");
    assert_eq!(err[0].1, 0.0, "node_exporter log:\n{}", ne.log());
}
