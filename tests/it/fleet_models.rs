//! `fleet analyze`: the Kirkland study's fit models, the recommendation's
//! headroom, the median, and the files it writes, each checked against a
//! computation made here from the input, not against the tool's own numbers.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{bin, json, tmpfsctl};

/// One survey TSV row, in bytes (the file is in KiB).
struct Host {
    tmp: u64,
    total: u64,
    free: u64,
    avail: u64,
    swap_free: u64,
}

/// The generated 502-host survey fleet (seed 7), written to `dir`.
fn fleet_502(dir: &Path) -> (PathBuf, Vec<Host>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/fleet-gen.py");
    let o = Command::new("python3")
        .arg(script)
        .args(["502", "--format", "kirkland", "--seed", "7"])
        .output()
        .expect("python3 runs bench/fleet-gen.py");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = dir.join("fleet-502.tsv");
    std::fs::write(&f, &o.stdout).unwrap();
    let hosts = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let c: Vec<u64> = l
                .split('\t')
                .skip(1)
                .map(|x| x.parse::<u64>().unwrap() * 1024)
                .collect();
            // du, total, used, free, shared, buffers, cached, swap total, used, free, inodes
            Host {
                tmp: c[0],
                total: c[1],
                free: c[3],
                avail: c[3] + c[5] + c[6],
                swap_free: c[9],
            }
        })
        .collect::<Vec<_>>();
    assert_eq!(hosts.len(), 502);
    (f, hosts)
}

fn count(hosts: &[Host], fits: impl Fn(&Host) -> bool) -> u64 {
    hosts.iter().filter(|h| fits(h)).count() as u64
}

fn pct(part: u64, whole: u64) -> f64 {
    (part as f64 * 1000.0 / whole as f64).round() / 10.0
}

#[test]
fn the_studys_free_memory_models_match_an_independent_count() {
    let d = tempfile::tempdir().unwrap();
    let (f, hs) = fleet_502(d.path());
    let want = [
        ("mem_free", count(&hs, |h| h.tmp <= h.free)),
        (
            "mem_free_plus_swap",
            count(&hs, |h| h.tmp <= h.free + h.swap_free),
        ),
        ("mem_available", count(&hs, |h| h.tmp <= h.avail)),
        (
            "mem_available_plus_swap",
            count(&hs, |h| h.tmp <= h.avail + h.swap_free),
        ),
        ("half_ram", count(&hs, |h| h.tmp <= h.total / 2)),
    ];
    // The free-memory model is the stricter one: it must differ from
    // MemAvailable here, or this fleet could not tell the two apart.
    assert!(want[0].1 < want[2].1, "{:?}", want.map(|w| w.1));
    let j = json(&tmpfsctl(&[
        "fleet",
        "analyze",
        f.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(j["schema_version"], 2);
    for (model, n) in want {
        let m = &j["fit"][model];
        assert_eq!(m["count"], n, "{model}: {m}");
        assert_eq!(m["evaluated"], 502, "{model}");
        assert_eq!(m["percent"].as_f64(), Some(pct(n, 502)), "{model}");
        assert_eq!(m["misfits_total"], 502 - n, "{model}");
        assert_eq!(m["misfits"].as_array().unwrap().len() as u64, 502 - n);
    }
    let label = j["fit"]["mem_available"]["model"].as_str().unwrap();
    assert!(label.contains("may evict cache"), "{label}");
    let label = j["fit"]["mem_free"]["model"].as_str().unwrap();
    assert!(label.contains("MemFree"), "{label}");

    // Every human output carries both study models with the same counts.
    let (free, free_swap) = (want[0].1, want[1].1);
    let text =
        String::from_utf8(tmpfsctl(&["fleet", "analyze", f.to_str().unwrap()]).stdout).unwrap();
    let md = String::from_utf8(
        tmpfsctl(&["fleet", "analyze", f.to_str().unwrap(), "--markdown"]).stdout,
    )
    .unwrap();
    let html = d.path().join("r.html");
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        f.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.code() != Some(2), "{o:?}");
    let html = std::fs::read_to_string(&html).unwrap();
    for (out, cell) in [
        (&md, format!("| {free} | 502 | {:.1}% |", pct(free, 502))),
        (
            &md,
            format!("| {free_swap} | 502 | {:.1}% |", pct(free_swap, 502)),
        ),
        (
            &html,
            format!("<td>{free}</td><td>502</td><td>{:.1}%</td>", pct(free, 502)),
        ),
    ] {
        assert!(out.contains(&cell), "no {cell:?} in\n{out}");
    }
    assert!(md.contains("| /tmp &lt;= MemFree + SwapFree |"), "{md}");
    assert!(
        html.contains("<td>/tmp &lt;= MemFree (evicts no cache)</td>"),
        "{html}"
    );
    let row = text
        .lines()
        .find(|l| l.contains("<= MemFree (evicts no cache)"))
        .unwrap_or_else(|| panic!("no MemFree model in\n{text}"));
    assert!(row.contains(&format!(" {free} ")), "{row}");
}

#[test]
fn hosts_without_memfree_are_counted_as_not_evaluated() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f.csv");
    // Three hosts; only two say how much memory is free.
    std::fs::write(
        &f,
        "host,tmp_used_bytes,mem_total_bytes,mem_free_bytes,mem_available_bytes\n\
         a,100,1000,50,500\nb,100,1000,200,500\nc,100,1000,,500\n",
    )
    .unwrap();
    let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap(), "--json"]);
    let j = json(&o);
    let m = &j["fit"]["mem_free"];
    assert_eq!(
        (m["count"].as_u64(), m["evaluated"].as_u64()),
        (Some(1), Some(2)),
        "{m}"
    );
    assert_eq!(m["misfits"][0], "a");
    assert_eq!(j["fit"]["mem_available"]["evaluated"], 3);
    let warned = j["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .unwrap()
            .starts_with("1 host has no MemFree figure")
    });
    assert!(warned, "{}", j["warnings"]);
}

