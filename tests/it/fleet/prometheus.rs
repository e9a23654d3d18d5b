//! `fleet analyze` against a real Prometheus (and impostors): scraped textfiles,
//! backfilled history, unreachable or wrong servers.

use super::*;
use crate::common::{Server, free_port, prometheus, query_has_result, wait_for};

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

/// A Prometheus loaded with `history(200, now)` through promtool's backfill, or
/// None (reason printed) where Prometheus is not installed. The directory holds
/// its data and must outlive the server.
pub(crate) fn backfilled_prometheus() -> Option<(tempfile::TempDir, Server, String)> {
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
    let (srv, url) = prometheus(d.path(), &data, None)?;
    wait_for(
        &srv,
        &format!("{url}/api/v1/query?query=count(node_memory_MemTotal_bytes)"),
        |b| b.contains("\"200\""),
    );
    Some((d, srv, url))
}

#[test]
fn prometheus_backfilled_history_the_peak_drives_the_fit() {
    if Command::new("promtool").arg("--version").output().is_err() {
        crate::skip!("promtool not installed (Debian package prometheus)");
    }
    let Some((_d, srv, url)) = backfilled_prometheus() else {
        return;
    };

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
