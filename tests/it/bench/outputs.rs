//! What bench writes: CSV, Markdown, the table, saved JSON and --compare.

use crate::common::{TestMount, tmpfsctl};
use crate::require_root;

use super::{entries, stderr};

#[test]
fn csv_markdown_table_and_compare() {
    require_root!();
    let m = TestMount::tmpfs("size=64M");
    let mp = m.path.to_str().unwrap();
    let work = tempfile::tempdir().unwrap();
    let a = work.path().join("a.json");
    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--preset",
        "temp-file",
        "--no-latency",
        "--export-json",
        a.to_str().unwrap(),
        "--export-csv",
        "-",
        mp,
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let csv = String::from_utf8_lossy(&out.stdout).to_string();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("workload,label,target,"), "{csv}");
    assert_eq!(lines.len(), 1 + 4, "header + 4 temp-file workloads: {csv}");
    assert!(lines[1].starts_with("seq-write-1m-fsync,"));
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&a).unwrap()).unwrap();
    assert_eq!(saved["results"].as_array().unwrap().len(), 4);
    assert!(saved["results"][0]["latency_ns"].is_null(), "--no-latency");

    let out = tmpfsctl(&[
        "bench",
        "--quick",
        "--preset",
        "temp-file",
        "--export-markdown",
        "-",
        mp,
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.starts_with("**quick run: figures not meaningful"),
        "{md}"
    );
    assert!(md.contains("\n| workload |"), "{md}");
    assert!(md.contains("memory ceiling"), "{md}");

    let out = tmpfsctl(&["bench", "--quick", "--preset", "temp-file", mp]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("seq write 1 MiB, fsync at end"), "{table}");
    assert!(table.contains("memory ceiling"), "{table}");

    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "reports are readable by others");

    let page = work.path().join("cmp.html");
    let out = tmpfsctl(&[
        "bench",
        "--compare",
        a.to_str().unwrap(),
        a.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let cmp = String::from_utf8_lossy(&out.stdout);
    assert!(cmp.contains("same") && !cmp.contains('×'), "{cmp}");
    assert!(cmp.contains(&format!("{mp} on tmpfs")), "{cmp}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<table class=\"compare\">") && html.contains("same"));

    let bad = work.path().join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    let out = tmpfsctl(&[
        "bench",
        "--compare",
        a.to_str().unwrap(),
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad.json"), "{}", stderr(&out));
    assert_eq!(entries(&m.path), Vec::<String>::new());
}
