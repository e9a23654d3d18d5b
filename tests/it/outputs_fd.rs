//! `fd:N` in every file option: a descriptor the caller opened gets the same
//! report a FILE would, checked open for writing before any work, and takes
//! part in the one-file-twice and two-claims-on-stdout refusals; `run --json`
//! follows the same rules.

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{bin, s, scratch, stderr, stdout};

/// tmpfsctl in `dir` with `file` open as descriptor `n` (as `n>file`, or
/// `n<file` when the file was opened read-only).
fn with_fd(dir: &Path, n: RawFd, file: &File, args: &[&str]) -> Output {
    let mut cmd = bin();
    cmd.current_dir(dir).args(args);
    give_fd(&mut cmd, n, file);
    cmd.output().unwrap()
}

fn give_fd(cmd: &mut Command, n: RawFd, file: &File) {
    let from = file.as_raw_fd();
    // SAFETY: only dup2(2) between fork and exec, async-signal-safe; the
    // copy it makes is not close-on-exec, so tmpfsctl inherits it.
    unsafe {
        cmd.pre_exec(move || {
            // Already number n: dup2 would leave its close-on-exec flag set.
            let r = if from == n {
                libc::fcntl(n, libc::F_SETFD, 0)
            } else {
                libc::dup2(from, n)
            };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn no_file_named(dir: &Path, name: &str) {
    assert!(
        !dir.join(name).exists(),
        "`{name}` is a descriptor, not a file name"
    );
}

/// A one-host fleet snapshot made by `collect`; (snapshot, the path it saw).
fn snapshot(d: &Path) -> (PathBuf, PathBuf) {
    let data = d.join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("f"), vec![7u8; 10_000]).unwrap();
    let snap = d.join("snap.jsonl");
    let o = bin()
        .args(["collect", "--path", s(&data), "--host", "h1", "--output"])
        .arg(&snap)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (snap, data)
}

fn analyze<'a>(snap: &'a Path, data: &'a Path, more: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["fleet", "analyze", s(snap), "--path", s(data)];
    a.extend(more);
    a
}

#[test]
fn fleet_analyze_export_json_to_fd_3_is_the_file_export() {
    let d = scratch("outputs-fd");
    let (snap, data) = snapshot(d.path());
    let file = d.path().join("by-name.json");
    let by_name = bin()
        .current_dir(d.path())
        .args(analyze(&snap, &data, &["--export-json", s(&file)]))
        .output()
        .unwrap();
    assert!(
        by_name.status.code().is_some_and(|c| c < 2),
        "{}",
        stderr(&by_name)
    );

    let fd_file = d.path().join("by-fd.json");
    let f = File::create(&fd_file).unwrap();
    let by_fd = with_fd(
        d.path(),
        3,
        &f,
        &analyze(&snap, &data, &["--export-json", "fd:3"]),
    );
    assert_eq!(
        by_fd.status.code(),
        by_name.status.code(),
        "{}",
        stderr(&by_fd)
    );
    no_file_named(d.path(), "fd:3");
    let want = std::fs::read(&file).unwrap();
    assert!(want.starts_with(b"{"), "a JSON document");
    assert_eq!(std::fs::read(&fd_file).unwrap(), want, "the same document");
    assert_eq!(
        stdout(&by_fd),
        stdout(&by_name),
        "stdout still shows the text"
    );
}

#[test]
fn bench_export_csv_to_fd_3_is_written_and_the_descriptor_stays_a_stream() {
    let d = scratch("outputs-fd");
    let target = d.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let out = d.path().join("bench.csv");
    std::fs::write(&out, "before\n").unwrap();
    // Opened for appending: a stream is written where it stands, not replaced.
    let f = std::fs::OpenOptions::new().append(true).open(&out).unwrap();
    let o = with_fd(
        d.path(),
        3,
        &f,
        &[
            "bench",
            "--quick",
            "--preset",
            "temp-file",
            "--no-latency",
            "--export-csv",
            "fd:3",
            s(&target),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    no_file_named(d.path(), "fd:3");
    let csv = std::fs::read_to_string(&out).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("before"), "appended to, not replaced");
    assert!(
        lines.next().is_some_and(|l| l.starts_with("workload,")),
        "{csv}"
    );
    assert!(lines.count() >= 1, "one row per workload: {csv}");
}

#[test]
fn a_descriptor_not_open_for_writing_exits_2_before_any_work() {
    let d = scratch("outputs-fd");
    let target = d.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let o = bin()
        .current_dir(d.path())
        .args(["bench", "--quick", "--preset", "temp-file", "--no-latency"])
        .args(["--export-json", "fd:9", s(&target)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--export-json fd:9") && e.contains("not open") && e.contains("`9>file`"),
        "names the option and the fix: {e}"
    );
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "nothing measured"
    );
    no_file_named(d.path(), "fd:9");

    // Open, but for reading only; and fd:0, which is stdin.
    let (snap, data) = snapshot(d.path());
    let r = File::open(&snap).unwrap();
    let o = with_fd(
        d.path(),
        3,
        &r,
        &analyze(&snap, &data, &["--export-csv", "fd:3"]),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("--export-csv fd:3: descriptor 3 is not open for writing"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty(), "no report: {}", stdout(&o));
    let o = bin()
        .current_dir(d.path())
        .args(analyze(&snap, &data, &["--export-csv", "fd:0"]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("standard input"), "{}", stderr(&o));
    no_file_named(d.path(), "fd:0");
}

#[test]
fn fd_1_is_stdout_and_with_json_is_two_claims_on_stdout() {
    let d = scratch("outputs-fd");
    let (snap, data) = snapshot(d.path());
    let o = bin()
        .current_dir(d.path())
        .args(analyze(&snap, &data, &["--json", "--export-json", "fd:1"]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("--json and --export-json all write to stdout"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());
    no_file_named(d.path(), "fd:1");

    // Alone, fd:1 is the export on stdout, as `-` is.
    let dash = bin()
        .current_dir(d.path())
        .args(analyze(&snap, &data, &["--export-json", "-"]))
        .output()
        .unwrap();
    let one = bin()
        .current_dir(d.path())
        .args(analyze(&snap, &data, &["--export-json", "fd:1"]))
        .output()
        .unwrap();
    assert_eq!(one.status.code(), dash.status.code(), "{}", stderr(&one));
    assert!(stdout(&one).starts_with('{'), "{}", stdout(&one));
    assert_eq!(stdout(&one), stdout(&dash));
    no_file_named(d.path(), "fd:1");
}

#[test]
fn a_descriptor_and_a_path_open_on_one_file_are_refused_like_one_file_named_twice() {
    let d = scratch("outputs-fd");
    let (snap, data) = snapshot(d.path());
    let out = d.path().join("r.out");
    let f = File::create(&out).unwrap();
    let o = with_fd(
        d.path(),
        3,
        &f,
        &analyze(
            &snap,
            &data,
            &["--export-json", s(&out), "--export-csv", "fd:3"],
        ),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--export-json and --export-csv both name")
            && e.contains("(the second as fd:3)"),
        "{e}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"", "nothing written");

    // One descriptor named by two options.
    let o = with_fd(
        d.path(),
        3,
        &f,
        &analyze(
            &snap,
            &data,
            &["--export-json", "fd:3", "--export-csv", "fd:3"],
        ),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("both name fd:3"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), b"", "nothing written");
}

#[test]
fn run_json_goes_through_the_same_checks() {
    let d = scratch("outputs-fd");
    let marker = d.path().join("ran");
    let m = s(&marker);
    // FILE and fd:3 still work, and CMD does not inherit the descriptor.
    let js = d.path().join("s.json");
    let o = bin()
        .args(["run", "-q", "--size", "4M", "--json", s(&js), "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&js).unwrap()).unwrap();
    assert_eq!(j["schema_version"], 1);
    let fd_js = d.path().join("fd.json");
    let f = File::create(&fd_js).unwrap();
    let probe = "if [ -e /proc/self/fd/3 ]; then echo inherited; else echo closed; fi";
    let o = with_fd(
        d.path(),
        3,
        &f,
        &[
            "run", "-q", "--size", "4M", "--json", "fd:3", "--", "sh", "-c", probe,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "closed");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&fd_js).unwrap()).unwrap();
    assert_eq!(j["command"], serde_json::json!(["sh", "-c", probe]));

    // `-` is stdout, as for every file option (it was a file named `-`).
    let o = bin()
        .current_dir(d.path())
        .args(["run", "-q", "--size", "4M", "--json", "-", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    no_file_named(d.path(), "-");
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["status"], 0);

    // A descriptor open only for reading is refused before CMD runs.
    let r = File::open(&js).unwrap();
    let o = with_fd(
        d.path(),
        3,
        &r,
        &["run", "--size", "4M", "--json", "fd:3", "--", "touch", m],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--json fd:3: descriptor 3 is not open for writing"),
        "{}",
        stderr(&o)
    );
    assert!(!marker.exists(), "CMD ran");

    // A summary that cannot be written is said; the status stays CMD's.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = with_fd(
        d.path(),
        3,
        &full,
        &[
            "run", "-q", "--size", "4M", "--json", "fd:3", "--", "sh", "-c", "exit 3",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--json fd:3: writing: No space left"),
        "{}",
        stderr(&o)
    );

    // --json given twice is refused, not the last one silently winning.
    let o = bin()
        .args(["run", "--json", s(&js), "--json", "fd:1", "--", "touch", m])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot be used multiple times"),
        "{}",
        stderr(&o)
    );
    assert!(!marker.exists(), "CMD ran");
}
