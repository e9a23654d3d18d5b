//! One way out for every command's report: `-` is stdout for any file
//! option, one file named twice or two claims on stdout are refused before
//! any work, and JSON carries `schema_version`.

use std::path::Path;

use crate::common::{bin, s, scratch, stderr, stdout};

fn in_dir(dir: &Path, args: &[&str]) -> std::process::Output {
    bin().current_dir(dir).args(args).output().unwrap()
}

fn no_file_named_dash(dir: &Path) {
    assert!(
        !dir.join("-").exists(),
        "`-` means stdout, not a file named -"
    );
}

#[test]
fn a_dash_sends_collects_and_analyzes_files_to_stdout() {
    let d = scratch("outputs");
    let data = d.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("f"), vec![7u8; 10_000]).unwrap();
    let o = in_dir(
        d.path(),
        &[
            "collect",
            "--path",
            s(&data),
            "--host",
            "h1",
            "--output",
            "-",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    no_file_named_dash(d.path());
    let line: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(line["host"], "h1");

    let snap = d.path().join("snap.jsonl");
    std::fs::write(&snap, &o.stdout).unwrap();
    let path = data.to_str().unwrap();
    let md = in_dir(
        d.path(),
        &["fleet", "analyze", s(&snap), "--path", path, "--markdown"],
    );
    assert!(md.status.code().is_some_and(|c| c < 2), "{}", stderr(&md));
    let dash = in_dir(
        d.path(),
        &[
            "fleet",
            "analyze",
            s(&snap),
            "--path",
            path,
            "--export-markdown",
            "-",
        ],
    );
    assert_eq!(dash.status.code(), md.status.code(), "{}", stderr(&dash));
    no_file_named_dash(d.path());
    assert!(!md.stdout.is_empty());
    assert_eq!(
        stdout(&dash),
        stdout(&md),
        "--export-markdown - is the Markdown report on stdout, instead of the text"
    );
}

#[test]
fn one_file_named_by_two_options_is_refused_before_measuring() {
    let d = scratch("outputs");
    let f = d.path().join("report.out");
    let o = bin()
        .args([
            "bench",
            "--quick",
            "--preset",
            "temp-file",
            "--no-latency",
            "--export-json",
            s(&f),
            "--export-csv",
            s(&f),
            s(d.path()),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--export-json and --export-csv both name") && e.contains("report.out"),
        "{e}"
    );
    assert!(!f.exists(), "nothing written");
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing measured: {left:?}");
}

#[test]
fn two_claims_on_stdout_are_refused_for_any_command() {
    let d = scratch("outputs");
    let reg = d.path().join("registry.json");
    let o = in_dir(
        d.path(),
        &[
            "persist",
            "status",
            "--registry",
            s(&reg),
            "--json",
            "--prom",
            "-",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("--json and --prom all write to stdout"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());
    no_file_named_dash(d.path());
}

#[test]
fn persist_status_prom_dash_prints_the_metrics_instead_of_the_table() {
    let d = scratch("outputs");
    let reg = d.path().join("registry.json");
    let o = in_dir(
        d.path(),
        &["persist", "status", "--registry", s(&reg), "--prom", "-"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    no_file_named_dash(d.path());
    let out = stdout(&o);
    assert!(!out.contains("no persisted directories"), "{out}");
    assert!(out.contains("# TYPE tmpfsctl_persist_"), "{out}");
}
