//! `fleet analyze` on a known survey: statistics, fit and recommendation are exact,
//! and every output format and input mix says the same.

use super::*;

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

/// `--target 0.99` would read as 0.99 % (and every fleet "fits"): a bare
/// number up to 1 is refused with the spelling to use; so is `--headroom 0.25`.
#[test]
fn a_fraction_for_a_percentage_is_refused_not_read_as_a_tiny_share() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("tmpfs.txt");
    std::fs::write(&f, kirkland_text()).unwrap();
    let f = f.to_str().unwrap();
    for (opt, v, hint) in [("--target", "0.99", "99%"), ("--headroom", "0.25", "25%")] {
        let o = tmpfsctl(&["fleet", "analyze", f, opt, v]);
        assert_eq!(o.status.code(), Some(2), "{opt} {v}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(opt) && e.contains(hint), "{opt} {v}: {e}");
        assert!(stdout(&o).is_empty());
    }
    // Written with %, the same figure is taken as meant.
    let o = tmpfsctl(&["fleet", "analyze", f, "--json", "--target", "0.99%"]);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(json(&o)["recommendation"]["target_percent"], 0.99);
    let o = tmpfsctl(&["fleet", "analyze", f, "--json", "--target", "99.5"]);
    assert_eq!(json(&o)["recommendation"]["target_percent"], 99.5);
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
        crate::skip!("html rendering: chromium is not installed");
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