#[test]
fn the_recommended_share_counts_the_headroom_it_claims() {
    let d = tempfile::tempdir().unwrap();
    let (f, hs) = fleet_502(d.path());
    let mut compared_to_bare = false;
    for (target, headroom) in [("97%", 25.0), ("98%", 25.0), ("90%", 100.0), ("95%", 0.0)] {
        let h = format!("{headroom}%");
        let o = tmpfsctl(&[
            "fleet",
            "analyze",
            f.to_str().unwrap(),
            "--json",
            "--target",
            target,
            "--headroom",
            &h,
        ]);
        let r = json(&o)["recommendation"].clone();
        let size = r["size_percent_of_ram"].as_f64().unwrap();
        let grow = 1.0 + headroom / 100.0;
        let with = count(&hs, |x| {
            x.tmp as f64 * grow <= x.total as f64 * size / 100.0
        });
        let bare = count(&hs, |x| x.tmp as f64 <= x.total as f64 * size / 100.0);
        assert_eq!(
            r["fits_percent"].as_f64(),
            Some(pct(with, 502)),
            "{target} {r}"
        );
        assert_eq!(
            r["fits_without_headroom_percent"].as_f64(),
            Some(pct(bare, 502))
        );
        let b = r["size_bytes"].as_u64().unwrap();
        let with_b = count(&hs, |x| (x.tmp as f64 * grow).ceil() as u64 <= b);
        assert_eq!(
            r["size_bytes_fits_percent"].as_f64(),
            Some(pct(with_b, 502))
        );
        if r["target_reached"] == true {
            let t: f64 = target.trim_end_matches('%').parse().unwrap();
            assert!(
                pct(with, 502) >= t,
                "reached {target} with only {with} hosts: {r}"
            );
        }
        compared_to_bare |= with != bare;
    }
    assert!(
        compared_to_bare,
        "no case where the headroom changes the share"
    );
    // The text states the share with the headroom.
    let o = tmpfsctl(&["fleet", "analyze", f.to_str().unwrap(), "--target", "97%"]);
    let j = json(&tmpfsctl(&[
        "fleet",
        "analyze",
        f.to_str().unwrap(),
        "--target",
        "97%",
        "--json",
    ]));
    let want = format!(
        "fits {:.1}% of hosts with 25% headroom",
        j["recommendation"]["fits_percent"].as_f64().unwrap()
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains(&want), "no {want:?} in\n{text}");
}

#[test]
fn the_median_is_interpolated_for_bytes_and_inodes_alike() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f.csv");
    // Even counts: the median lies half-way between the middle two.
    std::fs::write(
        &f,
        "host,tmp_used_bytes,mem_total_bytes,tmp_inodes\n\
         a,1000,1000000,100\nb,3001,1000000,64\nc,2000,1000000,65\nd,9000,1000000,3\n",
    )
    .unwrap();
    let j = json(&tmpfsctl(&[
        "fleet",
        "analyze",
        f.to_str().unwrap(),
        "--json",
    ]));
    // Sorted: 1000 2000 3001 9000 and 3 64 65 100.
    assert_eq!(j["tmp_used_bytes"]["median"].as_f64(), Some(2500.5));
    assert_eq!(j["tmp_inodes"]["median"].as_f64(), Some(64.5));
    // p90 is nearest rank: one host's figure, never between two.
    assert_eq!(j["tmp_inodes"]["p90"], 100);
    let text =
        String::from_utf8(tmpfsctl(&["fleet", "analyze", f.to_str().unwrap()]).stdout).unwrap();
    let row = text.lines().find(|l| l.contains("/tmp inodes")).unwrap();
    assert!(row.contains(" 64.5 "), "{row}");
    assert!(text.contains("median: the middle value"), "{text}");
}

