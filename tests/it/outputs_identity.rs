//! One file named by two options is refused however it is spelled: `./r.out`
//! and `r.out`, an absolute and a relative path, a path through a symlinked
//! directory. Refused with exit 2 before anything is measured or written,
//! since the second write would replace the first.

use std::path::PathBuf;

use crate::common::{bin, s, scratch, stderr, stdout};

/// A scratch tree: `work/` (the command's current directory, where the
/// reports would go), `via` -> `work`, and an empty `target/` to measure.
struct Tree {
    d: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let d = scratch("outputs-identity");
        std::fs::create_dir(d.path().join("work")).unwrap();
        std::fs::create_dir(d.path().join("target")).unwrap();
        std::os::unix::fs::symlink(d.path().join("work"), d.path().join("via")).unwrap();
        Tree { d }
    }

    fn work(&self) -> PathBuf {
        self.d.path().join("work")
    }

    /// Other spellings of `r.out` as seen from `work/`, each with a name.
    fn spellings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("dot-slash", "./r.out".to_string()),
            ("absolute", s(&self.work().join("r.out")).to_string()),
            (
                "symlinked dir",
                s(&self.d.path().join("via/r.out")).to_string(),
            ),
        ]
    }

    fn assert_nothing_written(&self, case: &str) {
        let left: Vec<_> = std::fs::read_dir(self.work()).unwrap().collect();
        assert!(left.is_empty(), "{case}: nothing written: {left:?}");
        let measured: Vec<_> = std::fs::read_dir(self.d.path().join("target"))
            .unwrap()
            .collect();
        assert!(
            measured.is_empty(),
            "{case}: nothing measured: {measured:?}"
        );
    }
}

fn assert_refused(o: &std::process::Output, first: &str, second: &str, case: &str) {
    assert_eq!(o.status.code(), Some(2), "{case}: {}", stdout(o));
    let e = stderr(o);
    assert!(
        e.contains(&format!("{first} and {second} both name")) && e.contains("r.out"),
        "{case}: {e}"
    );
}

#[test]
fn bench_refuses_one_file_spelled_two_ways_before_measuring() {
    let t = Tree::new();
    for (case, other) in t.spellings() {
        let o = bin()
            .current_dir(t.work())
            .args([
                "bench",
                "--quick",
                "--preset",
                "temp-file",
                "--no-latency",
                "--export-json",
                &other,
                "--export-csv",
                "r.out",
            ])
            .arg(t.d.path().join("target"))
            .output()
            .unwrap();
        assert_refused(&o, "--export-json", "--export-csv", case);
        t.assert_nothing_written(case);
    }
}

/// A fleet snapshot with one host, made by `collect`, and the path it saw.
fn snapshot(t: &Tree) -> (PathBuf, PathBuf) {
    let data = t.d.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("f"), vec![7u8; 10_000]).unwrap();
    let snap = t.d.path().join("snap.jsonl");
    let o = bin()
        .args(["collect", "--path", s(&data), "--host", "h1", "--output"])
        .arg(&snap)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (snap, data)
}

#[test]
fn fleet_analyze_refuses_one_file_spelled_two_ways_before_writing() {
    let t = Tree::new();
    let (snap, data) = snapshot(&t);
    let analyze = |first: &str, second: &str| {
        bin()
            .current_dir(t.work())
            .args(["fleet", "analyze", s(&snap), "--path", s(&data)])
            .args(["--export-markdown", first, "--html", second])
            .output()
            .unwrap()
    };
    for (case, other) in t.spellings() {
        let o = analyze("r.out", &other);
        assert_refused(&o, "--export-markdown", "--html", case);
        assert!(
            stderr(&o).contains(&format!("(the second as {other})")),
            "{case}: the error shows both spellings: {}",
            stderr(&o)
        );
        t.assert_nothing_written(case);
    }
    // Two different files in the same directory are still fine.
    let o = analyze("r.md", s(&t.d.path().join("via/r.html")));
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
    for f in ["r.md", "r.html"] {
        assert!(t.work().join(f).is_file(), "{f} written");
    }
}