/// A source that never ends: what was not read cannot be what failed.
#[test]
fn bad_output_paths_fail_before_any_input_is_read() {
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("missing-dir/out");
    let bad = bad.to_str().unwrap();
    let fifo = d.path().join("never-written");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    for flag in [
        "--html",
        "--export-json",
        "--export-csv",
        "--export-markdown",
    ] {
        // Reading the FIFO would block forever: only a check made before
        // reading lets the command return at all.
        let mut c = bin()
            .args(["fleet", "analyze", fifo.to_str().unwrap(), flag, bad])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(s) = c.try_wait().unwrap() {
                break Some(s);
            }
            if std::time::Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let out = c.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(2),
            "{flag}: did not fail before reading: {err}"
        );
        assert!(
            err.contains("tmpfsctl: error:") && err.contains(flag),
            "{flag}: {err}"
        );
        assert!(err.contains("does not exist"), "{flag}: {err}");
    }
    let out = tmpfsctl(&["collect", "--path", "/tmp", "--output", bad]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn exports_are_world_readable_and_the_csv_reads_back_to_the_same_fits() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let (f, hs) = fleet_502(d.path());
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    let o = tmpfsctl(&[
        "fleet",
        "analyze",
        f.to_str().unwrap(),
        "--export-json",
        &p("r.json"),
        "--export-csv",
        &p("hosts.csv"),
        "--export-markdown",
        &p("r.md"),
        "--html",
        &p("r.html"),
    ]);
    assert_ne!(o.status.code(), Some(2), "{o:?}");
    // The text report still goes to stdout; the files are extra.
    assert!(String::from_utf8_lossy(&o.stdout).contains("Fit models"));
    for n in ["r.json", "hosts.csv", "r.md", "r.html"] {
        let mode = std::fs::metadata(p(n)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "{n}");
    }
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("r.json")).unwrap()).unwrap();
    let stdout = json(&tmpfsctl(&[
        "fleet",
        "analyze",
        f.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(exported, stdout, "--export-json is the --json document");
    let md = std::fs::read_to_string(p("r.md")).unwrap();
    assert!(md.starts_with("# Would /tmp fit"), "{md}");

    let csv = std::fs::read_to_string(p("hosts.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 502);
    let fits_free = rows
        .iter()
        .filter(|r| r[col("fits_mem_free")] == "true")
        .count() as u64;
    assert_eq!(fits_free, count(&hs, |h| h.tmp <= h.free));
    // Read back, the per-host file gives the same fleet and the same answers.
    let back = json(&tmpfsctl(&["fleet", "analyze", &p("hosts.csv"), "--json"]));
    for m in [
        "half_ram",
        "mem_free",
        "mem_free_plus_swap",
        "mem_available",
        "inodes",
    ] {
        assert_eq!(back["fit"][m]["count"], stdout["fit"][m]["count"], "{m}");
    }
    assert_eq!(back["recommendation"], stdout["recommendation"]);
    assert_eq!(back["tmp_used_bytes"], stdout["tmp_used_bytes"]);
}

#[test]
fn list_sets_how_many_misfits_the_fit_model_table_names() {
    let d = tempfile::tempdir().unwrap();
    let (f, hs) = fleet_502(d.path());
    let misfits = 502 - count(&hs, |h| h.tmp <= h.free) as usize;
    assert!(
        misfits > 5,
        "the fleet needs more misfits than the lists shown"
    );
    for list in [1usize, 5, 50] {
        let o = tmpfsctl(&[
            "fleet",
            "analyze",
            f.to_str().unwrap(),
            "--markdown",
            "--list",
            &list.to_string(),
        ]);
        let md = String::from_utf8(o.stdout).unwrap();
        let row = md
            .lines()
            .find(|l| l.starts_with("| /tmp &lt;= MemFree (evicts no cache) |"))
            .unwrap_or_else(|| panic!("{md}"));
        let shown = row.matches(".example.net").count();
        assert_eq!(shown, list.min(misfits), "--list {list}: {row}");
        let more = format!("(+{} more)", misfits - list.min(misfits));
        assert_eq!(row.contains(&more), list < misfits, "--list {list}: {row}");
    }
}

#[test]
fn collect_draws_no_progress_when_stderr_is_not_a_terminal() {
    let d = tempfile::tempdir().unwrap();
    for i in 0..2000 {
        std::fs::write(d.path().join(format!("f{i}")), b"x").unwrap();
    }
    let o = tmpfsctl(&["collect", "--path", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    // A script reading stderr must not get spinner frames or escape codes.
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        line["paths"][0]["inodes"].as_u64().unwrap() >= 2001,
        "{line}"
    );
}
